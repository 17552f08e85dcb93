"""Typed values read out of hosts.yaml's nodes, each mistake one file:line:key error.

The reader walks PyYAML's node tree rather than the loaded Python objects, because
only nodes remember their line numbers, and because duplicate keys — which
``yaml.safe_load`` silently resolves to the last one — must be an error. Each read
bounds what it takes (a string's length, a path's bytes, a list's items, the digits
of a number).
"""

from __future__ import annotations

import enum
import math
import re

import yaml

from tui import yamlnodes
from tui.config import CONTAINER_RUNTIMES, ContainerRef, Source, suggest
from tui.errors import ConfigError
from tui.yamlnodes import MAX_NODES, shown, unsafe_reason

#: Characters in the text of a number (``port: 30000``, ``stop_grace: 2.5``).
_MAX_NUMBER_TEXT = 64
#: Characters in a host, service, group or variable name.
MAX_NAME = 128
#: Characters in any single-line string (a match: pattern, a ready: text, an ssh target).
MAX_TEXT = 4096
#: Bytes of a path on a host (PATH_MAX, 4096, counts the terminating NUL).
MAX_PATH_BYTES = 4095
#: A host or service name: a letter or digit, then letters, digits, ".", "_" and "-".
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: Docker's own rule for a container's name (an id is hex, which it admits too).
CONTAINER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_CONTAINER = 255


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
#: The scalar tags whose values the reader builds (anything else is the wrong type).
_BUILT = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null", "str", "timestamp")
)
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class Reader:
    """Reads typed values out of YAML nodes, raising ConfigError with file:line:key."""

    def __init__(self, path: str, nodes: int = 0) -> None:
        self.path = path
        #: Values still to be built from this file (see MAX_NODES): the document's own
        #: are spent already; each copy ``instances:`` makes spends more.
        self.budget = MAX_NODES - nodes

    def source(self, node: yaml.Node) -> Source:
        return Source(self.path, node.start_mark.line + 1)

    def fail(self, node: yaml.Node, key: str, message: str) -> ConfigError:
        return yamlnodes.error(self.path, node.start_mark.line + 1, key, message)

    def mapping(
        self, node: yaml.Node, key: str, allowed: tuple[str, ...] | None = None
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """A mapping's entries as {name: (key node, value node)}; unknown or repeated keys fail."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, f"must be a mapping, not {describe(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, key, "keys must be plain names")
            name = str(key_node.value)
            if (reason := unsafe_reason(name, key=True)) is not None:
                raise self.fail(key_node, key, reason)
            where = f"{key}.{name}" if key else name
            if name in entries:
                first = self.source(entries[name][0]).line
                raise self.fail(key_node, where, f"repeated key (first given on line {first})")
            if allowed is not None and name not in allowed:
                raise self.fail(key_node, where, f"unknown key{suggest(name, allowed)}")
            entries[name] = (key_node, value_node)
        return entries

    def string(self, node: yaml.Node, key: str, limit: int = MAX_TEXT) -> str:
        """A one-line string of at most ``limit`` characters."""
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            raise self.fail(node, key, f"must be a string, not {describe(node)}")
        text = str(node.value)
        if not text:
            raise self.fail(node, key, "must not be empty")
        if (reason := unsafe_reason(text, line_breaks=False)) is not None:
            raise self.fail(node, key, reason)
        if len(text) > limit:
            raise self.fail(
                node, key, f"is {len(text)} characters long; it may hold at most {limit}"
            )
        return text

    def host_path(self, node: yaml.Node, key: str) -> str:
        """A path on a host: a string of at most MAX_PATH_BYTES bytes."""
        text = self.string(node, key, limit=MAX_PATH_BYTES)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_PATH_BYTES:
            raise self.fail(
                node, key, f"is {size} bytes long; a path may be at most {MAX_PATH_BYTES}"
            )
        return text

    def name(
        self, node: yaml.Node, text: str, key: str, what: str, pattern: re.Pattern[str]
    ) -> str:
        """``text``, the name ``node`` gives: ``what`` says which characters it may use."""
        if len(text) > MAX_NAME:
            raise self.fail(
                node, key, f"is {len(text)} characters long; a name may be at most {MAX_NAME}"
            )
        if not pattern.fullmatch(text):
            raise self.fail(node, key, what)
        return text

    def container(
        self, name: tuple[yaml.Node, str], runtime: tuple[yaml.Node, str] | None
    ) -> ContainerRef:
        """A container named by ``name`` (its node and key), run by ``runtime`` (docker
        when None): the same rules wherever hosts.yaml names one (a service's
        ``container:``, a host's ``docker:`` hop)."""
        node, key = name
        text = self.scalar_text(node, key)  # an id of digits alone is a YAML number
        if len(text) > MAX_CONTAINER or not CONTAINER_RE.fullmatch(text):
            raise self.fail(
                node,
                key,
                "must be a container's name or id (letters, digits, '_', '.', '-'), "
                f"not {shown(text)}",
            )
        chosen = CONTAINER_RUNTIMES[0]
        if runtime is not None:
            runtime_node, runtime_key = runtime
            chosen = self.string(runtime_node, runtime_key)
            if chosen not in CONTAINER_RUNTIMES:
                raise self.fail(
                    runtime_node,
                    runtime_key,
                    f"must be one of {', '.join(CONTAINER_RUNTIMES)}, not {shown(chosen)}"
                    f"{suggest(chosen, CONTAINER_RUNTIMES)}",
                )
        return ContainerRef(text, chosen)

    def scalar_text(self, node: yaml.Node, key: str) -> str:
        """A scalar's text as written (``8`` stays ``"8"``): for argv and env values,
        which may span lines."""
        if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
            raise self.fail(node, key, f"must be a string, not {describe(node)}")
        text = str(node.value)
        if (reason := unsafe_reason(text)) is not None:
            raise self.fail(node, key, reason)
        return text

    def integer(self, node: yaml.Node, key: str, low: int, high: int) -> int:
        value = self._construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, key, f"must be a whole number, not {describe(node)}")
        if not low <= value <= high:
            raise self.fail(node, key, f"must be between {low} and {high}, not {value}")
        return value

    def number(self, node: yaml.Node, key: str, low: float, high: float) -> float:
        value = self._construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(node, key, f"must be a number of seconds, not {describe(node)}")
        if not low < value <= high:
            raise self.fail(node, key, f"must be more than {low:g} and at most {high:g}")
        return float(value)

    def finite(self, node: yaml.Node, key: str) -> float:
        """A finite number (a whole or decimal one; never ``.inf`` or ``.nan``)."""
        value = self._construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(node, key, f"must be a number, not {describe(node)}")
        if not math.isfinite(value):
            raise self.fail(node, key, f"must be a finite number, not {shown(node.value)}")
        return float(value)

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self._construct(node, key)
        if not isinstance(value, bool):
            raise self.fail(node, key, f"must be true or false, not {describe(node)}")
        return value

    def sequence(self, node: yaml.Node, key: str, limit: int) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, f"must be a list, not {describe(node)}")
        if len(node.value) > limit:
            raise self.fail(node, key, f"has {len(node.value)} items; it may have at most {limit}")
        return list(node.value)

    def choice(self, node: yaml.Node, key: str, enum_type: type[enum.Enum]) -> enum.Enum:
        text = self.string(node, key)
        names = [member.value for member in enum_type]
        for member in enum_type:
            if member.value == text:
                return member
        raise self.fail(
            node,
            key,
            f"must be one of {', '.join(names)}, not {shown(text)}{suggest(text, names)}",
        )

    def _construct(self, node: yaml.Node, key: str) -> object:
        """A scalar's value (a number, a bool…); a node of any other kind stays a node."""
        if not isinstance(node, yaml.ScalarNode) or node.tag not in _BUILT:
            return node
        if node.tag in _NUMBER_TAGS and len(node.value) > _MAX_NUMBER_TEXT:
            raise self.fail(
                node,
                key,
                f"is a number of {len(node.value)} characters; none here needs more than "
                f"{_MAX_NUMBER_TEXT}",
            )
        try:
            return _CONSTRUCTOR.construct_object(node)
        except (ValueError, yaml.YAMLError):
            tag = node.tag.rsplit(":", 1)[-1]
            raise self.fail(node, key, f"{shown(node.value)} is not a valid {tag}") from None


def value_node(entries: dict[str, tuple[yaml.Node, yaml.Node]], name: str) -> yaml.Node | None:
    """The value node of ``name`` among a mapping's entries, or None when it is not given."""
    entry = entries.get(name)
    return entry[1] if entry is not None else None


def describe(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    tag = node.tag.rsplit(":", 1)[-1]
    if tag == "null":
        return "nothing"
    return f"{tag} {shown(node.value)}" if tag != "str" else shown(node.value)
