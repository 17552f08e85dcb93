"""Hints: small rules over what babysit already sees, each with the evidence that fired it.

A hint is a suggestion, never a verdict: it names the rule, says in plain
words what may be wrong and where to look, and lists the facts it rests on
(values, ages, runs, log offsets) so a person can check them. Each rule is a
pure function of a :class:`~tui.core.metrics.series.ServiceMetrics` snapshot (the
current run only), the launch diff, the GPUs and what is known of requests; a
rule with too little data stays quiet.

Rules:

* ``orphans`` — processes hold memory on the service's GPUs and belong to no live run
  of any configured service (:mod:`tui.core.hints_orphans`); it comes first.
* ``spec-no-accept-metrics`` — speculative decoding is intended or reported,
  the run generated tokens in at least two intervals, yet it printed no accept
  length or rate.
* ``low-gpu-power`` — a GPU draws under 60% of its power limit while
  requests run (fresh values only).
* ``stall`` — within the last two minutes of the run the queue grew while
  generation throughput fell to 70% of its peak or less.
* ``possible-repetition`` — accept rate at or above 0.95 on very long outputs
  (4,096 tokens or more per request) at a temperature above 0 (or unknown):
  check the sampling parameters. Left out when ``sampling-loop`` fires.
* ``sampling-loop`` and ``accept-collapse`` — a canary's output loops while drafts are
  accepted nearly always; the accept rate fell after it was healthy
  (:mod:`tui.core.hints_accept`).
* ``death-line`` — the run (or, when no process writes the log, the log's last run)
  printed a line that says part of the server died (the engine's death lines in
  :attr:`tui.engines.spec.EngineSpec.deaths`): a child was killed, the engine core is
  gone, the scheduler crashed. The process may still answer for a while, failing requests.
* ``crash-loop`` — a container's RestartCount climbed between probes (within ten
  minutes), or it is restarting with a RestartCount above 0: its server fails at
  start, and its runtime starts it again.
* ``auto-remove`` — the container runs with ``--rm`` (or did, and is gone): its log
  goes with it when it exits; babysit keeps the lines it has read.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tui.core.canary import CanaryResult
from tui.core.container_watch import ContainerNotes
from tui.core.gpu import ServiceGpus
from tui.core.hint import Hint, HintRule, Thresholds, run_words, where_words
from tui.core.hints_accept import accept_collapse, sampling_loop
from tui.core.hints_orphans import orphans
from tui.core.hostclock import HostWords
from tui.core.launch.diff import FlagStatus, LaunchDiff, reported_speculative, spec_keys
from tui.core.metrics.model import Metric, Unit
from tui.core.metrics.series import SeriesPoint, ServiceMetrics
from tui.core.sanitize import printable
from tui.core.units import human_age


@dataclass(frozen=True)
class RequestStats:
    """What is known of recent requests (from request logs or a client); None: unknown."""

    mean_output_tokens: float | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class DeathLine:
    """A line of the log that says part of the server died, where it is, and whether a
    process of the run still writes the log."""

    text: str
    offset: int | None
    running: bool


def hints(
    metrics: ServiceMetrics,
    *,
    launch: LaunchDiff | None = None,
    gpus: ServiceGpus | None = None,
    requests: RequestStats | None = None,
    thresholds: Thresholds | None = None,
    death: DeathLine | None = None,
    container: ContainerNotes | None = None,
    canary: CanaryResult | None = None,
) -> list[Hint]:
    """Every rule that fires, in rule order. ``canary``: this run's last canary. When
    ``sampling-loop`` fires, ``possible-repetition`` (the same advice on weaker evidence:
    long outputs, not an output seen looping) is left out."""
    limits = thresholds or Thresholds()
    loop = sampling_loop(metrics, launch, canary, limits)
    found = [
        orphans(gpus),
        crash_loop(container),
        auto_remove(container),
        death_line(death),
        spec_without_accept(metrics, launch, limits),
        low_gpu_power(metrics, gpus, limits),
        stall(metrics, limits),
        loop,
        possible_repetition(metrics, requests, limits) if loop is None else None,
        accept_collapse(metrics, launch, limits),
    ]
    return [hint for hint in found if hint is not None]


def death_line(death: DeathLine | None) -> Hint | None:
    """The run printed that part of it died."""
    if death is None:
        return None
    text = death.text if len(death.text) <= 200 else death.text[:199] + "…"
    where = f"log byte {death.offset}" if death.offset is not None else "the log's tail"
    if death.running:
        message = (
            "part of the server died: this run printed a death line; its process may still "
            f"answer for a while, failing requests, or be shutting down (see {where})"
        )
        whose = "this run"
    else:
        message = (
            "the log's last run printed a death line: most likely why no server writes it "
            f"now (see {where})"
        )
        whose = "the log's last run (no process writes the log now)"
    return Hint(HintRule.DEATH_LINE, message, (f"{whose}, {where}: {text}",))


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def crash_loop(notes: ContainerNotes | None) -> Hint | None:
    """The container's runtime starts it again and again: its server fails at start."""
    if notes is None or notes.restarts is None:
        return None
    c, restarts = notes.state, notes.restarts
    words = HostWords(notes.utc_offset, notes.now)
    count, total = restarts.restarts, c.restart_count
    lifetime = (c.started_at or notes.now) - c.created if c.created is not None else None
    if restarts.seen and total > count and lifetime is not None and lifetime > 0:
        # Restarts before babysit watched count too: the whole count since it was created.
        said = (
            f"restarted {_times(total)} in {human_age(lifetime)} (about every "
            f"{human_age(lifetime / total)}), {count} of them while watched"
        )
    else:
        said = f"restarted {_times(count)}"
        if restarts.span is not None and restarts.span > 0:
            every = human_age(restarts.span / count)
            said += f" in {human_age(restarts.span)} (about every {every})"
    # A container the runtime started again holds ExitCode 0 (set as it starts); the
    # last try's status is known only while it is stopped or restarting.
    code = c.exit_code if not c.running or c.restarting else None
    if c.finished_at is not None:
        status = f" {code}" if code is not None else ""
        said += f"; last exit{status} at {words.clock(c.finished_at)}"
    runtime = printable(c.runtime)
    message = (
        f"{said}: the server fails at start; `{runtime} logs` of each try mixes runs, "
        "babysit shows this run's lines"
    )
    evidence = [
        f"{runtime} inspect of {printable(c.label)} ({c.short_id}): RestartCount "
        f"{c.restart_count}, status {printable(c.status)}, restart policy "
        f"{printable(c.restart_policy) or 'no'}"
    ]
    if restarts.seen:
        readings = ", ".join(
            f"{seen.count} (run started {words.clock(seen.at)})" for seen in restarts.seen
        )
        evidence.append(f"RestartCount seen by the probes: {readings}")
    elif c.created is not None:
        evidence.append(f"created {words.when(c.created)}")
    if c.finished_at is not None:
        oom = ", OOMKilled" if c.oom_killed else ""
        status = (
            f"status {code}"
            if code is not None
            else f"its status unknown ({runtime} sets ExitCode to 0 as it starts the container)"
        )
        evidence.append(f"last exit: {status} at {words.when(c.finished_at)} (FinishedAt){oom}")
    return Hint(HintRule.CRASH_LOOP, message, tuple(evidence))


