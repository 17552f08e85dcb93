"""llama-server's log lines, read one at a time: the metric lines the package's
docstring lists (:class:`LlamaCppReader`), its elapsed stamps and its router prefix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tui.core.metrics.model import Metric, MetricSample, admissible
from tui.engines.spec import ReaderClock

NAME = "llamacpp"

#: a per-request timing line (prompt eval, eval)
KIND_TIMING = "llamacpp-timing"
#: a decoding progress line (``n_gen``/``n_decoded``, ``tg``)
KIND_PROGRESS = "llamacpp-progress"
#: a prompt-processing progress line
KIND_PROMPT = "llamacpp-prompt"
#: a speculative-acceptance line
KIND_SPEC = "llamacpp-spec"

#: How many lines after a mid-2025 ``slot print_timing:`` header may still be its
#: unprefixed timing and acceptance lines (prompt eval, eval, total, draft acceptance).
HEADER_SPAN = 4

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _num(name: str) -> str:
    """A printed number (``%f`` also prints ``inf``, ``nan``, ``-nan``) as a named group."""
    return rf"(?P<{name}>-?(?:\d+(?:\.\d*)?|inf|nan))"


_BODIES = re.compile(
    # per-request timings: "prompt eval time =   5093.47 ms /  1360 tokens (    3.75 ms per
    # token,   267.01 tokens per second)"; 2024 pads "prompt eval time     = " and, as
    # llama_perf, prints "runs" for decoding
    rf"(?P<timing>(?P<phase>prompt eval|generation eval|eval) time += *{_num('t_ms')} ms"
    rf" / *(?P<t_tokens>\d+) (?:tokens|runs) *\( *{_num('t_per')} ms per token,"
    rf" *{_num('t_rate')} tokens per second\))"
    # decoding progress: "n_gen =    300, tg =  99.66 t/s, tg_3s =  99.66 t/s"
    rf"|(?P<progress>\b(?P<counter>n_gen|n_decoded) = *(?P<count>\d+),"
    rf" tg = *{_num('tg')} t/s(?:, tg_3s = *{_num('tg_3s')} t/s)?)"
    # prefill progress: "prompt processing, n_tokens =   2048, progress = 0.16, t =  20.47 s /
    # 100.05 tokens per second"
    rf"|(?P<prompt>prompt processing, n_tokens = *(?P<p_tokens>\d+),"
    rf" progress = *{_num('p_progress')}, t = *{_num('p_s')} s / *{_num('p_rate')}"
    r" (?:tokens per second|t/s))"
    # acceptance: "draft acceptance rate = 0.23026 (   70 accepted /   304 generated)",
    # "draft acceptance = R (A accepted / G generated), mean len =  2.40" and
    # "..., mean acceptance length =  3.65, acceptance rate per position = (0.804, 0.701)"
    rf"|(?P<spec>draft acceptance(?: rate)? = *{_num('ratio')}"
    r" \( *(?P<accepted>\d+) accepted / *(?P<generated>\d+) generated\)"
    rf"(?:, (?P<len_key>mean len|mean acceptance length) = *{_num('len')})?"
    r"(?:, acceptance rate per position = \((?P<per_position>[^()]*)\))?)"
)
#: the mid-2025 timing header: an SLT_INF whose text starts with a newline
_HEADER = re.compile(r"slot print_timing: id +(-?\d+) \| task (-?\d+) \| ?$")
_SLOT = re.compile(r"slot .{12}: id +(-?\d+) \| task (-?\d+) \| ")
_STAMP = re.compile(r"(?<!\d)(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) [IWEDT] ")  # from a first digit
_ROUTER = re.compile(r"\[ *(\d+)\] ")
#: the 2024 key=value tail: `` | tid="..." timestamp=N id_slot=0 id_task=3 ...``
_TAIL_SLOT = re.compile(r"\b(?:id_slot|slot_id)=(-?\d+)")
_TAIL_TASK = re.compile(r"\b(?:id_task|task_id)=(-?\d+)")
#: an elapsed stamp at the very start of a line (a router's child counts from its own
#: start, which babysit does not know: such lines are not placed)
_LINE_STAMP = re.compile(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")

_PHASE_METRIC = {
    "prompt eval": Metric.PREFILL_THROUGHPUT,
    "eval": Metric.GEN_THROUGHPUT,
    "generation eval": Metric.GEN_THROUGHPUT,
}


class LlamaCppReader(ReaderClock):
    """Reads llama-server's log one line at a time (a :class:`~tui.engines.spec.LineReader`).

    State: the last mid-2025 timing header (slot, task, time, router port), which the next
    :data:`HEADER_SPAN` unprefixed lines take as theirs. ``started`` places the elapsed stamps;
    without it, or with no stamp, a line's time is ``reference`` (or ``clock()``, live).
    """

    def __init__(self, **made: Any) -> None:
        super().__init__(**made)
        self._header: tuple[str, str, datetime | None, str] | None = None
        self._lines = 0
        self._header_until = 0

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        """The samples on this line: none for most lines, one per metric message glued
        into it. Never raises."""
        self._lines += 1
        try:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            # quick tests before any regex: every metric message holds an "=" (most lines
            # of any engine hold none) and the text its regex starts with (progress: holds)
            if "=" in text and (
                "eval time " in text
                or "tg = " in text
                or "draft acceptance" in text
                or "prompt processing, " in text
            ):
                return self._samples(text, offset, run)
            if "print_timing" in text:
                self._note_header(text)
            return ()
        except (ValueError, OverflowError, IndexError):
            return ()

    def line_time(self, text: str) -> datetime | None:
        """The elapsed stamp at the line's start placed after ``started``; None without
        ``started`` or a stamp."""
        if self._started is None:
            return None
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        match = _LINE_STAMP.match(text)
        if match is None:
            return None
        try:
            return self._started + _elapsed(match)
        except OverflowError:
            return None

    # ---------------------------------------------------------------------------------

    def _note_header(self, text: str) -> None:
        match = _HEADER.search(text.rstrip("\r\n"))
        if match is None:
            return
        lead = text[: match.start()]
        router = _ROUTER.search(lead)
        self._header = (
            match.group(1),
            match.group(2),
            self._placed(lead),
            router.group(1) if router is not None else "",
        )
        self._header_until = self._lines + HEADER_SPAN

    def _placed(self, lead: str) -> datetime | None:
        """The time of the stamp in a line's prefix, when it has one and ``started`` is known."""
        if self._started is None or _ROUTER.search(lead) is not None:
            return None
        stamp = _STAMP.search(lead)
        return None if stamp is None else self._started + _elapsed(stamp)

    def _samples(self, text: str, offset: int | None, run: int) -> list[MetricSample]:
        matches = list(_BODIES.finditer(text))
        samples: list[MetricSample] = []
        end = 0
        for index, match in enumerate(matches):
            lead = text[end : match.start()]
            end = match.end()
            tail = text[end : matches[index + 1].start() if index + 1 < len(matches) else None]
            slot_task = _SLOT.search(lead)
            stamp = _STAMP.search(lead)
            router = _ROUTER.search(lead)
            header = self._header if self._lines <= self._header_until else None
            if slot_task is None and stamp is None and header is not None:
                slot, task, ts, port = header
            else:
                slot = task = ""
                if slot_task is not None:
                    slot, task = slot_task.groups()
                elif "_slot=" in tail or "slot_id=" in tail:
                    found = _TAIL_SLOT.search(tail)
                    slot = found.group(1) if found is not None else ""
                    found = _TAIL_TASK.search(tail)
                    task = found.group(1) if found is not None else ""
                ts = self._placed(lead)
                port = router.group(1) if router is not None else ""
            sample = _sample(match, slot, task, port)
            if sample is None:
                continue
            kind, body, values, pairs = sample
            samples.append(
                MetricSample(
                    ts=ts if ts is not None else self._now(),
                    kind=kind,
                    engine=NAME,
                    body=body,
                    values=values,
                    offset=offset,
                    source=f"port {port}" if port else "",
                    run=run,
                    pairs=pairs,
                )
            )
        return samples


