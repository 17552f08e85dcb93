"""The flags a server was meant to run with, the ones it runs with, and the ones it reports.

Three sources, side by side:

* **intended** — ``launch.command`` from hosts.yaml (an argv list);
* **actual** — the live run's ``/proc/PID/cmdline`` (an argv list);
* **reported** — what the server printed at startup (its args line; the heads
  of every release are each engine's :attr:`~tui.engines.spec.EngineSpec.args_heads`).

:mod:`~tui.core.launch.argv` reads a command line, :mod:`~tui.core.launch.reported`
the args line, and :mod:`~tui.core.launch.diff` lines the three up by argparse
destination (``--tp 2``, ``--tp-size=2`` and ``tp_size=2`` are one row) and says
which intended flags are missing from the running server, which run with another
value, and which run without being intended.
"""
