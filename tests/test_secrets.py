"""Secrets in launch commands and environments: never in a command line on the host,
never shown or stored by babysit, still compared.

A ``launch.env`` value travels on the agent's stdin and reaches the server through its
environment only; every value of a secret-named flag or variable (``--api-key``,
``--hf-token=…``, ``HF_TOKEN``) is ``<redacted, N chars>`` in ``status`` (text and
JSON), both modals, the launch pane, the ``started pid`` line, the audit log, the
host's run record and the marker line in the server's log; the launch diff still says
whether the key that runs is the one meant. The audit log and the run records are
0600 in folders of 0700.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.servers import REPO, free_port, sim_argv, wait_until
from support.sshd import Sshd
from support.wait import until
from test_app_actions import modal_of, verdict
from test_app_host_screen import screen_text

from tui.app.app import BabysitApp, HostView
from tui.app.widgets.launch_pane import LaunchPane
from tui.cli import main
from tui.core.launch.diff import FlagStatus, launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.secrets import Redacted, command_text, redact_argv, redact_env, secret_name
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote.agentcall import AGENT_MARK
from tui.session.sessions import Sessions

READY = "The server is fired up and ready to roll!"
VMID = 105


def unique(prefix: str) -> str:
    return prefix + secrets.token_hex(8)


def config_text(
    kind: str, sshd: Sshd | None, log: Path, port: int, *, command: list[str], env: dict[str, str]
) -> str:
    """hosts.yaml with host ``h`` (reached ``kind``-ly) and one service ``qwen``."""
    if kind == "local":
        entry = "h:\n  local: true\n"
    elif kind == "ssh":
        assert sshd is not None
        entry = sshd.host_yaml("h")
    else:
        assert sshd is not None
        sshd.add_container(VMID)
        entry = sshd.pct_host_yaml("h", VMID)
    launch = {"cwd": str(REPO), "env": {"PYTHONPATH": str(REPO), **env}, "command": command}
    body = entry.rstrip("\n") + (
        "\n  services:\n    qwen:\n"
        f"      engine: sglang\n      log: {json.dumps(str(log))}\n      port: {port}\n"
        f"      match: {json.dumps(f'tui sim .*--port {port} ')}\n"
        f"      launch: {json.dumps(launch)}\n"
    )
    return "hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())


def secret_command(port: int, key: str, token: str) -> list[str]:
    """A sim whose command line carries a key in both forms (``--flag value``, ``--flag=value``)."""
    return sim_argv("sglang", port, load=0.3, extra=("--api-key", key, f"--hf-token={token}"))


@contextlib.contextmanager
def sim_by_hand(log: Path, port: int, key: str, token: str) -> Iterator[subprocess.Popen[bytes]]:
    """A sim started by hand (``cmd >> log 2>&1 &``) with secrets in its argv."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            secret_command(port, key, token),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
    try:
        wait_until(lambda: READY in log.read_text(errors="replace"), 20, "the sim's ready line")
        yield proc
    finally:
        end_session(proc.pid)
        proc.wait(10)


