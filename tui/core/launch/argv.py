"""A command line (hosts.yaml's ``launch.command`` or ``/proc/PID/cmdline``) as flags.

Secrets are redacted before anything else reads the words; values are typed for
comparison by :func:`coerce` (JSON objects and lists, numbers, booleans).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tui.core.secrets import Redacted, redact_argv
from tui.engines import SPECS, of_program, spec

#: Flags that never take a value whatever the program (each engine's own are its spec's
#: ``switches``), beyond the ``--enable-``/``--disable-``/``--no-`` families.
_COMMON_SWITCHES = frozenset({"--help", "-h", "--version"})
#: Every engine's switches: a flag one engine takes without a value takes none anywhere.
SWITCHES = _COMMON_SWITCHES.union(*(s.switches for s in SPECS.values()))
_SWITCH_PREFIXES = ("--enable-", "--disable-", "--no-", "--skip-")

_PYTHON = re.compile(r"(?:.*/)?python[\d.]*$")
_PYTHON_OPTIONS_WITH_ARGUMENT = frozenset({"-X", "-W", "-Q"})
_NUMBER = re.compile(r"-\d|-\.\d")


def _is_flag(word: str) -> bool:
    return word.startswith("-") and word != "-" and _NUMBER.match(word) is None


@dataclass(frozen=True)
class Flag:
    """One option as given on a command line.

    ``name`` is normalised (``--speculative_algorithm`` -> ``--speculative-algorithm``);
    ``values`` are the words after it, or the part after ``=`` (``()`` for a
    switch such as ``--enable-metrics``); ``spelled`` is how it was written.
    """

    name: str
    values: tuple[str, ...]
    spelled: str

    @property
    def negated(self) -> bool:
        """``--no-enable-prefix-caching``: vLLM's way to turn a boolean flag off."""
        return self.name.startswith("--no-") and not self.values

    @property
    def text(self) -> str:
        """The value as a person would read it: words joined, ``on`` for a switch."""
        if not self.values:
            return "off" if self.negated else "on"
        return " ".join(self.values)

    def dest(self, engine: str | None) -> str:
        """The argparse destination this flag sets (``--tp`` -> ``tp_size`` for SGLang)."""
        name = self.name[5:] if self.negated else self.name
        return destination(name, engine)

    def value(self) -> object:
        """The value typed for comparison: a switch is True (False when negated)."""
        if not self.values:
            return not self.negated
        typed = tuple(coerce(v) for v in self.values)
        return typed[0] if len(typed) == 1 else typed


def destination(name: str, engine: str | None) -> str:
    """``--speculative-algorithm`` -> ``speculative_algorithm``, through the engine's aliases
    (``engine`` is an engine's name, or None for none)."""
    dest = name.lstrip("-").replace("-", "_")
    if engine is not None:
        return spec(engine).aliases.get(dest, dest)
    return dest


@dataclass(frozen=True)
class FlagSet:
    """A command line split into program, positionals and flags.

    ``program`` is the launcher part (``python3 -m sglang.launch_server``,
    ``vllm serve``, or everything up to a ``--`` that separates a wrapper's
    own options from the server's). ``flags`` maps normalised names to their
    last occurrence (argparse keeps the last), in the order those came. A first
    positional after ``serve`` is vLLM's model and is also given as ``--model``.
    ``engine`` is the name of the engine the program starts, if it names one. Secrets are redacted
    (:func:`tui.core.secrets.redact_argv`) before anything else reads the words: a
    secret's value is a :class:`~tui.core.secrets.Redacted` word, compared by digest.
    """

    argv: tuple[str, ...]
    program: tuple[str, ...]
    positionals: tuple[str, ...]
    flags: Mapping[str, Flag]
    engine: str | None

    @classmethod
    def parse(cls, argv: Sequence[str]) -> FlagSet:
        argv = redact_argv(argv)
        program, rest = _split_program(argv)
        engine = _engine_of(program)
        positionals: list[str] = []
        flags: dict[str, Flag] = {}
        index = 0
        while index < len(rest):
            token = rest[index]
            index += 1
            if not _is_flag(token):
                positionals.append(token)
                continue
            name, eq, inline = token.partition("=")
            if name.startswith("--"):
                name = "--" + name[2:].replace("_", "-")
            if eq:
                # A redacted ``--api-key=…`` gives its value with the digest it carries.
                values: tuple[str, ...] = (
                    token.tail(len(name) + 1) if isinstance(token, Redacted) else inline,
                )
            elif name in SWITCHES or name.startswith(_SWITCH_PREFIXES):
                values = ()
            else:
                start = index
                while index < len(rest) and not _is_flag(rest[index]):
                    index += 1
                values = rest[start:index]
            flags.pop(name, None)
            flags[name] = Flag(name, values, token)
        if program and program[-1] == "serve" and positionals and "--model" not in flags:
            flags = {"--model": Flag("--model", (positionals[0],), positionals[0]), **flags}
        return cls(argv, program, tuple(positionals), flags, engine)

    def by_dest(self, engine: str | None) -> dict[str, Flag]:
        return {flag.dest(engine): flag for flag in self.flags.values()}


def _split_program(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if "--" in argv:
        cut = argv.index("--")
        return argv[: cut + 1], argv[cut + 1 :]
    if not argv:
        return (), ()
    index = 1
    if _PYTHON.match(argv[0]):
        while index < len(argv):
            word = argv[index]
            index += 1
            if word == "-m" and index < len(argv):
                index += 1
                break
            if word in _PYTHON_OPTIONS_WITH_ARGUMENT:
                index += 1
            elif not word.startswith("-"):
                break  # a script path
    if index < len(argv) and argv[index] == "serve":
        index += 1
    return argv[:index], argv[index:]


def _engine_of(program: Sequence[str]) -> str | None:
    found = of_program(program)
    return None if found is None else found.name


def coerce(text: str) -> object:
    """Type a command-line value for comparison: JSON objects and lists, numbers, booleans;
    anything else stays text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        return _structured(stripped, text)
    if stripped in _BOOLEANS:
        return _BOOLEANS[stripped]
    for kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            pass
    return text


_BOOLEANS = {"True": True, "true": True, "False": False, "false": False}


def _structured(stripped: str, text: str) -> object:
    try:
        return frozen(json.loads(stripped))
    except (ValueError, RecursionError):
        pass
    try:
        return frozen(ast.literal_eval(stripped))
    # SystemError: CPython 3.11's AST constructor, its depth count upset by a deep input
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, SystemError):
        return text


def frozen(value: object) -> object:
    """Lists become tuples (recursively) so values compare the same whichever source."""
    if isinstance(value, (list, tuple)):
        items = tuple(frozen(v) for v in value)
        return items[0] if len(items) == 1 else items
    if isinstance(value, dict):
        return {k: frozen(v) for k, v in value.items()}
    return value


def argv_from_cmdline(data: bytes) -> tuple[str, ...]:
    """``/proc/PID/cmdline`` bytes (NUL-separated, NUL-terminated) as an argv tuple."""
    text = data.decode("utf-8", "surrogateescape")
    if text.endswith("\0"):
        text = text[:-1]
    return tuple(text.split("\0")) if text else ()
