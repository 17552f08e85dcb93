"""``babysit parse`` on logs the four engines' sims wrote: ``--engine`` takes each of them,
and without it the engine is told from the lines, with the same samples either way."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import Sim

from tui.cli import main
from tui.engines import readable

pytestmark = pytest.mark.integration

#: Each engine's server flags, the request that makes it print metric lines, and the
#: title babysit names it by.
ENGINES = {
    "sglang": (
        ("--model-path", "Qwen/Qwen3-8B", "--decode-log-interval", "5"),
        ("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 120}}),
        "SGLang",
    ),
    "vllm": (
        ("--model", "Qwen/Qwen3-8B"),
        ("/v1/completions", {"model": "Qwen/Qwen3-8B", "prompt": "hi", "max_tokens": 120}),
        "vLLM",
    ),
    "llamacpp": (
        ("-m", "/models/Qwen3-8B-Q4_K_M.gguf", "-md", "/models/d.gguf", "--log-timestamps"),
        ("/completion", {"prompt": "hi", "n_predict": 120}),
        "llama.cpp",
    ),
    "tgi": (
        ("--model-id", "Qwen/Qwen3-8B"),
        ("/generate", {"inputs": "hi", "parameters": {"max_new_tokens": 40}}),
        "TGI",
    ),
}
REQUESTS = 3


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """One log per engine, written by its sim from startup to a SIGTERM under load."""
    tmp = tmp_path_factory.mktemp("engine-logs")
    sims = {
        engine: Sim(
            tmp,
            engine,
            "--load-seconds",
            "0.3",
            "--stats-interval",
            "1",
            "--seed",
            "2",
            server=flags,
        )
        for engine, (flags, _, _) in ENGINES.items()
    }
    try:
        for sim in sims.values():
            sim.wait_ready()

        def drive(engine: str) -> None:
            path, payload = ENGINES[engine][1]
            for _ in range(REQUESTS):
                status, _ = sims[engine].post(path, payload)
                assert status == 200

        threads = [threading.Thread(target=drive, args=(engine,)) for engine in sims]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        for sim in sims.values():
            sim.signal(signal.SIGTERM)
        for sim in sims.values():
            sim.wait()
        yield {engine: sim.log_path for engine, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.stop()


def parsed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main(["parse", *argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_every_engine_is_a_choice_of_engine() -> None:
    assert {spec.name for spec in readable()} == set(ENGINES)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_parse_reads_each_engines_log_with_or_without_engine(
    logs: dict[str, Path], capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    chosen = parsed(capsys, str(logs[engine]), "--engine", engine)
    detected = parsed(capsys, str(logs[engine]))
    assert detected[0]["engine"] is None and chosen[0]["engine"] == engine
    for records in (chosen, detected):
        end = records[-1]
        assert end["type"] == "end" and end["engine"] == engine, end
        assert end["metric_lines"] > 0 and end["runs"] == 1, end
    samples = [r for r in chosen if r["type"] == "metric"]
    assert samples and samples == [r for r in detected if r["type"] == "metric"]
    if engine != "tgi":  # TGI's log holds request timings only: its figures are on /metrics
        assert any(s["values"] for s in samples)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_the_text_report_names_the_engine_by_its_title(
    logs: dict[str, Path], capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    capsys.readouterr()
    assert main(["parse", str(logs[engine])]) == 0
    last = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"{logs[engine]}: {ENGINES[engine][2]}, "), last
