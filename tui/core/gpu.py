"""GPU telemetry from nvidia-smi's CSV, and which GPU memory belongs to a service.

The probe agent runs :data:`GPU_QUERY` and :data:`APPS_QUERY` on the host, once per
probe, and hands the exit status and output here. Nothing here runs anything. The
agent imports only the stdlib, so it spells the queries itself; a test holds its
spelling to these.

Invariants:

* A value nvidia-smi cannot give (``[N/A]``, ``[Not Supported]``, any
  ``[...]``, ``N/A``) is ``None``, never 0 and never an error.
* Units are stripped if nvidia-smi printed them (``402.17 W``, ``72853 MiB``),
  and a header row, if present, names the columns.
* No nvidia-smi, no driver, no GPU: a :class:`GpuProblem` with one quiet
  sentence, not an exception.
* Compute processes are tied to a service only by PID. When none of the PIDs
  nvidia-smi lists is one of the service's (inside an LXC container it shows
  host PIDs, or none at all), :class:`Attribution` says so instead of guessing.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tui.core.metrics.model import Metric
from tui.core.sanitize import printable
from tui.core.secrets import redact_argv

GPU_FIELDS = (
    "index",
    "name",
    "power.draw",
    "power.limit",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "uuid",
)
APPS_FIELDS = ("pid", "used_memory", "gpu_uuid")

#: The two commands to run on the host (argv, never a shell string).
GPU_QUERY = (
    "nvidia-smi",
    f"--query-gpu={','.join(GPU_FIELDS)}",
    "--format=csv,noheader,nounits",
)
APPS_QUERY = (
    "nvidia-smi",
    f"--query-compute-apps={','.join(APPS_FIELDS)}",
    "--format=csv,noheader,nounits",
)

_UNIT = re.compile(r"\s*(?:W|MiB|%|C|MHz)$")
_HEADER_UNIT = re.compile(r"\s*\[[^\]]*\]$")


#: The series a GPU reading gives (:meth:`GpuReading.values`), one per GPU (label ``gpuN``).
GPU_METRICS = frozenset(
    {
        Metric.GPU_POWER,
        Metric.GPU_POWER_LIMIT,
        Metric.GPU_UTIL,
        Metric.GPU_MEMORY,
        Metric.GPU_TEMPERATURE,
    }
)


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one moment. Each measurement is None when nvidia-smi could not give it.

    ``utilization`` is a fraction 0-1 (nvidia-smi prints percent); power in W,
    memory in MiB, temperature in °C.
    """

    index: int
    name: str
    power_draw: float | None
    power_limit: float | None
    utilization: float | None
    memory_used: float | None
    memory_total: float | None
    temperature: float | None
    #: nvidia-smi's ``GPU-…`` uuid, which names the GPU in the process list.
    uuid: str | None = None

    @property
    def power_fraction(self) -> float | None:
        """Draw over limit, when both are known and the limit is positive."""
        if self.power_draw is None or not self.power_limit:
            return None
        return self.power_draw / self.power_limit

    def values(self) -> dict[Metric, float]:
        """The known measurements as series values (for ``SeriesStore.add_values``)."""
        found = {
            Metric.GPU_POWER: self.power_draw,
            Metric.GPU_POWER_LIMIT: self.power_limit,
            Metric.GPU_UTIL: self.utilization,
            Metric.GPU_MEMORY: self.memory_used,
            Metric.GPU_TEMPERATURE: self.temperature,
        }
        return {metric: value for metric, value in found.items() if value is not None}

    @property
    def label(self) -> str:
        """The series label for this GPU (``gpu0``)."""
        return f"gpu{self.index}"

    @property
    def words(self) -> str:
        """Its figures as the screen's metrics pane says them, for text output:
        ``gpu0 451 W / 700 W · util 98% · 72,332 / 81,559 MiB`` (``—`` for one unknown)."""

        def said(metric: Metric, value: float | None) -> str:
            return "—" if value is None else metric.unit.format(value)

        power = f"{said(Metric.GPU_POWER, self.power_draw)} / "
        power += said(Metric.GPU_POWER_LIMIT, self.power_limit)
        memory = said(Metric.GPU_MEMORY, self.memory_used).removesuffix(" MiB")
        memory += f" / {said(Metric.GPU_MEMORY, self.memory_total)}"
        util = said(Metric.GPU_UTIL, self.utilization)
        return f"{self.label} {power} · util {util} · {memory}"

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.name,
            "power_draw": self.power_draw,
            "power_limit": self.power_limit,
            "utilization": self.utilization,
            "memory_used": self.memory_used,
            "memory_total": self.memory_total,
            "temperature": self.temperature,
        }


