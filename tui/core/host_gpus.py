"""The host's GPUs in a probe answer, read once for every service that shares them."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence

from tui.core.gpu import AppsQuery, GpuQuery, ServiceGpus, attribute, read_apps, read_gpus
from tui.core.orphans import GpuProc, read_procs, with_orphans


class HostGpus(Mapping[str, object]):
    """The ``gpu_csv`` block of one probe answer (nvidia-smi's answers and ``procs``), as
    it was read: the agent sends it once for every service that asked, and its
    :attr:`readings` are made once for all of them."""

    def __init__(self, fields: Mapping[str, object]) -> None:
        self._fields = dict(fields)

    @classmethod
    def of(cls, csv: Mapping[str, object]) -> HostGpus:
        return csv if isinstance(csv, HostGpus) else cls(csv)

    def __getitem__(self, key: str) -> object:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    @functools.cached_property
    def readings(self) -> tuple[GpuQuery, AppsQuery, dict[int, GpuProc]]:
        """The GPUs, the processes on them, and who those processes are."""
        query = read_gpus(
            _int(self.get("gpus_status")),
            str(self.get("gpus") or ""),
            str(self.get("gpus_error") or ""),
        )
        apps = read_apps(
            _int(self.get("apps_status")),
            str(self.get("apps") or ""),
            str(self.get("apps_error") or ""),
            read_at=_float(self.get("apps_at")),
            gpus=query.gpus,
        )
        return query, apps, read_procs(self.get("procs"))


def service_gpus(
    csv: Mapping[str, object], pids: Sequence[int], indexes: Sequence[int], utc_offset: int
) -> ServiceGpus:
    """The service's GPUs (its run's ``pids``, its configured ``indexes``) in the host's
    ``csv``, with its orphans."""
    host = HostGpus.of(csv)
    query, apps, procs = host.readings
    tied = attribute(query, apps, pids, indexes)
    return with_orphans(
        tied,
        query,
        apps,
        procs,
        csv=host,
        run_pids=pids,
        service_gpus=indexes,
        utc_offset=utc_offset,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
