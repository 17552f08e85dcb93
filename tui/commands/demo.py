"""`babysit demo`: a local fleet of simulated servers that shows every trap, and the TUI on it.

``babysit demo`` starts the fleet (:mod:`tui.demo.fleet`) in a temporary folder
and opens the fleet view on it at once (its rows say STARTING until the servers
are ready); Enter opens a service's host screen, Esc comes back. When the TUI
ends — ``q``, SIGINT, SIGTERM, SIGHUP or a crash — every process the demo
started is stopped and the folder removed. ``--keep`` leaves the fleet running
for the CLI verbs and prints the commands to try on it, each one working as
printed: the fleet's launcher runs this babysit with the fleet's hosts.yaml,
state and nvidia-smi stand-in, so ``status`` sees the simulated GPUs as the
screen does. ``--stop`` ends kept fleets (and any a dead babysit left).

Exit status: 0, or 128+N after signal N; 1 if the fleet could not be started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from tui.demo.fleet import HOST, Fleet, tui_environment
from tui.demo.fleetstate import stop_kept
from tui.demo.stories import STORIES
from tui.invocation import command

if TYPE_CHECKING:
    from textual.app import App

#: Signals that end the demo's TUI gracefully (so the fleet is stopped).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: The fleet view's title (its header reads ``babysit · demo · 1 host · 10 services · …``).
TITLE = "demo"

#: Opens the TUI on the fleet and returns its exit status; tests replace it.
AppRunner = Callable[[Fleet, "SignalStop"], int]


def configure(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--keep",
        action="store_true",
        help="leave the fleet running without opening the TUI; print its hosts.yaml",
    )
    mode.add_argument(
        "--stop", action="store_true", help="stop the fleet a `babysit demo --keep` left running"
    )


def run(args: argparse.Namespace) -> int:
    if args.stop:
        return stop()
    if args.keep:
        return keep()
    # named before the demo's own babysit names its fleet's launcher, gone once it ends
    keep_it = command("demo", "--keep")
    status = watch()
    if status == 0:
        print(f"babysit demo: stopped. To try the command line on the same servers: {keep_it}")
    return status


# --------------------------------------------------------------------------- signals


class Stopped(BaseException):
    """A stop signal arrived while no TUI was running to end gracefully."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: Seconds a TUI told to end by a signal gets before the fleet is stopped without it (a
#: TUI whose terminal went away can hang in its own shutdown, writing to that terminal).
STUCK_AFTER = 10.0


