"""`babysit agent --print MODE`: the exact script babysit runs on a host for MODE.

What it prints is, byte for byte, what the host's ``python3 -I -S`` decompresses
and execs for a request of that mode (see tui/remote/bundle.py), so an operator
can read every line before letting babysit near a host.
"""

from __future__ import annotations

import argparse
import sys
import zlib

from tui.errors import UsageError
from tui.remote.agentcall import agent_source
from tui.remote.bundle import MODES

DESCRIPTION = (
    "Print the agent babysit sends to a host for MODE: the one script that host's "
    "python3 runs, exactly as it runs it (it is sent on each use, never installed). "
    f"Modes: {', '.join(MODES)}."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument(
        "--print",
        dest="mode",
        metavar="MODE",
        required=True,
        help=f"the mode whose script to print: {', '.join(MODES)}",
    )


def script(mode: str) -> bytes:
    """What the host execs for ``mode``: the payload sent, decompressed."""
    if mode not in MODES:
        raise UsageError(f"the agent has no mode {mode!r}; its modes: {', '.join(MODES)}")
    return zlib.decompress(agent_source(mode))


def run(args: argparse.Namespace) -> int:
    text = script(args.mode)
    sys.stdout.flush()
    sys.stdout.buffer.write(text)
    sys.stdout.buffer.flush()
    return 0
