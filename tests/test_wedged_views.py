"""WEDGED and the canary in every view's words: the banner, the fleet's row, `babysit status`.

Each view is given a real assessment of a made-up but self-consistent probe, turned
WEDGED as the serving watch turns it (the verdict, a summary that begins with what
made it WEDGED, and a :class:`Wedged` with since, cause and evidence), and a canary
result with the fields the agent's answer fills.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.reports import build_report
from test_app_fleet import CONFIG, sglang_answer
from test_app_fleet import NOW as FLEET_NOW
from test_app_snapshots import INODE, NOW, probed

from tui.app.fleet_rows import COLUMNS, fleet_row, sort_key
from tui.app.widgets.run_banner import EVIDENCE_LINES, banner_lines
from tui.commands.status import render
from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.hostclock import HostWords
from tui.core.report import ProbeDetails, ServiceReport
from tui.core.runs import Assessment
from tui.core.service_report import status_json
from tui.core.serving import WedgeCause, Wedged
from tui.core.serving_words import CAUSE_SHORT, canary_gist, cause_short, since_words
from tui.core.verdicts import Verdict
from tui.session.state import HostState

pytestmark = pytest.mark.unit

#: 09:21:21 UTC, 190 s before the frozen clock (09:24:31).
SINCE = NOW - 190
EVIDENCE = (
    "2 requests running (the log's latest metric line, byte 1289612, 09:21:21)",
    "no progress since 09:21:21 (3 min ago): the last progress line, byte 1289612",
)
#: A WEDGED summary as the facts write one: why and since when, then the LIVE summary.
SUMMARY = (
    "alive but not serving since 09:21:21 (3 min ago): work is pending and nothing progressed "
    "for 3 min; pid 67115 (started 09:20:06, 4 min ago) writes this log (inode 9012)"
)


def wedged(
    cause: str = WedgeCause.STALL,
    evidence: tuple[str, ...] = EVIDENCE,
    *,
    utc_offset: int = 0,
    since: float = SINCE,
) -> Assessment:
    live = probed(writes=INODE, ready=True)
    return dataclasses.replace(
        live,
        verdict=Verdict.WEDGED,
        summary=SUMMARY,
        utc_offset=utc_offset,
        wedged=Wedged(since, cause, evidence),
    )


def canary(outcome: CanaryOutcome = CanaryOutcome.OK, **fields: object) -> CanaryResult:
    values: dict[str, object] = {
        "sent_at": NOW - 130,
        "ttft_s": 0.213,
        "tokens_per_s": 61.84,
        "tokens": 64,
        "elapsed_s": 1.24,
        "finish_reason": "length",
        "repetition": 0.0,
    }
    values.update(fields)
    return CanaryResult("kpro5", "qwen", outcome, **values)  # type: ignore[arg-type]


def report_of(assessment: Assessment, result: CanaryResult | None = None) -> ServiceReport:
    report = build_report(assessment, ProbeDetails(), engine="sglang", intended=None)
    return dataclasses.replace(report, canary=result)


# --------------------------------------------------------------------------- words


def test_every_cause_has_its_short_words_and_an_unknown_one_is_named_as_it_is() -> None:
    assert set(CAUSE_SHORT) == {WedgeCause.STALL, WedgeCause.FATAL, WedgeCause.CANARY}
    assert cause_short(Wedged(SINCE, "a\x1b[2Jb", ("x",))) == "a\\x1b[2Jb"


def test_since_is_said_in_the_hosts_clock_with_how_long_ago() -> None:
    words = HostWords(3600, NOW)  # the host runs an hour ahead of UTC
    assert since_words(Wedged(SINCE, WedgeCause.STALL, EVIDENCE), words) == (
        "since 10:21:21 (3 min ago)"
    )


@pytest.mark.parametrize(
    ("result", "gist"),
    [
        (canary(), "canary 09:22:21 (2 min ago): ok, TTFT 0.21 s, 61.8 tok/s"),
        (
            canary(CanaryOutcome.REPETITION, repetition=0.82),
            "canary 09:22:21 (2 min ago): output repeats (repetition 0.82), TTFT 0.21 s, "
            "61.8 tok/s",
        ),
        (
            canary(CanaryOutcome.TIMEOUT, ttft_s=None, tokens_per_s=None, elapsed_s=30.0),
            "canary 09:22:21 (2 min ago): timed out after 30 s",
        ),
        (
            canary(CanaryOutcome.ERROR, http_status=500, error="EngineCore is dead"),
            "canary 09:22:21 (2 min ago): error answer (HTTP 500): EngineCore is dead",
        ),
        (
            canary(CanaryOutcome.NO_RUN, sent_at=None),
            "canary: no live run to ask",
        ),
        (
            canary(CanaryOutcome.UNREACHABLE, error="ssh: connection refused"),
            "canary 09:22:21 (2 min ago): the host could not be asked: ssh: connection refused",
        ),
    ],
    ids=["ok", "repetition", "timeout", "error", "no-run", "unreachable"],
)
def test_a_canary_in_one_line_with_its_age(result: CanaryResult, gist: str) -> None:
    assert canary_gist(result, HostWords(0, NOW)) == gist


def test_a_canary_error_is_made_printable_and_cut() -> None:
    result = canary(CanaryOutcome.ERROR, error="\x1b]0;pwned\x07" + "x" * 300)
    gist = canary_gist(result, HostWords(0, NOW))
    assert "\x1b" not in gist and "\\x1b]0;pwned\\x07" in gist
    assert gist.endswith("…") and len(gist) < 160


# --------------------------------------------------------------------------- the banner


def test_the_banner_says_wedged_since_when_and_why_first_then_the_evidence() -> None:
    lines = banner_lines(wedged(), NOW)
    assert lines[0].startswith("■ WEDGED  since 09:21:21 (3 min ago) · pid 67115 +1 · started")
    assert lines[1] == SUMMARY
    assert lines[2:] == [f"· {item}" for item in EVIDENCE]


def test_the_since_ages_as_the_banner_ages() -> None:
    assert "since 09:21:21 (4 min ago)" in banner_lines(wedged(), NOW + 60)[0]


def test_evidence_is_cut_to_the_width_and_the_since_never_is() -> None:
    lines = banner_lines(wedged(), NOW, width=40)
    assert "since 09:21:21 (3 min ago)" in lines[0]
    assert all(len(line) <= 40 for line in lines[2:])
    assert lines[2].endswith("…") and lines[2].startswith("· 2 requests running")


def test_more_evidence_than_fits_says_where_the_rest_is() -> None:
    many = tuple(f"fact {n}" for n in range(6))
    evidence = banner_lines(wedged(evidence=many), NOW)[2:]
    assert len(evidence) == EVIDENCE_LINES
    assert evidence[:-1] == ["· fact 0", "· fact 1"]
    assert evidence[-1] == "· and 4 more: babysit status kpro5/qwen"


def test_hostile_evidence_is_shown_escaped() -> None:
    lines = banner_lines(wedged(evidence=("line\x1b[2J\u202eend",)), NOW)
    assert lines[2] == "· line\\x1b[2J\\u202eend"


def test_other_verdicts_keep_their_banner() -> None:
    live = probed(writes=INODE, ready=True)
    assert banner_lines(live, NOW)[0].startswith("● LIVE  pid 67115 +1")
    assert "since" not in banner_lines(live, NOW)[0]


# --------------------------------------------------------------------------- the fleet's row


def fleet_wedged(name: str = "dp-6") -> tuple[ServiceReport, object]:
    host = CONFIG.hosts["kpro5"]
    service = host.services[name]
    assessment, details = sglang_answer(host.name, service, pid=41006, last_line=FLEET_NOW - 180)
    assessment = dataclasses.replace(
        assessment,
        verdict=Verdict.WEDGED,
        summary=SUMMARY,
        wedged=Wedged(FLEET_NOW - 180, WedgeCause.STALL, EVIDENCE),
    )
    report = build_report(assessment, details, engine="sglang", intended=None)
    return report, service


def test_a_wedged_row_says_since_when_and_its_cause_in_short_words() -> None:
    report, service = fleet_wedged()
    result = canary(CanaryOutcome.TIMEOUT, sent_at=FLEET_NOW - 40, elapsed_s=30.0)
    state = HostState().answered([dataclasses.replace(report, canary=result)], FLEET_NOW)
    row = fleet_row(service, state, FLEET_NOW + 5, interval=2.0)  # type: ignore[arg-type]
    cells = dict(zip((c.key for c in COLUMNS), row.cells, strict=True))
    assert cells["verdict"].text == "■ WEDGED"
    assert cells["verdict"].tones == ("wedged",)
    assert cells["note"].text == "stalled since 09:21:31 (3m)"
    assert cells["note"].tones == ("bad",)
    assert row.severity == Verdict.WEDGED.severity
    assert f"WEDGED — {SUMMARY}" in row.detail
    for item in EVIDENCE:
        assert f"evidence: {item}" in row.detail
    assert "canary 09:23:51 (45 s ago): timed out after 30 s" in row.detail


def test_wedged_sorts_by_its_severity_among_the_others() -> None:
    report, _ = fleet_wedged()
    host = CONFIG.hosts["kpro5"]
    live = build_report(
        *sglang_answer(host.name, host.services["dp-0"], pid=41000),
        engine="sglang",
        intended=None,
    )
    stale = build_report(
        *sglang_answer(host.name, host.services["dp-3"], pid=41003, writes=False),
        engine="sglang",
        intended=None,
    )
    state = HostState().answered([live, stale, report], FLEET_NOW)
    rows = [
        fleet_row(host.services[name], state, FLEET_NOW, interval=2.0)
        for name in ("dp-0", "dp-3", "dp-6")
    ]
    assert [r.verdict for r in sorted(rows, key=sort_key)] == ["STALE", "WEDGED", "LIVE"]
    assert Verdict.STALE.severity > Verdict.WEDGED.severity > Verdict.DEAD.severity


# --------------------------------------------------------------------------- babysit status


def test_status_text_says_the_wedged_line_its_evidence_and_the_canary() -> None:
    text = render([report_of(wedged(), canary(CanaryOutcome.TIMEOUT, elapsed_s=30.0))])
    lines = text.splitlines()
    assert lines[0] == f"kpro5/qwen  ■ WEDGED     {SUMMARY}"
    assert lines[1:3] == [f"            evidence: {item}" for item in EVIDENCE]
    assert lines[3] == "            canary 09:22:21 (2 min ago): timed out after 30 s"


def test_status_text_of_a_live_run_shows_its_canary_and_no_wedged_line() -> None:
    live = probed(writes=INODE, ready=True)
    lines = render([report_of(live, canary())]).splitlines()
    assert lines[0].startswith("kpro5/qwen  ● LIVE ")
    assert lines[1:] == ["            canary 09:22:21 (2 min ago): ok, TTFT 0.21 s, 61.8 tok/s"]


def test_status_json_carries_the_wedged_object() -> None:
    document = json.loads(json.dumps(status_json([report_of(wedged(utc_offset=3600))])))
    service = document["services"][0]
    assert service["verdict"] == "wedged"
    assert service["wedged"] == {
        "since": "2026-01-12T10:21:21+01:00",
        "cause": "stall",
        "evidence": list(EVIDENCE),
    }
    live = status_json([report_of(probed(writes=INODE, ready=True))])["services"][0]
    assert live["wedged"] is None  # type: ignore[index]
