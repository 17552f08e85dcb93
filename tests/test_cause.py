"""Why a run is DEAD, STALE or failed while STARTING, decided once from this run's own
lines and its exit, and said first by every view.

The lines are the ones the engines print (SGLang's scheduler OOM at load, vLLM's
engine core traceback, a shell's ``Killed``); the assessments are real ones of a
made-up, self-consistent probe (tests/test_app_snapshots.py), and the reports come
from :class:`~tui.core.report.ServiceFacts` as every view gets them.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reports import build_report
from test_app_snapshots import HOSTS, INODE, NOW, OLD_INODE, probed

from tui.app.fleet_rows import COLUMNS, fleet_row
from tui.app.widgets.run_banner import banner_lines
from tui.commands.status import render
from tui.core.cause import Cause, CauseKind, FailureWatch, cause_of, failure_kind
from tui.core.containers import ContainerState, LastExit
from tui.core.report import ProbeDetails, ServiceReport
from tui.core.runs import Assessment
from tui.core.service_report import status_json
from tui.core.verdict_words import gist, why
from tui.core.verdicts import Verdict
from tui.engines import spec
from tui.hostsfile import parse_config
from tui.session.state import HostState

pytestmark = pytest.mark.unit

SERVICE = parse_config(HOSTS).hosts["kpro5"].services["qwen"]

SGLANG_OOM = b"""[2026-01-12 09:20:06] Load weight end. type=Qwen3ForCausalLM, avail mem=63.49 GB
[2026-01-12 09:20:07] Scheduler hit an exception: Traceback (most recent call last):
  File "/sglang/srt/managers/scheduler.py", line 2638, in run_scheduler_process
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: 0.95

