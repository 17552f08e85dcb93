"""Run babysit's agent once, by hand, as another user (through setpriv), the way a
transport starts it: the fixed bootstrap in argv, the source and the request on stdin."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tui.remote.agentcall import agent_argv, agent_input, split_output
from tui.remote.local import LocalTransport
from tui.remote.transport import Completed


def run_agent_as(user: str, group: str, request: dict[str, object]) -> dict:
    """The agent's JSON answer to ``request``, run as ``user``:``group``."""
    stdin, nonce = agent_input(request)
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    out = subprocess.run(
        [
            "setpriv",
            f"--reuid={user}",
            f"--regid={group}",
            "--clear-groups",
            python,
            *agent_argv(LocalTransport())[1:],
        ],
        input=stdin,
        capture_output=True,
        check=True,
        cwd="/",
    )
    answer = split_output(Completed((), 0, out.stdout, b""), nonce)
    assert answer.started, out.stdout[:200]
    return json.loads(answer.completed.stdout)
