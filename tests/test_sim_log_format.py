"""Golden tests of ``--log-format``: SGLang and vLLM records in the formats real users' logs hold.

Formats from the log-format reference §6 (Drift): SGLang without its ``[…]``
prefix (``YYYY-MM-DD HH:MM:SS LEVEL PID [file.py:N]`` and the stdlib
``%(asctime)s [%(levelname)s] %(name)s:``) and as python-json-logger objects;
vLLM 0.33's coloured formatter and its JSON form. The message bodies are the
release bodies the release-format golden tests hold (imported from there);
the prefixes below are written by hand from the format strings.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest
from sim_helpers import ROOT, Sim, sim_env
from test_sim_golden import (
    ACCESS,
    SGLANG_MAIN,
    SGLANG_RELEASES,
    SGLANG_SCHEDULER,
    SPEC_SGLANG,
    SPEC_VLLM,
    TQDM,
    UVICORN,
    VLLM_COMMON,
    VLLM_RELEASES,
)

pytestmark = pytest.mark.integration

DATE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"
ASCTIME = DATE + r",\d{3}"
SGLANG_PLAIN = re.compile(
    rf"^{DATE} (?P<level>INFO|WARNING|ERROR) (?P<pid>\d+) \[(?P<site>[\w.]+\.py:\d+)\] (?P<msg>.*)$"
)
SGLANG_STDLIB = re.compile(
    rf"^{ASCTIME} \[(?P<level>INFO|WARNING|ERROR)\] (?P<name>sglang(?:\.\w+)+): (?P<msg>.*)$"
)
#: SGLang re-formats uvicorn's lines with its own stamp (0.4.6 on), whatever the log format
SGLANG_UVICORN = re.compile(r"^\[" + DATE + r"\] (?P<rest>.*)$")
#: vLLM's ColoredFormatter (0.33): cyan tag, coloured level, grey stamp and fileinfo
VLLM_COLOURED = re.compile(
    r"^\x1b\[0;36m\((?P<proc>\w+) pid=(?P<pid>\d+)\)\x1b\[0;0m "
    r"\x1b\[(?:32mINFO|33mWARNING|31mERROR)\x1b\[0m "
    r"\x1b\[90m\d{2}-\d{2} \d{2}:\d{2}:\d{2}\x1b\[0m "
    r"\x1b\[90m\[[\w./]+\.py:\d+\]\x1b\[0m (?P<msg>.*)$"
)
JSON_KEYS = ["asctime", "levelname", "name", "processName", "process", "message"]
SGLANG_JSON_KEYS = ["asctime", "levelname", "name", "process", "message"]
RAW_TAG = re.compile(r"^\((?P<proc>\w+) pid=\d+\) (?P<rest>.*)$")
SGLANG_VERSION = "0.5.11"


def _sglang_body(message: str) -> str | None:
    decode, prefill, _, _ = SGLANG_RELEASES[SGLANG_VERSION]
    kinds = {**SGLANG_SCHEDULER, **SGLANG_MAIN, "decode": decode, "prefill": prefill}
    return next((name for name, regex in kinds.items() if re.match(regex, message)), None)


def _vllm_body(version: str, message: str) -> str | None:
    kinds = {**VLLM_COMMON, **VLLM_RELEASES[version]}
    return next((name for name, regex in kinds.items() if re.match(regex, message)), None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Each engine and format: ready, two requests, SIGTERM -> the log lines (status 0)."""
    tmp = tmp_path_factory.mktemp("formats")
    specs = {
        "sglang-plain": ("sglang", SGLANG_VERSION, "plain"),
        "sglang-stdlib": ("sglang", SGLANG_VERSION, "stdlib"),
        "sglang-json": ("sglang", SGLANG_VERSION, "json"),
        "vllm-color": ("vllm", "0.33.0", "color"),
        "vllm-json": ("vllm", "0.33.0", "json"),
        "vllm-json-0.10": ("vllm", "0.10.2", "json"),
    }
    sims: dict[str, Sim] = {}
    try:
        for name, (engine, version, log_format) in specs.items():
            sims[name] = Sim(
                tmp,
                engine,
                "--engine-version",
                version,
                "--log-format",
                log_format,
                "--load-seconds",
                "0.5",
                "--seed",
                "3",
                *(("--stats-interval", "0.3") if engine == "vllm" else ()),
                server=SPEC_SGLANG if engine == "sglang" else SPEC_VLLM,
                name=name,
            )
        for sim in sims.values():
            sim.wait_ready()
        for name, sim in sims.items():
            for _ in range(2):
                if name.startswith("sglang"):
                    payload = {"text": name, "sampling_params": {"max_new_tokens": 200}}
                    assert sim.post("/generate", payload)[0] == 200
                else:
                    payload = {"model": "Qwen/Qwen3-8B", "prompt": name, "max_tokens": 200}
                    assert sim.post("/v1/completions", payload)[0] == 200
            if name.startswith("vllm"):
                sim.wait_for("Avg prompt throughput", timeout=10)
        for sim in sims.values():
            sim.signal(signal.SIGTERM)
        statuses = {name: sim.wait() for name, sim in sims.items()}
        assert set(statuses.values()) == {0}, statuses
        return {name: sim.lines() for name, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.stop()


def _sglang_other(line: str) -> bool:
    """uvicorn, access and tqdm lines keep SGLang's default shape in every format."""
    if line == "" or re.match(TQDM, line):
        return True
    stamped = SGLANG_UVICORN.match(line)
    return stamped is not None and bool(
        re.match(UVICORN, stamped["rest"]) or re.match(ACCESS, stamped["rest"])
    )


@pytest.mark.parametrize("log_format", ["plain", "stdlib", "json"])
def test_sglang_records_in_the_chosen_format(runs, log_format: str) -> None:
    seen: dict[str, int] = {}
    for line in runs[f"sglang-{log_format}"]:
        if _sglang_other(line):
            continue
        assert not line.startswith("["), f"an SGLang prefix in {log_format}: {line!r}"
        if log_format == "json":
            record = json.loads(line)
            assert list(record) == SGLANG_JSON_KEYS
            assert re.fullmatch(ASCTIME, record["asctime"])
            assert record["name"].startswith("sglang.") and isinstance(record["process"], int)
            message = record["message"]
        else:
            regex = SGLANG_PLAIN if log_format == "plain" else SGLANG_STDLIB
            match = regex.match(line)
            assert match, f"{log_format}: {line!r}"
            message = match["msg"]
        kind = _sglang_body(message)
        assert kind is not None, f"{log_format}: a body of no known kind: {message!r}"
        seen[kind] = seen.get(kind, 0) + 1
    for kind in ("server_args", "load_end", "kv", "decode", "prefill", "ready"):
        assert seen.get(kind), f"{log_format}: never saw a {kind} record"


def test_sglang_plain_names_the_file_and_the_process(runs) -> None:
    decode = [
        m for line in runs["sglang-plain"] if (m := SGLANG_PLAIN.match(line)) and "Decode" in line
    ]
    assert decode and {m["site"].split(":")[0] for m in decode} == {"scheduler_metrics_mixin.py"}


def test_vllm_coloured_formatter(runs) -> None:
    seen: dict[str, int] = {}
    for line in runs["vllm-color"]:
        if "\x1b" not in line:  # uvicorn, tqdm: written straight to the stream, untagged in 0.33
            plain = line.lstrip("\r")
            assert (
                plain == ""
                or re.match(UVICORN, line)
                or re.match(ACCESS, line)
                or re.match(TQDM, line)
            ), repr(line)
            continue
        match = VLLM_COLOURED.match(line)
        assert match, repr(line)
        assert match["proc"] in ("APIServer", "EngineCore")
        kind = _vllm_body("0.33.0", match["msg"])
        assert kind is not None, f"a body of no known kind: {line!r}"
        seen[kind] = seen.get(kind, 0) + 1
    for kind in ("version", "init", "kv_size", "stats", "spec", "routes"):
        assert seen.get(kind), f"never saw a coloured {kind} record"


@pytest.mark.parametrize(
    ("name", "version"), [("vllm-json", "0.33.0"), ("vllm-json-0.10", "0.10.2")]
)
def test_vllm_json_records(runs, name: str, version: str) -> None:
    seen: dict[str, int] = {}
    for line in runs[name]:
        tagged = RAW_TAG.match(line)
        rest = tagged["rest"] if tagged else line
        if not rest.startswith("{"):
            assert (
                rest.lstrip("\r") == ""
                or re.match(UVICORN, rest)
                or re.match(ACCESS, rest)
                or re.match(TQDM, rest)
            ), repr(line)
            continue
        # 0.8-0.30: the stdout wrapper still writes the tag before the record; 0.31 on: none
        assert (tagged is not None) == (version < "0.31"), repr(line)
        record = json.loads(rest)
        assert list(record) == JSON_KEYS
        assert re.fullmatch(ASCTIME, record["asctime"])
        assert record["name"].startswith("vllm.")
        assert record["processName"] in ("MainProcess", "EngineCore", "EngineCore_DP0")
        kind = _vllm_body(version, record["message"])
        assert kind is not None, f"a message of no known kind: {record['message']!r}"
        if kind == "stats":
            assert record["name"] == "vllm.v1.metrics.loggers"
        seen[kind] = seen.get(kind, 0) + 1
    for kind in ("version", "init", "stats", "spec", "routes"):
        assert seen.get(kind), f"{name}: never saw a {kind} record"


@pytest.mark.parametrize(
    ("engine", "version", "log_format"),
    [
        ("vllm", "0.33.0", "plain"),
        ("sglang", "0.5.11", "color"),
        ("tgi", "3.0.1", "json"),
        ("vllm", "0.20.0", "color"),
    ],
)
def test_formats_an_engine_lacks_are_refused(tmp_path, engine, version, log_format) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "sim",
            "--engine",
            engine,
            "--engine-version",
            version,
            "--log-format",
            log_format,
        ],
        cwd=ROOT,
        env=sim_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert f"--log-format {log_format} is not simulated for {engine}" in result.stderr
