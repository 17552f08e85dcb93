"""The launch diff in a narrow screen's words: flag names cut so they still read apart,
values kept whole over several lines, an alias said as the engine's, the one-line summary.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.app.widgets.launch_pane import pane_text
from tui.core.launch.diff import FlagStatus, launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.launch.words import cut_middle, flag_names, launch_summary, value_lines
from tui.demo.stories import SPEC_FLAGS

pytestmark = pytest.mark.unit

SGLANG = ("python3", "-m", "sglang.launch_server")
SPECULATIVE = list(SPEC_FLAGS)  # the demo's qwen-nomtp drops these four
MODEL = "/models/Qwen/Qwen3-30B-A3B-Instruct-2507-FP8-dynamic"


@pytest.mark.parametrize("width", [10, 12, 16, 20, 28])
def test_flags_that_share_a_prefix_stay_apart_at_any_width(width: int) -> None:
    flags = [f for f in SPECULATIVE if f.startswith("--")]
    names = flag_names(flags, width)
    assert len(set(names)) == len(flags), names
    assert all(len(n) <= width for n in names)
    assert all(n.startswith("--") for n in names)


def test_a_cut_keeps_more_of_the_end() -> None:
    assert cut_middle("--speculative-num-steps", 16) == "--spe…-num-steps"
    assert cut_middle("--port", 16) == "--port"


def test_names_a_cut_would_make_alike_keep_their_length() -> None:
    flags = ["--aaaa-xx-same-tail", "--aaaa-yy-same-tail"]
    assert flag_names(flags, 12) == flags


@given(st.text(min_size=0, max_size=300), st.integers(min_value=1, max_value=80))
def test_value_lines_keep_every_character(text: str, width: int) -> None:
    lines = value_lines(text, width)
    assert all(len(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_a_path_is_cut_after_a_slash_near_the_end() -> None:
    assert value_lines("/data/models/Qwen3-32B", 16) == ["/data/models/", "Qwen3-32B"]
    assert value_lines("a very long sentence", 12) == ["a very long", "sentence"]
    assert value_lines("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def nextn_as_eagle() -> object:
    intended = [*SGLANG, "--model-path", MODEL, *SPECULATIVE]
    reported = parse_reported(
        f"server_args=ServerArgs(model_path='{MODEL}', speculative_algorithm='EAGLE', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4)"
    )
    return launch_diff(intended, intended, reported, engine="sglang")


def test_an_alias_is_said_as_the_engines() -> None:
    diff = nextn_as_eagle()
    row = next(r for r in diff.rows if r.dest == "speculative_algorithm")
    assert row.status is FlagStatus.SAME
    assert row.note == "SGLang runs NEXTN as EAGLE"
    assert diff.notes == ("SGLang runs NEXTN as EAGLE",)
    assert row.to_json()["note"] == "SGLang runs NEXTN as EAGLE"
    drawn = pane_text(diff, None, 76).plain
    assert "EAGLE (SGLang runs NEXTN as EAGLE)" in drawn


@pytest.mark.parametrize("width", [36, 56, 76])
def test_the_pane_shows_values_whole_and_flags_apart(width: int) -> None:
    drawn = pane_text(nextn_as_eagle(), None, width).plain
    lines = drawn.splitlines()
    assert all(len(line) <= width for line in lines), lines
    assert MODEL in "".join(line.strip() for line in lines)
    assert "…" not in MODEL and MODEL.replace("/", "") in drawn.replace("/", "").replace(
        " ", ""
    ).replace("\n", "")
    flags = [line.split()[0] for line in lines[1:] if line.startswith("--")]
    assert len(set(flags)) == len(flags) == 5


def test_rows_past_the_room_are_counted() -> None:
    drawn = pane_text(nextn_as_eagle(), None, 76, lines=4).plain.splitlines()
    assert len(drawn) == 4
    assert drawn[-1].startswith("… ") and "as intended ✓" in drawn[-1]


def test_the_summary_counts_worst_first() -> None:
    intended = [*SGLANG, "--model-path", "Q", "--port", "1", *SPECULATIVE]
    running = [*SGLANG, "--model-path", "Q", "--port", "2"]
    words, problem = launch_summary(launch_diff(intended, running, None, engine="sglang"))
    assert words == "launch: 4 flags missing ✗, 1 flag changed ≠, 1 as intended ✓"
    assert problem
    words, problem = launch_summary(nextn_as_eagle())
    assert words == "launch: all 5 flags as intended ✓" and not problem
    assert launch_summary(None, "no run to compare with") == (
        "launch: no run to compare with",
        False,
    )
