"""The fleet screen against real simulated servers, a real sshd and the pct stand-in.

One host is this machine (``local: true``) with 8 sim instances declared with
``instances: 8``; another is a "container" reached through ``pct exec`` on the
test sshd. The screen, its workers, the agent and the links are all the real
ones; only the refresh interval is short so the tests are quick.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support.ports import free_port_run
from support.servers import Server, VllmLoad
from support.sshd import Sshd, start_sshd
from support.wait import until

from tui.app.app import BabysitApp
from tui.app.fleet_rows import COLUMNS, Fleet
from tui.app.screens.fleet import FleetScreen
from tui.commands.status import select
from tui.config import Config
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

VMID = 131
SIZE = (160, 30)
INTERVAL = 0.3


def indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def sim_service(name: str, log: Path, port: int | None = None) -> str:
    port_text = f", port: {port}" if port else ""
    return f"      {name}: {{engine: sglang, log: '{log}'{port_text}}}\n"


def make_app(config: Config, timeout: float = 5.0) -> BabysitApp:
    fleet = Fleet.of(select(config, []), "all hosts")
    return BabysitApp(fleet, sessions=Sessions(interval=INTERVAL, timeout=timeout), read_only=True)


def verdicts(screen: FleetScreen) -> dict[str, str]:
    return {key: row.verdict for key, row in screen.rows.items()}


def notes(screen: FleetScreen) -> dict[str, str]:
    return {key: row.cells[-1].text for key, row in screen.rows.items()}


async def test_eight_local_instances_and_a_pct_host_one_connection_and_a_host_that_goes_away(
    sshd: Sshd, tmp_path: Path, servers: list[Server]
) -> None:
    base = free_port_run(9)
    for i in range(8):
        servers.append(Server(tmp_path / f"gpu{i}.log", port=base + i, load=0.2))
    servers.append(Server(tmp_path / "ct-a.log", port=base + 8, load=0.2))
    (tmp_path / "ct-b.log").write_text("an old run's last words\n")
    for server in servers:
        server.wait_for("The server is fired up")
    servers[5].kill()  # dp-5's run is gone: DEAD

    sshd.add_container(VMID)
    ct = sshd.pct_host_yaml("ct", VMID).rstrip("\n") + "\n  services:\n"
    ct += sim_service("a", tmp_path / "ct-a.log", base + 8)
    ct += sim_service("b", tmp_path / "ct-b.log")
    here = (
        "here:\n  local: true\n  services:\n    dp:\n      engine: sglang\n"
        "      instances: 8\n"
        f"      log: '{tmp_path}/gpu{{i}}.log'\n"
        f'      port: "{{{base} + i}}"\n'
    )
    config = parse_config("hosts:\n" + indent(here) + indent(ct))
    expected = {f"here/dp-{i}": "LIVE" for i in range(8)}
    expected |= {"here/dp-5": "DEAD", "ct/a": "LIVE", "ct/b": "DEAD"}

    logins = sshd.accepted_logins()
    app = make_app(config)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)

        def all_verdicts_right() -> bool:
            """every verdict right"""
            return verdicts(screen) == expected

        await until(all_verdicts_right, "every verdict right", pilot=pilot)
        # Worst first: the two DEAD rows on top, then the live ones by name.
        assert screen.table.keys[:2] == ["ct/b", "here/dp-5"]
        assert screen.table.keys[2:4] == ["ct/a", "here/dp-0"]
        row = screen.rows["here/dp-3"]
        assert row.cells[2].text == str(servers[3].pid)

        # Several refreshes later, still the one connection to the pct node.
        asked = screen.answers["ct"]
        await until(
            lambda: screen.answers["ct"] >= asked + 4, "four more answers from ct", pilot=pilot
        )
        assert sshd.accepted_logins() - logins == 1

        # The container goes away: only its rows turn UNKNOWN; the local rows go on.
        sshd.add_container(VMID, stopped=True)

        def ct_unknown() -> bool:
            """the pct host's rows UNKNOWN"""
            return verdicts(screen)["ct/a"] == verdicts(screen)["ct/b"] == "UNKNOWN"

        await until(ct_unknown, "the pct host's rows UNKNOWN", pilot=pilot)
        assert notes(screen)["ct/a"].startswith("unreachable — ")
        assert "CT 131 not running" in screen.rows["ct/a"].detail
        here_asked = screen.answers["here"]
        await until(
            lambda: screen.answers["here"] >= here_asked + 3,
            "three more answers from here",
            pilot=pilot,
        )
        assert {k: v for k, v in verdicts(screen).items() if k.startswith("here/")} == {
            k: v for k, v in expected.items() if k.startswith("here/")
        }
        assert screen.table.keys[:2] == ["ct/a", "ct/b"]

        # Back: its rows are right again, on the same connection.
        sshd.add_container(VMID)
        await until(all_verdicts_right, "every verdict right", pilot=pilot)
        assert sshd.accepted_logins() - logins == 1