[2026-01-12 09:20:07] Received sigquit from a child process. It usually means the child failed.
"""
TORCH_OOM = (
    b"(EngineCore_DP0 pid=4242) ERROR 01-12 09:20:07 [core.py:700] EngineCore failed to start.\n"
    b"(EngineCore_DP0 pid=4242) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    b"2.00 GiB. GPU 0 has a total capacity of 79.19 GiB\n"
    b"(APIServer pid=4200) RuntimeError: Engine core initialization failed. See root cause above.\n"
)
VLLM_ERROR = (
    b"(EngineCore_DP0 pid=4242) ERROR 01-12 09:20:07 [core.py:700] EngineCore failed to start.\n"
    b"(EngineCore_DP0 pid=4242) ValueError: max_model_len (131072) is larger than the model's\n"
    b"(APIServer pid=4200) INFO 01-12 09:20:08 [launcher.py:80] Shutting down FastAPI server.\n"
)
SERVED_THEN_GONE = (
    b"(APIServer pid=4200) INFO:     Waiting for application startup.\n"
    b"(APIServer pid=4200) INFO:     Application startup complete.\n"
)
SHELL_KILLED = b"[2026-01-12 09:20:06] Decode batch, #running-req: 1\nKilled\n"


def report(a: Assessment, tail: bytes, engine: str = "sglang") -> ServiceReport:
    return build_report(a, ProbeDetails(tail=tail, tail_offset=0), engine=engine, intended=None)


def dead() -> Assessment:
    return probed(writes=None, ready=None, mtime=NOW - 180)


def watch(text: bytes, engine: str = "sglang") -> FailureWatch:
    w = FailureWatch(spec(engine).deaths)
    offset = 0
    for line in text.split(b"\n"):
        w.line(line.decode(), offset)
        offset += len(line) + 1
    return w


# --------------------------------------------------------------------------- lines


@pytest.mark.parametrize(
    ("line", "kind", "name"),
    [
        ("RuntimeError: Not enough memory. Please try", CauseKind.OOM, "RuntimeError"),
        ("torch.OutOfMemoryError: CUDA out of memory.", CauseKind.OOM, "OutOfMemoryError"),
        ("(EngineCore_DP0 pid=1) ValueError: max_model_len", CauseKind.ERROR, "ValueError"),
        ("[2026-01-12 09:20:07] KeyError: 'model.layers.0'", CauseKind.ERROR, "KeyError"),
        ("KeyboardInterrupt", CauseKind.SIGNAL, "KeyboardInterrupt"),
        ("Killed", CauseKind.SIGNAL, ""),
        ("Received sigquit from a child process.", CauseKind.SIGNAL, ""),
        ("Rank 0 scheduler is dead. Please check", CauseKind.ERROR, ""),
    ],
)
def test_a_failure_line_is_known_by_its_kind(line: str, kind: CauseKind, name: str) -> None:
    assert failure_kind(line, spec("sglang").deaths) == (kind, name)


@pytest.mark.parametrize(
    "line",
    [
        "Traceback (most recent call last):",
        "INFO:     Application startup complete.",
        "[2026-01-12 09:20:06] Decode batch, #running-req: 1, gen throughput (token/s): 61.2",
        "the word Killed inside a request's prompt",
    ],
)
def test_an_ordinary_line_is_no_failure_line(line: str) -> None:
    assert failure_kind(line, spec("sglang").deaths) is None


def test_the_out_of_memory_line_says_it_best_though_a_signal_line_comes_after() -> None:
    best = watch(SGLANG_OOM).best
    assert best is not None and best.kind is CauseKind.OOM
    assert best.text.startswith("RuntimeError: Not enough memory.")
    assert best.offset == SGLANG_OOM.index(b"RuntimeError: Not")


def test_an_exception_says_it_better_than_the_death_line_before_it() -> None:
    best = watch(VLLM_ERROR, "vllm").best
    assert best is not None and (best.kind, best.exception) == (CauseKind.ERROR, "ValueError")


def test_a_run_without_failure_lines_keeps_its_last_line() -> None:
    w = watch(SERVED_THEN_GONE, "vllm")
    assert w.best is None
    assert w.last is not None and w.last.text.endswith("INFO: Application startup complete.")


def test_a_failure_line_is_kept_printable_and_cut() -> None:
    w = FailureWatch()
    w.line("RuntimeError: \x1b]0;pwned\x07 " + "x" * 400, 0)
    assert w.best is not None
    assert "\x1b" not in w.best.text and len(w.best.text) <= 200


# --------------------------------------------------------------------------- the decision


def test_the_oom_run_and_the_killed_run_read_differently() -> None:
    oom = report(dead(), SGLANG_OOM).assessment.cause
    gone = report(dead(), SERVED_THEN_GONE, "vllm").assessment.cause
    assert oom is not None and gone is not None
    assert why(oom) == (
        "out of memory: RuntimeError: Not enough memory. Please try to increase "
        "--mem-fraction-static. Current value: 0.95"
    )
    assert gone.kind is CauseKind.NO_FAILURE_LINE
    assert why(gone) == (
        "no failure line; last line: (APIServer pid=4200) INFO: Application startup complete."
    )


def test_torchs_oom_is_out_of_memory_and_a_shells_killed_is_a_signal() -> None:
    oom = report(dead(), TORCH_OOM, "vllm").assessment.cause
    assert oom is not None and gist(oom) == "out of memory"
    assert "torch.OutOfMemoryError: CUDA out of memory" in why(oom)
    killed = report(dead(), SHELL_KILLED).assessment.cause
    assert killed is not None and killed.kind is CauseKind.SIGNAL
    assert why(killed) == "signal (Killed)"


def test_only_this_runs_lines_count() -> None:
    """A run that began after the failure (its args line opens a run) is not the one that
    failed: its lines alone say why it is gone."""
    args = b"[2026-01-12 09:21:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B')\n"
    cause = report(dead(), SGLANG_OOM + args + SERVED_THEN_GONE).assessment.cause
    assert cause is not None and cause.kind is CauseKind.NO_FAILURE_LINE


def test_a_live_run_has_no_cause_and_a_starting_one_only_with_a_failure_line() -> None:
    assert report(probed(writes=INODE, ready=True), SGLANG_OOM).assessment.cause is None
    starting = probed(writes=INODE, ready=False)
    assert report(starting, SERVED_THEN_GONE).assessment.cause is None
    failed = report(starting, VLLM_ERROR, "vllm").assessment.cause
    assert failed is not None and gist(failed) == "ValueError"
    # the exception's line from its name on, said once
    assert why(failed) == "ValueError: max_model_len (131072) is larger than the model's"


def test_a_dead_service_with_no_log_lines_has_no_cause() -> None:
    assert report(dead(), b"").assessment.cause is None


def test_a_stale_run_says_its_log_was_replaced() -> None:
    stale = report(probed(writes=OLD_INODE, ready=True), b"").assessment
    assert stale.verdict is Verdict.STALE
    assert stale.cause == Cause(CauseKind.LOG_REPLACED, writes=OLD_INODE, deleted=True)
    assert why(stale.cause) == f"log replaced: it writes deleted inode {OLD_INODE}"


def test_a_containers_exit_status_and_oomkilled_are_said() -> None:
    stopped = ContainerState("vllm", found=True, exit_code=137, oom_killed=True)
    a = dataclasses.replace(dead(), container=stopped)
    cause = cause_of(a, None)
    assert cause is not None and cause.kind is CauseKind.OOM
    assert why(cause) == "out of memory: exit 137 (SIGKILL), OOMKilled"
    killed = cause_of(
        dataclasses.replace(dead(), container=ContainerState("v", found=True, exit_code=143)), None
    )
    assert killed is not None and why(killed) == "killed by SIGTERM: exit 143 (SIGTERM)"
    failed = cause_of(
        dataclasses.replace(dead(), container=ContainerState("v", found=True, exit_code=1)), None
    )
    assert failed is not None and why(failed) == "exit 1"
    removed = ContainerState("v", absent=True, last_exit=LastExit("abc", 2, None))
    gone = cause_of(dataclasses.replace(dead(), container=removed), None)
    assert gone is not None and why(gone) == "exit 2"


def test_a_running_containers_exit_code_is_not_its_runs() -> None:
    """A container the runtime started again holds ExitCode 0: not this run's exit."""
    again = ContainerState("v", found=True, running=True, exit_code=0)
    assert cause_of(dataclasses.replace(dead(), container=again), None) is None


