"""Each verdict's look: a glyph, a word and a theme colour of its own, said the same by
every view, and the screens' CSS drawing each verdict in the colour its look names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.core.verdict_words import BADGE_WIDTH, badge, badge_parts, degraded
from tui.core.verdicts import DEGRADED_TONE, LOOKS, TONES, Verdict

pytestmark = pytest.mark.unit

APP = Path(__file__).resolve().parents[1] / "tui" / "app"


def test_every_verdict_has_a_glyph_and_a_word_of_its_own() -> None:
    glyphs = [v.glyph for v in Verdict]
    words = [v.word for v in Verdict]
    assert len(set(glyphs)) == len(Verdict) == 8
    assert len(set(words)) == len(Verdict)
    assert all(len(g) == 1 for g in glyphs)  # one cell, in every font babysit is read in
    assert set(LOOKS) == set(Verdict)


def test_the_glyphs_are_the_ones_decided_for_each_verdict() -> None:
    assert {v.word: v.glyph for v in Verdict} == {
        "LIVE": "●",
        "STARTING": "◐",
        "WEDGED": "■",
        "STALE": "◌",
        "DEAD": "✖",
        "NO-LOG": "○",
        "AMBIGUOUS": "◆",
        "UNKNOWN": "?",
    }


def test_no_two_verdicts_look_alike_even_where_they_share_a_colour() -> None:
    looks = {(v.look.colour, v.look.filled) for v in Verdict}
    assert len(looks) == len(Verdict)


def test_a_badge_says_the_glyph_and_the_word_and_a_degraded_live_its_hints() -> None:
    assert badge(Verdict.LIVE) == "● LIVE"
    assert badge(Verdict.LIVE, hints=2) == "● LIVE ⚠ 2"
    assert badge(Verdict.DEAD) == "✖ DEAD"
    assert badge(Verdict.DEAD, hints=3) == "✖ DEAD"  # only a LIVE run reads as degraded
    assert badge_parts(Verdict.LIVE, 1) == ("● LIVE", "⚠ 1")
    assert degraded(Verdict.LIVE, 1) and not degraded(Verdict.LIVE, 0)
    assert not degraded(Verdict.STARTING, 4)
    widest = max((badge(v, 99) for v in Verdict), key=len)
    assert len(widest) <= BADGE_WIDTH


def _blocks(css: str, selector: str) -> str:
    """Every rule body in ``css`` whose selector line holds ``selector`` (with what nests in
    it, up to the closing brace at the same depth)."""
    found = []
    for match in re.finditer(re.escape(selector) + r"(?![\w-])[^{]*\{", css):
        depth, end = 1, match.end()
        while depth and end < len(css):
            depth += {"{": 1, "}": -1}.get(css[end], 0)
            end += 1
        found.append(css[match.end() : end])
    return "\n".join(found)


@pytest.mark.parametrize("verdict", list(Verdict), ids=lambda v: v.value)
def test_the_banner_and_the_fleet_draw_each_verdict_in_its_looks_colour(verdict: Verdict) -> None:
    colour = verdict.look.colour
    wanted = re.compile(rf"\$(?:text-)?{re.escape(colour)}\b")
    banner = _blocks((APP / "babysit.tcss").read_text(), f"&.-{verdict.tone}")
    cell = _blocks((APP / "fleet.tcss").read_text(), f".fleet-table--{verdict.tone}")
    detail = _blocks((APP / "fleet.tcss").read_text(), f"&.-{verdict.tone}")
    for where, block in (("banner", banner), ("fleet cell", cell), ("fleet detail", detail)):
        assert wanted.search(block), f"{where} of {verdict.word} is not drawn in ${colour}"


def test_the_fleet_styles_every_tone_it_draws() -> None:
    css = (APP / "fleet.tcss").read_text()
    for tone in (*TONES, DEGRADED_TONE):
        assert f".fleet-table--{tone} " in css


def test_a_live_row_with_hints_reads_as_degraded_in_the_fleet_and_in_status() -> None:
    import dataclasses

    from test_app_fleet import CONFIG, NOW, sglang_report

    from tui.app.fleet_rows import COLUMNS, fleet_row
    from tui.commands.status import render
    from tui.core.hint import Hint, HintRule
    from tui.session.state import HostState

    host = CONFIG.hosts["kpro5"]
    service = host.services["dp-2"]
    hint = Hint(HintRule.STALL, "no progress", ("the log",))
    report = dataclasses.replace(sglang_report(host.name, service, pid=41002), hints=(hint,) * 2)
    row = fleet_row(service, HostState().answered([report], NOW), NOW, interval=2.0)
    cell = dict(zip((c.key for c in COLUMNS), row.cells, strict=True))["verdict"]
    assert (cell.text, cell.mark, cell.tones) == ("● LIVE", "⚠ 2", ("live",))
    assert row.verdict == "LIVE"
    assert render([report]).splitlines()[0].startswith("kpro5/dp-2  ● LIVE ⚠ 2   pid 41002")
