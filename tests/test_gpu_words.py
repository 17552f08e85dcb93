"""A GPU's figures in text output read as the screen's metrics pane says them."""

from __future__ import annotations

import pytest

from tui.core.gpu import GpuReading

pytestmark = pytest.mark.unit


def test_a_reading_says_power_utilisation_and_memory_as_the_screen_does() -> None:
    gpu = GpuReading(3, "NVIDIA H100", 307.4, 700.0, 0.99, 72332.0, 81559.0, 52.0)
    assert gpu.words == "gpu3 307 W / 700 W · util 99% · 72,332 / 81,559 MiB"


def test_what_nvidia_smi_did_not_give_is_a_dash() -> None:
    gpu = GpuReading(0, "NVIDIA H100", None, 700.0, None, None, 81559.0, None)
    assert gpu.words == "gpu0 — / 700 W · util — · — / 81,559 MiB"
