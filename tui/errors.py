"""One error hierarchy for everything babysit says went wrong.

Every error carries a short ``title`` (for a notification or a JSON ``error.kind``)
and a ``message`` written for the person at the terminal: plain words, what
happened and, where we know it, what to do next. The CLI maps each class to an
exit status in one place (``tui.cli``); the app maps them to notifications.
"""

from __future__ import annotations

from tui.core.sanitize import printable


class BabysitError(Exception):
    """Base of every expected failure. Never raised bare."""

    title = "error"
    #: Exit status the CLI uses when this error ends a command.
    exit_status = 1

    def __init__(self, message: str, *, title: str | None = None) -> None:
        # Messages quote hosts (their errors, paths) and configs: shown, never obeyed, and
        # one line (a host's newline cannot start a line that looks like babysit's).
        message = printable(message)
        super().__init__(message)
        self.message = message
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, str]:
        return {"kind": self.title, "message": self.message}


class ConfigError(BabysitError):
    """hosts.yaml is missing, unreadable or wrong. The message names file, line and key."""

    title = "config"
    exit_status = 2


class UsageError(BabysitError):
    """The command line asked for something that does not exist."""

    title = "usage"
    exit_status = 2


class TransportError(BabysitError):
    """Running something on a host failed before the command itself could answer."""

    title = "transport"
    #: Like monitoring plugins: 3 is "unknown" — we could not find out.
    exit_status = 3


class HopFailed(TransportError):
    """A hop on the way (pct exec, docker exec) failed, not the command behind it: a
    stopped or missing container, no runtime CLI, no python3 inside."""

    title = "hop"

    def __init__(self, message: str, *, hop: str = "", words: str = "") -> None:
        super().__init__(message)
        #: The hop that failed, in its chain words (``docker exec sglang-0``).
        self.hop = printable(hop)
        #: What it said, without the chain before it.
        self.words = printable(words) if words else self.message


class HostUnreachable(TransportError):
    """No connection: refused, timed out, name not found, or lost and not yet back."""

    title = "unreachable"


class HostKeyError(TransportError):
    """The host's key is unknown or does not match known_hosts. Never retried."""

    title = "host-key"


class AuthError(TransportError):
    """The host refused every key or user we offered. Never retried."""

    title = "auth"


class CommandTimeout(TransportError):
    """A remote command did not finish in the time it was given; it was ended."""

    title = "timeout"


class RemoteCommandMissing(TransportError):
    """The program asked for does not exist on the host (exit status 127)."""

    title = "missing-command"


class InternalError(BabysitError):
    """A failure babysit did not expect: a bug. Said in one line; ``BABYSIT_DEBUG=1``
    shows the traceback instead."""

    title = "internal"
    #: sysexits' EX_SOFTWARE.
    exit_status = 70

    def __init__(self, error: BaseException) -> None:
        text = str(error)
        if len(text) > 300:
            text = text[:299] + "…"
        super().__init__(
            f"internal error ({type(error).__name__}: {text}); this is a bug in babysit — "
            "run again with BABYSIT_DEBUG=1 to see where, and report it"
        )
