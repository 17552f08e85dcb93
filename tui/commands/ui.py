"""`babysit [HOST [SERVICE] | NAME …]`: open the TUI — one service's host screen, or the fleet.

The words are read so that the form people type most keeps working:

- no word: the fleet view of every host in hosts.yaml;
- ``HOST`` or ``HOST/SERVICE``: that service's host screen (the host's first
  service when none is named);
- ``HOST SERVICE``: the same, when SERVICE is not also a host or group name;
- ``GROUP``, or two or more hosts, groups or ``HOST/SERVICE`` names: the fleet
  view of all of them (``babysit kpro5 b200``). A second word that is a host or a
  group makes the fleet form; one that is both a host and a service of the first
  host is refused as ambiguous.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tui.cli import VERBS, add_config_option
from tui.config import Config, Host, Service
from tui.errors import ConfigError, UsageError
from tui.gcpolicy import for_long_run
from tui.hostsfile import CONFIG_ENV, find_config, load_config
from tui.invocation import command

if TYPE_CHECKING:  # the fleet screen loads textual; `babysit --help` must not
    from tui.app.fleet_rows import Fleet

USAGE = "babysit [HOST [SERVICE] | HOST/SERVICE | HOST|GROUP ...] [--read-only] [--config FILE]"
DESCRIPTION = (
    "Open babysit's screen. One HOST (or HOST SERVICE, or HOST/SERVICE) opens that "
    "service's host screen. A GROUP from hosts.yaml, several hosts, or no name at all "
    "opens the fleet view: one row per service instance, worst first."
)
EPILOG = """\
how the words are read:
  babysit                   the fleet view of every host in hosts.yaml
  babysit kpro5             kpro5's first service (its host screen)
  babysit kpro5 qwen        kpro5's service qwen (also: babysit kpro5/qwen)
  babysit kpro5 b200        the fleet view of both hosts: the second word is a host
  babysit gpu-nodes         the fleet view of the group gpu-nodes (groups: in hosts.yaml)

In the fleet view Enter opens the selected service's host screen, where K kill,
r relaunch and R replace work with their usual guards; Esc comes back. / filters.
On a host screen opened directly, Esc shows the fleet view of that host's services.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "names",
        metavar="NAME",
        nargs="*",
        help="HOST [SERVICE], HOST/SERVICE, or hosts and groups for the fleet view",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="watch only: no kill, relaunch or any other action"
    )
    add_config_option(parser)


def _not_a_verb(config: Config, host_name: str) -> None:
    """A word that is no host or group but looks like a verb is told so."""
    if host_name not in config.hosts and host_name not in config.groups:
        verb = difflib.get_close_matches(host_name, list(VERBS), n=1, cutoff=0.75)
        if verb:
            raise UsageError(
                f"no host {host_name!r} in {config.path}, and no verb {host_name!r} "
                f"(did you mean the verb {verb[0]!r}?)"
            )


def resolve(config: Config, host_name: str, service_name: str | None) -> tuple[Host, Service]:
    """The host and service to show; mistakes suggest the closest name (or verb)."""
    _not_a_verb(config, host_name)
    if host_name in config.groups:
        raise UsageError(
            f"{host_name!r} is a group in {config.path}: a group takes no SERVICE "
            f"({command(host_name)} opens the fleet view of its hosts)"
        )
    host, service = config.service(f"{host_name}/{service_name}" if service_name else host_name)
    if service is None:
        if not host.services:
            raise UsageError(
                f"{host.source}: hosts.{host.name}: no services to watch; add one under "
                f"'services:' (see the example hosts.yaml)"
            )
        service = next(iter(host.services.values()))
    return host, service


def resolve_target(config: Config, target: str) -> tuple[Host, Service]:
    """:func:`resolve` of a verb's ``HOST[/SERVICE]`` argument."""
    host_name, _, service_name = target.partition("/")
    return resolve(config, host_name, service_name or None)


def _is_target(config: Config, word: str) -> bool:
    return word in config.hosts or word in config.groups or "/" in word


def choose(config: Config, names: Sequence[str]) -> tuple[Host, Service] | Fleet:
    """What ``names`` ask for: one service's host screen, or a fleet (see the module doc)."""
    from tui.app.fleet_rows import Fleet
    from tui.commands.status import select

    words = list(names)
    if len(words) == 1 and words[0] not in config.groups:
        host_name, _, service_name = words[0].partition("/")
        return resolve(config, host_name, service_name or None)
    if len(words) == 2 and not _is_target(config, words[1]):
        return resolve(config, words[0], words[1])
    if len(words) == 2 and words[0] in config.hosts and words[1] in config.hosts[words[0]].services:
        first, second = words
        raise UsageError(
            f"{second!r} is both a host and a service of {first} in {config.path}: write "
            f"{first}/{second} for the service, or name the hosts in another order"
        )
    for word in words:
        _not_a_verb(config, word.partition("/")[0])
    if not words:
        title = "all hosts"
    elif len(words) == 1:
        title = f"group {words[0]}"
    else:
        title = ", ".join(words)
    fleet = Fleet.of(select(config, words), title)
    if not fleet.targets:
        raise UsageError(
            f"{config.path}: no services to watch on {title}; add some under 'services:'"
        )
    return fleet


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    choose(config, args.names)  # a mistake is said before the screen opens
    from tui.app.app import make_app

    app = make_app(config, args.names, read_only=args.read_only)
    for_long_run()
    app.run()
    return app.return_code or 0


def run_bare(print_help: Callable[[], object]) -> int:
    """``babysit`` alone: the fleet view of every host when a hosts.yaml is found, else help."""
    try:
        find_config()
    except ConfigError:
        if os.environ.get(CONFIG_ENV):
            raise
        print_help()
        print(f"\nno hosts.yaml found; to watch simulated servers first: {command('demo')}")
        return 0
    return run(argparse.Namespace(names=[], read_only=False, config=None))
