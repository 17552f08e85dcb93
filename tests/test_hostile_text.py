"""Text a host controls never reaches the terminal raw, and a bad answer is UNKNOWN in one line.

The host here is a real sshd whose session ``python3`` is a stand-in
(``support/fake_agent.py``) that runs the real agent and then changes its answers:
it appends an escape payload to the strings a host controls (a process's user and
command line, its cwd, the ready line, a kill's events), or answers with a broken
document. Every output path (status text and JSON, kill progress, check, hosts,
tail text and JSON, the host screen with its modals) is read back and must hold no
control character and no bidi control, while the payload's words show, escaped:
shown, never obeyed.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fake_agent import install
from support.servers import REPO, Server, free_port, service_yaml
from support.sshd import SESSION_PATH, Sshd, start_sshd
from support.wait import until, wait_until
from test_app_actions import kill_port, modal_of
from test_app_host_screen import screen_text

from tui.app.app import BabysitApp, HostView
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

READY = "The server is fired up and ready to roll!"

#: OSC 0 (window title), ED (clear screen), OSC 52 (clipboard), a C1 CSI, bidi controls,
#: a lone surrogate, a NUL, a newline that would forge a line of its own, and Rich markup.
PAYLOAD = (
    "[/][reverse]\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m\u202eSTRIKE\u202c\u2066x\u2069"
    "\x00\ud800\nbabysit: FORGED"
)
#: Characters that must never reach a terminal (tab and newline are the only controls allowed).
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

#: The fields of the agent's answers a host controls, and the events of a kill.
POISONED = ["user", "cmdline", "cwd", "line", "source", "signal", "method", "reason", "record"]


def assert_clean(text: str, *, shown: bool = True) -> None:
    """No unsafe character in ``text``; with ``shown``, the payload's words are there."""
    found = UNSAFE.findall(text)
    assert not found, f"unsafe characters reached the output: {found!r}"
    assert "\nbabysit: FORGED" not in text, "a host's newline made a line of its own"
    if shown:
        assert "PWNED" in text and "STRIKE" in text, text[-2000:]


def run_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        check=False,
        cwd=REPO,
        timeout=120,
    )


