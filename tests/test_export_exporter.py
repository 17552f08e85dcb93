"""The exporter's probe loops and its HTTP server, in process, with fixed answers.

Real sessions, facts and probe loops (:class:`StandIns` replaces only the host's
answers), the real prometheus_client HTTP server on 127.0.0.1 and the real textfile
writer. The real-Prometheus, real-sshd test is tests/test_export_prometheus.py.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families
from support.sessions import StandIns
from support.wait import until
from test_app_fleet import CONFIG, NOW, sglang_answer

from tui.export import names
from tui.export.exporter import (
    Exporter,
    http_registry,
    refresh_textfile,
    remove_textfile,
    write_textfile,
)

pytestmark = pytest.mark.integration

HOST = CONFIG.hosts["kpro5"]
DP0 = HOST.services["dp-0"]


class Host:
    """The host's answers: live until told it is down, then its link fails."""

    def __init__(self) -> None:
        self.down = False

    def answers(self, host, services):
        if self.down:
            raise ConnectionRefusedError("connection refused on port 22")
        return [sglang_answer(host.name, s, pid=41000, seed=3) for s in services]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def pick(got, name: str, **labels: str) -> float | None:
    for (have, items), value in got.items():
        if have == name and all(dict(items).get(k) == v for k, v in labels.items()):
            return value
    return None


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
        return answer.read().decode()


async def test_a_scrape_reads_the_loops_answers_and_a_host_gone_reads_unknown_never_live():
    host = Host()
    sessions = StandIns(answers=host.answers, interval=0.05, clock=lambda: NOW + 5)
    exporter = Exporter([(HOST, [DP0])], sessions, clock=lambda: NOW + 5)
    loop = asyncio.get_running_loop()
    server, _thread = start_http_server(0, "127.0.0.1", http_registry(exporter, loop))
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        exporter.start()
        await asyncio.wait_for(exporter.first_answers.wait(), 10)
        got = samples(await asyncio.to_thread(get, url))
        assert pick(got, names.VERDICT, service="dp-0", verdict="live") == 1.0
        assert pick(got, names.HOST_UP, host="kpro5") == 1.0
        assert pick(got, names.RUN_INFO, service="dp-0", pid="41000") == 1.0
        observed = pick(got, names.OBSERVED, service="dp-0")
        assert observed is not None
        assert pick(got, "process_cpu_seconds_total") is not None  # the exporter's own

        host.down = True
        watch = sessions.watch(HOST)
        await until(lambda: watch.state.failure is not None, "the host's link to fail")
        got = samples(await asyncio.to_thread(get, url))
        assert pick(got, names.VERDICT, service="dp-0", verdict="unknown") == 1.0
        assert pick(got, names.VERDICT, service="dp-0", verdict="live") == 0.0
        assert pick(got, names.HOST_UP, host="kpro5") == 0.0
        assert pick(got, names.OBSERVED, service="dp-0") == observed
        assert pick(got, names.RUN_INFO, service="dp-0") is None
        assert pick(got, names.READY, service="dp-0") is None

        host.down = False
        await until(lambda: watch.state.failure is None, "the host to answer again")
        got = samples(await asyncio.to_thread(get, url))
        assert pick(got, names.VERDICT, service="dp-0", verdict="live") == 1.0
    finally:
        await asyncio.to_thread(server.shutdown)
        server.server_close()
        await sessions.close()


async def test_the_textfile_is_replaced_whole_by_a_rename_and_a_failed_write_is_said(
    tmp_path: Path,
) -> None:
    sessions = StandIns(answers=Host().answers, clock=lambda: NOW + 5)
    exporter = Exporter([(HOST, [DP0])], sessions, clock=lambda: NOW + 5)
    try:
        await sessions.watch(HOST).refresh([DP0])
        folder = tmp_path / "textfile"
        folder.mkdir()
        path = write_textfile(folder, exporter.families())
        assert path == folder / names.TEXTFILE
        first = path.stat().st_ino
        assert await refresh_textfile(folder, exporter.families()) is None
        assert path.stat().st_ino != first  # renamed over, never written in place
        got = samples(path.read_text())
        assert pick(got, names.VERDICT, service="dp-0", verdict="live") == 1.0
        assert [p.name for p in folder.iterdir()] == [names.TEXTFILE]  # no temp file left

        remove_textfile(folder)
        assert not path.exists()
        remove_textfile(folder)  # twice: nothing to remove is fine
        # A folder that went away: the write fails and says why.
        gone = tmp_path / "gone"
        problem = await refresh_textfile(gone, exporter.families())
        assert problem is not None and "cannot write" in problem and "removed it" in problem
    finally:
        await sessions.close()
