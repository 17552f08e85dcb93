"""The canary end to end: ``babysit canary HOST/SERVICE --json`` to real sims, through the
host's agent, with the sampling of a ``generation_config.json`` the test writes into the
sim's model folder (or hosts.yaml's ``canary.sampling`` without one).

A healthy server completes it (exit 0, tokens/s, low repetition); a server caught in a
loop while speculative decoding accepts every draft repeats (exit 1) and the report's
``sampling-loop`` hint sets the canary's sampling beside the model's recommended one; a
wedged server never answers (exit 2) and is WEDGED; a host that cannot be asked exits 3.
``--json`` is always one document.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_helpers import Sim
from support.ports import free_port
from support.serving import SGLANG_SPEC, Running, hangs, model_folder, serving_sim
from support.wait import wait_until
from test_engines_e2e import config_file

from tui.agent.protocol import SAMPLING_CONFIG, SAMPLING_MODEL
from tui.cli import main
from tui.core.canary import CanaryOutcome
from tui.core.serving import WedgeCause
from tui.core.verdicts import Verdict
from tui.hostsfile import load_config
from tui.session.canary import run_canary
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

#: What the model's generation_config.json recommends (Qwen3's own figures).
RECOMMENDED = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
#: hosts.yaml's ``canary.sampling``, for a model folder without generation_config.json.
CONFIGURED = {"temperature": 0.3, "top_p": 0.8}
#: Seconds a canary waits for its answer (small: the wedged one must time out).
CANARY_TIMEOUT = 3
#: At most this share of a healthy answer is in repeated phrases.
LOW_REPETITION = 0.3
#: What SGLang's decode lines say their accept figures with.
ACCEPT_FIGURES = "accept len: "
#: SGLang decode lines with an accept rate before the repeat trap is asked about.
ACCEPT_LINES = 5


def canary_yaml(tmp: Path, sim: Sim, engine: str, *, sampling: bool = False) -> Path:
    canary: dict[str, object] = {"timeout": CANARY_TIMEOUT, "max_tokens": 48}
    if sampling:
        canary["sampling"] = CONFIGURED
    fields = {"engine": engine, "log": str(sim.log_path), "port": sim.port, "canary": canary}
    return config_file(tmp, "local", None, fields)


def canary_json(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    """``babysit canary gpu/svc --json``: its exit status and its one document."""
    capsys.readouterr()
    code = main(["canary", "gpu/svc", "--json", "--config", str(config)])
    out = capsys.readouterr().out
    return code, json.loads(out)  # the whole of stdout is one document


def assert_tied_to(document: dict, sim: Sim) -> None:
    assert document["run"]["pid"] == sim.pid and document["run"]["started_at"], document["run"]


# ---------------------------------------------------------------- a healthy server


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_healthy_server_answers_the_canary_with_the_models_sampling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], running: Running, engine: str
) -> None:
    folder = model_folder(tmp_path, RECOMMENDED)
    sim = running.sim(serving_sim(tmp_path, engine, model=folder))
    sim.wait_ready()
    code, document = canary_json(canary_yaml(tmp_path, sim, engine), capsys)
    assert code == 0, document
    assert document["ok"] is True and document["outcome"] == CanaryOutcome.OK.value
    assert document["tokens_per_s"] > 0 and document["ttft_s"] is not None
    assert document["finish_reason"] and document["output"]
    assert document["repetition"] is not None and document["repetition"] <= LOW_REPETITION
    assert document["sampling_source"] == SAMPLING_MODEL
    assert document["sampling"] == RECOMMENDED
    assert document["schema"] >= 1
    assert_tied_to(document, sim)


def test_without_generation_config_the_canary_uses_and_says_canary_sampling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], running: Running
) -> None:
    sim = running.sim(serving_sim(tmp_path, "vllm", model=model_folder(tmp_path)))
    sim.wait_ready()
    code, document = canary_json(canary_yaml(tmp_path, sim, "vllm", sampling=True), capsys)
    assert code == 0, document
    assert document["sampling_source"] == SAMPLING_CONFIG
    assert document["sampling"] == CONFIGURED
    assert document["recommended"] is None


# ---------------------------------------------------------------- the repetition trap


async def test_a_looping_server_with_perfect_drafts_gets_the_sampling_loop_hint(
    tmp_path: Path, running: Running
) -> None:
    """``repeat`` with speculative decoding on: the log's accept rate is ~1.0 and the
    canary's answer loops; the hint says sampling, with both sides of the evidence."""
    folder = model_folder(tmp_path, RECOMMENDED)
    sim = running.sim(
        serving_sim(tmp_path, "sglang", scenario="repeat", model=folder, extra=SGLANG_SPEC)
    )
    sim.wait_ready()
    load = running.load(sim.port)
    wait_until(
        lambda: sim.text().count("accept len: ") >= ACCEPT_LINES,
        30,
        "decode lines with accept figures",
    )
    load.stop()
    config = canary_yaml(tmp_path, sim, "sglang")
    host = load_config(str(config)).hosts["gpu"]
    sessions = Sessions(long_lived=False, timeout=None)
    try:
        session = sessions.session(host, host.services["svc"])
        result = await run_canary(session)
        report = session.report(result.sent_at or 0.0).to_json()
    finally:
        await sessions.close()
    assert result.outcome is CanaryOutcome.REPETITION and result.exit_status == 1, result
    document = result.to_json()
    assert document["repetition"] > LOW_REPETITION
    assert document["sampling_source"] == SAMPLING_MODEL
    hints = [h for h in report["hints"] if h["rule"] == "sampling-loop"]
    assert len(hints) == 1, (
        report["hints"],
        {k: v for k, v in report["metrics"].items() if "accept" in k},
    )
    (hint,) = hints
    evidence = " | ".join(hint["evidence"])
    assert "the canary sent" in evidence and "the model recommends" in evidence, evidence
    assert "temperature 0.6" in evidence or "temperature=0.6" in evidence, evidence
    assert "accept" in evidence, evidence


