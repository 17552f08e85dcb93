"""Servers in containers end to end: a real dockerd, the real sshd and the pct stand-in
on it, and babysit's own processes (``status --json``, ``kill``), sessions and screens.

Each scenario's container is reached three ways in one hosts.yaml: ``here`` (``local:
true``), ``viassh`` (the docker host over the real sshd, whose sessions' ``docker`` is
this daemon's) and ``viapct`` (``pct exec`` on that sshd). One ``status`` run, or one
session per host, answers for all three, so one container serves every transport's
asserts; the kill and the host screen of a --rm container, whose container ends, take
one each. The scenarios: vLLM and SGLang sims LIVE with this run's metrics; ``docker
restart`` STARTING until the new run's ready line, never the old run's; a crash loop
under ``--restart always`` with its count; ``babysit kill`` as ``docker stop``; a
``--rm`` container warned about, and its last lines kept once docker removed it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.servers import REPO
from support.sshd import Sshd
from support.wait import until, wait_until
from test_app_host_screen import SIZE, log_view, screen_text

from tui.agent.container import docker_time
from tui.app.app import make_app
from tui.app.screens.host import HostScreen
from tui.app.widgets.metrics_pane import HintsLine
from tui.config import Host
from tui.core.containers import DOCKER_JSON
from tui.core.hints import HintRule
from tui.core.logcursor import EventKind, EventRow, LogLine
from tui.core.report import ServiceReport
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

#: Each test says its tier (the restarts' tests are slow): every one needs the sshd.
pytestmark = pytest.mark.sshd

VMID = 118
#: The host names of the three ways to the docker host.
HOSTS = ("here", "viassh", "viapct")
#: The line each engine's sim prints once it serves.
READY = {
    "vllm": "Application startup complete.",
    "sglang": "The server is fired up and ready to roll!",
}
#: vLLM's stats line period inside the container (seconds).
STATS_INTERVAL = "1"
#: Requests sent before a status run reads the metrics they leave in the log.
REQUESTS = 3

Hosts = Callable[[str], Path]


@pytest.fixture
def hosts(dockerd: Dockerd, sshd: Sshd, write_config) -> Hosts:
    """hosts.yaml of the three ways to the docker host, each with ``services`` (the
    block's YAML lines, under ``services:``)."""
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    sshd.add_container(VMID)

    def write(services: str) -> Path:
        block = "  services:\n" + "".join(f"    {line}\n" for line in services.splitlines())
        entries = (
            "here:\n  local: true\n",
            sshd.host_yaml("viassh"),
            sshd.pct_host_yaml("viapct", VMID),
        )
        return write_config("".join(entry + block for entry in entries))

    return write


def container_service(engine: str, name: str, port: int) -> str:
    return f"qwen: {{engine: {engine}, container: {name}, port: {port}}}"


def status_json(config: Path) -> dict[str, dict]:
    """``babysit status --json`` in a process of its own: each host's entry of ``qwen``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "status", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    entries = json.loads(done.stdout)["services"]
    return {entry["host"]: entry for entry in entries if entry["service"] == "qwen"}


def inspect(dockerd: Dockerd, name: str) -> dict:
    return json.loads(dockerd.docker("inspect", name).stdout)[0]


def at(iso: str) -> float:
    """The time a ``status --json`` field says, in seconds since the epoch."""
    return datetime.fromisoformat(iso).timestamp()


def records(path: str) -> list[tuple[int, dict]]:
    """(offset, record) of each whole line of a json-file."""
    out = []
    offset = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                out.append((offset, json.loads(line)))
            offset += len(line)
    return out


def record_at(path: str, offset: int) -> dict:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return json.loads(handle.readline())


def log_text(dockerd: Dockerd, name: str) -> str:
    """What the container has written so far (its json-file's ``log`` fields)."""
    path = dockerd.inspect(name, "{{.LogPath}}")
    return "".join(record["log"] for _, record in records(path))


def ready_records(path: str, engine: str) -> list[tuple[int, dict]]:
    return [(o, r) for o, r in records(path) if READY[engine] in r["log"]]


def post(port: int, engine: str) -> None:
    """One generation request, answered before this returns."""
    if engine == "vllm":
        path, body = "/v1/completions", {"prompt": "hello", "max_tokens": 80}
    else:
        path, body = "/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 80}}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
        answer.read()


# ------------------------------------------------------------------ live, with metrics

#: A line of each engine's sim that holds its generation throughput.
STATS = {"vllm": "Avg generation throughput", "sglang": "Decode batch"}


@pytest.mark.integration
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_sim_in_a_container_is_live_with_its_metrics(
    dockerd: Dockerd, hosts: Hosts, engine: str
) -> None:
    port = free_port()
    name = f"e2e-live-{engine}"
    argv = sim_command(engine, port)
    if engine == "sglang":
        argv += ["--decode-log-interval", "5"]
    dockerd.run_container(name, argv, env={"VLLM_LOG_STATS_INTERVAL": STATS_INTERVAL})
    wait_running(dockerd, name)
    wait_until(lambda: READY[engine] in log_text(dockerd, name), 30, f"{name} ready")
    with ThreadPoolExecutor(REQUESTS) as pool:
        list(pool.map(lambda _: post(port, engine), range(REQUESTS)))
    wait_until(lambda: STATS[engine] in log_text(dockerd, name), 30, "a stats line")
    entries = status_json(hosts(container_service(engine, name, port)))

    state = inspect(dockerd, name)
    path = state["LogPath"]
    assert set(entries) == set(HOSTS)
    for host, entry in entries.items():
        assert entry["verdict"] == "live", (host, entry["summary"])
        box = entry["container"]
        assert box["found"] is True and box["running"] is True, host
        assert box["id"] == state["Id"], host
        assert at(box["started_at"]) == pytest.approx(
            docker_time(state["State"]["StartedAt"]), abs=1
        )
        assert box["restart_count"] == 0, host
        assert entry["process"]["run"] == {
            "container_id": state["Id"],
            "started_at": box["started_at"],
            "restart_count": 0,
        }, host
        assert entry["process"]["pid"] == state["State"]["Pid"], host
        assert entry["log"]["format"] == DOCKER_JSON and entry["log"]["path"] == path, host
        ((_, ready),) = ready_records(path, engine)
        assert entry["ready"]["seen"] is True and entry["ready"]["anchor"] == 0, host
        assert at(entry["ready"]["at"]) == pytest.approx(docker_time(ready["time"]), abs=1)
        gen = entry["metrics"]["gen_throughput"]
        assert gen["run"] == 1 and gen["stale"] is False, (host, gen)
        # read from this run's own json-file record, past its anchor
        assert gen["offset"] >= entry["ready"]["anchor"], host
        assert STATS[engine] in record_at(path, gen["offset"])["log"], host
        assert entry["hints"] == [], host


# ------------------------------------------------------------------ docker restart

#: How long the restarted run loads: every status run asked meanwhile must find it
#: still loading.
RELOAD_SECONDS = 15.0
#: The old run's last words: a graceful stop (vLLM's ``docker restart``), a child's
#: failure (SGLang's crash, the container then started again by ``docker restart``).
LAST_WORDS = {"vllm": "Application shutdown complete.", "sglang": "SIGQUIT received."}


def first_run_then(marks: Path, first: list[str], later: list[str]) -> tuple[list[str], list[str]]:
    """A container command that runs ``first`` the first time the container starts and
    ``later`` at every start after it (a file in ``marks``, mounted, remembers), with
    the ``docker run`` options it needs."""
    mark = marks / "started"
    script = (
        f"if [ -e {mark} ]; then exec {shlex.join(later)}; fi; : > {mark}; exec {shlex.join(first)}"
    )
    return ["/bin/sh", "-c", script], ["-v", f"{marks}:{marks}"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_restarted_container_is_starting_until_its_new_ready_line(
    dockerd: Dockerd, hosts: Hosts, tmp_path: Path, engine: str
) -> None:
    port = free_port()
    name = f"e2e-restart-{engine}"
    marks = tmp_path / "marks"
    marks.mkdir()
    scenario = "healthy" if engine == "vllm" else "crash-after:0.5"
    command, options = first_run_then(
        marks,
        sim_command(engine, port, scenario=scenario),
        sim_command(engine, port, load=RELOAD_SECONDS),
    )
    dockerd.run_container(name, command, options=options)
    path = inspect(dockerd, name)["LogPath"]
    wait_until(lambda: ready_records(path, engine), 30, "the first run's ready line")
    if engine == "sglang":
        wait_until(lambda: dockerd.inspect(name, "{{.State.Status}}") == "exited", 30, "the crash")
    first = inspect(dockerd, name)["State"]
    dockerd.docker("restart", "-t", "5", name)
    # the old run's ready line, read before anything else can let the new one get ready
    ((old_ready, _),) = ready_records(path, engine)[:1]
    config = hosts(container_service(engine, name, port))
    loading = status_json(config)
    state = inspect(dockerd, name)
    assert state["State"]["StartedAt"] != first["StartedAt"]
    # the old run's ready line and its last words lie before the new run's anchor
    (last_words,) = [o for o, r in records(path) if LAST_WORDS[engine] in r["log"]]
    for host, entry in loading.items():
        assert entry["verdict"] == "starting", (host, entry["summary"])
        assert "not ready yet" in entry["summary"], host
        ready = entry["ready"]
        assert ready["seen"] is False and ready["anchor"] > max(old_ready, last_words), host
        started = at(entry["container"]["started_at"])
        assert started == pytest.approx(docker_time(state["State"]["StartedAt"]), abs=1), host
        assert entry["process"]["pid"] == state["State"]["Pid"], host
        assert entry["hints"] == [], host
    assert len(ready_records(path, engine)) == 1, "the new run was read while it loaded"

    wait_until(
        lambda: len(ready_records(path, engine)) == 2, RELOAD_SECONDS * 3, "the new ready line"
    )
    (_, (new_ready, record)) = ready_records(path, engine)
    for host, entry in status_json(config).items():
        assert entry["verdict"] == "live", (host, entry["summary"])
        ready = entry["ready"]
        assert ready["seen"] is True and ready["anchor"] == loading[host]["ready"]["anchor"]
        assert ready["anchor"] <= new_ready, host
        assert at(ready["at"]) == pytest.approx(docker_time(record["time"]), abs=1), host


# ------------------------------------------------------------------ crash loop


#: The crash-loop hint's count: ``restarted 3 times`` (``once`` for one).
RESTARTED = re.compile(r"^restarted (once|\d+ times)\b")
#: How many restarts the probes must see climb before the test reads the hint.
CLIMB = 2


def restarted(message: str) -> int:
    match = RESTARTED.match(message)
    assert match is not None, message
    return 1 if match.group(1) == "once" else int(match.group(1).split()[0])


def crash_loop_hint(report: ServiceReport) -> str | None:
    found = [h.message for h in report.hints if h.rule is HintRule.CRASH_LOOP]
    return found[0] if found else None


async def climbing(sessions: Sessions, host: Host) -> ServiceReport:
    """The host's report once its probes saw the container's RestartCount climb."""
    watch = sessions.watch(host)

    async def seen() -> ServiceReport | None:
        state = await watch.refresh(list(host.services.values()))
        report = state.reports["qwen"]
        message = crash_loop_hint(report)
        # the probes' own readings, not only the count of a container caught restarting
        # at the first answer (its count since it was created)
        (hint,) = [h for h in report.hints if h.rule is HintRule.CRASH_LOOP] or [None]
        watched = hint is not None and any(
            e.startswith("RestartCount seen by the probes: ") for e in hint.evidence
        )
        return report if message and watched and restarted(message) >= CLIMB else None

    return await until(seen, f"{host.name}'s probes to see the restarts climb", timeout=60)


@pytest.mark.slow
async def test_a_crash_loop_is_told_with_its_restart_count(dockerd: Dockerd, hosts: Hosts) -> None:
    port = free_port()
    name = "e2e-loop"
    dockerd.run_container(
        name, sim_command("vllm", port, scenario="oom"), options=["--restart", "always"]
    )
    config_path = hosts(container_service("vllm", name, port))
    config = parse_config(config_path.read_text(), str(config_path))
    # A session's probes, as a screen's, see the count climb from one answer to the next;
    # ``status`` asks once, and while docker waits to start the container again the
    # count since it was created is the loop's (each host's first such answer is kept).
    restarting: dict[str, dict] = {}

    def status_while_restarting() -> bool:
        for host, entry in status_json(config_path).items():
            if entry["container"]["restarting"]:
                restarting.setdefault(host, entry)
        return len(restarting) == len(HOSTS)

    sessions = Sessions()
    try:
        *reports, _ = await asyncio.gather(
            *(climbing(sessions, host) for host in config.hosts.values()),
            asyncio.to_thread(
                wait_until, status_while_restarting, 60, "each host's status while it restarts"
            ),
        )
    finally:
        await sessions.close()
    state = inspect(dockerd, name)
    short = state["Id"][:12]
    for report in reports:
        host = report.assessment.host
        (hint,) = [h for h in report.hints if h.rule is HintRule.CRASH_LOOP]
        assert CLIMB <= restarted(hint.message) <= state["RestartCount"], (host, hint.message)
        assert "the server fails at start" in hint.message, host
        assert "last exit 0" not in hint.message, (host, hint.message)  # every try exits 1
        assert hint.evidence[0].startswith(f"docker inspect of {name} ({short}): RestartCount ")
        assert hint.evidence[1].startswith("RestartCount seen by the probes: "), host
    for host, entry in restarting.items():
        assert entry["verdict"] == "dead", (host, entry["summary"])
        summary = entry["summary"]
        assert f"container {name} ({short}, babysit-test:empty) is restarting" in summary, host
        assert "its last run exited with status 1 at" in summary, host
        (hint,) = [h for h in entry["hints"] if h["rule"] == HintRule.CRASH_LOOP.value]
        assert restarted(hint["message"]) == entry["container"]["restart_count"], host
        assert "last exit 1 at" in hint["message"], host


# ------------------------------------------------------------------ kill


#: Seconds ``docker stop`` waits before its SIGKILL (the service's ``stop_grace``).
STOP_GRACE = 10


@pytest.mark.integration
@pytest.mark.parametrize("host", HOSTS)
def test_babysit_kill_stops_the_container_and_names_it(
    dockerd: Dockerd, hosts: Hosts, host: str
) -> None:
    port = free_port()
    name = f"e2e-kill-{host}"
    dockerd.run_container(name, sim_command("vllm", port))
    path = inspect(dockerd, name)["LogPath"]
    wait_until(lambda: ready_records(path, "vllm"), 30, f"{name} ready")
    config = hosts(
        f"qwen: {{engine: vllm, container: {name}, port: {port}, stop_grace: {STOP_GRACE}}}"
    )
    before = inspect(dockerd, name)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "tui", "kill", f"{host}/qwen", "--config", str(config)]
    done = subprocess.run(
        [*argv, "--pid", str(before["State"]["Pid"])],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    after = inspect(dockerd, name)["State"]
    assert after["Status"] == "exited" and after["Running"] is False
    assert after["StartedAt"] == before["State"]["StartedAt"], "stopped, not restarted"
    short = before["Id"][:12]
    said = done.stderr
    assert f"{host}/qwen: container {name} ({short}), image babysit-test:empty" in said
    assert f"docker stop -t {STOP_GRACE} {before['Id']}" in said
    # the outcome, its last line, names the container and how it ended
    outcome = said.strip().splitlines()[-1]
    assert outcome.startswith(f"babysit: {host}/qwen: container {name} ({short}): "), outcome
    assert f"the container stopped (exited): exit code {after['ExitCode']} at " in outcome
    assert "not OOM-killed" in outcome and f"port {port} is closed" in outcome


# ------------------------------------------------------------------ --rm


#: Seconds the --rm sim serves before its crash ends the container (long enough for a
#: loaded machine's screen to see it run first).
SERVES_FOR = 6
#: SGLang's last words as its crash ends the container (then the tree is killed: 137).
CRASH_LINE = "SIGQUIT received."
#: The exit status of the SGLang sim's crash (SIGKILL of the whole tree).
CRASH_STATUS = 137


def rm_sim(dockerd: Dockerd, name: str, port: int) -> None:
    """An SGLang sim in a --rm container that serves a few seconds, then crashes. A shell
    runs it (and says its status): the crash's SIGKILL of its own tree cannot end the
    container's first process, which the kernel shields from its namespace's signals."""
    argv = sim_command("sglang", port, scenario=f"crash-after:{SERVES_FOR}")
    shell = ["/bin/sh", "-c", '"$@"; exit $?', "sim", *argv]
    dockerd.run_container(name, shell, options=["--rm"])


def gone(dockerd: Dockerd, name: str) -> bool:
    return dockerd.docker("inspect", name, check=False).returncode != 0


def warned_of_rm(screen: HostScreen) -> bool:
    return any(h.rule is HintRule.AUTO_REMOVE for h in screen.query_one(HintsLine)._shown or ())


@pytest.mark.integration
@pytest.mark.parametrize("host", HOSTS)
async def test_a_rm_container_gone_keeps_its_last_lines_on_screen(
    dockerd: Dockerd, hosts: Hosts, host: str
) -> None:
    port = free_port()
    name = f"e2e-rm-{host}"
    config_path = hosts(container_service("sglang", name, port))
    config = parse_config(config_path.read_text(), str(config_path))
    rm_sim(dockerd, name, port)
    app = make_app(config, [f"{host}/qwen"], sessions=Sessions(interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, HostScreen)
        view = log_view(app)

        def lines() -> list[str]:
            return [r.text for r in view.buffer if isinstance(r, LogLine)]

        def dead() -> bool:
            return screen.assessment is not None and screen.assessment.verdict is Verdict.DEAD

        # while it runs: the warning, beside a run that serves (or, once its crash line is
        # printed and its process not yet gone, a run that no longer serves: WEDGED)
        running = (Verdict.LIVE, Verdict.STARTING, Verdict.WEDGED)

        def warned_while_running() -> bool:
            a = screen.assessment
            return a is not None and a.verdict in running and warned_of_rm(screen)

        await until(
            warned_while_running, "the --rm warning beside its run", pilot=pilot, timeout=30
        )
        await until(lambda: gone(dockerd, name), "docker to remove it", pilot=pilot, timeout=30)
        read = lines()
        await until(dead, "the verdict on the container gone", pilot=pilot, timeout=30)
        # the last lines it read stay, to the crash's own words
        await until(
            lambda: any(CRASH_LINE in line for line in lines()),
            "the crash's line",
            pilot=pilot,
        )
        watch = app.sessions.watch(config.hosts[host])
        answers = watch.answers
        await until(lambda: watch.answers >= answers + 2, "answers after it", pilot=pilot)
        kept = lines()
        assert kept[: len(read)] == read
        assert any(READY["sglang"] in line for line in kept)
        assert screen.assessment is not None and dead()
        summary = screen.assessment.summary
        # dead with the exit status the daemon's events keep, and what it was
        assert summary.startswith(f"no container {name} on {host}; its last run ("), summary
        assert f"exited with status {CRASH_STATUS} at " in summary, summary
        assert summary.endswith("so docker removed it, and its log, as it exited"), summary
        assert warned_of_rm(screen), "the warning stays"
        verdicts = [
            r.event.message
            for r in view.buffer
            if isinstance(r, EventRow) and r.event.kind is EventKind.VERDICT
        ]
        assert any(v.startswith(("LIVE → DEAD: ", "WEDGED → DEAD: ")) for v in verdicts), verdicts
        assert "it ran with --rm" in screen_text(app)


@pytest.mark.integration
async def test_the_first_answer_after_the_removal_has_the_exit_status(
    dockerd: Dockerd, hosts: Hosts
) -> None:
    port = free_port()
    name = "e2e-rm-status"
    config_path = hosts(container_service("sglang", name, port))
    host = parse_config(config_path.read_text(), str(config_path)).hosts["here"]
    rm_sim(dockerd, name, port)
    sessions = Sessions()
    try:
        watch = sessions.watch(host)

        async def verdict(wanted: Verdict) -> ServiceReport | None:
            report = (await watch.refresh(list(host.services.values()))).reports["qwen"]
            return report if report.verdict is wanted else None

        await until(lambda: verdict(Verdict.LIVE), "the run serving", timeout=30)
        # the next answer comes once docker has removed it, as a screen's may
        await asyncio.to_thread(wait_until, lambda: gone(dockerd, name), 30, "its removal")
        report = await until(lambda: verdict(Verdict.DEAD), "the container gone", timeout=30)
    finally:
        await sessions.close()
    summary = report.assessment.summary
    assert "it ran with --rm" in summary
    assert f"exited with status {CRASH_STATUS} at " in summary, summary
