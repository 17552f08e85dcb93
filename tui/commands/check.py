"""`babysit check HOST`: connect through the chain and report what babysit needs there.

First each hop after the base is asked, through the hops before it, whether it
answers (a docker hop: its CLI answers, and the container exists and runs). Then
one round trip collects the remote user, kernel, python3 (the agent needs
python3 >= 3.6 on the host: the one the chain's hops choose), whether nvidia-smi
answers, and whether each service's log exists; a few empty commands then
measure the round trip. Exit status 0 when all is well, 1 when something babysit
needs is missing, 2 for a config or usage mistake, 3 when the host (or a hop on
the way) cannot be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from tui.cli import add_config_option, add_json_option
from tui.config import Host
from tui.core.sanitize import printable, printable_bytes, printable_text
from tui.core.units import human_size
from tui.errors import HopFailed, TransportError
from tui.hops import python_of
from tui.hops.spec import DEFAULT_PYTHON, HopAnswer
from tui.hostsfile import load_config
from tui.remote import SshLinks, transport_through
from tui.remote.agentcall import AGENT_MARK, Preamble, chatter_note
from tui.remote.probe import probe_services
from tui.remote.transport import Transport

#: The agent that later issues send to hosts is written for this python3 and newer.
MIN_PYTHON = (3, 6)
PROBE_TIMEOUT = 30.0
ROUND_TRIPS = 3

# Runs on the host under /bin/sh; log paths arrive as "$@", never spliced into the text.
# Output is key NUL value NUL pairs, so no value (a path with a newline, say) can break it.
PROBE_SCRIPT = r"""
printf '\036babysit-check:%s\n' "$1"; py=$2; shift 2
emit() { printf '%s\0%s\0' "$1" "$2"; }
emit user "$(id -un 2>/dev/null || id -u)"
emit kernel "$(uname -sr)"
emit hostname "$(uname -n)"
if p=$(command -v "$py" 2>/dev/null); then
  emit python3 "$p"
  emit python3_version "$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>&1)"
fi
if p=$(command -v nvidia-smi 2>/dev/null); then
  emit nvidia_smi "$p"
  t=""; command -v timeout >/dev/null 2>&1 && t="timeout 10"
  out=$($t nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>&1)
  emit nvidia_status "$?"
  emit nvidia_out "$out"
fi
for f in "$@"; do
  if [ -e "$f" ]; then
    emit log "$f"
    emit log_stat "$(stat -L -c '%s %Y %i' -- "$f" 2>&1)"
  else
    emit log_missing "$f"
  fi
done
"""


@dataclass
class LogCheck:
    service: str
    path: str
    exists: bool
    size: int | None = None
    mtime: str | None = None
    inode: int | None = None


@dataclass
class ContainerCheck:
    """Whether a service's container is there, as the probe's ``docker inspect`` said."""

    service: str
    container: str
    ok: bool
    words: str


@dataclass
class HopCheck:
    """Whether one hop of the chain answers; ``ok`` is None for a hop never reached."""

    kind: str
    text: str
    ok: bool | None
    words: str


@dataclass
class CheckReport:
    host: str
    chain: list[str]
    checked_at: str
    connect_seconds: float | None = None
    round_trip_ms: float | None = None
    user: str = "?"
    kernel: str = "?"
    hostname: str = "?"
    python3: dict[str, object] = field(default_factory=dict)
    nvidia_smi: dict[str, object] = field(default_factory=dict)
    hops: list[HopCheck] = field(default_factory=list)
    logs: list[LogCheck] = field(default_factory=list)
    containers: list[ContainerCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: What babysit copes with but a user should know (the host stays usable: exit 0).
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def reached(self) -> bool:
        """Whether every hop answered (else the host's own facts are unknown)."""
        return all(hop.ok for hop in self.hops)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        return {"schema": 1, "ok": self.ok, **data}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", metavar="HOST", help="a host name from hosts.yaml")
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    host = config.host(args.host)
    report = asyncio.run(check_host(host))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render(report), end="")
    if not report.reached:
        return TransportError.exit_status
    return 0 if report.ok else 1


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


async def check_hops(host: Host, links: SshLinks) -> list[HopCheck]:
    """Each prefix hop asked in turn, through the hops before it, whether it answers; the
    first that does not ends the asking (the hops after it are not reached)."""
    checks: list[HopCheck] = []
    failed = False
    for at, hop in enumerate(host.hops):
        text = " → ".join(hop.texts)
        if at == 0 or failed:
            words = "not reached" if failed else "answers"
            checks.append(HopCheck(hop.kind, text, None if failed else True, words))
            continue
        command = hop.check_command()
        try:
            if command is not None:
                before = transport_through(host.hops[:at], links)
                answer = hop.check_answer(await before.run(command, timeout=PROBE_TIMEOUT))
            else:
                through = transport_through(host.hops[: at + 1], links)
                answer = hop.check_answer(await through.run(["true"], timeout=PROBE_TIMEOUT))
        except HopFailed as error:
            answer = HopAnswer(False, error.words if error.hop == text else error.message)
        checks.append(HopCheck(hop.kind, text, answer.ok, printable(answer.words)))
        failed = not answer.ok
    return checks


