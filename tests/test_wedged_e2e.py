"""WEDGED end to end: real sims that stop serving while their process lives, watched by
real sessions (a host watch refreshing every :data:`INTERVAL` s), locally, over ssh and
through pct.

No test asserts a wall-clock time: each counts the watch's answers. The clock WEDGED
counts from is the sim's last progress line (read from its own log): the first answer
checked at or past that line's time plus ``wedged_after`` must be WEDGED within
:data:`REFRESHES` more answers, and no answer after the first WEDGED is LIVE. Idle is
never wedged, nor is a busy server; a fatal line while the process lives is WEDGED at
once with the line as evidence, while ``/health`` answers 200.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sim_helpers import Sim
from support.serving import Answers, Running, hangs, health, last_progress, serving_sim
from support.sshd import Sshd
from support.wait import until, wait_until
from test_engines_e2e import config_file, status_json

from tui.core.serving import WedgeCause
from tui.core.verdicts import Verdict
from tui.core.wedge import CLIENT_QUIET
from tui.hostsfile import load_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

#: Seconds between two refreshes of the watch.
INTERVAL = 1.0
#: Answers past the deadline within which WEDGED must show.
REFRESHES = 2
#: Answers after the first WEDGED that must none of them be LIVE.
AFTER = 4
#: Seconds of serving before the sim stops (``--wedge-after``).
WEDGE_AFTER = 3.0
#: ``wedged_after`` for the tests (hosts.yaml). SGLang's last decode line keeps its counts
#: when its work ends, so they are believed only once a client connection has been quiet
#: for CLIENT_QUIET seconds: its ``wedged_after`` cannot be shorter than that.
WEDGED_AFTER = {"vllm": 5.0, "sglang": CLIENT_QUIET}
#: Words of the engines' fatal lines (torch's NCCL watchdog, vLLM's dead engine core).
FATAL_WORDS = ("Watchdog", "NCCL", "EngineDead", "EngineCore", "died unexpectedly")
#: The first line each scenario's strike prints (torch's NCCL watchdog; vLLM's engine core
#: dying, as each release says it).
STRIKES = {
    "nccl-timeout": re.escape("Watchdog caught collective operation timeout"),
    "engine-dead": "EngineDeadError|died unexpectedly|EngineCore encountered an issue",
}
#: Where the evidence in ``status --json`` cuts a long line's middle.
CUT = "..."
#: ``wedged_after`` of the healthy sims (the shorter, the stricter).
IDLE_WEDGED_AFTER = 3.0


def hosts_yaml(
    tmp: Path, kind: str, sshd: Sshd | None, sim: Sim, *, engine: str, after: float
) -> Path:
    fields = {"engine": engine, "log": str(sim.log_path), "port": sim.port, "wedged_after": after}
    return config_file(tmp, kind, sshd, fields)


class Watched:
    """A real session of service ``svc`` in hosts.yaml ``config``, its host watched
    every :data:`INTERVAL` s, and its answers recorded."""

    def __init__(self, config: Path) -> None:
        host = load_config(str(config)).hosts["gpu"]
        self.sessions = Sessions(interval=INTERVAL)
        watch = self.sessions.watch(host)  # with a session of each of the host's services
        self.answers = Answers(watch, "svc")
        watch.want(self.answers, ["svc"])
        watch.start()

    async def close(self) -> None:
        self.answers.close()
        await self.sessions.close()


def past(sim: Sim, engine: str, answers: Answers, after: float) -> list:
    """The answers checked at or past the last progress line's time plus ``after``."""
    last = last_progress(engine, sim.text())
    return answers.since(last + after) if last is not None else []


async def wedged_then_never_live(sim: Sim, engine: str, config: Path, after: float) -> None:
    """The watch's answers: WEDGED within REFRESHES answers of the deadline (the last
    progress line's time + ``after``), and not LIVE in the AFTER answers that follow."""
    watched = Watched(config)
    try:
        answers = watched.answers
        await until(
            lambda: len(past(sim, engine, answers, after)) > REFRESHES + AFTER,
            lambda: f"{REFRESHES + AFTER + 1} answers past the deadline ({answers.verdicts()})",
            timeout=60 + after,
        )
    finally:
        await watched.close()
    due = past(sim, engine, answers, after)
    verdicts = [a.verdict for a in due]
    last = last_progress(engine, sim.text())
    told = [
        (round(a.at - last, 1), a.verdict.word, a.report.assessment.summary if a.report else "")
        for a in due
    ]
    assert Verdict.WEDGED in verdicts[: REFRESHES + 1], told
    first = verdicts.index(Verdict.WEDGED)
    assert Verdict.LIVE not in verdicts[first:], verdicts
    # before the deadline it was LIVE (it served), and the WEDGED said why
    assert Verdict.LIVE in [a.verdict for a in answers.got[: len(answers.got) - len(due)]]
    wedged = due[first].report.assessment.wedged
    assert wedged is not None and wedged.cause == WedgeCause.STALL, wedged
    assert any("requests" in e or "client" in e for e in wedged.evidence), wedged.evidence
    assert any("the last progress was at" in e for e in wedged.evidence), wedged.evidence


