"""llama.cpp's llama-server and HF TGI end to end: real sims reach LIVE through the same probe
as SGLang and vLLM (locally, over ssh and through pct), with their metrics, hints and launch
diff in ``babysit status --json``; a failed start reads as a failure with the engine's own
reason line.

llama.cpp's metrics come from its timing and progress lines (placed by the run's start: its
``--log-timestamps`` count from the process's start) or from ``/metrics`` (``--metrics``,
``metrics: prometheus``); TGI's only from ``/metrics``. llama-server prints no args dump,
so its launch diff reads argv alone; TGI's ``Args {`` dump is the reported column.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import Sim, wait_until
from support.servers import REPO, free_port
from support.sshd import Sshd
from support.wait import until
from test_app_host_screen import screen_lines

from tui.app.app import BabysitApp, HostView
from tui.app.screens.host import HostScreen
from tui.cli import main
from tui.config import Host
from tui.core.metrics.model import Metric
from tui.core.metrics.prometheus import PrometheusReaders
from tui.core.report import ServiceFacts, ServiceReport
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote.probe import REPORT_TAIL, probe_services
from tui.remote.transport import Transport
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

PCT_VMID = 121
MODEL = "/models/Qwen3-8B-Q4_K_M.gguf"
DRAFT = "/models/Qwen3-0.6B-Q8_0.gguf"
#: A llama-server with a draft model, its /metrics page and elapsed stamps on its lines.
LLAMA = ("-m", MODEL, "-c", "8192", "-np", "2", "-ngl", "99", "--metrics")
LLAMA_STAMPS = ("--log-prefix", "--log-timestamps")
LLAMA_DRAFT = ("-md", DRAFT, "--draft-max", "8")
TGI = ("--model-id", "Qwen/Qwen3-8B", "--max-concurrent-requests", "64")
#: The line each prints once it serves.
READY = {"llamacpp": "main: listening on", "tgi": " Connected"}
#: The line a request's end prints (llama.cpp's total timing, after its eval timing; TGI's
#: router ``Success``).
DONE = {"llamacpp": "total time =", "tgi": " Success"}
#: llama.cpp's elapsed stamp: minutes, seconds, milliseconds, microseconds.
ELAPSED = re.compile(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")


def start(tmp: Path, engine: str, *flags: str, scenario: str = "healthy") -> Sim:
    """A sim of ``engine`` started by hand (not by babysit) writing a fresh log."""
    return Sim(
        tmp,
        engine,
        "--load-seconds",
        "0.3",
        "--scenario",
        scenario,
        "--seed",
        "1",
        server=flags,
    )


class Requests:
    """Requests sent one after another on each of ``streams`` threads until :meth:`stop`,
    once the sim answers ``/health`` with 200."""

    def __init__(self, sim: Sim, engine: str, tokens: int = 60, streams: int = 3) -> None:
        if engine == "llamacpp":
            self._call = ("/completion", {"prompt": "hello", "n_predict": tokens})
        else:
            self._call = (
                "/generate",
                {"inputs": "hello", "parameters": {"max_new_tokens": tokens}},
            )
        self._sim = sim
        sim.wait_ready()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._stream) for _ in range(streams)]
        for thread in self._threads:
            thread.start()

    def _stream(self) -> None:
        while not self._stop.is_set():
            status, _ = self._sim.post(*self._call)
            assert status == 200

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


@pytest.fixture
def sims() -> Iterator[list[Sim]]:
    started: list[Sim] = []
    try:
        yield started
    finally:
        for sim in started:
            sim.stop()


def service_fields(engine: str, sim: Sim, *, prometheus: bool) -> dict[str, object]:
    fields: dict[str, object] = {"engine": engine, "log": str(sim.log_path), "port": sim.port}
    if prometheus:
        fields["metrics"] = "prometheus"
    return fields


def local_host(fields: dict[str, object]) -> Host:
    text = f"hosts:\n  gpu:\n    local: true\n    services:\n      svc: {json.dumps(fields)}\n"
    return parse_config(text).hosts["gpu"]


def config_file(tmp: Path, kind: str, sshd: Sshd | None, fields: dict[str, object]) -> Path:
    """hosts.yaml whose host ``gpu`` is this machine reached ``kind``'s way (``local``,
    ``ssh``, ``pct``: the last two through ``sshd``), with one service ``svc``."""
    if kind == "local":
        host = "gpu:\n  local: true\n"
    else:
        assert sshd is not None
        sshd.add_container(PCT_VMID)
        host = sshd.host_yaml("gpu") if kind == "ssh" else sshd.pct_host_yaml("gpu", PCT_VMID)
    body = host + f"  services:\n    svc: {json.dumps(fields)}\n"
    path = tmp / "hosts.yaml"
    path.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
    return path


def status_json(
    config: Path, capsys: pytest.CaptureFixture[str], *, live: bool = True
) -> dict[str, object]:
    """The service's entry in ``babysit status --json`` (which exits 0 when it is LIVE)."""
    capsys.readouterr()
    code = main(["status", "--json", "--config", str(config)])
    assert (code == 0) is live
    return json.loads(capsys.readouterr().out)["services"][0]


