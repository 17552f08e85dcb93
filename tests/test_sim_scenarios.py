"""Scenarios and process behaviour of real sims: exit statuses, lines, signals, the process tree."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from sim_helpers import ROOT, Sim, alive_or_zombie, free_port, sim_env, wait_until

pytestmark = pytest.mark.integration

SGLANG = ("--model-path", "Qwen/Qwen3-8B")
SGLANG_SPEC = (
    *SGLANG,
    "--speculative-algorithm",
    "NEXTN",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
)
VLLM = ("serve", "Qwen/Qwen3-8B")
VLLM_SPEC = (
    *VLLM,
    "--speculative-config",
    '{"method": "deepseek_mtp", "num_speculative_tokens": 3}',
)


SGLANG_HEAD = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?(?: [A-Z_]+\d+)*\] ")
VLLM_TAG = re.compile(r"^\([A-Za-z_0-9 =]+ pid=\d+\) ")
VLLM_HEAD = re.compile(
    r"^(?:INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2} \[?[\w.]+:\d+\] "
)


def messages(sim: Sim) -> list[str]:
    """Log lines without SGLang's ``[time TPn]`` or vLLM's ``(Proc pid=N) LEVEL time [file:N]``."""
    return [
        VLLM_HEAD.sub("", VLLM_TAG.sub("", SGLANG_HEAD.sub("", line))).rstrip("\r")
        for line in sim.lines()
    ]


def children(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def all_gone(pids: list[int]) -> bool:
    return all(alive_or_zombie(pid) in (None, "Z", "X") for pid in pids)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_signal_shuts_down_with_the_real_lines(tmp_path: Path, engine: str, signum: int) -> None:
    sim = Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.3",
        "--tp",
        "2",
        server=SGLANG if engine == "sglang" else VLLM,
    )
    try:
        sim.wait_ready()
        record = sim.state / f"sim-{sim.pid}.json"
        wait_until(lambda: json.loads(record.read_text())["phase"] == "ready", 3, "registry")
        kids = [child.pid for child in children(sim.pid)]
        assert len(kids) == 1
        sim.signal(signum)
        assert sim.wait() == 0
        wait_until(lambda: all_gone(kids), 3, "children to exit")
        assert not record.exists()
    finally:
        sim.stop()
    tail = messages(sim)[-4:]
    if engine == "sglang":
        assert tail == [
            "INFO:     Shutting down",
            "INFO:     Waiting for application shutdown.",
            "INFO:     Application shutdown complete.",
            f"INFO:     Finished server process [{sim.pid}]",
        ]
    else:
        assert tail == [
            "Shutting down FastAPI HTTP server.",
            "INFO:     Shutting down",
            "INFO:     Waiting for application shutdown.",
            "INFO:     Application shutdown complete.",
        ]


def test_signal_while_loading_kills_by_that_signal(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "sglang", "--load-seconds", "5", "--tp", "2", server=SGLANG)
    try:
        sim.wait_for(r"Init torch distributed begin\.")
        kids = [child.pid for child in children(sim.pid)]
        sim.signal(signal.SIGTERM)
        assert sim.wait() == -signal.SIGTERM
        wait_until(lambda: all_gone(kids), 3, "children to exit")
    finally:
        sim.stop()
    assert "ready to roll" not in sim.text()


def test_oom_dies_like_the_real_engines(tmp_path: Path) -> None:
    sglang = Sim(
        tmp_path, "sglang", "--load-seconds", "0.4", "--scenario", "oom", "--tp", "2", server=SGLANG
    )
    vllm = Sim(tmp_path, "vllm", "--load-seconds", "0.4", "--scenario", "oom", server=VLLM)
    argv = [
        sys.executable,
        "-m",
        "tui",
        "sim",
        "--engine",
        "sglang",
        "--port",
        str(free_port()),
        "--load-seconds",
        "0.4",
        "--scenario",
        "oom",
        "--",
        *SGLANG,
    ]
    shell = subprocess.run(
        ["sh", "-c", '"$@" >"$SIM_LOG" 2>&1; echo "status=$?"', "sh", *argv],
        cwd=ROOT,
        env={**sim_env(tmp_path / "state2"), "SIM_LOG": str(tmp_path / "via-shell.log")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    try:
        wait_until(
            lambda: sglang.proc.poll() is not None and vllm.proc.poll() is not None, 15, "exit"
        )
    finally:
        sglang.stop()
        vllm.stop()
    assert sglang.proc.returncode == -signal.SIGKILL  # kill_process_tree SIGKILLs itself
    assert shell.stdout.strip() == "status=137"  # what a launching shell sees
    lines = messages(sglang)
    assert "Scheduler hit an exception: Traceback (most recent call last):" in lines
    assert any(
        line.startswith(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
        )
        for line in lines
    )
    assert lines[-1] == "Received sigquit from a child process. It usually means the child failed."
    assert "ready to roll" not in sglang.text()
    assert vllm.proc.returncode == 1
    lines = messages(vllm)
    assert "EngineCore failed to start." in lines
    assert any(
        line.startswith("ValueError: No available memory for the cache blocks.") for line in lines
    )
    assert lines[-1].startswith(
        "RuntimeError: Engine core initialization failed. See root cause above."
    )
    assert "Application startup complete." not in vllm.text()


def test_crash_after_seconds(tmp_path: Path) -> None:
    sglang = Sim(
        tmp_path,
        "sglang",
        "--load-seconds",
        "0.3",
        "--scenario",
        "crash-after:0.5",
        "--tp",
        "2",
        server=SGLANG,
    )
    vllm = Sim(
        tmp_path, "vllm", "--load-seconds", "0.3", "--scenario", "crash-after:4.6", server=VLLM
    )
    try:
        sglang.wait_ready()
        vllm.wait_ready()
        kids = [child.pid for child in children(sglang.pid)]
        assert sglang.wait() == -signal.SIGKILL
        wait_until(lambda: all_gone(kids), 3, "children to die")
        vllm.wait_for(r"EngineDeadError", timeout=10)
        assert vllm.get("/health")[0] == 503
        assert vllm.wait() == 0  # the API server's watchdog shuts uvicorn down gracefully
    finally:
        sglang.stop()
        vllm.stop()
    lines = messages(sglang)
    assert "Scheduler hit an exception: Traceback (most recent call last):" in lines
    assert "RuntimeError: CUDA error: an illegal memory access was encountered" in lines
    assert re.match(
        r"^SIGQUIT received\. signum=3, frame=<frame at 0x[0-9a-f]+, file '.*', line \d+, "
        r"code \w+>\. It usually means one child failed\.$",
        lines[-1],
    )
    lines = messages(vllm)
    assert "EngineCore encountered a fatal error." in lines
    assert (
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
        "See stack trace (above) for the root cause."
    ) in lines
    assert lines[-1] == f"INFO:     Finished server process [{vllm.pid}]"
    assert "\r\n" in vllm.text()  # NewLineFormatter re-prefixes traceback lines after \r\n


def test_a_worker_that_ignores_sigterm_does_from_its_first_instant(tmp_path: Path) -> None:
    """Its SIGTERM is ignored from its exec on (the kernel's mask), not only once its
    Python has started: a SIGTERM sent the moment the server is ready finds it ignoring."""
    sim = Sim(
        tmp_path,
        "sglang",
        *("--load-seconds", "5", "--scenario", "ignore-sigterm", "--tp", "2"),
        server=SGLANG,
    )
    try:
        wait_until(lambda: children(sim.pid), 10, "the worker")
        status = Path(f"/proc/{children(sim.pid)[0].pid}/status").read_text()
        ignored = next(
            int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigIgn:")
        )
        assert ignored & (1 << (signal.SIGTERM - 1)), status
    finally:
        sim.stop()


def test_ignore_sigterm_needs_sigkill(tmp_path: Path) -> None:
    sglang = Sim(
        tmp_path,
        "sglang",
        "--load-seconds",
        "0.3",
        "--scenario",
        "ignore-sigterm",
        "--tp",
        "2",
        server=SGLANG,
    )
    vllm = Sim(
        tmp_path, "vllm", "--load-seconds", "0.3", "--scenario", "ignore-sigterm", server=VLLM
    )
    # The same signals, sent after, to a sim and a worker that do not ignore them.
    control = Sim(tmp_path, "sglang", "--load-seconds", "0.3", "--tp", "2", server=SGLANG)
    try:
        for sim in (sglang, vllm, control):
            sim.wait_ready()
        for sim in (sglang, vllm):
            sim.signal(signal.SIGTERM)
            sim.signal(signal.SIGINT)
        kid = children(sglang.pid)[0]
        kid.send_signal(signal.SIGTERM)
        control_kid = children(control.pid)[0]
        control_kid.send_signal(signal.SIGTERM)
        control.signal(signal.SIGTERM)
        control.signal(signal.SIGINT)
        sglang.wait_for(
            r"SIGTERM received\. signum=15 frame=<frame at 0x[0-9a-f]+, .*>\. "
            r"Draining requests and shutting down\.\.\.$"
        )
        # Once the control is gone, ours have had the same signals as long: still here.
        assert control.wait() == 0
        wait_until(lambda: all_gone([control_kid.pid]), 5, "the control's worker to end")
        for sim in (sglang, vllm):
            assert sim.proc.poll() is None
            assert sim.get("/health")[0] == 200
        assert kid.is_running() and kid.status() != psutil.STATUS_ZOMBIE
        sglang.signal(signal.SIGKILL)
        vllm.signal(signal.SIGKILL)
        assert sglang.wait() == -signal.SIGKILL
        assert vllm.wait() == -signal.SIGKILL
        wait_until(lambda: all_gone([kid.pid]), 3, "child to die with its parent")
    finally:
        sglang.stop()
        vllm.stop()
        control.stop()
    assert "Shutting down" not in sglang.text() + vllm.text()


def test_slow_load_takes_longer(tmp_path: Path) -> None:
    # Long enough that a normal sim, started later, is ready first even on a loaded machine
    # (its interpreter's start is not counted in --load-seconds).
    sim = Sim(tmp_path, "vllm", "--load-seconds", "1.2", "--scenario", "slow-load", server=VLLM)
    normal = None
    try:
        sim.wait_for(r"Loading safetensors checkpoint shards")
        # A normal load, started later, is done first; slow-load takes four times as long.
        normal = Sim(tmp_path, "vllm", "--load-seconds", "1.2", server=VLLM)
        normal.wait_ready()
        assert "Application startup complete." not in sim.text()
        assert sim.get("/health")[0] == 503
        sim.wait_ready()
    finally:
        sim.stop()
        if normal is not None:
            normal.stop()


def test_tp4_tree_dies_whole_on_sigkill_and_argv_carries_the_flags(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "sglang", "--load-seconds", "0.3", "--tp", "4", server=SGLANG_SPEC)
    try:
        sim.wait_ready()
        cmdline = Path(f"/proc/{sim.pid}/cmdline").read_bytes().split(b"\0")
        at = cmdline.index(b"--speculative-algorithm")
        assert cmdline[at + 1] == b"NEXTN"
        kids = children(sim.pid)
        assert len(kids) == 3
        assert all("tui.sim.worker" in " ".join(kid.cmdline()) for kid in kids)
        # Each worker names itself once it runs: on a loaded machine, a moment after the
        # server printed its ready line.
        wait_until(
            lambda: (
                sorted(kid.name() for kid in kids)
                == [f"sglang::scheduler_TP{rank}" for rank in (1, 2, 3)]
            ),
            20,
            "the workers to take their names",
        )
        sim.signal(signal.SIGKILL)
        assert sim.wait() == -signal.SIGKILL
        wait_until(lambda: all_gone([kid.pid for kid in kids]), 3, "the whole tree to die")
    finally:
        sim.stop()
    assert "speculative_algorithm='EAGLE'" in sim.text()  # printed args show the resolved value


def test_spec_off_silently_drops_speculative_decoding(tmp_path: Path) -> None:
    on = Sim(tmp_path, "sglang", "--load-seconds", "0.3", server=SGLANG_SPEC, name="on")
    off = Sim(
        tmp_path,
        "sglang",
        "--load-seconds",
        "0.3",
        "--scenario",
        "spec-off",
        server=SGLANG_SPEC,
        name="off",
    )
    vllm = Sim(
        tmp_path,
        "vllm",
        "--load-seconds",
        "0.3",
        "--scenario",
        "spec-off",
        "--stats-interval",
        "0.3",
        server=VLLM_SPEC,
    )
    try:
        for sim in (on, off, vllm):
            sim.wait_ready()
        payload = {"text": "same prompt", "sampling_params": {"max_new_tokens": 200}}
        with ThreadPoolExecutor(max_workers=3) as pool:
            answers = [
                pool.submit(on.post, "/generate", payload),
                pool.submit(off.post, "/generate", payload),
                pool.submit(vllm.post, "/v1/completions", {"prompt": "x", "max_tokens": 100}),
            ]
            assert [a.result()[0] for a in answers] == [200, 200, 200]
            latency = [json.loads(a.result()[1])["meta_info"]["e2e_latency"] for a in answers[:2]]
        vllm.wait_for(r"Avg generation throughput: 0\.0 tokens/s", timeout=5)
        metrics = vllm.get("/metrics")[1].decode()
        assert b"NEXTN" in Path(f"/proc/{off.pid}/cmdline").read_bytes()  # the flag was given
    finally:
        for sim in (on, off, vllm):
            sim.stop()
    assert "speculative_algorithm=None" in off.text()
    assert not re.search(r"accept len", off.text())
    assert re.search(r"accept len", on.text())
    assert latency[1] > 1.5 * latency[0]  # the same request takes much longer without drafts
    assert "speculative_config" not in vllm.text().split("non-default args:")[1].split("\n")[0]
    assert "SpecDecoding" not in vllm.text()
    assert "vllm:spec_decode" not in metrics


def test_repeat_loops_with_perfect_acceptance(tmp_path: Path) -> None:
    sglang = Sim(
        tmp_path, "sglang", "--load-seconds", "0.3", "--scenario", "repeat", server=SGLANG_SPEC
    )
    vllm = Sim(
        tmp_path,
        "vllm",
        "--load-seconds",
        "0.3",
        "--scenario",
        "repeat",
        "--stats-interval",
        "0.3",
        server=VLLM_SPEC,
    )
    try:
        sglang.wait_ready()
        vllm.wait_ready()
        status, body = sglang.post(
            "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 240}}
        )
        assert status == 200
        text = json.loads(body)["text"]
        status, body = vllm.post("/v1/completions", {"prompt": "hi", "max_tokens": 120})
        assert status == 200
        vllm.wait_for(r"SpecDecoding metrics", timeout=5)
    finally:
        sglang.stop()
        vllm.stop()
    sentence = "I will repeat the answer."
    assert text.count(sentence) >= 20 and text.replace(sentence, "").strip() in (
        "",
        "I will repeat the",
    )
    decode = [line for line in sglang.lines() if "Decode batch" in line]
    assert decode and all("accept len: 4.00, accept rate: 1.00" in line for line in decode)
    assert "Per-position acceptance rate: 1.000, 1.000, 1.000" in vllm.text()
    assert "Mean acceptance length: 4.00" in vllm.text()


def test_seed_makes_output_repeatable(tmp_path: Path) -> None:
    runs = {
        (engine, name, seed): Sim(
            tmp_path,
            engine,
            "--load-seconds",
            "0.3",
            "--seed",
            seed,
            name=f"{engine}-{name}",
            server=SGLANG_SPEC if engine == "sglang" else VLLM_SPEC,
        )
        for engine in ("sglang", "vllm")
        for name, seed in (("a", "11"), ("b", "11"), ("c", "12"))
    }
    try:
        for sim in runs.values():
            sim.wait_ready()
            sim.signal(signal.SIGTERM)
        assert all(sim.wait() == 0 for sim in runs.values())
    finally:
        for sim in runs.values():
            sim.stop()

    def masked(sim: Sim) -> list[str]:
        text = sim.text().replace(str(sim.port), "PORT").replace(str(sim.pid), "PID")
        text = re.sub(
            r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "TIME", text
        )
        # the /health probes of wait_ready land at no fixed point: drop their lines
        return [
            line
            for line in text.split("\n")
            if "GET /health" not in line and "#new-token: 1, #cached-token: 0" not in line
        ]

    for engine in ("sglang", "vllm"):
        first = masked(runs[(engine, "a", "11")])
        assert first == masked(runs[(engine, "b", "11")])
        assert first != masked(runs[(engine, "c", "12")])


def test_taken_port_exits_1(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        sim = Sim(tmp_path, "sglang", "--load-seconds", "0.3", port=port, server=SGLANG)
        try:
            assert sim.wait() == 1
        finally:
            sim.stop()
    assert "address already in use" in sim.text()


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    env = sim_env(tmp_path)
    for bad in (
        ["--engine", "sglang", "--engine-version", "0.9.0"],
        ["--engine", "vllm", "--scenario", "explode"],
        ["--engine", "trtllm"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "tui", "sim", *bad],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2, (bad, done.stderr)
        assert "babysit sim" in done.stderr
