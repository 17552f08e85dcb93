"""A scheduler/worker child of a simulated server (one per extra tensor-parallel rank).

Its command line starts with its process title (``VLLM::Worker_TP1``,
``sglang::scheduler_TP1``, ...) as argv[0], as setproctitle leaves the real engines'
workers, and ``/proc/self/comm`` holds the title's first 15 bytes. Run as
``TITLE -m tui.sim.worker TITLE --parent PID [--ignore-term]
[--orphan --gpu N --engine E --port P]``.

By default it holds no state and does nothing but wait to die with its parent, three
ways: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (Linux; the kernel kills it the moment the
parent thread that spawned it exits), end-of-file on the stdin pipe the parent holds
open, and a check that its parent pid has not changed (covers the race before prctl and
systems without it). With ``--orphan`` (the ``orphan-workers`` scenario) it outlives its
parent instead, holding its GPU memory (:mod:`tui.sim.orphan`).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import signal
import sys

PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1
PARENT_CHECK_SECONDS = 2.0


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def set_comm(title: str) -> None:
    """Set /proc/self/comm (15 bytes) so ``ps`` and ``top`` show the role."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, title.encode()[:15], 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tui.sim.worker")
    parser.add_argument("title")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--orphan", action="store_true")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--engine", default="")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.orphan:
        die_with_parent(args.parent)
    set_comm(args.title)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C means
    if args.orphan:
        from tui.sim.orphan import Holder, Orphan

        return Orphan(Holder(args.engine, args.port, args.gpu)).run()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stdin = sys.stdin.fileno()
    while True:
        readable, _, _ = select.select([stdin], [], [], PARENT_CHECK_SECONDS)
        if readable and not os.read(stdin, 4096):
            return 0  # parent closed the pipe or died
        if os.getppid() != args.parent:
            return 0


if __name__ == "__main__":
    raise SystemExit(main())