def served(sim: Sim, engine: str, requests: int = 2) -> None:
    """Until the sim's log holds its ready line and ``requests`` requests' end lines."""
    sim.wait_for(re.escape(READY[engine]))
    wait_until(lambda: sim.text().count(DONE[engine]) >= requests, 30, "requests served")


# ---------------------------------------------------------------- the probe, every transport


async def reports(transport: Transport, host: Host, facts: ServiceFacts) -> ServiceReport:
    service = host.services["svc"]
    ((assessment, details),) = await probe_services(
        transport, host, [service], tail_bytes=REPORT_TAIL
    )
    return facts.observe(assessment, details)


@pytest.mark.parametrize("engine", ["llamacpp", "tgi"])
async def test_a_server_started_by_hand_reaches_live_by_its_ready_line(
    transport: Transport, tmp_path: Path, sims: list[Sim], engine: str
) -> None:
    flags = (*LLAMA, *LLAMA_DRAFT, *LLAMA_STAMPS) if engine == "llamacpp" else TGI
    sim = start(tmp_path, engine, *flags)
    sims.append(sim)
    load = Requests(sim, engine)
    try:
        served(sim, engine)
        host = local_host(service_fields(engine, sim, prometheus=engine == "tgi"))
        facts = ServiceFacts.of(host.name, host.services["svc"], prometheus=PrometheusReaders())
        first = await reports(transport, host, facts)
        wait_until(lambda: sim.text().count(DONE[engine]) >= 8, 30, "more requests served")
        report = await reports(transport, host, facts)
    finally:
        load.stop()
    a = report.assessment
    assert first.verdict is Verdict.LIVE and a.verdict is Verdict.LIVE, a.summary
    assert a.run is not None and a.ready is not None
    # found in the log (never by asking /health): its ready line, dated by its stamp
    assert a.ready.seen is True and a.ready.at is not None, a.ready
    assert "HTTP" not in a.summary and "ready since" in a.summary
    assert a.ready.source == (
        "the stamps count from this process's start" if engine == "llamacpp" else "timestamps"
    )
    assert int(a.run.root.start_time) <= a.ready.at <= a.checked_at  # whole seconds
    metrics = report.metrics
    assert metrics is not None
    if engine == "llamacpp":
        text = sim.raw()
        for metric in (Metric.GEN_THROUGHPUT, Metric.PREFILL_THROUGHPUT, Metric.ACCEPT_LEN):
            latest = metrics.latest_of(metric)
            assert latest is not None and latest.value > 0 and latest.offset is not None, metric
            # placed by the run's start plus the line's elapsed stamp
            stamp = ELAPSED.match(text[latest.offset :].decode())
            assert stamp is not None
            minutes, seconds, millis, micros = (int(g) for g in stamp.groups())
            elapsed = minutes * 60 + seconds + millis / 1e3 + micros / 1e6
            assert latest.ts == pytest.approx(a.run.root.start_time + elapsed, abs=1e-3)
        rate = metrics.latest_of(Metric.ACCEPT_RATE)
        assert rate is not None and 0 < rate.value <= 1
    else:
        for metric in (Metric.RUNNING, Metric.QUEUED, Metric.GEN_THROUGHPUT):
            latest = metrics.latest_of(metric)
            assert latest is not None and latest.offset is None, metric  # from /metrics
        throughput = metrics.latest_of(Metric.GEN_THROUGHPUT)
        assert throughput is not None and throughput.value > 0
        assert report.launch is not None and report.launch.reported is not None
        assert report.launch.reported.values["max_concurrent_requests"] == 64


# ------------------------------------------------------------- status --json, every transport


