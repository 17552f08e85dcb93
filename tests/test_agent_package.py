"""The agent as a package: each module runs on python3 >= 3.6 with the stdlib alone, each
mode's bundle carries only what the mode needs and really runs under ``python3 -I -S``,
and ``babysit agent --print MODE`` shows exactly what the host execs."""

from __future__ import annotations

import ast
import asyncio
import gc
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tui.agent import protocol
from tui.core.frames import FrameDecoder
from tui.remote.agentcall import BOOTSTRAP, agent_input, agent_source, run_agent, stream_agent
from tui.remote.bundle import AGENT_DIR, MAIN_MODULE, MODES, bundle, mode_of, modules_of
from tui.remote.local import LocalTransport

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
MODULES = sorted(p.stem for p in AGENT_DIR.glob("*.py") if p.stem != "__init__")
#: The agent's modules stay small: one thing each.
MAX_LINES = 500
#: Functions that only the probe, the kill or the launch run.
PROBE_CODE = ("def probe_service", "def readiness", "def gpu_readings", "def find_candidates")
KILL_CODE = ("def kill_refusal", "def run_kill", "def send_signal", "class KillLog")
LAUNCH_CODE = ("def rotate_log", "def launch(")
FOLLOW_CODE = ("class LogFollower", "class Inotify", "def find_copy")


