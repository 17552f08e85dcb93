"""hosts.yaml read into the frozen values of :mod:`tui.config`.

:mod:`~tui.hostsfile.find` finds and reads the file; :mod:`~tui.hostsfile.document`
reads its text, :mod:`~tui.hostsfile.hosts` and :mod:`~tui.hostsfile.services` one
entry each, :mod:`~tui.hostsfile.instances` copies ``instances:``,
:mod:`~tui.hostsfile.match` checks ``match:``, all through the typed reads of
:mod:`~tui.hostsfile.reader`.
"""

from tui.hostsfile.document import parse_config
from tui.hostsfile.find import CONFIG_ENV, find_config, load_config, parse_config_file

__all__ = ["CONFIG_ENV", "find_config", "load_config", "parse_config", "parse_config_file"]
