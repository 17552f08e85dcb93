"""A stand-in for ``nvidia-smi`` on a simulated host.

Answers the query forms babysit uses, in the CSV shape real ``nvidia-smi`` prints::

    nvidia-smi --query-gpu=index,name,power.draw,power.limit,utilization.gpu,\\
               memory.used,memory.total,temperature.gpu --format=csv,noheader,nounits
    0, NVIDIA H100 80GB HBM3, 402.17, 700.00, 98, 72853, 81559, 51

    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
    41234, 72852

plus ``-L``/``--list-gpus``, ``-i``/``--id``, headers and units when
``noheader``/``nounits`` are left out, and a plain ``nvidia-smi`` table.
Values a card cannot report print as ``[N/A]`` (``fan.speed`` on data-centre
cards, memory on unified-memory cards such as GB10, ``power.limit`` where the
inventory gives none).

The GPUs come from ``BABYSIT_SIM_GPUS`` or ``$BABYSIT_SIM_STATE/gpus.json``
(see :mod:`tui.sim.gpus`); memory, utilisation, power and temperature follow
the sims registered in ``BABYSIT_SIM_STATE`` that are still alive: memory is
what each of their processes holds (a process listed in two records, an
``orphan-workers`` worker in its server's and in its own, counts once), power
rises with running requests, and a sim without speculative decoding draws less
than one with it. Run it as
``babysit sim nvidia-smi ...``, ``python -m tui.sim.nvidia_smi ...`` or through
the ``tui/sim/nvidia-smi`` shim.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tui.sim import gpus as registry
from tui.sim.gpus import GpuSpec, SimRecord

DRIVER_VERSION = "570.133.20"
CUDA_VERSION = "12.8"
NA = "[N/A]"


@dataclass(frozen=True)
class Reading:
    """One GPU at one instant. ``memory_used_mib`` counts live processes only."""

    spec: GpuSpec
    power_w: float
    utilization: int
    memory_used_mib: int
    temperature: int
    apps: tuple[tuple[int, int], ...]


def _jitter(index: int, now: float, salt: str) -> float:
    """A repeatable wobble in [-1, 1] that changes four times a second."""
    seed = f"{salt}:{index}:{int(now * 4)}".encode()
    digest = hashlib.sha1(seed, usedforsecurity=False).digest()
    return digest[0] / 127.5 - 1.0


def read(now: float | None = None, env: dict[str, str] | None = None) -> list[Reading]:
    """Current readings of every GPU in the inventory."""
    now = time.time() if now is None else now
    specs = registry.inventory(env)
    records = registry.live_records(registry.state_dir(env))
    readings = []
    for spec in specs:
        users: list[tuple[SimRecord, int, int]] = []
        for record in records:
            for proc in record.procs:
                if proc.gpu == spec.index and registry.alive(proc.pid, proc.start_ticks):
                    users.append((record, proc.pid, proc.memory_mib))
        readings.append(_reading(spec, users, now))
    return readings


def _reading(spec: GpuSpec, users: Sequence[tuple[SimRecord, int, int]], now: float) -> Reading:
    limit = spec.power_limit_w if spec.power_limit_w is not None else max(spec.idle_w * 12, 100.0)
    idle = spec.idle_w
    held: dict[int, int] = {}
    for _, pid, mem in users:
        held.setdefault(pid, mem)  # a worker listed by its server and by itself counts once
    memory = sum(held.values())
    running = max((record.running for record, _, _ in users), default=0)
    spec_on = any(record.spec for record, _, _ in users)
    loading = any(record.phase in ("starting", "loading") for record, _, _ in users)
    wobble = _jitter(spec.index, now, "power")
    if running > 0:
        share = (0.64 if spec_on else 0.44) + 0.14 * min(running / 32.0, 1.0)
        power = limit * share * (1 + 0.02 * wobble)
        utilization = 97 + round(1.5 * (_jitter(spec.index, now, "util") + 1))
    elif loading:
        power = idle * (1.35 + 0.05 * wobble)
        utilization = max(0, round(4 + 4 * _jitter(spec.index, now, "util")))
    elif users:
        power = idle * (1.62 + 0.03 * wobble)
        utilization = 0
    else:
        power = idle * (1 + 0.02 * wobble)
        utilization = 0
    power = min(power, limit)
    heat = (power - idle) / max(limit - idle, 1.0)
    temperature = round(29 + spec.index % 3 + 38 * max(heat, 0.0))
    total = spec.memory_total_mib
    used = memory if total is None else min(memory, total)
    apps = tuple((pid, mem) for pid, mem in held.items() if mem > 0)
    return Reading(spec, power, min(utilization, 100), used, temperature, apps)


# field -> (header, unit, value); value None means [N/A]
_GpuField = Callable[[Reading], "str | None"]


def _num(value: float | None, fmt: str) -> str | None:
    return None if value is None else format(value, fmt)


_GPU_FIELDS: dict[str, tuple[str, str, _GpuField]] = {
    "index": ("index", "", lambda r: str(r.spec.index)),
    "name": ("name", "", lambda r: r.spec.name),
    "gpu_name": ("name", "", lambda r: r.spec.name),
    "uuid": ("uuid", "", lambda r: r.spec.uuid),
    "gpu_uuid": ("uuid", "", lambda r: r.spec.uuid),
    "pci.bus_id": ("pci.bus_id", "", lambda r: r.spec.bus_id),
    "gpu_bus_id": ("pci.bus_id", "", lambda r: r.spec.bus_id),
    "driver_version": ("driver_version", "", lambda r: DRIVER_VERSION),
    "count": ("count", "", lambda r: ""),
    "pstate": ("pstate", "", lambda r: "P0" if r.utilization or r.apps else "P8"),
    "fan.speed": ("fan.speed [%]", " %", lambda r: None),
    "power.draw": ("power.draw [W]", " W", lambda r: f"{r.power_w:.2f}"),
    "power.limit": ("power.limit [W]", " W", lambda r: _num(r.spec.power_limit_w, ".2f")),
    "enforced.power.limit": (
        "enforced.power.limit [W]",
        " W",
        lambda r: _num(r.spec.power_limit_w, ".2f"),
    ),
    "utilization.gpu": ("utilization.gpu [%]", " %", lambda r: str(r.utilization)),
    "utilization.memory": (
        "utilization.memory [%]",
        " %",
        lambda r: str(min(100, r.utilization * 3 // 4)),
    ),
    "memory.used": ("memory.used [MiB]", " MiB", lambda r: str(r.memory_used_mib)),
    "memory.total": ("memory.total [MiB]", " MiB", lambda r: _num(r.spec.memory_total_mib, "d")),
    "memory.free": (
        "memory.free [MiB]",
        " MiB",
        lambda r: (
            None
            if r.spec.memory_total_mib is None
            else str(r.spec.memory_total_mib - r.memory_used_mib)
        ),
    ),
    "temperature.gpu": ("temperature.gpu", "", lambda r: str(r.temperature)),
}

_APP_FIELDS = {
    "pid": ("pid", ""),
    "process_name": ("process_name", ""),
    "name": ("process_name", ""),
    "used_memory": ("used_gpu_memory [MiB]", " MiB"),
    "used_gpu_memory": ("used_gpu_memory [MiB]", " MiB"),
    "gpu_uuid": ("gpu_uuid", ""),
    "gpu_bus_id": ("gpu_bus_id", ""),
    "gpu_name": ("gpu_name", ""),
}


def _process_name(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        try:
            return Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            return NA


def _cell(value: str | None, unit: str, units: bool) -> str:
    if value is None:
        return NA
    return value + unit if units else value


def _invalid(field: str) -> int:
    print(f'Field "{field}" is not a valid field to query.\n')
    return 2


def query_gpus(fields: list[str], header: bool, units: bool, ids: set[int] | None) -> int:
    for field in fields:
        if field not in _GPU_FIELDS:
            return _invalid(field)
    readings = [r for r in read() if ids is None or r.spec.index in ids]
    lines = []
    if header:
        lines.append(", ".join(_GPU_FIELDS[f][0] for f in fields))
    for reading in readings:
        cells = []
        for field in fields:
            _, unit, get = _GPU_FIELDS[field]
            value = str(len(readings)) if field == "count" else get(reading)
            if field in reading.spec.na:
                value = None
            cells.append(_cell(value, unit, units))
        lines.append(", ".join(cells))
    _print(lines)
    return 0


def query_apps(fields: list[str], header: bool, units: bool, ids: set[int] | None) -> int:
    for field in fields:
        if field not in _APP_FIELDS:
            return _invalid(field)
    lines = []
    if header:
        lines.append(", ".join(_APP_FIELDS[f][0] for f in fields))
    for reading in read():
        if ids is not None and reading.spec.index not in ids:
            continue
        for pid, memory in reading.apps:
            cells = []
            for field in fields:
                unit = _APP_FIELDS[field][1]
                value: str | None = {
                    "pid": str(pid),
                    "process_name": _process_name(pid),
                    "name": _process_name(pid),
                    "used_memory": None if "used_memory" in reading.spec.na else str(memory),
                    "gpu_uuid": reading.spec.uuid,
                    "gpu_bus_id": reading.spec.bus_id,
                    "gpu_name": reading.spec.name,
                }.get(field)
                if field == "used_gpu_memory":
                    value = str(memory)
                cells.append(_cell(value, unit, units))
            lines.append(", ".join(cells))
    _print(lines)
    return 0


def list_gpus(ids: set[int] | None) -> int:
    _print(
        [
            f"GPU {s.index}: {s.name} (UUID: {s.uuid})"
            for s in registry.inventory()
            if ids is None or s.index in ids
        ]
    )
    return 0


def _boxed(text: str) -> str:
    return "|" + text.ljust(89)[:89] + "|"


def table(ids: set[int] | None) -> int:
    """The default view, laid out like driver 570's."""
    readings = [r for r in read() if ids is None or r.spec.index in ids]
    rule = "+" + "-" * 89 + "+"
    cells = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
    out = [
        time.strftime("%a %b %d %H:%M:%S %Y") + "       ",
        rule,
        _boxed(
            f" NVIDIA-SMI {DRIVER_VERSION:<22}Driver Version: {DRIVER_VERSION:<15}"
            f"CUDA Version: {CUDA_VERSION}"
        ),
        "|" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+",
        "| GPU  Name                 Persistence-M |"
        " Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |"
        "           Memory-Usage | GPU-Util  Compute M. |",
        f"|{'':41}|{'':24}|{'MIG M.':>21} |",
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
    ]
    for r in readings:
        limit = "N/A" if r.spec.power_limit_w is None else f"{r.spec.power_limit_w:.0f}W"
        if r.spec.memory_total_mib is None:
            memory = "Not Supported"
        else:
            memory = f"{r.memory_used_mib}MiB / {r.spec.memory_total_mib:>6}MiB"
        perf = "P0" if r.utilization or r.apps else "P8"
        power = f"{r.power_w:.0f}W / {limit:>5}"
        out.append(
            f"| {r.spec.index:>3}  {r.spec.name[:29]:<31}On  |{r.spec.bus_id:>19} Off |{'0':>21} |"
        )
        out.append(
            f"| N/A  {r.temperature:>3}C    {perf}{power:>24} |{memory:>23} |"
            f"{str(r.utilization) + '%':>8}      Default |"
        )
        out.append(f"|{'':41}|{'':24}|{'Disabled':>21} |")
        out.append(cells)
    out += [
        "",
        rule,
        _boxed(" Processes:"),
        _boxed(
            "  GPU   GI   CI              PID   Type   Process name"
            "                        GPU Memory"
        ),
        _boxed(
            "        ID   ID                                                               Usage"
        ),
        "|" + "=" * 89 + "|",
    ]
    apps = [(r.spec.index, pid, mem) for r in readings for pid, mem in r.apps]
    if not apps:
        out.append(_boxed("  No running processes found"))
    for index, pid, mem in apps:
        name = _process_name(pid)[-36:]
        out.append(_boxed(f"  {index:>3}   N/A  N/A  {pid:>15}      C   {name:<36}{mem:>9}MiB "))
    out.append(rule)
    _print(out)
    return 0


