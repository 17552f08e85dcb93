"""Starting the agent on a host: what its command line holds, what its stdin carries,
and where its own output begins.

The agent (the modules of :mod:`tui.agent` its mode needs, in one script: see
tui/remote/bundle.py) is sent on every use and never installed. Its command line
is the same short, fixed text for every request::

    python3 -I -S -c BOOTSTRAP

and everything that varies travels on its stdin, never in argv: first a header
line ``<source bytes> <request bytes>``, then the zlib-compressed script for the
request's mode, then the request's JSON. So no request's text (a service's ``match:`` regex, a log
path, a kill's pids) ever sits in a command line where the host's other users,
or babysit's own ``match:`` search, could see it; and the BOOTSTRAP text, which
holds :data:`AGENT_MARK`, is how the agent tells babysit's own processes (itself,
other agents, the shells that started them) from the servers it looks for.

What the agent prints begins with a mark line carrying a per-call nonce (see
:func:`start_mark`). A login shell that prints something on a non-interactive
login (a ``.bashrc`` that echoes) writes before the agent starts: those bytes
are skipped and kept as :attr:`AgentOutput.chatter`, so they can be named, and
can never be taken for an answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import cache, lru_cache

from tui import procfs
from tui.agent.protocol import AGENT_MARK
from tui.core.answers import AnswerError, Fields, decode
from tui.core.sanitize import clean_line
from tui.errors import TransportError
from tui.remote.bundle import bundle, mode_of
from tui.remote.transport import Completed, RemoteProcess, Transport

# Reads "<n> <m>\n", then n bytes of compressed source and m bytes of request, straight
# from fd 0 (no buffering, so what follows on stdin stays for the agent), and runs the
# source as __main__ with the request as its only argument.
_BOOT_CODE = f"""import os,sys
def r(n):
 b=b""
 while len(b)<n:
  c=os.read(0,n-len(b))
  if not c:sys.exit(70)
  b+=c
 return b
h=b""
while h[-1:]!=b"\\n":h+=r(1)
s,q=[int(x) for x in h.split()]
src=r(s)
sys.argv=["{AGENT_MARK}",r(q).decode("utf-8")]
import zlib
exec(compile(zlib.decompress(src),"{AGENT_MARK}","exec"))
"""
#: The agent's ``-c`` text: one line, with no single quote, so every shell on the way
#: keeps it whole (and it is found whole in the login shell's command line too).
BOOTSTRAP = (
    'exec("' + _BOOT_CODE.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '")'
)

#: The exit status of a bootstrap whose stdin ended before the agent arrived.
EXIT_NO_INPUT = 70

#: At most this many bytes before the agent's mark line are kept (and skipped).
MAX_CHATTER = 64 * 1024


@cache
def agent_source(mode: str) -> bytes:
    """What is sent for ``mode``: its script (:func:`tui.remote.bundle.bundle`), compressed."""
    return zlib.compress(bundle(mode).encode("utf-8"), 9)


def agent_argv(transport: Transport) -> list[str]:
    """The agent's command line on the transport's host: the same for every request,
    with the python the transport's hops choose."""
    python = transport.python
    # -I: no PYTHON* variables, user site or current folder can put another module in
    # the agent's way; -S: no site-packages to scan (the agent needs the stdlib only).
    return [python, "-I", "-S", "-c", BOOTSTRAP]


def start_mark(nonce: str) -> bytes:
    """The first line the agent prints: bytes before it are not the agent's."""
    return b"\x1e" + AGENT_MARK.encode() + b":" + nonce.encode() + b"\n"


@lru_cache(maxsize=1)
def client_chain() -> dict[str, object]:
    """This machine's boot id, and babysit's own process with every process above it
    as (pid, start ticks): when the host is this machine, the agent never takes any of
    them for a server, nor signals one. Read once: babysit's ancestors stay, and one
    that went is told by its start ticks on the host."""
    processes: list[tuple[int, int]] = []
    pid = os.getpid()
    while pid > 1 and all(pid != p for p, _ in processes):
        stat = procfs.stat_of(pid)
        if stat is None:
            break
        processes.append((pid, stat[2]))
        pid = stat[1]
    return {"boot_id": procfs.boot_id(), "processes": processes}


def agent_input(args: dict[str, object]) -> tuple[bytes, str]:
    """What the agent's stdin must begin with to run ``args``, and the call's nonce.
    Every request says who asks (:func:`client_chain`)."""
    nonce = secrets.token_hex(8)
    request = json.dumps(
        {**args, "nonce": nonce, "client": client_chain()}, separators=(",", ":")
    ).encode("utf-8")
    source = agent_source(mode_of(args).name)
    return b"%d %d\n" % (len(source), len(request)) + source + request, nonce


