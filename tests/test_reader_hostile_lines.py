"""Every engine's readers get through a 64 KiB line built to make a regex retry itself.

A line of one piece repeated (process tags, ``key: value, ``, ``[``, escapes, JSON
braces, digits, quotes) is what makes a search that retries a run of text from each
of its places read the run once per place: seconds at 64 KiB (the longest line a log
cursor passes on). Each case runs in a thread and fails when it has not finished
within :data:`HANG_GUARD` seconds: a guard against a hang, not a measure of speed.
The readers' line readers (``records``, ``line_time``), their args-line readers and
the stamps the agent matches are each run on every line.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import datetime

import pytest

from tests.support.wait import wait_until
from tui.core.logcursor import MAX_LINE_BYTES
from tui.engines import readable
from tui.engines.spec import EngineSpec, new_reader

pytestmark = pytest.mark.unit

#: Seconds one case may take before it is taken for a hang (a linear reader takes a
#: fraction of one on every line here, a quadratic one seconds on some).
HANG_GUARD = 20.0
#: The text every reader's quick test looks for before any regex runs.
GATES = (
    " throughput: metrics: rate: GPU batch Success eval time = n_gen = 1, tg = 1 t/s"
    ' draft acceptance = prompt processing, "message" pid=1) '
)
#: What may start a line before the repeated piece: nothing, or each engine's prefix
#: and metric head (so that every reader reads on past its first test).
HEADS = (
    "",
    "(EngineCore_DP0 ",
    "INFO 05-09 09:22:05 [loggers.py:259] Engine 000: Avg prompt throughput: ",
    "(EngineCore_DP0 pid=1) INFO 05-09 09:22:05 [loggers.py:259] ",
    "[2026-05-09 09:22:05 DP0 TP0] Decode batch. ",
    "[2026-05-09 09:22:05] Prefill batch. [",
    "2025-05-01T01:31:15.912301Z  INFO text_generation_router::server: Success ",
    "1.02.003.004 I slot update_slots: id  0 | task 1 | n_gen = 1, ",
    "non-default args: {'",
    'args: Namespace(model="',
)
#: The repeated pieces.
PIECES = {
    "process tags": "(EngineCore_DP0 pid=1) ",
    "a tag never closed": "pid=1 ",
    "tags not before a prefix": "(A pid=1) x",
    "key: value": "key: 1, ",
    "brackets": "[",
    "stamps": "INFO 05-09 09:22:05 ",
    "escapes": "\x1b[0;",
    "escape starts": "\x1b[",
    "json braces": '{"message": ',
    "open braces": "{",
    "digits": "1",
    "elapsed stamps": "1.02.",
    "router targets": "text_generation_router::",
    "span fields": 'total_time="',
    "escaped quotes": "\\'",
    "escaped double quotes": '\\"',
}


def lines(piece: str) -> list[str]:
    """Each head, ``piece`` repeated to fill a 64 KiB line, and the gates."""
    found = []
    for head in HEADS:
        room = MAX_LINE_BYTES - len(head) - len(GATES)
        found.append(head + piece * (room // len(piece)) + GATES)
    return found


def finishes(work: Callable[[], None], what: str) -> None:
    """Runs ``work`` in a thread; fails when it has not finished within the guard."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # re-raised below, in the test's thread
            failed.append(error)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name=what).start()
    wait_until(done.is_set, HANG_GUARD, what)
    if failed:
        raise failed[0]


def read_all(spec: EngineSpec, piece: str) -> None:
    assert spec.reader is not None
    reader = new_reader(
        spec.reader,
        reference=datetime(2026, 5, 9, 12),
        clock=datetime.now,
        started=datetime(2026, 5, 9, 9),
        utc_offset=0,
    )
    for line in lines(piece):
        reader.records(line, 0)
        reader.line_time(line)


@pytest.mark.parametrize("piece", sorted(PIECES))
@pytest.mark.parametrize("engine", sorted(spec.name for spec in readable()))
def test_a_reader_gets_through_a_long_line_of_one_piece(engine: str, piece: str) -> None:
    spec = next(spec for spec in readable() if spec.name == engine)
    finishes(lambda: read_all(spec, PIECES[piece]), f"{engine} reading {piece}")


def read_args(spec: EngineSpec, piece: str) -> None:
    assert spec.read_reported is not None
    for line in lines(piece):
        for head in spec.args_heads:
            spec.read_reported(line, head)


@pytest.mark.parametrize("piece", sorted(PIECES))
@pytest.mark.parametrize(
    "engine", sorted(spec.name for spec in readable() if spec.read_reported is not None)
)
def test_an_args_line_reader_gets_through_a_long_line_of_one_piece(engine: str, piece: str) -> None:
    spec = next(spec for spec in readable() if spec.name == engine)
    finishes(lambda: read_args(spec, PIECES[piece]), f"{engine} args of {piece}")


def match_stamps(spec: EngineSpec, piece: str) -> None:
    stamps = [re.compile(stamp.pattern) for stamp in spec.stamps]
    for line in lines(piece):
        for stamp in stamps:
            stamp.match(line)


@pytest.mark.parametrize("piece", sorted(PIECES))
@pytest.mark.parametrize("engine", sorted(spec.name for spec in readable()))
def test_the_agents_stamps_get_through_a_long_line_of_one_piece(engine: str, piece: str) -> None:
    spec = next(spec for spec in readable() if spec.name == engine)
    finishes(lambda: match_stamps(spec, PIECES[piece]), f"{engine} stamps on {piece}")
