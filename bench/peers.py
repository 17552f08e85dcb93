"""The tools babysit is compared with, installed by the suite itself, and the machine it ran on.

Debian's packages (tmux, lnav, OpenSSH) come from apt-get; toolong comes from
PyPI into its own venv under ``bench/.peers/`` (ignored by git), so babysit's
venv never sees toolong's textual. A peer that cannot be installed is not an
error: :func:`ensure` returns why, and the suite prints that in its column.

    .venv/bin/python bench/peers.py     # install what is missing, print versions
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = ROOT / "bench" / ".peers"
TOOLONG_VENV = PEERS_DIR / "toolong"
TOOLONG_VERSION = "1.5.0"
#: Debian package -> the command it must provide.
DEBIAN = {"tmux": "tmux", "lnav": "lnav", "openssh-server": "sshd", "openssh-client": "ssh"}


@dataclass
class Peer:
    name: str
    path: str | None = None
    version: str | None = None
    #: Why it is missing (None when installed).
    missing: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.path is not None and self.missing is None


def _which(command: str) -> str | None:
    found = shutil.which(command)
    if found:
        return found
    for folder in ("/usr/sbin", "/usr/local/sbin", "/sbin"):
        candidate = Path(folder) / command
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _run(argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
        check=False,
    )


def _tail_of(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no output"


def _apt_install(packages: list[str], log: list[str]) -> dict[str, str]:
    """Install ``packages`` one by one; {package: why it failed} for those that did not."""
    failed: dict[str, str] = {}
    if not packages:
        return failed
    as_root: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            return {p: "not root and no sudo to run apt-get" for p in packages}
        as_root = ["sudo", "-n"]
    if shutil.which("apt-get") is None:
        return {p: "no apt-get on this machine (not Debian)" for p in packages}
    update = _run([*as_root, "apt-get", "update", "-qq"])
    log.append(f"apt-get update: exit {update.returncode}")
    for package in packages:
        result = _run(
            [*as_root, "apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
        )
        log.append(f"apt-get install {package}: exit {result.returncode}")
        if result.returncode != 0:
            failed[package] = f"apt-get install {package} failed: {_tail_of(result.stderr)}"
    return failed


def _version(argv: list[str], pattern: str = r"[\d][\w.+~-]*") -> str | None:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (result.stdout + result.stderr).strip()
    match = re.search(pattern, text)
    return match.group(0) if match else (text.splitlines()[0] if text else None)


def _debian_version(package: str) -> str | None:
    if shutil.which("dpkg-query") is None:
        return None
    result = _run(["dpkg-query", "-W", "-f=${Version}", package], timeout=20)
    return result.stdout.strip() or None if result.returncode == 0 else None


def _ensure_toolong(log: list[str]) -> Peer:
    peer = Peer("toolong")
    tl = TOOLONG_VENV / "bin" / "tl"
    if not tl.exists():
        PEERS_DIR.mkdir(parents=True, exist_ok=True)
        made = _run([sys.executable, "-m", "venv", "--clear", str(TOOLONG_VENV)])
        log.append(f"venv for toolong: exit {made.returncode}")
        if made.returncode != 0:
            peer.missing = f"could not make a venv for it: {_tail_of(made.stderr)}"
            return peer
        pip = _run(
            [
                str(TOOLONG_VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                f"toolong=={TOOLONG_VERSION}",
            ]
        )
        log.append(f"pip install toolong=={TOOLONG_VERSION}: exit {pip.returncode}")
        if pip.returncode != 0 or not tl.exists():
            peer.missing = f"pip install toolong failed: {_tail_of(pip.stderr)}"
            return peer
    peer.path = str(tl)
    peer.version = _version([str(tl), "--version"], r"\d+\.\d+[\w.]*")
    textual = _run(
        [
            str(TOOLONG_VENV / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('textual'))",
        ],
        timeout=30,
    ).stdout.strip()
    if textual:
        peer.notes.append(f"textual {textual}")
    return peer


def ensure(install: bool = True) -> tuple[dict[str, Peer], list[str]]:
    """Every peer (and the harness's tmux and OpenSSH), installed if missing and allowed."""
    log: list[str] = []
    missing_pkgs = [pkg for pkg, cmd in DEBIAN.items() if _which(cmd) is None]
    failed = (
        _apt_install(missing_pkgs, log)
        if install
        else {p: "not installed (--no-install)" for p in missing_pkgs}
    )
    peers: dict[str, Peer] = {}
    for package, command in DEBIAN.items():
        peer = Peer(package)
        path = _which(command)
        if path is None:
            peer.missing = failed.get(package, f"`{command}` not found after apt-get install")
        else:
            peer.path = path
            peer.version = _debian_version(package)
        peers[package] = peer
    if install:
        peers["toolong"] = _ensure_toolong(log)
    else:
        tl = TOOLONG_VENV / "bin" / "tl"
        peers["toolong"] = (
            _ensure_toolong(log) if tl.exists() else Peer("toolong", missing="not installed")
        )
    peers["coreutils"] = Peer(
        "coreutils (tail)",
        path=_which("tail"),
        version=_debian_version("coreutils") or _version(["tail", "--version"], r"\d+\.\d+"),
    )
    return peers, log


def machine(peers: dict[str, Peer]) -> dict[str, object]:
    """What this run ran on: cores, CPU, memory, OS, Python, babysit, each peer's version."""
    cpu_model = None
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    mem_gib = None
    with open("/proc/meminfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    os_name = None
    if Path("/etc/os-release").exists():
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    from importlib.metadata import PackageNotFoundError, version

    from tui import __version__ as babysit_version

    deps = {}
    for dep in ("textual", "asyncssh"):
        try:
            deps[dep] = version(dep)
        except PackageNotFoundError:
            deps[dep] = None

    ssh = peers.get("openssh-client")
    return {
        "host": platform.node(),
        "cores": os.cpu_count(),
        "cpu": cpu_model,
        "arch": platform.machine(),
        "memory_gib": mem_gib,
        "os": os_name,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "babysit": f"{babysit_version} ({commit}{', modified tree' if dirty else ''})",
        "babysit_deps": deps,
        "peers": {
            name: (
                {"version": p.version, "path": p.path, "notes": p.notes}
                if p.ok
                else {"missing": p.missing}
            )
            for name, p in peers.items()
        },
        "openssh": _version(["ssh", "-V"], r"OpenSSH_[\w.]+") if ssh and ssh.ok else None,
    }


def describe(info: dict[str, object]) -> str:
    peers = info["peers"]
    assert isinstance(peers, dict)
    parts = []
    for name in ("lnav", "toolong", "tmux", "coreutils"):
        entry = peers.get(name, {})
        if "missing" in entry:
            parts.append(f"{name}: missing ({entry['missing']})")
        else:
            extra = f", {', '.join(entry['notes'])}" if entry.get("notes") else ""
            parts.append(f"{name} {entry.get('version')}{extra}")
    return (
        f"{info['cores']} cores ({info['cpu']}, {info['arch']}), {info['memory_gib']} GiB, "
        f"{info['os']}, kernel {info['kernel']}; Python {info['python']}; "
        f"babysit {info['babysit']} with textual {info['babysit_deps']['textual']}; "
        f"{info['openssh']}; " + "; ".join(parts)
    )


if __name__ == "__main__":
    found, steps = ensure()
    for step in steps:
        print(step)
    print(json.dumps({k: asdict(v) for k, v in found.items()}, indent=2))
    print(describe(machine(found)))