@pytest.mark.sshd
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
@pytest.mark.parametrize("case", ["llamacpp/log", "llamacpp/prometheus", "tgi/prometheus"])
def test_status_json_gives_the_metrics_of_each_source(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sshd: Sshd,
    kind: str,
    case: str,
) -> None:
    """``case``: the engine and where its metrics come from (its log or its /metrics)."""
    engine, source = case.split("/")
    flags = (*LLAMA, *LLAMA_DRAFT, *LLAMA_STAMPS) if engine == "llamacpp" else TGI
    sim = start(tmp_path, engine, *flags)
    try:
        load = Requests(sim, engine)
        try:
            served(sim, engine)
            fields = service_fields(engine, sim, prometheus=source == "prometheus")
            entry = status_json(config_file(tmp_path, kind, sshd, fields), capsys)
        finally:
            load.stop()
    finally:
        sim.stop()
    assert entry["verdict"] == "live", entry["summary"]
    assert entry["ready"]["seen"] is True
    assert not entry["ready"]["source"].startswith("HTTP")
    metrics = entry["metrics"]
    if source == "log":
        for name in ("gen_throughput", "prefill_throughput", "accept_len", "accept_rate"):
            assert metrics[name]["value"] > 0 and metrics[name]["offset"] is not None, name
            assert metrics[name]["run"] == 1 and metrics[name]["stale"] is False, name
        assert metrics["accept_rate"]["unit"] == "fraction"
    else:
        # the page twice: gauges, and the rate of the token counters between the readings
        for name in ("running", "queued", "gen_throughput"):
            assert metrics[name]["offset"] is None, name
        assert metrics["gen_throughput"]["unit"] == "tok/s"
        assert metrics["running"]["value"] >= 0
    assert entry["hints"] == []


# ----------------------------------------------------------------------- launch diff and hints


def launch_of(engine: str, port: int, flags: tuple[str, ...]) -> dict[str, object]:
    command = [
        sys.executable,
        "-m",
        "tui",
        "sim",
        "--engine",
        engine,
        "--port",
        str(port),
        "--load-seconds",
        "0.3",
        "--seed",
        "1",
        "--",
        *flags,
    ]
    return {"cwd": str(REPO), "env": {"PYTHONPATH": str(REPO)}, "command": command}


def test_llama_server_launch_diff_reads_argv_alone_and_says_the_draft_is_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim]
) -> None:
    """hosts.yaml asks for a draft model and a bigger context; the server runs without."""
    sim = start(tmp_path, "llamacpp", *LLAMA, *LLAMA_STAMPS)
    sims.append(sim)
    intended = ("-m", MODEL, "--ctx-size", "16384", "-np", "2", "-ngl", "99", "--metrics")
    fields = service_fields("llamacpp", sim, prometheus=False)
    fields["launch"] = launch_of("llamacpp", sim.port, (*intended, *LLAMA_DRAFT, *LLAMA_STAMPS))
    load = Requests(sim, "llamacpp")
    try:
        served(sim, "llamacpp", requests=3)
        config = config_file(tmp_path, "local", None, fields)
        entry = status_json(config, capsys)
        assert main(["status", "--config", str(config)]) == 0
        text = capsys.readouterr().out
    finally:
        load.stop()
    launch = entry["launch"]
    assert launch["reported"] is None  # llama-server prints no args dump
    assert launch["missing"] == ["-md", "--draft-max"]
    assert launch["changed"] == [
        {"flag": "--ctx-size", "intended": "16384", "running": "8192", "source": "actual"}
    ]
    rows = {row["dest"]: row for row in launch["rows"]}
    assert rows["ctx_size"]["flag"] == "--ctx-size" and rows["ctx_size"]["actual"] == "8192"
    assert rows["n_gpu_layers"]["status"] == "same"
    assert "accept_len" not in entry["metrics"] and entry["metrics"]["gen_throughput"]["value"] > 0
    (hint,) = entry["hints"]
    assert hint["rule"] == "spec-no-accept-metrics"
    assert "missing from the running server: -md, --draft-max" in hint["evidence"]
    assert "hint: speculative decoding should be on" in text