# ---------------------------------------------------------------- a wedged server under load


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
async def test_a_wedged_server_under_load_turns_wedged_and_never_live_after(
    tmp_path: Path, running: Running, engine: str
) -> None:
    sim = running.sim(serving_sim(tmp_path, engine, scenario="wedged", wedge_after=WEDGE_AFTER))
    sim.wait_ready()
    running.load(sim.port)
    after = WEDGED_AFTER[engine]
    config = hosts_yaml(tmp_path, "local", None, sim, engine=engine, after=after)
    await wedged_then_never_live(sim, engine, config, after)
    assert health(sim.port) == 200  # the API still answers


@pytest.mark.sshd
@pytest.mark.parametrize("kind", ["ssh", "pct"])
async def test_a_wedged_server_is_wedged_over_ssh_and_through_pct(
    tmp_path: Path, running: Running, sshd: Sshd, kind: str
) -> None:
    sim = running.sim(serving_sim(tmp_path, "vllm", scenario="wedged", wedge_after=WEDGE_AFTER))
    sim.wait_ready()
    running.load(sim.port)
    after = WEDGED_AFTER["vllm"]
    config = hosts_yaml(tmp_path, kind, sshd, sim, engine="vllm", after=after)
    await wedged_then_never_live(sim, "vllm", config, after)


# ---------------------------------------------------------------- idle and busy are not wedged


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
async def test_a_busy_server_is_live_and_stays_live_when_its_load_ends(
    tmp_path: Path, running: Running, engine: str
) -> None:
    """Steady load for twice ``wedged_after``: never WEDGED. The load ends (SGLang's last
    decode line keeps ``#running-req`` >= 1, the trap): LIVE for three times it."""
    after = IDLE_WEDGED_AFTER
    sim = running.sim(serving_sim(tmp_path, engine))
    sim.wait_ready()
    load = running.load(sim.port)
    watched = Watched(hosts_yaml(tmp_path, "local", None, sim, engine=engine, after=after))
    try:
        answers = watched.answers
        await until(
            lambda: (first := answers.since(0)) and answers.since(first[0].at + 2 * after),
            "answers over twice wedged_after under load",
            timeout=60,
        )
        busy = len(answers.got)
        load.stop()
        served = load.answered
        assert served > 0
        ended = wait_until(lambda: last_progress(engine, sim.text()), 10, "a progress line")
        await until(
            lambda: answers.since(ended + 3 * after),
            "answers past three times wedged_after of idle",
            timeout=60 + 3 * after,
        )
    finally:
        await watched.close()
    verdicts = answers.verdicts()
    assert set(verdicts) == {Verdict.LIVE.word}, verdicts
    assert busy >= 2 * after / INTERVAL - 1 and len(verdicts) > busy
    if engine == "sglang":
        # the trap was there: the last decode line still says a request runs
        decode = [line for line in sim.lines() if "Decode batch" in line]
        assert decode and "#running-req: 0," not in decode[-1], decode[-1]


# ---------------------------------------------------------------- a fatal line, the API up


@pytest.mark.parametrize(
    ("engine", "scenario"),
    [("sglang", "nccl-timeout"), ("vllm", "nccl-timeout"), ("vllm", "engine-dead")],
)
def test_a_fatal_line_while_the_process_lives_is_wedged_with_the_line_as_evidence(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    running: Running,
    engine: str,
    scenario: str,
) -> None:
    sim = running.sim(serving_sim(tmp_path, engine, scenario=scenario, wedge_after=1))
    sim.wait_ready()
    sim.wait_for(STRIKES[scenario], timeout=20)
    config = hosts_yaml(tmp_path, "local", None, sim, engine=engine, after=120.0)
    entry = status_json(config, capsys, live=False)
    assert entry["verdict"] == Verdict.WEDGED.value, entry["summary"]
    assert health(sim.port) == 200  # the API answers while the engine is gone
    wedged = entry["wedged"]
    assert wedged["cause"] == WedgeCause.FATAL and wedged["since"], wedged
    (said,) = [e for e in wedged["evidence"] if "printed a fatal line" in e]
    assert any(word in said for word in FATAL_WORDS), said
    # the line as the log has it (its start, and its end when it is cut)
    line = said.split("): ", 1)[1]
    head = line.split(CUT, 1)[0].removesuffix("…")
    fatal = [text for text in sim.lines() if text.startswith(head)]
    assert fatal and any(word in fatal[0] for word in FATAL_WORDS), (said, fatal)
    assert any(f"pid {sim.pid}" in e and "alive" in e for e in wedged["evidence"]), wedged
    assert sim.proc.poll() is None
    if scenario == "nccl-timeout":
        assert hangs(sim.port)  # requests are accepted and hang
