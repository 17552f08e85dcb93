"""Finding the demo fleets of this user, and stopping them.

A pointer to each fleet (``<state dir>/<folder name>.json``) lets ``babysit demo
--stop`` find a kept fleet, or one whose babysit died without cleaning up. Only the
verified processes a fleet recorded (:mod:`tui.demo.fleetprocs`), the workers a
story's server left behind, and the runs babysit relaunched for its services, are
stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tui.demo.fleetprocs import Recorded, terminate, with_descendants
from tui.errors import BabysitError
from tui.procfs import boot_id, start_ticks

#: Environment variable naming the folder of pointers to running fleets.
STATE_ENV = "BABYSIT_DEMO_STATE"
FOLDER_PREFIX = "babysit-demo-"
#: fleet.json's list of the workers a story's server leaves behind.
WORKERS = "workers"


class DemoError(BabysitError):
    """The demo could not start or stop its fleet."""

    title = "demo"


def state_dir() -> Path:
    """The folder of pointers to fleets: $BABYSIT_DEMO_STATE, else
    $XDG_RUNTIME_DIR/babysit-demos, else $TMPDIR/babysit-<uid>-demos (named unlike a
    fleet folder). Made private (0700); refused if it is a symlink or someone else's."""
    explicit = os.environ.get(STATE_ENV)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if explicit:
        path = Path(explicit)
    elif runtime and Path(runtime).is_dir():
        path = Path(runtime) / "babysit-demos"
    else:
        path = Path(tempfile.gettempdir()) / f"babysit-{os.getuid()}-demos"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise DemoError(f"{path}: not a directory of yours; remove it or set ${STATE_ENV}")
    return path


@dataclass(frozen=True)
class FleetInfo:
    """A fleet found through its pointer."""

    pointer: Path
    folder: Path
    kept: bool
    #: The babysit that started it still runs (and will stop it when it ends).
    owner_alive: bool
    owner_pid: int | None


def fleets() -> Iterator[FleetInfo]:
    """Fleets with a pointer in :func:`state_dir`, oldest first."""
    directory = state_dir()
    for pointer in sorted(directory.glob(f"{FOLDER_PREFIX}*.json"), key=_mtime):
        try:
            folder = Path(json.loads(pointer.read_text())["folder"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        data = read_fleet(folder)
        if data is None:
            yield FleetInfo(pointer, folder, kept=False, owner_alive=False, owner_pid=None)
            continue
        owner = data.get("owner") or {}
        owner_pid = owner.get("pid")
        alive = (
            data.get("boot_id") == boot_id()
            and isinstance(owner_pid, int)
            and start_ticks(owner_pid) == owner.get("start_ticks")
        )
        yield FleetInfo(pointer, folder, bool(data.get("kept")), bool(alive), owner_pid)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def read_fleet(folder: Path) -> dict[str, object] | None:
    """The fleet.json of ``folder`` if it is a demo folder of ours, else None."""
    if not _is_demo_folder(folder):
        return None
    try:
        data = json.loads((folder / "fleet.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("folder") != str(folder):
        return None
    return data


def _is_demo_folder(folder: Path) -> bool:
    if not folder.is_absolute() or not folder.name.startswith(FOLDER_PREFIX):
        return False
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def relaunched(folder: Path, services: Iterable[str], boot: str) -> list[Recorded]:
    """Runs that babysit relaunched for the fleet's services (their run records name a log
    in ``folder``): from the TUI's records in the folder and from the CLI's (the host state
    dir of this environment)."""
    from tui.remote.probe import host_state_dir

    found: list[Recorded] = []
    roots = {folder / "host-state", Path(host_state_dir()).expanduser()}
    for root in roots:
        for name in services:
            try:
                lines = (root / name / "runs.jsonl").read_text().splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    record = json.loads(line)
                    log = Path(str(record["log_path"]))
                    if record.get("boot_id") != boot or folder not in log.parents:
                        continue
                    found.append(Recorded(name, int(record["pid"]), int(record["start_ticks"])))
                except (ValueError, KeyError, TypeError):
                    continue
    return found


def stop_folder(folder: Path) -> int:
    """Stop the verified processes recorded for the fleet in ``folder``, then remove the
    folder and its pointer. Returns how many processes were signalled."""
    data = read_fleet(folder)
    count = 0
    if data is not None:
        boot = boot_id()
        if data.get("boot_id") == boot:
            records = [Recorded.from_json(p) for p in data.get("processes") or []]  # type: ignore[attr-defined]
            records += recorded_workers(data)
            services = [str(s) for s in data.get("services") or []]  # type: ignore[attr-defined]
            records += relaunched(folder, services, boot)
            roots = [p for p in (r.verified() for r in records) if p is not None]
            count = terminate(with_descendants(roots))
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError, DemoError):
        (state_dir() / f"{folder.name}.json").unlink(missing_ok=True)
    return count


def recorded_workers(data: dict[str, object]) -> list[Recorded]:
    """The workers a story's server left behind, as fleet.json records them."""
    return [Recorded.from_json(p) for p in data.get(WORKERS) or []]  # type: ignore[attr-defined]


def stop_workers(folder: Path) -> int:
    """Stop the verified workers recorded for the fleet in ``folder`` (they live on in
    sessions of their own when the demo dies). Returns how many were signalled."""
    data = read_fleet(folder)
    if data is None or data.get("boot_id") != boot_id():
        return 0
    return terminate([p for p in (r.verified() for r in recorded_workers(data)) if p])


def stop_kept() -> tuple[list[FleetInfo], list[FleetInfo]]:
    """Stop every kept fleet, and every fleet whose babysit is gone. Returns (stopped,
    left alone because the babysit that started it still runs)."""
    stopped: list[FleetInfo] = []
    running: list[FleetInfo] = []
    for info in fleets():
        if info.owner_alive and not info.kept:
            running.append(info)
            continue
        stop_folder(info.folder)
        stopped.append(info)
    return stopped, running
