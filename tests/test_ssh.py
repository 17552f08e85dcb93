"""SSH links against a real sshd: host keys, auth, unreachable hosts, reconnects, sharing."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.sshd import Sshd, free_port
from support.wait import until

from tui.config import Host
from tui.errors import AuthError, HostKeyError, HostUnreachable, TransportError
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.backoff import BACKOFF_CAP, backoff_delay
from tui.remote.sshlink import LinkState


def host_from(yaml_text: str, name: str) -> Host:
    indented = "".join(f"  {line}\n" for line in yaml_text.splitlines())
    return parse_config("hosts:\n" + indented).hosts[name]


@pytest.fixture
async def links() -> AsyncIterator[SshLinks]:
    pool = SshLinks()
    try:
        yield pool
    finally:
        await pool.close()


def connections_from_log(sshd: Sshd) -> int:
    return sshd.log.read_text(errors="replace").count("Connection from 127.0.0.1")


# ---------------------------------------------------------------- host keys


@pytest.mark.integration
async def test_unknown_host_key_is_refused_with_how_to_add_it(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    host = host_from(sshd.host_yaml("h", known_hosts=str(known)), "h")
    with pytest.raises(HostKeyError) as caught:
        await open_transport(host, links).run(["true"], timeout=10)
    message = caught.value.message
    assert "host key not known" in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}" in message
    assert "host_key_policy: accept-new" in message
    assert "ssh-ed25519" in message and "SHA256:" in message
    assert known.read_text() == "", "strict checking must never write known_hosts"


@pytest.mark.integration
async def test_changed_host_key_is_refused_even_with_accept_new(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    other = tmp_path / "other"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    key_type, key_b64 = other.with_suffix(".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n")
    before = known.read_text()
    host = host_from(sshd.host_yaml("h", known_hosts=str(known), host_key_policy="accept-new"), "h")
    with pytest.raises(HostKeyError, match="HOST KEY CHANGED"):
        await open_transport(host, links).run(["true"], timeout=10)
    assert known.read_text() == before


@pytest.mark.integration
async def test_accept_new_records_an_unknown_key_then_checks_it(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    known = tmp_path / "ssh" / "known_hosts"
    host = host_from(sshd.host_yaml("h", known_hosts=str(known), host_key_policy="accept-new"), "h")
    result = await open_transport(host, links).run(["echo", "ok"], timeout=10)
    assert result.stdout == b"ok\n"
    assert known.read_text().strip() == sshd.host_key_line


@pytest.mark.integration
async def test_missing_known_hosts_file_is_a_clear_error(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    host = host_from(sshd.host_yaml("h", known_hosts=str(tmp_path / "nope")), "h")
    with pytest.raises(HostKeyError, match=r"known_hosts file .*nope does not exist"):
        await open_transport(host, links).run(["true"], timeout=10)


# ---------------------------------------------------------------- auth


@pytest.mark.integration
async def test_wrong_key_is_an_auth_error_and_is_not_retried(sshd: Sshd, links: SshLinks) -> None:
    host = host_from(sshd.host_yaml("h", identity_file=str(sshd.wrong_key)), "h")
    before = connections_from_log(sshd)
    transport = open_transport(host, links)
    with pytest.raises(AuthError, match=r"permission denied for .*none of the keys offered"):
        await transport.run(["true"], timeout=10)
    # A login after it, logged once sshd has logged everything before it.
    logins = sshd.accepted_logins()
    assert (
        await open_transport(host_from(sshd.host_yaml("m"), "m"), links).run(["true"], timeout=10)
    ).ok
    await until(
        lambda: sshd.accepted_logins() > logins, "the later login in sshd's log", timeout=10
    )
    assert connections_from_log(sshd) - before == 2, "an auth failure must not be retried"
    assert links.get(host.ssh).status.state is LinkState.FAILED  # type: ignore[arg-type]


@pytest.mark.integration
async def test_wrong_user_is_an_auth_error(sshd: Sshd, links: SshLinks) -> None:
    yaml_text = sshd.host_yaml("h", ssh=f"no-such-user-babysit@127.0.0.1:{sshd.port}")
    host = host_from(yaml_text, "h")
    with pytest.raises(AuthError, match="permission denied for no-such-user-babysit"):
        await open_transport(host, links).run(["true"], timeout=10)


# ---------------------------------------------------------------- unreachable


@pytest.mark.integration
async def test_closed_port_is_refused_clearly(sshd: Sshd, links: SshLinks) -> None:
    port = free_port()
    host = host_from(sshd.host_yaml("h", ssh=f"root@127.0.0.1:{port}", connect_timeout=2), "h")
    with pytest.raises(HostUnreachable, match=f"connection refused on port {port}"):
        await open_transport(host, links).run(["true"], timeout=10)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and then never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.mark.integration
async def test_silent_host_fails_within_the_connect_timeout(
    sshd: Sshd, links: SshLinks, silent_port: int
) -> None:
    host = host_from(
        sshd.host_yaml("h", ssh=f"root@127.0.0.1:{silent_port}", connect_timeout=1), "h"
    )
    started = time.monotonic()
    with pytest.raises(HostUnreachable, match="no answer within 1 s"):
        await open_transport(host, links).run(["true"], timeout=30)
    # The bound is the behaviour under test (the connect timeout), not a speed figure.
    assert time.monotonic() - started < 1 + 2.5


@pytest.mark.integration
async def test_unknown_host_name(sshd: Sshd, links: SshLinks) -> None:
    host = host_from(sshd.host_yaml("h", ssh="root@no-such-host.invalid"), "h")
    with pytest.raises(HostUnreachable, match=r"no-such-host\.invalid"):
        await open_transport(host, links).run(["true"], timeout=10)


# ---------------------------------------------------------------- one connection, reconnects


@pytest.mark.integration
async def test_many_calls_share_one_connection(sshd: Sshd, links: SshLinks) -> None:
    sshd.add_container(105)
    ssh_host = host_from(sshd.host_yaml("h"), "h")
    pct_host = host_from(sshd.pct_host_yaml("c", 105), "c")
    ssh_transport = open_transport(ssh_host, links)
    pct_transport = open_transport(pct_host, links)
    before = sshd.accepted_logins()
    results = await asyncio.gather(
        *(ssh_transport.run(["echo", str(i)], timeout=30) for i in range(20)),
        *(pct_transport.run(["echo", f"c{i}"], timeout=30) for i in range(10)),
    )
    assert [r.stdout for r in results[:20]] == [f"{i}\n".encode() for i in range(20)]
    assert [r.stdout for r in results[20:]] == [f"c{i}\n".encode() for i in range(10)]
    async with ssh_transport.stream(["sh", "-c", "echo streamed"]) as process:
        assert b"".join([c async for c in process.chunks()]) == b"streamed\n"
    assert sshd.accepted_logins() - before == 1, "sshd saw more than one login"
    assert links.get(ssh_host.ssh).connects == 1  # type: ignore[arg-type]


@pytest.mark.integration
async def test_killed_session_reconnects_on_the_next_call(sshd: Sshd, links: SshLinks) -> None:
    host = host_from(sshd.host_yaml("h"), "h")
    transport = open_transport(host, links)
    assert (await transport.run(["echo", "before"], timeout=10)).stdout == b"before\n"
    link = links.get(host.ssh)  # type: ignore[arg-type]
    before = sshd.accepted_logins()
    assert sshd.kill_sessions() >= 1
    await asyncio.sleep(0.2)
    result = await transport.run(["echo", "after"], timeout=20)
    assert result.stdout == b"after\n"
    assert link.connects == 2
    assert sshd.accepted_logins() - before == 1
    assert link.status.state is LinkState.CONNECTED


@pytest.mark.integration
async def test_session_killed_mid_stream_then_next_call_succeeds(
    sshd: Sshd, links: SshLinks
) -> None:
    host = host_from(sshd.host_yaml("h"), "h")
    transport = open_transport(host, links)
    with pytest.raises(TransportError, match="connection lost"):
        async with transport.stream(["sh", "-c", "while :; do echo x; sleep 0.05; done"]) as proc:
            async for _chunk in proc.chunks():
                sshd.kill_sessions()
            await proc.wait()
    result = await transport.run(["echo", "back"], timeout=20)
    assert result.stdout == b"back\n"


@pytest.mark.integration
async def test_lost_server_is_retried_with_backoff_until_it_returns(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    """A connection lost while the server is down: calls wait through backoff, and
    succeed once sshd listens again on the same port."""
    from support.sshd import start_sshd

    own = start_sshd(tmp_path / "own-sshd")
    try:
        host = host_from(own.host_yaml("h"), "h")
        transport = open_transport(host, links)
        assert (await transport.run(["true"], timeout=10)).ok
        link = links.get(host.ssh)  # type: ignore[arg-type]
        own.kill_sessions()
        own.process.terminate()
        own.process.wait()
        await until(
            lambda: link.status.state is LinkState.RECONNECTING,
            "the loss to be noticed",
            timeout=10,
        )
        with pytest.raises(HostUnreachable, match="not connected"):
            await transport.run(["true"], timeout=1.5)
        assert link.status.state is LinkState.RECONNECTING
        assert link.status.describe().startswith("reconnecting in")
        import subprocess

        own.process = subprocess.Popen(
            own.process.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        result = await transport.run(["echo", "again"], timeout=60)
        assert result.stdout == b"again\n"
        assert link.connects == 2
    finally:
        own.stop()


@pytest.mark.unit
@given(st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=2**32))
def test_backoff_is_capped_and_jittered(attempt: int, seed: int) -> None:
    delay = backoff_delay(attempt, random.Random(seed))
    assert 0 < delay <= BACKOFF_CAP
    assert delay >= min(BACKOFF_CAP, 0.5 * 2 ** min(attempt, 16)) * 0.5


@pytest.mark.unit
def test_jitter_spreads_clients_apart() -> None:
    rng = random.Random(7)
    assert len({round(backoff_delay(3, rng), 6) for _ in range(20)}) > 15


# ---------------------------------------------------------------- pct


@pytest.mark.integration
async def test_pct_unknown_vmid_says_the_real_error(sshd: Sshd, links: SshLinks) -> None:
    host = host_from(sshd.pct_host_yaml("c", 999), "c")
    with pytest.raises(
        TransportError,
        match=r"pct exec 999: container 999 is not usable on 127.0.0.1: "
        r"Configuration file 'nodes/pve-test/lxc/999.conf' does not exist",
    ):
        await open_transport(host, links).run(["true"], timeout=10)


@pytest.mark.integration
async def test_pct_stopped_container(sshd: Sshd, links: SshLinks) -> None:
    sshd.add_container(106, stopped=True)
    host = host_from(sshd.pct_host_yaml("c", 106), "c")
    with pytest.raises(TransportError, match="CT 106 not running"):
        await open_transport(host, links).run(["true"], timeout=10)


@pytest.mark.integration
async def test_pct_standin_checks_its_arguments_like_the_real_one(
    sshd: Sshd, links: SshLinks
) -> None:
    sshd.add_container(105)
    transport = open_transport(host_from(sshd.host_yaml("node"), "node"), links)
    bad_vmid = await transport.run(["pct", "exec", "abc", "--", "true"], timeout=10)
    assert bad_vmid.exit_status == 255
    assert b"value does not look like a valid VM ID" in bad_vmid.stderr
    bad_option = await transport.run(
        ["pct", "exec", "105", "--bogus", "1", "--", "true"], timeout=10
    )
    assert bad_option.exit_status == 255
    assert b"Unknown option: bogus" in bad_option.stderr
    clean = await transport.run(["pct", "exec", "105", "--keep-env", "0", "--", "env"], timeout=10)
    assert clean.ok and b"BABYSIT_PCT_ROOT" not in clean.stdout
    kept = await transport.run(["pct", "exec", "105", "--", "env"], timeout=10)
    assert kept.ok and b"BABYSIT_PCT_ROOT" in kept.stdout
