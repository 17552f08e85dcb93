"""Confirmations for the actions that change a host: kill, relaunch, replace.

Each modal says exactly what will happen, in the facts the user is about to
act on (pid, start time, command line, children, GPU memory; or the command,
cwd, env and what becomes of the old log). Focus starts on Cancel; Escape
cancels. The plans are built by pure functions from the assessment the user
saw, so what is confirmed is what is shown.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.config import LaunchSpec, Service
from tui.core.containers import ContainerState
from tui.core.runs import Assessment, Run
from tui.core.sanitize import printable
from tui.core.secrets import command_text, redact_env
from tui.core.units import human_age, human_size
from tui.ops.relaunch import DEFAULT_TIMEOUT, LAUNCH_LOG
from tui.remote.probe import ready_patterns

#: Children listed by pid before the rest are only counted.
MAX_CHILDREN_SHOWN = 16
#: The GPU fact until the host has answered.
GPU_CHECKING = "checking …"


@dataclass
class Fact:
    """One labelled fact of a plan, already safe to draw (host text went through
    :func:`printable`; lines are split only where the plan means it). ``key`` names a
    fact filled in later (``gpu``)."""

    label: str
    value: str
    key: str | None = None


@dataclass
class Section:
    heading: str | None
    facts: list[Fact] = field(default_factory=list)


@dataclass
class Plan:
    """What a confirmed action will do, in the words the modal shows."""

    title: str
    intro: str
    sections: list[Section]
    confirm: str

    def fact(self, key: str) -> Fact | None:
        return next((f for s in self.sections for f in s.facts if f.key == key), None)

    def text(self) -> str:
        """The whole plan as plain text (for tests and the event log)."""
        lines = [self.title, self.intro]
        for section in self.sections:
            if section.heading:
                lines.append(section.heading)
            lines.extend(f"{f.label}: {f.value}" for f in section.facts)
        return "\n".join(lines)


# ---------------------------------------------------------------------- facts


def host_clock(a: Assessment, ts: float) -> str:
    """A time on the host's own clock (as the banner shows it)."""
    return datetime.fromtimestamp(ts, timezone(timedelta(seconds=a.utc_offset))).strftime(
        "%H:%M:%S"
    )


def children_text(run: Run) -> str:
    pids = [p.pid for p in run.members]
    if not pids:
        return "none"
    shown = ", ".join(map(str, pids[:MAX_CHILDREN_SHOWN]))
    more = f" and {len(pids) - MAX_CHILDREN_SHOWN} more" if len(pids) > MAX_CHILDREN_SHOWN else ""
    return f"{shown}{more} ({len(pids)} process{'es' if len(pids) != 1 else ''})"


def gpu_text(checks: Mapping[str, object] | None, pids: Sequence[int]) -> str:
    """GPU memory the run's processes hold, from the host's nvidia-smi, or why unknown."""
    if checks is None:
        return GPU_CHECKING
    apps = checks.get("gpu_apps")
    if not isinstance(apps, list):
        return "unknown (nvidia-smi did not answer on the host)"
    held = [a for a in apps if isinstance(a, dict) and a.get("pid") in pids]
    if not held:
        if apps:
            return (
                f"none listed for these pids (nvidia-smi lists {len(apps)} other process(es); "
                "inside a container it may show host pids)"
            )
        return "none (nvidia-smi lists no compute processes)"
    total = sum(int(a.get("used_mib") or 0) for a in held)
    each = ", ".join(
        f"pid {a['pid']} {human_size(int(a.get('used_mib') or 0) << 20)}" for a in held
    )
    return f"{human_size(total << 20)} in all: {each}"


def env_text(env: Mapping[str, str]) -> str:
    """The variables the launch adds, secret values redacted (they are still passed on)."""
    if not env:
        return "nothing added (the host's login environment)"
    return "\n".join(
        printable(f"{key}={command_text([value])}")
        for key, value in sorted(redact_env(env).items())
    )


def log_text(service: Service, a: Assessment) -> str:
    if not service.log:
        return (
            f"the command's output goes beside babysit's run records on the host "
            f"({LAUNCH_LOG}); then the wait reads only the new run's lines of container "
            f"{printable(str(service.container))}'s own log"
        )
    log, path = a.log, printable(service.log)
    if log is None or not log.exists:
        return f"{path} (no file there now: the run starts a new one)"
    size = human_size(log.size or 0)
    return (
        f"{path}: the current file (inode {log.inode}, {size}) is renamed to "
        f"{path}.<YYYYmmdd-HHMMSS> first, never deleted; the newest "
        f"{service.keep_logs} renamed logs are kept"
    )


