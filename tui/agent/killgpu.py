"""The kill's wait for GPU memory: once the killed processes are gone, until nvidia-smi
lists none of them and the memory they held is free again, at most the grace.

A GPU's memory counts as free when what no listed process accounts for on it (the
driver's own, a context still being torn down) has not grown past what it was before
the first signal (give or take :data:`FREE_SLACK_MIB`): a process can leave the list
while its memory is still held.
"""

import time

from .nvidia import gpu_apps, nvidia_smi
from .protocol import KILL_GPU_WAIT

#: Seconds between two looks at nvidia-smi: at most four a second.
GPU_POLL = 0.25
#: MiB a GPU's unlisted memory may exceed its level before the kill and still be free.
FREE_SLACK_MIB = 64


def gpu_memory():
    """{GPU uuid: (index, memory.used MiB)} from nvidia-smi, or None when it does not
    answer."""
    status, stdout, _ = nvidia_smi(
        "--query-gpu=index,uuid,memory.used", "--format=csv,noheader,nounits"
    )
    if status != 0:
        return None
    found = {}
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit():
            used = int(parts[2]) if parts[2].isdigit() else None
            found[parts[1]] = (int(parts[0]), used)
    return found


def look():
    """What nvidia-smi says now: {"apps": [...], "memory": {uuid: (index, used)}}, or
    None when it lists no processes (no nvidia-smi, no driver)."""
    apps = gpu_apps()
    if apps is None:
        return None
    return {"apps": apps, "memory": gpu_memory() or {}}


def held_before(before, pids):
    """{GPU uuid: MiB} the processes ``pids`` held in the look ``before``."""
    held = {}
    for app in before["apps"] if before else []:
        if app["pid"] in pids and app["gpu_uuid"]:
            held[app["gpu_uuid"]] = held.get(app["gpu_uuid"], 0) + (app["used_mib"] or 0)
    return held


def _unlisted(seen, uuid):
    """MiB on GPU ``uuid`` that no process nvidia-smi lists accounts for (None: unknown)."""
    index_used = seen["memory"].get(uuid)
    if index_used is None or index_used[1] is None:
        return None
    listed = sum(a["used_mib"] or 0 for a in seen["apps"] if a["gpu_uuid"] == uuid)
    return max(0, index_used[1] - listed)


def still_held(before, now, pids):
    """(the pids still listed, MiB still held) of what ``pids`` held in ``before``: what
    nvidia-smi still lists for them, and what their GPUs' unlisted memory grew by."""
    listed = sorted(set(a["pid"] for a in now["apps"] if a["pid"] in pids))
    held = sum(a["used_mib"] or 0 for a in now["apps"] if a["pid"] in pids)
    for uuid, mib in held_before(before, pids).items():
        then, later = _unlisted(before, uuid), _unlisted(now, uuid)
        if then is not None and later is not None and later - then > FREE_SLACK_MIB:
            held += min(mib, later - then)
    return listed, held


def wait_gpu_free(log, before, pids, grace):
    """Wait, from now and at most ``grace`` seconds, until ``pids`` (gone) hold nothing
    on the GPUs, saying KILL_GPU_WAIT each time what is held changes.

    Returns (the last look; {"freed_mib", "freed_gpus", "held_mib", "waited_s"}), or
    (None, None) when there was nothing to wait for or nvidia-smi stopped answering."""
    held = held_before(before, pids)
    if before is None or not held:
        return None, None
    start = time.monotonic()
    deadline = start + grace
    said = None
    while True:
        now = look()
        if now is None:
            return None, None
        listed, mib = still_held(before, now, pids)
        if (listed, mib) != said:
            said = (listed, mib)
            if listed or mib:
                log.emit(KILL_GPU_WAIT, pids=listed, held_mib=mib)
        if (not listed and not mib) or time.monotonic() >= deadline:
            break
        time.sleep(min(GPU_POLL, max(0.0, deadline - time.monotonic())))
    total = sum(held.values())
    indexes = sorted(set(before["memory"].get(u, (None, None))[0] for u in held) - set([None]))
    return now, {
        "freed_mib": max(0, total - mib),
        "freed_gpus": indexes,
        "held_mib": mib,
        "waited_s": round(time.monotonic() - start, 2),
    }