def _elapsed(match: re.Match[str]) -> timedelta:
    minutes, seconds, millis, micros = match.groups()
    return timedelta(
        minutes=int(minutes),
        seconds=int(seconds),
        milliseconds=int(millis),
        microseconds=int(micros),
    )


_Sample = tuple[str, str, dict[Metric, float], dict[str, str]]


def _sample(match: re.Match[str], slot: str, task: str, port: str) -> _Sample | None:
    """One message's kind, body, canonical values and fields; None when it has no value."""
    pairs: dict[str, str] = {}
    if port:
        pairs["port"] = port
    if slot:
        pairs["slot"] = slot
    if task:
        pairs["task"] = task
    values: dict[Metric, float] = {}
    get = match.group
    if get("timing") is not None:
        kind, body, phase = KIND_TIMING, get("timing"), get("phase")
        pairs["phase"] = phase
        pairs["time"] = f"{get('t_ms')} ms"
        pairs["tokens"] = get("t_tokens")
        pairs["ms per token"] = get("t_per")
        pairs["tokens per second"] = get("t_rate")
        _put(values, _PHASE_METRIC[phase], get("t_rate"))
    elif get("progress") is not None:
        kind, body = KIND_PROGRESS, get("progress")
        pairs[get("counter")] = get("count")
        pairs["tg"] = f"{get('tg')} t/s"
        window = get("tg_3s")
        if window is not None:
            pairs["tg_3s"] = f"{window} t/s"
        # the last 3 s when printed (the rate now), else the request's average so far
        _put(values, Metric.GEN_THROUGHPUT, window if window is not None else get("tg"))
    elif get("prompt") is not None:
        kind, body = KIND_PROMPT, get("prompt")
        pairs["n_tokens"] = get("p_tokens")
        pairs["progress"] = get("p_progress")
        pairs["t"] = f"{get('p_s')} s"
        pairs["tokens per second"] = get("p_rate")
        _put(values, Metric.PREFILL_THROUGHPUT, get("p_rate"))
    else:
        kind, body = KIND_SPEC, get("spec")
        pairs["draft acceptance"] = get("ratio")
        pairs["accepted"] = get("accepted")
        pairs["generated"] = get("generated")
        if get("len_key") is not None:
            pairs[get("len_key")] = get("len")
            _put(values, Metric.ACCEPT_LEN, get("len"))
        if get("per_position") is not None:
            pairs["acceptance rate per position"] = get("per_position")
        _put(values, Metric.ACCEPT_RATE, get("ratio"))
    return (kind, body, values, pairs) if values else None


def _put(values: dict[Metric, float], metric: Metric, text: str) -> None:
    """Keeps a printed number as ``metric``'s value when it is :func:`admissible`."""
    number = float(text)
    if admissible(metric, number):
        values[metric] = number
