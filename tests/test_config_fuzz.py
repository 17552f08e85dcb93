"""The config loader under random input: either a Config, or one line naming the file
(and the line) with exit 2 from `babysit hosts` and `babysit status --json`, which
then prints its JSON envelope; never a traceback. Random YAML-ish text, and random
edits of a valid hosts.yaml."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.cli import main
from tui.config import Config, LaunchSpec
from tui.errors import ConfigError
from tui.hostsfile import parse_config_file

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent

#: What no output line, and no string of a loaded Config, may hold.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

VALID = (REPO / "hosts.example.yaml").read_text() + (
    "  b200:\n"
    "    local: true\n"
    "    services:\n"
    "      dp:\n"
    "        engine: sglang\n"
    "        instances: 4\n"
    "        log: /workspace/logs/gpu{i}.log\n"
    '        port: "{30000 + i}"\n'
    '        gpus: ["{i}"]\n'
    "        match: '/workspace/launch.sh {i}$'\n"
    "        ready: [ready]\n"
    '        launch: {command: [bash, /workspace/launch.sh, "{i}"], env: {GPU: "{i}"}}\n'
    "groups:\n"
    "  nodes: [kpro5, b200]\n"
)

#: Pieces of YAML and of hosts.yaml, and of what has broken loaders before.
TOKENS = [
    "\n",
    "  ",
    "    ",
    "- ",
    ": ",
    ":",
    ",",
    "[",
    "]",
    "{",
    "}",
    "'",
    '"',
    "#",
    "|\n",
    ">\n",
    "? ",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "\t",
    "&a ",
    "&b ",
    "*a",
    "*b",
    "<<: *a",
    "!!int ",
    "!!float ",
    "!!binary ",
    "!!python/object:os.system ",
    "!x ",
    "~",
    "null",
    "true",
    "0x",
    "1e999",
    ".nan",
    "1:2:3",
    "9" * 80,
    "{i}",
    "{i + 30000}",
    "{9999999999 * i}",
    "{i ** 2}",
    "hosts",
    "hosts:\n",
    "groups:\n",
    "services:\n",
    "local: true",
    "ssh: root@h",
    "ssh: root@h:99999",
    "pct: {node: root@pve, vmid: 105}",
    "log: /l",
    "log: rel",
    "port: 30000",
    "gpus: [0, 1]",
    "instances: 1024",
    "instances: 3",
    "engine: vllm",
    "match: sglang",
    "match: '(--port 1'",
    "ready: up",
    "stop_grace: 5",
    "keep_logs: 2",
    "metrics: prometheus",
    "launch: {command: [a, b]}",
    "env: {A: 1}",
    "cwd: /srv",
    '"\\e]0;t\\a"',
    '"\\x9b2J"',
    '"\\u202e"',
    '"a\\nb"',
    '"\\0"',
    "\x1b[2J",
    "\u202e",
    "\u2066",
    "\x85",
    "\r",
    "\ufeff",
]

text_pieces = st.characters(blacklist_categories=("Cs",))
yamlish = st.lists(st.sampled_from(TOKENS) | st.text(text_pieces, max_size=4), max_size=40).map(
    "".join
)

edit = st.tuples(
    st.floats(0, 1),  # where
    st.sampled_from(["insert", "delete", "replace", "repeat-line"]),
    st.integers(0, 40),  # how many characters
    st.sampled_from(TOKENS) | st.text(text_pieces, min_size=1, max_size=3),
)


def mutate(text: str, edits: list[tuple[float, str, int, str]]) -> str:
    for where, kind, length, piece in edits:
        at = int(where * len(text))
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + length :]
        elif kind == "replace":
            text = text[:at] + piece + text[at + max(1, length // 8) :]
        else:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end + 1
            text = text[:end] + text[start:end] + text[end:]
    return text


@contextlib.contextmanager
def config_file(text: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hosts.yaml"
        path.write_text(text, encoding="utf-8")
        yield path


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def strings(value: object, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string a loaded Config holds, with where it is."""
    if isinstance(value, str):
        yield key, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from strings(getattr(value, f.name), f"{key}.{f.name}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(k, f"{key}[key]")
            yield from strings(v, f"{key}[{k!r}]")
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from strings(item, f"{key}[{i}]")


def spans_lines_allowed(config: Config) -> set[str]:
    """The strings that may hold a line break: launch.command items and env values."""
    allowed: set[str] = set()
    for host in config.hosts.values():
        for service in host.services.values():
            launch: LaunchSpec | None = service.launch
            if launch is not None:
                allowed.update(launch.command)
                allowed.update(launch.env.values())
    return allowed


def check(text: str) -> None:
    with config_file(text) as path:
        try:
            config = parse_config_file(path)
        except ConfigError as error:
            message = error.message
            assert "\n" not in message and "\r" not in message, message
            assert UNSAFE.search(message) is None, message
            assert re.match(rf"{re.escape(str(path))}:\d+: ", message), message
            line = f"babysit: {message}\n"
            status, out, err = run(["hosts", "--config", str(path)])
            assert (status, out, err) == (2, "", line)
            status, out, err = run(["status", "--json", "--config", str(path)])
            assert (status, err) == (2, line)
            assert json.loads(out) == {
                "schema": 1,
                "ok": False,
                "error": {"kind": "config", "message": message},
            }
            return
        multiline = spans_lines_allowed(config)
        for key, value in strings(config):
            assert UNSAFE.search(value) is None, (key, value)
            assert "\n" not in value or value in multiline, (key, value)
        status, out, err = run(["hosts", "--config", str(path)])
        assert (status, err) == (0, ""), err
        assert UNSAFE.search(out) is None, out
        status, out, err = run(["hosts", "--json", "--config", str(path)])
        assert status == 0
        json.loads(out)


SETTINGS = settings(
    max_examples=150,
    # No wall-clock limit (tests never assert times); every input is small and every
    # bound is counted, so each example ends.
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_the_valid_file_loads() -> None:
    with config_file(VALID) as path:
        config = parse_config_file(path)
    assert list(config.hosts["b200"].services) == ["dp-0", "dp-1", "dp-2", "dp-3"]


@SETTINGS
@given(yamlish)
def test_random_yamlish_text_loads_or_is_one_line_with_exit_2(text: str) -> None:
    check(text)


@SETTINGS
@given(yamlish.map(lambda body: "hosts:\n  h:\n    local: true\n    services:\n" + body))
def test_random_services_load_or_are_one_line_with_exit_2(text: str) -> None:
    check(text)


@SETTINGS
@given(st.lists(edit, min_size=1, max_size=4))
def test_edits_of_a_valid_file_load_or_are_one_line_with_exit_2(
    edits: list[tuple[float, str, int, str]],
) -> None:
    check(mutate(VALID, edits))
