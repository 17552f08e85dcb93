"""Confirmations for the actions that change a host: kill (of a run, of the orphans on
its GPUs), relaunch, replace.

Each modal says exactly what will happen, in the facts the user is about to
act on (pid, start time, command line, children, GPU memory; or the command,
cwd, env and what becomes of the old log). Focus starts on Cancel; Escape
cancels. The plans are built by pure functions from the assessment the user
saw, so what is confirmed is what is shown. A plan may offer a second choice (the
orphans beside a live run): the modal then says which of the two was pressed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.config import LaunchSpec, Service
from tui.core.containers import ContainerState
from tui.core.gpu import Orphan
from tui.core.runs import Assessment, Run
from tui.core.sanitize import printable
from tui.core.secrets import command_text, redact_env
from tui.core.units import human_age, human_size
from tui.ops.orphan_words import command_words, memory_words
from tui.ops.relaunch import DEFAULT_TIMEOUT, LAUNCH_LOG
from tui.remote.probe import ready_patterns

#: Children listed by pid before the rest are only counted.
MAX_CHILDREN_SHOWN = 16
#: Rows of the dialog besides its facts: its border, and the buttons with their margin.
DIALOG_FRAME = 6
#: Characters of an orphan's command line the modal shows.
MAX_ORPHAN_COMMAND = 200
#: The GPU fact until the host has answered.
GPU_CHECKING = "checking …"
#: What the modal gives back: the plan's confirm button, or its second choice (None:
#: cancelled).
CONFIRM = "confirm"
ALTERNATIVE = "alternative"


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
    #: The label of a second choice's button (None: there is only one).
    alternative: str | None = None

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


def orphan_facts(a: Assessment, orphan: Orphan) -> list[Fact]:
    """One orphan as the user confirms its kill: its memory and GPU, command, start."""
    user = f", user {printable(orphan.user)}" if orphan.user else ""
    return [
        Fact("memory", memory_words(orphan)),
        Fact("command", command_words(orphan, MAX_ORPHAN_COMMAND)),
        Fact(
            "started",
            f"{host_clock(a, orphan.started_at)} on the host's clock, "
            f"{human_age(a.checked_at - orphan.started_at)} ago; parent pid {orphan.ppid}{user}",
        ),
    ]


def orphan_sections(a: Assessment, orphans: Sequence[Orphan]) -> list[Section]:
    return [Section(f"pid {o.pid}", orphan_facts(a, o)) for o in orphans]


def orphans_signals(service: Service) -> str:
    return (
        f"SIGTERM to each; after {service.stop_grace:g} s, SIGKILL to any still running; then "
        "up to as long again for the memory they hold to be free"
    )


def orphans_plan(service: Service, a: Assessment, orphans: Sequence[Orphan]) -> Plan:
    """The kill of the orphans on the service's GPUs, each by its pid and start time."""
    count = f"{len(orphans)} orphan{'s' if len(orphans) != 1 else ''}"
    return Plan(
        title=f"Kill the orphans on {service.label}'s GPUs?",
        intro=(
            f"{count} on {a.host} hold memory on the service's GPUs and belong to no live "
            "run (left when a server died, or started by hand). Right before each signal "
            "the pid's start time is checked again: a pid that now belongs to another "
            "process is left alone."
        ),
        sections=[
            *orphan_sections(a, orphans),
            Section(None, [Fact("signals", orphans_signals(service))]),
        ],
        confirm=f"Kill {count}",
    )


def with_orphans(plan: Plan, service: Service, a: Assessment, orphans: Sequence[Orphan]) -> Plan:
    """``plan`` (the kill of the run) with the orphans' kill offered as a second choice."""
    count = f"{len(orphans)} orphan{'s' if len(orphans) != 1 else ''}"
    offered = orphans_plan(service, a, orphans)
    return Plan(
        title=plan.title,
        intro=(
            f"{plan.intro} Or, as a separate choice, kill the {count} on its GPUs (the run "
            "is then left alone)."
        ),
        sections=[
            Section("the run", [f for s in plan.sections for f in s.facts]),
            *(Section(f"or the orphans: {s.heading}", s.facts) for s in offered.sections[:-1]),
            Section(None, offered.sections[-1].facts),
        ],
        confirm=plan.confirm,
        alternative=offered.confirm,
    )


# ---------------------------------------------------------------------- modal


class ConfirmAction(ModalScreen[str | None]):
    """Shows a :class:`Plan`; dismisses with :data:`CONFIRM` or :data:`ALTERNATIVE` for
    the button pressed, None when cancelled."""

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
            # The intro scrolls with the facts; the buttons stay below, always on screen.
            with VerticalScroll(id="facts"):
                yield Static(Content(printable(self.plan.intro)), id="intro")
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
                if self.plan.alternative:
                    yield Button(self.plan.alternative, id=ALTERNATIVE, variant="warning")
                yield Button(self.plan.confirm, id=CONFIRM, variant="error")

    def on_resize(self, event: events.Resize) -> None:
        # The facts take what the dialog (95% of the screen) leaves beside its border and
        # the buttons, so the buttons are on screen however short the terminal is.
        height = event.size.height * 95 // 100 - DIALOG_FRAME
        self.query_one("#facts").styles.max_height = max(1, height)

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
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        pressed = event.button.id
        self.dismiss(pressed if pressed in (CONFIRM, ALTERNATIVE) else None)
