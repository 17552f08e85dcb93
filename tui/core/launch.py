"""The flags a server was meant to run with, the ones it runs with, and the ones it reports.

Three sources, side by side:

* **intended** — ``launch.command`` from hosts.yaml (an argv list);
* **actual** — the live run's ``/proc/PID/cmdline`` (an argv list);
* **reported** — what the server printed at startup: SGLang
  ``server_args=ServerArgs(...)`` (<= 0.5.18) or ``server_args={...}``
  (>= 0.5.20), vLLM ``args: Namespace(...)`` (<= 0.8) or
  ``non-default args: {...}`` (>= 0.9).

Reported values are read as Python literals with :func:`ast.literal_eval`,
one value at a time; a value that is not a literal (``<object at 0x…>``,
``SomeConfig(...)``) is kept as :class:`Unparsed` text. Nothing is ever
evaluated. :func:`launch_diff` lines the three up by argparse destination
(``--tp 2``, ``--tp-size=2`` and ``tp_size=2`` are one row) and says which
intended flags are missing from the running server, which run with another
value, and which run without being intended.
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tui.core.engines import ARGS_HEADS
from tui.core.metrics import Engine
from tui.core.secrets import Redacted, is_mask, redact_argv, redact_value, secret_name

# --- argv -------------------------------------------------------------------------

#: Flags that never take a value, beyond the ``--enable-``/``--disable-``/``--no-`` families.
SWITCHES = frozenset(
    {
        "--trust-remote-code",
        "--enforce-eager",
        "--is-embedding",
        "--log-requests",
        "--skip-server-warmup",
        "--skip-tokenizer-init",
        "--show-time-cost",
        "--allow-auto-truncate",
        "--disable-log-stats",
        "--help",
        "-h",
        "--version",
    }
)
_SWITCH_PREFIXES = ("--enable-", "--disable-", "--no-", "--skip-")

#: argparse destinations with more than one spelling, per engine.
ALIASES: Mapping[Engine, Mapping[str, str]] = {
    Engine.SGLANG: {
        "tp": "tp_size",
        "tensor_parallel_size": "tp_size",
        "dp": "dp_size",
        "data_parallel_size": "dp_size",
        "ep": "ep_size",
        "expert_parallel_size": "ep_size",
        "pp": "pp_size",
        "pipeline_parallel_size": "pp_size",
        "model": "model_path",
        "speculative_draft_model": "speculative_draft_model_path",
        "speculative_draft": "speculative_draft_model_path",
    },
    Engine.VLLM: {
        "tp": "tensor_parallel_size",
        "pp": "pipeline_parallel_size",
        "dp": "data_parallel_size",
        "q": "quantization",
        "O": "compilation_config",
        "model_tag": "model",
    },
}

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

    def dest(self, engine: Engine | None) -> str:
        """The argparse destination this flag sets (``--tp`` -> ``tp_size`` for SGLang)."""
        name = self.name[5:] if self.negated else self.name
        return destination(name, engine)

    def value(self) -> object:
        """The value typed for comparison: a switch is True (False when negated)."""
        if not self.values:
            return not self.negated
        typed = tuple(coerce(v) for v in self.values)
        return typed[0] if len(typed) == 1 else typed


def destination(name: str, engine: Engine | None) -> str:
    """``--speculative-algorithm`` -> ``speculative_algorithm``, through the engine's aliases."""
    dest = name.lstrip("-").replace("-", "_")
    if engine is not None:
        return ALIASES[engine].get(dest, dest)
    return dest


@dataclass(frozen=True)
class FlagSet:
    """A command line split into program, positionals and flags.

    ``program`` is the launcher part (``python3 -m sglang.launch_server``,
    ``vllm serve``, or everything up to a ``--`` that separates a wrapper's
    own options from the server's). ``flags`` maps normalised names to their
    last occurrence (argparse keeps the last), in the order those came. A first
    positional after ``serve`` is vLLM's model and is also given as ``--model``.
    ``engine`` is what the program names, if it names one. Secrets are redacted
    (:func:`tui.core.secrets.redact_argv`) before anything else reads the words: a
    secret's value is a :class:`~tui.core.secrets.Redacted` word, compared by digest.
    """

    argv: tuple[str, ...]
    program: tuple[str, ...]
    positionals: tuple[str, ...]
    flags: Mapping[str, Flag]
    engine: Engine | None

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

    def by_dest(self, engine: Engine | None) -> dict[str, Flag]:
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