def auto_remove(notes: ContainerNotes | None) -> Hint | None:
    """The container runs with --rm, or did and is gone: its log goes with it."""
    if notes is None:
        return None
    c = notes.state
    words = HostWords(notes.utc_offset, notes.now)
    if c.found and c.auto_remove:
        evidence = (
            f"{printable(c.runtime)} inspect of {printable(c.label)} ({c.short_id}): "
            "HostConfig.AutoRemove true",
        )
    elif c.absent and notes.last_found is not None and notes.last_found.auto_remove:
        seen = notes.last_found
        at = f" at {words.when(notes.last_found_at)}" if notes.last_found_at is not None else ""
        evidence = (
            f"{printable(seen.label)} ({seen.short_id}) was seen with HostConfig.AutoRemove "
            f"true{at}",
            f"no container {printable(c.ref)} now",
        )
    else:
        return None
    return Hint(
        HintRule.AUTO_REMOVE,
        "this container is removed when it exits (--rm): its log goes with it; babysit "
        "keeps the last lines it has read",
        evidence,
    )


def spec_without_accept(
    metrics: ServiceMetrics, launch: LaunchDiff | None, limits: Thresholds
) -> Hint | None:
    """Speculative decoding intended or reported, the run decodes, and no accept metrics."""
    if launch is None:
        return None
    intended = launch.speculative_intended
    reported = reported_speculative(launch.reported)
    if not intended and not reported:
        return None
    # vLLM prints stats lines while idle too; only generating intervals count
    decoding = [p for p in metrics.series_of(Metric.GEN_THROUGHPUT) if p.value > 0]
    if len(decoding) < limits.spec_min_points:
        return None
    if metrics.series_of(Metric.ACCEPT_LEN) or metrics.series_of(Metric.ACCEPT_RATE):
        return None
    evidence = []
    if intended:
        evidence.append(f"hosts.yaml asks for speculative decoding ({intended})")
    keys = spec_keys(launch.engine)
    spec_flags = [r.flag for r in launch.rows if r.status is FlagStatus.MISSING and r.dest in keys]
    if spec_flags:
        evidence.append(f"missing from the running server: {', '.join(spec_flags)}")
    if launch.reported is not None:
        said = reported or "none"
        evidence.append(f"the server reports speculative decoding: {said}")
    evidence.append(
        f"{run_words(metrics)}: {len(decoding)} throughput values{where_words(decoding)}, "
        "none with accept length or rate"
    )
    return Hint(
        HintRule.SPEC_NO_ACCEPT,
        "speculative decoding should be on, but this run prints no acceptance metrics: "
        "it is probably off — compare the launch flags",
        tuple(evidence),
    )