def ready_text(service: Service) -> str:
    patterns = ready_patterns(service)
    until = f"“{printable(patterns[0])}”" if patterns else "the process to stay up"
    return (
        f"the log pane follows the new file from the launch; waits up to "
        f"{human_age(DEFAULT_TIMEOUT)} for {until}, counted only in this run's lines"
    )


def kill_facts(service: Service, a: Assessment, run: Run) -> list[Fact]:
    root = run.root
    user = f" (user {root.user})" if root.user else ""
    who = f"pid {root.pid}" if not run.members else f"all {len(run.pids)} processes"
    return [
        Fact("pid", f"{root.pid}{user}"),
        Fact(
            "started",
            f"{host_clock(a, root.start_time)} on the host's clock, "
            f"{human_age(a.checked_at - root.start_time)} ago",
        ),
        Fact("command", printable(command_text(root.cmdline)) or "(unreadable)"),
        Fact("children", children_text(run)),
        Fact("GPU memory", GPU_CHECKING, key="gpu"),
        Fact(
            "signals",
            f"SIGTERM to {who}; after {service.stop_grace:g} s, SIGKILL to any still running",
        ),
    ]


def pids_text(pids: Sequence[int]) -> str:
    if not pids:
        return "none seen"
    shown = ", ".join(map(str, pids[:MAX_CHILDREN_SHOWN]))
    more = f" and {len(pids) - MAX_CHILDREN_SHOWN} more" if len(pids) > MAX_CHILDREN_SHOWN else ""
    return f"{shown}{more} ({len(pids)} process{'es' if len(pids) != 1 else ''}, host pids)"


def container_facts(a: Assessment, container: ContainerState) -> list[Fact]:
    """The container's run as the user confirms it: name, short id, image, StartedAt."""
    started = container.started_at
    when = (
        f"{host_clock(a, started)} on the host's clock, {human_age(a.checked_at - started)} "
        f"ago; RestartCount {container.restart_count}"
        if started is not None
        else "never"
    )
    return [
        Fact("container", printable(f"{container.name or container.ref} ({container.short_id})")),
        Fact("image", printable(container.image) or "(none given)"),
        Fact("started", when),
        Fact("status", printable(container.status) or "unknown"),
    ]


def container_stop_facts(service: Service, a: Assessment, container: ContainerState) -> list[Fact]:
    return [
        *container_facts(a, container),
        Fact("PIDs", pids_text(container.pids)),
        Fact("GPU memory", GPU_CHECKING, key="gpu"),
        Fact(
            "stop",
            printable(
                f"{container.runtime} stop -t {math.ceil(service.stop_grace)} {container.id}"
            ),
        ),
    ]


def container_start_facts(service: Service, a: Assessment, container: ContainerState) -> list[Fact]:
    verb = f"restart -t {math.ceil(service.stop_grace)}" if container.running else "start"
    return [
        *container_facts(a, container),
        Fact("command", printable(f"{container.runtime} {verb} {container.id}")),
        Fact(
            "then",
            "waits for the container's new run (a new StartedAt) and reads only its lines, "
            f"from its StartedAt on, up to {human_age(DEFAULT_TIMEOUT)}",
        ),
    ]


def launch_facts(service: Service, spec: LaunchSpec, a: Assessment) -> list[Fact]:
    return [
        Fact("command", printable(command_text(spec.command))),
        Fact("cwd", printable(spec.cwd) if spec.cwd else "the login user's home directory"),
        Fact("env", env_text(spec.env)),
        Fact("log", log_text(service, a)),
        Fact("then", ready_text(service)),
    ]


# ---------------------------------------------------------------------- plans


def container_kill_plan(service: Service, a: Assessment, container: ContainerState) -> Plan:
    return Plan(
        title=f"Kill {service.label}?",
        intro=(
            f"Stops container {printable(container.name or container.ref)} on {a.host} by "
            "its full id. Right before the stop its StartedAt is checked again: a container "
            "restarted since you saw it is left alone. Nothing is stopped by name."
        ),
        sections=[Section(None, container_stop_facts(service, a, container))],
        confirm=f"Stop container {container.short_id}",
    )


