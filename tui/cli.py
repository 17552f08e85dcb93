"""The `babysit` command line: parse, dispatch to one verb, turn errors into exit codes.

Each verb lives in its own module and returns an exit status; this module is the
one boundary where a :class:`~tui.errors.BabysitError` becomes a message on
stderr (or a JSON envelope with ``--json``) and an exit status. Nothing else
prints tracebacks for expected failures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence

from tui import __version__
from tui.errors import BabysitError, InternalError, UsageError
from tui.output import guarded_output

#: verb -> (one-line help, module path of its ``configure``/``run`` pair)
VERBS: dict[str, tuple[str, str]] = {
    "hosts": ("list hosts, services and how each host is reached", "tui.commands.hosts"),
    "check": ("connect to a host and report what babysit needs there", "tui.commands.check"),
    "status": (
        "say which run each service's log belongs to: live, starting, stale, dead, …",
        "tui.commands.status",
    ),
    "kill": ("stop the verified run of a service (SIGTERM, grace, SIGKILL)", "tui.commands.kill"),
    "relaunch": (
        "start a service again, safely, and optionally wait until it is ready",
        "tui.commands.relaunch",
    ),
    "tail": ("print and follow a service's log, anchored to inode and offset", "tui.commands.tail"),
    "canary": (
        "send a service's run one small completion: time to first token, tokens/s, repetition",
        "tui.commands.canary",
    ),
    "dump": (
        "capture what may explain a hang: every process's stacks, nvidia-smi, the log's "
        "last lines, into one file",
        "tui.commands.dump",
    ),
    "export": (
        "expose every service's verdict and facts to Prometheus (/metrics, or a textfile "
        "for node_exporter)",
        "tui.commands.export",
    ),
    "parse": (
        "parse a saved server log offline (SGLang, vLLM, llama.cpp, TGI): metric lines and "
        "a summary per metric",
        "tui.commands.parse",
    ),
    "agent": (
        "print the exact script babysit runs on a host for one of its modes",
        "tui.commands.agent",
    ),
    "demo": (
        "start simulated servers that show every trap, and open babysit on them",
        "tui.commands.demo",
    ),
    "sim": (
        "run a simulated SGLang/vLLM/llama.cpp/TGI server or nvidia-smi (tests, demo)",
        "tui.sim.cli",
    ),
}

#: ``babysit HOST [SERVICE]`` (no verb) opens the TUI; this module parses that form.
UI_MODULE = "tui.commands.ui"

#: Verbs that take their own raw argv (they parse it themselves).
RAW_VERBS = {"sim"}


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser of every verb's name and one line of help; only ``verb``'s own
    options are added (importing its module), so ``babysit --help`` and each verb
    pay for no other verb's imports."""
    parser = argparse.ArgumentParser(
        prog="babysit",
        description=(
            "Watch and guard LLM inference servers. Every fact shown carries the run, "
            "file, inode and age it came from."
        ),
    )
    parser.add_argument("--version", action="version", version=f"babysit {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", title="verbs")
    for name, (help_text, module_path) in VERBS.items():
        if name in RAW_VERBS:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        verb_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == verb:
            _load(module_path).configure(verb_parser)
    return parser


def _load(module_path: str):
    import importlib

    return importlib.import_module(module_path)


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """The ``--config`` option every verb that reads hosts.yaml shares."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="hosts.yaml to use (default: $BABYSIT_CONFIG, ./hosts.yaml, "
        "~/.config/babysit/hosts.yaml)",
    )


def add_targets_option(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``HOST[/SERVICE]|GROUP …`` arguments of the verbs that take many services."""
    parser.add_argument(
        "targets",
        metavar="HOST[/SERVICE]|GROUP",
        nargs="*",
        help=f"what to {what} (default: every service of every host)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a versioned JSON document")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in RAW_VERBS:
        verb = args_list[0]
        # A simulated server's output is its log, hostile bytes included: written as it is.
        return _guarded(
            lambda: _load(VERBS[verb][1]).main(args_list[1:]), json_out=False, guard=False
        )

    if not args_list:
        # The fleet view of every host when a hosts.yaml is found; help otherwise.
        parser = build_parser()
        return _guarded(lambda: _load(UI_MODULE).run_bare(parser.print_help), json_out=False)
    opens_ui = args_list[0] not in VERBS and args_list[0] not in ("-h", "--help", "--version")
    if opens_ui:
        ui = _load(UI_MODULE)
        ui_parser = argparse.ArgumentParser(
            prog="babysit", description="Open the host screen for HOST (and SERVICE)."
        )
        ui.configure(ui_parser)
        ui_args = ui_parser.parse_args(args_list)
        return _guarded(lambda: ui.run(ui_args), json_out=False)
    parser = build_parser(args_list[0] if args_list[0] in VERBS else None)
    args = parser.parse_args(args_list)
    module = _load(VERBS[args.verb][1])
    return _guarded(lambda: module.run(args), json_out=getattr(args, "json", False))


def _guarded(call: Callable[[], int], *, json_out: bool, guard: bool = True) -> int:
    """Run one verb; expected failures become one plain line (or JSON) and an exit status.

    With ``guard``, whatever the verb prints passes :func:`guarded_output`: no control
    or bidi character reaches the terminal, whichever path printed it."""
    with guarded_output() if guard else contextlib.nullcontext():
        return _run(call, json_out=json_out)


def _run(call: Callable[[], int], *, json_out: bool) -> int:
    try:
        return call()
    except BabysitError as error:
        report_error(error, json_out=json_out)
        return error.exit_status
    except KeyboardInterrupt:
        print("babysit: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # the last boundary: one line, never a traceback
        if os.environ.get("BABYSIT_DEBUG"):
            raise
        report_error(InternalError(error), json_out=json_out)
        return InternalError.exit_status


def report_error(error: BabysitError, *, json_out: bool) -> None:
    if json_out:
        print(json.dumps({"schema": 1, "ok": False, "error": error.to_json()}))
    print(f"babysit: {error.message}", file=sys.stderr)


__all__ = ["UsageError", "add_config_option", "add_json_option", "add_targets_option", "main"]
