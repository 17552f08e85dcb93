"""A canary: one small completion sent to a run's server on its host, and what it says.

babysit's agent sends it on the host's loopback (never from this machine across the
network), to the engine's own endpoint (:attr:`tui.engines.spec.EngineSpec.canary`),
with the model's recommended sampling (its ``generation_config.json``, when the model's
folder is on the host; else the service's ``canary.sampling``; else the server's
defaults), and only to the run it was meant for: the agent re-checks the pid's start
time before it sends. The answer is read as a stream, each piece stamped as it
arrived: time to first token, tokens per second, the finish reason, the output's first
characters (sanitised) and a repetition score.

``babysit canary --json`` prints :meth:`CanaryResult.to_json`::

    {"schema": 1, "host": "kpro5", "service": "qwen", "ok": true, "outcome": "ok",
     "ttft_s": 0.21, "tokens_per_s": 61.8, "tokens": 64, "finish_reason": "length",
     "repetition": 0.0, "output": " Paris. It is …",
     "sampling": {"temperature": 0.6, "top_p": 0.95}, "sampling_source": "generation_config",
     "sampling_path": "/models/qwen/generation_config.json",
     "recommended": {"temperature": 0.6, "top_p": 0.95},
     "http_status": 200, "error": null, "sent_at": "2026-12-01T12:03:10+01:00",
     "elapsed_s": 1.24, "run": {"pid": 4242, "started_at": "2026-12-01T09:20:06+01:00"}}

Exit status: 0 completed without repetition, 1 completed with repetition or an error
answer, 2 timed out (or no live run to ask), 3 the host could not be asked.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

from tui.agent.protocol import MODE_CANARY, SAMPLING_CONFIG, SAMPLING_MODEL, SAMPLING_SERVER
from tui.config import CanaryConfig
from tui.core.answers import AnswerError, Fields, read
from tui.core.launch.diff import LaunchDiff
from tui.core.repetition import repetition_score
from tui.core.sanitize import printable
from tui.engines import spec
from tui.engines.spec import CanaryApi, CanaryEvent

#: The version of ``babysit canary --json``'s document.
CANARY_SCHEMA = 1
#: A repetition score at or above this says the output loops.
REPETITION_LOOPS = 0.5
#: Characters of the output kept (sanitised).
OUTPUT_CHARS = 200
#: Bytes of the server's answer the agent reads at most.
ANSWER_LIMIT = 256 * 1024
#: Characters of a non-stream answer quoted when it holds no error the engine's reader
#: knows.
BODY_CHARS = 200
#: The model file suffix whose folder holds the model's other files (llama.cpp's ``-m``).
MODEL_FILE_SUFFIXES = (".gguf",)
#: What the answer is called in the words of a garbled one.
WHAT = "the canary's answer"


class CanaryOutcome(enum.Enum):
    """How a canary ended; the value is its name in JSON."""

    OK = "ok"
    REPETITION = "repetition"
    ERROR = "error"
    TIMEOUT = "timeout"
    #: no live run of the service to ask (nothing was sent)
    NO_RUN = "no-run"
    #: the host could not be asked
    UNREACHABLE = "unreachable"

    @property
    def exit_status(self) -> int:
        return _EXIT[self]


_EXIT = {
    CanaryOutcome.OK: 0,
    CanaryOutcome.REPETITION: 1,
    CanaryOutcome.ERROR: 1,
    CanaryOutcome.TIMEOUT: 2,
    CanaryOutcome.NO_RUN: 2,
    CanaryOutcome.UNREACHABLE: 3,
}


@dataclass(frozen=True)
class CanaryResult:
    """One canary's answer, tied to the run it was sent to (pid and start time).

    Times are the host's epoch seconds; ``utc_offset`` is its zone (for JSON)."""

    host: str
    service: str
    outcome: CanaryOutcome
    sent_at: float | None = None
    run_pid: int | None = None
    run_start_ticks: int | None = None
    run_started_at: float | None = None
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    tokens: int | None = None
    elapsed_s: float | None = None
    finish_reason: str | None = None
    #: the output's first :data:`OUTPUT_CHARS` characters, made printable
    output: str = ""
    #: share of the output covered by repeated n-grams, 0-1 (None: no output)
    repetition: float | None = None
    #: the sampling parameters sent, and where they came from (SAMPLING_* words)
    sampling: Mapping[str, float] = field(default_factory=dict)
    sampling_source: str = "server"
    sampling_path: str | None = None
    #: what the model's generation_config.json recommends, when it was read
    recommended: Mapping[str, float] | None = None
    #: why the model's generation_config.json was not used, in the agent's words
    sampling_problem: str | None = None
    http_status: int | None = None
    #: what went wrong, in plain words (an error answer as it came, sanitised)
    error: str | None = None
    utc_offset: int = 0
    #: the agent's own CPU seconds for this canary
    agent_cpu_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is CanaryOutcome.OK

    @property
    def exit_status(self) -> int:
        return self.outcome.exit_status

    @property
    def timed_out(self) -> bool:
        return self.outcome is CanaryOutcome.TIMEOUT

    def to_json(self) -> dict[str, object]:
        """``babysit canary --json``'s document (see the module's docstring)."""
        return {
            "schema": CANARY_SCHEMA,
            "host": self.host,
            "service": self.service,
            "ok": self.ok,
            "outcome": self.outcome.value,
            "ttft_s": _rounded(self.ttft_s, 3),
            "tokens_per_s": _rounded(self.tokens_per_s, 1),
            "tokens": self.tokens,
            "finish_reason": self.finish_reason,
            "repetition": _rounded(self.repetition, 2),
            "output": self.output,
            "sampling": dict(self.sampling),
            "sampling_source": self.sampling_source,
            "sampling_path": self.sampling_path,
            "recommended": dict(self.recommended) if self.recommended is not None else None,
            "http_status": self.http_status,
            "error": self.error,
            "sent_at": self._iso(self.sent_at),
            "elapsed_s": _rounded(self.elapsed_s, 2),
            "run": {"pid": self.run_pid, "started_at": self._iso(self.run_started_at)},
        }

    def _iso(self, ts: float | None) -> str | None:
        if ts is None:
            return None
        zone = timezone(timedelta(seconds=self.utc_offset))
        return datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")

    def _clock(self, ts: float) -> str:
        zone = timezone(timedelta(seconds=self.utc_offset))
        return datetime.fromtimestamp(ts, zone).strftime("%H:%M:%S")

    def lines(self) -> list[str]:
        """The result in plain words, one fact per line, for ``babysit canary``."""
        out = [f"{self.host}/{self.service}: {self._outcome_words()}"]
        if self.ttft_s is not None:
            out.append(f"time to first token: {self.ttft_s:.2f} s")
        if self.tokens_per_s is not None:
            out.append(f"tokens per second: {self.tokens_per_s:.1f} ({self.tokens} tokens)")
        elif self.tokens is not None:
            out.append(f"tokens: {self.tokens}")
        if self.finish_reason is not None:
            out.append(f"finish reason: {self.finish_reason}")
        if self.repetition is not None:
            out.append(
                f"repetition: {self.repetition:.2f} (share of the output in repeated "
                f"phrases; {REPETITION_LOOPS:.2f} or more loops)"
            )
        out.append(f"sampling: {sampling_words(self.sampling)} ({self.source_words()})")
        if self.recommended is not None and self.sampling_source != SAMPLING_MODEL:
            out.append(f"the model recommends: {sampling_words(self.recommended)}")
        if self.sampling_problem is not None:
            out.append(f"generation_config.json not used: {self.sampling_problem}")
        if self.output:
            out.append(f"output: {self.output}")
        if self.http_status is not None:
            out.append(f"HTTP status: {self.http_status}")
        if self.elapsed_s is not None:
            out.append(f"answered in {self.elapsed_s:.2f} s")
        if self.run_pid is not None:
            started = (
                f", started {self._clock(self.run_started_at)}"
                if self.run_started_at is not None
                else ""
            )
            sent = f", sent {self._clock(self.sent_at)}" if self.sent_at is not None else ""
            out.append(f"run: pid {self.run_pid}{started}{sent}")
        return out

    def _outcome_words(self) -> str:
        if self.outcome is CanaryOutcome.OK:
            return "the canary completed"
        if self.outcome is CanaryOutcome.REPETITION:
            return "the canary completed, and its output repeats itself"
        if self.outcome is CanaryOutcome.TIMEOUT:
            return "the canary timed out" + (f": {self.error}" if self.error else "")
        if self.outcome is CanaryOutcome.NO_RUN:
            return "no canary sent" + (f": {self.error}" if self.error else "")
        if self.outcome is CanaryOutcome.UNREACHABLE:
            return "the host could not be asked" + (f": {self.error}" if self.error else "")
        return f"the canary failed: {self.error or 'an error answer'}"

    def source_words(self) -> str:
        """Where the sampling sent came from, in words."""
        if self.sampling_source == SAMPLING_MODEL:
            where = f" ({self.sampling_path})" if self.sampling_path else ""
            return f"the model's generation_config.json{where}"
        if self.sampling_source == SAMPLING_CONFIG:
            return "hosts.yaml canary.sampling"
        return "the server's defaults"