async def test_a_dead_ssh_host_and_a_closed_port_only_mark_their_own_rows(
    tmp_path: Path, servers: list[Server]
) -> None:
    far = start_sshd(tmp_path / "far-sshd")
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed = sock.getsockname()[1]
        local = Server(tmp_path / "local.log", load=0.2)
        remote = Server(tmp_path / "far.log", load=0.2)
        servers.extend([local, remote])
        for server in servers:
            server.wait_for("The server is fired up")
        far_host = far.host_yaml("far").rstrip("\n") + "\n  services:\n"
        far_host += sim_service("sim", tmp_path / "far.log", remote.port)
        nowhere = far.host_yaml("nowhere", ssh=f"{far.user}@127.0.0.1:{closed}")
        nowhere = nowhere.rstrip("\n") + "\n  services:\n"
        nowhere += sim_service("sim", tmp_path / "nowhere.log")
        here = "here:\n  local: true\n  services:\n"
        here += sim_service("sim", tmp_path / "local.log", local.port)
        config = parse_config("hosts:\n" + indent(here) + indent(far_host) + indent(nowhere))

        app = make_app(config, timeout=1.5)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, FleetScreen)

            def first_answers() -> bool:
                """here and far LIVE, nowhere UNKNOWN"""
                seen = verdicts(screen)
                return seen == {"here/sim": "LIVE", "far/sim": "LIVE", "nowhere/sim": "UNKNOWN"}

            await until(first_answers, "here and far LIVE, nowhere UNKNOWN", pilot=pilot)
            assert notes(screen)["nowhere/sim"].startswith("unreachable — retrying in ")
            assert "connection refused" in screen.rows["nowhere/sim"].detail

            far.stop()  # sshd and every session of it gone, mid-session

            def far_unknown() -> bool:
                """far's row UNKNOWN"""
                return verdicts(screen)["far/sim"] == "UNKNOWN"

            here_asked = screen.answers["here"]
            await until(far_unknown, "far's row UNKNOWN", pilot=pilot)
            # While far did not answer (1.5 s), the local row was refreshed again and again.
            assert screen.answers["here"] >= here_asked + 3
            assert verdicts(screen)["here/sim"] == "LIVE"
            assert notes(screen)["far/sim"].startswith("unreachable — ")
            assert "no answer within 1.5 s" in screen.rows["far/sim"].detail
    finally:
        far.stop()


async def test_a_prometheus_vllm_row_shows_the_throughput_its_counters_give(
    tmp_path: Path, servers: list[Server]
) -> None:
    """vLLM's /metrics has throughput only as a counter: the rows' refreshes read it
    through one reader per run, so from the second refresh on the row has a rate."""
    log = tmp_path / "vllm.log"
    server = Server(log, engine="vllm", load=0.2)
    servers.append(server)
    server.wait_for("Application startup complete.")
    here = (
        "here:\n  local: true\n  services:\n"
        f"    qwen: {{engine: vllm, log: '{log}', port: {server.port}, metrics: prometheus}}\n"
    )
    config = parse_config("hosts:\n" + indent(here))
    gen = [c.key for c in COLUMNS].index("gen")
    load = VllmLoad(server.port)
    try:
        app = make_app(config)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, FleetScreen)

            def throughput() -> float:
                row = screen.rows.get("here/qwen")
                text = row.cells[gen].text if row is not None else "—"
                return float(text.split()[-1].replace(",", "")) if text != "—" else 0.0

            def generating() -> bool:
                """a generation throughput above 0 in the row"""
                return throughput() > 0

            await until(generating, "a generation throughput above 0 in the row", pilot=pilot)
            assert verdicts(screen) == {"here/qwen": "LIVE"}
    finally:
        load.stop()
