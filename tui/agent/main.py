"""What every mode's agent does first: say it started, then run its mode.

A mode's bundle (tui/remote/bundle.py) ends with a call of :func:`main` naming its
mode and the function that runs it.
"""

import json
import os
import sys

from .clib import c_library
from .protocol import AGENT_MARK, MODE_FOLLOW

#: The exit status of an agent asked for another mode than the one it carries.
EXIT_WRONG_MODE = 2


def give_back_memory():
    """Return to the system what compiling this script took (about 3 MiB, glibc only):
    a long-lived agent should weigh no more than it needs."""
    try:
        c_library()[1].malloc_trim(0)
    except (OSError, AttributeError):
        pass


def say_started(nonce):
    """The first bytes of our output, so whoever reads it can skip what a login
    shell printed before we ran (see tui/remote/agentcall.py: start_mark)."""
    if nonce:
        os.write(1, b"\x1e" + AGENT_MARK.encode() + b":" + nonce.encode("ascii") + b"\n")


def main(argv, mode, run, trim=False):
    """Run ``run`` on the request in ``argv``, which must ask for ``mode`` (a request
    without a mode asks to follow). ``trim``: a long-lived mode gives back first what
    compiling the agent took."""
    args = json.loads(argv[0])
    say_started(args.get("nonce"))
    asked = args.get("mode") or MODE_FOLLOW
    if asked != mode:
        sys.stderr.write("babysit's agent for %s was asked for %s\n" % (mode, asked))
        return EXIT_WRONG_MODE
    if trim:
        give_back_memory()
    return run(args)
