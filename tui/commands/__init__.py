"""One module per CLI verb: each has configure(parser) and run(args) -> exit status."""

from __future__ import annotations

import json
import sys


def say(json_out: bool, kind: str, message: str, **data: object) -> None:
    """One step of a long verb: a JSON line on stdout, or ``babysit: …`` on stderr."""
    if json_out:
        print(json.dumps({"type": kind, "message": message, **data}), flush=True)
    else:
        print(f"babysit: {message}", file=sys.stderr, flush=True)
