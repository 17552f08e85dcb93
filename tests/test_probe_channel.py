"""The long-lived probe agent: one agent (and one SSH session) answers refresh after
refresh, and any failure costs one answer, never a wrong one."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from support.reports import report_host
from support.servers import REPO, Server, free_port
from support.sshd import Sshd

from tui.config import Service
from tui.core.gpu import Attribution
from tui.core.verdicts import Verdict
from tui.errors import TransportError
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.agentcall import BOOTSTRAP
from tui.remote.probe import ProbeChannel, probe_host, probe_request
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"


def services_for(tmp_path: Path, *names: str) -> list[Service]:
    """Services whose logs are ``tmp_path/NAME.log`` (the log need not exist)."""
    lines = "".join(
        f"      {n}: {{engine: vllm, log: {json.dumps(str(tmp_path / (n + '.log')))}}}\n"
        for n in names
    )
    text = f"hosts:\n  gpu:\n    local: true\n    services:\n{lines}"
    return list(parse_config(text).hosts["gpu"].services.values())


async def ask(channel: ProbeChannel, services: list[Service]) -> tuple[list[str], int]:
    """The names the answer is about, and the pid of the agent that gave it."""
    answer = await channel.ask(probe_request(services), timeout=20)
    assert answer.ok, answer.stderr
    data = json.loads(answer.stdout)
    return [entry["name"] for entry in data["services"]], data["agent_pid"]


async def ask_names(channel: ProbeChannel, services: list[Service]) -> list[str]:
    return (await ask(channel, services))[0]


async def test_one_agent_answers_every_refresh_and_ends_on_close(
    transport: Transport, tmp_path: Path
) -> None:
    services = services_for(tmp_path, "a", "b", "c")
    channel = ProbeChannel(transport)
    pids = set()
    try:
        for chosen in (services, services[1:], services[:1], services):
            names, pid = await ask(channel, chosen)
            assert names == [s.name for s in chosen]
            pids.add(pid)
        assert channel.starts == 1
        assert len(pids) == 1  # one agent gave every answer
        mine = [psutil.Process(pid) for pid in pids]
        assert BOOTSTRAP in mine[0].cmdline()
    finally:
        await channel.close()
    psutil.wait_procs(mine, timeout=5)
    assert not any(p.is_running() for p in mine), "the agent outlived its channel"


async def test_an_agent_killed_between_refreshes_is_started_again(
    transport: Transport, tmp_path: Path
) -> None:
    services = services_for(tmp_path, "a")
    channel = ProbeChannel(transport)
    try:
        names, pid = await ask(channel, services)
        assert names == ["a"]
        agent = psutil.Process(pid)
        assert BOOTSTRAP in agent.cmdline()
        agent.kill()
        agent.wait(5)
        assert await ask_names(channel, services) == ["a"]
        assert channel.starts == 2
    finally:
        await channel.close()


async def test_a_cancelled_request_never_hands_its_answer_to_the_next(
    transport: Transport, tmp_path: Path
) -> None:
    """Cancel requests at many points; each later answer is about what it asked."""
    services = services_for(tmp_path, *(f"s{i}" for i in range(6)))
    channel = ProbeChannel(transport)
    try:
        for i in range(6):
            task = asyncio.create_task(channel.ask(probe_request(services), timeout=20))
            await asyncio.sleep(0.01 * i)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            chosen = services[i : i + 1]
            assert await ask_names(channel, chosen) == [chosen[0].name]
    finally:
        await channel.close()


async def test_a_request_the_agent_cannot_answer_is_said_and_the_agent_stays(
    transport: Transport, tmp_path: Path
) -> None:
    (service,) = services_for(tmp_path, "a")
    bad = probe_request([service])
    bad["services"][0]["match"] = "("  # type: ignore[index] - not a regex
    channel = ProbeChannel(transport)
    try:
        answer = await channel.ask(bad, timeout=20)
        assert answer.ok
        # A failure while probing one service is that service's answer.
        (entry,) = json.loads(answer.stdout)["services"]
        assert entry["error"].startswith("error: missing )")
        assert await ask_names(channel, [service]) == ["a"]
        assert channel.starts == 1
    finally:
        await channel.close()


async def test_refreshes_over_ssh_open_one_session_in_all(
    sshd: Sshd, tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "a.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    entry = sshd.host_yaml("gpu").rstrip("\n") + (
        f"\n  services:\n    a: {{engine: sglang, log: {json.dumps(str(log))}, "
        f"port: {server.port}}}\n"
    )
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in entry.splitlines())).hosts["gpu"]
    links = SshLinks()
    transport = open_transport(host, links)
    channel = ProbeChannel(transport)
    try:
        await transport.run(["true"], timeout=10)  # connected; now count sessions
        before = sshd.log.read_text().count("Starting session: command")
        for _ in range(4):
            (result,) = await probe_host(transport, host, channel=channel)
            assert result.verdict is Verdict.LIVE, result.line
        after = sshd.log.read_text().count("Starting session: command")
    finally:
        await channel.close()
        await links.close()
    assert after - before == 1


async def test_a_stopped_container_is_said_plainly(sshd: Sshd, tmp_path: Path) -> None:
    """pct's own failure (not the agent's) is the answer when the container stops."""
    sshd.add_container(137)
    text = "hosts:\n" + "".join(
        f"  {line}\n" for line in sshd.pct_host_yaml("ct", 137).splitlines()
    )
    host = parse_config(text).hosts["ct"]
    links = SshLinks()
    channel = ProbeChannel(open_transport(host, links))
    services = services_for(tmp_path, "a")
    try:
        assert await ask_names(channel, services) == ["a"]
        sshd.add_container(137, stopped=True)
        with pytest.raises(TransportError, match="CT 137 not running"):
            await channel.ask(probe_request(services), timeout=20)
        sshd.add_container(137)
        assert await ask_names(channel, services) == ["a"]
    finally:
        await channel.close()
        await links.close()


@pytest.fixture
def nvidia_smi_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], int]:
    """The nvidia-smi stand-in on PATH behind a shim that counts its queries; returns
    how many runs asked ``--query-KIND``. Sims register in ``tmp_path/sim-state``."""
    calls = tmp_path / "nvidia-smi.calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "nvidia-smi"
    shim.write_text(
        f'#!/bin/sh\necho "$1" >> {shlex.quote(str(calls))}\n'
        f'exec {shlex.quote(str(REPO / "tui" / "sim" / "nvidia-smi"))} "$@"\n'
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(tmp_path / "sim-state"))
    monkeypatch.setenv("BABYSIT_SIM_PYTHON", sys.executable)

    def asked(kind: str) -> int:
        lines = calls.read_text().splitlines() if calls.exists() else []
        return sum(line.startswith(f"--query-{kind}") for line in lines)

    return asked


async def test_the_gpu_process_list_is_reused_only_while_it_provably_holds(
    tmp_path: Path, servers: list[Server], nvidia_smi_calls: Callable[[str], int]
) -> None:
    """GPU readings are new at every refresh; nvidia-smi's process list is asked again
    whenever a process it lists is gone or a run started after it was read."""
    asked = nvidia_smi_calls
    state = tmp_path / "sim-state"
    first = Server(tmp_path / "a.log", state=state)
    servers.append(first)
    first.wait_for(READY)
    second_port = free_port()
    text = (
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      a: {{engine: sglang, log: {json.dumps(str(tmp_path / 'a.log'))}, "
        f"port: {first.port}, gpus: [0]}}\n"
        f"      b: {{engine: sglang, log: {json.dumps(str(tmp_path / 'b.log'))}, "
        f"port: {second_port}, gpus: [0]}}\n"
    )
    host = parse_config(text).hosts["gpu"]
    links = SshLinks()
    transport = open_transport(host, links)
    channel = ProbeChannel(transport)

    async def refresh(max_age: float = 30.0) -> list:
        reports = await report_host(
            transport, host, tail_bytes=0, channel=channel, apps_max_age=max_age
        )
        return [r.gpus for r in reports]

    try:
        # The run started over 1 s before the list is read: the list may be reused. Its
        # start is dated on the agent's own clock (boot time from CLOCK_BOOTTIME), which is
        # the one it compares; psutil's comes from /proc/stat's whole-second boot time.
        [seen] = await probe_host(transport, host, [host.services["a"]], channel=channel)
        assert seen.run is not None and seen.run.root.pid == first.pid, seen.line
        started = max(p.start_time for p in seen.run.processes)
        await asyncio.sleep(max(0.0, started + 1.5 - time.time()))
        a, _ = await refresh()
        assert a.attribution is Attribution.TIED and a.pids == (first.pid,)
        assert (asked("gpu"), asked("compute-apps")) == (1, 1)
        a2, _ = await refresh()
        assert (asked("gpu"), asked("compute-apps")) == (2, 1)
        assert a2.pids == (first.pid,) and a2.apps_read_at == a.apps_read_at

        first.kill()  # a process the list names is gone: ask again
        a3, _ = await refresh()
        assert (asked("gpu"), asked("compute-apps")) == (3, 2)
        assert a3.attribution is Attribution.NO_SERVICE_PIDS
        await refresh()
        assert asked("compute-apps") == 2  # nothing changed

        second = Server(tmp_path / "b.log", port=second_port, state=state)
        servers.append(second)
        second.wait_for(READY)  # a run started after the list was read: ask again
        _, b4 = await refresh()
        assert asked("compute-apps") == 3
        assert b4.attribution is Attribution.TIED and b4.pids == (second.pid,)

        await refresh(max_age=0)  # the caller wants it new
        assert asked("compute-apps") == 4
        assert channel.starts == 1
    finally:
        await channel.close()
        await links.close()


async def test_the_hosts_gpus_travel_once_and_every_service_that_asked_reads_them(
    tmp_path: Path, servers: list[Server], nvidia_smi_calls: Callable[[str], int]
) -> None:
    """nvidia-smi's readings are the host's: the answer carries them once, each service
    that asked says so, and their reports read that one block (the one without GPUs
    configured still asks, as a tail brings them; none is left without)."""
    from tui.agent.probe import probe
    from tui.remote.probe import probe_services

    first = Server(tmp_path / "a.log", state=tmp_path / "sim-state")
    servers.append(first)
    first.wait_for(READY)
    logs = {name: json.dumps(str(tmp_path / f"{name}.log")) for name in "abc"}
    text = (
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      a: {{engine: sglang, log: {logs['a']}, port: {first.port}, gpus: [0]}}\n"
        f"      b: {{engine: sglang, log: {logs['b']}, port: {free_port()}, gpus: [1]}}\n"
        f"      c: {{engine: sglang, log: {logs['c']}, port: {free_port()}}}\n"
    )
    host = parse_config(text).hosts["gpu"]
    services = list(host.services.values())
    answer = probe(probe_request(services, tail_bytes=4096))
    wire = json.dumps(answer)
    assert wire.count('"gpus_status"') == 1 and answer["gpu_csv"]["gpus_status"] == 0
    assert [e["gpu_csv"] for e in answer["services"]] == [True, True, True]
    none_asked = probe(probe_request(services, tail_bytes=0))
    assert none_asked["gpu_csv"] is None
    assert [e["gpu_csv"] for e in none_asked["services"]] == [False, False, False]

    before = nvidia_smi_calls("gpu")
    links = SshLinks()
    try:
        pairs = await probe_services(open_transport(host, links), host, services, tail_bytes=4096)
    finally:
        await links.close()
    (a, da), (_, db), (_, dc) = pairs
    assert a.run is not None and a.run.root.pid == first.pid
    assert da.gpu_csv is not None and da.gpu_csv is db.gpu_csv is dc.gpu_csv
    assert nvidia_smi_calls("gpu") == before + 1  # read once, for all three