def container_relaunch_plan(service: Service, a: Assessment, container: ContainerState) -> Plan:
    verb = "Restart" if container.running else "Start"
    return Plan(
        title=f"{verb} {service.label}?",
        intro=(
            f"{verb}s container {printable(container.name or container.ref)} on {a.host} "
            "(hosts.yaml gives no launch:), right after its StartedAt is checked again: a "
            "container restarted since you saw it is left alone."
        ),
        sections=[Section(None, container_start_facts(service, a, container))],
        confirm=f"{verb} container {container.short_id}",
    )


def kill_plan(service: Service, a: Assessment, run: Run) -> Plan:
    if service.container is not None and a.container is not None and a.container.found:
        return container_kill_plan(service, a, a.container)
    return Plan(
        title=f"Kill {service.label}?",
        intro=(
            f"Stops pid {run.root.pid} and its children on {a.host}. Right before each "
            "signal the pid's start time is checked again: a pid that now belongs to "
            "another process is left alone. Nothing is killed by name."
        ),
        sections=[Section(None, kill_facts(service, a, run))],
        confirm=f"Kill pid {run.root.pid}",
    )


def relaunch_plan(service: Service, spec: LaunchSpec | None, a: Assessment) -> Plan:
    if spec is None and a.container is not None:
        return container_relaunch_plan(service, a, a.container)
    if spec is None:
        raise ValueError(f"{service.label}: nothing to relaunch with")
    return Plan(
        title=f"Relaunch {service.label}?",
        intro=(
            f"Starts {service.name} on {a.host} from hosts.yaml's launch:, in a session of "
            "its own (setsid, stdin /dev/null, output appended to the log), so it keeps "
            "running when babysit quits. The port and the GPUs are checked first."
        ),
        sections=[Section(None, launch_facts(service, spec, a))],
        confirm="Relaunch",
    )


def replace_plan(service: Service, spec: LaunchSpec | None, a: Assessment, run: Run) -> Plan:
    if spec is None:
        return relaunch_plan(service, spec, a)
    if service.container is not None and a.container is not None and a.container.found:
        container = a.container
        return Plan(
            title=f"Replace {service.label}?",
            intro=(
                f"Stops container {printable(container.name)} (its StartedAt checked again "
                "right before), then runs launch: only if it stopped cleanly."
            ),
            sections=[
                Section("1 · stop", container_stop_facts(service, a, container)),
                Section("2 · start again", launch_facts(service, spec, a)),
            ],
            confirm=f"Stop container {container.short_id} and relaunch",
        )
    return Plan(
        title=f"Replace {service.label}?",
        intro=(
            f"Stops pid {run.root.pid} (each pid's start time checked again right before "
            "its signal), then starts the service again only if every process is gone."
        ),
        sections=[
            Section(f"1 · stop pid {run.root.pid}", kill_facts(service, a, run)),
            Section("2 · start again", launch_facts(service, spec, a)),
        ],
        confirm=f"Kill pid {run.root.pid} and relaunch",
    )


# ---------------------------------------------------------------------- modal


class ConfirmAction(ModalScreen[bool]):
    """Shows a :class:`Plan`; dismisses with True only when the confirm button is pressed."""

    AUTO_FOCUS = "#cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", id="confirm.cancel"),
        Binding("left,h", "app.focus_previous", "previous", show=False),
        Binding("right,l", "app.focus_next", "next", show=False),
    ]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(printable(self.plan.title))
            yield Static(Content(printable(self.plan.intro)), id="intro")
            with VerticalScroll(id="facts"):
                for section in self.plan.sections:
                    if section.heading:
                        yield Static(Content(printable(section.heading)), classes="heading")
                    for fact in section.facts:
                        with Horizontal(classes="fact"):
                            yield Static(Content(fact.label), classes="fact-label")
                            yield Static(
                                Content(fact.value),
                                classes="fact-value",
                                id=f"fact-{fact.key}" if fact.key else None,
                            )
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button(self.plan.confirm, id="confirm", variant="error")

    def set_fact(self, key: str, value: str) -> None:
        """Fill in a fact that came later (the GPU memory); safe before or after compose."""
        fact = self.plan.fact(key)
        if fact is None:
            return
        fact.value = value
        # Not composed yet: compose reads the new value.
        with contextlib.suppress(NoMatches):
            self.query_one(f"#fact-{key}", Static).update(Content(value))

    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm")