def decoded(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """An sshd of this module's own whose sessions run the stand-in python3."""
    root = tmp_path_factory.mktemp("hostile-sshd")
    # The session's PATH as sshd sets it, whatever the account's shell startup files add.
    path = f"{root / 'bin'}:{SESSION_PATH}"
    force = f'ForceCommand env PATH={path} /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    server = start_sshd(root, extra=[force])
    control = install(server.root / "bin")
    try:
        yield server, control
    finally:
        server.stop()


def hosts_yaml(*entries: str) -> str:
    """A hosts.yaml of host entries (each as ``Sshd.host_yaml`` writes one)."""
    return "hosts:\n" + "".join(f"  {line}\n" for e in entries for line in e.splitlines())


def config_for(tmp_path: Path, server: Sshd, log: Path, port: int) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text(hosts_yaml(server.host_yaml("h") + service_yaml(log, port)))
    return path


def poison(control: Path, modes: list[str], keys: list[str] = POISONED) -> None:
    control.write_text(json.dumps({"poison": {"modes": modes, "keys": keys, "text": PAYLOAD}}))


def answer_with(control: Path, modes: list[str], line: str) -> None:
    control.write_text(json.dumps({"replace": {"modes": modes, "line": line}}))


@pytest.fixture
def live(tmp_path: Path, servers: list[Server]) -> Server:
    server = Server(tmp_path / "server.log", port=free_port())
    servers.append(server)
    server.wait_for(READY)
    return server


# ---------------------------------------------------------------------- items 1-4: every path


@pytest.mark.integration
def test_status_text_and_json_show_a_hosts_escapes_never_obey_them(
    hostile: tuple[Sshd, Path], live: Server, tmp_path: Path
) -> None:
    server, control = hostile
    config = config_for(tmp_path, server, live.log, live.port)
    poison(control, ["probe"])
    text = run_cli("status", "h", "--config", str(config))
    assert text.returncode == 0, text.stderr
    assert_clean(decoded(text.stdout) + decoded(text.stderr), shown=False)
    result = run_cli("status", "h", "--config", str(config), "--json")
    out = decoded(result.stdout)
    assert_clean(out)
    document = json.loads(out)
    (service,) = document["services"]
    assert service["verdict"] == "live"
    assert "PWNED" in json.dumps(document)  # the payload is there, as visible escapes
    assert not UNSAFE.search(json.dumps(document, ensure_ascii=False))


@pytest.mark.integration
def test_bad_strings_in_a_probe_answer_reach_no_screen_or_modal(
    hostile: tuple[Sshd, Path], live: Server, tmp_path: Path
) -> None:
    """The banner, the launch pane, the log pane and the kill and replace modals (the
    kill modal's ``user`` set the pane title once) draw the host's words escaped."""
    server, control = hostile
    poison(control, ["probe", "serve-probes"])
    with live.log.open("ab") as log:  # a line of the log itself, with the payload's bytes
        log.write(
            b"[2026-12-01 10:00:00] " + PAYLOAD.encode("utf-8", "surrogatepass") + b" LOGLINE\n"
        )
    config = parse_config(config_for(tmp_path, server, live.log, live.port).read_text())
    host = config.hosts["h"]

    async def scenario() -> None:
        app = BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))
        async with app.run_test(size=(160, 50)) as pilot:
            await until(
                lambda: (
                    getattr(app.screen, "assessment", None) is not None
                    and app.screen.assessment.verdict is Verdict.LIVE
                ),
                "a live verdict",
                pilot=pilot,
            )
            await until(lambda: "LOGLINE" in screen_text(app), "the log line", pilot=pilot)
            assert_clean(screen_text(app), shown=False)
            for key in ("K", "R"):  # the kill modal, the replace (kill and relaunch) modal
                await pilot.press(key)
                modal = await modal_of(pilot)
                text = screen_text(app)
                assert_clean(text)
                assert "[/][reverse]" in text  # Rich markup from a host is text, not style
                modal.dismiss(None)
                await until(lambda: app.screen is not modal, "the modal closed", pilot=pilot)  # noqa: B023

    asyncio.run(scenario())


@pytest.mark.integration
def test_the_fleet_view_draws_a_hosts_words_escaped(
    hostile: tuple[Sshd, Path], live: Server, tmp_path: Path
) -> None:
    from tui.app.fleet_rows import Fleet
    from tui.app.screens.fleet import FleetScreen
    from tui.commands.status import select

    server, control = hostile
    poison(control, ["probe", "serve-probes"])
    config = parse_config(config_for(tmp_path, server, live.log, live.port).read_text())
    fleet = Fleet.of(select(config, []), "all hosts")

    async def scenario() -> None:
        app = BabysitApp(fleet, sessions=Sessions(interval=0.2))
        async with app.run_test(size=(160, 30)) as pilot:
            await until(
                lambda: isinstance(app.screen, FleetScreen) and all(app.screen.answers.values()),
                "the fleet's first answers",
                pilot=pilot,
            )
            await pilot.pause()
            fleet_screen = app.screen
            assert_clean(screen_text(app), shown=False)
            await pilot.press("enter")  # the service's host screen, from the fleet
            await until(lambda: app.screen is not fleet_screen, "the host screen", pilot=pilot)
            await pilot.press("K")
            await modal_of(pilot)
            assert_clean(screen_text(app))

    asyncio.run(scenario())


