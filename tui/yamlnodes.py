"""hosts.yaml's text as PyYAML nodes, composed within bounds.

Everything babysit reads from hosts.yaml passes here first, as PyYAML's composer
builds the node tree, and before any Python object is built from it:

* the nesting is at most :data:`MAX_DEPTH` levels deep (PyYAML's composer recurses,
  so a file of 5,000 ``[`` would otherwise end in a RecursionError);
* the document holds at most :data:`MAX_NODES` values once every alias is expanded
  (a few hundred bytes of ``&a [*b, *b, …]`` name billions of them), and an alias
  is never used inside the value it names;
* every scalar, key or value, is at most :data:`MAX_SCALAR` characters long;
* no scalar holds a control character (C0 but tab, DEL, C1) or a Unicode bidi
  control, which would act on the terminal that shows it, or make it read as
  something it is not. A value may hold a line break here; which values may span
  lines is for the reader of each key to say.

Each refusal is one :class:`~tui.errors.ConfigError` line naming the file, the line
and the key.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import yaml

from tui.core.sanitize import BIDI_CONTROLS, UNSAFE_TEXT, printable
from tui.errors import ConfigError

#: The largest hosts.yaml babysit reads.
MAX_CONFIG_BYTES = 1024 * 1024
#: Mappings and lists inside one another, at most this many levels deep.
MAX_DEPTH = 32
#: Values in the document with every alias expanded (and, in tui.hostsfile, every
#: service of ``instances:`` copied): the most babysit builds from one file.
MAX_NODES = 250_000
#: Characters in one scalar (a key or a value).
MAX_SCALAR = 16 * 1024


def shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message: every control written as an escape, cut to ``limit``."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "'" + printable(text) + "'"


def unsafe_reason(text: str, *, line_breaks: bool = True, key: bool = False) -> str | None:
    """Why ``text`` may not be taken from hosts.yaml, in a plain sentence, or None.
    ``line_breaks``: whether a line feed may stand in it (never in a ``key``)."""
    subject = f"the key {shown(text)} " if key else ""
    # The same set babysit never shows from a host (tui.core.sanitize).
    found = UNSAFE_TEXT.search(text)
    if found is None:
        if "\n" not in text or (line_breaks and not key):
            return None
        if key:
            return subject + "holds a line break; a key is one line"
        return "holds a line break; only launch.command items and launch.env values may span lines"
    char = found.group()
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, "")
    if name and char not in BIDI_CONTROLS:  # U+2028, U+2029
        return f"{subject}holds {code} ({name}), which breaks the line it stands in; remove it"
    if name:
        return (
            f"{subject}holds the bidirectional control {code} ({name}), which can make text "
            "read as something it is not; remove it"
        )
    return (
        f"{subject}holds the control character {code}, which could act on the terminal that "
        "shows it; hosts.yaml text may hold no control character but tab"
    )


def error(path: str, line: int | None, key: str, message: str) -> ConfigError:
    """One line: ``FILE:LINE: KEY: MESSAGE``, with every control in it made visible."""
    where = f"{path}:{line}" if line is not None else path
    key = key if len(key) <= 200 else key[:99] + "…" + key[-100:]
    return ConfigError(printable(f"{where}: {key}: {message}" if key else f"{where}: {message}"))


@dataclass(frozen=True)
class Document:
    """A composed hosts.yaml: its root node (None for an empty file), and how many
    values it holds with every alias expanded."""

    root: yaml.Node | None
    nodes: int


def compose(text: str, path: str) -> Document:
    """``text`` as a node tree, or one ConfigError line naming ``path``, line and key."""
    if len(text) > MAX_CONFIG_BYTES:
        raise error(path, None, "", _TOO_BIG)
    loader = None
    try:
        loader = _BoundedLoader(text, path)  # the reader checks every character here
        return Document(loader.get_single_node(), loader.nodes)
    except yaml.reader.ReaderError as failure:
        line = text.count("\n", 0, failure.position) + 1
        character = failure.character
        char = chr(character) if isinstance(character, int) else str(character)
        reason = unsafe_reason(char) or (
            f"holds the character U+{ord(char[:1] or ' '):04X}, which a YAML file may not hold"
        )
        raise error(path, line, "", reason) from None
    except yaml.MarkedYAMLError as failure:
        mark = failure.problem_mark or failure.context_mark
        problem = failure.problem or failure.context or "not valid YAML"
        raise error(
            path, mark.line + 1 if mark else None, "", f"YAML syntax error: {problem}"
        ) from None
    except yaml.YAMLError as failure:
        raise error(path, None, "", f"YAML error: {failure}") from None
    finally:
        if loader is not None:
            loader.dispose()


_TOO_BIG = (
    f"is larger than {MAX_CONFIG_BYTES} bytes, the most a hosts.yaml may hold; "
    "is this the right file?"
)


def read_config_text(path: str) -> str:
    """The text of the file at ``path`` (UTF-8, at most :data:`MAX_CONFIG_BYTES`)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as failure:
        raise error(path, None, "", f"cannot read: {failure.strerror or failure}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise error(path, None, "", _TOO_BIG)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as failure:
        line = data.count(b"\n", 0, failure.start) + 1
        raise error(
            path, line, "", f"cannot read: byte 0x{data[failure.start]:02x} is not UTF-8 text"
        ) from None


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader whose composer counts depth and expanded values as it goes,
    and refuses what tui.yamlnodes bounds, at the node where it happens."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text)
        self.path = path
        self.nodes = 0
        self._depth = 0
        self._keys: list[str] = []
        self._sizes: dict[str, int] = {}
        self._open: set[str] = set()

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        is_key = isinstance(parent, yaml.MappingNode) and index is None
        label = None
        if isinstance(parent, yaml.SequenceNode):
            label = f"[{index}]"
        elif isinstance(parent, yaml.MappingNode) and index is not None:
            label = str(index.value) if isinstance(index, yaml.ScalarNode) else "(key)"
        if label is not None:
            self._keys.append(label)
        try:
            return self._compose(parent, index, is_key=is_key)
        finally:
            if label is not None:
                self._keys.pop()

    def _compose(self, parent: yaml.Node | None, index: object, *, is_key: bool) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchor = event.anchor
            if anchor in self._open:
                raise self._fail(event, f"the alias *{anchor} is used inside the value it names")
            node = super().compose_node(parent, index)  # an undefined alias fails here
            self._count(self._sizes[anchor], event, f"(through the alias *{anchor})")
            return node
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise self._fail(
                    event,
                    f"is nested more than {MAX_DEPTH} levels deep (hosts.yaml's own keys go 8 "
                    "deep); babysit refuses it",
                )
            if isinstance(event, yaml.ScalarEvent):
                self._check_scalar(event, is_key=is_key)
            anchor = event.anchor
            before = self.nodes
            self._count(1, event, "")
            if anchor is not None:
                self._open.add(anchor)
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._open.discard(anchor)
                self._sizes[anchor] = self.nodes - before
            return node
        finally:
            self._depth -= 1

    def _check_scalar(self, event: yaml.ScalarEvent, *, is_key: bool) -> None:
        value = event.value
        what = "a key" if is_key else "the value"
        if len(value) > MAX_SCALAR:
            raise self._fail(
                event,
                f"{what} is {len(value)} characters long, more than the {MAX_SCALAR} "
                "any hosts.yaml text may hold",
            )
        reason = unsafe_reason(value, key=is_key)
        if reason is not None:
            raise self._fail(event, reason)

    def _count(self, nodes: int, event: yaml.Event, through: str) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            raise self._fail(
                event,
                f"the file holds more than {MAX_NODES} values with its aliases expanded "
                f"{through}".rstrip()
                + "; babysit refuses it (an alias is a copy of its whole value each time)",
            )

    def _fail(self, event: yaml.Event, message: str) -> ConfigError:
        key = ""
        for label in self._keys:
            key += label if label.startswith("[") or not key else f".{label}"
        return error(self.path, event.start_mark.line + 1, key, message)
