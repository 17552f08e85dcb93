"""The Textual app: ``babysit HOST [SERVICE]``, or the fleet view of many hosts.

:class:`BabysitApp` is also the factory tests use: pass ``follower_factory`` to
feed the screen fixed rows, ``transport_factory`` for a stand-in link, and
``clock`` to freeze the header's time; ``ops_factory`` and
``anchor_follower_factory`` stand in for kill, relaunch and the follower a
relaunch starts. ``read_only`` offers no action that changes the host.

With ``fleet`` the app opens the :class:`FleetScreen` instead; ``Enter`` on a row
pushes that service's host screen (``host`` and ``service`` then name the one
shown), and ``Esc`` pops back. ``fleet_report`` stands in for the round trip to
each host (tests pass fixed reports).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from tui.app.operations import HostOps, TransportOps
from tui.app.screens.fleet import FLEET_TAIL, Fleet, FleetReport, FleetScreen
from tui.app.screens.host import HOST_ACTIONS, AnchorFollower, HostScreen, RowSource
from tui.config import Host, Service
from tui.core.follow import Start
from tui.core.logcursor import LogCursor
from tui.core.metrics import PrometheusReaders
from tui.core.report import ServiceReport
from tui.core.runs import Assessment
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.follow import Follower
from tui.remote.probe import APPS_MAX_AGE, ProbeChannel, report_host

#: Lines shown from before the app started.
DEFAULT_TAIL = 500

FollowerFactory = Callable[[Transport], RowSource]
ProbeFactory = Callable[[Transport], Callable[[], Awaitable[Assessment | ServiceReport]]]
TransportFactory = Callable[[Host, SshLinks], Transport]
OpsFactory = Callable[[Transport], HostOps]
AnchorFollowerFactory = Callable[[Transport], AnchorFollower]

#: Command palette entries for the host actions: (action, title, help).
ACTION_COMMANDS = {
    "kill": ("Kill the run", "Stop the verified run: SIGTERM, grace, then SIGKILL (asks first)"),
    "relaunch": ("Relaunch", "Start the service from its launch: in hosts.yaml (asks first)"),
    "replace": ("Replace the run", "Kill the verified run, then relaunch (asks first)"),
}


class BabysitApp(App[int]):
    """Watches one service on one host, or a fleet of them. Owns the SSH connections it opens
    (one per endpoint, shared by the fleet's refreshes and every host screen)."""

    CSS_PATH: ClassVar[list[str]] = ["babysit.tcss", "fleet.tcss"]
    TITLE = "babysit"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit", id="app.quit"),
        Binding("escape", "back", "fleet", id="app.back", tooltip="back to the fleet"),
    ]

    def __init__(
        self,
        host: Host,
        service: Service,
        *,
        follower_factory: FollowerFactory | None = None,
        start: Start | None = None,
        clock: Callable[[], float] = time.time,
        transport_factory: TransportFactory = open_transport,
        probe_factory: ProbeFactory | None = None,
        probe_interval: float = 2.0,
        read_only: bool = False,
        ops_factory: OpsFactory | None = None,
        anchor_follower_factory: AnchorFollowerFactory | None = None,
        fleet: Fleet | None = None,
        fleet_report: FleetReport | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.service = service
        self.start = start or Start(tail=DEFAULT_TAIL)
        self.clock = clock
        self.links = SshLinks()
        self._follower_factory = follower_factory or self._follower
        self._transport_factory = transport_factory
        self._probe_factory = probe_factory or self._probe
        self.probe_interval = probe_interval
        #: No action that changes anything on a host is offered (kill, relaunch, …).
        self.read_only = read_only
        self._ops_factory = ops_factory or (lambda transport: TransportOps(transport, self.service))
        self._anchor_follower_factory = anchor_follower_factory or self._anchor_follower
        #: The hosts and services of the fleet view, or None for one host screen.
        self.fleet = fleet
        self._fleet_report = fleet_report or self._report
        self._transports: dict[str, Transport] = {}
        self._channels: dict[str, ProbeChannel] = {}
        #: What turns /metrics counters into rates, for every report the app asks for
        #: (fleet rows and host screens alike), kept while the app runs.
        self.prometheus = PrometheusReaders()

    def _transport(self, host: Host) -> Transport:
        """One transport per host, shared by the fleet's refreshes and its host screen."""
        if host.name not in self._transports:
            self._transports[host.name] = self._transport_factory(host, self.links)
        return self._transports[host.name]

    def _channel(self, host: Host) -> ProbeChannel:
        """One long-lived probe agent per host, shared by the fleet and its host screens."""
        if host.name not in self._channels:
            self._channels[host.name] = ProbeChannel(self._transport(host))
        return self._channels[host.name]

    async def _report(self, host: Host, services: Sequence[Service]) -> list[ServiceReport]:
        transport = self._transport(host)
        return await report_host(
            transport,
            host,
            services,
            tail_bytes=FLEET_TAIL,
            channel=self._channel(host),
            apps_max_age=APPS_MAX_AGE,
            prometheus=self.prometheus,
        )

    def _follower(self, transport: Transport) -> RowSource:
        return Follower(transport, self.service.log, label=self.service.label, start=self.start)

    def _probe(self, transport: Transport) -> Callable[[], Awaitable[Assessment | ServiceReport]]:
        host, service = self.host, self.service
        channel = self._channel(host)

        async def probe() -> ServiceReport:
            (report,) = await report_host(
                transport,
                host,
                [service],
                tail_bytes=0,
                channel=channel,
                apps_max_age=APPS_MAX_AGE,
                prometheus=self.prometheus,
            )
            return report

        return probe

    def _writer_follower(self, transport: Transport) -> Callable[[int], RowSource]:
        def follow_pid(pid: int) -> RowSource:
            return Follower(
                transport, self.service.log, label=self.service.label, start=self.start, pid=pid
            )

        return follow_pid

    def _anchor_follower(self, transport: Transport) -> AnchorFollower:
        def follow_from(cursor: LogCursor) -> RowSource:
            return Follower(
                transport, self.service.log, label=self.service.label, start=Start(cursor=cursor)
            )

        return follow_from

    def on_mount(self) -> None:
        if self.fleet is not None:
            self.push_screen(
                FleetScreen(
                    self.fleet.targets,
                    self._fleet_report,
                    clock=self.clock,
                    interval=self.probe_interval,
                    timeout=self.fleet.timeout,
                    title=self.fleet.title,
                )
            )
        else:
            self.push_screen(self._host_screen())

    def on_fleet_screen_service_chosen(self, message: FleetScreen.ServiceChosen) -> None:
        """Drill in: the chosen service's host screen over the fleet (Esc pops it)."""
        self.host, self.service = message.host, message.service
        self.push_screen(self._host_screen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.fleet is not None and isinstance(self.screen, HostScreen)
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

    def action_back(self) -> None:
        if self.fleet is not None and isinstance(self.screen, HostScreen):
            self.pop_screen()

    def _host_screen(self) -> HostScreen:
        """The host screen of :attr:`service` on :attr:`host`."""
        # Opening a transport only builds it; connecting happens in the follower's worker.
        transport = self._transport(self.host)
        follower = self._follower_factory(transport)
        return HostScreen(
            self.host,
            self.service,
            transport,
            follower,
            clock=self.clock,
            probe=self._probe_factory(transport),
            writer_follower=self._writer_follower(transport),
            probe_interval=self.probe_interval,
            ops=self._ops_factory(transport),
            anchor_follower=self._anchor_follower_factory(transport),
            read_only=self.read_only,
        )

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, help, and each host action allowed now."""
        yield from super().get_system_commands(screen)
        if not isinstance(screen, HostScreen):
            return
        yield SystemCommand("Help", "The keys of this screen", screen.action_help)
        for name in self.host.services:
            if name != self.service.name:
                yield SystemCommand(
                    f"Show {self.host.name}/{name}",
                    "another service of this host (tab / shift+tab step through them)",
                    partial(self.action_switch_service, 0, name),
                )
        for action in HOST_ACTIONS:
            if screen.check_action(action, ()):
                title, help_text = ACTION_COMMANDS[action]
                yield SystemCommand(title, help_text, partial(screen.run_action, action))

    async def on_unmount(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        await self.links.close()
