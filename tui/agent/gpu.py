"""The GPU readings of a probe: asked once however many services want them."""

import time

from .gpuprocs import gpu_procs
from .nvidia import nvidia_smi_csv

#: The last --query-compute-apps reading of this (long-lived) agent, see gpu_readings.
APPS_SEEN = {}


def gpu_readings(view, services, entries, apps_max_age, gpu_owners=()):
    """nvidia-smi's readings, asked once per probe however many services want them,
    with who each process of its list is (``procs``, see gpuprocs.gpu_procs; with
    ``owners_problem`` when some could not be told).

    The GPU query runs every time. The process list may be the last one, when the
    caller allows it (``apps_max_age`` seconds) and it provably still holds: every
    process it lists is alive (same start time) and visible here, and every
    process of the runs found now had started before it was read, so none of them
    can be missing from it for having started since. ``apps_at`` says when it was
    read. Who owns each listed process is read afresh every time.
    """
    out = nvidia_smi_csv(apps=False)
    now = time.time()
    seen = APPS_SEEN.get("reading")
    if seen is not None and apps_max_age > 0 and now - seen["apps_at"] <= apps_max_age:
        listed_alive = all(
            pid in view.table and view.table[pid]["start_ticks"] == ticks
            for pid, ticks in seen["listed"]
        )
        # Start times are exact to a clock tick, but rest on the wall clock as read
        # now: a second's margin for the clock's steps.
        runs_older = all(
            member["start_time"] <= seen["apps_at"] - 1.0
            for entry in entries
            for run in entry["runs"]
            for member in [run, *run["members"]]
        )
        if listed_alive and runs_older:
            out.update(seen["csv"])
            return with_procs(out, view, services, entries, gpu_owners)
    csv = nvidia_smi_csv(gpus=False)
    csv["apps_at"] = now
    listed = []
    for line in csv["apps"].splitlines():
        first = line.split(",", 1)[0].strip()
        if first.isdigit() and int(first) in view.table:
            listed.append((int(first), view.table[int(first)]["start_ticks"]))
        elif first.isdigit():
            listed.append((int(first), None))  # a pid we cannot see: never reused
    APPS_SEEN["reading"] = {"apps_at": now, "csv": csv, "listed": listed}
    out.update(csv)
    return with_procs(out, view, services, entries, gpu_owners)


def with_procs(out, view, services, entries, gpu_owners):
    """``out`` with ``procs`` (and ``owners_problem``) when the process list was read."""
    if out.get("apps_status") == 0:
        out["procs"], out["owners_problem"] = gpu_procs(
            view, out.get("apps"), services, entries, gpu_owners
        )
    return out