async def check_host(host: Host) -> CheckReport:
    links = SshLinks()
    transport = transport_through(host.hops, links)
    python = python_of(host.hops)
    try:
        started = time.monotonic()
        hops = await check_hops(host, links)
        if not all(hop.ok for hop in hops):
            return unreached(host, hops)
        services = [s for s in host.services.values() if s.log]
        nonce = secrets.token_hex(8)
        try:
            probe = await transport.run(
                # Its name carries the agent's mark: a probe running meanwhile never takes
                # this shell (whose argv holds the log paths) for a server.
                ["sh", "-c", PROBE_SCRIPT, f"{AGENT_MARK}-check", nonce, python]
                + [s.log for s in services],
                timeout=PROBE_TIMEOUT,
            )
        except HopFailed as error:
            at = next((i for i, hop in enumerate(hops) if hop.text == error.hop), len(hops) - 1)
            hops[at] = HopCheck(hops[at].kind, hops[at].text, False, error.words)
            return unreached(host, hops)
        connect_seconds = time.monotonic() - started
        if not probe.ok:
            raise TransportError(
                f"{transport.chain_text}: the check script failed "
                f"(exit {probe.exit_status}): {probe.stderr_line() or 'no message'}"
            )
        samples = []
        for _ in range(ROUND_TRIPS):
            t0 = time.monotonic()
            await transport.run(["true"], timeout=PROBE_TIMEOUT)
            samples.append((time.monotonic() - t0) * 1000)
        containers = await check_containers(transport, host)
    finally:
        await links.close()
    # What the login shell printed before the script ran is not the script's output.
    preamble = Preamble(b"\x1ebabysit-check:" + nonce.encode() + b"\n")
    output = preamble.feed(probe.stdout)
    preamble.finish()
    report = build_report(
        host, _pairs(output), connect_seconds, statistics.median(samples), python=python
    )
    report.hops = hops
    report.containers = containers
    # One line per failure: a daemon that does not answer is one problem, not one per service.
    failing: dict[str, list[str]] = {}
    for check in containers:
        if not check.ok:
            failing.setdefault(check.words, []).append(check.service)
    report.problems.extend(f"{', '.join(names)}: {words}" for words, names in failing.items())
    if preamble.chatter:
        report.warnings.append(chatter_note(preamble.chatter))
    return report


async def check_containers(transport: Transport, host: Host) -> list[ContainerCheck]:
    """Each container service's container, asked the way every probe asks (one round
    trip of the agent: its runtime's CLI on the host, through the host's chain)."""
    wanted = [s for s in host.services.values() if s.container is not None]
    if not wanted:
        return []
    answers = await probe_services(transport, host, wanted, tail_bytes=0)
    checks = []
    for service, (assessment, _) in zip(wanted, answers, strict=True):
        state, ref = assessment.container, str(service.container)
        if state is None:  # the probe itself failed: its verdict says why
            checks.append(ContainerCheck(service.name, ref, False, assessment.summary))
        elif not state.found:
            words = state.problem or f"no container {ref}"
            checks.append(ContainerCheck(service.name, ref, False, words))
        else:
            words = f"container {state.label} ({state.short_id}, {state.image}): {state.status}"
            checks.append(ContainerCheck(service.name, ref, True, words))
    return checks


def unreached(host: Host, hops: list[HopCheck]) -> CheckReport:
    """The report of a host behind a hop that does not answer."""
    problems = [f"{hop.text}: {hop.words}" for hop in hops if hop.ok is False]
    return CheckReport(
        host=host.name, chain=list(host.chain()), checked_at=_now(), hops=hops, problems=problems
    )


#: The check's fields that hold several lines (every other is one line).
MULTI_LINE = {"nvidia_out"}


def _pairs(raw: bytes) -> list[tuple[str, str]]:
    fields = raw.split(b"\0")
    # The host's words (its user, hostname, kernel, nvidia-smi's lines) are made
    # printable here, where they enter: shown, never obeyed.
    pairs = []
    for i in range(0, len(fields) - 1, 2):
        key, value = printable_bytes(fields[i]), fields[i + 1].decode("utf-8", "replace")
        pairs.append(
            (key, printable_text(value) if key in MULTI_LINE else printable(value.strip()))
        )
    return pairs


