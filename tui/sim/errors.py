"""The simulator's own failure: a command line or environment it cannot run with.

The simulator imports nothing from babysit outside :mod:`tui.sim`, so it says its
failures itself (:func:`tui.sim.cli.main`): one ``babysit: MESSAGE`` line on stderr and
exit status :data:`USAGE_EXIT`, as babysit does for a usage error.
"""

from __future__ import annotations

#: Exit status of a usage error (argparse's, and babysit's).
USAGE_EXIT = 2


class SimUsageError(Exception):
    """The sim cannot start as asked (for example a bad ``BABYSIT_SIM_GPUS``)."""
