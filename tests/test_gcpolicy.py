"""The long-running processes collect garbage rarely, leaving startup's objects out."""

from __future__ import annotations

import gc

import pytest

from tui.gcpolicy import YOUNG, for_long_run

pytestmark = pytest.mark.unit


def test_a_long_run_collects_the_young_generation_rarely_and_leaves_startup_out() -> None:
    threshold = gc.get_threshold()
    try:
        for_long_run()
        assert gc.get_threshold() == (YOUNG, threshold[1], threshold[2])
        assert gc.get_freeze_count() > 0  # this test's own imports, at least
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
