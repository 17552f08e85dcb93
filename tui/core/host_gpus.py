"""The host's GPUs in a probe answer, read once for every service that shares them."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

from tui.core.gpu import AppsQuery, GpuQuery, ServiceGpus, attribute, read_apps, read_gpus
from tui.core.orphans import GpuProc, read_procs, with_orphans

#: The hosts' GPUs as their last answers read them: id(gpu_csv) -> (it, what it says).
#: Every service of one answer shares that mapping (the agent sends it once), so its
#: readings are made once; each mapping is held here, so no other takes its id.
_HostGpus = tuple[GpuQuery, AppsQuery, dict[int, GpuProc]]
_host_gpus: OrderedDict[int, tuple[Mapping[str, object], _HostGpus]] = OrderedDict()
HOST_GPUS_KEPT = 64


def _read_host_gpus(csv: Mapping[str, object]) -> _HostGpus:
    kept = _host_gpus.get(id(csv))
    if kept is not None and kept[0] is csv:
        return kept[1]
    query = read_gpus(
        _int(csv.get("gpus_status")), str(csv.get("gpus") or ""), str(csv.get("gpus_error") or "")
    )
    apps = read_apps(
        _int(csv.get("apps_status")),
        str(csv.get("apps") or ""),
        str(csv.get("apps_error") or ""),
        read_at=_float(csv.get("apps_at")),
        gpus=query.gpus,
    )
    read = (query, apps, read_procs(csv.get("procs")))
    _host_gpus[id(csv)] = (csv, read)
    while len(_host_gpus) > HOST_GPUS_KEPT:
        _host_gpus.popitem(last=False)
    return read


def service_gpus(
    csv: Mapping[str, object], pids: Sequence[int], indexes: Sequence[int], utc_offset: int
) -> ServiceGpus:
    """The service's GPUs (its run's ``pids``, its configured ``indexes``) in the host's
    ``csv``, with its orphans."""
    query, apps, procs = _read_host_gpus(csv)
    tied = attribute(query, apps, pids, indexes)
    return with_orphans(
        tied,
        query,
        apps,
        procs,
        csv=csv,
        run_pids=pids,
        service_gpus=indexes,
        utc_offset=utc_offset,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
