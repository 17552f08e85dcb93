"""A real OpenSSH sshd on 127.0.0.1 for tests, with keys made for the run.

Nothing here reads or writes the user's own ~/.ssh: host keys, client keys,
authorized_keys and known_hosts all live in a temporary folder, and the
sessions' PATH starts with that folder's ``bin/`` (the ``pct`` stand-in and any
shims a test puts there). The sessions' HOME is that folder's ``home/``, so their
login shell reads the test's own startup files, never the machine user's: a
``.bashrc`` there (pyenv's rehash, say, racing between concurrent logins) would
print into every command's stderr. A test that wants a chatty shell makes one.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from support.pct_standin import start_ticks
from support.ports import free_port
from support.wait import wait_until

SUPPORT = Path(__file__).resolve().parent
SESSION_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PCT_NODE = "pve-test"


def find_sshd() -> str | None:
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(p, os.X_OK)), None
    )


def keygen(path: Path, comment: str) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class Sshd:
    """A running test sshd and everything a client needs to reach it."""

    root: Path
    port: int
    user: str
    process: subprocess.Popen[bytes]
    client_key: Path
    wrong_key: Path
    known_hosts: Path
    host_key_line: str
    log: Path
    bin_dir: Path
    pct_root: Path

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def accepted_logins(self) -> int:
        """How many connections sshd has authenticated (one per SSH connection)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.count("Accepted publickey for")

    def session_processes(self) -> list[psutil.Process]:
        """The per-connection sshd processes (children of the listener)."""
        with contextlib.suppress(psutil.NoSuchProcess):
            return psutil.Process(self.process.pid).children(recursive=False)
        return []

    def kill_sessions(self) -> int:
        """Kill every connection's sshd process, as a dropped network or a crash would."""
        killed = 0
        for child in self.session_processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                child.send_signal(signal.SIGKILL)
                killed += 1
        return killed

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The host unreachable for a while: the listener and every session stopped,
        then the same sshd (same port, keys and config) started again."""
        self.kill_sessions()
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        try:
            yield
        finally:
            self.process = _spawn(self.root / "sshd_config", self.log, self.port)

    def add_container(self, vmid: int, *, stopped: bool = False) -> None:
        lxc = self.pct_root / "nodes" / PCT_NODE / "lxc"
        lxc.mkdir(parents=True, exist_ok=True)
        (lxc / f"{vmid}.conf").write_text("arch: amd64\nhostname: ct\nostype: debian\n")
        stop_marker = lxc / f"{vmid}.stopped"
        if stopped:
            stop_marker.write_text("")
            self._end_container_processes(lxc / f"{vmid}.procs")
        elif stop_marker.exists():
            stop_marker.unlink()

    @staticmethod
    def _end_container_processes(procs: Path) -> None:
        """SIGKILL every process the stand-in started in the container, with its
        children, as stopping a real container does (each checked by start time)."""
        if not procs.exists():
            return
        for line in procs.read_text().splitlines():
            pid, ticks = line.split()
            with contextlib.suppress(psutil.Error, OSError, IndexError):
                if start_ticks(int(pid)) != ticks:
                    continue  # gone, and the pid is someone else's now
                process = psutil.Process(int(pid))
                for member in [*process.children(recursive=True), process]:
                    with contextlib.suppress(psutil.Error):
                        member.kill()
        procs.unlink()

    def host_yaml(self, name: str, **options: object) -> str:
        """A hosts.yaml host entry reaching this sshd (``options`` override keys)."""
        entry: dict[str, object] = {
            "ssh": self.target,
            "identity_file": str(self.client_key),
            "known_hosts": str(self.known_hosts),
            "connect_timeout": 5,
        }
        entry.update(options)
        return _yaml_entry(name, entry)

    def pct_host_yaml(self, name: str, vmid: int, **options: object) -> str:
        entry: dict[str, object] = {
            "pct": {"node": self.target, "vmid": vmid},
            "identity_file": str(self.client_key),
            "known_hosts": str(self.known_hosts),
            "connect_timeout": 5,
        }
        entry.update(options)
        return _yaml_entry(name, entry)

    def stop(self) -> None:
        self.kill_sessions()
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _yaml_entry(name: str, entry: dict[str, object]) -> str:
    import yaml

    return yaml.safe_dump({name: entry}, default_flow_style=False, sort_keys=False)


def _spawn(config: Path, log: Path, port: int) -> subprocess.Popen[bytes]:
    """Start sshd with ``config`` and wait until it listens on ``port``."""
    sshd = find_sshd()
    assert sshd is not None
    if os.geteuid() == 0:
        # Privilege separation needs this directory when sshd runs as root; Debian's
        # service unit creates it at boot, which a container or CI runner never does.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    process = subprocess.Popen(
        [sshd, "-D", "-f", str(config), "-E", str(log)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def listening() -> bool:
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            detail = log.read_text() if log.exists() else ""
            raise RuntimeError(f"sshd exited with {process.returncode}: {err}{detail}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        return False

    try:
        wait_until(listening, 10, "sshd to listen", step=0.05)
    except AssertionError:
        process.kill()
        raise
    return process


def start_sshd(
    root: Path,
    *,
    max_sessions: int | None = None,
    extra: Sequence[str] = (),
    host_ca: Path | None = None,
) -> Sshd:
    """Start an sshd under ``root``, set as OpenSSH ships it (MaxSessions 10) unless
    ``max_sessions`` says otherwise; ``extra`` lines are added to its config. With
    ``host_ca`` (a private key), it also presents a host certificate that key signed
    for the principal 127.0.0.1."""
    sshd = find_sshd()
    if sshd is None:
        raise RuntimeError(
            "OpenSSH sshd not found: the test command installs it (apt-get install openssh-server)"
        )
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "ssh_host_ed25519_key"
    host_pub = keygen(host_key, "babysit-test-host")
    certificate: list[str] = []
    if host_ca is not None:
        sign = ["ssh-keygen", "-q", "-s", str(host_ca), "-I", "babysit-test-host", "-h"]
        subprocess.run([*sign, "-n", "127.0.0.1", str(host_key.with_suffix(".pub"))], check=True)
        certificate = [f"HostCertificate {root / 'ssh_host_ed25519_key-cert.pub'}"]
    client_key = root / "id_client"
    client_pub = keygen(client_key, "babysit-test-client")
    wrong_key = root / "id_wrong"
    keygen(wrong_key, "babysit-test-wrong")
    authorized = root / "authorized_keys"
    authorized.write_text(client_pub + "\n")
    authorized.chmod(0o600)
    port = free_port()
    known_hosts = root / "known_hosts"
    key_type, key_b64 = host_pub.split()[:2]
    host_key_line = f"[127.0.0.1]:{port} {key_type} {key_b64}"
    known_hosts.write_text(host_key_line + "\n")

    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    pct = bin_dir / "pct"
    pct.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SUPPORT / "pct_standin.py"}" "$@"\n')
    pct.chmod(0o755)
    pct_root = root / "pve"
    pct_root.mkdir(exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)

    log = root / "sshd.log"
    config = root / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                *certificate,
                f"PidFile {root / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "StrictModes no",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "LogLevel VERBOSE",
                *([f"MaxSessions {max_sessions}"] if max_sessions is not None else []),
                "MaxStartups 50",
                "ClientAliveInterval 0",
                f"SetEnv PATH={bin_dir}:{SESSION_PATH} HOME={home} BABYSIT_PCT_ROOT={pct_root} "
                f"BABYSIT_PCT_NODE={PCT_NODE}",
                *extra,
                "",
            ]
        )
    )
    process = _spawn(config, log, port)
    return Sshd(
        root=root,
        port=port,
        user=getpass.getuser(),
        process=process,
        client_key=client_key,
        wrong_key=wrong_key,
        known_hosts=known_hosts,
        host_key_line=host_key_line,
        log=log,
        bin_dir=bin_dir,
        pct_root=pct_root,
    )
