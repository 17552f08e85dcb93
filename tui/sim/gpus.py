"""The GPUs of a simulated host, and the registry through which sims tell ``nvidia-smi`` about them.

Environment (read by both the simulated servers and the ``nvidia-smi`` stand-in):

``BABYSIT_SIM_GPUS``
    The inventory. ``8`` (eight of the default card), ``4xa100``, ``2xh100;1xl40s``,
    ``2xNAME:POWER_LIMIT_W:MEMORY_MIB`` for a custom card, or a JSON list of
    ``{"name", "power_limit", "memory_total", "idle_power", "na"}`` objects
    (``na`` lists query fields the card answers with ``[N/A]``, e.g.
    ``["power.limit"]``; ``"power_limit": null`` does the same). Presets:
    h100 (default), h100-pcie, h200, b200, a100 / a100-80gb, a100-40gb, l40s,
    rtx4090, rtx6000-ada, gb10 (unified memory: memory fields ``[N/A]``).
``BABYSIT_SIM_STATE``
    Directory of the registry: each running sim keeps ``sim-<pid>.json`` there
    (pid, start time, GPUs, memory per process, phase, load, speculative on/off).
    A ``gpus.json`` there (same JSON list as above) is the inventory when
    ``BABYSIT_SIM_GPUS`` is unset. Default: ``$TMPDIR/babysit-sim-<uid>``.
``CUDA_VISIBLE_DEVICES``
    Which physical GPUs a sim's ranks sit on (rank r uses the r-th listed index).

Records of dead processes are ignored (a pid counts only while ``/proc/PID/stat``
shows the same start time and the process is not a zombie), so a SIGKILLed sim
frees its GPUs at once, as the driver does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

GPUS_ENV = "BABYSIT_SIM_GPUS"
STATE_ENV = "BABYSIT_SIM_STATE"

#: preset -> (name, power limit W or None, memory MiB or None, idle W)
PRESETS: dict[str, tuple[str, float | None, int | None, float]] = {
    "h100": ("NVIDIA H100 80GB HBM3", 700.0, 81559, 68.0),
    "h100-pcie": ("NVIDIA H100 PCIe", 350.0, 81559, 48.0),
    "h200": ("NVIDIA H200", 700.0, 143771, 74.0),
    "b200": ("NVIDIA B200", 1000.0, 183359, 140.0),
    "a100": ("NVIDIA A100-SXM4-80GB", 400.0, 81920, 61.0),
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 400.0, 81920, 61.0),
    "a100-40gb": ("NVIDIA A100-SXM4-40GB", 400.0, 40960, 55.0),
    "l40s": ("NVIDIA L40S", 350.0, 46068, 34.0),
    "rtx4090": ("NVIDIA GeForce RTX 4090", 450.0, 24564, 19.0),
    "rtx6000-ada": ("NVIDIA RTX 6000 Ada Generation", 300.0, 49140, 27.0),
    "gb10": ("NVIDIA GB10", None, None, 11.0),
}
DEFAULT_PRESET = "h100"
DEFAULT_COUNT = 8
#: what a GB10-like card without its own memory reports for process memory totals
UNIFIED_MEMORY_MIB = 122502


@dataclass(frozen=True)
class GpuSpec:
    """One card. ``power_limit_w``/``memory_total_mib`` are None where the card prints ``[N/A]``."""

    index: int
    name: str
    power_limit_w: float | None
    memory_total_mib: int | None
    idle_w: float
    na: frozenset[str] = frozenset()

    @property
    def uuid(self) -> str:
        seed = f"babysit-sim-gpu-{self.index}-{self.name}".encode()
        digest = hashlib.sha1(seed, usedforsecurity=False).hexdigest()
        return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    @property
    def bus_id(self) -> str:
        return f"00000000:{0x18 + 0x10 * self.index:02X}:00.0"

    @property
    def usable_mib(self) -> int:
        """Memory a sim may plan with (unified-memory cards lend it system memory)."""
        return self.memory_total_mib if self.memory_total_mib is not None else UNIFIED_MEMORY_MIB


def _optional_number(raw: Mapping[str, object], key: str, default: float | None) -> float | None:
    if key not in raw:
        return default
    value = raw[key]
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"GPU field {key!r} must be a number or null, not {value!r}")


def _spec_from_dict(index: int, raw: Mapping[str, object]) -> GpuSpec:
    preset = PRESETS.get(str(raw.get("preset", "")).lower())
    name, limit, memory, idle = preset if preset else PRESETS[DEFAULT_PRESET]
    name = str(raw.get("name", name))
    limit = _optional_number(raw, "power_limit", limit)
    total = _optional_number(raw, "memory_total", memory)
    memory = None if total is None else int(total)
    idle = _optional_number(raw, "idle_power", idle) or idle
    listed = raw.get("na") or ()
    if not isinstance(listed, (list, tuple)):
        raise ValueError("GPU field 'na' must be a list of query fields")
    na = frozenset(str(item) for item in listed)
    if limit is None:
        na |= {"power.limit"}
    if memory is None:
        na |= {"memory.used", "memory.total", "memory.free"}
    return GpuSpec(index, name, limit, memory, idle, na)


def parse_inventory(text: str) -> tuple[GpuSpec, ...]:
    """Read ``BABYSIT_SIM_GPUS`` syntax (see module docstring). Raises ValueError."""
    text = text.strip()
    if not text:
        raise ValueError("empty GPU inventory")
    if text.startswith("["):
        items = json.loads(text)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError("GPU inventory JSON must be a list of objects")
        return tuple(_spec_from_dict(n, item) for n, item in enumerate(items))
    specs: list[GpuSpec] = []
    for raw_group in text.split(";"):
        group = raw_group.strip()
        counted = re.fullmatch(r"(\d+)\s*[xX]\s*(.*)", group)
        if counted is not None:
            count, card = int(counted.group(1)), counted.group(2)
        elif group.isdigit():
            count, card = int(group), ""
        else:
            count, card = 1, group
        card = card.strip()
        if not card:
            name, limit, memory, idle = PRESETS[DEFAULT_PRESET]
        elif card.lower() in PRESETS:
            name, limit, memory, idle = PRESETS[card.lower()]
        else:
            parts = card.split(":")
            if len(parts) != 3:
                raise ValueError(f"GPU {card!r}: want a preset or NAME:POWER_LIMIT_W:MEMORY_MIB")
            name = parts[0]
            limit = None if parts[1] in ("", "N/A") else float(parts[1])
            memory = None if parts[2] in ("", "N/A") else int(parts[2])
            idle = round((limit or 300.0) * 0.1, 1)
        for _ in range(count):
            raw: dict[str, object] = {
                "name": name,
                "power_limit": limit,
                "memory_total": memory,
                "idle_power": idle,
            }
            specs.append(_spec_from_dict(len(specs), raw))
    return tuple(specs)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The registry directory (created on demand by writers, never by readers)."""
    env = os.environ if env is None else env
    configured = env.get(STATE_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"babysit-sim-{os.getuid()}"


def inventory(env: Mapping[str, str] | None = None) -> tuple[GpuSpec, ...]:
    """GPUs from ``BABYSIT_SIM_GPUS``, else ``<state>/gpus.json``, else eight H100s."""
    env = os.environ if env is None else env
    configured = env.get(GPUS_ENV)
    if configured:
        return parse_inventory(configured)
    path = state_dir(env) / "gpus.json"
    if path.is_file():
        return parse_inventory(path.read_text())
    return parse_inventory(f"{DEFAULT_COUNT}x{DEFAULT_PRESET}")


def visible_indices(count: int, env: Mapping[str, str] | None = None) -> tuple[int, ...]:
    """Physical GPU indices a process may use, honouring ``CUDA_VISIBLE_DEVICES``."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        return tuple(range(count))
    indices = tuple(int(part) for part in visible.split(",") if part.strip().isdigit())
    return tuple(i for i in indices if i < count) or tuple(range(count))


def proc_start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid: int, start_ticks: int | None) -> bool:
    """True while ``pid`` is the same running (non-zombie) process that registered."""
    ticks = proc_start_ticks(pid)
    return ticks is not None and (start_ticks is None or ticks == start_ticks)


@dataclass(frozen=True)
class ProcUse:
    """One process holding memory on one GPU."""

    pid: int
    start_ticks: int | None
    gpu: int
    memory_mib: int


@dataclass(frozen=True)
class SimRecord:
    """What one running sim tells ``nvidia-smi``. Valid only while ``pid`` is alive."""

    pid: int
    start_ticks: int | None
    engine: str
    port: int
    phase: str
    spec: bool
    running: int
    queued: int
    procs: tuple[ProcUse, ...] = field(default=())

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SimRecord:
        raw = json.loads(text)
        raw["procs"] = tuple(ProcUse(**proc) for proc in raw.get("procs", ()))
        return cls(**raw)


def write_record(record: SimRecord, directory: Path) -> Path:
    """Atomically (re)write ``sim-<pid>.json``."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"sim-{record.pid}.json"
    tmp = directory / f".sim-{record.pid}.json.tmp"
    tmp.write_text(record.to_json())
    os.replace(tmp, path)
    return path


def live_records(directory: Path) -> list[SimRecord]:
    """Records of sims that are still running; unreadable or stale files are skipped."""
    records: list[SimRecord] = []
    if not directory.is_dir():
        return records
    for path in sorted(directory.glob("sim-*.json")):
        try:
            record = SimRecord.from_json(path.read_text())
        except (OSError, ValueError, TypeError, KeyError):
            continue  # a half-written or foreign file is not a sim we can account for
        if alive(record.pid, record.start_ticks):
            records.append(record)
        else:
            # A sim that died without cleaning up (SIGKILL): forget it, so the registry
            # does not grow with every sim ever started.
            path.unlink(missing_ok=True)
    return records
