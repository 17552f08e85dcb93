"""`babysit parse FILE|-`: metric lines as JSON, a summary per run and metric, run boundaries."""

from __future__ import annotations

import io
import json
import os
import random
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sim_helpers import ROOT, Sim

from tui.cli import main
from tui.commands.parse import RESERVOIR, Stat, read_lines


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished SGLang sim log (startup, requests, shutdown)."""
    tmp = tmp_path_factory.mktemp("parse")
    sim = Sim(
        tmp,
        "sglang",
        "--load-seconds",
        "0.3",
        "--seed",
        "2",
        server=(
            "--model-path",
            "Qwen/Qwen3-8B",
            "--speculative-algorithm",
            "EAGLE3",
            "--decode-log-interval",
            "5",
        ),
    )
    try:
        sim.wait_ready()
        payload = {"text": "hi", "sampling_params": {"max_new_tokens": 150}}
        threads = [threading.Thread(target=sim.post, args=("/generate", payload)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sim.wait_for(r"accept rate", timeout=10)
    finally:
        sim.stop()
    yield sim.log_path


def records(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines()]


@pytest.mark.integration
def test_parse_json_on_a_real_sim_log(sim_log: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "parse", str(sim_log), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = records(result.stdout)
    assert out[0]["type"] == "file" and out[0]["schema"] == 1
    assert [r["event"] for r in out if r["type"] == "run"] == ["started", "ready"]
    metrics = [r for r in out if r["type"] == "metric"]
    assert metrics
    raw = sim_log.read_bytes()
    for record in metrics:
        assert {"ts", "kind", "fields", "offset"} <= set(record)
        line = raw[record["offset"] :].split(b"\n", 1)[0].decode()
        assert ("Decode batch" if record["kind"] == "sglang-decode" else "Prefill batch") in line
        datetime.fromisoformat(record["ts"])
    decode = [r for r in metrics if r["kind"] == "sglang-decode"]
    assert decode and all("accept len" in r["fields"] for r in decode)
    (summary,) = [r for r in out if r["type"] == "summary"]
    by_metric = {m["metric"]: m for m in summary["metrics"] if m["label"] == ""}
    gen = by_metric["gen_throughput"]
    assert gen["count"] == len(decode) and gen["unit"] == "tok/s"
    assert gen["min"] <= gen["median"] <= gen["max"]
    assert gen["first_ts"] <= gen["last_ts"] and gen["median_exact"]
    assert out[-1] == {
        "type": "end",
        "lines": raw.count(b"\n"),
        "metric_lines": len(metrics),
        "runs": 1,
        "engine": "sglang",
    }


@pytest.mark.unit
def test_two_runs_in_one_file_are_marked_and_summarised_apart(
    sim_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = tmp_path / "twice.log"
    twice.write_bytes(sim_log.read_bytes() + b"Killed\n" + sim_log.read_bytes())
    assert main(["parse", str(twice), "--json"]) == 0
    out = records(capsys.readouterr().out)
    starts = [r for r in out if r["type"] == "run" and r["event"] == "started"]
    assert [s["run"] for s in starts] == [1, 2]
    assert starts[1]["offset"] == len(sim_log.read_bytes()) + len(b"Killed\n")
    assert [r["run"] for r in out if r["type"] == "summary"] == [1, 2]
    runs = {r["run"] for r in out if r["type"] == "metric"}
    assert runs == {1, 2}

    assert main(["parse", str(twice)]) == 0
    text = capsys.readouterr().out
    assert text.count("\nrun ") + text.startswith("run ") == 2
    assert "started" in text and "ready" in text and "gen throughput" in text
    assert "accept rate" in text
    assert text.rstrip().endswith("2 runs started")


@pytest.mark.unit
def test_stdin_and_engine_choice(
    sim_log: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    data = sim_log.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["parse", "-", "--json", "--engine", "sglang"]) == 0
    out = records(capsys.readouterr().out)
    assert out[-1]["metric_lines"] > 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["parse", "-", "--json", "--engine", "vllm"]) == 1  # no vLLM metric lines
    assert records(capsys.readouterr().out)[-1]["metric_lines"] == 0


VLLM_STATS = (
    "(APIServer pid=7) INFO {stamp} [loggers.py:335] Engine 000: Avg prompt throughput: 0.0 "
    "tokens/s, Avg generation throughput: {gen} tokens/s, Running: 4 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
)


@pytest.mark.unit
def test_vllm_years_come_from_the_mtime_across_new_year(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        VLLM_STATS.format(stamp="12-31 23:59:50", gen=100.0)
        + VLLM_STATS.format(stamp="01-01 00:00:00", gen=200.0)
    )
    mtime = datetime(2027, 1, 1, 0, 0, 30).timestamp()
    os.utime(log, (mtime, mtime))
    assert main(["parse", str(log), "--json"]) == 0
    out = records(capsys.readouterr().out)
    stamps = [r["ts"] for r in out if r["type"] == "metric"]
    assert stamps == ["2026-12-31T23:59:50", "2027-01-01T00:00:00"]
    (summary,) = [r for r in out if r["type"] == "summary"]
    gen = next(m for m in summary["metrics"] if m["metric"] == "gen_throughput")
    assert (gen["first_ts"], gen["last_ts"], gen["median"]) == (stamps[0], stamps[1], 150.0)
    assert summary["run"] == 0  # no startup line in this file

    assert main(["parse", str(log), "--json", "--year", "2030"]) == 0
    stamps = [r["ts"] for r in records(capsys.readouterr().out) if r["type"] == "metric"]
    assert stamps == ["2030-12-31T23:59:50", "2030-01-01T00:00:00"]  # all in that year


@pytest.mark.unit
def test_a_file_without_metric_lines_exits_1(tmp_path: Path, capsys) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("hello\nworld\n")
    assert main(["parse", str(log)]) == 1
    assert "0 metric lines" in capsys.readouterr().out


@pytest.mark.unit
def test_a_missing_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    assert main(["parse", str(tmp_path / "nope.log")]) == 2
    assert capsys.readouterr().err == f"babysit: {tmp_path / 'nope.log'} does not exist\n"
    assert main(["parse", str(tmp_path / "nope.log"), "--json"]) == 2
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["ok"] is False and envelope["error"]["kind"] == "usage"


def not_regular(kind: str, tmp_path: Path) -> tuple[str, str]:
    """A path of ``kind`` that is no regular file, and what ``parse`` says of it."""
    only = "not a regular file; babysit reads only regular files"
    path = tmp_path / "serve.log"
    if kind == "fifo":
        os.mkfifo(path)
        return str(path), f"{path} is a FIFO (named pipe), {only}"
    if kind == "dev-zero":
        return "/dev/zero", f"/dev/zero is a character device, {only}"
    if kind == "directory":
        path.mkdir()
        return str(path), f"{path} is a directory, {only}"
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
        return str(path), f"{path} is a socket, {only}"
    if kind == "link-to-fifo":
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        path.symlink_to(fifo)
        return str(path), f"{path} (a symbolic link to {fifo}) is a FIFO (named pipe), {only}"
    if kind == "folder-is-a-file":
        path.write_text("a file\n")
        inner = path / "x.log"
        return str(inner), f"{inner} cannot exist: {path} is a regular file, not a directory"
    raise ValueError(kind)


@pytest.mark.integration
@pytest.mark.parametrize(
    "kind", ["fifo", "dev-zero", "directory", "socket", "link-to-fifo", "folder-is-a-file"]
)
def test_a_path_that_is_not_a_regular_file_is_one_line_and_never_read(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO would block the read, /dev/zero would never end: neither is read at all."""
    path, said = not_regular(kind, tmp_path)
    for json_out in (False, True):
        result = subprocess.run(
            [sys.executable, "-m", "tui", "parse", path, *(["--json"] if json_out else [])],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            cwd=ROOT,
        )
        assert (result.returncode, result.stderr) == (2, f"babysit: {said}\n")
        if json_out:
            assert json.loads(result.stdout) == {
                "schema": 1,
                "ok": False,
                "error": {"kind": "usage", "message": said},
            }
        else:
            assert result.stdout == ""


@pytest.mark.unit
def test_long_lines_are_cut_and_offsets_stay_exact() -> None:
    long = b"x" * 200_000
    data = b"first\n" + long + b"\n[2026-01-01 00:00:00] tail\n"
    lines = list(read_lines(io.BytesIO(data), limit=65536))
    assert lines[0] == (0, "first")
    assert lines[1][0] == 6 and len(lines[1][1]) == 65536
    assert lines[2] == (6 + len(long) + 1, "[2026-01-01 00:00:00] tail")
    assert len(lines) == 3


@pytest.mark.unit
def test_median_is_exact_when_small_and_close_when_large() -> None:
    rng = random.Random(7)
    small = Stat()
    for value in (5.0, 1.0, 3.0, 2.0):
        small.add(value, datetime(2026, 1, 1), rng)
    assert small.median == 2.5 and small.exact
    big = Stat()
    for i in range(20 * RESERVOIR):
        big.add(float(i % 1000), datetime(2026, 1, 1), rng)
    assert not big.exact and len(big.reservoir) == RESERVOIR
    assert abs(big.median - 500) < 50
    assert (big.min, big.max, big.count) == (0.0, 999.0, 20 * RESERVOIR)
