"""What a hop is: one way of reaching a shell on the way to a host (:class:`Hop`), and
what babysit knows of one kind of hop (:class:`HopSpec`).

A host's chain is a base, where commands start (this machine, or an SSH server over
the pool's link), then prefix hops, each putting its argv words before the command
(``pct exec 105 --``, ``docker exec -i sglang-0``). Commands pass through the hops in
chain order; their answers come back the other way.

A hop owns everything of its kind: its hosts.yaml keys (and their mistakes, with
file, line and key), its argv prefix, its words in the chain, the python the agent
runs with behind it, the words of its own failures (told apart from the command's
exit status), and how ``babysit check`` asks whether it answers. The runtime side
(processes, links, channels) is :mod:`tui.remote`'s, and knows no kind by name.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from tui.core.sanitize import printable

if TYPE_CHECKING:
    import yaml

    from tui.config import SshEndpoint
    from tui.hostsfile.reader import Reader

#: The python the agent runs with when no hop chooses another.
DEFAULT_PYTHON = "python3"
#: The exit status shells give a command that does not exist; every hop says it so.
EXIT_NOT_FOUND = 127


class Outcome(Protocol):
    """What came back through a chain: a finished command (see ``Completed``)."""

    @property
    def exit_status(self) -> int | None: ...

    @property
    def stdout(self) -> bytes: ...

    @property
    def stderr(self) -> bytes: ...


@dataclass(frozen=True)
class Answer:
    """An outcome as a hop passes it on (:meth:`Hop.settle`)."""

    exit_status: int | None
    stdout: bytes
    stderr: bytes


@dataclass(frozen=True)
class HopAnswer:
    """Whether a hop answers, in a few plain words (``babysit check``)."""

    ok: bool
    words: str


class Hop(abc.ABC):
    """One hop of a chain, as hosts.yaml gives it: a frozen value (each kind's module
    subclasses it as a frozen dataclass)."""

    #: The hosts.yaml key that names this kind (``SPEC.kind`` of its module).
    kind: ClassVar[str]

    @property
    @abc.abstractmethod
    def texts(self) -> tuple[str, ...]:
        """Its words in the chain, e.g. ``("ssh root@gpu1",)``; most hops have one."""

    @property
    def endpoint(self) -> SshEndpoint | None:
        """Where a chain based on this hop starts its commands: an SSH server, or None
        for this machine. Only a chain's first hop is asked."""
        return None

    def prefix(self) -> tuple[str, ...]:
        """The argv words this hop puts before the command (none for a base)."""
        return ()

    def python(self, outer: str) -> str:
        """The python the agent runs with behind this hop; ``outer`` is the one before it."""
        return outer

    def settle(self, answer: Answer) -> Answer:
        """``answer`` as this hop passes it on: a hop with its own way of saying that a
        command does not exist says it as exit status 127, with its words on stderr."""
        return answer

    def failure(self, outcome: Outcome) -> str | None:
        """Plain words when this hop, not the command behind it, failed; else None."""
        return None

    def check_command(self) -> tuple[str, ...] | None:
        """An argv that asks, on the shell before this hop, whether it answers; None
        runs ``true`` through the hop instead (see :meth:`check_answer`)."""
        return None

    def check_answer(self, outcome: Outcome) -> HopAnswer:
        """What the check's outcome says of this hop."""
        if outcome.exit_status == 0:
            return HopAnswer(True, "answers")
        words = self.failure(outcome) or last_line(outcome.stderr)
        return HopAnswer(False, words or f"exit status {outcome.exit_status}")


def last_line(data: bytes) -> str:
    """The last non-empty line of a host's output, made printable (for one-line messages)."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return printable(lines[-1].strip()) if lines else ""


@dataclass(frozen=True)
class HopInput:
    """What a hop's parser reads: its own value in a host's entry, and the entry's
    other keys (for the options it shares, like ssh's ``port:``)."""

    reader: Reader
    #: The hop's key path, e.g. ``hosts.gpu1.docker``.
    key: str
    #: The host's key path, e.g. ``hosts.gpu1``.
    host_key: str
    node: yaml.Node
    entries: Mapping[str, tuple[yaml.Node, yaml.Node]] = field(default_factory=dict)

    def option(self, name: str) -> yaml.Node | None:
        """The value node of the host's key ``name``, if it is given."""
        entry = self.entries.get(name)
        return entry[1] if entry is not None else None


@dataclass(frozen=True)
class HopSpec:
    """One kind of hop: how hosts.yaml names it and where it sits in a chain.

    ``parse`` reads the hop's key (and its ``options``) and returns its hops: one,
    or for a kind that brings its own base (pct reaches its node over ssh) the base
    first. A host has exactly one kind with ``base`` set; the other kinds' hops follow
    in ``rank`` order."""

    kind: str
    #: How hosts.yaml's key is written, for messages (``ssh:``, ``local: true``).
    written: str
    rank: int
    base: bool
    parse: Callable[[HopInput], tuple[Hop, ...]]
    #: Host-level keys this kind reads besides its own (ssh's and pct's ``port:``…).
    options: tuple[str, ...] = ()
