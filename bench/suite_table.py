"""The suite's table: one row per figure, babysit beside its peers, and how it is printed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: This folder, and the checkout it is in.
BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEER_COLUMNS = ("tail -F", "lnav", "toolong")


# --------------------------------------------------------------------------- table


@dataclass
class Row:
    work: str
    measure: str
    babysit: str
    peers: dict[str, str] = field(default_factory=dict)
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    #: Numbers behind the cells, for the JSON.
    data: dict[str, object] = field(default_factory=dict)


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if abs(x) >= 10_000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def ratio_text(babysit: float | None, peers: dict[str, float | None]) -> str:
    parts = []
    for name, value in peers.items():
        if (
            babysit is None
            or value is None
            or value == 0
            or math.isnan(value)
            or math.isnan(babysit)
        ):
            continue
        parts.append(f"{babysit / value:.2g}× {name}")
    return "; ".join(parts)


def verdict(ok: bool | None) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def render(rows: list[Row]) -> str:
    headers = ["Work", "Measure", "babysit", *PEER_COLUMNS, "Baseline", "babysit ÷ peer", "Target"]
    table = [headers]
    for row in rows:
        table.append(
            [
                row.work,
                row.measure,
                row.babysit,
                *(row.peers.get(c, "") for c in PEER_COLUMNS),
                row.baseline,
                row.ratio,
                row.target,
            ]
        )
    # Drop columns that are empty in every row.
    keep = [i for i in range(len(headers)) if any(r[i] for r in table[1:])]
    table = [[r[i] for i in keep] for r in table]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = []
    for n, r in enumerate(table):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_script(name: str, args: list[str], timeout: float) -> tuple[dict | None, str]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    try:
        result = subprocess.run(
            [sys.executable, str(BENCH / name), *args, "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            check=False,
        )
        text = result.stdout + result.stderr
        data = json.loads(out.read_text()) if out.stat().st_size else None
        return data, text
    except subprocess.TimeoutExpired as error:
        return None, f"timed out after {timeout:.0f} s: {error.stdout or ''}"
    finally:
        out.unlink(missing_ok=True)
