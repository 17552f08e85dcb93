"""The audit log: one record per end of every action on a host, whoever acted.

Every record has the same keys, whatever the action (kill, relaunch, wait) and
however it ended (done, refused, failed, the connection lost): ``time``,
``user``, ``host``, ``service``, ``action``, ``actor`` (``cli`` or ``screen``),
``identity`` (``boot_id``, ``pid``, ``start_ticks``, ``run_id``; each null when
unknown; a container's run has ``run_id`` ``<full id>@<StartedAt, UTC>``),
``command`` (the argv, its secrets redacted; null when there is none),
``ok`` and ``result`` (in words).

The log is ``$BABYSIT_STATE/actions.jsonl`` (by default
``~/.local/state/babysit/actions.jsonl``) on this machine, one JSON line per
record, the user's alone: the file 0600, in folders made 0700.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tui.core.containers import ContainerState, run_id
from tui.core.runs import Run
from tui.core.secrets import redact_argv

#: Who acted: a ``babysit`` verb, or a key on the host screen.
Actor = Literal["cli", "screen"]
#: Where the audit log lives when $BABYSIT_STATE is not set.
DEFAULT_STATE = "~/.local/state/babysit"
#: The audit log's name in the state folder.
LOG_NAME = "actions.jsonl"


def who() -> str:
    """``user@machine`` of whoever runs babysit here."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def container_run_id(container: ContainerState) -> str:
    """A container's run as one word (:func:`tui.core.containers.run_id`)."""
    return run_id(container.id, container.started_at, container.restart_count)


@dataclass(frozen=True)
class Identity:
    """Which run an action was about; a field is None when it is not known."""

    boot_id: str | None = None
    pid: int | None = None
    start_ticks: int | None = None
    run_id: str | None = None

    @classmethod
    def of_run(cls, run: Run, boot_id: str | None) -> Identity:
        """A run the probe saw (its root process); the probe does not know its run id."""
        return cls(boot_id or None, run.root.pid, run.root.start_ticks)

    @classmethod
    def of_container(
        cls, container: ContainerState, run: Run | None, boot_id: str | None
    ) -> Identity:
        """A container's run: its first process, and ``<full id>@<StartedAt>`` as run id."""
        return cls(
            boot_id or None,
            container.pid or (run.root.pid if run is not None else None),
            run.root.start_ticks if run is not None else None,
            container_run_id(container),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "boot_id": self.boot_id,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "run_id": self.run_id,
        }


@dataclass(frozen=True)
class AuditRecord:
    """One end of one action; ``command`` holds its secrets redacted."""

    host: str
    service: str
    action: str
    actor: Actor
    identity: Identity
    command: tuple[str, ...] | None
    ok: bool
    result: str

    @classmethod
    def of(
        cls,
        host: str,
        service: str,
        action: str,
        actor: Actor,
        *,
        identity: Identity,
        command: Sequence[str] | None,
        ok: bool,
        result: str,
    ) -> AuditRecord:
        shown = None if command is None else redact_argv(command)
        return cls(host, service, action, actor, identity, shown, ok, result)

    def to_json(self, *, at: float, user: str) -> dict[str, object]:
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(at)),
            "user": user,
            "host": self.host,
            "service": self.service,
            "action": self.action,
            "actor": self.actor,
            "identity": self.identity.to_json(),
            "command": None if self.command is None else list(self.command),
            "ok": self.ok,
            "result": self.result,
        }


def log_path() -> str:
    state = os.environ.get("BABYSIT_STATE", DEFAULT_STATE)
    return os.path.join(os.path.expanduser(state), LOG_NAME)


def write(record: AuditRecord) -> None:
    """Append ``record`` to the audit log (blocking: a file write)."""
    path = log_path()
    private_folder(os.path.dirname(path))
    line = json.dumps(record.to_json(at=time.time(), user=who()))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if os.fstat(fd).st_mode & 0o077:  # made readable by others outside babysit
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o600)
        out.write(line + "\n")


async def append(record: AuditRecord) -> None:
    """:func:`write`, off the event loop. The write finishes even when the caller is
    cancelled while it runs."""
    await asyncio.to_thread(write, record)


def private_folder(path: str) -> None:
    """Make the folder ``path`` and its missing parents, each one mode 0700."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path.rstrip(os.sep))
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
