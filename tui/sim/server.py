"""Runs one simulated server in the foreground: time, signals, child processes, HTTP, registry.

One main thread does everything that writes the log except access lines: it
sleeps in ``select`` on a wake-up pipe until the next timer (a startup step, a
stats tick), the next event of the load model (a request finishing, a decode
log due), a signal (``signal.set_wakeup_fd``) or an HTTP thread submitting a
request. Nothing polls: an idle SGLang sim wakes only for the HTTP thread's
0.5 s shutdown poll, an idle vLLM sim also for its stats tick.

Exit statuses: 0 after a graceful SIGTERM/SIGINT once ready; death by the same
signal while still loading (like an engine killed mid-load); SGLang's oom and
crash-after and killed-after end by SIGKILL of the whole tree (a shell reports 137),
its killed-at-load exits 1; vLLM's oom exits 1 and its crash-after and killed-after
exit 0 once the API server's watchdog shut uvicorn down; llama-server's oom exits 1,
its crash-after 134 (abort()) and its killed-after and killed-at-load end by SIGKILL;
TGI's failures exit 1 (the launcher's ``Error: …``); 1 if the port is taken. The wedging
scenarios (``wedged``, ``nccl-timeout``, ``engine-dead``) strike ``--wedge-after`` seconds
after ready and end nothing: the process serves on until signalled. For ``engine-dead``
one more child stands for vLLM's engine core and exits when the engine dies. In
``orphan-workers`` the workers outlive the server however it ends but by SIGTERM/SIGINT
(which ends them too), each told its phase and memory on its stdin while the server lives.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tui.sim import gpus as gpu_registry
from tui.sim.config import ORPHANING, WEDGING, SimConfig
from tui.sim.engine import Engine, Host
from tui.sim.errors import SimUsageError
from tui.sim.gpus import GpuSpec, ProcUse, SimRecord
from tui.sim.http import SimHTTPServer
from tui.sim.load import LoadModel
from tui.sim.out import STDERR, Output

EngineFactory = Callable[[SimConfig, Host], Engine]

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_REGISTRY_MIN_GAP = 0.5
#: how long a child gets to exit once told to
_CHILD_EXIT_SECONDS = 1.0
#: process title of vLLM V1's engine core process
_ENGINE_CORE_TITLE = "VLLM::EngineCore"
#: uvicorn handles these two; anything else keeps its default action
_HANDLED = (signal.SIGTERM, signal.SIGINT)


class SimServer:
    """One simulated server process. Not reusable: call :meth:`run` once."""

    def __init__(self, cfg: SimConfig, factory: EngineFactory) -> None:
        self.cfg = cfg
        self.factory = factory
        self.out = Output()
        self.rng = random.Random(cfg.seed) if cfg.seed is not None else random.Random()
        self.pid = os.getpid()
        self.start_ticks = gpu_registry.proc_start_ticks(self.pid)
        self.port = cfg.port
        self.ready = False
        self._ready_lock = threading.Lock()
        self.ready_at: float | None = None
        self.http_logging = False
        self.engine: Engine | None = None
        try:
            inventory = gpu_registry.inventory()
        except ValueError as error:
            raise SimUsageError(f"bad GPU inventory ({gpu_registry.GPUS_ENV}): {error}") from error
        indices = gpu_registry.visible_indices(len(inventory))
        self.gpus: list[GpuSpec] = [inventory[indices[r % len(indices)]] for r in range(cfg.tp)]
        self.registry_dir = gpu_registry.state_dir()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._signals: list[int] = []
        self._exit: tuple[int | None, bool] | None = None
        self._die_by: int | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        #: the engine core process of engine-dead (vLLM V1 runs its engine in one)
        self._engine_core: subprocess.Popen[bytes] | None = None
        self._child_ticks: list[int | None] = []
        #: the last phase and memory each orphan-workers child was told, by rank
        self._told: dict[int, dict[str, object]] = {}
        self._phase = "starting"
        self._memory_gib: list[float] = [0.0] * cfg.tp
        self._registry_state: tuple[object, ...] | None = None
        self._registry_written = 0.0
        self._registry_broken = False
        self._wake_r = self._wake_w = -1
        self._load: LoadModel | None = None

    # -- the Host interface engines use ---------------------------------------------------
    @property
    def load(self) -> LoadModel:
        if self._load is None:
            raise RuntimeError("the load model exists only once the engine is built")
        return self._load

    def schedule(self, delay: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (time.monotonic() + max(delay, 0.0), next(self._seq), action))

    def set_memory(self, per_rank_gib: Sequence[float]) -> None:
        self._memory_gib = list(per_rank_gib)

    def set_phase(self, phase: str) -> None:
        self._phase = phase

    def mark_ready(self, announce: Callable[[], None]) -> None:
        """Write the ready line (``announce``) and turn ready in one step.

        Invariant: ``is_ready()`` is False until the ready line is in the log and True
        from the moment it is, so /health can never answer 200 before the line nor
        503 after it.
        """
        with self._ready_lock:
            announce()
            self.ready = True
        self.ready_at = time.monotonic()
        self._phase = "ready"
        scenario = self.cfg.scenario
        if scenario.crash_after is not None and self.engine is not None:
            engine = self.engine
            death = engine.child_killed if scenario.name == "killed-after" else engine.crash
            self.schedule(scenario.crash_after, death)
        if scenario.name in WEDGING and self.engine is not None:
            engine = self.engine
            strike = {
                "wedged": engine.wedge,
                "nccl-timeout": engine.nccl_timeout,
                "engine-dead": engine.engine_dies,
            }[scenario.name]
            self.schedule(self.cfg.wedge_after, strike)

    def is_ready(self) -> bool:
        with self._ready_lock:
            return self.ready

    def finish(self, status: int | None, *, sigkill: bool = False) -> None:
        self._exit = (status, sigkill)

    def child_pid(self, rank: int) -> int:
        if 0 < rank <= len(self._children):
            return self._children[rank - 1].pid
        return self.pid

    def engine_core_pid(self) -> int | None:
        """The pid of the engine core child (engine-dead only), while it runs."""
        core = self._engine_core
        return core.pid if core is not None and core.poll() is None else None

    def end_engine_core(self, signum: int) -> None:
        """The engine core child exits by ``signum`` (engine-dead); the rest lives on."""
        core = self._engine_core
        if core is None or core.poll() is not None:
            return
        core.send_signal(signum)
        try:
            core.wait(timeout=_CHILD_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            core.kill()
            core.wait()

    def wake(self) -> None:
        """Make the main loop look again (safe from any thread)."""
        try:
            os.write(self._wake_w, b"w")
        except BlockingIOError:
            return  # a full pipe already guarantees a wake-up
        except OSError:
            return  # closed during shutdown: nobody is waiting any more

    def report_error(self, text: str) -> None:
        self.out.write("ERROR:    Exception in ASGI application\n" + text, STDERR)

    # -- running ----------------------------------------------------------------------------
    def run(self) -> int:
        try:
            http = SimHTTPServer((self.cfg.bind_host, self.cfg.port), self)
        except OSError as error:
            self.factory(self.cfg, self).bind_failed(error)
            return 1
        self.port = http.server_address[1]
        engine = self.factory(self.cfg, self)
        self.engine = engine
        self._load = LoadModel(engine.load_profile(), time.monotonic(), self.wake)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        previous_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        handled = _HANDLED
        previous_handlers = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        if self.cfg.scenario.name == "ignore-sigterm":
            previous_handlers[signal.SIGHUP] = signal.signal(signal.SIGHUP, signal.SIG_IGN)
        thread = threading.Thread(
            target=http.serve_forever, kwargs={"poll_interval": 0.5}, name="sim-http", daemon=True
        )
        try:
            self._spawn_children()
            thread.start()
            for offset, action in engine.plan():
                self.schedule(offset, action)
            self._write_registry(force=True)
            status, sigkill = self._loop(engine)
        finally:
            self.load.abort_all(time.monotonic())
            if thread.is_alive():
                http.shutdown()
            http.server_close()
            signal.set_wakeup_fd(previous_wakeup)
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)
            os.close(self._wake_r)
            os.close(self._wake_w)
        self._end_children(kill=sigkill or self._die_by is not None)
        self._remove_registry()
        if sigkill:
            os.kill(self.pid, signal.SIGKILL)
        if self._die_by is not None:
            signal.signal(self._die_by, signal.SIG_DFL)
            os.kill(self.pid, self._die_by)
            return 128 + self._die_by
        return 0 if status is None else status

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    def _handle_signal(self, engine: Engine, signum: int) -> None:
        if self.cfg.scenario.name == "ignore-sigterm":
            engine.ignored_signal(signum)
            return
        if not self.ready:
            self._die_by = signum
            self._exit = (None, False)
            return
        self._phase = "stopping"
        engine.shutdown(signum)
        self._exit = (0, False)

    def _loop(self, engine: Engine) -> tuple[int | None, bool]:
        while True:
            while self._signals and self._exit is None:
                self._handle_signal(engine, self._signals.pop(0))
            now = time.monotonic()
            while self._exit is None and self._timers and self._timers[0][0] <= now:
                _, _, action = heapq.heappop(self._timers)
                action()
            if self._exit is not None:
                return self._exit
            now = time.monotonic()
            advance = self.load.advance(now)
            engine.on_advance(advance, now)
            if self._exit is not None:
                return self._exit
            registry_wait = self._write_registry()
            next_timer = self._timers[0][0] - time.monotonic() if self._timers else None
            waits = [w for w in (next_timer, self.load.next_wake(), registry_wait) if w is not None]
            timeout = max(min(waits), 0.001) if waits else None
            if self._signals:
                continue
            readable, _, _ = select.select([self._wake_r], [], [], timeout)
            if readable:
                self._drain_wakeups()

    def _drain_wakeups(self) -> None:
        while True:
            try:
                chunk = os.read(self._wake_r, 4096)
            except BlockingIOError:
                return
            if not chunk:
                return

    # -- children -------------------------------------------------------------------------
    def _spawn_children(self) -> None:
        engine_name = self.cfg.engine
        env = dict(os.environ)
        existing = env.get("PYTHONPATH")
        env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + existing if existing else "")
        for rank in range(1, self.cfg.tp):
            title = {
                "sglang": f"sglang::scheduler_TP{rank}",
                "tgi": "text-generation-server",
            }.get(engine_name, f"VLLM::Worker_TP{rank}")
            child = self._spawn(title, env, self.gpus[rank].index)
            self._children.append(child)
            self._child_ticks.append(gpu_registry.proc_start_ticks(child.pid))
        if self.cfg.scenario.name == "engine-dead":
            self._engine_core = self._spawn(_ENGINE_CORE_TITLE, env)

    def _spawn(self, title: str, env: dict[str, str], gpu: int = 0) -> subprocess.Popen[bytes]:
        """One worker, its title first on its command line (as setproctitle leaves it)."""
        argv = [title, "-m", "tui.sim.worker", title, "--parent", str(self.pid)]
        scenario = self.cfg.scenario.name
        if scenario == "ignore-sigterm":
            argv.append("--ignore-term")
        orphan = scenario == ORPHANING
        if orphan:
            argv += ["--orphan", "--gpu", str(gpu), "--engine", self.cfg.engine]
            argv += ["--port", str(self.port)]
        # A worker that ignores SIGTERM does so from its exec on, as a real one that set
        # it before the server said it was ready: an ignored signal stays ignored across
        # exec, where the worker's own SIG_IGN comes only once its Python has started.
        # (Our own SIGTERM is ignored for the moment of the spawn, before any readiness.)
        ignoring = scenario == "ignore-sigterm"
        ours = signal.signal(signal.SIGTERM, signal.SIG_IGN) if ignoring else None
        try:
            child = subprocess.Popen(
                argv,
                executable=sys.executable,
                stdin=subprocess.PIPE,
                env=env,
                close_fds=True,
                start_new_session=orphan,
            )
        finally:
            if ignoring:
                signal.signal(signal.SIGTERM, ours)
        if orphan and child.stdin is not None:
            os.set_blocking(child.stdin.fileno(), False)
        return child

    def _tell_children(self, record: SimRecord) -> None:
        """Send each orphan-workers child its phase and memory when they change."""
        if self.cfg.scenario.name != ORPHANING:
            return
        for rank, child in enumerate(self._children, start=1):
            if rank >= len(record.procs) or child.stdin is None or child.stdin.closed:
                continue
            state = {"phase": record.phase, "memory_mib": record.procs[rank].memory_mib}
            if self._told.get(rank) == state:
                continue
            try:
                os.write(child.stdin.fileno(), (json.dumps(state) + "\n").encode())
            except BlockingIOError:
                continue  # a worker that is not reading gets the next change instead
            except OSError:
                continue  # the worker is gone: nothing left to tell
            self._told[rank] = state

    def _end_children(self, *, kill: bool) -> None:
        children = list(self._children)
        if self._engine_core is not None:
            children.append(self._engine_core)
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            if child.poll() is None:
                child.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + _CHILD_EXIT_SECONDS
        for child in children:
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    # -- registry ---------------------------------------------------------------------------
    def _record(self) -> SimRecord:
        procs = []
        for rank in range(self.cfg.tp):
            pid = self.pid if rank == 0 else self.child_pid(rank)
            ticks = (
                self.start_ticks
                if rank == 0
                else (self._child_ticks[rank - 1] if rank - 1 < len(self._child_ticks) else None)
            )
            memory = self._memory_gib[rank] if rank < len(self._memory_gib) else 0.0
            procs.append(ProcUse(pid, ticks, self.gpus[rank].index, int(memory * 1024)))
        engine = self.engine
        load = self._load
        return SimRecord(
            pid=self.pid,
            start_ticks=self.start_ticks,
            engine=self.cfg.engine,
            port=self.port,
            phase=self._phase,
            spec=bool(engine and engine.spec_on),
            running=load.running if load else 0,
            queued=load.queued if load else 0,
            procs=tuple(procs),
        )

    def _write_registry(self, *, force: bool = False) -> float | None:
        """Write the record if it changed; returns seconds until a pending write is allowed."""
        record = self._record()
        state = (record.phase, record.spec, record.running, record.queued, record.procs)
        if state == self._registry_state and not force:
            return None
        now = time.monotonic()
        structural = (
            self._registry_state is None
            or state[0] != self._registry_state[0]
            or (state[4] != self._registry_state[4])
        )
        gap = now - self._registry_written
        if not (force or structural) and gap < _REGISTRY_MIN_GAP:
            return _REGISTRY_MIN_GAP - gap
        if self._registry_broken:
            return None
        try:
            gpu_registry.write_record(record, self.registry_dir)
        except OSError as error:
            self.out.line(f"babysit sim: cannot write {self.registry_dir}: {error}", STDERR)
            self._registry_broken = True
        self._registry_state = state
        self._registry_written = now
        self._tell_children(record)
        return None

    def _remove_registry(self) -> None:
        if self._registry_broken:
            return
        path = self.registry_dir / f"sim-{self.pid}.json"
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            self.out.line(f"babysit sim: cannot remove {path}: {error}", STDERR)