def _print(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


class UsageProblem(Exception):
    """The command line is not one nvidia-smi would accept (exit status 2)."""


_LONG = {
    "--query-gpu": "gpu",
    "--query-compute-apps": "apps",
    "--format": "format",
    "-i": "id",
    "--id": "id",
}


def parse(argv: list[str]) -> dict[str, list[str]]:
    """Options as lists of comma-separated items; ``--opt=value`` or ``--opt value``."""
    options: dict[str, list[str]] = {}
    index = 0
    while index < len(argv):
        name, eq, value = argv[index].partition("=")
        index += 1
        if name in ("-L", "--list-gpus", "-h", "--help"):
            options[name.lstrip("-")[0].upper()] = []
            continue
        if name not in _LONG:
            raise UsageProblem(
                "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
            )
        if not eq:
            if index >= len(argv):
                raise UsageProblem(f"Option {name} requires an argument.")
            value = argv[index]
            index += 1
        options[_LONG[name]] = [item.strip() for item in value.split(",") if item.strip()]
    return options


def main(argv: list[str]) -> int:  # noqa: PLR0911 - one exit per nvidia-smi outcome
    """Answer like nvidia-smi; returns its exit status."""
    try:
        options = parse(argv)
        ids = {int(item) for item in options["id"]} if "id" in options else None
    except UsageProblem as problem:
        print(problem, file=sys.stderr)
        return 2
    except ValueError:
        print(f"Invalid device id: {','.join(options.get('id', []))}", file=sys.stderr)
        return 2
    if "H" in options:
        print(__doc__)
        return 0
    try:
        registry.inventory()
    except ValueError as error:
        print(f"nvidia-smi (babysit sim): bad GPU inventory: {error}", file=sys.stderr)
        return 2
    if "L" in options:
        return list_gpus(ids)
    if "gpu" not in options and "apps" not in options:
        return table(ids)
    fmt = options.get("format", [])
    if "csv" not in fmt:
        print(
            "Option --format=csv is required with --query-gpu and --query-compute-apps.",
            file=sys.stderr,
        )
        return 2
    header, units = "noheader" not in fmt, "nounits" not in fmt
    if "gpu" in options:
        return query_gpus(options["gpu"], header, units, ids)
    return query_apps(options["apps"], header, units, ids)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