# --------------------------------------------------------------------------- the views


def test_every_view_says_the_cause_first() -> None:
    r = report(dead(), SGLANG_OOM)
    said = why(r.assessment.cause)  # type: ignore[arg-type]
    first = banner_lines(r.assessment, NOW)[0]
    assert first.startswith(f"✖ DEAD  {said} · ")
    line = render([r]).splitlines()[0]
    assert line.startswith(f"kpro5/qwen  ✖ DEAD       {said}; no SGLang process")
    row = fleet_row(SERVICE, HostState().answered([r], NOW), NOW, interval=2.0)
    cells = dict(zip((c.key for c in COLUMNS), row.cells, strict=True))
    assert cells["note"].text == said
    assert row.detail.splitlines()[0] == f"{SERVICE.label} · ✖ DEAD — {said}"


def test_the_banner_cuts_the_cause_to_leave_the_facts_room() -> None:
    a = report(dead(), SGLANG_OOM).assessment
    first = banner_lines(a, NOW, width=80)[0]
    assert len(first) <= 80
    assert first.endswith("checked now") and "out of memory: RuntimeError: Not enough" in first


def test_status_json_carries_the_cause() -> None:
    [entry] = status_json([report(dead(), SGLANG_OOM)])["services"]  # type: ignore[index]
    assert entry["cause"]["kind"] == "oom"
    assert entry["cause"]["line"].startswith("RuntimeError: Not enough memory.")
    assert entry["cause"]["offset"] == SGLANG_OOM.index(b"RuntimeError: Not")


def test_a_cause_the_facts_leave_too_little_room_takes_the_first_row() -> None:
    stale = report(probed(writes=OLD_INODE, ready=True), b"").assessment
    first = banner_lines(stale, NOW, width=60)[0]
    said = why(stale.cause)  # type: ignore[arg-type]
    assert first.startswith(f"◌ STALE  {said} · pid ")
    assert len(first.split(" · ")[0]) <= 60


def test_the_death_line_hint_quotes_the_first_death_line_the_cause_read() -> None:
    """One reader of failure lines: the hint's evidence and the cause come from it."""
    r = report(dead(), SGLANG_OOM)
    [hint] = [h for h in r.hints if h.rule.value == "death-line"]
    assert "Scheduler hit an exception: Traceback" in hint.evidence[0]
    assert r.assessment.cause is not None and r.assessment.cause.kind is CauseKind.OOM


def _failure_kind_unfiltered(text: str, deaths: tuple[str, ...]) -> tuple[CauseKind, str] | None:
    """failure_kind's rules with every pattern tried on every line (no quick tests)."""
    from tui.core import cause

    exception = cause._EXCEPTION.match(text)
    name = exception.group("name") if exception else ""
    if cause._OOM.search(text):
        return CauseKind.OOM, name
    if name:
        return (CauseKind.SIGNAL if name == "KeyboardInterrupt" else CauseKind.ERROR), name
    if cause._SIGNAL.search(text):
        return CauseKind.SIGNAL, ""
    if any(needle in text for needle in deaths):
        return CauseKind.ERROR, ""
    return None


_FRAGMENTS = (
    "[2026-12-01 12:00:00] ", "(EngineCore_DP0 pid=42) ", "RuntimeError", "ValueError: x",
    "KeyboardInterrupt", "torch.OutOfMemoryError", "CUDA OUT OF MEMORY", "Not Enough Memory",
    "oom-kill", "OOM_KILL", "Killed", "  KILLED ", "SIGTERM", "sigQuit", "Signal 9",
    "received signal", "Decode batch", "gen throughput", "memory", "sig", ": ", " ", "\n",
    "Segmentation fault", "Error", "Exception",
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=6))
def test_failure_kinds_quick_tests_change_no_answer(parts: list[str]) -> None:
    """The quick tests in front of the patterns only skip lines no pattern matches."""
    text = "".join(parts)
    deaths = ("Segmentation fault",)
    assert failure_kind(text, deaths) == _failure_kind_unfiltered(text, deaths)
