"""What ``babysit export`` exposes, from reports made by the real facts (no process).

Each test builds answers the way a probe gives them (:func:`sglang_answer`: the real
:func:`assess` on a self-consistent probe), feeds them to the real
:class:`~tui.core.report.ServiceFacts` as a session does, and reads the exposition
prometheus_client renders of :func:`tui.export.series.families`: what a scrape gets.
"""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from test_app_fleet import CONFIG, NOW, sglang_answer

from tui.core.gpu import Attribution, Orphan, ServiceGpus
from tui.core.report import ProbeDetails, ServiceFacts
from tui.core.runs import unknown
from tui.core.verdicts import Verdict
from tui.export import names
from tui.export.exporter import Frozen
from tui.export.series import HostView, ServiceView, families

pytestmark = pytest.mark.unit

HOST = CONFIG.hosts["kpro5"]
DP0, DP1 = HOST.services["dp-0"], HOST.services["dp-1"]
SPEC = ["python3", "-m", "sglang.launch_server", "--speculative-algorithm", "EAGLE"]


def facts(service=DP0, intended=None) -> ServiceFacts:
    return ServiceFacts(
        HOST.name, service.name, engine="sglang", intended=intended, gpu_indexes=service.gpus
    )


def scrape(*hosts: HostView, now: float = NOW) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The exposition of ``hosts`` parsed back: name → [(labels, value)]."""
    text = generate_latest(Frozen(families(list(hosts), now))).decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(series, **labels: str) -> float | None:
    found = [v for have, v in series if all(have.get(k) == w for k, w in labels.items())]
    assert len(found) <= 1, found
    return found[0] if found else None


def host_view(*views: ServiceView, up: bool = True) -> HostView:
    return HostView(HOST.name, up, 0.25, views)


def test_a_live_run_is_named_with_its_pid_start_inode_and_run_id_and_only_live_reads_one():
    f = facts()
    report = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    got = scrape(host_view(ServiceView("dp-0", "sglang", report)))
    verdicts = {labels["verdict"]: v for labels, v in got[names.VERDICT]}
    assert verdicts == {v.value: (1.0 if v is Verdict.LIVE else 0.0) for v in Verdict}
    ((labels, one),) = got[names.RUN_INFO]
    run = report.assessment.run
    assert one == 1.0
    assert labels == {
        "host": "kpro5",
        "service": "dp-0",
        "engine": "sglang",
        "pid": "41000",
        "started": labels["started"],
        "log_inode": str(report.assessment.log.inode),
        "run_id": f"b0e1c2d3/41000/{run.root.start_ticks}",
    }
    assert labels["started"].endswith("+00:00")
    assert value(got[names.RUN_START], service="dp-0") == run.root.start_time
    assert value(got[names.READY], service="dp-0") == 1.0
    assert value(got[names.OBSERVED], service="dp-0") == report.assessment.checked_at
    assert value(got[names.HOST_UP], host="kpro5") == 1.0
    assert value(got[names.PROBE_DURATION], host="kpro5") == 0.25
    phases = {labels["phase"]: v for labels, v in got[names.STARTUP_PHASE]}
    assert phases["ready"] == 1.0
    assert sum(phases.values()) == 1.0
    assert "launching" in phases
    assert len(phases) > 2


def test_the_latest_metrics_carry_their_name_part_and_age_and_progress_its_age():
    f = facts()
    report = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    later = NOW + 30
    got = scrape(host_view(ServiceView("dp-0", "sglang", f.report(later))), now=later)
    gen = value(got[names.METRIC], name="gen_throughput", part="")
    latest = next(m for k, m in report.metrics.latest.items() if k.metric.value == "gen_throughput")
    assert gen == latest.value
    age = value(got[names.METRIC_AGE], name="gen_throughput", part="")
    assert age == pytest.approx(latest.age + 30)
    assert value(got[names.PROGRESS_AGE], service="dp-0") == pytest.approx(
        later - report.progress.at
    )


def test_a_host_that_cannot_be_asked_reads_unknown_with_its_last_answer_time_and_no_run():
    f = facts()
    live = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    # The host's next round trip fails: the probe gives an UNKNOWN with no log state.
    f.observe(unknown(HOST.name, DP0.name, "connection refused", NOW + 60), ProbeDetails())
    report = f.report(NOW + 60)
    assert report.verdict is Verdict.UNKNOWN
    got = scrape(host_view(ServiceView("dp-0", "sglang", report), up=False), now=NOW + 60)
    assert value(got[names.VERDICT], verdict="unknown") == 1.0
    assert value(got[names.VERDICT], verdict="live") == 0.0
    assert value(got[names.HOST_UP], host="kpro5") == 0.0
    assert value(got[names.OBSERVED], service="dp-0") == live.assessment.checked_at
    for gone in (names.RUN_INFO, names.RUN_START, names.READY, names.PROGRESS_AGE):
        assert gone not in got, gone


def test_before_any_answer_a_service_is_unknown_with_no_observed_time():
    got = scrape(host_view(ServiceView("dp-0", "sglang", facts().report(NOW)), up=False))
    assert value(got[names.VERDICT], verdict="unknown") == 1.0
    assert names.OBSERVED not in got


def test_a_dead_run_leaves_no_run_named():
    f = facts()
    report = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, running=False))
    assert report.verdict is Verdict.DEAD
    got = scrape(host_view(ServiceView("dp-0", "sglang", report)))
    assert value(got[names.VERDICT], verdict="dead") == 1.0
    assert names.RUN_INFO not in got
    assert value(got[names.OBSERVED], service="dp-0") == report.assessment.checked_at


def test_each_intended_flag_reads_one_when_missing_and_zero_when_there():
    f = facts(intended=SPEC)
    report = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    assert report.launch is not None
    assert "--speculative-algorithm" in report.launch.missing
    got = scrape(host_view(ServiceView("dp-0", "sglang", report)))
    flags = {labels["flag"]: v for labels, v in got[names.FLAG_MISSING]}
    assert flags["--speculative-algorithm"] == 1.0
    assert set(flags.values()) <= {0.0, 1.0}
    # A service without a launch: says nothing of flags.
    plain = facts(DP1).observe(*sglang_answer(HOST.name, DP1, pid=41001, seed=4))
    assert names.FLAG_MISSING not in scrape(host_view(ServiceView("dp-1", "sglang", plain)))


def test_an_orphan_seen_by_two_services_of_a_host_is_one_series_in_bytes():
    orphan = Orphan(
        pid=777,
        start_ticks=5,
        memory_mib=2048.0,
        gpu=0,
        cmdline=("sglang::scheduler_TP0",),
        started_at=NOW - 600,
        ppid=1,
    )
    unsized = dataclasses.replace(orphan, pid=778, memory_mib=None)
    gpus = ServiceGpus((), Attribution.NO_SERVICE_PIDS, (), None, "", orphans=(orphan, unsized))
    views = []
    for service, pid in ((DP0, 41000), (DP1, 41001)):
        report = facts(service).observe(*sglang_answer(HOST.name, service, pid=pid))
        views.append(ServiceView(service.name, "sglang", dataclasses.replace(report, gpus=gpus)))
    got = scrape(host_view(*views))
    assert got[names.ORPHAN_BYTES] == [({"host": "kpro5", "gpu": "0", "pid": "777"}, 2 << 30)]


def test_every_series_exposed_is_a_name_of_the_contract():
    f = facts(intended=SPEC)
    report = f.observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    got = scrape(host_view(ServiceView("dp-0", "sglang", report)))
    assert set(got) <= set(names.ALL)
    assert {names.VERDICT, names.RUN_INFO, names.FLAG_MISSING, names.METRIC} <= set(got)


def test_a_gpu_shared_by_two_services_is_read_once_per_host():
    views = []
    for service, pid in ((DP0, 41000), (DP1, 41001)):
        answer, details = sglang_answer(HOST.name, service, pid=pid, power=(300.0,))
        report = facts(service).observe(answer, details)
        views.append(ServiceView(service.name, "sglang", report))
    got = scrape(host_view(*views))
    assert not [labels for labels, _ in got[names.METRIC] if labels["name"].startswith("gpu_")]
    power = [(labels, v) for labels, v in got[names.GPU_METRIC] if labels["name"] == "gpu_power"]
    assert sorted(labels["gpu"] for labels, _ in power) == ["0", "1"]  # dp-0's GPU 0, dp-1's 1
    assert {v for _, v in power} == {300.0}
    assert len(got[names.GPU_METRIC_AGE]) == len(got[names.GPU_METRIC])


def test_intended_flags_missing_are_one_concern_of_a_live_run():
    from tui.core.verdict_words import badge

    plain = facts().observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    missing = facts(intended=SPEC).observe(*sglang_answer(HOST.name, DP0, pid=41000, seed=3))
    assert plain.verdict is missing.verdict is Verdict.LIVE
    assert missing.concerns == plain.concerns + 1
    assert badge(missing.verdict, missing.concerns).startswith("● LIVE ⚠ ")
