"""Orphans in core: nvidia-smi's rows with their GPUs, the agent's ``procs`` read at the
boundary, the orphan rule, ``gpus.orphans`` in JSON, the ``orphans`` hint, and the
verdict of a service whose only processes are leftover workers."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tui.agent.candidates import worker_title
from tui.core.assess import assess
from tui.core.gpu import read_apps, read_gpus
from tui.core.hint import HintRule
from tui.core.hints import hints
from tui.core.hints_orphans import COMMAND_SHOWN
from tui.core.metrics.series import SeriesStore
from tui.core.orphan_words import command_short
from tui.core.orphans import find_orphans, read_procs
from tui.core.report import ServiceFacts
from tui.core.runs import ServiceProbe
from tui.core.service_report import ProbeDetails
from tui.core.verdicts import Verdict
from tui.engines import spec

pytestmark = pytest.mark.unit

UUIDS = ("GPU-aaaa", "GPU-bbbb", "GPU-cccc")
GPUS = "".join(
    f"{i}, NVIDIA H100 80GB HBM3, 120.00, 700.00, 0, 30000, 81559, 40, {u}\n"
    for i, u in enumerate(UUIDS)
)
NOW = 1_750_000_000.0
#: The host is two hours east of UTC.
OFFSET = 7200


def proc(pid: int, owner: str | None = None, **extra: object) -> dict[str, object]:
    return {
        "pid": pid,
        "start_ticks": 1000 + pid,
        "started_at": NOW - 600,
        "ppid": 1,
        "uid": 0,
        "user": "root",
        "cmdline": ["VLLM::Worker_TP1"],
        "comm": "VLLM::Worker_TP",
        "owner": owner,
        "worker_of": None,
        **extra,
    }


def rows(*apps: tuple[int, str, int | str]) -> str:
    return "".join(f"{pid}, {memory}, {uuid}\n" for pid, uuid, memory in apps)


def orphans_of(apps_csv: str, procs: list[dict[str, object]], run=(), gpus=()):
    query = read_gpus(0, GPUS)
    apps = read_apps(0, apps_csv, gpus=query.gpus)
    return find_orphans(query, apps, read_procs(procs), run, gpus)


def test_each_row_of_the_process_list_knows_its_gpu_by_uuid() -> None:
    query = read_gpus(0, GPUS)
    assert [g.uuid for g in query.gpus] == list(UUIDS)
    apps = read_apps(
        0, rows((7, "GPU-cccc", 100), (8, "GPU-zzzz", 5), (9, "[N/A]", 5)), gpus=query.gpus
    )
    assert [(a.pid, a.gpu_uuid, a.gpu) for a in apps.apps] == [
        (7, "GPU-cccc", 2),
        (8, "GPU-zzzz", None),  # a GPU the GPU query did not list
        (9, None, None),
    ]
    # an agent that asks no uuids: rows without a GPU
    (old,) = read_apps(0, "7, 100\n", gpus=query.gpus).apps
    assert (old.pid, old.used_memory, old.gpu) == (7, 100, None)


def test_an_unowned_process_on_the_services_gpus_is_an_orphan_and_an_owned_one_is_not() -> None:
    apps = rows((10, "GPU-aaaa", 30000), (11, "GPU-aaaa", 20000), (12, "GPU-bbbb", 1))
    procs = [proc(10), proc(11, owner="other"), proc(12)]
    found = orphans_of(apps, procs, gpus=(0,))
    assert [(o.pid, o.gpu, o.memory_mib) for o in found] == [(10, 0, 30000)]
    (orphan,) = found
    assert orphan.start_ticks == 1010 and orphan.cmdline == ("VLLM::Worker_TP1",)
    assert orphan.started_at == NOW - 600 and orphan.ppid == 1 and orphan.user == "root"


def test_without_gpus_the_scope_is_the_gpus_the_run_holds_memory_on() -> None:
    apps = rows((5, "GPU-bbbb", 40000), (10, "GPU-aaaa", 30000), (11, "GPU-bbbb", 20000))
    procs = [proc(5, owner="me"), proc(10), proc(11)]
    assert [o.pid for o in orphans_of(apps, procs, run=(5,))] == [11]


def test_without_a_run_holding_memory_every_gpu_of_the_host_counts() -> None:
    apps = rows((10, "GPU-aaaa", 300), (11, "GPU-cccc", 2000), (12, "[N/A]", 7))
    found = orphans_of(apps, [proc(10), proc(11), proc(12)])
    assert [(o.pid, o.gpu) for o in found] == [(11, 2), (10, 0), (12, None)]  # largest first
    # with gpus: a row whose GPU is unknown may be anywhere: not this service's orphan
    assert [o.pid for o in orphans_of(apps, [proc(10), proc(11), proc(12)], gpus=(0, 2))] == [
        11,
        10,
    ]


def test_what_holds_no_memory_or_cannot_be_seen_or_is_the_run_is_no_orphan() -> None:
    apps = rows(
        (10, "GPU-aaaa", 0), (11, "GPU-aaaa", "[N/A]"), (12, "GPU-aaaa", 900), (13, "GPU-aaaa", 900)
    )
    # 12: a pid the agent cannot see (no entry); 13: the service's own run
    found = orphans_of(apps, [proc(10), proc(11), proc(13)], run=(13,))
    assert [(o.pid, o.memory_mib) for o in found] == [(11, None)]


def test_no_orphans_when_nvidia_smi_failed() -> None:
    query = read_gpus(0, GPUS)
    broken = read_apps(9, "", "couldn't communicate with the NVIDIA driver")
    assert find_orphans(query, broken, read_procs([proc(10)]), (), ()) == ()


def test_the_procs_are_read_defensively_and_made_printable() -> None:
    hostile = proc(10, cmdline=["python3", "\x1b]0;pwned\x07", 5], user="r\u202eoot", comm="x\x1b")
    read = read_procs(
        [hostile, {"pid": "11"}, "junk", proc(12, started_at=True), proc(10, owner="x")]
    )
    assert list(read) == [10]
    assert read[10].cmdline == ("python3", "\\x1b]0;pwned\\x07")
    assert read[10].user == "r\\u202eoot" and read[10].comm == "x\\x1b"
    assert read_procs(None) == {} and read_procs({"pid": 1}) == {}


def csv_with(procs: list[dict[str, object]], apps: str, **extra: object) -> dict[str, object]:
    return {
        "gpus_status": 0,
        "gpus": GPUS,
        "apps_status": 0,
        "apps": apps,
        "apps_at": NOW,
        "procs": procs,
        **extra,
    }


def dead_probe(leftovers: tuple[int, ...] = ()) -> ServiceProbe:
    log = {
        "path": "/var/log/v.log",
        "regular": True,
        "dev": 1,
        "inode": 2,
        "size": 10,
        "mtime": NOW,
    }
    data = {"name": "v", "log": log, "runs": [], "unreadable": [], "leftovers": list(leftovers)}
    top = {"boot_id": "b", "now": NOW, "utc_offset": OFFSET}
    return ServiceProbe.from_json("gpu1", "vllm", top, data)


def report_of(csv: Mapping[str, object]):
    facts = ServiceFacts("gpu1", "v", engine="vllm", intended=None)
    return facts.observe(assess(dead_probe()), ProbeDetails(gpu_csv=csv))


def test_status_json_lists_the_orphans_redacted_in_the_hosts_zone() -> None:
    worker = proc(
        10,
        cmdline=["vllm", "serve", "m", "--api-key", "sk-secret-value"],
        worker_of="v",
        user="ml",
        ppid=1,
    )
    report = report_of(csv_with([worker], rows((10, "GPU-bbbb", 30000))))
    (entry,) = report.to_json()["gpus"]["orphans"]
    assert entry["pid"] == 10 and entry["start_ticks"] == 1010
    assert entry["memory_mib"] == 30000 and entry["gpu"] == 1
    assert "sk-secret-value" not in " ".join(entry["cmdline"])
    assert entry["cmdline"][:4] == ["vllm", "serve", "m", "--api-key"]
    assert entry["started_at"] == "2025-06-15T16:56:40+02:00"
    assert (entry["ppid"], entry["user"], entry["worker_of"]) == (1, "ml", "v")
    assert report.gpus is not None and report.gpus.to_json()["orphans"] == [entry]


def test_the_orphans_hint_names_each_pid_its_memory_gpu_command_and_start() -> None:
    procs = [
        proc(10, worker_of="v"),
        proc(11, cmdline=["python3", "-c", "x" * 400], comm="python3"),
    ]
    report = report_of(csv_with(procs, rows((10, "GPU-aaaa", 30000), (11, "GPU-cccc", 512))))
    (hint,) = [h for h in report.hints if h.rule is HintRule.ORPHANS]
    assert report.hints[0] is hint  # blocking: first
    assert "2 processes (10, 11) hold 30,512 MiB on this service's GPUs" in hint.message
    assert (
        "K offers to kill them; babysit relaunch refuses while they hold the GPUs" in hint.message
    )
    first, second = hint.evidence
    assert first.startswith("pid 10 (user root) holds 30,000 MiB on GPU 0, started 16:56:40")
    assert "VLLM::Worker_TP1" in first and "it looks like a worker of v" in first
    assert "(10 min ago)" in first
    assert second.startswith("pid 11 (user root) holds 512 MiB on GPU 2")
    assert (
        second.endswith("…")
        and len(command_short(("python3", "-c", "x" * 400), COMMAND_SHOWN)) == COMMAND_SHOWN
    )


def test_no_orphans_no_hint_and_an_empty_list() -> None:
    report = report_of(csv_with([proc(10, owner="v2")], rows((10, "GPU-aaaa", 30000))))
    assert report.gpus is not None and report.gpus.orphans == ()
    assert report.to_json()["gpus"]["orphans"] == []
    assert not [h for h in report.hints if h.rule is HintRule.ORPHANS]
    assert hints(SeriesStore().snapshot("x", now=NOW, stale_after=30), gpus=None) == []


def test_owners_the_agent_could_not_find_are_said_in_the_note() -> None:
    report = report_of(
        csv_with([], rows((10, "GPU-aaaa", 30000)), owners_problem="the runs of b: boom")
    )
    assert report.gpus is not None and report.gpus.orphans == ()
    assert "the runs of b: boom" in report.gpus.note


def test_a_service_with_only_leftover_workers_is_dead_and_says_they_live_on() -> None:
    a = assess(dead_probe(leftovers=(4242, 4243)))
    assert a.verdict is Verdict.DEAD and a.run is None
    assert a.summary.startswith(
        "no vLLM server process on gpu1; its workers 4242, 4243 live on, holding the log open"
    )
    assert assess(dead_probe()).summary.startswith("no vLLM process on gpu1")


VLLM = spec("vllm").workers
TGI = spec("tgi").workers


@pytest.mark.parametrize(
    ("cmdline", "comm", "workers", "title"),
    [
        (["VLLM::Worker_TP1"], "VLLM::Worker_TP", VLLM, "VLLM::Worker"),  # setproctitle
        (["VLLM::EngineCore"], "VLLM::EngineCor", VLLM, "VLLM::EngineCore"),
        (["python3", "-m", "tui.sim.worker", "X"], "VLLM::EngineCor", VLLM, "VLLM::EngineCore"),
        (["python3", "-m", "tui.sim.worker", "X"], "VLLM::Worker_TP", VLLM, "VLLM::Worker"),
        (
            ["/opt/py/bin/python3.11", "/opt/py/bin/text-generation-server", "serve"],
            "x",
            TGI,
            TGI[0],
        ),
        (["python3", "-m", "tui.sim.worker", "X"], "text-generation", TGI, TGI[0]),  # prctl
        # the launcher shares the worker's 15-byte comm, and argv names the launcher
        (["text-generation-launcher", "--model-id", "m"], "text-generation", TGI, None),
        (["python3", "-m", "vllm.entrypoints.openai.api_server"], "python3", VLLM, None),
        (["vllm", "serve", "m"], "vllm", VLLM, None),
        ([], "VLLM::Worker_TP", VLLM, "VLLM::Worker"),
        (["VLLM::Worker_TP1"], "VLLM::Worker_TP", (), None),
    ],
)
def test_a_worker_is_told_by_its_title(
    cmdline: list[str], comm: str, workers: tuple[str, ...], title: str | None
) -> None:
    assert worker_title({"cmdline": cmdline, "comm": comm}, workers) == title


def test_the_hosts_gpus_are_read_once_per_answer_and_each_answer_for_itself() -> None:
    """The services of one answer share its GPU block, read once; another answer, even
    one alike but for a process, is read for itself."""
    from tui.core.host_gpus import HostGpus

    one = HostGpus(csv_with([proc(10)], rows((10, "GPU-aaaa", 30000))))
    other = csv_with([proc(10, owner="v2")], rows((10, "GPU-aaaa", 30000)))
    readings = one.readings
    first, again = report_of(one), report_of(one)
    assert first.gpus is not None and again.gpus is not None
    assert [o.pid for o in first.gpus.orphans] == [10] == [o.pid for o in again.gpus.orphans]
    assert one.readings is readings  # both services read the block once made
    owned = report_of(other)
    assert owned.gpus is not None and owned.gpus.orphans == ()
