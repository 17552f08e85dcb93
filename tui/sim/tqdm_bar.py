"""tqdm's default progress bar, as it writes one update to a file that is not a terminal.

Format ``{l_bar}{bar}{r_bar}``: ``{desc}: `` (when there is a description), the
percentage (``{:3.0f}%``), ``|``, a ten-cell bar of ``█`` with one partial cell of
eighths (`` ▏▎▍▌▋▊▉``), ``| n/total [elapsed<remaining, rate]``; the rate is
``{:5.2f}it/s``, or ``{:5.2f}s/it`` below one iteration a second, ``?it/s`` before
the first. Each update starts with ``\\r``; closing the bar adds ``\\n``. The CUDA-graph
capture of vLLM (``Capturing CUDA graph shapes``, ``Capturing CUDA graphs (...)``) and
of SGLang (``Capturing batches (...)``) print it.
"""

from __future__ import annotations

#: cells of a bar whose width tqdm cannot learn from a terminal
BAR_CELLS = 10
#: the partial cells, emptiest first, then the full block
EIGHTHS = " " + "".join(chr(code) for code in range(0x258F, 0x2587, -1))


def interval(seconds: float) -> str:
    """tqdm's ``format_interval``: ``MM:SS``, or ``H:MM:SS`` from an hour."""
    minutes, whole = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{whole:02d}" if hours else f"{minutes:02d}:{whole:02d}"


def bar(done: int, total: int, elapsed: float, desc: str = "") -> str:
    """One update of the bar (without the leading ``\\r``)."""
    fraction = done / total if total else 1.0
    full, eighths = divmod(int(fraction * BAR_CELLS * (len(EIGHTHS) - 1)), len(EIGHTHS) - 1)
    cells = EIGHTHS[-1] * full
    if full < BAR_CELLS:
        cells += EIGHTHS[eighths] + EIGHTHS[0] * (BAR_CELLS - full - 1)
    rate = done / elapsed if done and elapsed > 0 else None
    if rate is None:
        timing = f"{interval(elapsed)}<?, ?it/s"
    else:
        speed = f"{1 / rate:5.2f}s/it" if rate < 1 else f"{rate:5.2f}it/s"
        timing = f"{interval(elapsed)}<{interval((total - done) / rate)}, {speed}"
    head = f"{desc}: " if desc else ""
    return f"{head}{100 * fraction:3.0f}%|{cells}| {done}/{total} [{timing}]"


def redraws(updates: list[str]) -> list[str]:
    """The text of each update as tqdm writes it: ``\r``, the bar, then spaces over
    what is left of a longer one before it; the last ends the line."""
    written = []
    last = 0
    for text in updates:
        written.append("\r" + text + " " * max(last - len(text), 0))
        last = len(text)
    if written:
        written[-1] += "\n"
    return written
