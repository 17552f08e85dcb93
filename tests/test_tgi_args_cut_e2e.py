"""TGI's ``Args {`` dump of a long list end to end: a real TGI sim started with many
``--cuda-graphs`` and ``babysit status --json`` over it.

The pretty dump prints one line per list element. A dump under the agent's bounds
(64 KiB, 4096 lines) is read whole; a longer one is cut by the agent and reads as
incomplete, its cut field not reported (so never "changed" from cut text).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import Sim
from test_engines_e2e import READY, TGI, config_file, launch_of, service_fields, start, status_json

from tui.agent.readiness import ARGS_DUMP_BYTES, ARGS_DUMP_LINES

pytestmark = pytest.mark.integration

#: Graph sizes whose dump fits the agent's bounds (over 250 lines).
FITTING = 250
#: Dumps past the agent's bounds, with no value on the command line over the 16 KiB a
#: hosts.yaml text may hold: past its bytes (a 15 KiB revision line, then 3000 graphs of
#: 18 bytes a line) and past its lines (8000 graphs of one digit, 15 bytes a line).
PAST_BYTES = ("--revision", "r" * 15_000, "--cuda-graphs", ",".join(map(str, range(1000, 4000))))
PAST_LINES = ("--cuda-graphs", ",".join(["1"] * 8000))


@pytest.fixture
def sims() -> Iterator[list[Sim]]:
    started: list[Sim] = []
    try:
        yield started
    finally:
        for sim in started:
            sim.stop()


def dump_size(log: bytes) -> tuple[int, int]:
    """(bytes, lines) of the ``Args {`` dump in ``log``, through its closing line."""
    start = log.index(b"Args {")
    start = log.rfind(b"\n", 0, start) + 1
    end = log.index(b"\n}", start) + 2
    return end - start, log.count(b"\n", start, end) + 1


def launch_entry(
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
    sims: list[Sim],
    extra: tuple[str, ...],
    dumps: list[tuple[int, int]],
) -> dict[str, object]:
    """``launch`` of the service's ``status --json`` entry: a TGI sim run with ``extra``
    flags, hosts.yaml asking for the same; the size of its dump goes to ``dumps``."""
    flags = (*TGI, *extra)
    sim = start(tmp, "tgi", *flags)
    sims.append(sim)
    fields = service_fields("tgi", sim, prometheus=True)
    fields["launch"] = launch_of("tgi", sim.port, flags)
    sim.wait_for(re.escape(READY["tgi"]))
    dumps.append(dump_size(sim.raw()))
    return status_json(config_file(tmp, "local", None, fields), capsys)["launch"]


def test_a_dump_within_the_agents_bounds_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim]
) -> None:
    graphs = ("--cuda-graphs", ",".join(str(n) for n in range(1, FITTING + 1)))
    dumps: list[tuple[int, int]] = []
    launch = launch_entry(tmp_path, capsys, sims, graphs, dumps)
    ((size, lines),) = dumps
    assert FITTING < lines < ARGS_DUMP_LINES and size < ARGS_DUMP_BYTES
    reported = launch["reported"]
    assert reported["complete"] is True
    assert reported["values"]["cuda_graphs"] == list(range(1, FITTING + 1))
    assert reported["values"]["usage_stats"] == "on"  # the dump's last field
    assert launch["missing"] == []
    # no row compares against a cut text
    assert all("Some(" not in row["running"] for row in launch["changed"]), launch["changed"]


@pytest.mark.parametrize("extra", [PAST_BYTES, PAST_LINES], ids=["bytes", "lines"])
def test_a_dump_cut_by_the_agent_reads_as_incomplete_and_its_cut_field_is_not_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sims: list[Sim], extra: tuple[str, ...]
) -> None:
    dumps: list[tuple[int, int]] = []
    launch = launch_entry(tmp_path, capsys, sims, extra, dumps)
    ((size, lines),) = dumps
    if extra is PAST_BYTES:
        assert size > ARGS_DUMP_BYTES and lines < ARGS_DUMP_LINES
    else:
        assert lines > ARGS_DUMP_LINES and size > ARGS_DUMP_BYTES
    reported = launch["reported"]
    assert reported["complete"] is False
    values = reported["values"]
    assert values["model_id"] == "Qwen/Qwen3-8B" and values["max_concurrent_requests"] == 64
    assert "cuda_graphs" not in values and "usage_stats" not in values
    assert launch["changed"] == [] and launch["missing"] == []
    rows = {row["dest"]: row for row in launch["rows"]}
    assert rows["cuda_graphs"]["status"] == "same"  # argv has it; the cut report says nothing
    assert rows["max_concurrent_requests"]["status"] == "same"