def chatter_text(chatter: bytes) -> str:
    """The stray bytes in a few printable words, for messages: ``'Welcome to …'``."""
    lines = [clean_line(line).strip() for line in chatter.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    first = lines[0] if lines else ""
    if len(first) > 60:
        first = first[:59] + "…"
    return f"'{first}…'" if len(lines) > 1 and not first.endswith("…") else f"'{first}'"


def chatter_note(chatter: bytes) -> str:
    """Plain words for a login shell that prints on a non-interactive login."""
    return (
        f"the login shell printed {chatter_text(chatter)} before babysit's agent started "
        "(a .bashrc or profile that prints on a non-interactive login); babysit skips it, "
        "but scripts over ssh see it too: print only when the shell is interactive "
        "(bash: [[ $- == *i* ]] || return)"
    )


@dataclass
class Preamble:
    """Finds the agent's mark line in its output; what came before is chatter."""

    mark: bytes
    chatter: bytes = b""
    found: bool = False
    _pending: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> bytes:
        """The agent's own bytes among ``data`` (nothing until the mark has been seen)."""
        if self.found:
            return data
        self._pending += data
        at = self._pending.find(self.mark)
        if at < 0:
            # Keep enough to find a mark split across chunks; the rest is chatter.
            keep = len(self.mark) - 1
            if len(self._pending) > keep:
                cut = len(self._pending) - keep
                self._add_chatter(bytes(self._pending[:cut]))
                del self._pending[:cut]
            return b""
        self._add_chatter(bytes(self._pending[:at]))
        rest = bytes(self._pending[at + len(self.mark) :])
        self._pending.clear()
        self.found = True
        return rest

    def finish(self) -> None:
        """The output ended: what is still pending was chatter too."""
        if not self.found and self._pending:
            self._add_chatter(bytes(self._pending))
            self._pending.clear()

    def _add_chatter(self, data: bytes) -> None:
        room = MAX_CHATTER - len(self.chatter)
        if room > 0:
            self.chatter += data[:room]


@dataclass(frozen=True)
class AgentResult:
    """A finished one-shot agent: ``completed.stdout`` holds only the agent's own output."""

    completed: Completed
    chatter: bytes = b""
    #: False when the agent never printed its mark (it did not start, or died first).
    started: bool = True

    @property
    def ok(self) -> bool:
        return self.completed.ok and self.started


def split_output(completed: Completed, nonce: str) -> AgentResult:
    preamble = Preamble(start_mark(nonce))
    rest = preamble.feed(completed.stdout)
    preamble.finish()
    return AgentResult(
        Completed(completed.argv, completed.exit_status, rest, completed.stderr, completed.signal),
        preamble.chatter,
        preamble.found,
    )


async def run_agent(
    transport: Transport, args: dict[str, object], *, timeout: float
) -> AgentResult:
    """Run the agent once with ``args`` and collect its output."""
    stdin, nonce = agent_input(args)
    completed = await transport.run(agent_argv(transport), timeout=timeout, stdin=stdin)
    return split_output(completed, nonce)


async def ask_agent(
    transport: Transport, args: dict[str, object], *, timeout: float, what: str
) -> Fields:
    """The one JSON answer (its last line) of an agent run once with ``args``; ``what``
    names it in errors (``the dump's``).

    Raises :class:`~tui.errors.TransportError` (a :class:`~tui.errors.HopFailed` when a
    hop failed) when the host could not be asked: no connection, the agent did not
    start, gave no answer or an answer that is no JSON object."""
    answer = await run_agent(transport, args, timeout=timeout)
    result = answer.completed
    where = transport.chain_text
    if not answer.started:
        printed = chatter_note(answer.chatter) if answer.chatter else "nothing"
        detail = result.stderr_line() or printed
        raise TransportError(f"{where}: the agent did not start ({detail})")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not result.ok or not lines:
        detail = result.stderr_line() or (
            f"exit status {result.exit_status}"
            if result.exit_status is not None
            else f"ended by {result.signal or 'a signal'}"
        )
        raise TransportError(f"{where}: {what} agent gave no answer ({detail})")
    try:
        return decode(lines[-1], f"{what} answer")
    except AnswerError as error:
        raise TransportError(f"{where}: {error}") from None


class AgentProcess(RemoteProcess):
    """A streaming agent: its chunks start after its mark line."""

    def __init__(self, process: RemoteProcess, nonce: str) -> None:
        self._process = process
        self.preamble = Preamble(start_mark(nonce))

    @property
    def chatter(self) -> bytes:
        return self.preamble.chatter

    @property
    def started(self) -> bool:
        return self.preamble.found

    async def chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        async for chunk in self._process.chunks():
            mine = self.preamble.feed(chunk)
            if mine:
                yield mine
        self.preamble.finish()

    async def read_stderr(self) -> bytes:
        return await self._process.read_stderr()

    async def write(self, data: bytes) -> None:
        await self._process.write(data)

    async def close_stdin(self) -> None:
        await self._process.close_stdin()

    async def wait(self) -> int | None:
        return await self._process.wait()


@contextlib.asynccontextmanager
async def stream_agent(
    transport: Transport, args: dict[str, object]
) -> AsyncIterator[AgentProcess]:
    """Start the agent with ``args`` and stream its output; leaving the block ends it
    (its stdin closes, and the agent exits on EOF, except while it kills: see tui/agent/kill.py).

    The caller keeps the agent's stdin: the long-lived modes read further requests
    from it, and all of them take its end as the sign that babysit is gone."""
    stdin, nonce = agent_input(args)
    async with transport.stream(agent_argv(transport), stdin=True) as process:
        # A write that fails means the agent is already gone; reading its output says why.
        with contextlib.suppress(TransportError, BrokenPipeError, ConnectionError):
            await process.write(stdin)
        yield AgentProcess(process, nonce)


__all__ = [
    "AGENT_MARK",
    "BOOTSTRAP",
    "EXIT_NO_INPUT",
    "AgentProcess",
    "AgentResult",
    "Preamble",
    "agent_argv",
    "agent_input",
    "chatter_note",
    "run_agent",
    "split_output",
    "start_mark",
    "stream_agent",
]