@dataclass(frozen=True)
class ComputeApp:
    """A process nvidia-smi lists as using a GPU, in nvidia-smi's PID namespace: one row
    per (process, GPU). ``gpu`` is the index of the GPU whose uuid the row names, None
    when the row names none or a GPU the GPU query did not list."""

    pid: int
    used_memory: float | None
    gpu_uuid: str | None = None
    gpu: int | None = None


class GpuProblem(enum.Enum):
    """Why there is no telemetry. Each is a quiet line, not an error."""

    NO_NVIDIA_SMI = "no-nvidia-smi"
    NO_DRIVER = "no-driver"
    NO_DEVICES = "no-devices"
    FAILED = "failed"
    UNREADABLE = "unreadable"

    @property
    def message(self) -> str:
        return _PROBLEMS[self]


_PROBLEMS = {
    GpuProblem.NO_NVIDIA_SMI: "no nvidia-smi on this host: no GPU telemetry",
    GpuProblem.NO_DRIVER: "nvidia-smi cannot talk to the NVIDIA driver: no GPU telemetry",
    GpuProblem.NO_DEVICES: "nvidia-smi finds no GPU",
    GpuProblem.FAILED: "nvidia-smi failed",
    GpuProblem.UNREADABLE: "nvidia-smi printed nothing babysit can read",
}


@dataclass(frozen=True)
class GpuQuery:
    """The outcome of one ``--query-gpu`` run: readings, or the problem that prevented them.

    Invariant: ``problem`` is None exactly when the command succeeded and at
    least one row was read; ``detail`` is nvidia-smi's own words, if any.
    """

    gpus: tuple[GpuReading, ...]
    problem: GpuProblem | None = None
    detail: str = ""

    @property
    def message(self) -> str:
        if self.problem is None:
            return f"{len(self.gpus)} GPU{'s' if len(self.gpus) != 1 else ''}"
        return self.problem.message + (f" ({self.detail})" if self.detail else "")


def _measure(text: str) -> float | None:
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NA"):
        return None
    text = _UNIT.sub("", text)
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _text(text: str) -> str | None:
    """A text cell, printable, or None when nvidia-smi could not give it."""
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NA"):
        return None
    return printable(text)


