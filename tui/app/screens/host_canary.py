"""The host screen's ``c`` key: send the service's run a canary, and show what came back.

The canary runs in a worker of its own group (``canary:<host>``), one at a time
(:func:`tui.session.canary.run_canary`, the same one ``babysit canary`` runs, which
asks the host afresh first): the progress line says where it was sent while it is
on its way, then its outcome; its lines open in a small modal
(:class:`~tui.app.screens.canary_result.CanaryResultScreen`), and the log pane gets
a note. Without a run to ask, ``c`` says why and sends nothing. A canary changes
nothing on the host, so ``c`` works read-only too.

:class:`HostCanary` is a part of :class:`~tui.app.screens.host.HostScreen`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker

from tui.app.screens.canary_result import CanaryResultScreen
from tui.core.canary import CanaryResult
from tui.core.sanitize import printable
from tui.session.canary import CanaryBusy, run_canary, target

if TYPE_CHECKING:
    from tui.app.screens.host import HostScreen

#: The worker's name (its group is ``canary:<host>``).
CANARY = "canary"


class HostCanary:
    """The host screen's canary (mixed into :class:`HostScreen`)."""

    #: The worker of the canary on its way from this screen, if any.
    _canary_worker: Worker[None] | None = None

    def action_canary(self: HostScreen) -> None:
        """Send a canary now, unless one is on its way or there is no run to ask."""
        label = self.service.label
        mine = self._canary_worker is not None and not self._canary_worker.is_finished
        if mine or self.session.canary_running:
            self._canary_said("a canary is on its way already; its answer comes first")
            return
        a = self.assessment
        if a is None:
            self._canary_said(f"{self.host.name} has not answered yet: no run to ask")
            return
        if target(a) is None:
            self._canary_said(f"no run ready to ask ({a.verdict.word}: {a.summary})")
            return
        self.progress.running(lambda elapsed: f"canary: asking {label} … {elapsed:.0f} s")
        self._canary_worker = self.run_worker(
            self._canary_flow(), name=CANARY, group=f"canary:{self.host.name}", exit_on_error=False
        )

    async def _canary_flow(self: HostScreen) -> None:
        def sent(pid: int) -> None:
            self.progress.running(lambda elapsed: f"canary sent to pid {pid} … {elapsed:.0f} s")

        try:
            result = await run_canary(self.session, sent=sent)
        except CanaryBusy as error:  # one of canary.every's went first
            self.progress.finished(f"canary: {error.message}", ok=False)
            return
        self.canary_finished(result)

    def canary_finished(self: HostScreen, result: CanaryResult) -> None:
        """The canary's outcome on the progress line and in the log pane; its lines in
        a modal."""
        lines = result.lines()
        said = lines[0] if lines else f"canary: {result.outcome.value}"
        self.progress.finished(said, ok=result.ok)
        self.note(said, ok=result.ok)
        self.app.push_screen(CanaryResultScreen(self.service.label, result))

    def _canary_said(self: HostScreen, why: str) -> None:
        self.notify(printable(why), title=CANARY, severity="warning", markup=False)
