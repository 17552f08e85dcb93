"""PyTorch's NCCL watchdog reporting a stuck collective, as each torch release writes it.

``ProcessGroupNCCL``'s watchdog thread (``torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp``)
logs through c10's glog-style logger straight to stderr, one line per message, with the
rank prefix ``[rank0]:`` and ``[E%m%d %H:%M:%S.%9N ProcessGroupNCCL.cpp:LINE]``:

- ``c10::str("[Rank ", rank_, "] ", "Watchdog caught collective operation timeout: ",
  work, " ran for ", timeElapsed.count(), " milliseconds before timing out.")``, ``work``
  printed as ``WorkNCCL(SeqNum=S, OpType=ALLREDUCE, NumelIn=N, NumelOut=N, Timeout(ms)=T)``;
- 2.4: ``[PG 0 Rank R] Timeout at NCCL work: S, last enqueued NCCL work: E, last completed
  NCCL work: C.``; from 2.5 ``logPrefix() " failure detected by watchdog at work sequence
  id: " S " PG status: last enqueued work: " E ", last completed work: " C`` (two spaces
  after the prefix) and ``printTraceback()``'s "Stack trace of the failed collective not
  found, ..." line;
- from 2.6 the dump signal (``First PG on this rank to signal dumping.``, ``Received a dump
  signal due to a collective timeout ...``, ``ProcessGroupNCCL preparing to dump debug
  info. Include stack trace: 1``);
- ``WorkNCCL::handleException``: ``[Rank R] Some NCCL operations have failed or timed out.
  Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on
  corrupted/incomplete data.``

The tear-down that follows by default ("To avoid data inconsistency, we are taking the
entire process down.", then ``terminate called after throwing an instance of
'c10::DistBackendError'``) is left out: the simulated process lives on, as it does with
``TORCH_NCCL_ASYNC_ERROR_HANDLING=0`` or ``3`` (no tear-down), the engine stuck.

Line numbers per release come from logs of that release (2.5: ``629/2168/667/681``; 2.6:
``632/2271/670/2106/1746/1536/684``; 2.7: ``655/2299/693/2147``; 2.8 on:
``757/2395/801/2732``); the ones no log showed are set near their neighbours.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from tui.sim.version import V, Version

#: torch's default collective timeout for NCCL process groups (10 minutes)
TIMEOUT_MS = 600_000
_DEFAULT_PG = "[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
#: collectives of start-up (weights broadcast, warm-up, graph capture) before serving
WARMUP_COLLECTIVES = 600
#: elements per request row of the stuck all-reduce (a hidden size)
HIDDEN = 4096
#: seconds between two lines of one report (the stamps show nanoseconds)
_LINE_GAP = 2e-5


@dataclass(frozen=True)
class _Sites:
    """``ProcessGroupNCCL.cpp`` line of each message in one torch release (0: not printed)."""

    timeout: int
    detected: int
    no_trace: int
    first_dump: int
    dump_signal: int
    preparing: int
    some_failed: int


_SITES = (
    (V("2.8"), _Sites(757, 2395, 801, 2732, 2371, 2163, 815)),
    (V("2.7"), _Sites(655, 2299, 693, 2147, 1770, 1560, 707)),
    (V("2.6"), _Sites(632, 2271, 670, 2106, 1746, 1536, 684)),
    (V("2.5"), _Sites(629, 2168, 667, 0, 0, 0, 681)),
    (V("2.4"), _Sites(607, 1664, 0, 0, 0, 0, 621)),
)


def _sites(torch: Version) -> _Sites:
    for since, sites in _SITES:
        if torch >= since:
            return sites
    return _SITES[-1][1]


def _stamp(now: float) -> str:
    """c10's ``E%m%d %H:%M:%S.nnnnnnnnn`` (local time, nanoseconds)."""
    nanos = int(now * 1e9) % 1_000_000_000
    return f"E{time.strftime('%m%d %H:%M:%S', time.localtime(now))}.{nanos:09d}"


def watchdog_lines(
    torch: Version, rank: int, seq: int, numel: int, ran_ms: int, *, now: float | None = None
) -> list[str]:
    """What rank ``rank``'s watchdog writes when collective ``seq`` timed out."""
    sites = _sites(torch)
    moment = time.time() if now is None else now
    work = (
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
        f"Timeout(ms)={TIMEOUT_MS})"
    )
    enqueued, completed = seq + 1, seq - 1
    pg = _DEFAULT_PG.format(rank=rank)
    messages = [
        (
            sites.timeout,
            f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for "
            f"{ran_ms} milliseconds before timing out.",
        )
    ]
    if sites.no_trace:
        messages.append(
            (
                sites.detected,
                f"{pg}  failure detected by watchdog at work sequence id: {seq} PG status: "
                f"last enqueued work: {enqueued}, last completed work: {completed}",
            )
        )
        messages.append(
            (
                sites.no_trace,
                "Stack trace of the failed collective not found, potentially because "
                "FlightRecorder is disabled. You can enable it by setting "
                "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
            )
        )
    else:
        messages.append(
            (
                sites.detected,
                f"[PG 0 Rank {rank}] Timeout at NCCL work: {seq}, last enqueued NCCL work: "
                f"{enqueued}, last completed NCCL work: {completed}.",
            )
        )
    if sites.first_dump:
        messages += [
            (sites.first_dump, f"{pg} First PG on this rank to signal dumping."),
            (
                sites.dump_signal,
                f"{pg} Received a dump signal due to a collective timeout from this local "
                "rank and we will try our best to dump the debug info. Last enqueued NCCL "
                f"work: {enqueued}, last completed NCCL work: {completed}.This is most likely "
                "caused by incorrect usages of collectives, e.g., wrong sizes used across "
                "ranks, the order of collectives is not same for all ranks or the scheduled "
                "collective, for some reason, didn't run. Additionally, this can be caused by "
                "GIL deadlock or other reasons such as network errors or bugs in the "
                "communications library (e.g. NCCL), etc. ",
            ),
            (
                sites.preparing,
                f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1",
            ),
        ]
    messages.append(
        (
            sites.some_failed,
            f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
        )
    )
    return [
        f"[rank{rank}]:[{_stamp(moment + index * _LINE_GAP)} ProcessGroupNCCL.cpp:{line}] {message}"
        for index, (line, message) in enumerate(messages)
    ]


@dataclass(frozen=True)
class Collective:
    """The all-reduce every rank waits in: its sequence number, size and how long it ran."""

    seq: int
    numel: int
    ran_ms: int

    @classmethod
    def stuck(cls, rng: random.Random, forward_steps: int, layers: int, running: int) -> Collective:
        """The collective of the next forward step (two all-reduces per layer, one hidden
        row of 4096 per running request) after the watchdog's timeout."""
        seq = WARMUP_COLLECTIVES + forward_steps * 2 * max(layers, 1) + rng.randrange(1, 2 * layers)
        return cls(seq, HIDDEN * max(running, 1), TIMEOUT_MS + rng.randrange(5, 120))

    def lines(self, torch: Version, rank: int) -> list[str]:
        """What rank ``rank``'s watchdog writes about it (see :func:`watchdog_lines`)."""
        return watchdog_lines(torch, rank, self.seq, self.numel, self.ran_ms)
