"""The demo fleet: plan it, write its hosts.yaml, start it, stage its traps, stop it.

A fleet lives in one folder made by :func:`tempfile.mkdtemp` (``babysit-demo-*``)::

    hosts.yaml      the services, with launch:, match: and port
    fleet.json      every process the demo started: pid, start ticks, boot id; and the
                    workers a story's server leaves behind (``workers``)
    logs/           one log per service, appended to as ``cmd >> log 2>&1`` would
    sim-state/      the simulated GPUs' registry ($BABYSIT_SIM_STATE)
    host-state/     run records of relaunches made from the demo's TUI (and from the
                    launcher), and the run history a story's last run is kept in
                    (startups.json)
    babysit         the fleet's launcher: babysit with this folder's hosts.yaml, state
                    and nvidia-smi stand-in (:func:`write_launcher`), for a kept fleet's
                    commands and those babysit prints while it watches the fleet

A pointer to each fleet (``<state dir>/<folder name>.json``) lets ``babysit demo
--stop`` find a kept fleet, or one whose babysit died without cleaning up.

Invariant: a process is signalled only if it is in ``fleet.json`` (or in a run
record written by a relaunch of one of the fleet's services, with its log in the
folder) *and* its start time, read again just before, is the recorded one —
never by name or pattern. Its descendants (children it forked) go with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tui.agent.protocol import STARTUPS_FILE
from tui.demo.fleetprocs import Recorded, dies_with_parent, free_ports
from tui.demo.fleetstate import FOLDER_PREFIX, WORKERS, DemoError, state_dir, stop_folder
from tui.demo.stories import STORIES, Fate, LastRun, Story, ready_lines
from tui.engines import spec
from tui.invocation import COMMAND_ENV
from tui.procfs import boot_id, start_ticks

#: The one host of the demo's hosts.yaml (not ``demo``: that is a verb).
HOST = "lab"
SCHEMA = 1
#: How long staging waits for the servers to load, fail or get ready.
STAGE_TIMEOUT = 20.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_NVIDIA_SMI_SHIM = Path(__file__).resolve().parents[1] / "sim" / "nvidia-smi"
#: The simulated GPUs: as many as the stories use.
GPU_COUNT = max(gpu for story in STORIES for gpu in story.gpus) + 1
#: The simulator's inventory variable (its GPUs, read by the sims and the nvidia-smi
#: stand-in alike).
SIM_GPUS = "BABYSIT_SIM_GPUS"
#: The fleet's launcher in its folder: this babysit, on that fleet (:func:`write_launcher`).
LAUNCHER = "babysit"
#: Days before the demo its stories' last runs started.
LAST_RUN_AGE = 86400.0


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
        engine = spec(story.engine)
        model = story.model_flag or "--" + engine.aliases.get("model", "model").replace("_", "-")
        extra = engine.metrics_flags
        return [
            sys.executable, "-m", "tui", "sim",
            "--engine", story.engine,
            "--port", str(self.port),
            "--load-seconds", f"{story.load_seconds:g}",
            "--scenario", scenario,
            "--seed", str(story.seed),
            *story.sim_flags,
            "--",
            model, story.model,
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
    #: Workers a story's server leaves behind, recorded as they appear (stopped as the
    #: fleet's processes are).
    workers: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ paths

    @property
    def hosts_yaml(self) -> Path:
        return self.folder / "hosts.yaml"

    @property
    def launcher(self) -> Path:
        return self.folder / LAUNCHER

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
        write_launcher(fleet)
        for m in members:
            if m.story.last_run is not None:
                fleet.seed_history(m.story, m.story.last_run)
        fleet._save()
        _write_json(pointers / f"{folder.name}.json", {"schema": SCHEMA, "folder": str(folder)})
        return fleet

    def seed_history(self, story: Story, last: LastRun) -> None:
        """Keep ``last`` in the service's run history on the host (as the probe agent keeps
        a run that reached ready), so that its first run shows an ETA."""
        started = time.time() - LAST_RUN_AGE
        names = {phase.name for phase in spec(story.engine).phases}
        record = {
            "boot_id": "",
            "pid": 0,
            "start_ticks": 0,
            "started": started,
            "phases": [
                {"name": name, "at": started + share * last.seconds}
                for name, share in last.shares
                if name in names
            ],
            "ready_at": started + last.ready * last.seconds,
        }
        folder = self.host_state / story.name
        folder.mkdir(mode=0o700)
        _write_json(folder / STARTUPS_FILE, {"runs": [record]}, mode=0o600)

    def sim_env(self, gpus: tuple[int, ...]) -> dict[str, str]:
        """What a sim of this fleet needs besides the inherited environment."""
        python_path = os.environ.get("PYTHONPATH")
        return {
            "PYTHONPATH": _PACKAGE_PARENT + (os.pathsep + python_path if python_path else ""),
            "BABYSIT_SIM_STATE": str(self.sim_state),
            SIM_GPUS: str(GPU_COUNT),
            "CUDA_VISIBLE_DEVICES": ",".join(str(gpu) for gpu in gpus),
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
            env = self.sim_env(story.gpus)
            lines += [
                f"      # {story.comment}",
                f"      {story.name}:",
                f"        engine: {story.engine}",
                f"        log: {q(str(m.log))}",
                f"        port: {m.port}",
                f"        gpus: [{', '.join(str(gpu) for gpu in story.gpus)}]",
                *([f"        metrics: {story.metrics}"] if story.metrics else []),
                *(
                    [f"        wedged_after: {story.wedged_after:g}"]
                    if story.wedged_after is not None
                    else []
                ),
                *(
                    [f"        canary: {{timeout: {story.canary_timeout:g}}}"]
                    if story.canary_timeout is not None
                    else []
                ),
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
                WORKERS: [r.to_json() for r in self.workers],
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
                preexec_fn=dies_with_parent() if die_with_parent else None,  # noqa: PLW1509 - spawned before any thread
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
        for m in self.members:
            env = {**base, **self.sim_env(m.story.gpus)}
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
        env = {**base, "PYTHONPATH": self.sim_env(())["PYTHONPATH"]}
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
        if proc.poll() is not None or fate is Fate.LOADING:  # ended early (port taken?)
            return True
        if fate is Fate.ORPHAN_WHEN_READY:
            self._record_workers(m.story.name, proc.pid)
        if not self._ready(m):
            return False
        if fate is Fate.ORPHAN_WHEN_READY:
            self._record_workers(m.story.name, proc.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)  # the server alone, as when it crashes
            proc.wait()
        elif fate is Fate.KILL_WHEN_READY:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # an unreaped child: its group is ours
            proc.wait()
        elif fate is Fate.REPLACE_LOG_WHEN_READY:
            m.log.unlink()
            m.log.touch()
        return True

    def _record_workers(self, name: str, pid: int) -> None:
        """Record the descendants of ``pid`` not recorded yet (they may outlive it)."""
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return
        known = {(r.pid, r.start_ticks) for r in self.workers}
        found = []
        for child in children:
            ticks = start_ticks(child.pid)
            if ticks is not None and (child.pid, ticks) not in known:
                found.append(Recorded(name, child.pid, ticks, "worker"))
        if found:
            with self._lock:
                self.workers.extend(found)
                self._save()

    @staticmethod
    def _ready(m: Member) -> bool:
        try:
            text = m.log.read_bytes()
            return any(line in text for line in ready_lines(m.story.engine))
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


def _write_json(path: Path, data: object, mode: int = 0o644) -> None:
    """Replace ``path`` at once (write a temporary file of ``mode``, then rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.chmod(mode)
    tmp.replace(path)


# --------------------------------------------------------------------------- finding fleets


def tui_environment(fleet: Fleet) -> dict[str, str]:
    """Environment for the demo's own babysit: its actions' records and audit log stay in
    the folder, ``nvidia-smi`` answers for the simulated GPUs, and the commands it prints
    name the fleet's launcher."""
    env = fleet_environment(fleet)
    shim = nvidia_smi_dir()
    if shim is not None:
        env["PATH"] = f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def fleet_environment(fleet: Fleet) -> dict[str, str]:
    """What a babysit watching the fleet needs besides the inherited environment and the
    nvidia-smi stand-in on PATH (:func:`nvidia_smi_dir`)."""
    return {
        "BABYSIT_HOST_STATE": str(fleet.host_state),
        "BABYSIT_STATE": str(fleet.folder / "state"),
        "BABYSIT_SIM_STATE": str(fleet.sim_state),
        "BABYSIT_SIM_PYTHON": sys.executable,
        SIM_GPUS: str(GPU_COUNT),
        COMMAND_ENV: shlex.quote(str(fleet.launcher)),
    }


def nvidia_smi_dir() -> Path | None:
    """The folder of the nvidia-smi stand-in (to put first on PATH), or None when the
    package was installed without it."""
    return _NVIDIA_SMI_SHIM.parent if os.access(_NVIDIA_SMI_SHIM, os.X_OK) else None


#: The launcher's python program: babysit's command line from the package in ``package``.
_LAUNCH = "import sys; sys.path[0] = {package}; from tui.cli import main; raise SystemExit(main())"


def write_launcher(fleet: Fleet) -> Path:
    """Write ``babysit`` in the fleet's folder: a shell script that runs this babysit
    (this python, this package) with the fleet's hosts.yaml ($BABYSIT_CONFIG), its
    state folders and its nvidia-smi stand-in, so that each command the demo prints
    works as printed, in any shell, and the CLI sees what the demo's screen sees.
    ``babysit demo --stop`` removes it with the folder."""
    q = shlex.quote
    env = {"BABYSIT_CONFIG": str(fleet.hosts_yaml), **fleet_environment(fleet)}
    shim = nvidia_smi_dir()
    launch = _LAUNCH.format(package=json.dumps(_PACKAGE_PARENT))
    lines = [
        "#!/bin/sh",
        "# babysit on the demo fleet in this folder: its hosts.yaml, its state folders and",
        "# its nvidia-smi stand-in. Written by `babysit demo`; `babysit demo --stop` (or",
        "# quitting the demo's screen) removes it with the fleet.",
        *(f"{key}={q(value)}; export {key}" for key, value in env.items()),
        *([f'PATH={q(str(shim))}"${{PATH:+:$PATH}}"; export PATH'] if shim else []),
        # this package first, in the place of the folder the user is in (a `tui` folder
        # there, such as another clone's, is not babysit's)
        f"exec {q(sys.executable)} -c {q(launch)} " + '"$@"',
    ]
    path = fleet.launcher
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.chmod(0o755)
    tmp.replace(path)
    return path
