"""A stand-in for Proxmox VE's ``pct`` that tests put on a host's PATH.

It accepts ``pct exec <vmid> [--keep-env 0|1] [--] <command> [args...]`` the way
the real one does, answers the real errors (an unknown vmid gets
``Configuration file 'nodes/<node>/lxc/<vmid>.conf' does not exist``, exit 255),
and then runs the command with the argv it was given, stdin and all, as
``lxc-attach`` would. Containers exist when ``$BABYSIT_PCT_ROOT/nodes/<node>/lxc/<vmid>.conf``
does; ``<vmid>.stopped`` beside it makes the container "not running". Each
command it starts is listed in ``<vmid>.procs`` (pid and start ticks), so that
stopping the container can end them all, as ``pct stop`` does.

Only ``exec`` is implemented: babysit uses nothing else.
"""

from __future__ import annotations

import os
import re
import socket
import sys

USAGE = "pct exec <vmid> [<extra-args>] [OPTIONS]"
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def die(message: str) -> None:
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.exit(255)


def start_ticks(pid: int) -> str:
    """Field 22 of /proc/PID/stat: with the pid, names one process for good."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[19].decode()


def main(argv: list[str]) -> None:
    if not argv:
        die("ERROR: no command specified\nUSAGE: pct <COMMAND> [ARGS] [OPTIONS]")
    if argv[0] != "exec":
        die(f"unknown command 'pct {argv[0]}' (this stand-in implements only 'pct exec')")
    args = argv[1:]
    if not args or args[0].startswith("-"):
        die(f"400 not enough arguments\n{USAGE}")
    vmid, rest = args[0], args[1:]
    if not re.fullmatch(r"[1-9][0-9]{2,8}", vmid):
        die(
            f"400 Parameter verification failed.\nvmid: invalid format - "
            f"value does not look like a valid VM ID\n\n{USAGE}"
        )
    keep_env = True
    command: list[str] = []
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            command = rest
            break
        if arg in ("--keep-env", "-keep-env"):
            if not rest or rest[0] not in ("0", "1", "yes", "no", "true", "false", "on", "off"):
                die(
                    "400 Parameter verification failed.\n"
                    f"keep-env: type check ('boolean') failed\n\n{USAGE}"
                )
            keep_env = rest.pop(0) in ("1", "yes", "true", "on")
            continue
        if arg.startswith("--keep-env="):
            keep_env = arg.split("=", 1)[1] in ("1", "yes", "true", "on")
            continue
        if arg.startswith("-"):
            die(f"Unknown option: {arg.lstrip('-')}\n400 unable to parse option\n{USAGE}")
        command = [arg, *rest]
        break

    root = os.environ.get("BABYSIT_PCT_ROOT", "/etc/pve")
    node = os.environ.get("BABYSIT_PCT_NODE") or socket.gethostname().split(".")[0]
    conf = os.path.join(root, "nodes", node, "lxc", f"{vmid}.conf")
    if not os.path.isfile(conf):
        die(f"Configuration file 'nodes/{node}/lxc/{vmid}.conf' does not exist")
    if os.path.exists(os.path.join(root, "nodes", node, "lxc", f"{vmid}.stopped")):
        die(f"CT {vmid} not running")
    if not command:
        die("missing command")
    env = dict(os.environ) if keep_env else {"PATH": CLEAN_PATH, "HOME": "/root", "TERM": "dumb"}
    with open(os.path.join(root, "nodes", node, "lxc", f"{vmid}.procs"), "a") as procs:
        procs.write(f"{os.getpid()} {start_ticks(os.getpid())}\n")
    try:
        os.execvpe(command[0], command, env)
    except OSError as error:
        sys.stderr.write(
            f"lxc-attach: {vmid}: ../src/lxc/attach.c: lxc_attach_run_command: 1841 "
            f'{error.strerror} - Failed to exec "{command[0]}"\n'
        )
        sys.exit(127 if isinstance(error, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