def build_report(
    host: Host,
    pairs: list[tuple[str, str]],
    connect_seconds: float,
    round_trip_ms: float,
    *,
    python: str = DEFAULT_PYTHON,
) -> CheckReport:
    values = dict(pairs)
    problems: list[str] = []

    python3: dict[str, object] = {"path": values.get("python3"), "version": None, "ok": False}
    if "python3" not in values:
        problems.append(
            f"{python} not found on {host.name}; babysit runs a small python3 (>= 3.6) "
            "helper there: install python3"
        )
    else:
        version_text = values.get("python3_version", "").strip()
        python3["version"] = version_text
        try:
            version = tuple(int(part) for part in version_text.split(".")[:2])
        except ValueError:
            version = ()
        if len(version) == 2 and version >= MIN_PYTHON:
            python3["ok"] = True
        else:
            problems.append(
                f"python3 at {values['python3']} is {version_text or 'unusable'}; babysit "
                f"needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer"
            )

    nvidia: dict[str, object] = {
        "path": values.get("nvidia_smi"),
        "ok": False,
        "gpus": [],
        "error": None,
    }
    if "nvidia_smi" in values:
        output = values.get("nvidia_out", "").strip()
        if values.get("nvidia_status") == "0":
            nvidia["ok"] = True
            nvidia["gpus"] = [line.strip() for line in output.splitlines() if line.strip()]
        else:
            nvidia["error"] = output.splitlines()[-1] if output else "no output"

    # One record per log path, in the order the paths were given (one per service
    # with a log file: a container's own log is the container's to say).
    records: list[tuple[bool, str]] = []
    stat_text: str | None = None
    for key, value in pairs:
        if key == "log_missing":
            records.append((False, ""))
        elif key == "log":
            stat_text = ""
        elif key == "log_stat" and stat_text is not None:
            records.append((True, value))
            stat_text = None
    logs: list[LogCheck] = []
    with_logs = [s for s in host.services.values() if s.log]
    for service, (exists, stat_value) in zip(with_logs, records, strict=False):
        check = LogCheck(service.name, service.log, exists=exists)
        parts = stat_value.split()
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            check.size = int(parts[0])
            check.mtime = datetime.fromtimestamp(int(parts[1]), timezone.utc).isoformat()
            check.inode = int(parts[2])
        if not exists:
            problems.append(f"{service.name}: log {service.log} does not exist on {host.name}")
        logs.append(check)

    return CheckReport(
        host=host.name,
        chain=list(host.chain()),
        checked_at=_now(),
        connect_seconds=round(connect_seconds, 3),
        round_trip_ms=round(round_trip_ms, 2),
        user=values.get("user", "?"),
        kernel=values.get("kernel", "?"),
        hostname=values.get("hostname", "?"),
        python3=python3,
        nvidia_smi=nvidia,
        logs=logs,
        problems=problems,
    )


def render(report: CheckReport) -> str:
    lines = [f"{report.host}: {' → '.join(report.chain)}"]
    if len(report.hops) > 1:
        marks = {True: "ok", False: "NO", None: "--"}
        lines.append("  hops")
        lines.extend(
            f"    {marks[hop.ok]}  {printable(hop.text)}: {printable(hop.words)}"
            for hop in report.hops
        )
    if not report.reached:
        lines.append(f"{len(report.problems)} problem(s):")
        lines.extend(f"  - {printable(problem)}" for problem in report.problems)
        return "\n".join(lines) + "\n"
    lines += [
        f"  connected   first answer in {report.connect_seconds or 0:.2f} s · "
        f"round trip {report.round_trip_ms or 0:.1f} ms (median of {ROUND_TRIPS})",
        f"  user        {report.user} on {report.hostname}",
        f"  kernel      {report.kernel}",
    ]
    py = report.python3
    if py["path"] is None:
        lines.append("  python3     NOT FOUND (needed, >= 3.6)")
    else:
        mark = "ok" if py["ok"] else f"TOO OLD (needs >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]})"
        lines.append(f"  python3     {py['version']} ({py['path']}) {mark}")
    nv = report.nvidia_smi
    if nv["path"] is None:
        lines.append("  nvidia-smi  not found (no GPU telemetry on this host)")
    elif nv["ok"]:
        gpus = list(nv["gpus"])  # type: ignore[call-overload]
        lines.append(f"  nvidia-smi  answers: {len(gpus)} GPU(s)")
        lines.extend(f"              {printable(gpu)}" for gpu in gpus)
    else:
        lines.append(f"  nvidia-smi  does not answer: {printable(str(nv['error']))}")
    if report.logs:
        lines.append("  logs")
        for log in report.logs:
            if log.exists:
                size = human_size(log.size) if log.size is not None else "?"
                lines.append(
                    f"    {log.service}: {printable(log.path)} exists ({size}, inode {log.inode}, "
                    f"modified {log.mtime})"
                )
            else:
                lines.append(f"    {log.service}: {printable(log.path)} MISSING")
    if report.containers:
        lines.append("  containers")
        lines.extend(
            f"    {c.service}: {printable(c.words)}{'' if c.ok else ' — NOT USABLE'}"
            for c in report.containers
        )
    if report.warnings:
        lines.append(f"{len(report.warnings)} note(s):")
        lines.extend(f"  - {printable(warning)}" for warning in report.warnings)
    if report.ok:
        lines.append("all good" if not report.warnings else "usable, with the note(s) above")
    else:
        lines.append(f"{len(report.problems)} problem(s):")
        lines.extend(f"  - {printable(problem)}" for problem in report.problems)
    return "\n".join(lines) + "\n"
