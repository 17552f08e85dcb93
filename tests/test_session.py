"""A service session after a failed round trip: UNKNOWN with the reason, nothing of the
last answer shown as if it still held."""

from __future__ import annotations

import pytest
from support.sessions import StandIns
from test_app_snapshots import GPU_CSV, HOSTS, INODE, NOW, REPORTED, probed

from tui.core.report import ProbeDetails
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config

pytestmark = pytest.mark.unit


async def test_a_failed_round_trip_keeps_the_series_and_drops_what_only_the_answer_said() -> None:
    answers: list[object] = [
        (probed(writes=INODE, ready=True), ProbeDetails(args_line=REPORTED, gpu_csv=GPU_CSV)),
        RuntimeError("the probe broke"),
    ]

    def answer(host: object, services: object) -> list[object]:
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return [got]

    host = parse_config(HOSTS).hosts["kpro5"]
    sessions = StandIns(answers=answer, clock=lambda: NOW)  # type: ignore[arg-type]
    session = sessions.session(host, host.services["qwen"])
    watch = sessions.watch(host)
    try:
        await watch.refresh([host.services["qwen"]])
        await watch.refresh([host.services["qwen"]])
        first = watch.state.reports.get("qwen")
        assert first is not None and first.verdict is Verdict.LIVE
        assert first.launch is not None and first.gpus is not None
        report = session.report(NOW)
        assert report.verdict is Verdict.UNKNOWN
        assert "the probe crashed: RuntimeError: the probe broke" in report.assessment.summary
        assert report.launch is None and report.gpus is None and report.hints == ()
        assert report.metrics is not None  # the series stay, each with its age
    finally:
        await sessions.close()
