"""``babysit export``'s command line: what it refuses, in plain words, before it asks any host."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tui.cli import main
from tui.commands.export import loopback, parse_listen
from tui.errors import UsageError

pytestmark = pytest.mark.unit

HOSTS = "here:\n  local: true\n  services:\n    a: {engine: sglang, log: /tmp/a.log}\n"


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["export", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("babysit: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("127.0.0.1:9753", ("127.0.0.1", 9753)),
        ("[::1]:0", ("::1", 0)),
        ("localhost:9100", ("localhost", 9100)),
        ("0.0.0.0:9753", ("0.0.0.0", 9753)),  # noqa: S104 - parsed, never bound here
    ],
)
def test_listen_addresses_parse(given: str, expected: tuple[str, int]) -> None:
    assert parse_listen(given) == expected


@pytest.mark.parametrize("given", ["127.0.0.1", ":9753", "127.0.0.1:http", "[::1]:70000", ""])
def test_a_listen_address_without_a_port_is_refused(given: str) -> None:
    with pytest.raises(UsageError, match="give ADDRESS:PORT"):
        parse_listen(given)


def test_only_loopback_addresses_are_loopback() -> None:
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0") and not loopback("192.0.2.1") and not loopback("gpu.example")  # noqa: S104


def test_bad_arguments_are_said_before_any_host_is_asked(
    write_config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(HOSTS))
    assert "--every 0" in refused(capsys, "--every", "0", "--config", config)
    assert "--every inf" in refused(capsys, "--every", "inf", "--config", config)
    assert "no such folder" in refused(
        capsys, "--textfile", str(tmp_path / "none"), "--config", config
    )
    assert "no host 'nosuch'" in refused(capsys, "nosuch", "--config", config)


def test_a_port_in_use_is_said(write_config, capsys: pytest.CaptureFixture[str]) -> None:
    config = str(write_config(HOSTS))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = refused(capsys, "--listen", f"127.0.0.1:{port}", "--config", config)
    assert f"cannot listen on 127.0.0.1:{port}" in err