class SignalStop:
    """While installed, SIGTERM/SIGINT/SIGHUP end the running TUI (``app.exit``) or, with
    no TUI running, raise :class:`Stopped`; either way the caller's ``finally`` stops the
    fleet. :meth:`ignore` then keeps further signals from interrupting that cleanup.

    A TUI that has not ended :data:`STUCK_AFTER` seconds after the signal is given up on:
    ``on_stuck(signum)`` runs in a thread of its own (it stops the fleet and exits), unless
    :meth:`disarm` was called first."""

    def __init__(self, stuck_after: float = STUCK_AFTER) -> None:
        self.app: App[int] | None = None
        self.on_stuck: Callable[[int], None] | None = None
        self.stuck_after = stuck_after
        self._timer: threading.Timer | None = None
        self._previous: dict[int, object] = {}

    def _arm(self, signum: int) -> None:
        if self._timer is None and self.on_stuck is not None:
            self._timer = threading.Timer(self.stuck_after, self.on_stuck, (signum,))
            self._timer.name = "demo stop watchdog"
            self._timer.daemon = True
            self._timer.start()

    def disarm(self) -> None:
        """The TUI ended: the fleet is stopped the ordinary way."""
        self.on_stuck = None
        if self._timer is not None:
            self._timer.cancel()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        app = self.app
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if app is not None and loop is not None:
            # runs in the main thread, between two steps of the app's own loop
            loop.call_soon_threadsafe(functools.partial(app.exit, return_code=128 + signum))
            self._arm(signum)
            return
        raise Stopped(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[SignalStop]:
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        try:
            yield self
        finally:
            self.ignore()
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)  # type: ignore[arg-type]

    def ignore(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


# --------------------------------------------------------------------------- the TUI


def open_app(fleet: Fleet, stopper: SignalStop) -> int:
    """The fleet view of every service, as ``babysit`` alone opens it with a hosts.yaml:
    Enter opens a service's host screen, Esc comes back."""
    from tui.app.app import BabysitApp
    from tui.app.fleet_rows import Fleet as FleetView
    from tui.commands.status import select
    from tui.gcpolicy import for_long_run
    from tui.hostsfile import parse_config_file

    config = parse_config_file(fleet.hosts_yaml)
    os.environ.update(tui_environment(fleet))
    app = BabysitApp(FleetView.of(select(config, []), TITLE))
    stopper.app = app
    for_long_run()
    try:
        app.run()
    finally:
        stopper.app = None
    return app.return_code or 0


def watch(runner: AppRunner = open_app, stopper: SignalStop | None = None) -> int:
    """Start a fleet, run the TUI on it, and stop the fleet however the TUI ends (also
    when, told to end by a signal, it hangs: then the fleet is stopped and babysit exits)."""
    stopper = stopper if stopper is not None else SignalStop()
    stop_staging = threading.Event()
    stager: threading.Thread | None = None
    fleet: Fleet | None = None

    def stuck(signum: int) -> None:
        if fleet is not None:
            fleet.stop()
        os._exit(128 + signum)

    with stopper.installed():
        try:
            fleet = Fleet.create()
            stopper.on_stuck = stuck
            fleet.start(die_with_parent=True)
            stager = threading.Thread(
                target=fleet.stage, args=(stop_staging,), name="demo stager", daemon=True
            )
            stager.start()
            return runner(fleet, stopper)
        except Stopped as stopped:
            return 128 + stopped.signum
        finally:
            stopper.ignore()
            stopper.disarm()
            stop_staging.set()
            if stager is not None:
                stager.join(timeout=5.0)
            if fleet is not None:
                fleet.stop()


# --------------------------------------------------------------------------- keep / stop


def keep() -> int:
    """Start a fleet, wait until every trap is set, leave it running, say how to use it."""
    stopper = SignalStop()
    fleet: Fleet | None = None
    with stopper.installed():
        try:
            fleet = Fleet.create()
            fleet.start(die_with_parent=False)
            settled = fleet.stage()
            fleet.mark_kept()
        except BaseException as error:
            stopper.ignore()
            if fleet is not None:
                fleet.stop()
            if isinstance(error, Stopped):
                return 128 + error.signum
            raise
    print(keep_text(fleet, settled))
    return 0


def keep_text(fleet: Fleet, settled: bool) -> str:
    """What a kept fleet is and the commands to try on it, each working as printed, in
    any shell: they run the fleet's launcher (:func:`~tui.demo.fleet.write_launcher`)."""
    run = shlex.quote(str(fleet.launcher))
    first = STORIES[0].name
    # the story whose first run fails while loading: its relaunch shows a failed start
    oom = next(story.name for story in STORIES if story.first_scenario is not None)
    wedged = next(story.name for story in STORIES if story.scenario == "wedged")
    lines = [
        f"babysit demo: {len(fleet.members)} simulated servers run on this machine "
        f"(host {HOST!r}), kept running.",
        "",
        f"  babysit     {fleet.launcher}",
        "              this babysit, with the fleet's hosts.yaml, state folders and",
        "              nvidia-smi stand-in (the simulated GPUs)",
        f"  hosts.yaml  {fleet.hosts_yaml}",
        f"  logs        {fleet.folder / 'logs'}",
        "",
        "Services:",
        *(f"  {HOST}/{m.story.name:<11} {m.story.comment}" for m in fleet.members),
        "",
        "Watch it (the fleet view: Enter opens a service, Esc comes back; or one service):",
        f"  {run}",
        f"  {run} {HOST} {first}",
        "",
        "Ask it from the command line (each line works as it is, in any shell):",
        f"  {run} status",
        f"  {run} tail {HOST}/gpu3-stale",
        f"  {run} relaunch {HOST}/{oom} --wait",
        f"  {run} canary {HOST}/{wedged}",
        "",
        "Stop it (and everything it started) with:",
        f"  {run} demo --stop",
    ]
    if not settled:
        lines.insert(1, "(some servers were still loading; give them a few seconds)")
    return "\n".join(lines)


def stop() -> int:
    stopped, running = stop_kept()
    for info in stopped:
        print(f"babysit demo: stopped the fleet in {info.folder}")
    for info in running:
        print(
            f"babysit demo: left the fleet in {info.folder} alone: its babysit "
            f"(pid {info.owner_pid}) still runs and stops it when you quit it",
            file=sys.stderr,
        )
    if not stopped and not running:
        print("babysit demo: no demo fleet is running")
    return 0