@pytest.mark.integration
def test_kill_progress_shows_the_hosts_event_fields_escaped(
    hostile: tuple[Sshd, Path], live: Server, tmp_path: Path
) -> None:
    server, control = hostile
    config = config_for(tmp_path, server, live.log, live.port)
    poison(control, ["kill", "probe"])
    result = run_cli("kill", "h/qwen", "--pid", str(live.pid), "--config", str(config))
    output = decoded(result.stdout) + decoded(result.stderr)
    assert_clean(output)
    assert "SIGTERM" in output, output


@pytest.mark.integration
def test_check_shows_the_hosts_user_hostname_kernel_and_python_escaped(
    hostile: tuple[Sshd, Path], tmp_path: Path
) -> None:
    server, control = hostile
    control.unlink(missing_ok=True)
    shims = tmp_path / "shims"
    shims.mkdir()
    bin_dir = server.root / "bin"
    hostile_words = PAYLOAD.replace("\ud800", "").encode()
    made = []
    for name in ("id", "uname", "nvidia-smi"):
        shim = bin_dir / name
        script = shims / f"{name}.py"
        script.write_bytes(b"import sys\nsys.stdout.buffer.write(%r)\n" % hostile_words)
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}"\n')
        shim.chmod(0o755)
        made.append(shim)
    try:
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n" + "".join(f"  {x}\n" for x in server.host_yaml("h").splitlines())
        )
        for extra in ((), ("--json",)):
            result = run_cli("check", "h", "--config", str(config), *extra)
            assert_clean(decoded(result.stdout) + decoded(result.stderr))
    finally:
        for shim in made:
            shim.unlink()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"t": "failed", "message": PAYLOAD}, "the server did not start"),
        ({"t": "launched", "pid": "1234"}, "answer to the launch was unreadable"),
    ],
    ids=["hostile-message", "bad-shape"],
)
def test_relaunch_progress_shows_the_hosts_words_escaped_and_never_guesses(
    hostile: tuple[Sshd, Path], tmp_path: Path, answer: dict[str, object], said: str
) -> None:
    server, control = hostile
    port = free_port()
    config = config_for(tmp_path, server, tmp_path / "server.log", port)
    answer_with(control, ["launch"], json.dumps(answer))
    try:
        result = run_cli("relaunch", "h/qwen", "--config", str(config))
        output = decoded(result.stdout) + decoded(result.stderr)
        assert result.returncode != 0, output
        assert said in output, output
        assert "Traceback" not in output
        assert_clean(output, shown=answer["t"] == "failed")
    finally:
        kill_port(port)  # the real agent did start the server: its answer was changed


# ---------------------------------------------------------------------- item 9: bad answers