def _engine_of(program: Sequence[str]) -> Engine | None:
    for token in program:
        base = token.rsplit("/", 1)[-1].lower()
        if base.startswith("sglang"):
            return Engine.SGLANG
        if base.startswith("vllm"):
            return Engine.VLLM
    return None


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
        return _frozen(json.loads(stripped))
    except (ValueError, RecursionError):
        pass
    try:
        return _frozen(ast.literal_eval(stripped))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _frozen(value: object) -> object:
    """Lists become tuples (recursively) so values compare the same whichever source."""
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(v) for v in value)
        return items[0] if len(items) == 1 else items
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


# --- what the server printed ------------------------------------------------------


class ReportedFormat(enum.Enum):
    SGLANG_REPR = "sglang-server-args"
    SGLANG_DICT = "sglang-server-args-dict"
    VLLM_NAMESPACE = "vllm-args-namespace"
    VLLM_NON_DEFAULT = "vllm-non-default-args"

    @property
    def complete(self) -> bool:
        """Whether the report lists every argument (else only the ones not at their default)."""
        return self is not ReportedFormat.VLLM_NON_DEFAULT

    @property
    def engine(self) -> Engine:
        return Engine.SGLANG if self.value.startswith("sglang") else Engine.VLLM


_REPORT_HEADS = tuple((head.text, ReportedFormat(head.form)) for head in ARGS_HEADS)


@dataclass(frozen=True)
class Unparsed:
    """A reported value that is not a Python literal, kept as its text (never evaluated)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ReportedArgs:
    """The arguments a server printed about itself at startup.

    ``values`` maps argparse destinations to literal values (or :class:`Unparsed`).
    ``truncated`` is true when the line ended before the closing bracket (a cut
    line): the values seen are kept, the rest is unknown. ``offset`` is the log
    offset of the line, when the caller knows it.
    """

    format: ReportedFormat
    values: Mapping[str, object]
    truncated: bool = False
    offset: int | None = None

    @property
    def complete(self) -> bool:
        return self.format.complete and not self.truncated

    @property
    def engine(self) -> Engine:
        return self.format.engine


def parse_reported(line: str, offset: int | None = None) -> ReportedArgs | None:
    """The arguments on a startup line, or None if the line prints none. Never raises."""
    if "args" not in line:
        return None
    found = next(((h, f) for h, f in _REPORT_HEADS if h in line), None)
    if found is None:
        return None
    head, fmt = found
    start = line.find(head)
    opening = start + len(head) - 1
    closer = ")" if line[opening] == "(" else "}"
    items, complete = _split_items(line, opening + 1, closer)
    values: dict[str, object] = {}
    separator = "=" if closer == ")" else ":"
    for item in items:
        key_text, sep, value_text = _split_pair(item, separator)
        if not sep:
            continue
        key = str(_literal(key_text) if closer == "}" else key_text.strip())
        value = _literal(value_text)
        values[key] = _redacted(value) if secret_name(key) else value
    return ReportedArgs(fmt, values, truncated=not complete, offset=offset)


_TOKENS = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[()\[\]{},]""")
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_items(line: str, start: int, closer: str) -> tuple[list[str], bool]:
    """Top-level comma-separated items from ``start`` to the matching ``closer``; whether the
    closer was found. Quotes and brackets are respected; an unfinished last item is dropped."""
    items: list[str] = []
    stack: list[str] = []
    begin = start
    for match in _TOKENS.finditer(line, start):
        mark = match.group()
        if mark in _OPEN:
            stack.append(_OPEN[mark])
        elif mark in ")]}":
            if stack:
                if stack[-1] == mark:
                    stack.pop()
                continue
            if mark == closer:
                last = line[begin : match.start()]
                if last.strip():
                    items.append(last)
                return items, True
        elif mark == "," and not stack:
            items.append(line[begin : match.start()])
            begin = match.end()
    return items, False