def sampling_words(sampling: Mapping[str, float]) -> str:
    """``temperature 0.6, top_p 0.95``, or ``none set``."""
    if not sampling:
        return "none set"
    return ", ".join(f"{key} {value:g}" for key, value in sampling.items())


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def canary_request(
    engine: str,
    config: CanaryConfig,
    *,
    pid: int,
    start_ticks: int,
    port: int,
    model_dir: str | None,
) -> dict[str, object] | None:
    """The agent's request (MODE_CANARY) for ``config`` to this run; None
    when the engine has no canary API. The fallback sampling keeps the keys the engine
    takes (``sampling_keys``)."""
    api = spec(engine).canary
    if api is None:
        return None
    fallback = {k: float(v) for k, v in config.sampling if k in api.sampling_keys}
    return {
        "mode": MODE_CANARY,
        "pid": pid,
        "start_ticks": start_ticks,
        "port": port,
        "path": api.path,
        "body": api.body(config.prompt, config.max_tokens),
        "sampling_at": list(api.sampling_at),
        "sampling_keys": list(api.sampling_keys),
        "generation_config": model_dir,
        "fallback_sampling": fallback or None,
        "timeout": float(config.timeout),
        "limit": ANSWER_LIMIT,
    }


def model_folder(engine: str, values: Mapping[str, object]) -> str | None:
    """The model's folder from the running server's values (argparse destination -> value,
    the launch diff's running side or the args line): the spec's ``model_keys`` first
    found; a file's folder for a file (a GGUF: ``.`` for a bare file name, the process's
    own folder)."""
    for key in spec(engine).model_keys:
        text = _text(values.get(key))
        if not text:
            continue
        if text.lower().endswith(MODEL_FILE_SUFFIXES):
            return posixpath.dirname(text) or "."
        return text.rstrip("/") or "/"
    return None


