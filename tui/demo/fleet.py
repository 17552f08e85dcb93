"""The demo fleet: plan it, write its hosts.yaml, start it, stage its traps, stop it.

A fleet lives in one folder made by :func:`tempfile.mkdtemp` (``babysit-demo-*``)::

    hosts.yaml      the five services, with launch:, match: and port
    fleet.json      every process the demo started: pid, start ticks, boot id
    logs/           one log per service, appended to as ``cmd >> log 2>&1`` would
    sim-state/      the simulated GPUs' registry ($BABYSIT_SIM_STATE)
    host-state/     run records of relaunches made from the demo's TUI

A pointer to each fleet (``<state dir>/<folder name>.json``) lets ``babysit demo
--stop`` find a kept fleet, or one whose babysit died without cleaning up.

Invariant: a process is signalled only if it is in ``fleet.json`` (or in a run
record written by a relaunch of one of the fleet's services, with its log in the
folder) *and* its start time, read again just before, is the recorded one —
never by name or pattern. Its descendants (children it forked) go with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tui.demo.stories import MODEL, READY_LINES, STORIES, Fate, Story
from tui.errors import BabysitError
from tui.procfs import boot_id, start_ticks

#: The one host of the demo's hosts.yaml (not ``demo``: that is a verb).
HOST = "lab"
#: Environment variable naming the folder of pointers to running fleets.
STATE_ENV = "BABYSIT_DEMO_STATE"
FOLDER_PREFIX = "babysit-demo-"
SCHEMA = 1
#: Seconds between SIGTERM and SIGKILL when the fleet stops (sims stop in well under one).
STOP_GRACE = 3.0
#: How long staging waits for the servers to load, fail or get ready.
STAGE_TIMEOUT = 20.0
_PR_SET_PDEATHSIG = 1
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_NVIDIA_SMI_SHIM = Path(__file__).resolve().parents[1] / "sim" / "nvidia-smi"


class DemoError(BabysitError):
    """The demo could not start or stop its fleet."""

    title = "demo"


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Recorded:
    """A process the demo started (or a relaunch of one of its services started)."""

    name: str
    pid: int
    start_ticks: int
    role: str = "service"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "role": self.role,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Recorded:
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),  # type: ignore[call-overload]
            start_ticks=int(data["start_ticks"]),  # type: ignore[call-overload]
            role=str(data.get("role", "service")),
        )

    def verified(self) -> psutil.Process | None:
        """The very process recorded, if it still runs (same pid *and* start time)."""
        try:
            process = psutil.Process(self.pid)
        except psutil.Error:
            return None
        if start_ticks(self.pid) != self.start_ticks:
            return None
        return process


def _gone(process: psutil.Process) -> bool:
    """Exited (a zombie counts: it runs nothing and holds no port or file)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def terminate(processes: Iterable[psutil.Process], grace: float = STOP_GRACE) -> int:
    """SIGTERM each process, wait up to ``grace`` s, SIGKILL what is left. Returns how many
    were signalled. psutil refuses to signal a pid that now belongs to another process."""
    targets = [p for p in processes if not _gone(p)]
    for process in targets:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(_gone(p) for p in targets):
        time.sleep(0.02)
    left = [p for p in targets if not _gone(p)]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not all(_gone(p) for p in left):
        time.sleep(0.02)
    return len(targets)


def with_descendants(roots: Iterable[psutil.Process]) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    for root in roots:
        found[root.pid] = root
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                found.setdefault(child.pid, child)
    return list(found.values())


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on loopback right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when the demo dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the demo died before prctl took hold
            os._exit(1)

    return preexec


# --------------------------------------------------------------------------- the fleet


@dataclass
class Member:
    """One service of a fleet: its story, port, log, and its first run once started."""

    story: Story
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def match(self) -> str:
        # ``[ ]`` so that this pattern, quoted in a probe's own command line, never matches
        # that command line.
        return f"tui sim .*--port[ ]{self.port}( |$)"

    def argv(self, *, first: bool) -> list[str]:
        story = self.story
        scenario = story.scenario
        flags = story.flags
        if first and story.first_scenario is not None:
            scenario = story.first_scenario
        if first and story.first_flags is not None:
            flags = story.first_flags
        model = "--model-path" if story.engine == "sglang" else "--model"
        extra = ("--enable-metrics",) if story.engine == "sglang" else ()
        return [
            sys.executable, "-m", "tui", "sim",
            "--engine", story.engine,
            "--port", str(self.port),
            "--load-seconds", f"{story.load_seconds:g}",
            "--scenario", scenario,
            "--seed", str(story.seed),
            "--",
            model, MODEL,
            "--port", str(self.port),
            *flags,
            *extra,
        ]  # fmt: skip