def _rows(text: str, fields: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """The column names (from a header row when there is one) and the data rows."""
    columns = list(fields)
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if rows == [] and cells and cells[0].split(" ")[0] in ("index", "pid"):
            columns = [_HEADER_UNIT.sub("", cell) for cell in cells]
            continue
        rows.append(cells)
    return columns, rows


def _problem(exit_status: int | None, output: str) -> tuple[GpuProblem, str] | None:
    text = output.strip()
    first = text.splitlines()[0][:200] if text else ""
    lowered = text.lower()
    if exit_status == 127 or "command not found" in lowered or "no such file" in lowered:
        return GpuProblem.NO_NVIDIA_SMI, ""
    if "couldn't communicate with the nvidia driver" in lowered or exit_status == 9:
        return GpuProblem.NO_DRIVER, first
    if "no devices were found" in lowered or exit_status == 6:
        return GpuProblem.NO_DEVICES, ""
    if exit_status not in (0, None):
        return GpuProblem.FAILED, first or f"exit status {exit_status}"
    return None


def read_gpus(
    exit_status: int | None, stdout: str, stderr: str = "", fields: Sequence[str] = GPU_FIELDS
) -> GpuQuery:
    """Read the output of :data:`GPU_QUERY` (``exit_status`` None: the command was not run
    to completion, only its output is known). Rows that do not parse are skipped."""
    problem = _problem(exit_status, f"{stderr}\n{stdout}" if exit_status else stderr)
    if problem is not None:
        return GpuQuery((), *problem)
    columns, rows = _rows(stdout, fields)
    gpus = []
    for cells in rows:
        row = dict(zip(columns, cells, strict=False))
        try:
            index = int(row["index"])
        except (KeyError, ValueError):
            continue
        utilization = _measure(row.get("utilization.gpu", ""))
        gpus.append(
            GpuReading(
                index=index,
                name=row.get("name", ""),
                power_draw=_measure(row.get("power.draw", "")),
                power_limit=_measure(row.get("power.limit", "")),
                utilization=None if utilization is None else utilization / 100,
                memory_used=_measure(row.get("memory.used", "")),
                memory_total=_measure(row.get("memory.total", "")),
                temperature=_measure(row.get("temperature.gpu", "")),
                uuid=_text(row.get("uuid", "")),
            )
        )
    if not gpus:
        no_devices = "no devices were found" in stdout.lower()
        problem_kind = GpuProblem.NO_DEVICES if no_devices else GpuProblem.UNREADABLE
        return GpuQuery((), problem_kind)
    return GpuQuery(tuple(gpus))


@dataclass(frozen=True)
class AppsQuery:
    """The outcome of one ``--query-compute-apps`` run; an empty list is a valid answer."""

    apps: tuple[ComputeApp, ...]
    problem: GpuProblem | None = None
    detail: str = ""
    #: When nvidia-smi listed them (host clock), where known: a list may be reused
    #: for a few seconds while it provably holds (see the agent's gpu_readings).
    read_at: float | None = None


def read_apps(
    exit_status: int | None,
    stdout: str,
    stderr: str = "",
    fields: Sequence[str] = APPS_FIELDS,
    *,
    read_at: float | None = None,
    gpus: Sequence[GpuReading] = (),
) -> AppsQuery:
    """Read the output of :data:`APPS_QUERY`. ``No running processes found`` is no apps.
    Each app's GPU index is the one of ``gpus`` (the GPU query's) with its uuid."""
    problem = _problem(exit_status, f"{stderr}\n{stdout}" if exit_status else stderr)
    if problem is not None:
        return AppsQuery((), *problem, read_at=read_at)
    columns, rows = _rows(stdout, fields)
    index_of = {g.uuid: g.index for g in gpus if g.uuid}
    apps = []
    for cells in rows:
        row = dict(zip(columns, cells, strict=False))
        try:
            pid = int(row["pid"])
        except (KeyError, ValueError):
            continue
        uuid = _text(row.get("gpu_uuid", ""))
        used = _measure(row.get("used_memory", ""))
        apps.append(ComputeApp(pid, used, uuid, index_of.get(uuid) if uuid else None))
    return AppsQuery(tuple(apps), read_at=read_at)


class Attribution(enum.Enum):
    """How far GPU use could be tied to the service's processes."""

    #: at least one process nvidia-smi lists is one of the service's
    TIED = "tied"
    #: nvidia-smi lists processes, none of them the service's (a container: host PIDs)
    OTHER_PIDS = "other-pids"
    #: nvidia-smi lists no process at all (usual inside a container)
    NONE_LISTED = "none-listed"
    #: the service has no live process to tie anything to
    NO_SERVICE_PIDS = "no-service-pids"
    #: the process query itself failed
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Orphan:
    """A process that holds memory on one of a service's GPUs and belongs to no live run
    of any service hosts.yaml names for the host: a TP worker or EngineCore its server
    left behind, a run started by hand. Known by (pid, start_ticks), which a kill of it
    re-checks; ``started_at`` in host epoch seconds; ``memory_mib`` None when
    nvidia-smi could not say; ``worker_of`` names the service whose engine's worker
    title it carries, when it does."""

    pid: int
    start_ticks: int
    memory_mib: float | None
    gpu: int | None
    cmdline: tuple[str, ...]
    started_at: float
    ppid: int
    user: str | None = None
    worker_of: str | None = None

    def to_json(self, utc_offset: int) -> dict[str, object]:
        """Its entry of ``gpus.orphans``: the command line redacted, the start in the
        host's own zone."""
        zone = timezone(timedelta(seconds=utc_offset))
        return {
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "memory_mib": self.memory_mib,
            "gpu": self.gpu,
            "cmdline": list(redact_argv(self.cmdline)),
            "started_at": datetime.fromtimestamp(self.started_at, zone).isoformat(
                timespec="seconds"
            ),
            "ppid": self.ppid,
            "user": self.user,
            "worker_of": self.worker_of,
        }


@dataclass(frozen=True)
class ServiceGpus:
    """The GPUs a service is shown with, and whose memory on them is the service's.

    ``gpus`` are the service's GPUs (those listed in hosts.yaml, else all);
    ``pids`` the service's PIDs nvidia-smi lists and ``memory`` what they hold
    (MiB, None when not tied); ``note`` says in plain words how far the tie
    goes — never empty when it could not be made.
    """

    gpus: tuple[GpuReading, ...]
    attribution: Attribution
    pids: tuple[int, ...]
    memory: float | None
    note: str
    problem: GpuProblem | None = None
    #: When the GPU process list the tie rests on was read (None: not known).
    apps_read_at: float | None = None
    #: Processes holding memory on these GPUs that belong to no live run of any of the
    #: host's configured services (see :class:`Orphan`), largest first.
    orphans: tuple[Orphan, ...] = ()
    #: The host's offset from UTC (seconds), in which its times are said.
    utc_offset: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "attribution": self.attribution.value,
            "pids": list(self.pids),
            "memory": self.memory,
            "note": self.note,
            "problem": None if self.problem is None else self.problem.value,
            "apps_read_at": self.apps_read_at,
            "orphans": [o.to_json(self.utc_offset) for o in self.orphans],
        }


