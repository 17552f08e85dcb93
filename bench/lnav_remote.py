"""lnav following a remote file (``lnav HOST:/path``) over the test sshd, timed like tail_latency.

lnav reaches a remote file by copying its own small ``tailer`` program to the
host over ssh, running it there, and mirroring the file into
``$TMPDIR/lnav-user-UID-work/remotes/HOST_/path``, which it then indexes and
shows. lnav runs in tmux with an isolated HOME and TMPDIR; its ssh command is a
wrapper that adds ``-F`` with an ssh config naming the test sshd's port, user,
key and known_hosts (so nothing in ~/.ssh is read or written), and its tailer
is copied into a scratch folder, not the user's home.

Delivery time of a line is when it lands in lnav's local mirror (polled every
2 ms), the same point as babysit's follower handing rows to its reader and the
ssh client's pipe for ``ssh tail -F``. CPU: the client is lnav and its ssh
processes (lnav's TUI included: it runs in tmux); the host side is the tailer
and the sshd sessions serving it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screens import Tmux, cpu_of, lnav_env, tree_cpu
from tail_latency import WRITER, Result, parse, percentile, session_tree


def prepare(sshd, work: Path) -> tuple[dict[str, str], str]:
    """(lnav's environment, the host name to give it) for reaching ``sshd``."""
    work.mkdir(parents=True, exist_ok=True)
    ssh_config = work / "ssh_config"
    ssh_config.write_text(
        "Host benchhost\n"
        "  HostName 127.0.0.1\n"
        f"  Port {sshd.port}\n"
        f"  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n"
        "  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n"
    )
    wrapper = work / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec ssh -F "{ssh_config}" "$@"\n')
    wrapper.chmod(0o755)
    remote = work / "remote"
    remote.mkdir(exist_ok=True)
    env = lnav_env(work / "home")
    configs = Path(env["HOME"]) / ".lnav" / "configs" / "bench"
    configs.mkdir(parents=True, exist_ok=True)
    (configs / "config.json").write_text(
        json.dumps(
            {
                "tuning": {
                    "remote": {
                        "ssh": {
                            "command": str(wrapper),
                            "transfer-command": (
                                f"cat > {remote}/{{0:}} && chmod ugo+rx {remote}/{{0:}}"
                            ),
                            "start-command": f"bash -c {remote}/{{0:}}",
                        }
                    }
                }
            }
        )
    )
    return env, "benchhost"


def mirror_of(env: dict[str, str], path: Path) -> Path | None:
    for candidate in Path(env["TMPDIR"]).glob("lnav-user-*-work/remotes/*"):
        mirrored = Path(str(candidate) + str(path))
        if mirrored.exists():
            return mirrored
    return None


async def run_lnav_remote(
    sshd, log: Path, *, rate: int, seconds: float, work: Path, lnav: str
) -> Result:
    env, host = prepare(sshd, work)
    log.write_text("start\n")  # noqa: ASYNC240 - before anything runs
    tmux = Tmux(work / "tmux.sock")
    tmux.start([lnav, f"{host}:{log}"], env=env)
    try:
        deadline = time.monotonic() + 30
        mirror = None
        while time.monotonic() < deadline:
            mirror = mirror_of(env, log)
            if mirror is not None and mirror.read_text(errors="replace").startswith("start"):
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(
                "lnav never mirrored the remote file within 30 s: "
                + " ".join(tmux.screen().split())[-160:]
            )
        await asyncio.sleep(1.0)
        assert tmux.pane_pid is not None and mirror is not None
        sessions = session_tree(sshd)
        tailer = [p for p in sessions if "tailer" in " ".join(p.cmdline())]
        cpu0 = (tree_cpu(tmux.pane_pid), cpu_of(tailer), cpu_of(sessions))
        latencies: list[float] = []
        seen: set[int] = set()
        stop = asyncio.Event()

        async def consume() -> None:
            with mirror.open("rb") as handle:
                pending = b""
                while not stop.is_set():
                    chunk = handle.read()
                    if chunk:
                        now = time.time_ns()
                        pending += chunk
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            parse(line.decode(errors="replace"), now, latencies, seen)
                    else:
                        await asyncio.sleep(0.002)

        reader = asyncio.create_task(consume())
        writer = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WRITER,
            str(log),
            str(rate),
            str(seconds),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await writer.communicate()
        sent = int(out.decode().strip() or 0)
        deadline = time.monotonic() + 5
        while len(seen) < sent and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        cpu1 = (tree_cpu(tmux.pane_pid), cpu_of(tailer), cpu_of(sessions))
        stop.set()
        await reader
    finally:
        tmux.stop()
    return Result(
        "lnav",
        rate,
        len(seen),
        sent,
        percentile(latencies, 0.5),
        percentile(latencies, 0.95),
        {
            "client": cpu1[0] - cpu0[0],
            "agent/tail": cpu1[1] - cpu0[1],
            "sshd": cpu1[2] - cpu0[2] - (cpu1[1] - cpu0[1]),
        },
    )