DEEP = '{"services": ' + "[" * 5000 + "]" * 5000 + "}"
WRONG_TYPES = json.dumps(
    {
        "boot_id": "b",
        "now": 1.0,
        "services": [{"name": "qwen", "runs": ["str"], "log": {"path": "/x"}}],
    }
)
HUGE_TIME = json.dumps(
    {
        "boot_id": "b",
        "now": 1e300,
        "services": [
            {"name": "qwen", "log": {"path": "/x", "regular": True, "dev": 1, "inode": 2,
                                     "size": 3, "mtime": 1e300}, "runs": []}
        ],
    }
)  # fmt: skip
HUGE_INT = (
    '{"boot_id": "b", "now": 1, "services": [{"name": "qwen", "health": ' + "9" * 5000 + "}]}"
)
LAST_SECOND = json.dumps(
    {
        "now": 1.0,
        "utc_offset": 3600,
        "services": [{"name": "qwen", "log": {"path": "/x", "regular": True, "dev": 1,
                                              "inode": 2, "size": 3, "mtime": 253402300799}}],
    }
)  # fmt: skip
NOT_AN_OBJECT = '["services"]'
BAD_FILES = json.dumps(
    {
        "boot_id": "b",
        "now": 1.0,
        "services": [
            {"name": "qwen", "log": {"path": "/x"},
             "runs": [{"pid": 5, "start_ticks": 1, "start_time": 1.0, "files": [7]}]}
        ],
    }
)  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize(
    ("line", "said"),
    [
        (DEEP, "nested deeper than"),
        (WRONG_TYPES, "runs[0] is a string, not an object"),
        (HUGE_TIME, "not a time babysit can show"),
        (HUGE_INT, "is not JSON"),
        (NOT_AN_OBJECT, "is a list, not an object"),
        (BAD_FILES, "files[0] is a number, not an object"),
        ("\x1b]0;PWNED\x07 not json", "is not JSON"),
        ('{"now": NaN, "services": [{"name": "qwen"}]}', "is not JSON"),
        ('{"now": 1, "utc_offset": 86400, "services": [{"name": "qwen"}]}', "not a time zone"),
        (LAST_SECOND, "not a time babysit can show"),
    ],
    ids=[
        "deep",
        "wrong-types",
        "huge-time",
        "huge-int",
        "not-an-object",
        "bad-files",
        "garbage",
        "nan",
        "a-day-offset",
        "last-second-east",
    ],
)
def test_a_bad_probe_answer_is_unknown_in_one_line_and_json_keeps_its_envelope(
    hostile: tuple[Sshd, Path], tmp_path: Path, line: str, said: str
) -> None:
    server, control = hostile
    answer_with(control, ["probe"], line)
    config = config_for(tmp_path, server, tmp_path / "server.log", free_port())
    result = run_cli("status", "h", "--config", str(config), "--json")
    err = decoded(result.stderr)
    assert "Traceback" not in err, err
    assert result.returncode == 3, err
    document = json.loads(result.stdout)
    (service,) = document["services"]
    assert service["verdict"] == "unknown"
    assert said in service["summary"], service["summary"]
    assert "\n" not in service["summary"]
    assert_clean(decoded(result.stdout), shown=False)
    if said not in ("nested deeper than", "runs[0] is a string, not an object"):
        return  # the text output of the others is the same line, shown the same way
    text = run_cli("status", "h", "--config", str(config))
    assert text.returncode == 3
    assert "Traceback" not in decoded(text.stderr)
    assert said in decoded(text.stdout)
    assert_clean(decoded(text.stdout) + decoded(text.stderr), shown=False)


@pytest.mark.integration
@pytest.mark.parametrize(
    "event",
    [
        '{"t": ["signalled"], "seq": "x"}',
        '{"t": "done", "seq": 0, "gpu": {"checked": true, "gpus": ["x"]}}',
        '{"t": "done", "seq": 0, "gpu": {"checked": true, "gpus": [0], "held": [{}]}}',
        '{"t": "done", "seq": 0, "remaining": ["1\\nbabysit: FORGED"]}',
    ],
    ids=["bad-kind", "bad-gpu-index", "bad-held", "forged-line"],
)
def test_a_bad_kill_event_is_said_and_the_kill_is_read_back(
    hostile: tuple[Sshd, Path], live: Server, tmp_path: Path, event: str
) -> None:
    """The host's kill events are garbage: said in plain words, no traceback, and what
    happened is read back from the kill's record (which the stand-in leaves as it is)."""
    server, control = hostile
    config = config_for(tmp_path, server, live.log, live.port)
    answer_with(control, ["kill"], event)
    result = run_cli("kill", "h/qwen", "--pid", str(live.pid), "--config", str(config))
    output = decoded(result.stdout) + decoded(result.stderr)
    assert "Traceback" not in output
    assert "unreadable kill event" in output, output
    assert_clean(output, shown=False)


# ---------------------------------------------------------------------- tail: host file names


