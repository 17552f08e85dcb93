"""nvidia-smi's answers: the raw CSV babysit reads, and the GPUs' processes and uuids."""


def nvidia_smi(*args):
    """(exit status, stdout, stderr) of one nvidia-smi query; 127 when it cannot run."""
    import subprocess

    try:
        done = subprocess.run(
            ["nvidia-smi", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return 127, "", str(error)
    return (
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def nvidia_smi_csv(gpus=True, apps=True):
    """The raw CSV of the nvidia-smi queries babysit reads (statuses and errors too):
    each GPU with its uuid, each compute process with the uuid of its GPU."""
    out = {}
    queries = (
        (
            "gpus",
            "--query-gpu=index,name,power.draw,power.limit,utilization.gpu,"
            "memory.used,memory.total,temperature.gpu,uuid",
        ),
        ("apps", "--query-compute-apps=pid,used_memory,gpu_uuid"),
    )
    for name, query in queries:
        if not (gpus if name == "gpus" else apps):
            continue
        status, stdout, stderr = nvidia_smi(query, "--format=csv,noheader,nounits")
        out[name + "_status"] = status
        out[name + "_error"] = stderr.strip()[-300:]
        out[name] = stdout
    return out


def gpu_apps():
    """[{pid, used_mib, gpu_uuid}] from nvidia-smi, or None when it is not there."""
    status, stdout, _ = nvidia_smi(
        "--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits"
    )
    if status != 0:
        return None
    apps = []
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            used = int(parts[1]) if parts[1].isdigit() else None
            apps.append(
                {
                    "pid": int(parts[0]),
                    "used_mib": used,
                    "gpu_uuid": parts[2] if len(parts) > 2 else None,
                }
            )
    return apps


def gpu_index_of_uuid():
    """{GPU uuid: index} from nvidia-smi, or None when it does not answer."""
    status, stdout, _ = nvidia_smi("--query-gpu=index,uuid", "--format=csv,noheader")
    if status != 0:
        return None
    found = {}
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            found[parts[1]] = int(parts[0])
    return found


def gpu_uuids(indexes):
    """{index as text: uuid} of the GPUs ``indexes`` (see gpu_index_of_uuid)."""
    if not indexes:
        return {}
    index_of = gpu_index_of_uuid() or {}
    return dict((str(index), uuid) for uuid, index in index_of.items() if index in indexes)
