"""Startup phases end to end: real sims printing each engine's startup (``slow-load``), read
by ``babysit status`` as they go, and the run history that gives the next run an ETA.

No test asserts a wall-clock time. The phases are checked by order; the ETA by what it
rests on (the last run's durations as the host's run history keeps them); the "past
twice its last duration" note by a run made four times slower than the last.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import Sim
from support.wait import wait_until

from tui.agent.protocol import STARTUPS_FILE
from tui.cli import main
from tui.core.answers import read
from tui.core.phases import LAUNCHING, READY, StartupRecord
from tui.engines import spec

pytestmark = pytest.mark.integration

#: ``--load-seconds`` of a slow-load sim (its startup takes four times as long).
LOAD = 1.5
#: The slower run's: each phase five times the last run's, past twice its duration and
#: past the margin (tui/core/phases.py OVERDUE_MARGIN).
SLOW_LOAD = 5 * LOAD
SHARDS = 4
#: Seconds between two looks of ``babysit status``.
LOOK = 0.2
SERVER = {
    "sglang": ("--model-path", "/models/Qwen3-8B"),
    "vllm": ("serve", "/models/Qwen3-8B"),
    # stamped (time since the start), so that its run's bytes are known by their stamps
    "llamacpp": (
        "-m",
        "/models/Qwen3-8B-Q4_K_M.gguf",
        "-c",
        "8192",
        "--log-prefix",
        "--log-timestamps",
    ),
    "tgi": ("--model-id", "Qwen/Qwen3-8B"),
}


@pytest.fixture
def sims() -> Iterator[list[Sim]]:
    started: list[Sim] = []
    try:
        yield started
    finally:
        for sim in started:
            sim.stop()


def slow_sim(tmp: Path, engine: str, load: float, port: int | None = None) -> Sim:
    return Sim(
        tmp,
        engine,
        "--load-seconds",
        f"{load:g}",
        "--scenario",
        "slow-load",
        "--shards",
        str(SHARDS),
        "--seed",
        "1",
        server=SERVER[engine],
        port=port,
        name=f"{engine}-{time.monotonic_ns()}",
    )


def hosts_yaml(tmp: Path, engine: str, sim: Sim) -> Path:
    fields = {"engine": engine, "log": str(sim.log_path), "port": sim.port}
    path = tmp / "hosts.yaml"
    path.write_text(
        f"hosts:\n  gpu:\n    local: true\n    services:\n      svc: {json.dumps(fields)}\n"
    )
    return path


def status(config: Path, capsys: pytest.CaptureFixture[str], *, text: bool = False):
    """The service's entry of ``babysit status --json`` (or the text form)."""
    capsys.readouterr()
    main(["status", "--config", str(config)] + ([] if text else ["--json"]))
    out = capsys.readouterr().out
    return out if text else json.loads(out)["services"][0]


def looks_until_live(
    config: Path, capsys: pytest.CaptureFixture[str], sim: Sim, timeout: float = 60.0
) -> list[dict[str, object]]:
    """Every answer of ``babysit status --json`` until the service is LIVE."""
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = status(config, capsys)
        seen.append(entry)
        if entry["verdict"] == "live":
            return seen
        assert sim.proc.poll() is None, sim.text()[-2000:]
        time.sleep(LOOK)
    raise AssertionError(f"not LIVE within {timeout:g} s: {[e['verdict'] for e in seen]}")


def history(host_state: Path) -> list[StartupRecord]:
    data = json.loads((host_state / "svc" / STARTUPS_FILE).read_text())
    return [StartupRecord.from_json(read(r, "startups")) for r in data["runs"]]


def ready_record(config: Path, capsys: pytest.CaptureFixture[str]) -> StartupRecord:
    """The newest record of the run history once it holds its ready time: a probe writes
    it when it reads the ready line (a server may answer /health a moment before it
    prints it, and the service is LIVE by /health meanwhile)."""

    def recorded() -> StartupRecord | None:
        status(config, capsys)
        record = history(host_state())[-1]
        return record if record.ready_at is not None else None

    return wait_until(recorded, 20, "the ready time in the run history", step=LOOK)


def host_state() -> Path:
    return Path(os.environ["BABYSIT_HOST_STATE"])


