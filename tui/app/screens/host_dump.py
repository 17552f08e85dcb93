"""The host screen's ``d`` key: capture what may explain a hang, and say where it went.

The dump runs in a worker of its own group (``dump:<host>``), one at a time
(:func:`tui.session.dump.run_dump`, the same one ``babysit dump`` runs, which asks
the host afresh first): the progress line says what it is doing, then the bundle's
path, which a notification and the log pane repeat. Without a verified run ``d`` is
greyed out, and pressed anyway it says why. A dump signals and changes nothing on the
host, so ``d`` works read-only too.

:class:`HostDump` is a part of :class:`~tui.app.screens.host.HostScreen`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker

from tui.core.dump import dump_target, no_target_why
from tui.core.sanitize import printable
from tui.errors import BabysitError
from tui.session.dump import DumpWritten, run_dump

if TYPE_CHECKING:
    from tui.app.screens.host import HostScreen

#: The worker's name (its group is ``dump:<host>``), and the notifications' title.
DUMP = "dump"
#: Seconds the notification with the bundle's path stays up.
PATH_NOTE_SECONDS = 30.0


class HostDump:
    """The host screen's dump (mixed into :class:`HostScreen`)."""

    #: The worker of the dump on its way from this screen, if any.
    _dump_worker: Worker[None] | None = None

    @property
    def dump_running(self: HostScreen) -> bool:
        return self._dump_worker is not None and not self._dump_worker.is_finished

    def can_dump(self: HostScreen) -> bool:
        """Whether the latest assessment has a verified run to dump, and none is on its way."""
        a = self.assessment
        return not self.dump_running and a is not None and dump_target(a) is not None

    def key_d(self: HostScreen) -> None:
        """``d`` while it is greyed out (Textual runs no disabled action): why."""
        if not self.can_dump():
            self.action_dump()

    def action_dump(self: HostScreen) -> None:
        """Take a dump now, unless one is on its way or there is no verified run."""
        if self.dump_running:
            self._dump_said("a dump is on its way already")
            return
        a = self.assessment
        if a is None:
            self._dump_said(f"{self.host.name} has not answered yet: no run to dump")
            return
        if dump_target(a) is None:
            self._dump_said(no_target_why(a))
            return
        label = self.service.label
        self.progress.running(lambda elapsed: f"dump: {label} … {elapsed:.0f} s")
        self._dump_worker = self.run_worker(
            self._dump_flow(), name=DUMP, group=f"dump:{self.host.name}", exit_on_error=False
        )
        self.refresh_bindings()

    async def _dump_flow(self: HostScreen) -> None:
        def progress(words: str) -> None:
            self.progress.running(lambda elapsed: f"dump: {words} … {elapsed:.0f} s")

        try:
            written = await run_dump(self.session, progress=progress)
        except BabysitError as error:
            said = f"dump: {error.message}"
            self.progress.finished(said, ok=False)
            self.note(said, ok=False)
            self._dump_said(error.message)
        except Exception as error:  # a bug: said, never a crash of the screen
            said = f"dump: {type(error).__name__}: {error}; this is a bug in babysit"
            self.progress.finished(said, ok=False)
            self.note(said, ok=False)
        else:
            self.dump_finished(written)
        finally:
            self.refresh_bindings()

    def dump_finished(self: HostScreen, written: DumpWritten) -> None:
        """The bundle's path on the progress line, in the log pane and in a notification."""
        denied = written.dump.ptrace.allowed is False
        said = f"dump written: {written.path}" + (" (ptrace denied: no stacks)" if denied else "")
        self.progress.finished(said, ok=True)
        self.note(said, ok=True)
        self.notify(
            printable(written.path), title="dump written", timeout=PATH_NOTE_SECONDS, markup=False
        )

    def _dump_said(self: HostScreen, why: str) -> None:
        self.notify(printable(why), title=DUMP, severity="warning", markup=False)
