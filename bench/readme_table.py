"""The README's Performance table, made from one ``bench/run`` result.

    .venv/bin/python bench/readme_table.py bench/results/2026-12-02-vm.json

Prints the run's heading line (date, machine, peers, minutes) and its rows as a
Markdown table, every cell as the run printed it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = (
    ("Work", lambda r: r["work"]),
    ("Measure", lambda r: r["measure"]),
    ("babysit", lambda r: r["babysit"]),
    ("ssh tail -F", lambda r: r["peers"].get("tail -F", "")),
    ("lnav", lambda r: r["peers"].get("lnav", "")),
    ("toolong", lambda r: r["peers"].get("toolong", "")),
    ("Baseline", lambda r: r.get("baseline", "")),
    ("babysit ÷ peer", lambda r: r.get("ratio", "")),
    ("Target", lambda r: r.get("target", "")),
)


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(result: dict) -> str:
    rows = [r for r in result["rows"] if r.get("measure") != "failed"]
    keep = [(name, get) for name, get in COLUMNS if any(get(r) for r in rows)]
    lines = ["| " + " | ".join(name for name, _ in keep) + " |"]
    lines.append("|" + "|".join("---" for _ in keep) + "|")
    lines += ["| " + " | ".join(cell(get(r)) for _, get in keep) + " |" for r in rows]
    return "\n".join(lines)


def heading(result: dict, path: Path) -> str:
    m = result["machine"]
    peers = ", ".join(
        f"{name} {p['version']}" for name, p in m.get("peers", {}).items() if p.get("version")
    )
    return (
        f"A real run: {result['date'][:10]}, {m.get('cores')} cores, {m.get('cpu')}, "
        f"{m.get('os')}, Python {m.get('python')}; {peers}; "
        f"{result['elapsed_seconds'] / 60:.1f} min, babysit {m.get('babysit')} "
        f"(`{path.as_posix()}`)."
    )


def main() -> int:
    path = Path(sys.argv[1])
    result = json.loads(path.read_text())
    print(heading(result, path))
    print()
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
