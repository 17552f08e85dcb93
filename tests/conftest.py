"""Shared fixtures: a real sshd on loopback, and helpers to write hosts.yaml files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sshd import Sshd, start_sshd

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One OpenSSH sshd for the whole run; every test makes its own connections to it."""
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def write_config(tmp_path: Path):
    """Write hosts.yaml text (a ``hosts:`` block is added) and return its path."""

    def write(hosts_text: str, name: str = "hosts.yaml") -> Path:
        body = "hosts:\n" + "".join(f"  {line}\n" for line in hosts_text.splitlines())
        path = tmp_path / name
        path.write_text(body)
        return path

    return write
