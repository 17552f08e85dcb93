"""`babysit demo`: a local fleet of simulated servers that shows every trap (being built)."""

from __future__ import annotations

import argparse

from tui.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--stop", action="store_true")


def run(args: argparse.Namespace) -> int:
    raise UsageError("babysit demo is not available in this build")
