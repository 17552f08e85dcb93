"""The Textual app: ``babysit HOST [SERVICE]``, or the fleet view of many hosts.

:func:`make_app` builds it from domain data: a config, the names asked for (as
``babysit`` reads them) and one :class:`~tui.session.sessions.Sessions`, the
factory of every fact the screens show; tests pass a Sessions with stand-in
seams (fixed rows, fixed answers, fixed actions) and ``clock`` to freeze the
header's time. ``read_only`` offers no action that changes the host.

With a :class:`Fleet` the app opens the :class:`FleetScreen`; ``Enter`` on a row
pushes that service's host screen, and ``Esc`` pops back. A host screen opened
directly (``babysit HOST SERVICE``) has no fleet under it: its ``Esc`` makes one
of that host's services and switches to it, and from then on the app works as if
it had opened that fleet first. Both are views of the same sessions: a fleet row
renders its service's report as of its host's last answer, the host screen the
same session's report as of now.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from tui.app.fleet_rows import Fleet
from tui.app.screens.confirm import ConfirmAction
from tui.app.screens.fleet import FleetScreen
from tui.app.screens.help import key_names
from tui.app.screens.host import HostScreen
from tui.app.screens.quit import ConfirmQuit
from tui.config import Config, Host, Service
from tui.session.sessions import Sessions


@dataclass(frozen=True)
class HostView:
    """One service's host screen."""

    host: Host
    service: Service


def make_app(
    config: Config,
    names: Sequence[str] = (),
    *,
    sessions: Sessions | None = None,
    read_only: bool = False,
    clock: Callable[[], float] = time.time,
) -> BabysitApp:
    """The app for ``names`` as ``babysit NAME …`` reads them (see :mod:`tui.commands.ui`)."""
    from tui.commands.ui import choose

    chosen = choose(config, names)
    view = chosen if isinstance(chosen, Fleet) else HostView(*chosen)
    return BabysitApp(view, sessions=sessions, read_only=read_only, clock=clock)


#: Command palette titles for the keys whose description is too short to stand alone;
#: every other key's title is its description. (action, title)
ACTION_COMMANDS = {
    "kill": "Kill the run",
    "relaunch": "Relaunch",
    "replace": "Replace the run",
    "canary": "Send a canary",
    "dump": "Take a dump",
    "help": "Help",
}
#: Keys the palette does not repeat: Textual's palette has its own Quit, and opening it.
NOT_IN_PALETTE = frozenset({"quit", "command_palette"})

#: Where the palette's screenshot goes unless ``BABYSIT_SCREENSHOTS`` names a folder.
SCREENSHOTS = "~/babysit-screenshots"


def screenshot_folder() -> Path:
    """``$BABYSIT_SCREENSHOTS``, else ``~/babysit-screenshots``."""
    return Path(os.environ.get("BABYSIT_SCREENSHOTS") or SCREENSHOTS).expanduser()


def key_commands(screen: Screen[object]) -> Iterator[SystemCommand]:
    """A palette command for each key of ``screen`` that can be used now, as ``?`` lists
    them: the same words, and the keys in brackets."""
    app = screen.app
    seen: dict[tuple[int, str], list[str]] = {}
    found: dict[tuple[int, str], tuple[Binding, DOMNode]] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        _, action, _ = app._parse_action(binding.action, active.node)
        if not active.enabled or action in NOT_IN_PALETTE or binding.system:
            continue
        ident = (id(active.node), binding.action)
        seen.setdefault(ident, []).append(key_names(binding, app))
        found[ident] = (binding, active.node)
    for ident, (binding, node) in found.items():
        _, action, _ = app._parse_action(binding.action, node)
        title = ACTION_COMMANDS.get(action, binding.description.capitalize())
        what = binding.tooltip or binding.description
        yield SystemCommand(
            title,
            f"{what} ({', '.join(seen[ident])})",
            partial(app.run_action, binding.action, node),
        )