@dataclass
class Fleet:
    """A demo fleet in ``folder``. Create with :meth:`create`, then :meth:`start`."""

    folder: Path
    members: list[Member]
    kept: bool = False
    load: subprocess.Popen[bytes] | None = None
    recorded: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ paths

    @property
    def hosts_yaml(self) -> Path:
        return self.folder / "hosts.yaml"

    @property
    def fleet_json(self) -> Path:
        return self.folder / "fleet.json"

    @property
    def sim_state(self) -> Path:
        return self.folder / "sim-state"

    @property
    def host_state(self) -> Path:
        return self.folder / "host-state"

    # ------------------------------------------------------------------ making

    @classmethod
    def create(cls, *, kept: bool = False, stories: tuple[Story, ...] = STORIES) -> Fleet:
        """A new folder with the fleet's hosts.yaml, and a pointer to it (nothing runs yet)."""
        pointers = state_dir()  # fails early, before anything is made
        folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX)).resolve()
        (folder / "logs").mkdir()
        for sub in ("sim-state", "host-state", "state"):
            (folder / sub).mkdir()
        ports = free_ports(len(stories))
        members = [
            Member(story, port, folder / "logs" / f"{story.name}.log")
            for story, port in zip(stories, ports, strict=True)
        ]
        fleet = cls(folder, members, kept=kept)
        fleet.hosts_yaml.write_text(fleet.render_hosts_yaml(), encoding="utf-8")
        fleet._save()
        _write_json(pointers / f"{folder.name}.json", {"schema": SCHEMA, "folder": str(folder)})
        return fleet

    def sim_env(self, gpu: int) -> dict[str, str]:
        """What a sim of this fleet needs besides the inherited environment."""
        python_path = os.environ.get("PYTHONPATH")
        return {
            "PYTHONPATH": _PACKAGE_PARENT + (os.pathsep + python_path if python_path else ""),
            "BABYSIT_SIM_STATE": str(self.sim_state),
            "CUDA_VISIBLE_DEVICES": str(gpu),
        }

    def render_hosts_yaml(self) -> str:
        q = json.dumps  # a JSON string is a valid YAML double-quoted scalar
        lines = [
            "# babysit demo: simulated inference servers on this machine (`babysit sim`).",
            "# Written by `babysit demo`; everything here is removed by `babysit demo --stop`.",
            "hosts:",
            f"  {HOST}:",
            "    local: true",
            "    services:",
        ]
        for m in self.members:
            story = m.story
            env = self.sim_env(story.gpu)
            lines += [
                f"      # {story.comment}",
                f"      {story.name}:",
                f"        engine: {story.engine}",
                f"        log: {q(str(m.log))}",
                f"        port: {m.port}",
                f"        gpus: [{story.gpu}]",
                f"        match: {q(m.match)}",
                "        stop_grace: 5",
                "        launch:",
                "          command: [" + ", ".join(q(a) for a in m.argv(first=False)) + "]",
                f"          cwd: {q(str(self.folder))}",
                "          env:",
                *(f"            {k}: {q(v)}" for k, v in env.items()),
            ]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ records

    def _save(self) -> None:
        _write_json(
            self.fleet_json,
            {
                "schema": SCHEMA,
                "folder": str(self.folder),
                "boot_id": boot_id(),
                "kept": self.kept,
                "owner": {"pid": os.getpid(), "start_ticks": start_ticks(os.getpid())},
                "services": [m.story.name for m in self.members],
                "processes": [r.to_json() for r in self.recorded],
            },
        )

    def mark_kept(self) -> None:
        self.kept = True
        self._save()

    def _spawn(
        self,
        name: str,
        role: str,
        argv: list[str],
        *,
        log: Path | None,
        env: dict[str, str],
        die_with_parent: bool,
    ) -> subprocess.Popen[bytes]:
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log else None
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out if out is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT if out is not None else subprocess.DEVNULL,
                cwd=self.folder,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent() if die_with_parent else None,  # noqa: PLW1509 - spawned before any thread
            )
        except OSError as error:
            raise DemoError(f"cannot start the demo's {name}: {error}") from None
        finally:
            if out is not None:
                os.close(out)
        ticks = start_ticks(proc.pid)
        if ticks is not None:
            with self._lock:
                self.recorded.append(Recorded(name, proc.pid, ticks, role))
                self._save()
        return proc

    def start(self, *, die_with_parent: bool) -> None:
        """Start every service's first run and the load generator. Call from the main
        thread before any other thread exists (``die_with_parent`` ties them to it)."""
        base = dict(os.environ)
        base.pop("BABYSIT_SIM_GPUS", None)
        for m in self.members:
            env = {**base, **self.sim_env(m.story.gpu)}
            m.proc = self._spawn(
                m.story.name,
                "service",
                m.argv(first=True),
                log=m.log,
                env=env,
                die_with_parent=die_with_parent,
            )
        targets = [f"{m.port}:{m.story.streams}" for m in self.members if m.story.streams]
        argv = [sys.executable, "-m", "tui.demo.load", "--folder", str(self.folder), *targets]
        env = {**base, "PYTHONPATH": self.sim_env(0)["PYTHONPATH"]}
        self.load = self._spawn(
            "load", "load", argv, log=None, env=env, die_with_parent=die_with_parent
        )

    # ------------------------------------------------------------------ staging

    def stage(self, stop: threading.Event | None = None, timeout: float = STAGE_TIMEOUT) -> bool:
        """Set each trap once its run is far enough: kill gpu2-dead once ready, replace
        gpu3-stale's log once ready, reap the runs that fail. Returns True once every
        service is where its story wants it (serving ones ready), False on timeout or stop."""
        pending = {m.story.name: m for m in self.members}
        deadline = time.monotonic() + timeout
        while pending:
            if (stop is not None and stop.is_set()) or time.monotonic() > deadline:
                return False
            for name, m in list(pending.items()):
                if self._advance(m):
                    del pending[name]
            if pending:
                time.sleep(0.03)
        return True

    def _advance(self, m: Member) -> bool:
        """One look at ``m``; True once its trap is set (or it cannot be)."""
        proc = m.proc
        if proc is None:
            return True
        fate = m.story.fate
        if fate is Fate.FAIL_AT_LOAD:
            return proc.poll() is not None
        if proc.poll() is not None:  # ended early (port taken?): nothing more to stage
            return True
        if not self._ready(m):
            return False
        if fate is Fate.KILL_WHEN_READY:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # an unreaped child: its group is ours
            proc.wait()
        elif fate is Fate.REPLACE_LOG_WHEN_READY:
            m.log.unlink()
            m.log.touch()
        return True

    @staticmethod
    def _ready(m: Member) -> bool:
        try:
            return READY_LINES[m.story.engine] in m.log.read_bytes()
        except OSError:
            return False

    # ------------------------------------------------------------------ stopping

    def stop(self) -> int:
        """Stop every verified process of the fleet, reap our children, remove the folder."""
        count = stop_folder(self.folder)
        for proc in [*(m.proc for m in self.members), self.load]:
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
        return count


def _write_json(path: Path, data: object) -> None:
    """Replace ``path`` at once (write a temporary file, then rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- finding fleets


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
            services = [str(s) for s in data.get("services") or []]  # type: ignore[attr-defined]
            records += relaunched(folder, services, boot)
            roots = [p for p in (r.verified() for r in records) if p is not None]
            count = terminate(with_descendants(roots))
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError, DemoError):
        (state_dir() / f"{folder.name}.json").unlink(missing_ok=True)
    return count


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


def tui_environment(fleet: Fleet) -> dict[str, str]:
    """Environment for the demo's own babysit: its actions' records and audit log stay in
    the folder, and ``nvidia-smi`` answers for the simulated GPUs."""
    env = {
        "BABYSIT_HOST_STATE": str(fleet.host_state),
        "BABYSIT_STATE": str(fleet.folder / "state"),
        "BABYSIT_SIM_STATE": str(fleet.sim_state),
        "BABYSIT_SIM_PYTHON": sys.executable,
    }
    if os.access(_NVIDIA_SMI_SHIM, os.X_OK):
        env["PATH"] = f"{_NVIDIA_SMI_SHIM.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return env
