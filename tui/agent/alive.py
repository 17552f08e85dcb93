"""The alive mode: does the process still run, the very one that was started?"""

from .output import emit_line
from .procfs import start_ticks_of
from .protocol import ANSWER_ALIVE


def alive(args):
    ticks = start_ticks_of(args["pid"])
    emit_line(ANSWER_ALIVE, alive=ticks is not None and ticks == args["start_ticks"])
    return 0