@pytest.mark.parametrize("engine", ["sglang", "vllm", "llamacpp", "tgi"])
def test_a_slow_load_goes_through_its_engines_phases_in_order_with_its_shard_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim], engine: str
) -> None:
    sim = slow_sim(tmp_path, engine, LOAD)
    sims.append(sim)
    config = hosts_yaml(tmp_path, engine, sim)
    seen = looks_until_live(config, capsys, sim)
    order = list(dict.fromkeys(p.name for p in spec(engine).phases))
    # while it started, each answer named where it was, in the engine's order
    named = [e["ready"]["phase"] for e in seen if e["verdict"] == "starting"]
    went = list(dict.fromkeys(n for n in named if n is not None))
    assert went, [e["summary"] for e in seen]
    assert all(n == LAUNCHING or n in order for n in went), went
    ranks = [-1 if n == LAUNCHING else order.index(n) for n in went]
    assert ranks == sorted(ranks), went
    # the weights were seen shard by shard, out of the checkpoint's files, where the engine
    # counts them (llama.cpp prints dots; TGI counts its downloads, too quick to be seen)
    loading = next(p for p in spec(engine).phases if p.name == "loading weights")
    counts = [
        (e["ready"]["progress"]["done"], e["ready"]["progress"]["total"])
        for e in seen
        if e["ready"]["phase"] == "loading weights" and e["ready"]["progress"]
    ]
    if loading.progress is not None:
        assert counts and all(total == SHARDS for _, total in counts), counts
        assert [d for d, _ in counts] == sorted(d for d, _ in counts), counts
    # once live: ready, with every phase it went through, in order and in time
    ready = seen[-1]["ready"]
    assert ready["phase"] == READY
    names = [p["name"] for p in ready["phases"]]
    assert names[0] == LAUNCHING and "loading weights" in names, (names, seen[-1]["summary"])
    ranks = [order.index(n) for n in names[1:]]
    assert ranks == sorted(ranks), names
    assert set(went) <= set(names), (went, names)
    times = [p["since"] for p in ready["phases"]]
    assert times == sorted(times), ready["phases"]

    # the host's run history keeps this run's phases and its ready time
    record = ready_record(config, capsys)
    assert record.pid == seen[-1]["process"]["pid"]
    assert [n for n, _ in record.phases] == names[1:]


def test_the_next_run_has_an_eta_from_the_last_and_a_slower_one_is_said_to_be_past_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim]
) -> None:
    engine = "vllm"
    first = slow_sim(tmp_path, engine, LOAD)
    sims.append(first)
    config = hosts_yaml(tmp_path, engine, first)
    looks_until_live(config, capsys, first)
    done = ready_record(config, capsys)
    first.stop()
    last = done.durations()
    assert last["loading weights"] > 0, last

    # the second run, on the same log and port: an ETA from the first run's phases
    second = slow_sim(tmp_path, engine, LOAD, port=first.port)
    sims.append(second)
    config = hosts_yaml(tmp_path, engine, second)
    seen = looks_until_live(config, capsys, second)
    ready_record(config, capsys)
    starting = [e for e in seen if e["verdict"] == "starting" and e["ready"]["phase"]]
    assert starting, [e["summary"] for e in seen]
    for entry in starting:
        ready = entry["ready"]
        assert ready["last_run_s"] == pytest.approx(last, abs=1e-6), ready
        assert ready["eta"] is not None, ready
        assert ready["overdue"] is None, ready
    second.stop()
    kept = history(host_state())
    assert [r.pid for r in kept] == [done.pid, second.pid]

    # four times slower: its weights load past twice the last run's time, and it is said
    yardstick = kept[-1].durations()
    third = slow_sim(tmp_path, engine, SLOW_LOAD, port=first.port)
    sims.append(third)
    config = hosts_yaml(tmp_path, engine, third)

    def overdue() -> dict[str, object] | None:
        entry = status(config, capsys)
        assert entry["verdict"] != "live", "ready before its weights ran past twice"
        said = entry["ready"]["overdue"]
        return entry if said is not None else None

    entry = wait_until(overdue, 60, "the overdue note", step=LOOK)
    phase = entry["ready"]["phase"]
    assert entry["ready"]["overdue"]["last_s"] == yardstick[phase], (entry["ready"], yardstick)
    text = status(config, capsys, text=True)
    assert "more than twice" in text, text
