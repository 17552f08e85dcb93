"""The suite's serving section: a canary's own cost on the host, and WEDGED on screen."""

from __future__ import annotations

from suite_table import Row, fmt, progress, run_script, verdict

#: Refreshes past wedged_after within which WEDGED is to show (issue 19).
REFRESHES = 2


def serving(quick: bool, raw: dict) -> list[Row]:
    """bench/serving.py's figures as rows (see its docstring for how each is taken)."""
    args = ["--canaries", "5" if quick else "10", "--runs", "2" if quick else "3"]
    data, text = run_script("serving.py", args, 600)
    raw["serving"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        last = text.strip().splitlines()[-1][:100] if text.strip() else "no output"
        return [Row("Serving: canary and WEDGED", "failed", last)]
    canary, wedged = data["canary"], data["wedged"]
    said, outside, wall = canary["agent_cpu_s"], canary["outside_cpu_s"], canary["wall_s"]
    work = f"Canary to a healthy SGLang sim, {canary['canaries']} in a row ({canary['ok']} ok)"
    rows = [
        Row(
            work,
            "agent CPU per canary, its answer's cpu_s, median (max), s",
            f"{fmt(said['median'], 3)} ({fmt(said['max'], 3)})" if said else "—",
            data={"agent_cpu_s": said},
        ),
        Row(
            work,
            "agent CPU per canary measured from outside (reaped child), median (max), s",
            f"{fmt(outside['median'], 3)} ({fmt(outside['max'], 3)})",
            data={"outside_cpu_s": outside},
        ),
        Row(
            work,
            "wall time per canary, median (max), s",
            f"{fmt(wall['median'], 2)} ({fmt(wall['max'], 2)})",
            data={"wall_s": wall},
        ),
    ]
    delay = wedged["delay_s"]
    runs = len(wedged["runs"])
    screen = (
        f"TUI in tmux, wedged vLLM sim under load, wedged_after {wedged['wedged_after_s']:g} s, "
        f"{wedged['refresh_s']:g} s refresh"
    )
    rows.append(
        Row(
            screen,
            f"last progress line → WEDGED on screen, minus wedged_after, median (max) of "
            f"{runs} runs, s",
            f"{fmt(delay['median'], 2)} ({fmt(delay['max'], 2)})" if delay else "failed",
            target=f"≤ {REFRESHES * wedged['refresh_s']:g} s ({REFRESHES} refreshes)"
            + verdict(delay["max"] <= REFRESHES * wedged["refresh_s"] if delay else None),
            data={"delay_s": delay},
        )
    )
    if delay:
        progress(f"  serving: WEDGED {delay['median']:.2f} s after wedged_after (median)")
    return rows
