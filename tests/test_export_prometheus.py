"""``babysit export`` scraped by a real Prometheus, over a fleet of sims behind real sshds.

One fleet, one exporter and one Prometheus for the module. Host ``gpu-a.example``
(the run's sshd) has a live sim, a second live sim the tests kill (``victim``), a log
whose run is gone (``gone``: DEAD), a sim that writes a log someone deleted and made
again (``stale``: STALE) and a ``spec-off`` sim whose ``launch:`` intends
speculative decoding it runs without. Host ``gpu-b.example`` is reached through an
sshd of its own, which a test stops.

Everything is read back through Prometheus's HTTP API, and time is counted in
scrapes (``Prometheus.wait_scrapes``), never in seconds. The exporter asks each host
every second (``--every 1``), no more seldom than Prometheus scrapes it
(:data:`support.prometheus.INTERVAL`, 1 s), so each scrape can carry a newer answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.exporter import (
    REPO,
    Exporter,
    export_argv,
    export_env,
    labels,
    samples,
    start_export,
)
from support.prometheus import (
    NOT_INSTALLED,
    Prometheus,
    PrometheusUnavailable,
    find_prometheus,
    find_promtool,
    start_prometheus,
)
from support.servers import Server
from support.sshd import Sshd, start_sshd
from support.wait import wait_until

from tui.export import names

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

A = "gpu-a.example"
B = "gpu-b.example"
READY = "The server is fired up"
SPEC = ("--speculative-algorithm", "EAGLE")
#: Every verdict's label value (names.VERDICT), written out rather than taken from
#: tui.core.verdicts: they are what alert rules and dashboards match.
VERDICTS = ("live", "starting", "wedged", "stale", "dead", "no-log", "ambiguous", "unknown")
#: What each service is before any test changes it.
EXPECTED = {
    (A, "live"): "live",
    (A, "victim"): "live",
    (A, "gone"): "dead",
    (A, "stale"): "stale",
    (A, "spec"): "live",
    (B, "qwen"): "live",
}


@dataclass
class Fleet:
    """The module's sims, its second sshd and the hosts.yaml that names them all."""

    config: Path
    state: Path
    sims: dict[str, Server]
    far: Sshd


def indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def service(name: str, log: Path, port: int | None = None, **more: object) -> str:
    """One service's lines under ``services:`` (indented for a host entry)."""
    entry: dict[str, object] = {"engine": "sglang", "log": str(log)}
    if port is not None:
        entry["port"] = port
    entry.update(more)
    return f"    {name}: {json.dumps(entry)}\n"


def spec_launch(server: Server) -> dict[str, object]:
    """A ``launch:`` whose command is the spec sim's own, speculative flags and all."""
    command = [str(word) for word in server.proc.args]  # type: ignore[union-attr]
    assert SPEC[0] in command
    return {"cwd": str(REPO), "env": {"PYTHONPATH": str(REPO)}, "command": command}


