"""How the agent is started: no request's text in any command line, babysit's own
processes never taken for a server, and a login shell that prints is skipped and named."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psutil
import pytest
from support.servers import Server
from support.sshd import Sshd, start_sshd

from tui.cli import main
from tui.config import Host
from tui.core.follow import Start
from tui.core.logcursor import EventKind, EventRow, LogLine
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.agentcall import BOOTSTRAP, Preamble, start_mark
from tui.remote.follow import Follower
from tui.remote.probe import ProbeChannel, probe_host

#: A login shell that greets every login, interactive or not (a .bashrc that echoes).
READY = "The server is fired up and ready to roll!"
CHATTY = 'ForceCommand printf "Welcome to gpu-box (ubuntu 24.04)\\n"; eval "$SSH_ORIGINAL_COMMAND"'


@pytest.fixture(scope="module")
def chatty_sshd(tmp_path_factory: pytest.TempPathFactory):
    server = start_sshd(tmp_path_factory.mktemp("chatty-sshd"), extra=[CHATTY])
    try:
        yield server
    finally:
        server.stop()


def host_with(log: Path, match: str) -> Host:
    text = (
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      qwen: {{engine: sglang, log: {json.dumps(str(log))}, match: {json.dumps(match)}}}\n"
    )
    return parse_config(text).hosts["gpu"]


def command_lines_holding(text: str) -> list[tuple[int, list[str]]]:
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any(text in part for part in cmdline):
            found.append((process.info["pid"], cmdline))
    return found


@pytest.mark.integration
async def test_a_match_that_names_its_own_text_finds_no_run(
    transport: Transport, tmp_path: Path
) -> None:
    """The request carries the service's match regex; were it in a command line, the
    agent (or the shell that started it) would match itself and be taken for the run."""
    log = tmp_path / "qwen-serve.log"
    log.write_text("an old run's last line\n")
    host = host_with(log, r"--served-model-name qwen-babysit-test")
    channel = ProbeChannel(transport)
    try:
        for assessment in [
            *await probe_host(transport, host),
            *await probe_host(transport, host, channel=channel),
        ]:
            assert assessment.run is None, assessment.summary
            assert assessment.verdict is Verdict.DEAD, assessment.summary
    finally:
        await channel.close()


@pytest.mark.integration
async def test_no_request_text_is_in_any_command_line(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "needle-7f3a.log"
    log.write_text("line 1\n")
    follower = Follower(transport, str(log), label="t", start=Start(from_start=True))
    rows = follower.rows()
    seen: list[str] = []
    async with asyncio.timeout(30):
        async for batch in rows:
            seen += [r.text for r in batch if isinstance(r, LogLine)]
            if "line 1" in seen:
                break
    try:
        # The agent runs now, and its whole request (the log's path) is on its stdin.
        assert command_lines_holding(BOOTSTRAP)
        assert command_lines_holding("needle-7f3a") == []
    finally:
        await rows.aclose()


@pytest.mark.unit
def test_the_start_mark_is_found_across_chunks_and_what_precedes_it_kept() -> None:
    mark = start_mark("00ff")
    stream = b"Welcome\r\n\x1b]0;title\x07motd" + mark + b'{"answer": 1}\n'
    for size in (1, 2, 3, 7, len(stream)):
        preamble = Preamble(mark)
        out = b"".join(preamble.feed(stream[i : i + size]) for i in range(0, len(stream), size))
        assert out == b'{"answer": 1}\n'
        assert preamble.chatter == b"Welcome\r\n\x1b]0;title\x07motd"


@pytest.mark.unit
def test_output_without_the_mark_is_never_taken_for_the_agent() -> None:
    preamble = Preamble(start_mark("00ff"))
    assert preamble.feed(b'{"services": []}\n' * 100) == b""
    preamble.finish()
    assert not preamble.found


@pytest.mark.integration
@pytest.mark.sshd
class TestChattyLoginShell:
    @pytest.fixture
    async def via(self, chatty_sshd: Sshd):
        chatty_sshd.add_container(105)
        text = "hosts:\n" + "".join(
            "  " + line + "\n"
            for line in (
                chatty_sshd.host_yaml("box") + chatty_sshd.pct_host_yaml("ct", 105)
            ).splitlines()
        )
        config = parse_config(text)
        links = SshLinks()
        try:
            yield lambda name: open_transport(config.hosts[name], links)
        finally:
            await links.close()

    @pytest.mark.parametrize("name", ["box", "ct"])
    async def test_the_probe_answers_each_question_in_step(
        self, via, name: str, tmp_path: Path, servers: list[Server]
    ) -> None:
        transport = via(name)
        live_log, dead_log = tmp_path / "live.log", tmp_path / "dead.log"
        dead_log.write_text("old\n")
        server = Server(live_log)
        servers.append(server)
        server.wait_for(READY)
        live_entry = f"engine: sglang, log: {json.dumps(str(live_log))}, port: {server.port}"
        text = (
            "hosts:\n  gpu:\n    local: true\n    services:\n"
            f"      live: {{{live_entry}}}\n"
            f"      dead: {{engine: sglang, log: {json.dumps(str(dead_log))}}}\n"
        )
        host = parse_config(text).hosts["gpu"]
        live, dead = host.services["live"], host.services["dead"]
        one_shot = await probe_host(transport, host)
        assert [a.verdict for a in one_shot] == [Verdict.LIVE, Verdict.DEAD]
        channel = ProbeChannel(transport)
        try:
            # Were the greeting read as the first answer, every answer would be the
            # previous question's: a different service, so a different verdict.
            for chosen, verdict in [([live], Verdict.LIVE), ([dead], Verdict.DEAD)] * 2:
                [answer] = await probe_host(transport, host, chosen, channel=channel)
                assert (answer.service, answer.verdict) == (chosen[0].name, verdict)
        finally:
            await channel.close()

    async def test_tail_names_the_greeting_and_shows_the_lines(self, via, tmp_path: Path) -> None:
        log = tmp_path / "serve.log"
        log.write_text("".join(f"line {i}\n" for i in range(5)))
        follower = Follower(
            via("box"), str(log), label="t", start=Start(from_start=True), follow=False
        )
        rows = [row async for batch in follower.rows() for row in batch]
        lines = [r.text for r in rows if isinstance(r, LogLine)]
        assert lines == [f"line {i}" for i in range(5)]
        [note] = [
            r.event
            for r in rows
            if isinstance(r, EventRow) and r.event.kind is EventKind.SHELL_CHATTER
        ]
        assert "'Welcome to gpu-box (ubuntu 24.04)'" in note.message
        assert "non-interactive login" in note.message

    def test_check_names_the_greeting(
        self, chatty_sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "serve.log"
        log.write_text("x\n")
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n"
            + "".join(
                "  " + line + "\n"
                for line in chatty_sshd.host_yaml(
                    "box", services={"qwen": {"log": str(log)}}
                ).splitlines()
            )
        )
        assert main(["check", "box", "--config", str(config), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["user"] == chatty_sshd.user  # the greeting is not taken for a field
        assert report["problems"] == []
        [note] = report["warnings"]
        assert "'Welcome to gpu-box (ubuntu 24.04)'" in note and "non-interactive" in note
        assert main(["check", "box", "--config", str(config)]) == 0
        text = capsys.readouterr().out
        assert "all good" not in text and "Welcome to gpu-box" in text
