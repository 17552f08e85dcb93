"""A real Docker daemon for tests, started by the harness itself, on loopback only.

:func:`start_dockerd` runs Debian's ``dockerd`` with its own ``--data-root``,
``--exec-root``, ``--pidfile`` and unix socket in a temporary folder, with
``--bridge=none --iptables=false --ip-forward=false``: it makes no bridge and
touches no firewall rule. No image registry is reachable, so the one image is
made here: ``docker import`` of an empty tarball. Containers bind-mount the
host's ``/usr``, ``/lib``, ``/lib64``, ``/bin``, ``/etc``, the Python that runs
the tests and the checkout read-only, and always run with ``--network host``
(never a bridge network: its addresses are private-range). The daemon and its
folders are removed by :meth:`Dockerd.stop`.

The docker CLI reaches this daemon through a ``docker`` shim (in
:attr:`Dockerd.bin_dir`) that sets ``DOCKER_HOST``; tests put that folder first on
the PATH of whatever runs the CLI (babysit's agent, locally or in an sshd session),
so babysit runs ``docker`` exactly as it would on a real host.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from support.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
IMAGE = "babysit-test:empty"
#: Read-only bind mounts that make the empty image a working system (and Python).
MOUNTS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")


class DockerUnavailable(RuntimeError):
    """dockerd cannot run here; the message is the daemon's own words."""


def docker_cli() -> str | None:
    """The docker client on this machine's PATH, if any."""
    return shutil.which("docker")


@dataclass
class Dockerd:
    root: Path
    socket: Path
    process: subprocess.Popen[bytes]
    bin_dir: Path
    log: Path
    cli: str
    _names: list[str] = field(default_factory=list)

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def env(self) -> dict[str, str]:
        """The environment a test's own docker commands run in."""
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run ``docker ARGS`` against this daemon; its output as text."""
        result = subprocess.run(
            [self.cli, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: {result.stderr.strip()}")
        return result

    def inspect(self, name: str, template: str) -> str:
        return self.docker("inspect", "--format", template, name).stdout.strip()

    def run_container(
        self,
        name: str,
        command: Sequence[str],
        *,
        options: Sequence[str] = (),
        env: dict[str, str] | None = None,
        detach: bool = True,
    ) -> str:
        """``docker run`` of ``command`` in the empty image with the host's system,
        this Python and the checkout mounted read-only; its container id."""
        mounts = [f"{m}:{m}:ro" for m in MOUNTS if Path(m).exists()]
        prefix = Path(sys.base_prefix).resolve()
        mounts += [f"{prefix}:{prefix}:ro", f"{REPO}:{REPO}:ro"]
        argv = ["run", *(["-d"] if detach else []), "--name", name, "--network", "host"]
        argv += ["--tmpfs", "/tmp"]
        for mount in mounts:
            argv += ["-v", mount]
        environment = {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        # The sims' GPU registry: the test's own folder, shared with the host's sims.
        sim_state = os.environ.get("BABYSIT_SIM_STATE")
        if sim_state:
            Path(sim_state).mkdir(parents=True, exist_ok=True)
            mounts.append(f"{sim_state}:{sim_state}")
            environment.setdefault("BABYSIT_SIM_STATE", sim_state)
        for key, value in environment.items():
            argv += ["-e", f"{key}={value}"]
        argv += ["-w", str(REPO), *options, IMAGE, *command]
        self._names.append(name)
        return self.docker(*argv).stdout.strip()

    def remove(self, name: str) -> None:
        self.docker("rm", "-f", "-v", name, check=False)

    def remove_all(self) -> None:
        """Remove every container this harness started (between tests)."""
        for name in self._names:
            self.remove(name)
        self._names.clear()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            ids = self.docker("ps", "-aq", check=False, timeout=20).stdout.split()
            if ids:
                self.docker("rm", "-f", "-v", *ids, check=False, timeout=60)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        # The daemon leaves overlay mounts under its data root when killed hard.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            mounts = Path("/proc/self/mounts").read_text().splitlines()
            for line in reversed(mounts):
                target = line.split()[1]
                if target.startswith(str(self.root)):
                    subprocess.run(["umount", "-l", target], check=False, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _shim(bin_dir: Path, cli: str, host: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "docker"
    shim.write_text(f'#!/bin/sh\nDOCKER_HOST={host}; export DOCKER_HOST\nexec "{cli}" "$@"\n')
    shim.chmod(0o755)


def start_dockerd(root: Path, timeout: float = 60.0) -> Dockerd:
    """Start a daemon under ``root`` (kept short: unix socket paths are limited to 107
    bytes) and make the test image; raises :class:`DockerUnavailable` with the
    daemon's own error when it cannot run."""
    daemon = shutil.which("dockerd") or (
        "/usr/sbin/dockerd" if Path("/usr/sbin/dockerd").exists() else None
    )
    cli = docker_cli()
    if daemon is None or cli is None:
        raise DockerUnavailable(
            "dockerd or the docker CLI is not installed (the test command installs docker.io)"
        )
    root.mkdir(parents=True, exist_ok=True)
    sock = root / "docker.sock"
    log = root / "dockerd.log"
    argv = [
        daemon,
        "--data-root", str(root / "data"),
        "--exec-root", str(root / "exec"),
        "--pidfile", str(root / "docker.pid"),
        "--host", f"unix://{sock}",
        "--bridge=none",
        "--iptables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--userland-proxy=false",
        "--log-level", "warn",
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    bin_dir = root / "bin"
    _shim(bin_dir, cli, f"unix://{sock}")
    dockerd = Dockerd(root, sock, process, bin_dir, log, cli)

    def answering() -> bool:
        if process.poll() is not None:
            return True
        return dockerd.docker("version", check=False, timeout=10).returncode == 0

    try:
        wait_until(answering, timeout, "dockerd to answer")
    except Exception:
        dockerd.stop()
        raise DockerUnavailable(_last_words(log)) from None
    if process.poll() is not None:
        words = _last_words(log)
        dockerd.stop()
        raise DockerUnavailable(words)
    empty = root / "empty.tar"
    with tarfile.open(empty, "w"):
        pass
    dockerd.docker("import", str(empty), IMAGE)
    return dockerd


def _last_words(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return "dockerd did not start: " + (lines[-1] if lines else "(it printed nothing)")


def wait_running(dockerd: Dockerd, name: str, timeout: float = 20.0) -> None:
    wait_until(
        lambda: dockerd.inspect(name, "{{.State.Running}}") == "true", timeout, f"{name} running"
    )


def sim_command(
    engine: str, port: int, *, load: float = 0.3, scenario: str = "healthy"
) -> list[str]:
    """A sim's command line inside a container (the Python that runs the tests)."""
    from support.servers import sim_argv

    argv = sim_argv(engine, port, load=load, scenario=scenario)
    argv[0] = str(Path(sys.executable))
    return argv
