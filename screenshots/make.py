"""Regenerate the SVG screenshots in this folder from the snapshot tests' own app setups.

The same fixed rows, verdicts, reports and frozen clock as tests/test_app_snapshots.py
and tests/test_app_actions.py, so a screenshot never shows something the tests do
not check. Run it after a change to the screens:

    .venv/bin/python screenshots/make.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ["TZ"] = "UTC"
time.tzset()

import test_app_snapshots as snaps  # noqa: E402

SIZE = snaps.SIZE


async def shoot(name: str, app, keys: tuple[str, ...] = ()) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await snaps.rows_shown(pilot)
        if keys:
            await pilot.press(*keys)
            await pilot.pause(0.3)
        await pilot.pause()
        svg = app.export_screenshot(title="babysit")
    (HERE / f"{name}.svg").write_text(svg)
    print(f"wrote screenshots/{name}.svg")


async def main() -> None:
    live = snaps.probed(writes=snaps.INODE, ready=True)
    await shoot("host-live", snaps.make_app(live))
    await shoot("host-starting", snaps.make_app(snaps.probed(writes=snaps.INODE, ready=False)))
    await shoot("host-stale", snaps.make_app(snaps.probed(writes=snaps.OLD_INODE, ready=None)))
    await shoot(
        "host-dead", snaps.make_app(snaps.probed(writes=None, ready=None, mtime=snaps.NOW - 180))
    )
    await shoot(
        "host-search", snaps.make_app(live), ("slash", *"accept len: 3.9", "enter", "N", "N")
    )
    await shoot("host-kill-modal", snaps.make_app(live), ("k",))


if __name__ == "__main__":
    asyncio.run(main())
