"""Host keys checked as OpenSSH checks them, for the host an ssh config alias names.

Every test runs with its own HOME, so ``~/.ssh/config`` and ``~/.ssh/known_hosts``
are the test's files, never the user's; the config names the test sshd (on a port
other than 22) by ``HostName`` and ``Port``.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest
from support.sshd import Sshd, keygen, start_sshd

from tui.config import Host
from tui.errors import HostKeyError
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport

pytestmark = pytest.mark.integration


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, with an empty ``.ssh`` and no ssh-agent."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture
async def links() -> AsyncIterator[SshLinks]:
    pool = SshLinks()
    try:
        yield pool
    finally:
        await pool.close()


def ssh_config(home: Path, sshd: Sshd, *lines: str) -> None:
    """``Host box`` in ~/.ssh/config: the test sshd by HostName and Port (and an
    empty system-wide known_hosts of the test's own)."""
    (home / "global_known_hosts").write_text("")
    (home / ".ssh" / "config").write_text(
        "\n".join(
            [
                "Host box",
                "  HostName 127.0.0.1",
                f"  Port {sshd.port}",
                f"  GlobalKnownHostsFile {home / 'global_known_hosts'}",
                *(f"  {line}" for line in lines),
                "",
            ]
        )
    )


def box(sshd: Sshd, policy: str = "strict") -> Host:
    """A hosts.yaml host reaching ``box`` by its alias alone: port, host name and
    known_hosts come from the ssh config."""
    text = (
        "hosts:\n  h:\n    ssh: box\n"
        f"    identity_file: {sshd.client_key}\n"
        f"    host_key_policy: {policy}\n"
        "    connect_timeout: 5\n"
    )
    return parse_config(text).hosts["h"]


def direct(sshd: Sshd, known: Path, policy: str = "strict") -> Host:
    text = "hosts:\n" + "".join(
        f"  {line}\n"
        for line in sshd.host_yaml("h", known_hosts=str(known), host_key_policy=policy).splitlines()
    )
    return parse_config(text).hosts["h"]


def server_key(sshd: Sshd) -> asyncssh.SSHKey:
    return asyncssh.import_public_key(" ".join(sshd.host_key_line.split()[1:]))


def key_fields(sshd: Sshd) -> str:
    """``type base64`` of the test server's host key."""
    return " ".join(sshd.host_key_line.split()[1:])


def other_key() -> str:
    """``type base64`` of a key no server here holds."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    return " ".join(key.export_public_key().decode().split()[:2])


async def run_ok(host: Host) -> None:
    """One command on ``host`` over a link of its own (a fresh connection)."""
    pool = SshLinks()
    try:
        result = await open_transport(host, pool).run(["echo", "ok"], timeout=20)
        assert result.stdout == b"ok\n"
    finally:
        await pool.close()


async def refusal(host: Host, links: SshLinks) -> str:
    with pytest.raises(HostKeyError) as caught:
        await open_transport(host, links).run(["true"], timeout=20)
    return caught.value.message


# ---------------------------------------------------------------- a config alias


async def test_accept_new_on_an_alias_records_the_key_of_the_server_it_names(
    sshd: Sshd, home: Path
) -> None:
    ssh_config(home, sshd)
    known = home / ".ssh" / "known_hosts"
    await run_ok(box(sshd, "accept-new"))
    # OpenSSH's name for the host it connected to: HostName, [ ]:port off port 22.
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {key_fields(sshd)}\n"
    await run_ok(box(sshd, "strict"))
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {key_fields(sshd)}\n"


async def test_host_key_alias_is_the_name_recorded_and_checked(sshd: Sshd, home: Path) -> None:
    known = home / "keys"
    known.write_text("")
    ssh_config(home, sshd, "HostKeyAlias gpu-box", f"UserKnownHostsFile {known}")
    await run_ok(box(sshd, "accept-new"))
    assert known.read_text() == f"gpu-box {key_fields(sshd)}\n"
    await run_ok(box(sshd, "strict"))
    assert known.read_text() == f"gpu-box {key_fields(sshd)}\n"


async def test_unknown_key_on_an_alias_names_the_server_key_and_the_config_file(
    sshd: Sshd, home: Path, links: SshLinks
) -> None:
    known = home / "keys"
    known.write_text("")
    ssh_config(home, sshd, f"UserKnownHostsFile {known}")
    message = await refusal(box(sshd), links)
    assert f"no ssh-ed25519 host key is known for [127.0.0.1]:{sshd.port}" in message
    assert server_key(sshd).get_fingerprint() in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}" in message
    assert known.read_text() == ""


async def test_changed_key_on_an_alias_names_the_file_and_line_that_hold_the_old_one(
    sshd: Sshd, home: Path, links: SshLinks
) -> None:
    known = home / "keys"
    known.write_text(f"# the GPU box\n[127.0.0.1]:{sshd.port} {other_key()}\n")
    before = known.read_text()
    ssh_config(home, sshd, f"UserKnownHostsFile {known}")
    message = await refusal(box(sshd, "accept-new"), links)
    assert f"HOST KEY CHANGED for [127.0.0.1]:{sshd.port}" in message
    assert f"{known}:2 holds another key" in message
    assert f"ssh-keygen -f {known} -R '[127.0.0.1]:{sshd.port}'" in message
    assert server_key(sshd).get_fingerprint() in message
    assert known.read_text() == before


# ---------------------------------------------------------------- ports


async def test_a_bare_host_entry_is_not_a_change_for_another_port(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    """``127.0.0.1 KEY`` is what port 22 of the host holds. OpenSSH consults it for
    another port only when ``[127.0.0.1]:PORT`` is unknown, and only the same key
    there is accepted; a different one leaves the key new, not changed."""
    known = tmp_path / "known_hosts"
    port_22 = f"127.0.0.1 {other_key()}\n"
    known.write_text(port_22)
    message = await refusal(direct(sshd, known), links)
    assert "CHANGED" not in message
    assert f"no ssh-ed25519 host key is known for [127.0.0.1]:{sshd.port}" in message
    assert known.read_text() == port_22

    await run_ok(direct(sshd, known, "accept-new"))
    assert known.read_text() == port_22 + f"[127.0.0.1]:{sshd.port} {key_fields(sshd)}\n"

    known.write_text(f"127.0.0.1 {key_fields(sshd)}\n")
    await run_ok(direct(sshd, known))


# ---------------------------------------------------------------- markers


async def test_a_revoked_key_is_refused_even_with_accept_new(
    sshd: Sshd, home: Path, links: SshLinks
) -> None:
    known = home / "keys"
    known.write_text(f"@revoked * {key_fields(sshd)}\n[127.0.0.1]:{sshd.port} {key_fields(sshd)}\n")
    before = known.read_text()
    ssh_config(home, sshd, f"UserKnownHostsFile {known}")
    message = await refusal(box(sshd, "accept-new"), links)
    assert "HOST KEY REVOKED" in message
    assert f"{known}:1" in message
    assert known.read_text() == before


# ---------------------------------------------------------------- host certificates


@dataclass
class CertifiedSshd:
    sshd: Sshd
    #: ``type base64`` of the CA key that signed the server's host certificate.
    ca: str


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CertifiedSshd]:
    """An sshd that presents a host certificate as well as its plain key."""
    root = tmp_path_factory.mktemp("certified-sshd")
    ca = root / "host_ca"
    ca_pub = keygen(ca, "babysit-test-host-ca")
    server = start_sshd(root / "sshd", host_ca=ca)
    try:
        yield CertifiedSshd(server, " ".join(ca_pub.split()[:2]))
    finally:
        server.stop()


async def test_host_certificates_are_trusted_only_through_a_cert_authority_line(
    certified: CertifiedSshd, tmp_path: Path, links: SshLinks
) -> None:
    """A ``@cert-authority`` line for the host vouches for its certificate; without
    one the plain key is what is checked, so accept-new records that key."""
    sshd = certified.sshd
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority [127.0.0.1]:{sshd.port} {certified.ca}\n")
    await run_ok(direct(sshd, known))

    known.write_text(f"@cert-authority *.example.org {certified.ca}\n")
    message = await refusal(direct(sshd, known), links)
    assert f"no ssh-ed25519 host key is known for [127.0.0.1]:{sshd.port}" in message

    known.write_text("")
    await run_ok(direct(sshd, known, "accept-new"))
    assert known.read_text() == f"{sshd.host_key_line}\n"

    known.write_text(
        f"@cert-authority [127.0.0.1]:{sshd.port} {certified.ca}\n@revoked * {certified.ca}\n"
    )
    message = await refusal(direct(sshd, known), links)
    assert "HOST KEY REVOKED" in message
    assert f"{known}:2" in message


async def test_hashed_names_and_negated_patterns_are_read_as_openssh_reads_them(
    sshd: Sshd, tmp_path: Path, links: SshLinks
) -> None:
    known = tmp_path / "known_hosts"
    name = f"[127.0.0.1]:{sshd.port}"
    known.write_text(f"[127.0.0.1]:*,!{name} {key_fields(sshd)}\n")
    message = await refusal(direct(sshd, known), links)
    assert f"no ssh-ed25519 host key is known for {name}" in message

    known.write_text(f"{name} {key_fields(sshd)}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True)
    assert name not in known.read_text()
    await run_ok(direct(sshd, known))


# ---------------------------------------------------------------- the cipher


async def negotiated_cipher(host: Host) -> str:
    from tui.remote.sshdial import Dialer

    assert host.ssh is not None
    conn = await Dialer(host.ssh, "h", lambda conn, error: None).connect()
    try:
        return conn.get_extra_info("send_cipher")
    finally:
        conn.close()
        await conn.wait_closed()


async def test_aes_gcm_is_offered_first(sshd: Sshd, home: Path) -> None:
    ssh_config(home, sshd)
    # asyncssh makes ChaCha20 cipher contexts anew for every packet; AES-GCM keeps one
    assert await negotiated_cipher(direct(sshd, sshd.known_hosts)) == "aes128-gcm@openssh.com"


async def test_the_ssh_configs_ciphers_are_the_ones_offered(sshd: Sshd, home: Path) -> None:
    ssh_config(home, sshd, "Ciphers aes256-ctr", f"UserKnownHostsFile {sshd.known_hosts}")
    assert await negotiated_cipher(box(sshd)) == "aes256-ctr"