@pytest.fixture
def hostile_named_log(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A process whose stdout is a file named with the payload (bytes a file name may
    hold: no NUL, no slash), and whose lines carry bidi controls."""
    name = PAYLOAD.replace("\x00", "").replace("\ud800", "").replace("/", "")
    log = tmp_path / ("log" + name + ".log")
    with log.open("wb") as out:
        writer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, time\n"
                "sys.stdout.write('ok \\u202eevil\\u202c line\\n'); sys.stdout.flush()\n"
                "time.sleep(60)",
            ],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    wait_until(lambda: log.stat().st_size > 0, 10, "the writer's first line")
    try:
        yield log, writer
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.integration
@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_tail_pid_shows_a_hostile_file_name_escaped(
    sshd: Sshd,
    tmp_path: Path,
    hostile_named_log: tuple[Path, subprocess.Popen[bytes]],
    json_out: bool,
) -> None:
    _, writer = hostile_named_log
    plain = tmp_path / "plain.log"
    plain.write_text("x\n")
    sshd.add_container(105)
    services = f"  services:\n    s:\n      engine: sglang\n      log: {json.dumps(str(plain))}\n"
    config = tmp_path / "hosts.yaml"
    config.write_text(
        hosts_yaml(
            "here:\n  local: true\n" + services,
            sshd.host_yaml("viassh") + services,
            sshd.pct_host_yaml("viapct", 105) + services,
        )
    )
    for host in ("here", "viassh", "viapct"):
        result = run_cli(
            "tail", f"{host}/s", "--pid", str(writer.pid), "--config", str(config),
            *(("--json",) if json_out else ()),
        )  # fmt: skip
        output = decoded(result.stdout) + decoded(result.stderr)
        assert result.returncode == 0, output
        assert_clean(output, shown=True)
        assert "evil" in output and "\u202e" not in output


@pytest.mark.integration
def test_hosts_lists_a_config_as_printable_text(tmp_path: Path) -> None:
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n  h:\n    local: true\n    services:\n      s:\n        engine: sglang\n"
        '        log: "/tmp/a\\e]0;PWNED\\a\\u202eSTRIKE.log"\n'
    )
    result = run_cli("hosts", "--config", str(config))
    assert_clean(decoded(result.stdout) + decoded(result.stderr), shown=False)
    assert "Traceback" not in decoded(result.stderr)


@pytest.mark.unit
def test_a_port_the_host_cannot_attribute_keeps_the_kill_from_saying_it_is_closed() -> None:
    """The agent says who holds the port in words when it cannot read the holder: the
    kill's end is still read, and says the port is held, never "closed"."""
    from tui.core.answers import decode
    from tui.ops.kill import KillTarget, _event
    from tui.ops.kill_outcome import outcome_of

    done = decode(
        '{"t": "done", "seq": 3, "remaining": [], "port_owners": ["unknown (not readable)"]}',
        "a kill event",
    )
    outcome = outcome_of([_event(done)])
    target = KillTarget(boot_id="b", processes=((10, 1),), port=8000)
    summary = outcome.summary(target, 8000)
    assert "port 8000 is still held by" in summary and "unknown (not readable)" in summary


@pytest.mark.integration
def test_a_bad_entry_of_one_service_leaves_the_others_assessed(
    hostile: tuple[Sshd, Path], tmp_path: Path
) -> None:
    server, control = hostile
    services = (
        "  services:\n"
        "    a: {engine: sglang, log: /nonexistent/a.log}\n"
        "    b: {engine: sglang, log: /nonexistent/b.log}\n"
    )
    config = tmp_path / "hosts.yaml"
    config.write_text(hosts_yaml(server.host_yaml("h") + services))
    line = json.dumps(
        {
            "now": 1.0,
            "services": [{"name": 42}, {"name": "b", "log": {"path": "/nonexistent/b.log"}}],
        }
    )
    answer_with(control, ["probe"], line)
    result = run_cli("status", "h", "--config", str(config), "--json")
    verdicts = {s["service"]: s for s in json.loads(result.stdout)["services"]}
    assert verdicts["a"]["verdict"] == "unknown"
    assert "says nothing of a" in verdicts["a"]["summary"]
    assert verdicts["b"]["verdict"] == "dead", verdicts["b"]["summary"]
