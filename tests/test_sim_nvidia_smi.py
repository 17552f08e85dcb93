"""The nvidia-smi stand-in: the real CSV forms, and readings that follow running sims."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path

import psutil
import pytest
from sim_helpers import Sim, nvidia_smi, sim_env, wait_until

pytestmark = pytest.mark.integration

GPU_QUERY = (
    "--query-gpu=index,name,power.draw,power.limit,utilization.gpu,memory.used,"
    "memory.total,temperature.gpu"
)
APPS_QUERY = "--query-compute-apps=pid,used_memory"
NOHEADER = "--format=csv,noheader,nounits"
#: nvidia-smi CSV: fields joined by ", ", numbers bare with nounits, [N/A] where unsupported
GPU_ROW = re.compile(
    r"^(\d+), ([^,]+), (\d+\.\d{2}|\[N/A\]), (\d+\.\d{2}|\[N/A\]), (\d+|\[N/A\]), "
    r"(\d+|\[N/A\]), (\d+|\[N/A\]), (\d+|\[N/A\])$"
)
APP_ROW = re.compile(r"^(\d+), (\d+|\[N/A\])$")
SGLANG_SPEC = (
    "--model-path",
    "Qwen/Qwen3-8B",
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "3",
    "--speculative-num-draft-tokens",
    "4",
)


def gpu_rows(env: dict[str, str]) -> dict[int, tuple[str, ...]]:
    done = nvidia_smi(env, GPU_QUERY, NOHEADER)
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        match = GPU_ROW.match(line)
        assert match, line
        rows[int(match.group(1))] = match.groups()
    return rows


def app_rows(env: dict[str, str]) -> dict[int, int]:
    done = nvidia_smi(env, APPS_QUERY, NOHEADER)
    assert done.returncode == 0, done.stderr
    apps = {}
    for line in done.stdout.splitlines():
        match = APP_ROW.match(line)
        assert match, line
        apps[int(match.group(1))] = int(match.group(2))
    return apps


def test_csv_forms_on_an_idle_host(tmp_path: Path) -> None:
    env = sim_env(tmp_path / "state", BABYSIT_SIM_GPUS="2xh100;1xgb10")
    rows = gpu_rows(env)
    assert sorted(rows) == [0, 1, 2]
    assert rows[0][1:2] == ("NVIDIA H100 80GB HBM3",)
    assert rows[0][3:7] == ("700.00", "0", "0", "81559")
    assert (
        rows[2][1] == "NVIDIA GB10" and rows[2][3] == "[N/A]" and rows[2][5:7] == ("[N/A]", "[N/A]")
    )
    assert 50.0 < float(rows[0][2]) < 90.0  # an idle H100 draws ~70 W
    with_units = nvidia_smi(env, GPU_QUERY, "--format=csv", "-i", "0").stdout.splitlines()
    assert with_units[0] == (
        "index, name, power.draw [W], power.limit [W], utilization.gpu [%], "
        "memory.used [MiB], memory.total [MiB], temperature.gpu"
    )
    assert re.match(
        r"^0, NVIDIA H100 80GB HBM3, \d+\.\d{2} W, 700\.00 W, 0 %, 0 MiB, 81559 MiB, \d+$",
        with_units[1],
    )
    assert nvidia_smi(env, APPS_QUERY, NOHEADER).stdout == ""
    assert nvidia_smi(env, APPS_QUERY, "--format=csv").stdout == "pid, used_gpu_memory [MiB]\n"
    listing = nvidia_smi(env, "-L").stdout.splitlines()
    assert len(listing) == 3
    assert all(
        re.match(
            r"^GPU \d: NVIDIA \S.* \(UUID: GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
            r"[0-9a-f]{4}-[0-9a-f]{12}\)$",
            line,
        )
        for line in listing
    )
    assert (
        nvidia_smi(env, "-L", shim=False).stdout.splitlines() == listing
    )  # `babysit sim nvidia-smi`
    fan = nvidia_smi(env, "--query-gpu=index,fan.speed", NOHEADER).stdout.splitlines()
    assert fan[0] == "0, [N/A]"  # data-centre cards have no fan reading
    bad = nvidia_smi(env, "--query-gpu=index,bogus", NOHEADER)
    assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout
    assert "No running processes found" in nvidia_smi(env).stdout


def test_readings_follow_running_sims(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = sim_env(state, BABYSIT_SIM_GPUS="8xh100")
    spec = Sim(
        tmp_path,
        "sglang",
        "--load-seconds",
        "0.3",
        "--tp",
        "2",
        server=SGLANG_SPEC,
        env=sim_env(state, BABYSIT_SIM_GPUS="8xh100", CUDA_VISIBLE_DEVICES="2,3"),
        name="spec",
    )
    off = Sim(
        tmp_path,
        "sglang",
        "--load-seconds",
        "0.3",
        "--scenario",
        "spec-off",
        server=SGLANG_SPEC,
        env=sim_env(state, BABYSIT_SIM_GPUS="8xh100", CUDA_VISIBLE_DEVICES="5"),
        name="off",
    )
    try:
        spec.wait_ready()
        off.wait_ready()
        child = psutil.Process(spec.pid).children()[0].pid
        apps = wait_until(lambda: app_rows(env) if len(app_rows(env)) == 3 else None, 5, "3 apps")
        assert set(apps) == {spec.pid, child, off.pid}  # type: ignore[arg-type]
        rows = gpu_rows(env)
        assert int(rows[2][5]) == apps[spec.pid] > 60000  # type: ignore[index]
        assert int(rows[3][5]) == apps[child] > 60000  # type: ignore[index]
        assert int(rows[5][5]) == apps[off.pid]  # type: ignore[index]
        assert all(rows[i][5] == "0" for i in (0, 1, 4, 6, 7))
        assert rows[2][4] == "0" and float(rows[2][2]) < 200.0  # loaded but idle

        def drive(sim: Sim) -> None:
            sim.post(
                "/generate", {"text": "go", "sampling_params": {"max_new_tokens": 5000}}, timeout=30
            )

        workers = [threading.Thread(target=drive, args=(sim,), daemon=True) for sim in (spec, off)]
        for worker in workers:
            worker.start()

        def busy() -> dict[int, tuple[str, ...]] | None:
            rows = gpu_rows(env)
            return rows if all(int(rows[i][4]) >= 90 for i in (2, 3, 5)) else None

        rows = wait_until(busy, 5, "GPUs busy")  # type: ignore[assignment]
        assert float(rows[5][2]) < float(rows[2][2]) <= 700.0  # without drafts it draws less
        assert float(rows[2][2]) > 300.0
        spec.signal(signal.SIGKILL)  # not reaped yet: a zombie holds no GPU memory
        wait_until(
            lambda: spec.pid not in app_rows(env) and child not in app_rows(env),
            3,
            "memory of the killed tree to be freed",
        )
        rows = gpu_rows(env)
        assert rows[2][5] == "0" and rows[3][5] == "0" and int(rows[5][5]) > 0
    finally:
        spec.stop()
        off.stop()
    assert app_rows(env) == {}