def _split_pair(item: str, separator: str) -> tuple[str, str, str]:
    """``key=value`` or ``'key': value``, the separator found outside quotes."""
    if separator == "=":
        return item.partition("=")
    match = re.match(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^:]*):""", item)
    if match is None:
        return item, "", ""
    return match.group(1), ":", item[match.end() :]


def _redacted(value: object) -> object:
    """A reported secret as a redacted word, its digest that of the text the command line
    would carry (``api_key='sk-…'`` and ``--api-key sk-…`` compare equal)."""
    if isinstance(value, Unparsed):
        return redact_value(value.text)
    if value is None or isinstance(value, bool):
        return value
    return redact_value(value if isinstance(value, (str, int, float)) else _text(value))


def _literal(text: str) -> object:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Unparsed(text)


# --- the diff ---------------------------------------------------------------------


class FlagStatus(enum.Enum):
    SAME = "same"
    #: intended, but the running server does not have it (or reports it off)
    MISSING = "missing"
    #: intended, and running with another value
    CHANGED = "changed"
    #: running, not intended
    EXTRA = "extra"
    #: nothing to compare with (no intended command, or only one source knows it)
    UNCHECKED = "unchecked"


class Source(enum.Enum):
    INTENDED = "intended"
    ACTUAL = "actual"
    REPORTED = "reported"


@dataclass(frozen=True)
class FlagRow:
    """One destination across the three sources; a value is None where that source lacks it."""

    flag: str
    dest: str
    intended: str | None
    actual: str | None
    reported: str | None
    status: FlagStatus

    def to_json(self) -> dict[str, object]:
        return {
            "flag": self.flag,
            "dest": self.dest,
            "intended": self.intended,
            "actual": self.actual,
            "reported": self.reported,
            "status": self.status.value,
        }


@dataclass(frozen=True)
class FlagChange:
    """An intended flag running with another value, and which source says so."""

    flag: str
    intended: str
    running: str
    source: Source

    def to_json(self) -> dict[str, str]:
        return {
            "flag": self.flag,
            "intended": self.intended,
            "running": self.running,
            "source": self.source.value,
        }


@dataclass(frozen=True)
class LaunchDiff:
    """Intended, actual and reported flags lined up.

    Invariants: every row's status follows from its three values; ``missing``,
    ``changed`` and ``extra`` list exactly the rows with those statuses, in row
    order (intended flags first, in their order, then the rest). When the
    actual argv is known it decides presence; the report then only shows a
    value the server changed or turned off. Without an intended command nothing
    is missing, changed or extra.
    """

    intended: FlagSet | None
    actual: FlagSet | None
    reported: ReportedArgs | None
    engine: Engine | None
    rows: tuple[FlagRow, ...]
    missing: tuple[str, ...] = ()
    changed: tuple[FlagChange, ...] = ()
    extra: tuple[str, ...] = ()
    speculative_intended: str | None = None
    speculative_running: str | None = None

    @property
    def clean(self) -> bool:
        return not (self.missing or self.changed or self.extra)

    def to_json(self) -> dict[str, object]:
        return {
            "intended": None if self.intended is None else list(self.intended.argv),
            "actual": None if self.actual is None else list(self.actual.argv),
            "reported": None
            if self.reported is None
            else {
                "format": self.reported.format.value,
                "complete": self.reported.complete,
                "values": {k: _json_value(v) for k, v in self.reported.values.items()},
            },
            "missing": list(self.missing),
            "changed": [c.to_json() for c in self.changed],
            "extra": list(self.extra),
            "rows": [r.to_json() for r in self.rows],
        }


def launch_diff(
    intended: Sequence[str] | None,
    actual: Sequence[str] | None,
    reported: ReportedArgs | None,
    *,
    engine: Engine | None = None,
) -> LaunchDiff:
    """Line up the three sources (any may be None: not known) and classify each flag."""
    want = FlagSet.parse(intended) if intended is not None else None
    have = FlagSet.parse(actual) if actual is not None else None
    engine = (
        engine
        or (want.engine if want else None)
        or (have.engine if have else None)
        or (reported.engine if reported else None)
    )
    want_flags = want.by_dest(engine) if want else {}
    have_flags = have.by_dest(engine) if have else {}
    report: dict[str, object] = {}
    aliases = ALIASES[engine] if engine is not None else {}
    for key, value in (reported.values if reported else {}).items():
        report.setdefault(aliases.get(key, key), value)
    # A secret the server printed masked (``'<redacted>'``) is shown, never compared.
    masked = {d for d, v in report.items() if secret_name(d) and is_mask(v)}
    dests = list(want_flags)
    dests += [d for d in have_flags if d not in want_flags]
    if reported is not None and not reported.format.complete:
        dests += [d for d in report if d not in want_flags and d not in have_flags]

    rows: list[FlagRow] = []
    changed: list[FlagChange] = []
    sources = _Sources(want, have, reported)
    for dest in dests:
        wanted, running = want_flags.get(dest), have_flags.get(dest)
        status, change = sources.classify(
            wanted, running, dest in report, report.get(dest), masked=dest in masked
        )
        if change is not None:
            changed.append(change)
        shown = wanted or running
        rows.append(
            FlagRow(
                flag=shown.name if shown else "--" + dest.replace("_", "-"),
                dest=dest,
                intended=wanted.text if wanted else None,
                actual=running.text if running else None,
                reported=_text(report[dest]) if dest in report else None,
                status=status,
            )
        )
    return LaunchDiff(
        intended=want,
        actual=have,
        reported=reported,
        engine=engine,
        rows=tuple(rows),
        missing=tuple(r.flag for r in rows if r.status is FlagStatus.MISSING),
        changed=tuple(changed),
        extra=tuple(r.flag for r in rows if r.status is FlagStatus.EXTRA),
        speculative_intended=speculative(want, engine) if want else None,
        speculative_running=_speculative_running(have, reported, engine),
    )


@dataclass(frozen=True)
class _Sources:
    """Which of the three sources are known, and the rules that classify one row."""

    want: FlagSet | None
    have: FlagSet | None
    reported: ReportedArgs | None

    def classify(
        self,
        wanted: Flag | None,
        running: Flag | None,
        in_report: bool,
        reported: object,
        *,
        masked: bool = False,
    ) -> tuple[FlagStatus, FlagChange | None]:
        if wanted is None:
            return self._unintended(running), None
        if self.have is not None and (running is None or not same(wanted.value(), running.value())):
            return self._against_argv(wanted, running)
        if self.reported is None or masked:
            return (FlagStatus.SAME if self.have else FlagStatus.UNCHECKED), None
        if in_report:
            return self._against_report(wanted, reported)
        if self.have is not None:
            return FlagStatus.SAME, None  # argv has it; the report need not list it
        # Neither argv nor report has it; a cut line may simply not have reached it.
        return (FlagStatus.UNCHECKED if self.reported.truncated else FlagStatus.MISSING), None

    @staticmethod
    def _against_argv(wanted: Flag, running: Flag | None) -> tuple[FlagStatus, FlagChange | None]:
        if running is None:
            return FlagStatus.MISSING, None
        return FlagStatus.CHANGED, FlagChange(wanted.name, wanted.text, running.text, Source.ACTUAL)

    def _unintended(self, running: Flag | None) -> FlagStatus:
        if self.want is None:
            return FlagStatus.UNCHECKED
        if running is not None or self.have is None:
            return FlagStatus.EXTRA
        return FlagStatus.UNCHECKED  # only the report has it: derived, not passed

    @staticmethod
    def _against_report(wanted: Flag, reported: object) -> tuple[FlagStatus, FlagChange | None]:
        goal = wanted.value()
        if same(goal, reported) or _same_algorithm(wanted.name, goal, reported):
            return FlagStatus.SAME, None
        if is_off(reported) and not is_off(goal):
            return FlagStatus.MISSING, None
        change = FlagChange(wanted.name, wanted.text, _text(reported), Source.REPORTED)
        return FlagStatus.CHANGED, change


#: Speculative algorithms a server prints under another name: SGLang runs NEXTN
#: as EAGLE and prints ``speculative_algorithm='EAGLE'`` (server_args.py).
ALGORITHM_ALIASES = {"NEXTN": "EAGLE"}


def _same_algorithm(name: str, goal: object, reported: object) -> bool:
    if not name.endswith("speculative-algorithm"):
        return False
    if not isinstance(goal, str) or not isinstance(reported, str):
        return False
    return ALGORITHM_ALIASES.get(goal.upper(), goal.upper()) == reported.upper()


def same(left: object, right: object) -> bool:
    """Whether two values mean the same, whichever source they came from."""
    a, b = _comparable(left), _comparable(right)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def is_off(value: object) -> bool:
    """None, False, an empty value, or their spellings: the option is not in effect."""
    value = _comparable(value)
    if value is None or value is False or value in ("", (), {}):
        return True
    return isinstance(value, str) and value.strip().lower() in ("none", "false", "null")


def _comparable(value: object) -> object:
    if isinstance(value, Unparsed):
        return value.text
    if isinstance(value, str):
        return coerce(value)
    return _frozen(value)


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, separators=(", ", ": "))
        except (TypeError, ValueError):
            return repr(value)
    return str(value)


def _json_value(value: object) -> object:
    if isinstance(value, Unparsed):
        return {"unparsed": value.text}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


# --- speculative decoding ---------------------------------------------------------

_SPEC_FLAGS = (
    "speculative_algorithm",
    "speculative_config",
    "speculative_model",
    "num_speculative_tokens",
)


def speculative(flags: FlagSet | None, engine: Engine | None = None) -> str | None:
    """What speculative decoding a command line asks for (``EAGLE3``, ``eagle3, 3 tokens``),
    or None when it asks for none."""
    if flags is None:
        return None
    by_dest = flags.by_dest(engine or flags.engine)
    return _describe_spec({d: by_dest[d].value() for d in _SPEC_FLAGS if d in by_dest})


def reported_speculative(reported: ReportedArgs | None) -> str | None:
    """What speculative decoding a server reports running, or None for none (or no report)."""
    if reported is None:
        return None
    return _describe_spec({d: reported.values[d] for d in _SPEC_FLAGS if d in reported.values})


def _speculative_running(
    have: FlagSet | None, reported: ReportedArgs | None, engine: Engine | None
) -> str | None:
    if reported is not None:
        return reported_speculative(reported)
    return speculative(have, engine)


def _describe_spec(values: Mapping[str, object]) -> str | None:
    algorithm = values.get("speculative_algorithm")
    if not is_off(algorithm):
        return str(_comparable(algorithm))
    config = _comparable(values.get("speculative_config"))
    if isinstance(config, dict) and config:
        method = config.get("method") or config.get("model") or "on"
        tokens = config.get("num_speculative_tokens")
        return f"{method}, {tokens} tokens" if tokens is not None else str(method)
    if isinstance(config, str) and not is_off(config):
        return config
    model = values.get("speculative_model")
    if not is_off(model):
        return str(_comparable(model))
    return None


# --- /proc ------------------------------------------------------------------------


def argv_from_cmdline(data: bytes) -> tuple[str, ...]:
    """``/proc/PID/cmdline`` bytes (NUL-separated, NUL-terminated) as an argv tuple."""
    text = data.decode("utf-8", "surrogateescape")
    if text.endswith("\0"):
        text = text[:-1]
    return tuple(text.split("\0")) if text else ()
