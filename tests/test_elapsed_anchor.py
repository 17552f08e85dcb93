"""Where a llama-server run begins in a log stamped by time since its process started: the
run found where the stamps start over is this process's only when its stamps fit this
process's start, and the log is read backwards from its end, a bounded number of bytes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port
from support.wait import wait_until

from tui.agent.logtime import Dater
from tui.agent.readiness import READY_SCAN, elapsed_anchor, lines_back, lines_in
from tui.cli import main
from tui.engines import SPECS

START = time.mktime((2026, 12, 1, 12, 0, 0, 0, 0, -1))
LLAMA_STAMPS = [[s.pattern, s.kind] for s in SPECS["llamacpp"].stamps]
#: A whole llama-server run: its build line, its ready line 4 s in, a request 9 s in.
RUN = (
    b"0.00.012.000 I build: 8800 (2f72460)\n"
    b"0.04.100.000 I srv          main: listening on http://127.0.0.1:8080\n"
    b"0.09.300.000 I slot print_timing: id  0 | task 3 |        eval time =  10.0 ms\n"
)
#: How far back the older runs' lines were written in the real-process test.
OLDER = 600
#: How long the wrapper process sleeps after its one line (it is stopped sooner).
WRAPPER_SLEEP = 120


def anchor_of(tmp_path: Path, data: bytes, *, written: float) -> tuple[int | None, str]:
    """Where ``elapsed_anchor`` puts the run of a process started at START in a log of
    ``data`` last written at ``written``."""
    log = tmp_path / "serve.log"
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        return elapsed_anchor(fd, len(data), Dater(LLAMA_STAMPS, written, START))
    finally:
        os.close(fd)


@pytest.mark.unit
def test_a_run_appended_after_older_runs_begins_where_the_stamps_start_over(
    tmp_path: Path,
) -> None:
    lead = b"a wrapper's line, unstamped\n"
    data = RUN + RUN + lead + RUN
    assert anchor_of(tmp_path, data, written=START + 10) == (
        2 * len(RUN) + len(lead),
        "the stamps start over",
    )


@pytest.mark.unit
def test_an_older_runs_lines_after_a_restart_are_not_this_process_s(tmp_path: Path) -> None:
    # this process wrote one unstamped line just after its start; the stamped runs are older
    data = RUN + RUN + b"starting llama-server\n"
    at, why = anchor_of(tmp_path, data, written=START + 0.01)
    assert at is None and why.startswith("cannot tell"), why
    # a restart whose first stamp is late: the run lost its first lines
    older = RUN + b"1.00.000.000 I srv  update_slots: all slots are idle\n"
    late = b"0.30.000.000 I srv  update_slots: all slots are idle\n"
    at, why = anchor_of(tmp_path, older + late, written=START + 60)
    assert at is None and why.startswith("cannot tell"), why


@pytest.mark.unit
def test_a_restart_is_found_near_the_end_of_a_log_longer_than_the_scan(tmp_path: Path) -> None:
    filler = b"0.05.000.000 I srv  update_slots: all slots are idle\n"
    older = RUN + filler * (READY_SCAN // len(filler) + 1)
    assert len(older) > READY_SCAN
    assert anchor_of(tmp_path, older + RUN, written=START + 10) == (
        len(older),
        "the stamps start over",
    )
    # a run whose start lies further back than the scan reads cannot be placed
    at, why = anchor_of(tmp_path, older, written=START + 600)
    assert at is None and why.startswith("cannot tell"), why


@pytest.mark.unit
def test_the_backward_walk_gives_every_line_across_chunks(tmp_path: Path) -> None:
    # lines longer than the cut, lines across the 1 MiB reads, no final newline
    lines = [b"x" * n for n in (0, 5, 70_000, 1024 * 1024 + 3, 17, 0, 2_000_000, 9)]
    data = b"\n".join(lines)
    log = tmp_path / "serve.log"
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        forward = list(lines_in(fd, 0, len(data)))
        assert list(lines_back(fd, len(data), len(data))) == forward[::-1]
        # a walk stopped by its limit says so after the lines that lie wholly within it
        stopped = list(lines_back(fd, len(data), 100_000))
        assert stopped[-1] == (None, b"")
        assert stopped[:-1] == [f for f in forward[::-1] if f[0] >= len(data) - 100_000]
    finally:
        os.close(fd)


@pytest.fixture
def wrapper(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A log holding two llama-server runs last written OLDER s ago, and a process that
    appends one unstamped line to it (a wrapper's echo) and sleeps, the log open."""
    log = tmp_path / "serve.log"
    log.write_bytes(RUN + RUN)
    os.utime(log, (time.time() - OLDER, time.time() - OLDER))
    with log.open("ab") as out:
        process = subprocess.Popen(
            ["sh", "-c", f"echo starting llama-server; exec sleep {WRAPPER_SLEEP}"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: log.read_bytes().endswith(b"starting llama-server\n"), 10, "the echo")
        yield log, process
    finally:
        process.kill()
        process.wait()


@pytest.mark.integration
def test_a_process_whose_first_line_is_unstamped_is_not_given_an_older_runs_ready_line(
    tmp_path: Path,
    wrapper: tuple[Path, subprocess.Popen[bytes]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    log, _ = wrapper
    fields = {"engine": "llamacpp", "log": str(log), "port": free_port()}
    config = tmp_path / "hosts.yaml"
    config.write_text(
        f"hosts:\n  gpu:\n    local: true\n    services:\n      svc: {json.dumps(fields)}\n"
    )
    capsys.readouterr()
    code = main(["status", "--json", "--config", str(config)])
    out = capsys.readouterr().out
    assert code != 0, out
    (service,) = json.loads(out)["services"]
    assert service["verdict"] != "live", service
    assert service["ready"]["source"].startswith("cannot tell"), service