def low_gpu_power(
    metrics: ServiceMetrics, gpus: ServiceGpus | None, limits: Thresholds
) -> Hint | None:
    """A GPU draws under ``low_power_fraction`` of its limit while requests run."""
    if gpus is None or not gpus.gpus:
        return None
    running = metrics.latest_of(Metric.RUNNING)
    if running is None or running.stale or running.value < 1:
        return None
    low = [
        g
        for g in gpus.gpus
        if g.power_fraction is not None and g.power_fraction < limits.low_power_fraction
    ]
    if not low:
        return None
    evidence = [
        f"GPU {g.index}: {g.power_draw:.0f} W of {g.power_limit:.0f} W "
        f"({g.power_fraction * 100:.0f}%)"  # type: ignore[operator]
        for g in low
    ]
    evidence.append(
        f"{running.value:.0f} requests running ({running.age:.0f} s ago, {run_words(metrics)})"
    )
    throughput = metrics.latest_of(Metric.GEN_THROUGHPUT)
    if throughput is not None:
        evidence.append(f"gen throughput {throughput.text}")
    return Hint(
        HintRule.LOW_GPU_POWER,
        f"GPU power under {limits.low_power_fraction:.0%} of its limit while requests run: "
        "the GPUs are waiting — small batches, speculative decoding off, or a CPU-bound server",
        tuple(evidence),
    )


def _window(points: Sequence[SeriesPoint], seconds: float) -> list[SeriesPoint]:
    if not points:
        return []
    start = points[-1].ts - seconds
    return [p for p in points if p.ts >= start]


def stall(metrics: ServiceMetrics, limits: Thresholds) -> Hint | None:
    """The queue grew while generation throughput fell, within the last ``stall_window``."""
    queue = _window(metrics.series_of(Metric.QUEUED), limits.stall_window)
    tput = _window(metrics.series_of(Metric.GEN_THROUGHPUT), limits.stall_window)
    if len(queue) < limits.stall_min_points or len(tput) < limits.stall_min_points:
        return None
    first_q, last_q = queue[0].value, queue[-1].value
    peak = max(p.value for p in tput)
    last_t = tput[-1].value
    growing = last_q - first_q >= limits.stall_queue_growth and last_q >= max(
        p.value for p in queue
    )
    falling = peak > 0 and last_t <= limits.stall_throughput_drop * peak
    if not (growing and falling):
        return None
    span = queue[-1].ts - queue[0].ts
    tokens = Unit.TOKENS_PER_S
    return Hint(
        HintRule.STALL,
        "requests queue up while throughput falls: the server may be stalling "
        "(look at the log around these lines)",
        (
            f"queue {first_q:.0f} → {last_q:.0f} requests over {span:.0f} s{where_words(queue)}",
            f"gen throughput {tokens.format(peak)} at its peak → {tokens.format(last_t)} "
            f"now{where_words(tput[-1:])}",
        ),
    )


def possible_repetition(
    metrics: ServiceMetrics, requests: RequestStats | None, limits: Thresholds
) -> Hint | None:
    """Accept rate at or above the limit on very long outputs at a temperature above 0."""
    count = max(limits.repetition_min_points, limits.repetition_recent_points)
    rates = metrics.series_of(Metric.ACCEPT_RATE)[-count:]
    if len(rates) < limits.repetition_min_points:
        return None
    rate = statistics.median(p.value for p in rates)
    if rate < limits.repetition_accept_rate:
        return None
    temperature = requests.temperature if requests else None
    if temperature is not None and temperature <= 0:
        return None  # greedy decoding: drafts matching is expected
    length, length_evidence = _output_length(metrics, requests)
    if length is None or length < limits.long_output_tokens:
        return None
    return Hint(
        HintRule.POSSIBLE_REPETITION,
        "drafts are almost always accepted on very long outputs: the model may be repeating "
        "itself — check the sampling parameters (temperature, penalties), "
        "not speculative decoding",
        (
            f"accept rate {rate:.2f} (median of the last {len(rates)} values, "
            f"{run_words(metrics)}){where_words(rates)}",
            length_evidence,
            f"temperature {temperature:g}"
            if temperature is not None
            else "temperature unknown (at 0 this would be expected)",
        ),
    )


def _output_length(
    metrics: ServiceMetrics, requests: RequestStats | None
) -> tuple[float | None, str]:
    if requests is not None and requests.mean_output_tokens is not None:
        tokens = requests.mean_output_tokens
        return tokens, f"mean output {tokens:,.0f} tokens"
    kv = metrics.latest_of(Metric.KV_TOKENS)
    running = metrics.latest_of(Metric.RUNNING)
    if kv is None or running is None or running.value < 1:
        return None, ""
    per_request = kv.value / running.value
    return per_request, (
        f"~{per_request:,.0f} tokens held per running request "
        f"({kv.value:,.0f} tokens / {running.value:.0f} requests)"
    )
