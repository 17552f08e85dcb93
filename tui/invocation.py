"""How babysit names itself in the commands it prints for the user to type.

A printed command must work as printed: after ``./dev/run`` babysit is
``.venv/bin/babysit``, which is not on PATH, and a demo fleet is watched through
its launcher (:func:`tui.demo.fleet.write_launcher`), which sets
:data:`COMMAND_ENV` to itself so that what babysit prints there names the
launcher, with the fleet's hosts.yaml and stand-ins, not a babysit without them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys

#: The words babysit's printed commands start with, when set (a demo fleet's launcher).
COMMAND_ENV = "BABYSIT_COMMAND"
#: The name of babysit's program (pyproject.toml's ``[project.scripts]``).
PROGRAM = "babysit"


def babysit_command(argv0: str | None = None) -> str:
    """This babysit as a shell line starts it: $BABYSIT_COMMAND when set; for the
    ``babysit`` program, that name when it is the one on PATH, else its full path; for
    ``python -m tui``, this python's full path and ``-m tui``; else (babysit inside
    another program: a test) ``babysit``."""
    said = os.environ.get(COMMAND_ENV)
    if said:
        return said
    argv0 = sys.argv[0] if argv0 is None else argv0
    path = os.path.abspath(argv0) if argv0 else ""
    name = os.path.basename(path)
    if name == PROGRAM and os.path.isfile(path):
        found = shutil.which(PROGRAM)
        with contextlib.suppress(OSError):
            if found is not None and os.path.samefile(found, path):
                return PROGRAM
        return shlex.quote(path)
    if name == "__main__.py" and os.path.basename(os.path.dirname(path)) == "tui":
        return shlex.join([sys.executable, "-m", "tui"])
    return PROGRAM


def command(*words: str) -> str:
    """A babysit command line to print: ``babysit_command()`` and ``words``, quoted."""
    return " ".join([babysit_command(), *(shlex.quote(w) for w in words)])
