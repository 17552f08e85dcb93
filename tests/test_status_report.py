"""`babysit status --json` shows what the screen shows: metrics, launch diff, GPUs and hints."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.servers import REPO, free_port, wait_until
from support.sshd import Sshd

from tui.cli import main

PCT_VMID = 117

SPEC = [
    "--speculative-algorithm",
    "NEXTN",
    "--speculative-num-steps",
    "3",
    "--speculative-num-draft-tokens",
    "4",
]


def config_for(tmp_path: Path, port: int, scenario: str) -> Path:
    log = tmp_path / "serve.log"
    command = [
        sys.executable,
        "-m",
        "tui",
        "sim",
        "--engine",
        "sglang",
        "--scenario",
        scenario,
        "--port",
        str(port),
        "--load-seconds",
        "0.3",
        "--stats-interval",
        "1",
        "--seed",
        "3",
        "--",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--port",
        str(port),
        *SPEC,
    ]
    launch = {"cwd": str(REPO), "env": {"PYTHONPATH": str(REPO)}, "command": command}
    path = tmp_path / "hosts.yaml"
    path.write_text(
        "hosts:\n  gpu:\n    local: true\n    services:\n      qwen:\n"
        f"        engine: sglang\n        log: {json.dumps(str(log))}\n        port: {port}\n"
        f"        gpus: [0]\n        match: 'tui sim .*--port {port} '\n"
        f"        launch: {json.dumps(launch)}\n"
    )
    return path


def drive(port: int, requests: int = 16, tokens: int = 400) -> None:
    body = json.dumps({"text": "hello", "sampling_params": {"max_new_tokens": tokens}}).encode()

    def one(_: int) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/generate",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback http
            answer.read()

    with ThreadPoolExecutor(requests) as pool:
        list(pool.map(one, range(requests)))


@pytest.fixture
def nvidia_smi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The nvidia-smi stand-in on PATH, reading the sims' registry."""
    monkeypatch.setenv("PATH", f"{REPO / 'tui' / 'sim'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(tmp_path / "sim-state"))
    monkeypatch.setenv("BABYSIT_SIM_PYTHON", sys.executable)


@pytest.mark.integration
@pytest.mark.usefixtures("nvidia_smi")
def test_dropped_spec_flags_show_in_launch_metrics_gpus_and_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    config = config_for(tmp_path, port, "spec-off")
    entry = None
    try:
        assert (
            main(["relaunch", "gpu/qwen", "--wait", "--timeout", "30", "--config", str(config)])
            == 0
        )
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(drive, port)
            wait_until(
                lambda: (tmp_path / "serve.log").read_text().count("Decode batch") >= 2,
                20,
                "decode lines",
            )
            capsys.readouterr()
            assert main(["status", "--json", "--config", str(config)]) == 0
            entry = json.loads(capsys.readouterr().out)["services"][0]
            assert main(["status", "--config", str(config)]) == 0
            text = capsys.readouterr().out
            load.result()
        assert entry["launch"]["missing"] == [
            "--speculative-algorithm",
            "--speculative-num-steps",
            "--speculative-num-draft-tokens",
        ]
        metrics = entry["metrics"]
        assert metrics["gen_throughput"]["value"] > 0
        assert metrics["gen_throughput"]["stale"] is False
        assert metrics["gen_throughput"]["run"] == 1
        assert "accept_len" not in metrics
        assert entry["gpus"]["attribution"] == "tied"
        assert entry["gpus"]["pids"] == [entry["process"]["pid"]]
        rules = [h["rule"] for h in entry["hints"]]
        assert rules == ["spec-no-accept-metrics", "low-gpu-power"]
        assert all(h["evidence"] for h in entry["hints"])
        assert "hint: speculative decoding should be on" in text
    finally:
        if entry and entry["process"]:
            main(
                [
                    "kill",
                    "gpu/qwen",
                    "--pid",
                    str(entry["process"]["pid"]),
                    "--grace",
                    "2",
                    "--config",
                    str(config),
                ]
            )


@pytest.mark.integration
@pytest.mark.usefixtures("nvidia_smi")
def test_healthy_speculative_run_has_accept_metrics_and_no_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    config = config_for(tmp_path, port, "healthy")
    entry = None
    try:
        assert main(["relaunch", "gpu/qwen", "--wait", "--config", str(config)]) == 0
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(drive, port)
            wait_until(
                lambda: (tmp_path / "serve.log").read_text().count("accept len") >= 2,
                20,
                "decode lines with accept len",
            )
            capsys.readouterr()
            main(["status", "--json", "--config", str(config)])
            entry = json.loads(capsys.readouterr().out)["services"][0]
            load.result()
        assert entry["launch"]["missing"] == []
        assert 3.0 < entry["metrics"]["accept_len"]["value"] < 5.0
        # 0-1 fractions say so (the screen shows them as percents)
        for name in ("accept_rate", "token_usage"):
            metric = entry["metrics"][name]
            assert metric["unit"] == "fraction" and 0 <= metric["value"] <= 1, (name, metric)
        assert [h["rule"] for h in entry["hints"]] == []
    finally:
        if entry and entry["process"]:
            main(
                [
                    "kill",
                    "gpu/qwen",
                    "--pid",
                    str(entry["process"]["pid"]),
                    "--grace",
                    "2",
                    "--config",
                    str(config),
                ]
            )


@pytest.mark.integration
def test_metrics_from_the_prometheus_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service with `metrics: prometheus` reads /metrics on the host, not its log."""
    from support.servers import Server

    log = tmp_path / "serve.log"
    server = Server(log, engine="vllm", load=0.3)
    try:
        server.wait_for("Application startup complete.")
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n  gpu:\n    local: true\n    services:\n      qwen:\n"
            f"        engine: vllm\n        log: {json.dumps(str(log))}\n"
            f"        port: {server.port}\n        metrics: prometheus\n"
            f"        match: 'tui sim .*--port {server.port} '\n"
        )
        assert main(["status", "--json", "--config", str(config)]) == 0
        entry = json.loads(capsys.readouterr().out)["services"][0]
        metrics = entry["metrics"]
        assert metrics["running"]["value"] == 0
        assert metrics["running"]["offset"] is None  # from the page, not from a log line
        assert metrics["token_usage"]["stale"] is False
    finally:
        server.kill()


@pytest.mark.integration
@pytest.mark.sshd
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_status_gives_vllm_throughput_from_prometheus_counters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sshd: Sshd, kind: str
) -> None:
    """vLLM's /metrics has no throughput gauge, only counters: `status` reads the page
    twice and gives the rate between the readings."""
    from support.servers import Server, VllmLoad

    log = tmp_path / "serve.log"
    server = Server(log, engine="vllm", load=0.3)
    load = None
    try:
        server.wait_for("Application startup complete.")
        load = VllmLoad(server.port)
        wait_until(lambda: load.generated() > 0, 20, "generated tokens on /metrics")
        sshd.add_container(PCT_VMID)
        host = {
            "local": "gpu:\n  local: true\n",
            "ssh": sshd.host_yaml("gpu"),
            "pct": sshd.pct_host_yaml("gpu", PCT_VMID),
        }[kind]
        service = (
            "  services:\n    qwen:\n"
            f"      engine: vllm\n      log: {json.dumps(str(log))}\n"
            f"      port: {server.port}\n      metrics: prometheus\n"
            f"      match: 'tui sim .*--port {server.port} '\n"
        )
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n" + "".join(f"  {line}\n" for line in (host + service).splitlines())
        )
        assert main(["status", "--json", "--config", str(config)]) == 0
        metrics = json.loads(capsys.readouterr().out)["services"][0]["metrics"]
        assert metrics["gen_throughput"]["value"] > 0, metrics
        assert metrics["gen_throughput"]["unit"] == "tok/s"
        assert metrics["gen_throughput"]["offset"] is None  # from the page, not the log
    finally:
        if load is not None:
            load.stop()
        server.kill()


@pytest.mark.unit
def test_prometheus_needs_a_port() -> None:
    from tui.errors import ConfigError
    from tui.hostsfile import parse_config

    with pytest.raises(ConfigError, match=r"prometheus needs the service's port"):
        parse_config(
            "hosts:\n  h:\n    local: true\n    services:\n"
            "      s: {log: /l, metrics: prometheus}\n"
        )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("engine", "version", "line"),
    [
        (
            "sglang",
            "0.5.21",
            "crashed with exit code -9. Triggering SIGQUIT for cleanup...",
        ),
        (
            "vllm",
            "0.11.0",
            "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
        ),
        (
            "vllm",
            "0.33.0",
            "Worker proc Worker_TP0 died unexpectedly (exit code: -9), shutting down executor.",
        ),
    ],
)
def test_a_death_while_serving_is_said_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, version: str, line: str
) -> None:
    """A child killed (SIGKILL) after the server was ready: whether the process still
    answers or is gone, status says what the log's run printed."""
    from support.servers import Server

    log = tmp_path / "serve.log"
    server = Server(log, engine, load=0.3, scenario="killed-after:0.3", version=version)
    try:
        server.wait_for(line)
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n  gpu:\n    local: true\n    services:\n      qwen:\n"
            f"        engine: {engine}\n        log: {json.dumps(str(log))}\n"
            f"        port: {server.port}\n"
            f"        match: 'tui sim .*--port {server.port} '\n"
        )
        main(["status", "--json", "--config", str(config)])
        entry = json.loads(capsys.readouterr().out)["services"][0]
        deaths = [h for h in entry["hints"] if h["rule"] == "death-line"]
        assert len(deaths) == 1, entry["hints"]
        assert line in deaths[0]["evidence"][0]
        main(["status", "--config", str(config)])
        assert "hint: " in capsys.readouterr().out
    finally:
        server.kill()
