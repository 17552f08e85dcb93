"""`babysit parse FILE|-`: parse a saved log offline (being built)."""

from __future__ import annotations

import argparse

from tui.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE|-")


def run(args: argparse.Namespace) -> int:
    raise UsageError("babysit parse is not available in this build")
