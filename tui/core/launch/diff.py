"""Intended, actual and reported flags lined up, each row classified; speculative decoding
as each source says it.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tui.core.launch.argv import Flag, FlagSet, coerce, frozen
from tui.core.launch.reported import ReportedArgs, Unparsed, value_text
from tui.core.secrets import is_mask, secret_name
from tui.engines import SPECS, spec


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
    #: why a value that reads differently still matches (``SGLang runs NEXTN as EAGLE``)
    note: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "flag": self.flag,
            "dest": self.dest,
            "intended": self.intended,
            "actual": self.actual,
            "reported": self.reported,
            "status": self.status.value,
            "note": self.note,
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
    engine: str | None
    rows: tuple[FlagRow, ...]
    missing: tuple[str, ...] = ()
    changed: tuple[FlagChange, ...] = ()
    extra: tuple[str, ...] = ()
    speculative_intended: str | None = None
    speculative_running: str | None = None
    #: what the server runs under another name than asked, in words (``SGLang runs NEXTN
    #: as EAGLE``): each row's ``note``, in row order
    notes: tuple[str, ...] = ()

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
                "format": self.reported.format.form,
                "complete": self.reported.complete,
                "values": {k: _json_value(v) for k, v in self.reported.values.items()},
            },
            "missing": list(self.missing),
            "changed": [c.to_json() for c in self.changed],
            "extra": list(self.extra),
            "rows": [r.to_json() for r in self.rows],
            "notes": list(self.notes),
        }


def launch_diff(
    intended: Sequence[str] | None,
    actual: Sequence[str] | None,
    reported: ReportedArgs | None,
    *,
    engine: object = None,
) -> LaunchDiff:
    """Line up the three sources (any may be None: not known) and classify each flag."""
    want = FlagSet.parse(intended) if intended is not None else None
    have = FlagSet.parse(actual) if actual is not None else None
    named = getattr(engine, "value", engine)
    engine = (
        (named if isinstance(named, str) else None)
        or (want.engine if want else None)
        or (have.engine if have else None)
        or (reported.engine if reported else None)
    )
    want_flags = want.by_dest(engine) if want else {}
    have_flags = have.by_dest(engine) if have else {}
    report: dict[str, object] = {}
    aliases = spec(engine).aliases if engine is not None else {}
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
    algorithms = _algorithm_aliases(engine)
    sources = _Sources(want, have, reported, algorithms)
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
                reported=value_text(report[dest]) if dest in report else None,
                status=status,
            )
        )
    rows = [_with_alias(row, algorithms, engine) for row in rows]
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
        notes=tuple(r.note for r in rows if r.note is not None),
    )


def _with_alias(row: FlagRow, algorithms: Mapping[str, str], engine: str | None) -> FlagRow:
    """``row`` with its note when it asks for a speculative algorithm under one name and
    the server reports it under the name it runs it as (``SGLang runs NEXTN as EAGLE``):
    the match is the engine's own aliasing, said as such, not a coincidence of values."""
    if not row.dest.endswith("speculative_algorithm") or row.intended is None:
        return row
    runs = algorithms.get(row.intended.upper())
    if runs is None or row.reported is None or row.reported.upper() != runs:
        return row
    who = spec(engine).title if engine is not None else "the server"
    return replace(row, note=f"{who} runs {row.intended} as {row.reported}")


@dataclass(frozen=True)
class _Sources:
    """Which of the three sources are known, and the rules that classify one row."""

    want: FlagSet | None
    have: FlagSet | None
    reported: ReportedArgs | None
    #: speculative algorithms the server runs under another name (upper case)
    algorithms: Mapping[str, str]

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

    def _against_report(
        self, wanted: Flag, reported: object
    ) -> tuple[FlagStatus, FlagChange | None]:
        goal = wanted.value()
        if same(goal, reported) or _same_algorithm(wanted.name, goal, reported, self.algorithms):
            return FlagStatus.SAME, None
        if is_off(reported) and not is_off(goal):
            return FlagStatus.MISSING, None
        change = FlagChange(wanted.name, wanted.text, value_text(reported), Source.REPORTED)
        return FlagStatus.CHANGED, change


def _algorithm_aliases(engine: str | None) -> Mapping[str, str]:
    """The speculative algorithms ``engine`` runs under another name (every engine's when
    it is not known), keys and values in upper case."""
    specs = [spec(engine)] if engine is not None else list(SPECS.values())
    return {k.upper(): v.upper() for s in specs for k, v in s.algorithm_aliases.items()}


def _same_algorithm(name: str, goal: object, reported: object, aliases: Mapping[str, str]) -> bool:
    if not name.endswith("speculative-algorithm"):
        return False
    if not isinstance(goal, str) or not isinstance(reported, str):
        return False
    return aliases.get(goal.upper(), goal.upper()) == reported.upper()


def same(left: object, right: object) -> bool:
    """Whether two values mean the same, whichever source they came from."""
    a, b = _comparable(left), _comparable(right)
    if isinstance(a, tuple) and isinstance(b, str):
        b = _items(b)
    elif isinstance(b, tuple) and isinstance(a, str):
        a = _items(a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _items(text: str) -> object:
    """A list given as one comma-separated value (``--cuda-graphs 1,2,4``), as the list."""
    return frozen([coerce(part) for part in text.split(",")])


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
    return frozen(value)


def _json_value(value: object) -> object:
    if isinstance(value, Unparsed):
        return {"unparsed": value.text}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


# --- speculative decoding ---------------------------------------------------------


#: The options read by name in :func:`_describe_spec` (SGLang's and vLLM's) start so.
SPECULATIVE_PREFIX = "speculative_"


def spec_keys(engine: str | None) -> tuple[str, ...]:
    """The destinations that carry speculative decoding for ``engine`` (every engine's
    when it is not known)."""
    specs = [spec(engine)] if engine is not None else list(SPECS.values())
    return tuple(dict.fromkeys(key for s in specs for key in s.spec_keys))


def speculative(flags: FlagSet | None, engine: str | None = None) -> str | None:
    """What speculative decoding a command line asks for (``EAGLE3``, ``eagle3, 3 tokens``),
    or None when it asks for none."""
    if flags is None:
        return None
    engine = engine or flags.engine
    by_dest = flags.by_dest(engine)
    return _describe_spec({d: by_dest[d].value() for d in spec_keys(engine) if d in by_dest})


def reported_speculative(reported: ReportedArgs | None) -> str | None:
    """What speculative decoding a server reports running, or None for none (or no report)."""
    if reported is None:
        return None
    keys = spec_keys(reported.engine or None)
    return _describe_spec({d: reported.values[d] for d in keys if d in reported.values})


def _speculative_running(
    have: FlagSet | None, reported: ReportedArgs | None, engine: str | None
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
    # the ``speculative_*`` options are read above; an option of another engine's says it
    # on its own (llama.cpp's ``model_draft``, TGI's ``speculate``): the first one set
    for key, value in values.items():
        if not key.startswith(SPECULATIVE_PREFIX) and not is_off(value):
            return f"{key} {_comparable(value)}"
    return None