def attribute(
    query: GpuQuery,
    apps: AppsQuery | None,
    service_pids: Collection[int],
    service_gpus: Sequence[int] = (),
) -> ServiceGpus:
    """Tie nvidia-smi's view to one service by PID (``service_pids``: the run's processes)."""
    tied = _attribute(query, apps, service_pids, service_gpus)
    return dataclasses.replace(tied, apps_read_at=apps.read_at if apps is not None else None)


def _attribute(
    query: GpuQuery,
    apps: AppsQuery | None,
    service_pids: Collection[int],
    service_gpus: Sequence[int],
) -> ServiceGpus:
    wanted = set(service_gpus)
    gpus = tuple(g for g in query.gpus if not wanted or g.index in wanted)
    untied = _cannot_tie(query, apps, service_pids, gpus, wanted)
    if untied is not None:
        return untied
    listed_apps = apps.apps if apps is not None else ()
    pids = set(service_pids)
    mine = [a for a in listed_apps if a.pid in pids]
    if mine:
        known = [a.used_memory for a in mine if a.used_memory is not None]
        memory = sum(known) if known else None
        note = f"{len(mine)} of the run's processes on the GPUs"
        return ServiceGpus(gpus, Attribution.TIED, tuple(a.pid for a in mine), memory, note)
    if listed_apps:
        listed = ", ".join(str(a.pid) for a in listed_apps[:6])
        more = "…" if len(listed_apps) > 6 else ""
        note = (
            f"nvidia-smi lists PIDs {listed}{more}, none of them this run's "
            "(inside a container nvidia-smi shows host PIDs): GPU memory not tied to the service"
        )
        return ServiceGpus(gpus, Attribution.OTHER_PIDS, (), None, note)
    note = (
        "nvidia-smi lists no GPU processes (inside a container it usually cannot see them): "
        "GPU memory not tied to the service"
    )
    return ServiceGpus(gpus, Attribution.NONE_LISTED, (), None, note)


def _cannot_tie(
    query: GpuQuery,
    apps: AppsQuery | None,
    service_pids: Collection[int],
    gpus: tuple[GpuReading, ...],
    wanted: set[int],
) -> ServiceGpus | None:
    if query.problem is not None:
        return ServiceGpus((), Attribution.UNKNOWN, (), None, query.message, query.problem)
    if wanted and not gpus:
        listed = ", ".join(str(g.index) for g in query.gpus)
        note = f"GPUs {sorted(wanted)} from hosts.yaml are not among nvidia-smi's ({listed})"
        return ServiceGpus((), Attribution.UNKNOWN, (), None, note)
    if apps is None or apps.problem is not None:
        why = apps.problem.message if apps and apps.problem else "not queried"
        return ServiceGpus(gpus, Attribution.UNKNOWN, (), None, f"GPU processes unknown: {why}")
    if not service_pids:
        return ServiceGpus(gpus, Attribution.NO_SERVICE_PIDS, (), None, "no live run to tie to")
    return None


def gpu_values(gpus: Sequence[GpuReading]) -> Mapping[str, dict[Metric, float]]:
    """Series values per GPU label (``gpu0`` -> {GPU_POWER: 402.2, ...})."""
    return {g.label: g.values() for g in gpus}
