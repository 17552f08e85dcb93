"""Bytes sent to a host to start the agent, per mode: its script, compressed, on stdin.

For each mode: the modules its bundle carries, the script's size, the compressed
bytes the bootstrap reads (what travels on every agent start: each follower start
and reconnect, each probe agent start), and the whole stdin of a request with no
arguments. Beside them, the single agent file the package was cut from, when git
still has it (``--before REV``: by default the last commit that held
tui/remote/agent.py), which was sent whole for every mode.

    .venv/bin/python bench/agent_payload.py [--before REV] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tui.remote.agentcall import agent_input, agent_source
from tui.remote.bundle import MODES, bundle, modules_of

#: The one-file agent the package replaced.
OLD_PATH = "tui/remote/agent.py"


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
    )
    return done.stdout if done.returncode == 0 else ""


def old_agent(rev: str | None) -> tuple[str, int] | None:
    """(the revision read, compressed bytes) of the one-file agent, or None."""
    if rev is None:
        removed = git("rev-list", "-1", "HEAD", "--", OLD_PATH).strip()
        if not removed:
            return None
        rev = f"{removed}^"
    text = git("show", f"{rev}:{OLD_PATH}")
    if not text:
        return None
    return rev, len(zlib.compress(text.encode("utf-8"), 9))


def measure(before: str | None) -> dict[str, object]:
    rows = []
    for name, mode in MODES.items():
        stdin, _ = agent_input({"mode": name})
        rows.append(
            {
                "mode": name,
                "modules": modules_of(mode),
                "script_bytes": len(bundle(name).encode("utf-8")),
                "compressed_bytes": len(agent_source(name)),
                "stdin_bytes": len(stdin),
            }
        )
    old = old_agent(before)
    return {
        "modes": rows,
        "before": None if old is None else {"rev": old[0], "compressed_bytes": old[1]},
    }


def render(result: dict[str, object]) -> str:
    before = result["before"]
    old = before["compressed_bytes"] if isinstance(before, dict) else None
    head = ("mode", "modules", "script B", "sent B", "stdin B", "vs one file")
    lines = ["{:<13} {:>7} {:>9} {:>8} {:>8} {:>12}".format(*head)]
    for row in result["modes"]:  # type: ignore[union-attr]
        ratio = f"{row['compressed_bytes'] / old:.0%}" if old else "n/a"
        lines.append(
            f"{row['mode']:<13} {len(row['modules']):>7} {row['script_bytes']:>9,} "
            f"{row['compressed_bytes']:>8,} {row['stdin_bytes']:>8,} {ratio:>12}"
        )
    if isinstance(before, dict):
        lines.append(
            f"one file ({OLD_PATH} at {before['rev'][:12]}): {old:,} B sent for every mode"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="REV", help="git revision of the one-file agent")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    result = measure(args.before)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
