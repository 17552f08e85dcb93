"""What babysit knows of one inference engine, as one value: :class:`EngineSpec`.

Each engine is one module or package of this package (``sglang/``, ``vllm/``,
``llamacpp/``, ``tgi/``, ``generic.py``) that defines ``SPEC``; the registry
(:mod:`tui.engines`) finds them. What several engines share is in the modules whose
names start with ``_`` (``_torch``: PyTorch's own lines; ``_openai``: the OpenAI
completions API). Nothing outside an engine's module names one of
its lines, flags or metrics: the probe request, the run boundaries, the metric
parser, the launch diff, the readiness wait, the relaunch and the demo all read
the spec.

The agent on the host holds no engine knowledge. What it must scan for travels in
the request as text: ready lines, args-line heads (:class:`ArgsHead`), the stamps
that date a line (:class:`Stamp`, a regex source and its kind) and the pid tag.

Engine modules import only the standard library, this package and the pure parts of
:mod:`tui.core.metrics` (``model``: the canonical metrics and the sample type;
``fields``; ``stamps``), none of which imports the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from tui.core.metrics.model import Metric, MetricSample


@dataclass(frozen=True)
class ArgsHead:
    """The text that starts the line where a server prints the arguments it runs with.

    ``form`` names the shape the line is read in (the engine's ``read_reported``
    gets it back). ``complete`` says whether that shape lists every argument
    (SGLang's ``server_args``) or only the changed ones (vLLM's ``non-default
    args``). ``until``: the dump spans lines (TGI's ``Args {`` ... ``}``) and ends
    at the first line that starts with this text; ``None`` for one line.
    """

    text: str
    form: str
    complete: bool = True
    until: str | None = None


class ReportedValues(dict):
    """What an args line reports (argparse destination -> value), in line order.

    ``truncated`` is true when the line ended before its closing bracket (a cut
    line): the values seen are kept, the rest is unknown."""

    truncated: bool = False


class StampKind:
    """How to turn a :class:`Stamp`'s groups into a time."""

    #: (year, month, day, hour, minute, second[, fraction]) on the host's wall clock
    WALL = "wall"
    #: (year, month, day, hour, minute, second[, fraction]) in UTC (RFC 3339 ``…Z``: TGI,
    #: a JSON formatter's ISO time)
    UTC = "utc"
    #: (month, day, hour, minute, second[, fraction]): the year is the latest that puts
    #: the line at or before the file's last write
    YEARLESS = "yearless"
    #: (hour, minute, second[, fraction]) with no date: the date is the run's
    TIME_ONLY = "time-only"
    #: (minutes, seconds, milliseconds, microseconds) since the process started
    #: (llama.cpp's ``--log-timestamps``): placed by the run's start time; a run
    #: begins where the stamps start over
    ELAPSED = "elapsed"


@dataclass(frozen=True)
class Stamp:
    """One way a line of this engine is stamped: ``pattern`` is a regex source matched at
    the line's start (as text in core, as bytes in the agent), its groups read as
    ``kind`` says. Wrappers' stamps (docker's, journald's) are not an engine's."""

    pattern: str
    kind: str = StampKind.WALL


@dataclass(frozen=True)
class Phase:
    """A startup phase and the lines that say it began (substrings, this engine's own).

    ``progress``: a regex source searched in this phase's lines whose two groups are
    (done, total), such as a shard count (``| 3/8 [``) or a CUDA-graph count; the last
    match in the phase is its progress. ``None`` when the engine prints none.
    """

    name: str
    lines: tuple[str, ...]
    progress: str | None = None


@dataclass(frozen=True)
class Prometheus:
    """What an engine's ``/metrics`` page holds that babysit reads.

    ``gauges``: sample name -> (metric, summed over ranks and engines; else
    averaged). ``rates``: counter sample name -> metric, the counter's rate per
    second between two scrapes (used when no gauge gave that metric).
    ``acceptance``: (accepted tokens, drafts, draft tokens) counter names, from
    which accept length and rate are derived; ``None`` when the engine has none.
    ``prefix`` starts every name of this engine's own (``vllm:``, ``tgi_``): a page
    is this engine's when one of its names does. ``skip_labels``: (label, value)
    pairs whose samples are left out. ``only_labels``: (label, value) pairs a sample
    that carries that label must match, else it is left out (another TP rank's copy
    of the same figure: ``("tp_rank", "0")``).
    """

    gauges: Mapping[str, tuple[Metric, bool]] = field(default_factory=dict)
    rates: Mapping[str, Metric] = field(default_factory=dict)
    acceptance: tuple[str, str, str] | None = None
    prefix: str = ""
    skip_labels: tuple[tuple[str, str], ...] = ()
    only_labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CanaryEvent:
    """What one piece of a canary's answer says: a ``data:`` event of its stream, or a
    whole answer that was not a stream (an error). ``tokens``: the completion tokens the
    server counted, when the piece says (a final usage block)."""

    text: str = ""
    finish_reason: str | None = None
    error: str | None = None
    tokens: int | None = None


@dataclass(frozen=True)
class CanaryApi:
    """How to send one small streaming completion to this engine's own server.

    ``body(prompt, max_tokens)`` is the JSON request (streaming on, no sampling keys);
    the sampling parameters are set at ``sampling_at`` (a path of keys into the body,
    ``()`` for its top level), each of ``sampling_keys`` that the model's
    ``generation_config.json`` or ``canary.sampling`` gives. ``read_event`` reads the
    payload of one ``data:`` line (None: not a piece of the answer, such as
    ``[DONE]``); ``read_answer`` reads a whole body that was not a stream (an error
    answer, in the engine's own shape).
    """

    path: str
    body: Callable[[str, int], dict[str, object]]
    read_event: Callable[[str], CanaryEvent | None]
    read_answer: Callable[[str], CanaryEvent | None]
    sampling_at: tuple[str, ...] = ()
    sampling_keys: tuple[str, ...] = (
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "repetition_penalty",
    )


class LineReader(Protocol):
    """Reads one engine's log, line by line, in order (it may keep state between lines:
    a header whose values come on the next lines, a multi-line dump)."""

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        """The metric samples on this line: none for most lines, two or more when lines
        were glued together (a lost newline). Never raises."""
        ...

    def line_time(self, text: str) -> datetime | None:
        """The time printed at the start of the line (host wall clock, naive), or None."""
        ...


class ReaderClock:
    """What a reader of host wall-clock stamps is made with: ``reference``, ``clock`` and
    ``started`` (see :data:`ReaderFactory`); ``utc_offset`` is taken and not needed, its
    stamps being the host's wall clock. Engine readers subclass it."""

    def __init__(
        self,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
        started: datetime | None = None,
        utc_offset: int | None = None,
    ) -> None:
        self._reference = reference
        self._clock = clock
        self._started = started

    def _now(self) -> datetime:
        """When the log was last written, else the clock's time (a live log)."""
        return self._reference if self._reference is not None else self._clock()


#: Makes a reader. ``reference`` is when the log was last written (the year of a
#: year-less stamp); ``None`` asks ``clock``. ``started`` is the run's start (host
#: wall clock), for stamps counted from it or lacking a date; ``None`` when unknown.
#: ``utc_offset`` is the host's zone, seconds east of UTC (``None``: this machine's own),
#: for stamps printed in UTC; every factory takes all four.
ReaderFactory = Callable[..., LineReader]


def new_reader(
    factory: ReaderFactory,
    *,
    reference: datetime | None,
    clock: Callable[[], datetime],
    started: datetime | None,
    utc_offset: int | None,
) -> LineReader:
    """A reader made by ``factory`` (every factory takes all four)."""
    return factory(reference=reference, clock=clock, started=started, utc_offset=utc_offset)


@dataclass(frozen=True)
class EngineSpec:
    """Everything babysit knows of one engine. See each field's comment."""

    #: the ``engine:`` value in hosts.yaml and JSON
    name: str
    #: how a person names it (``SGLang``, ``llama.cpp``)
    title: str
    #: argv words that start this engine (a basename or a module's name, matched as a
    #: prefix of each word's last path part): ``sglang``, ``llama-server``
    programs: tuple[str, ...] = ()
    #: lines that say the server serves (substrings; a service's ``ready:`` replaces them)
    ready: tuple[str, ...] = ()
    #: lines printed once per run near its start, besides the args heads (a version line)
    run_starts: tuple[str, ...] = ()
    #: lines that say a part of a running server died or is torn down because one did
    deaths: tuple[str, ...] = ()
    #: lines that say the engine stopped serving while its process lives on (a watchdog's
    #: timeout: NCCL's collective timeout, SGLang's scheduler watchdog); with ``deaths``,
    #: the fatal lines that make a ready, living run WEDGED (tui/core/serving.py)
    hangs: tuple[str, ...] = ()
    #: whether the log prints generation progress while requests run (a decode or stats
    #: line with throughput): without it only ``/metrics`` counters can show progress
    prints_progress: bool = False
    #: whether the log prints its running/queued figures again when the work ends (vLLM's
    #: stats line with ``Running: 0``). False (SGLang): the last decode line's counts stay
    #: after the last request ends, so they count as pending only while a client waits
    counts_when_idle: bool = True
    #: argparse destinations that name the model's folder (or file) in the running argv or
    #: the args line: where the canary looks for ``generation_config.json``
    model_keys: tuple[str, ...] = ()
    #: the running server's values (argparse destination -> value) -> the draft tokens one
    #: verify step proposes (the most an accept length can exceed 1 by); None: unknown
    draft_tokens: Callable[[Mapping[str, object]], int | None] | None = None
    #: how to send this engine a canary request; None: babysit cannot ask it
    canary: CanaryApi | None = None
    #: lines that, before the ready line, also mean the run failed to start
    startup_failures: tuple[str, ...] = ()
    #: among a failure's lines, those that say what went wrong (the first is the reason)
    telling: tuple[str, ...] = ()
    #: where the server prints the arguments it runs with, newest form first
    args_heads: tuple[ArgsHead, ...] = ()
    #: how its lines are dated
    stamps: tuple[Stamp, ...] = ()
    #: ``%d`` format of the text that tags a line with its process's pid (vLLM's ``pid=%d)``)
    pid_tag: str | None = None
    #: argparse destinations with more than one spelling -> the one the engine uses
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: flags that take no value
    switches: frozenset[str] = frozenset()
    #: argparse destinations that carry speculative decoding
    spec_keys: tuple[str, ...] = ()
    #: speculative algorithms the server runs, and prints, under another name
    #: (SGLang's NEXTN runs as EAGLE): said in words on the launch pane
    algorithm_aliases: Mapping[str, str] = field(default_factory=dict)
    #: flags the server needs to serve ``/metrics`` (SGLang's ``--enable-metrics``)
    metrics_flags: tuple[str, ...] = ()
    #: where a service's figures come from when hosts.yaml does not say (``metrics:``): its
    #: log lines, or its ``/metrics`` page for an engine whose log holds none (TGI)
    metrics_from: str = "log"
    #: startup phases in the order the engine goes through them
    phases: tuple[Phase, ...] = ()
    #: process titles of the engine's workers (a prefix of argv[0] or of ``comm``:
    #: ``VLLM::EngineCore``, ``sglang::scheduler``): such a process not below any run of
    #: the service is a worker its server left behind, never a run of its own
    workers: tuple[str, ...] = ()
    prometheus: Prometheus = field(default_factory=Prometheus)
    #: the metric-line reader; ``None`` for an engine whose log babysit cannot read
    reader: ReaderFactory | None = None
    #: (line, head) -> the reported values (a :class:`ReportedValues` says whether the
    #: line was cut), or None; ``None`` when the engine prints none
    read_reported: Callable[[str, ArgsHead], Mapping[str, object] | None] | None = None
    #: a sample's ``source`` -> its series label (``DP1``, ``engine 1``, or ``""``)
    series_label: Callable[[str], str] = field(default=lambda source: "")
