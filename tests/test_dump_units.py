"""The dump's pieces on their own: the agent's log tail and process tree, ptrace's words,
the answer read (secrets redacted, host bytes made printable), the bundle's text, its
file and its folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tui.agent.dump import MAX_LOG_READ, log_lines, run_tree
from tui.agent.ptrace import denied_why
from tui.core.answers import decode
from tui.core.dump import DumpRefused, dump_request, read_dump, redact_line
from tui.core.dump_text import DumpHeader, bundle_text, fact_lines
from tui.core.runs import Assessment, LogState, Process, Ready, Run
from tui.core.verdicts import Verdict
from tui.session.dump import dumps_folder, write_bundle

pytestmark = pytest.mark.unit

SECRET = "sk-live-0123456789abcdef"  # noqa: S105 - a test value
HEADER = DumpHeader(
    chain="local", engine="sglang", started_at=1_796_000_000.0, utc_offset=0, version="9.9"
)


def answer(**changes: object) -> dict[str, object]:
    """An agent's dump answer: a root read by py-spy, a child by the kernel's view."""
    data: dict[str, object] = {
        "run": {"pid": 100, "start_ticks": 5000, "same": True, "boot_id": "b-1"},
        "processes": [
            {
                "pid": 100,
                "ppid": 1,
                "comm": "python",
                "cmdline": ["python", "-m", "sglang.launch_server", "--api-key", SECRET],
                "start_ticks": 5000,
                "user": "root",
                "how": "py-spy",
                "stack": f"Process 100: python -m sglang.launch_server --api-key {SECRET}\n"
                'Thread 100 (idle): "MainThread"\n    event_loop (server.py:10)\n',
                "threads": [],
                "problem": None,
            },
            {
                "pid": 101,
                "ppid": 100,
                "comm": "worker\x1b[2J",
                "cmdline": ["worker"],
                "start_ticks": 5001,
                "user": "root",
                "how": "proc",
                "stack": None,
                "threads": [
                    {
                        "tid": 101,
                        "name": "worker",
                        "state": "D",
                        "wchan": "nccl_wait",
                        "stack": "[<0>] x\n",
                    }
                ],
                "wchan": "futex_wait",
                "status": "Name:\tworker\nState:\tD (disk sleep)\n",
                "problem": "py-spy: Failed to find python version",
            },
        ],
        "py_spy": "/usr/local/bin/py-spy",
        "ptrace": {"allowed": True, "why": None, "yama_scope": 0, "cap_sys_ptrace": True},
        "nvidia_smi": {
            "status": 0,
            "text": "| NVIDIA-SMI 570 |\n",
            "error": "",
            "apps_status": 0,
            "apps": "pid, used_gpu_memory [MiB], gpu_uuid\n100, 70000 MiB, GPU-1\n",
            "apps_error": "",
        },
        "log": {
            "path": "/srv/serve.log",
            "dev": 1,
            "inode": 42,
            "offset": 0,
            "lines": ["starting", f"server_args=ServerArgs(api_key='{SECRET}', port=30000)"],
            "from_anchor": True,
            "cut": False,
            "problem": None,
        },
        "record": {
            "pid": 100,
            "argv": ["sglang", "--api-key", SECRET],
            "env": {"HF_TOKEN": SECRET},
        },
        "startups": {"runs": []},
        "startups_problem": None,
        "problem": None,
        "taken_at": 1_796_000_100.0,
        "elapsed_s": 0.5,
    }
    data.update(changes)
    return data


def dump_of(data: dict[str, object]):
    return read_dump("kpro5", "qwen", decode(json.dumps(data), "the dump's answer"))


def test_the_bundle_holds_every_part_and_no_secret_nor_escape() -> None:
    dump = dump_of(answer())
    text = bundle_text(dump, HEADER)
    assert SECRET not in text
    assert "\x1b" not in text
    assert text.startswith("babysit dump · kpro5/qwen\nhost:     kpro5 (local)\n")
    assert "run:      pid 100 (started 2026-" in text
    assert "boot:     b-1" in text
    assert "log:      /srv/serve.log (inode 42)" in text
    assert "babysit:  9.9" in text
    order = [
        "process 100 (parent 1) · python · user root · py-spy dump",
        "    event_loop (server.py:10)",
        "process 101 (parent 100) · worker\\x1b[2J · user root · the kernel's view",
        "note:    py-spy: Failed to find python version",
        "wchan:   futex_wait",
        "  101 worker state D wchan nccl_wait",
        "      [<0>] x",
        "    State:\tD (disk sleep)",
        "| NVIDIA-SMI 570 |",
        "100, 70000 MiB, GPU-1",
        "log: 2 lines of /srv/serve.log (inode 42) from offset 0 (this run's, from its start)",
        "server_args=ServerArgs(api_key='<redacted, 24 chars>', port=30000)",
        "run record (runs.jsonl, the newest)",
        "startups (startups.json)",
    ]
    at = [text.index(part) for part in order]
    assert at == sorted(at)
    assert "Process 100: python -m sglang.launch_server --api-key <redacted, 24 chars>" in text
    assert '"HF_TOKEN": "<redacted, 24 chars>"' in text
    assert "ptrace" not in text.split("nvidia-smi")[0].split("babysit:")[1].split("process 100")[0]


def test_ptrace_denied_is_said_in_the_header_and_the_facts() -> None:
    why = "process 100 belongs to user root and the agent runs as nobody"
    ptrace = {"allowed": False, "why": why, "yama_scope": None, "cap_sys_ptrace": False}
    dump = dump_of(answer(ptrace=ptrace))
    text = bundle_text(dump, HEADER)
    assert f"ptrace:   denied: {why}" in text
    assert "kernel.yama.ptrace_scope: not set (no Yama); the agent's CAP_SYS_PTRACE: no" in text
    facts = fact_lines(dump)
    assert facts[0] == "kpro5/qwen: run pid 100"
    assert f"ptrace denied: {why}" in facts
    assert "process 100 (python): py-spy stack" in facts
    assert any(
        line.startswith("process 101 (worker\\x1b[2J): the kernel's view, 1 threads")
        for line in facts
    )


def test_another_process_at_the_pid_is_refused() -> None:
    problem = (
        "process 100 is another process now (it started at another time): nothing was gathered"
    )
    with pytest.raises(DumpRefused, match="nothing was written") as refused:
        dump_of(answer(run={"pid": 100, "start_ticks": 5000, "same": False}, problem=problem))
    assert refused.value.exit_status == 3
    assert problem in refused.value.message


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("api_key='abc' max_tokens=16", "api_key='<redacted, 3 chars>' max_tokens=16"),
        ('HF_TOKEN: "xyz"', 'HF_TOKEN: "<redacted, 3 chars>"'),
        ("api_key=None tokenizer_path=/m", "api_key=None tokenizer_path=/m"),
        ("ssl_keyfile_password=pw,", "ssl_keyfile_password=<redacted, 2 chars>,"),
    ],
)
def test_secret_values_in_log_lines_are_redacted(line: str, shown: str) -> None:
    assert redact_line(line) == shown


def assessment(verdict: Verdict, *, writes: bool = True) -> Assessment:
    root = Process(100, 1, 5000, 1_796_000_000.0, "root", ("python",), "/", ("command",), None)
    ready = Ready(seen=True, source="log", anchor=1234)
    log = LogState(path="/srv/serve.log", exists=True, dev=1, inode=42)
    run = Run(root, (), ready)
    return Assessment(
        "kpro5", "qwen", verdict, "…", 0.0, run=run, log=log, ready=ready, boot_id="b-1"
    )


def test_the_request_names_the_run_its_boot_and_its_anchor() -> None:
    request = dump_request(assessment(Verdict.LIVE), record_dir="/state/qwen")
    assert request["pid"] == 100
    assert request["start_ticks"] == 5000
    assert request["boot_id"] == "b-1"
    assert request["log"] == "/srv/serve.log"
    assert request["lines"] == 200
    assert request["record_dir"] == "/state/qwen"


@pytest.mark.parametrize("verdict", [Verdict.AMBIGUOUS, Verdict.UNKNOWN, Verdict.DEAD])
def test_no_verified_run_no_request(verdict: Verdict) -> None:
    with pytest.raises(DumpRefused, match="no verified run to dump"):
        dump_request(assessment(verdict), record_dir="/state/qwen")


def test_the_log_is_read_from_the_runs_anchor_on(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_bytes(b"old run\n" * 3 + b"".join(b"line %d\n" % i for i in range(300)))
    st = log.stat()
    anchor = len(b"old run\n" * 3)
    args = {"log": str(log), "anchor": anchor, "dev": st.st_dev, "inode": st.st_ino, "lines": 200}
    out = log_lines(args)
    assert out["lines"][0] == "line 100" and out["lines"][-1] == "line 299"
    assert len(out["lines"]) == 200
    assert out["from_anchor"] is True
    assert out["cut"] is True
    assert out["offset"] == anchor + sum(len(b"line %d\n" % i) for i in range(100))
    short = log_lines({**args, "lines": 500})
    assert short["lines"][0] == "line 0"
    assert short["cut"] is False
    moved = log_lines({**args, "inode": st.st_ino + 1})
    assert "not the run's" in moved["problem"]
    assert moved["lines"][-1] == "line 299"


def test_at_most_the_last_mib_is_read(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        out.write(b"x" * (MAX_LOG_READ * 2) + b"\n")
        out.write(b"".join(b"tail %d\n" % i for i in range(10)))
    out = log_lines({"log": str(log), "anchor": 0, "lines": 200})
    assert out["lines"] == [f"tail {i}" for i in range(10)]
    assert out["from_anchor"] is False
    assert out["cut"] is True
    missing = log_lines({"log": str(tmp_path / "none.log"), "lines": 200})
    assert missing["lines"] == [] and "does not exist" in missing["problem"]


def test_the_tree_is_the_root_and_everything_below_it() -> None:
    table = {
        pid: {"pid": pid, "ppid": ppid}
        for pid, ppid in [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1)]
    }
    order, cut = run_tree(table, 10)
    assert [p["pid"] for p in order] == [10, 11, 12, 13]
    assert cut is False


def test_ptrace_words_name_yama_and_the_capability() -> None:
    facts = {"yama_scope": 2, "cap_sys_ptrace": False}
    why = denied_why(facts, os.getpid(), str)
    assert "kernel.yama.ptrace_scope is 2: only root with CAP_SYS_PTRACE may trace" in why
    assert denied_why({"yama_scope": 3, "cap_sys_ptrace": True}, os.getpid(), str).startswith(
        "kernel.yama.ptrace_scope is 3: no one may trace"
    )


def test_the_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "dumps"
    first = write_bundle(str(folder), "kpro5", "qwen/x", "one\n", 1_796_000_000.0)
    second = write_bundle(str(folder), "kpro5", "qwen/x", "two\n", 1_796_000_000.0)
    assert Path(first).name.startswith("kpro5-qwen_x-") and first.endswith(".txt")
    assert second == first.removesuffix(".txt") + "-2.txt"
    assert Path(first).read_text() == "one\n"
    assert Path(first).stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700


def test_where_bundles_go(monkeypatch: pytest.MonkeyPatch) -> None:
    assert dumps_folder("/tmp/x") == "/tmp/x"
    monkeypatch.setenv("BABYSIT_STATE", "/s/babysit")
    assert dumps_folder() == "/s/babysit/dumps"
    monkeypatch.delenv("BABYSIT_STATE")
    monkeypatch.setenv("XDG_STATE_HOME", "/xdg")
    assert dumps_folder() == "/xdg/babysit/dumps"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert dumps_folder() == os.path.expanduser("~/.local/state/babysit/dumps")