def _text(value: object) -> str | None:
    """One value as text (the last word of several, as argparse keeps)."""
    if isinstance(value, (tuple, list)):
        value = value[-1] if value else None
    if value is None or isinstance(value, bool):
        return None
    return str(value).strip() or None


def running_values(launch: LaunchDiff) -> dict[str, object]:
    """The running server's values (argparse destination -> value) from a launch diff: what
    its args line reports (under the engine's own destinations), then its command line's
    flags, which win (they are what the process was started with)."""
    engine = launch.engine
    aliases = spec(engine).aliases if engine is not None else {}
    values: dict[str, object] = {}
    reported = launch.reported.values if launch.reported is not None else {}
    for key, value in reported.items():
        values[aliases.get(key, key)] = value
    if launch.actual is not None:
        for dest, flag in launch.actual.by_dest(engine).items():
            values[dest] = flag.value()
    return values


def read_canary(
    host: str,
    service: str,
    engine: str,
    answer: Mapping[str, object],
    *,
    utc_offset: int,
    started_at: float | None,
    iso: Callable[[float], str | None] | None = None,
) -> CanaryResult:
    """The agent's canary answer as a result (never raises: a garbled answer is an ERROR
    result that says what was wrong). ``started_at`` is the run's start (host epoch
    seconds), which the answer does not carry; ``iso`` is taken for the callers that
    write host times, the result keeping epoch seconds and ``utc_offset``."""
    base = CanaryResult(host, service, CanaryOutcome.ERROR, utc_offset=utc_offset)
    try:
        return _read(base, spec(engine).canary, read(answer, WHAT), started_at)
    except AnswerError as error:
        return replace(base, error=printable(str(error)))


