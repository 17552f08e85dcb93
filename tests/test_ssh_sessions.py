"""SSH sessions against a stock sshd: every channel (runs and long-lived streams) counts
against its connection's MaxSessions, and the link opens another connection when one is full."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sshd import Sshd, find_sshd, start_sshd
from support.wait import until
from test_follow import Collector

from tui.config import Host
from tui.core.follow import Start
from tui.core.logcursor import EventKind
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.follow import Follower
from tui.remote.probe import ProbeChannel, probe_host
from tui.remote.ssh import SshTransport
from tui.remote.sshlink import SshLink

CONTAINERS = range(201, 213)  # twelve containers on one node


def indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def max_sessions(sshd: Sshd) -> int:
    """The MaxSessions the running sshd applies, as ``sshd -T`` reports it."""
    out = subprocess.run(
        [str(find_sshd()), "-T", "-f", str(sshd.root / "sshd_config")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith("maxsessions")))


@pytest.fixture
async def links() -> AsyncIterator[SshLinks]:
    pool = SshLinks()
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
def stock_sshd(tmp_path: Path):
    server = start_sshd(tmp_path / "stock-sshd", max_sessions=10)
    try:
        yield server
    finally:
        server.stop()


def link_of(links: SshLinks, host: Host) -> SshLink:
    assert host.ssh is not None
    return links.get(host.ssh)


@pytest.mark.integration
async def test_twelve_containers_on_one_stock_node_each_keep_a_probe_agent_and_a_follow_stream(
    stock_sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    node = stock_sshd
    assert max_sessions(node) == 10
    text = "hosts:\n"
    for vmid in CONTAINERS:
        node.add_container(vmid)
        log = tmp_path / f"ct{vmid}.log"
        log.write_text(f"ct {vmid} line 0\n")
        entry = node.pct_host_yaml(f"ct{vmid}", vmid).rstrip("\n") + "\n  services:\n"
        entry += f"    sim: {{engine: sglang, log: {json.dumps(str(log))}}}\n"
        text += indent(entry)
    config = parse_config(text)
    hosts = [config.hosts[f"ct{vmid}"] for vmid in CONTAINERS]
    transports = [open_transport(host, links) for host in hosts]
    channels = [ProbeChannel(t) for t in transports]
    collectors = [
        Collector(
            Follower(
                t,
                str(tmp_path / f"ct{vmid}.log"),
                label=f"ct{vmid}/sim",
                start=Start(from_start=True),
            )
        )
        for t, vmid in zip(transports, CONTAINERS, strict=True)
    ]

    async def probe_all() -> list[Verdict]:
        answers = await asyncio.gather(
            *(
                probe_host(t, h, channel=c)
                for t, h, c in zip(transports, hosts, channels, strict=True)
            )
        )
        for answer in answers:
            assert answer[0].verdict is not Verdict.UNKNOWN, answer[0].line
        return [a[0].verdict for a in answers]

    try:
        # Every follower streams its container's log, and every probe agent answers,
        # all at once: 24 long-lived sessions on one node that allows 10 per connection.
        for vmid, c in zip(CONTAINERS, collectors, strict=True):
            await c.until(lambda c=c, vmid=vmid: f"ct {vmid} line 0" in c.texts, timeout=60)
        await probe_all()
        for vmid in CONTAINERS:
            with (tmp_path / f"ct{vmid}.log").open("a") as out:
                out.write(f"ct {vmid} line 1\n")
        for vmid, c in zip(CONTAINERS, collectors, strict=True):
            await c.until(lambda c=c, vmid=vmid: f"ct {vmid} line 1" in c.texts, timeout=30)
        await probe_all()
        # The same agents answered both rounds, and no follower ever lost its stream.
        assert [ch.starts for ch in channels] == [1] * len(CONTAINERS)
        for c in collectors:
            assert not c.events(EventKind.ERROR) and not c.events(EventKind.DISCONNECTED)
        link = link_of(links, hosts[0])
        assert link.sessions >= 2 * len(CONTAINERS)
        assert link.connections >= 3, "24 sessions fit on no fewer than 3 connections of 10"
        assert node.accepted_logins() == link.connects == link.connections
    finally:
        for c in collectors:
            await c.stop()
        await asyncio.gather(*(ch.close() for ch in channels))


@pytest.mark.slow
async def test_a_session_closed_at_the_limit_is_reused_only_once_the_server_has_freed_it(
    stock_sshd: Sshd, links: SshLinks
) -> None:
    """Nine streams hold their sessions; one-shot runs take the tenth, one after another.
    sshd frees a session a moment after the channel closes here; the link waits for
    that moment instead of being refused."""
    host = parse_config("hosts:\n" + indent(stock_sshd.host_yaml("h"))).hosts["h"]
    transport = open_transport(host, links)
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(9):
            process = await stack.enter_async_context(transport.stream(["cat"], stdin=True))
            await process.write(b"x\n")
        for i in range(60):
            result = await transport.run(["echo", str(i)], timeout=30)
            assert result.stdout == f"{i}\n".encode()
        link = link_of(links, host)
        assert link.connects == 1, "a run was refused, or waited for another connection"
        assert link.budget == 10


@pytest.mark.integration
async def test_a_server_allowing_fewer_sessions_is_learned_and_another_connection_opened(
    tmp_path: Path, links: SshLinks
) -> None:
    """A server set to MaxSessions 3 refuses the fourth channel; the link then asks no
    connection for more than three and opens another connection for the rest."""
    small = start_sshd(tmp_path / "small-sshd", max_sessions=3)
    try:
        assert max_sessions(small) == 3
        host = parse_config("hosts:\n" + indent(small.host_yaml("h"))).hosts["h"]
        transport = open_transport(host, links)
        assert isinstance(transport, SshTransport)
        async with contextlib.AsyncExitStack() as stack:
            streams = [
                await stack.enter_async_context(transport.stream(["cat"], stdin=True))
                for _ in range(8)
            ]
            for i, process in enumerate(streams):
                await process.write(f"s{i}\n".encode())
            for i, process in enumerate(streams):
                chunks = aiter(process.chunks())
                got = b""
                while not got.endswith(b"\n"):
                    got += await anext(chunks)
                assert got == f"s{i}\n".encode()
            link = link_of(links, host)
            assert link.budget == 3
            assert link.connections == 3
            result = await transport.run(["echo", "still"], timeout=30)
            assert result.stdout == b"still\n"
        await until(lambda: link.sessions == 0, "every stream's session to end", timeout=10)
    finally:
        small.stop()
