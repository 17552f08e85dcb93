"""The launch diff in the words a narrow screen has room for: a flag name cut where it
still tells flags apart, a value cut into lines with nothing left out, and the whole diff
in one summary line (``launch: 4 flags missing ✗``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.core.launch.diff import FlagRow, FlagStatus, LaunchDiff

#: Each status's mark, as the launch pane draws it after a row.
MARKS = {
    FlagStatus.SAME: "✓",
    FlagStatus.MISSING: "✗",
    FlagStatus.CHANGED: "≠",
    FlagStatus.EXTRA: "+",
    FlagStatus.UNCHECKED: "?",
}

#: The summary's parts, worst first: (status, one flag, several flags).
_COUNTED = (
    (FlagStatus.MISSING, "flag missing", "flags missing"),
    (FlagStatus.CHANGED, "flag changed", "flags changed"),
    (FlagStatus.EXTRA, "flag not asked for", "flags not asked for"),
    (FlagStatus.SAME, "as intended", "as intended"),
    (FlagStatus.UNCHECKED, "unchecked", "unchecked"),
)


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle when it is longer.

    The end is kept longer than the start: flags that share a prefix
    (``--speculative-num-steps``, ``--speculative-eagle-topk``) differ at their end, so
    ``--spe…-num-steps`` and ``--spe…agle-topk`` still tell them apart."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 3
    tail = width - 1 - head
    return f"{text[:head]}…{text[len(text) - tail :]}"


def flag_names(flags: Sequence[str], width: int) -> list[str]:
    """Each flag in at most ``width`` characters, cut in the middle, and never two alike.

    Two names that a cut would make the same keep their whole length instead (the pane
    then draws them longer than the column rather than alike)."""
    cut = [cut_middle(flag, width) for flag in flags]
    seen: dict[str, int] = {}
    for name in cut:
        seen[name] = seen.get(name, 0) + 1
    return [
        flag if seen[name] > 1 and flag != name else name
        for flag, name in zip(flags, cut, strict=True)
    ]


#: Characters a value's line may end after (a path's parts, a name's words, a list's items).
BREAKS = "/-_,"


def value_lines(text: str, width: int) -> list[str]:
    """``text`` cut into lines of at most ``width`` characters, at a space or after one of
    :data:`BREAKS` where one is in the line's second half, else anywhere: every
    character is kept (only the spaces at a cut are dropped)."""
    width = max(1, width)
    lines: list[str] = []
    rest = text
    while len(rest) > width:
        space = rest.rfind(" ", 0, width + 1)
        after = max(rest.rfind(c, 0, width) for c in BREAKS) + 1
        cut = max(space, after)
        if cut < width // 2 or cut <= 0:
            cut = width
        lines.append(rest[:cut].rstrip(" "))
        rest = rest[cut:].lstrip(" ")
    lines.append(rest)
    return lines


def running_text(row: FlagRow) -> str | None:
    """What the running server has for ``row``: the server's own report first, then its
    command line; with the engine's aliasing said (``EAGLE (SGLang runs NEXTN as
    EAGLE)``)."""
    running = row.reported if row.reported is not None else row.actual
    if row.status is FlagStatus.MISSING:
        return "missing"
    if row.note is not None and running is not None:
        return f"{running} ({row.note})"
    return running


def launch_summary(diff: LaunchDiff | None, note: str | None = None) -> tuple[str, bool]:
    """The launch diff in one line (``launch: 4 flags missing ✗, 12 as intended ✓``), and
    whether it shows a problem (a flag missing). ``note`` says why there is no diff."""
    if diff is None or not diff.rows:
        return f"launch: {note or 'no run to compare with'}", False
    counts = {status: 0 for status in FlagStatus}
    for row in diff.rows:
        counts[row.status] += 1
    parts = [
        f"{counts[status]} {one if counts[status] == 1 else several} {MARKS[status]}"
        for status, one, several in _COUNTED
        if counts[status]
    ]
    if counts[FlagStatus.SAME] == len(diff.rows):
        parts = [f"all {len(diff.rows)} flags as intended ✓"]
    return "launch: " + ", ".join(parts), counts[FlagStatus.MISSING] > 0
