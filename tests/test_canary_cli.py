"""`babysit canary` as a script runs it, against real sim processes: a healthy run answers,
a dead service has no run to ask (nothing is sent), an unreachable host is exit 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.ports import free_port
from support.servers import REPO, Server, sim_argv
from support.wait import wait_until

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
#: Every key ``babysit canary --json`` promises.
KEYS = {
    "ok",
    "ttft_s",
    "tokens_per_s",
    "finish_reason",
    "repetition",
    "sampling",
    "sampling_source",
    "run",
}
#: The sampling ``canary.sampling`` gives (the sim's model folder is not on the host).
SAMPLING = {"temperature": 0.6, "top_p": 0.95}


def babysit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def service_entry(log: Path, port: int) -> str:
    """A host entry's ``services:`` with one SGLang service ``qwen`` on ``port``."""
    return (
        "    services:\n      qwen:\n        engine: sglang\n"
        f"        log: {json.dumps(str(log))}\n        port: {port}\n"
        f"        match: {json.dumps(f'tui sim .*--port {port} ')}\n"
        "        canary:\n          max_tokens: 16\n          timeout: 30\n"
        "          sampling: {temperature: 0.6, top_p: 0.95}\n"
    )


def config(tmp_path: Path, host: str, log: Path, port: int) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n" + host + service_entry(log, port))
    return path


def test_a_healthy_run_answers_with_its_figures_tied_to_its_pid(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "serve.log")
    servers.append(server)
    server.wait_for(READY)
    hosts = config(tmp_path, "  here:\n    local: true\n", server.log, server.port)
    result = babysit("canary", "here/qwen", "--json", "--config", str(hosts))
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert set(document) >= KEYS, document
    assert document["ok"] is True
    assert document["outcome"] == "ok"
    assert document["tokens_per_s"] > 0
    assert document["ttft_s"] >= 0
    assert 0 <= document["repetition"] <= 1
    assert document["finish_reason"]
    assert document["sampling_source"] == "canary.sampling"
    assert document["sampling"] == SAMPLING
    assert document["run"]["pid"] == server.pid
    assert document["run"]["started_at"]
    assert result.stderr == ""


def test_the_sampling_comes_from_the_models_generation_config_when_its_folder_is_there(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "models" / "Qwen3-8B"
    folder.mkdir(parents=True)
    recommended = {"temperature": 0.7, "top_p": 0.8, "top_k": 20}
    (folder / "generation_config.json").write_text(json.dumps(recommended))
    port = free_port()
    argv = sim_argv("sglang", port)
    argv[argv.index("Qwen/Qwen3-8B")] = str(folder)
    log = tmp_path / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("ab") as out:
        sim = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
        )
    try:
        wait_until(lambda: READY in log.read_text(errors="replace"), 20, "the ready line")
        hosts = config(tmp_path, "  here:\n    local: true\n", log, port)
        result = babysit("canary", "here/qwen", "--json", "--config", str(hosts))
    finally:
        os.killpg(sim.pid, signal.SIGKILL)
        sim.wait(10)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["sampling_source"] == "generation_config"
    assert document["sampling"] == recommended
    assert document["sampling_path"] == str(folder / "generation_config.json")


def test_the_text_form_says_where_it_was_sent_and_what_came_back(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "serve.log")
    servers.append(server)
    server.wait_for(READY)
    hosts = config(tmp_path, "  here:\n    local: true\n", server.log, server.port)
    result = babysit("canary", "here/qwen", "--config", str(hosts))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == f"babysit: here/qwen: canary sent to pid {server.pid} …\n"
    assert result.stdout.strip(), "the result's lines"
    assert "Traceback" not in result.stdout + result.stderr


def test_a_dead_service_has_no_run_to_ask_and_nothing_is_sent(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-12-01 09:20:06] {READY}\n")
    hosts = config(tmp_path, "  here:\n    local: true\n", log, free_port())
    result = babysit("canary", "here/qwen", "--json", "--config", str(hosts))
    assert result.returncode == 2, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert document["outcome"] == "no-run"
    assert "nothing was sent" in document["error"]
    assert result.stderr == ""


def test_an_unreachable_host_is_one_document_and_exit_3(tmp_path: Path) -> None:
    host = f"  down:\n    ssh: root@127.0.0.1:{free_port()}\n"
    hosts = config(tmp_path, host, Path("/srv/serve.log"), free_port())
    result = babysit("canary", "down/qwen", "--json", "--config", str(hosts))
    assert result.returncode == 3, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert document["outcome"] == "unreachable"
    assert "connection refused" in document["error"]
    assert "Traceback" not in result.stderr


def test_an_unreachable_host_in_words_exits_3(tmp_path: Path) -> None:
    host = f"  down:\n    ssh: root@127.0.0.1:{free_port()}\n"
    hosts = config(tmp_path, host, Path("/srv/serve.log"), free_port())
    result = babysit("canary", "down/qwen", "--config", str(hosts))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "connection refused" in result.stdout.lower()
    assert "Traceback" not in result.stdout + result.stderr