def _parse_36(source: str) -> ast.Module:
    """``source`` parsed as python 3.6, with the collector paused: on CPython 3.11 a
    finalizer that runs mid-parse and formats a traceback (pytest's hook does, and the
    traceback module parses source for its carets) shares the parser's recursion count,
    and the outer parse fails with "AST constructor recursion depth mismatch"."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, feature_version=(3, 6))
    finally:
        if enabled:
            gc.enable()


def _parse(name: str) -> tuple[str, ast.Module]:
    source = (AGENT_DIR / f"{name}.py").read_text(encoding="utf-8")
    return source, _parse_36(source)


#: Every module parsed as the test module is collected, before any test runs in this
#: process: CPython 3.11's AST constructor can be left with its recursion depth off by an
#: earlier test's RecursionError (hostile text), and then fails every later parse.
TREES = {name: _parse(name) for name in MODULES}


def tree_of(name: str) -> tuple[str, ast.Module]:
    return TREES[name]


@pytest.mark.parametrize("name", MODULES)
def test_each_module_is_python_3_6_and_imports_only_the_stdlib(name: str) -> None:
    source, tree = tree_of(name)
    assert not any(isinstance(node, ast.NamedExpr) for node in ast.walk(tree))
    assert "from __future__" not in source
    assert source.count("\n") <= MAX_LINES
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in sys.stdlib_module_names, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level:
            # Siblings only, by name: the bundle drops these lines.
            assert node.level == 1 and node.module in MODULES, ast.unparse(node)
            assert node in tree.body, f"{name}: a sibling import inside a function"
        elif isinstance(node, ast.ImportFrom):
            assert node.module and node.module.split(".")[0] in sys.stdlib_module_names


@pytest.mark.parametrize("name", MODULES)
def test_the_agent_sends_no_bare_wire_words(name: str) -> None:
    """A frame, a kill event or an answer is named by a protocol constant, never a string."""
    _, tree = tree_of(name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else None
        called = called or (node.func.id if isinstance(node.func, ast.Name) else None)
        if called in ("frame", "emit", "emit_line"):
            assert not isinstance(node.args[0], ast.Constant), ast.unparse(node)


@pytest.mark.parametrize("mode", list(MODES))
def test_each_bundle_is_one_python_3_6_script_ending_with_its_mode(mode: str) -> None:
    script = bundle(mode)
    tree = _parse_36(script)
    assert "from ." not in script  # every sibling import is dropped
    order = modules_of(MODES[mode])
    assert order[0] == "protocol" and order[-1] == MAIN_MODULE
    for name in order:
        assert f"# ---- tui/agent/{name}.py\n" in script
    last = ast.unparse(tree.body[-1])
    assert f"main(sys.argv[-1:], {mode!r}, {MODES[mode].function}" in last


def test_a_follower_carries_no_probe_kill_or_launch_code() -> None:
    follower = bundle(protocol.MODE_FOLLOW)
    for absent in PROBE_CODE + KILL_CODE + LAUNCH_CODE:
        assert absent not in follower
    for present in FOLLOW_CODE:
        assert present in follower
    prober = bundle(protocol.MODE_SERVE_PROBES)
    for absent in FOLLOW_CODE + KILL_CODE + LAUNCH_CODE:
        assert absent not in prober
    killer = bundle(protocol.MODE_KILL)
    for absent in FOLLOW_CODE + PROBE_CODE + LAUNCH_CODE:
        assert absent not in killer
    assert len(agent_source(protocol.MODE_FOLLOW)) < len(agent_source(protocol.MODE_PROBE))


def test_the_stdin_carries_the_bundle_of_the_mode_asked() -> None:
    for mode in MODES:
        stdin, _ = agent_input({"mode": mode})
        header, rest = stdin.split(b"\n", 1)
        size, _ = (int(x) for x in header.split())
        assert zlib.decompress(rest[:size]) == bundle(mode).encode()
    assert mode_of({}).name == protocol.MODE_FOLLOW  # a request with no mode follows
    with pytest.raises(KeyError, match="its modes: follow, probe"):
        mode_of({"mode": "nope"})


@pytest.mark.parametrize("mode", [protocol.MODE_FOLLOW, protocol.MODE_PROBE, protocol.MODE_KILL])
def test_agent_print_shows_exactly_what_the_host_execs(mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui", "agent", "--print", mode],
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == zlib.decompress(agent_source(mode))
    stdin, _ = agent_input({"mode": mode})
    size = int(stdin.split(b" ", 1)[0])
    assert done.stdout == zlib.decompress(stdin[stdin.index(b"\n") + 1 :][:size])


def test_agent_print_of_an_unknown_mode_lists_the_modes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui", "agent", "--print", "probes"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "no mode 'probes'" in done.stderr
    for mode in MODES:
        assert mode in done.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "tui", "agent", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert "exactly as it runs it" in helped.stdout


def test_the_probe_bundle_runs_under_python3_I_S(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_bytes(b"[2026-05-09 09:22:05] hello\n")
    service = {"name": "s", "log": str(log), "match": "no such server 8f3a", "port": None}
    result = asyncio.run(
        run_agent(
            LocalTransport(), {"mode": protocol.MODE_PROBE, "services": [service]}, timeout=30
        )
    )
    assert result.ok, result.completed.stderr
    answer = json.loads(result.completed.stdout)
    (entry,) = answer["services"]
    assert entry["log"]["inode"] == log.stat().st_ino
    assert entry["runs"] == []
    assert answer["boot_id"]


def test_the_follow_bundle_runs_under_python3_I_S(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_bytes(b"one\ntwo\n")

    async def follow() -> list:
        frames = []
        decoder = FrameDecoder()
        request = {"path": str(log), "start": {"from_start": True}, "follow": False}
        async with stream_agent(LocalTransport(), request) as process:
            async for chunk in process.chunks():
                frames.extend(decoder.feed(chunk))
            assert await process.wait() == 0
        return frames

    frames = asyncio.run(follow())
    kinds = [frame.kind for frame in frames]
    assert kinds == [protocol.FRAME_OPENED, protocol.FRAME_DATA, protocol.FRAME_EOF]
    assert frames[1].payload == b"one\ntwo\n"


def test_an_agent_asked_for_another_mode_refuses() -> None:
    """A bundle runs only the mode it carries."""
    stdin, _ = agent_input({"mode": protocol.MODE_ALIVE, "pid": 1, "start_ticks": 0})
    header, rest = stdin.split(b"\n", 1)
    size, _ = (int(x) for x in header.split())
    other = json.dumps({"mode": protocol.MODE_PROBE}).encode()
    swapped = b"%d %d\n" % (size, len(other)) + rest[:size] + other
    argv = [sys.executable, "-I", "-S", "-c", BOOTSTRAP]
    done = subprocess.run(argv, input=swapped, capture_output=True, timeout=30, check=False)
    assert done.returncode == 2
    assert b"agent for alive was asked for probe" in done.stderr