class BabysitApp(App[int]):
    """Watches one service on one host, or a fleet of them, through its sessions (one
    connection per endpoint, one probe loop per host, shared by every screen)."""

    CSS_PATH: ClassVar[list[str]] = ["babysit.tcss", "fleet.tcss"]
    TITLE = "babysit"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "q", "quit", "quit", id="app.quit", tooltip="quit (asks only while an action runs)"
        ),
        # Before any widget's own Ctrl+C (copy in the search field): hands expect it to quit.
        Binding(
            "ctrl+c",
            "quit",
            "quit",
            id="app.interrupt",
            show=False,
            priority=True,
            tooltip="quit (asks only while an action runs)",
        ),
        Binding("escape", "back", "fleet", id="app.back", tooltip="back to the fleet"),
    ]

    def __init__(
        self,
        view: HostView | Fleet,
        *,
        sessions: Sessions | None = None,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        #: The hosts and services of the fleet view; None for a host screen opened
        #: directly, until its Esc makes the fleet of its host.
        self.fleet = view if isinstance(view, Fleet) else None
        if isinstance(view, Fleet):
            self.host, services = view.targets[0]
            self.service = services[0]
        else:
            self.host, self.service = view.host, view.service
        self.clock = clock
        self.sessions = sessions if sessions is not None else Sessions(clock=clock)
        #: No action that changes anything on a host is offered (kill, relaunch, …).
        self.read_only = read_only

    def on_mount(self) -> None:
        if self.fleet is not None:
            self.push_screen(self._fleet_screen(self.fleet))
        else:
            self.push_screen(self._host_screen())

    def on_fleet_screen_service_chosen(self, message: FleetScreen.ServiceChosen) -> None:
        """Drill in: the chosen service's host screen over the fleet (Esc pops it)."""
        self.host, self.service = message.host, message.service
        self.push_screen(self._host_screen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return isinstance(self.screen, HostScreen)
        if action == "switch_service":
            return isinstance(self.screen, HostScreen) and len(self.host.services) > 1
        return True

    def action_switch_service(self, step: int = 1, name: str | None = None) -> None:
        """Show another service of the same host (``tab`` / ``shift+tab``, or by name)."""
        names = list(self.host.services)
        if len(names) < 2 or not isinstance(self.screen, HostScreen):
            return
        if name is None:
            name = names[(names.index(self.service.name) + step) % len(names)]
        self.service = self.host.services[name]
        self.switch_screen(self._host_screen())

    async def action_back(self) -> None:
        """From a host screen to the fleet: the one under it, or (opened directly) the
        fleet of its host's services, which takes the host screen's place with its row
        selected."""
        if not isinstance(self.screen, HostScreen):
            return
        if self.fleet is not None:
            self.pop_screen()
            return
        self.fleet = Fleet.of([(self.host, list(self.host.services.values()))], self.host.name)
        fleet = self._fleet_screen(self.fleet)
        await self.switch_screen(fleet)
        table, label = fleet.table, self.service.label
        if label in table.keys:
            table.action_move_to(table.keys.index(label))

    def _fleet_screen(self, fleet: Fleet) -> FleetScreen:
        return FleetScreen(fleet, self.sessions, clock=self.clock)

    def running_action(self) -> str | None:
        """What a host screen is doing to its host now (``kill on gpu2/qwen``), or None.
        An action still waiting for its confirmation has done nothing yet: not counted."""
        if isinstance(self.screen, ConfirmAction):
            return None
        for screen in self.screen_stack:
            if isinstance(screen, HostScreen) and screen.action_running:
                worker = screen._action_worker
                name = worker.name if worker is not None else "an action"
                return f"{name} on {screen.service.label} is running"
        return None

    async def action_quit(self) -> None:
        """Quit; while an action runs, only after asking (``q``, ``Ctrl+C``, the palette)."""
        running = self.running_action()
        if running is None:
            self.exit()
            return
        if isinstance(self.screen, ConfirmQuit):
            self.exit()  # asked already: Ctrl+C twice
            return
        self.push_screen(ConfirmQuit(running), self._quit_answered)

    def _quit_answered(self, quit_anyway: bool | None) -> None:
        if quit_anyway:
            self.exit()

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save an SVG of the screen in :func:`screenshot_folder` (made if missing) and say
        where, or say why it could not be saved."""
        folder = Path(path).expanduser() if path else screenshot_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(filename, str(folder))
        except OSError as error:
            self.notify(
                f"cannot save the screenshot in {folder}: {error.strerror or error}",
                title="screenshot",
                severity="error",
                markup=False,
            )
            return
        self.notify(f"saved {saved}", title="screenshot", markup=False)

    def _host_screen(self) -> HostScreen:
        """The host screen of :attr:`service` on :attr:`host`."""
        session = self.sessions.session(self.host, self.service)
        return HostScreen(session, self.sessions, clock=self.clock, read_only=self.read_only)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands (the screenshot saving where
        :meth:`action_screenshot` says), then every key of ``screen`` that can be used
        now, named as ``?`` names it, with its keys, then the host's other services."""
        for command in super().get_system_commands(screen):
            if command.title == "Screenshot":
                yield SystemCommand(
                    "Screenshot",
                    f"Save an SVG of the screen in {screenshot_folder()}",
                    lambda: self.set_timer(0.1, self.action_screenshot),
                )
            else:
                yield command
        yield from key_commands(screen)
        if not isinstance(screen, HostScreen):
            return
        for name in self.host.services:
            if name != self.service.name:
                yield SystemCommand(
                    f"Show {self.host.name}/{name}",
                    "another service of this host (tab / shift+tab step through them)",
                    partial(self.action_switch_service, 0, name),
                )

    async def on_unmount(self) -> None:
        await self.sessions.close()
