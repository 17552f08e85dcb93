"""Hints on real simulated servers: quiet on a healthy one, speaking up when spec decoding is off.

Everything goes through the same pure pieces the app uses: the log through
LogScanner into a SeriesStore, the server's startup args through
parse_reported, /proc/PID/cmdline through launch_diff, and the nvidia-smi
stand-in's CSV through read_gpus/read_apps/attribute.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sim_helpers import Sim, nvidia_smi, sim_env, wait_until

from tui.core.gpu import APPS_QUERY, GPU_QUERY, Attribution, attribute, read_apps, read_gpus
from tui.core.hints import HintRule, hints
from tui.core.launch.argv import argv_from_cmdline
from tui.core.launch.diff import launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.metrics.boundaries import LogScanner
from tui.core.metrics.model import MetricSample
from tui.core.metrics.series import SeriesStore

pytestmark = pytest.mark.integration

SERVER = (
    "--model-path",
    "Qwen/Qwen3-8B",
    "--speculative-algorithm",
    "EAGLE",
    "--decode-log-interval",
    "5",
)
INTENDED = ("python3", "-m", "sglang.launch_server", *SERVER)


class Observed:
    """What babysit would have seen of one sim while it served requests."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.gpu_csv = self.apps_csv = ""
        self.cmdline = b""
        self.at = 0.0
        self.log = ""


def serve_and_watch(sim: Sim, observed: Observed) -> None:
    payload = {"text": "hi", "sampling_params": {"max_new_tokens": 400}}
    load = [threading.Thread(target=sim.post, args=("/generate", payload)) for _ in range(16)]
    for thread in load:
        thread.start()
    sim.wait_for(r"Decode batch, #running-req: 16", timeout=10)
    env = sim_env(sim.state)

    def busy() -> bool:
        """Polled as babysit would, until the GPU shows the load."""
        observed.at = time.time()
        observed.gpu_csv = nvidia_smi(env, *GPU_QUERY[1:], shim=False).stdout
        return (read_gpus(0, observed.gpu_csv).gpus[0].utilization or 0) > 0.5

    wait_until(busy, 20, "the GPU busy with the load", step=0.1)
    observed.apps_csv = nvidia_smi(env, *APPS_QUERY[1:], shim=False).stdout
    observed.cmdline = Path(f"/proc/{sim.pid}/cmdline").read_bytes()
    for thread in load:
        thread.join()


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Observed]]:
    tmp = tmp_path_factory.mktemp("hints")
    sims = {
        scenario: Sim(
            tmp,
            "sglang",
            "--load-seconds",
            "0.3",
            "--seed",
            "1",
            "--scenario",
            scenario,
            server=SERVER,
            name=scenario,
            state=tmp / f"state-{scenario}",
        )
        for scenario in ("healthy", "spec-off")
    }
    try:
        observed = {name: Observed(sim) for name, sim in sims.items()}
        for sim in sims.values():
            sim.wait_ready()
        threads = [
            threading.Thread(target=serve_and_watch, args=(sim, observed[name]))
            for name, sim in sims.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for name, sim in sims.items():
            observed[name].log = sim.text()
        yield observed
    finally:
        for sim in sims.values():
            sim.stop()


def hints_for(seen: Observed) -> list:
    store = SeriesStore()
    scanner = LogScanner(reference=datetime.now())
    offset = 0
    reported = None
    utc_offset = time.localtime().tm_gmtoff
    for line in seen.log.split("\n"):
        found = scanner.feed(line, offset)
        if isinstance(found, MetricSample):
            store.add_sample("sim/qwen", found, utc_offset=utc_offset)
        elif found is not None:
            store.begin_run("sim/qwen", found.run)
        reported = reported or parse_reported(line, offset)
        offset += len(line.encode()) + 1
    snapshot = store.snapshot("sim/qwen", now=seen.at, stale_after=30)
    launch = launch_diff(INTENDED, argv_from_cmdline(seen.cmdline), reported)
    gpus = attribute(
        read_gpus(0, seen.gpu_csv), read_apps(0, seen.apps_csv), {seen.sim.pid}, service_gpus=(0,)
    )
    assert gpus.attribution is Attribution.TIED
    return hints(snapshot, launch=launch, gpus=gpus)


def test_a_healthy_sim_gets_no_hints(watched: dict[str, Observed]) -> None:
    assert hints_for(watched["healthy"]) == []


def test_spec_off_sim_gets_the_spec_and_power_hints(watched: dict[str, Observed]) -> None:
    found = hints_for(watched["spec-off"])
    rules = [h.rule for h in found]
    assert HintRule.SPEC_NO_ACCEPT in rules
    assert HintRule.LOW_GPU_POWER in rules
    spec = found[rules.index(HintRule.SPEC_NO_ACCEPT)]
    assert any(
        "missing from the running server: --speculative-algorithm" in e for e in spec.evidence
    )
    assert any("reports speculative decoding: none" in e for e in spec.evidence)
