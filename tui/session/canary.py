"""One canary of a watched service: probe, request, ask, read, and the facts told.

:func:`run_canary` is the one way babysit sends a canary (``babysit canary``, the
host screen's ``c`` key and ``canary.every`` alike): it takes the service's
verified run (from a fresh round trip, or the assessment given), finds the model's
folder in what the run runs with (its argv, then the args line it printed), builds
the request (:func:`tui.core.canary.canary_request`), has the host's agent send it
(:func:`tui.remote.canary.ask_canary`) and reads the answer
(:func:`tui.core.canary.read_canary`). The session's facts are told the canary was
sent before it goes, and its result when it ends, whatever the end: the report
shows it, and a canary in flight is pending work. One canary at a time per service.

It never raises for a host that cannot be asked: that is an UNREACHABLE result
with the reason, and so is an answer later than the canary's timeout plus
:data:`ANSWER_MARGIN`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.core.canary import (
    CanaryOutcome,
    CanaryResult,
    canary_request,
    model_folder,
    read_canary,
    running_values,
)
from tui.core.launch.diff import LaunchDiff
from tui.core.runs import Assessment, Process
from tui.core.verdicts import Verdict
from tui.errors import BabysitError
from tui.remote.canary import CHANNEL_MARGIN, ask_canary

if TYPE_CHECKING:
    from tui.session.service import ServiceSession

#: Verdicts whose run a canary may be sent to: ready (or on its way), and babysit's.
ASKABLE = frozenset({Verdict.LIVE, Verdict.WEDGED, Verdict.STARTING})
#: Seconds past the agent's own deadline (the canary's timeout and the channel's margin)
#: babysit waits for its answer before it gives up on the host.
ANSWER_MARGIN = CHANNEL_MARGIN + 5.0

#: Told the pid a canary is being sent to, right before it goes.
Sent = Callable[[int], None]


class CanaryBusy(BabysitError):
    """A canary of this service is on its way already (one at a time)."""

    title = "canary"


def target(a: Assessment) -> Process | None:
    """The process a canary is tied to: the root of a run ready or starting (the run's
    identity, a container's first process too), or None without one."""
    run = a.run
    if run is None or a.verdict not in ASKABLE:
        return None
    return run.root


def model_dir(engine: str, launch: LaunchDiff | None) -> str | None:
    """The model's folder the run names (its argv first, then its args line)."""
    return model_folder(engine, running_values(launch)) if launch is not None else None


async def run_canary(
    session: ServiceSession,
    *,
    assessment: Assessment | None = None,
    sent: Sent | None = None,
) -> CanaryResult:
    """Send ``session``'s service one canary and read its answer.

    ``assessment``: the run to ask, as the latest answer saw it (None: ask the host
    now). ``sent``: told the pid right before the canary goes. Raises
    :class:`CanaryBusy` when a canary of this service is on its way, and nothing else:
    whatever goes wrong is the result's (a bug in babysit too, said as an ERROR)."""
    if session.canary_running:
        raise CanaryBusy(f"{session.label}: a canary is on its way already; wait for its answer")
    session.canary_running = True
    try:
        return await _run(session, assessment, sent)
    except Exception as error:  # a bug in babysit: said as the canary's end, never hidden
        result = CanaryResult(
            session.host.name,
            session.service.name,
            CanaryOutcome.ERROR,
            error=f"the canary crashed: {type(error).__name__}: {error}; this is a bug in babysit",
        )
        session.facts.canary_done(result)
        return result
    finally:
        session.canary_running = False


async def _run(
    session: ServiceSession, assessment: Assessment | None, sent: Sent | None
) -> CanaryResult:
    service, host = session.service, session.host.name
    engine = service.engine.value
    if assessment is None:
        assessment = await session.fresh()
        if session.state.failure is not None:
            return _unasked(session, assessment, CanaryOutcome.UNREACHABLE, session.state.failure)
    a = assessment
    process = target(a)
    if process is None:
        why = f"no run ready to ask ({a.verdict.word}: {a.summary}); nothing was sent"
        return _unasked(session, a, CanaryOutcome.NO_RUN, why)
    if service.port is None:
        why = "hosts.yaml gives it no port: (a canary goes to the server's port); nothing was sent"
        return _unasked(session, a, CanaryOutcome.ERROR, why, process)
    launch = session.facts.report(a.checked_at).launch
    request = canary_request(
        engine,
        service.canary,
        pid=process.pid,
        start_ticks=process.start_ticks,
        port=service.port,
        model_dir=model_dir(engine, launch),
    )
    if request is None:
        why = f"babysit cannot send a canary to a {service.engine.value} server; nothing was sent"
        return _unasked(session, a, CanaryOutcome.ERROR, why, process)
    transport = session.transport
    if transport is None:
        raise RuntimeError(f"{session.label}: no transport to ask the host through")
    session.facts.canary_sent(_host_now(session, a))
    if sent is not None:
        sent(process.pid)
    timeout = service.canary.timeout
    try:
        answer = await asyncio.wait_for(
            ask_canary(transport, request, timeout=timeout), timeout + ANSWER_MARGIN
        )
    except asyncio.TimeoutError:
        result = _unasked(
            session,
            a,
            CanaryOutcome.UNREACHABLE,
            f"the agent on {host} did not answer within {timeout + ANSWER_MARGIN:g} s",
            process,
        )
    except BabysitError as error:
        result = _unasked(session, a, CanaryOutcome.UNREACHABLE, error.message, process)
    except asyncio.CancelledError:
        why = "babysit stopped waiting for the answer (the view closed)"
        session.facts.canary_done(_unasked(session, a, CanaryOutcome.UNREACHABLE, why, process))
        raise
    else:
        result = read_canary(
            host,
            service.name,
            engine,
            answer,
            utc_offset=a.utc_offset,
            started_at=process.start_time,
        )
    session.facts.canary_done(result)
    return result


def _unasked(
    session: ServiceSession,
    a: Assessment,
    outcome: CanaryOutcome,
    why: str,
    process: Process | None = None,
) -> CanaryResult:
    """A result with no answer of the server's: why, and the run it was meant for."""
    return CanaryResult(
        host=session.host.name,
        service=session.service.name,
        outcome=outcome,
        run_pid=process.pid if process is not None else None,
        run_start_ticks=process.start_ticks if process is not None else None,
        run_started_at=process.start_time if process is not None else None,
        error=why,
        utc_offset=a.utc_offset,
    )


def _host_now(session: ServiceSession, a: Assessment) -> float:
    """The host's clock now: the assessment's time, plus what has passed here since."""
    state = session.state
    if state.answered_at is None or session.watch is None:
        return a.checked_at
    return a.checked_at + max(0.0, session.watch.clock() - state.answered_at)