@pytest.fixture(scope="module")
def fleet(sshd: Sshd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("export-fleet")
    state = root / "state"
    sims: dict[str, Server] = {}
    far = start_sshd(root / "far-sshd")
    try:
        for name in ("live", "victim", "stale"):
            sims[name] = Server(root / f"{name}.log", load=0.2, state=state / "sim-state")
        sims["spec"] = Server(
            root / "spec.log", load=0.2, scenario="spec-off", extra=SPEC, state=state / "sim-state"
        )
        sims["far"] = Server(root / "far.log", load=0.2, state=state / "sim-state")
        for server in sims.values():
            server.wait_for(READY)
        (root / "gone.log").write_text("an old run's last words\n")
        stale = root / "stale.log"
        stale.unlink()
        stale.write_text("")  # the file at the path now; the sim writes the deleted one

        a = sshd.host_yaml(A).rstrip("\n") + "\n  services:\n"
        a += service("live", sims["live"].log, sims["live"].port)
        a += service("victim", sims["victim"].log, sims["victim"].port)
        a += service("gone", root / "gone.log")
        a += service("stale", stale, sims["stale"].port)
        a += service("spec", sims["spec"].log, sims["spec"].port, launch=spec_launch(sims["spec"]))
        b = far.host_yaml(B).rstrip("\n") + "\n  services:\n"
        b += service("qwen", sims["far"].log, sims["far"].port)
        config = root / "hosts.yaml"
        config.write_text("hosts:\n" + indent(a) + indent(b))
        yield Fleet(config=config, state=state, sims=sims, far=far)
    finally:
        for server in sims.values():
            server.kill()
        far.stop()


@pytest.fixture(scope="module")
def exporter(fleet: Fleet) -> Iterator[Exporter]:
    running = start_export(fleet.config, fleet.state, ["--listen", "127.0.0.1:0", "--every", "1"])
    try:
        running.wait_serving()
        yield running
    finally:
        running.kill()


@pytest.fixture(scope="module")
def prometheus(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Prometheus]:
    """Prometheus scraping the module's exporter (skipped, before the fleet is made, where
    Prometheus is not installed)."""
    if find_prometheus() is None:
        pytest.skip(NOT_INSTALLED)
    exporter: Exporter = request.getfixturevalue("exporter")
    assert exporter.url is not None
    target = exporter.url.removeprefix("http://").removesuffix("/metrics")
    try:
        server = start_prometheus(tmp_path_factory.mktemp("prometheus"), target)
    except PrometheusUnavailable as error:
        pytest.skip(str(error))
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def promtool() -> str:
    found = find_promtool()
    if found is None:
        pytest.skip("promtool is not installed (it ships in Debian's prometheus package)")
    return found


def check_metrics(promtool: str, text: str) -> subprocess.CompletedProcess[str]:
    """``promtool check metrics`` of the exposition ``text`` (read on its stdin)."""
    return subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def current(prometheus: Prometheus) -> dict[tuple[str, str], str]:
    """Each service's verdict as Prometheus has it now (the one at 1)."""
    return {
        (tags["host"], tags["service"]): tags["verdict"]
        for tags, _ in prometheus.values(f"{names.VERDICT} == 1")
    }


def verdict(prometheus: Prometheus, host: str, name: str, word: str) -> float | None:
    return prometheus.value(f'{names.VERDICT}{{host="{host}",service="{name}",verdict="{word}"}}')


def observed(prometheus: Prometheus, host: str, name: str) -> float | None:
    return prometheus.value(f'{names.OBSERVED}{{host="{host}",service="{name}"}}')


def test_prometheus_has_each_services_verdict_and_the_missing_spec_flag(
    fleet: Fleet, prometheus: Prometheus
) -> None:
    wait_until(
        lambda: current(prometheus) == EXPECTED,
        60,
        lambda: f"the verdicts {EXPECTED} (Prometheus has {current(prometheus)})",
        step=0.2,
    )
    # One series per verdict word for each service, exactly one of them at 1.
    for (host, name), _ in EXPECTED.items():
        series = prometheus.values(f'{names.VERDICT}{{host="{host}",service="{name}"}}')
        assert sorted(tags["verdict"] for tags, _ in series) == sorted(VERDICTS)
        assert sum(value for _, value in series) == 1
    assert prometheus.value(f'{names.HOST_UP}{{host="{A}"}}') == 1
    assert prometheus.value(f'{names.HOST_UP}{{host="{B}"}}') == 1

    flag = f'{names.FLAG_MISSING}{{host="{A}",service="spec",flag="{SPEC[0]}"}}'
    assert prometheus.value(flag) == 1
    assert prometheus.values(f'{names.FLAG_MISSING}{{service!="spec"}} == 1') == []

    (info,) = [tags for tags, _ in prometheus.values(f'{names.RUN_INFO}{{service="live"}}')]
    assert info["host"] == A
    assert info["engine"] == "sglang"
    assert info["pid"] == str(fleet.sims["live"].pid)
    assert prometheus.value(f'{names.READY}{{host="{A}",service="live"}}') == 1
    assert prometheus.values(f'{names.RUN_INFO}{{service="gone"}}') == []


def test_a_killed_run_reads_dead_within_two_scrapes_of_babysits_next_answer(
    fleet: Fleet, exporter: Exporter, prometheus: Prometheus
) -> None:
    victim = fleet.sims["victim"]
    wait_until(
        lambda: verdict(prometheus, A, "victim", "live") == 1, 60, "victim live in Prometheus"
    )
    victim.kill()
    killed = time.time()  # the host is this machine: its clock is babysit's host clock

    # babysit's own answers about victim (on the exporter itself) with facts read after
    # the kill, each with its dead series; an answer's time is taken at its end, so the
    # first of them may have read the process table just before the kill.
    key = labels(host=A, service="victim")
    dead = labels(host=A, service="victim", verdict="dead")
    answers: list[tuple[float, float | None]] = []

    def said_dead() -> bool:
        text = exporter.scrape()
        at = samples(text, names.OBSERVED).get(key, 0.0)
        if at > killed and (not answers or answers[-1][0] != at):
            answers.append((at, samples(text, names.VERDICT).get(dead)))
        return bool(answers) and answers[-1][1] == 1

    wait_until(said_dead, 30, lambda: f"babysit to say victim is dead ({answers})", step=0.1)
    assert len(answers) <= 2, answers
    # Scrapes are 1 s apart and the exporter asks every second: the first scrape that
    # starts after that answer carries it, and the second is slack for one in flight.
    prometheus.wait_scrapes(2)
    assert verdict(prometheus, A, "victim", "dead") == 1
    assert verdict(prometheus, A, "victim", "live") == 0
    assert prometheus.values(f'{names.RUN_INFO}{{service="victim"}}') == []


def test_a_host_that_cannot_be_asked_reads_unknown_and_keeps_its_last_answers_time(
    fleet: Fleet, prometheus: Prometheus
) -> None:
    wait_until(lambda: verdict(prometheus, B, "qwen", "live") == 1, 60, "qwen on B live")
    last_live = observed(prometheus, B, "qwen")
    assert last_live is not None
    fleet.far.stop()  # its sshd and every session of it gone

    wait_until(lambda: prometheus.value(f'{names.HOST_UP}{{host="{B}"}}') == 0, 60, f"{B} down")
    wait_until(lambda: verdict(prometheus, B, "qwen", "unknown") == 1, 30, "qwen unknown")
    assert verdict(prometheus, B, "qwen", "live") == 0  # never its last LIVE
    assert prometheus.values(f'{names.RUN_INFO}{{host="{B}"}}') == []
    assert prometheus.values(f'{names.READY}{{host="{B}"}}') == []

    kept = observed(prometheus, B, "qwen")
    assert kept is not None
    assert kept >= last_live
    # A scrape later, and once A (asked all along) has a newer answer, B's is the same.
    a_before = observed(prometheus, A, "live")
    assert a_before is not None
    since = prometheus.scrapes()
    wait_until(
        lambda: (observed(prometheus, A, "live") or 0.0) > a_before, 30, "a newer answer from A"
    )
    prometheus.wait_scrapes(1, since=since)
    assert observed(prometheus, B, "qwen") == kept
    assert prometheus.value(f'{names.HOST_UP}{{host="{A}"}}') == 1
    assert verdict(prometheus, B, "qwen", "unknown") == 1


def test_promtool_accepts_the_exposition_served_over_http(
    exporter: Exporter, promtool: str
) -> None:
    text = exporter.scrape()  # Accept: text/plain, the format promtool reads
    assert text.endswith("\n")
    for name in (names.HOST_UP, names.VERDICT, names.OBSERVED, "process_cpu_seconds_total"):
        assert f"\n{name}" in text or text.startswith(name)
    result = check_metrics(promtool, text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""  # no lint problem either


def test_once_prints_one_exposition_promtool_accepts_and_exits_as_status_does(
    fleet: Fleet, promtool: str
) -> None:
    env = export_env(fleet.state)
    status = subprocess.run(
        [sys.executable, "-m", "tui", "status", "--config", str(fleet.config)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    once = subprocess.run(
        export_argv(fleet.config, "--once"),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in once.stderr, once.stderr
    assert once.returncode == status.returncode, (once.returncode, status.stdout, once.stderr)
    assert once.returncode in (2, 3)  # DEAD and STALE services (and UNKNOWN once B is down)
    result = check_metrics(promtool, once.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""
    up = samples(once.stdout, names.HOST_UP)
    assert set(up) == {labels(host=A), labels(host=B)}
    verdicts = samples(once.stdout, names.VERDICT)
    services = {(dict(k)["host"], dict(k)["service"]) for k in verdicts}
    assert services == set(EXPECTED)