def test_tgi_args_dump_is_the_reported_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim]
) -> None:
    """hosts.yaml asks for speculation and 128 concurrent requests; the launcher runs with
    64 and none, and prints so in its ``Args {`` dump."""
    sim = start(tmp_path, "tgi", *TGI)
    sims.append(sim)
    fields = service_fields("tgi", sim, prometheus=True)
    intended = ("--model-id", "Qwen/Qwen3-8B", "--max-concurrent-requests", "128")
    fields["launch"] = launch_of("tgi", sim.port, (*intended, "--speculate", "3"))
    sim.wait_for(re.escape(READY["tgi"]))
    entry = status_json(config_file(tmp_path, "local", None, fields), capsys)
    launch = entry["launch"]
    assert launch["reported"]["format"] == "tgi-args" and launch["reported"]["complete"] is True
    values = launch["reported"]["values"]
    assert values["model_id"] == "Qwen/Qwen3-8B" and values["speculate"] is None
    assert launch["missing"] == ["--speculate"]
    rows = {row["dest"]: row for row in launch["rows"]}
    concurrent = rows["max_concurrent_requests"]
    assert (concurrent["intended"], concurrent["actual"], concurrent["reported"]) == (
        "128",
        "64",
        "64",
    )
    assert concurrent["status"] == "changed"


# ------------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("engine", "flags", "reason"),
    [
        ("llamacpp", (*LLAMA, *LLAMA_STAMPS), "cudaMalloc failed: out of memory"),
        ("tgi", TGI, "CUDA out of memory"),
    ],
)
def test_a_failed_start_reads_as_a_failure_with_its_reason_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    engine: str,
    flags: tuple[str, ...],
    reason: str,
) -> None:
    log = tmp_path / "serve.log"
    port = free_port()
    launch = launch_of(engine, port, flags)
    launch["command"].insert(-len(flags) - 1, "--scenario")  # type: ignore[union-attr]
    launch["command"].insert(-len(flags) - 1, "oom")  # type: ignore[union-attr]
    fields = {"engine": engine, "log": str(log), "port": port, "launch": launch}
    config = config_file(tmp_path, "local", None, fields)
    capsys.readouterr()
    code = main(["relaunch", "gpu/svc", "--wait", "--timeout", "30", "--config", str(config)])
    out = capsys.readouterr()
    said = out.out + out.err
    assert code != 0
    failed = next(line for line in said.splitlines() if "failed: " in line)
    assert reason in failed, said
    entry = status_json(config, capsys, live=False)
    assert entry["verdict"] == "dead"
    title = {"llamacpp": "llama.cpp", "tgi": "TGI"}[engine]
    assert entry["summary"].startswith(f"no {title} process on gpu"), entry["summary"]
    if engine == "tgi":  # the launcher prints the dead shard's stderr: a death line
        (hint,) = entry["hints"]
        assert hint["rule"] == "death-line"
        assert "Shard complete standard error output" in hint["evidence"][0]


# ------------------------------------------------------------------------------ the screen


@pytest.mark.parametrize("engine", ["llamacpp", "tgi"])
async def test_the_host_screen_shows_the_metrics_hints_and_launch_diff(
    tmp_path: Path, sims: list[Sim], engine: str
) -> None:
    if engine == "llamacpp":
        sim = start(tmp_path, engine, *LLAMA, *LLAMA_STAMPS)
        intended = (*LLAMA, *LLAMA_DRAFT, *LLAMA_STAMPS)
    else:
        sim = start(tmp_path, engine, *TGI)
        intended = ("--model-id", "Qwen/Qwen3-8B", "--max-concurrent-requests", "128")
    sims.append(sim)
    fields = service_fields(engine, sim, prometheus=engine == "tgi")
    fields["launch"] = launch_of(engine, sim.port, intended)
    host = local_host(fields)
    load = Requests(sim, engine)
    app = BabysitApp(HostView(host, host.services["svc"]), sessions=Sessions(interval=0.2))
    try:
        async with app.run_test(size=(140, 44)) as pilot:
            if engine == "llamacpp":
                wanted = ("gen tok/s", "prefill tok/s", "-md", "missing", "--draft-max")
                wanted += ("hint: speculative decoding should be on",)
            else:
                wanted = ("running/queue", "--max-concurrent-requests", "128", "64")

            def on_screen() -> str:
                return "\n".join(screen_lines(app))

            await until(
                lambda: all(text in on_screen() for text in wanted),
                lambda: f"{wanted} on screen:\n{on_screen()}",
                timeout=30,
                pilot=pilot,
            )
            screen = app.screen_stack[-1]
            assert isinstance(screen, HostScreen)
            assert screen.assessment is not None
            assert screen.assessment.verdict is Verdict.LIVE, screen.assessment.summary
            assert "HTTP" not in screen.assessment.summary
    finally:
        load.stop()