def test_the_repeat_canary_exits_1_from_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], running: Running
) -> None:
    folder = model_folder(tmp_path, RECOMMENDED)
    sim = running.sim(
        serving_sim(tmp_path, "sglang", scenario="repeat", model=folder, extra=SGLANG_SPEC)
    )
    sim.wait_ready()
    code, document = canary_json(canary_yaml(tmp_path, sim, "sglang"), capsys)
    assert code == 1, document
    assert document["ok"] is False and document["outcome"] == CanaryOutcome.REPETITION.value
    assert document["repetition"] > LOW_REPETITION


# ---------------------------------------------------------------- a wedged server


def wedged_sim(tmp: Path, running: Running) -> Sim:
    """A vLLM sim whose engine stopped a second after it was ready (a request hangs)."""
    sim = running.sim(serving_sim(tmp, "vllm", scenario="wedged", wedge_after=1))
    sim.wait_ready()
    wait_until(lambda: hangs(sim.port), 20, "a request that hangs (the engine stopped)")
    return sim


def test_a_wedged_server_times_the_canary_out_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], running: Running
) -> None:
    sim = wedged_sim(tmp_path, running)
    code, document = canary_json(canary_yaml(tmp_path, sim, "vllm"), capsys)
    assert code == 2, document
    assert document["outcome"] == CanaryOutcome.TIMEOUT.value and document["ok"] is False
    assert_tied_to(document, sim)


async def test_a_canary_that_timed_out_makes_the_server_wedged(
    tmp_path: Path, running: Running
) -> None:
    sim = wedged_sim(tmp_path, running)
    host = load_config(str(canary_yaml(tmp_path, sim, "vllm"))).hosts["gpu"]
    sessions = Sessions(long_lived=False, timeout=None)
    try:
        session = sessions.session(host, host.services["svc"])
        result = await run_canary(session)
        after = await session.fresh()
    finally:
        await sessions.close()
    assert result.timed_out and result.exit_status == 2, result
    assert after.verdict is Verdict.WEDGED, after.summary
    assert after.wedged is not None
    assert after.wedged.cause in (WedgeCause.CANARY, WedgeCause.STALL), after.wedged


# ---------------------------------------------------------------- a host that cannot be asked


def test_an_unreachable_host_exits_3_with_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # nothing listens there
    config = tmp_path / "hosts.yaml"
    config.write_text(
        f"hosts:\n  gpu:\n    ssh: root@127.0.0.1:{port}\n    connect_timeout: 2\n"
        "    services:\n      svc: {engine: vllm, log: /srv/serve.log, port: 8000}\n"
    )
    code, document = canary_json(config, capsys)
    assert code == 3, document
    assert document["ok"] is False and document["outcome"] == CanaryOutcome.UNREACHABLE.value
    assert document["error"]
