"""Which hosts.yaml babysit reads, and reading it.

``--config FILE``, then ``$BABYSIT_CONFIG``, then ``./hosts.yaml``, then
``~/.config/babysit/hosts.yaml``; the file's text is read within bounds by
:mod:`tui.yamlnodes` and parsed by :func:`tui.hostsfile.document.parse_config`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tui import yamlnodes
from tui.config import Config
from tui.core.sanitize import printable
from tui.errors import ConfigError
from tui.hostsfile.document import parse_config
from tui.invocation import command

CONFIG_ENV = "BABYSIT_CONFIG"


#: The commented example beside the package in a clone of the repository. It is named
#: so that the search below never finds it: its hosts are made up, and babysit never
#: contacts a host the user did not name.
EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "hosts.example.yaml"
USER_CONFIG = "~/.config/babysit/hosts.yaml"


def find_config(explicit: str | None = None, *, cwd: Path | None = None) -> Path:
    """The hosts.yaml to use: ``--config``, then $BABYSIT_CONFIG, ./hosts.yaml, ~/.config."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(printable(f"{explicit}: no such file (given with --config)"))
        return path
    env = os.environ.get(CONFIG_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(printable(f"{env}: no such file (named by ${CONFIG_ENV})"))
        return path
    candidates = [
        (cwd or Path.cwd()) / "hosts.yaml",
        Path(USER_CONFIG).expanduser(),
    ]
    for path in candidates:
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in candidates)
    if EXAMPLE_CONFIG.is_file():
        make = (
            f"to make one, copy the example and name your own hosts in it: "
            f"mkdir -p ~/.config/babysit && cp {EXAMPLE_CONFIG} {USER_CONFIG}"
        )
    else:
        make = (
            f"to make one, write {USER_CONFIG} with a hosts: entry per host "
            "(the README's hosts.yaml section shows every key)"
        )
    raise ConfigError(
        f"no hosts.yaml found (looked in {looked}); pass --config FILE or set ${CONFIG_ENV}; "
        f"{make}; or first watch simulated servers on this machine: {command('demo')}"
    )


def load_config(explicit: str | None = None) -> Config:
    return parse_config_file(find_config(explicit))


def parse_config_file(path: Path) -> Config:
    return parse_config(yamlnodes.read_config_text(str(path)), str(path))