def end_session(pid: int) -> None:
    """SIGKILL the session a test's own sim leads (it was started in one of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


class CmdlineWatch:
    """Reads /proc/PID/cmdline of every process on the machine, again and again, in a
    thread: each process whose command line holds a needle is kept with its session."""

    def __init__(self, needles: list[str]) -> None:
        self.needles = [n.encode() for n in needles]
        self.hits: list[tuple[int, int | None, bytes]] = []
        self.agents_seen = 0
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CmdlineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def scan(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if AGENT_MARK.encode() in data:
                self.agents_seen += 1
            if any(n in data for n in self.needles):
                pid = int(entry.name)
                try:
                    session: int | None = os.getsid(pid)
                except OSError:
                    session = None
                self.hits.append((pid, session, data))
        self.passes += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.scan()


def assert_private(path: Path, mode: int) -> None:
    assert stat.S_IMODE(path.stat().st_mode) == mode, f"{path}: {oct(path.stat().st_mode)}"


def secret_free(text: str, *values: str) -> None:
    for value in values:
        assert value not in text, f"the secret {value[:3]}… is shown"


def row(status: dict[str, Any], dest: str) -> dict[str, Any]:
    (service,) = status["services"]
    return next(r for r in service["launch"]["rows"] if r["dest"] == dest)


# ---------------------------------------------------------------------- what a secret is


@pytest.mark.unit
def test_secret_names_and_every_form_of_their_values() -> None:
    for name in (
        "--api-key",
        "--hf-token",
        "--ssl-keyfile-password",
        "--token",
        "--password",
        "--secret",
        "--admin-api-key",
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWD",
    ):
        assert secret_name(name), name
    for name in ("--max-tokens", "--tokenizer", "--ssl-keyfile", "--port", "PYTHONPATH", "--tp"):
        assert not secret_name(name), name

    key, token, env_value = unique("sk-"), unique("hf_"), unique("x")
    argv = [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--api-key",
        key,
        f"--hf-token={token}",
        f"OPENAI_API_KEY={env_value}",
        "--max-tokens",
        "512",
        "--ssl-keyfile",
        "/etc/k.pem",
        "sh -c " + json.dumps(f"exec server --token {key} --port 1"),
    ]
    shown = redact_argv(argv)
    text = json.dumps(list(shown)) + command_text(argv)
    secret_free(text, key, token, env_value)
    assert tuple(map(str, shown[3:9])) == (
        "--api-key",
        "<redacted, 19 chars>",
        "--hf-token=<redacted, 19 chars>",
        "OPENAI_API_KEY=<redacted, 17 chars>",
        "--max-tokens",
        "512",
    )
    assert "/etc/k.pem" in shown and "--port 1" in shown[-1]
    assert "--api-key <redacted, 19 chars> --hf-token=<redacted, 19 chars>" in command_text(argv)
    assert redact_argv(shown) == shown, "idempotent"
    again = redact_argv(json.loads(json.dumps(list(shown))))
    assert list(map(str, again)) == list(map(str, shown)), "also as plain text"
    # Equal values give equal words, other values other words; a placeholder is no value.
    assert redact_argv(["--api-key", key]) == redact_argv(["--api-key", key])
    assert redact_argv(["--api-key", key]) != redact_argv(["--api-key", unique("sk-")])
    assert isinstance(shown[4], Redacted) and shown[4] != "<redacted, 19 chars>"
    env = redact_env({"HF_TOKEN": token, "HOME": "/h"})
    assert {name: str(value) for name, value in env.items()} == {
        "HF_TOKEN": "<redacted, 19 chars>",
        "HOME": "/h",
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    "script",
    [
        "cd /srv && vllm serve m --api-key SECRETVALUE",
        "vllm serve m --api-key SECRETVALUE",
        "export HF_TOKEN=SECRETVALUE; vllm serve m",
        'python -m sglang.launch_server --api-key="SECRETVALUE" --port 1',
        "vllm serve m \\\n  --api-key SECRETVALUE \\\n  --port 3",
        "HF_TOKEN=SECRETVALUE exec python3 -m sglang.launch_server --max-tokens 5",
        "vllm serve m --api-key=SECRET'VALUE' --port 1",
        'vllm serve m --api-key SECR"ETVALUE"',
        "vllm serve m --api-key SECRET\\ VALUE",
        "HF_TOKEN=$(cat /run/SECRETVALUE) vllm serve m",
    ],
)
def test_a_secret_in_a_shell_script_is_redacted_wherever_it_stands(script: str) -> None:
    """Every word of a ``sh -c`` script is looked at as a name, also the word after one
    that is no secret; the rest of the script stays readable."""
    shown = command_text(["bash", "-c", script])
    assert "SECRET" not in shown.replace("<redacted", "")
    assert "VALUE" not in shown
    assert "<redacted, " in shown
    assert "vllm serve" in shown or "sglang" in shown


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "kept"),
    [
        (["env", "HF_TOKEN=SECRET VALUE", "vllm", "serve"], "vllm serve"),
        (["env", "DB_PASSWORD=correct horse battery", "x"], "x"),
        (["docker", "run", "--env=HF_TOKEN=SECRETVALUE", "img"], "img"),
        (["docker", "run", "--env", "HF_TOKEN=SECRETVALUE", "img"], "img"),
        (["sh", "-c", "cp /etc/ssl/private-key /tmp/x --max-tokens 5"], "/tmp/x --max-tokens 5"),
    ],
)
def test_a_secret_in_an_assignment_word_is_redacted_whole(argv: list[str], kept: str) -> None:
    shown = command_text(argv)
    assert "SECRET" not in shown and "horse" not in shown
    assert kept in shown


@pytest.mark.unit
def test_the_launch_diff_says_same_or_differs_and_never_the_value() -> None:
    meant, other, token = unique("sk-"), unique("sk-"), unique("hf_")
    intended = ["python3", "-m", "sglang.launch_server", "--api-key", meant, f"--hf-token={token}"]
    actual = ["python3", "-m", "sglang.launch_server", "--api-key", other, "--hf-token", token]
    line = f"[2026-05-09 09:22:05] server_args=ServerArgs(api_key={other!r}, hf_token={token!r})"
    reported = parse_reported(line)
    assert reported is not None
    diff = launch_diff(intended, actual, reported)
    rows = {r.dest: r for r in diff.rows}
    assert rows["api_key"].status is FlagStatus.CHANGED
    assert rows["hf_token"].status is FlagStatus.SAME
    assert [c.flag for c in diff.changed] == ["--api-key"]
    assert rows["api_key"].intended == rows["api_key"].actual == "<redacted, 19 chars>"
    secret_free(json.dumps(diff.to_json()), meant, other, token)
    # Against the report alone (no argv known): the printed key is compared too.
    alone = {r.dest: r for r in launch_diff(intended, None, reported).rows}
    assert alone["api_key"].status is FlagStatus.CHANGED
    assert alone["hf_token"].status is FlagStatus.SAME
    same = launch_diff(intended, intended, parse_reported(line.replace(other, meant)))
    assert same.clean, same.to_json()
    # A server that prints the key masked (SGLang >= 0.5.22) says nothing of it: the argv
    # decides, and without one it is unchecked, never "changed".
    masked = parse_reported(line.replace(repr(other), "'<redacted>'"))
    assert masked is not None and masked.values["api_key"] == "<redacted>"
    by_argv = {r.dest: r for r in launch_diff(intended, intended, masked).rows}
    assert by_argv["api_key"].status is FlagStatus.SAME
    by_report = {r.dest: r for r in launch_diff(intended, None, masked).rows}
    assert by_report["api_key"].status is FlagStatus.UNCHECKED


# ---------------------------------------------------------------------- on real hosts


def assert_records_hold_no_secret(*values: str) -> None:
    """The host's run record and this machine's audit log: redacted, and private."""
    host_state = Path(os.environ["BABYSIT_HOST_STATE"])
    record = host_state / "qwen" / "runs.jsonl"
    secret_free(record.read_text(), *values)
    assert json.loads(record.read_text())["env_keys"] == ["HF_TOKEN", "PYTHONPATH"]
    assert_private(record, 0o600)
    assert_private(record.parent, 0o700)
    assert_private(host_state, 0o700)

    audit = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
    secret_free(audit.read_text(), *values)
    assert "<redacted, 19 chars>" in audit.read_text()
    assert_private(audit, 0o600)
    assert_private(audit.parent, 0o700)


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_relaunch_keeps_secrets_out_of_command_lines_screens_and_files(
    kind: str, sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, token, env_value = unique("sk-"), unique("hf_"), unique("hf_")
    log, port = tmp_path / "serve.log", free_port()
    config = tmp_path / "hosts.yaml"
    command = secret_command(port, key, token)
    config.write_text(
        config_text(kind, sshd, log, port, command=command, env={"HF_TOKEN": env_value})
    )
    pid = None
    try:
        with CmdlineWatch([key, token, env_value]) as watch:
            status = main(
                [
                    "relaunch",
                    "h/qwen",
                    "--wait",
                    "--timeout",
                    "30",
                    "--json",
                    "--config",
                    str(config),
                ]
            )
            out, err = capsys.readouterr()
            assert status == 0, out + err
            launched = json.loads(out.splitlines()[0])
            pid = launched["pid"]
            passes = watch.passes
            wait_until(lambda: watch.passes > passes + 1, 10, "a look at /proc after the launch")
        assert watch.agents_seen > 0, "the watch saw babysit's agents at work"
        # The env value is in no command line, ever; the key and token only in the server's
        # own (its session), which holds them by design.
        assert [h for h in watch.hits if env_value.encode() in h[2]] == []
        assert [h for h in watch.hits if h[1] != pid] == []
        assert any(h[0] == pid for h in watch.hits), "the watch saw the server's own argv"
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"HF_TOKEN={env_value}".encode() in environ, "the env reached the server"

        secret_free(out + err, key, token, env_value)
        assert (
            "--api-key <redacted, 19 chars> --hf-token=<redacted, 19 chars>"
            in (launched["message"])
        )
        marker = log.read_text().splitlines()[0]
        assert marker.startswith("babysit run=")
        secret_free(marker, key, token)
        assert '"--api-key", "<redacted, 19 chars>"' in marker

        assert_records_hold_no_secret(key, token, env_value)
        assert main(["status", "--json", "--config", str(config)]) == 0
        out, _ = capsys.readouterr()
        secret_free(out, key, token, env_value)
        report = json.loads(out)
        for dest in ("api_key", "hf_token"):
            found = row(report, dest)
            assert found["status"] == "same", found
            assert found["intended"] == found["actual"] == found["reported"]
            assert found["reported"] == "<redacted, 19 chars>"
        assert main(["status", "--config", str(config)]) == 0
        out, err = capsys.readouterr()
        assert "LIVE" in out
        secret_free(out + err, key, token, env_value)
    finally:
        if pid is not None:
            end_session(pid)


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_a_run_started_by_hand_shows_no_secret_and_a_changed_key_differs(
    kind: str, sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meant, running, token = unique("sk-"), unique("sk-"), unique("hf_")
    log, port = tmp_path / "serve.log", free_port()
    config = tmp_path / "hosts.yaml"
    command = secret_command(port, meant, token)
    config.write_text(
        config_text(kind, sshd, log, port, command=command, env={"HF_TOKEN": unique("hf_")})
    )
    with sim_by_hand(log, port, running, token) as proc:
        assert main(["status", "--json", "--config", str(config)]) == 0
        out, err = capsys.readouterr()
        secret_free(out + err, meant, running, token)
        report = json.loads(out)
        (service,) = report["services"]
        assert service["process"]["pid"] == proc.pid
        assert "<redacted, 19 chars>" in service["process"]["cmdline"]
        assert row(report, "api_key")["status"] == "changed"
        assert row(report, "hf_token")["status"] == "same"
        assert [c["flag"] for c in service["launch"]["changed"]] == ["--api-key"]

        kill = ["kill", "h/qwen", "--pid", str(proc.pid), "--grace", "5"]
        assert main([*kill, "--config", str(config)]) == 0
        out, err = capsys.readouterr()
        secret_free(out + err, meant, running, token)
        audit = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
        (entry,) = [json.loads(x) for x in audit.read_text().splitlines()]
        assert entry["action"] == "kill" and "<redacted, 19 chars>" in entry["command"]
        secret_free(audit.read_text(), meant, running, token)
        assert_private(audit, 0o600)
        assert_private(audit.parent, 0o700)
        kills = Path(os.environ["BABYSIT_HOST_STATE"]) / "qwen" / "kills"
        (record,) = kills.iterdir()
        assert_private(record, 0o600)
        for folder in (kills, kills.parent, kills.parent.parent):
            assert_private(folder, 0o700)


def app_for(log: Path, port: int, command: list[str], env: dict[str, str]) -> BabysitApp:
    host = parse_config(config_text("local", None, log, port, command=command, env=env)).hosts["h"]
    return BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))


@pytest.mark.integration
async def test_the_kill_modal_and_the_launch_pane_show_no_secret(tmp_path: Path) -> None:
    meant, running, token = unique("sk-"), unique("sk-"), unique("hf_")
    log, port = tmp_path / "serve.log", free_port()
    app = app_for(log, port, secret_command(port, meant, token), {"HF_TOKEN": unique("hf_")})
    with sim_by_hand(log, port, running, token) as proc:
        async with app.run_test(size=(140, 44)) as pilot:
            await until(lambda: verdict(app) is Verdict.LIVE, "LIVE", pilot=pilot)
            pane = app.screen.query_one(LaunchPane)
            await until(lambda: "--api-key" in str(pane.render()), "the launch pane", pilot=pilot)
            drawn = str(pane.render())
            secret_free(screen_text(app) + drawn, meant, running, token)
            api_row = next(x for x in drawn.splitlines() if x.startswith("--api-key"))
            token_row = next(x for x in drawn.splitlines() if x.startswith("--hf-token"))
            assert api_row.rstrip().endswith("≠") and token_row.rstrip().endswith("✓")

            await pilot.press("K")
            modal = await modal_of(pilot)
            text = modal.plan.text()
            assert f"pid: {proc.pid}" in text
            assert "--api-key <redacted, 19 chars> --hf-token=<redacted, 19 chars>" in text
            secret_free(text + screen_text(app), meant, running, token)
            await pilot.press("escape")


@pytest.mark.integration
async def test_the_relaunch_modal_shows_no_secret(tmp_path: Path) -> None:
    key, token, env_value = unique("sk-"), unique("hf_"), unique("hf_")
    log, port = tmp_path / "serve.log", free_port()
    app = app_for(log, port, secret_command(port, key, token), {"HF_TOKEN": env_value})
    async with app.run_test(size=(140, 44)) as pilot:
        await until(lambda: verdict(app) is Verdict.DEAD, "DEAD", pilot=pilot)
        await pilot.press("r")
        modal = await modal_of(pilot)
        text = modal.plan.text()
        assert "--api-key <redacted, 19 chars> --hf-token=<redacted, 19 chars>" in text
        assert "HF_TOKEN=<redacted, 19 chars>" in text
        assert f"PYTHONPATH={REPO}" in text
        secret_free(text + screen_text(app), key, token, env_value)
        await pilot.press("escape")