def _read(  # noqa: PLR0911 - one return per outcome, in the order they are decided
    base: CanaryResult, api: CanaryApi | None, data: Fields, started_at: float | None
) -> CanaryResult:
    run = data.child("run")
    facts: dict[str, object] = {
        "run_pid": run.opt_integer("pid"),
        "run_start_ticks": run.opt_integer("start_ticks"),
        "run_started_at": started_at,
        "sent_at": data.opt_time("sent_at"),
        "elapsed_s": data.opt_number("elapsed_s"),
        "agent_cpu_s": data.opt_number("cpu_s"),
        "http_status": data.opt_integer("status"),
        "sampling": _numbers(data.opt_child("sampling")) or {},
        "sampling_source": data.opt_string("sampling_source") or SAMPLING_SERVER,
        "sampling_path": data.opt_string("sampling_path"),
        "recommended": _numbers(data.opt_child("recommended")),
        "sampling_problem": data.opt_string("sampling_problem"),
    }
    base = replace(base, **facts)
    if not run.flag("same") or not run.flag("alive"):
        why = "the process is gone" if not run.flag("alive") else "the pid is another process"
        return replace(base, outcome=CanaryOutcome.NO_RUN, error=f"{why}: nothing was sent")
    if api is None:
        return replace(base, error="babysit cannot send this engine a canary")
    events = [(at, api.read_event(payload)) for at, payload in _events(data)]
    heard = [(at, event) for at, event in events if event is not None]
    stream = _Stream(heard)
    base = replace(base, **stream.facts())
    status = base.http_status
    body = data.opt_text("body")
    if status is not None and not 200 <= status < 300:
        said = _answer_error(api, body)
        return replace(base, error=f"HTTP {status}" + (f": {said}" if said else ""))
    if stream.error is not None:
        return replace(base, error=printable(stream.error))
    if data.flag("timed_out"):
        seconds = base.elapsed_s
        after = f"no complete answer after {seconds:.1f} s" if seconds is not None else None
        return replace(base, outcome=CanaryOutcome.TIMEOUT, error=after)
    agent_error = data.opt_string("error")
    if agent_error is not None:
        return replace(base, error=agent_error)
    if not heard:
        said = _answer_error(api, body)
        return replace(base, error=said or "the server answered no stream")
    loops = base.repetition is not None and base.repetition >= REPETITION_LOOPS
    return replace(base, outcome=CanaryOutcome.REPETITION if loops else CanaryOutcome.OK)


def _numbers(data: Fields | None) -> dict[str, float] | None:
    """An object's number values (others left out), or None for no object."""
    if data is None:
        return None
    return {key: data.number(key) for key in data if isinstance(data.data[key], int | float)}


def _events(data: Fields) -> list[tuple[float, str]]:
    """(seconds after sent, payload) of each ``data:`` event."""
    out = []
    for index, item in enumerate(data.values("events")):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], int | float)
            or isinstance(item[0], bool)
            or not isinstance(item[1], str)
        ):
            raise AnswerError(f"{WHAT}: events[{index}]", "is not [seconds, text]")
        payload = item[1].strip()
        if payload.startswith("data:"):
            payload = payload[5:].strip()
        out.append((max(float(item[0]), 0.0), payload))
    return out


def _answer_error(api: CanaryApi, body: str | None) -> str | None:
    """A non-stream answer's error as the engine words it, else its first characters."""
    if not body:
        return None
    event = api.read_answer(body)
    if event is not None and event.error:
        return printable(event.error)
    text = body.strip()
    return printable(text[:BODY_CHARS] + ("…" if len(text) > BODY_CHARS else "")) or None


class _Stream:
    """What the events of a stream add up to."""

    def __init__(self, heard: Sequence[tuple[float, CanaryEvent]]) -> None:
        texts = [(at, e) for at, e in heard if e.text]
        self.text = "".join(e.text for _, e in texts)
        self.first = texts[0][0] if texts else None
        self.last = texts[-1][0] if texts else None
        counted = [e.tokens for _, e in heard if e.tokens is not None]
        self.tokens = counted[-1] if counted else (len(texts) or None)
        reasons = [e.finish_reason for _, e in heard if e.finish_reason]
        self.finish_reason = reasons[-1] if reasons else None
        errors = [e.error for _, e in heard if e.error]
        self.error = errors[0] if errors else None

    def facts(self) -> dict[str, object]:
        rate = None
        if self.first is not None and self.last is not None and self.tokens:
            span = self.last - self.first
            if span > 0 and self.tokens > 1:
                rate = (self.tokens - 1) / span
        return {
            "ttft_s": self.first,
            "tokens": self.tokens,
            "tokens_per_s": rate,
            "finish_reason": printable(self.finish_reason) if self.finish_reason else None,
            "output": printable(self.text[:OUTPUT_CHARS]),
            "repetition": repetition_score(self.text) if self.text else None,
        }


__all__ = [
    "CANARY_SCHEMA",
    "OUTPUT_CHARS",
    "REPETITION_LOOPS",
    "CanaryOutcome",
    "CanaryResult",
    "canary_request",
    "model_folder",
    "read_canary",
    "repetition_score",
    "running_values",
]
