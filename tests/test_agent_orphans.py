"""Orphans and leftovers on real processes: who owns each GPU process, which processes
hold GPU memory for no configured service, and a worker whose server died is never a
run — through the agent, over every transport, with the nvidia-smi stand-in."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.servers import free_port
from support.wait import wait_until

from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote.probe import probe_host
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

#: A worker title of the vLLM engine (tui/engines/vllm EngineSpec.workers).
WORKER_TITLE = "VLLM::Worker_TP1"
VLLM_READY = "INFO:     Application startup complete.\n"


def host_of(services: dict[str, dict[str, object]]):
    lines = "".join(f"      {name}: {json.dumps(body)}\n" for name, body in services.items())
    return parse_config(f"hosts:\n  gpu:\n    local: true\n    services:\n{lines}").hosts["gpu"]


class Titled:
    """A process whose argv[0] is ``title`` (``exec -a``), its output appended to
    ``log`` as a server's worker's is: what a worker looks like once its server died."""

    def __init__(self, title: str, log: Path) -> None:
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", 'exec -a "$0" sleep 600', title],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        wait_until(self._titled, 10, f"pid {self.proc.pid} titled {title}")
        self.title = title

    def _titled(self) -> bool:
        try:
            return Path(f"/proc/{self.proc.pid}/cmdline").read_bytes().startswith(b"VLLM::")
        except OSError:
            return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def titled() -> Iterator[list[Titled]]:
    started: list[Titled] = []
    try:
        yield started
    finally:
        for process in started:
            process.stop()


async def test_a_worker_left_holding_the_log_is_no_run_and_the_service_is_dead(
    transport: Transport, tmp_path: Path, titled: list[Titled]
) -> None:
    """The worker writes the log and the ready line comes after it started: still no
    run of the service, and the verdict names it."""
    log = tmp_path / "vllm.log"
    worker = Titled(WORKER_TITLE, log)
    titled.append(worker)
    with log.open("a") as out:
        out.write(VLLM_READY)
    host = host_of({"v": {"engine": "vllm", "log": str(log), "port": free_port()}})
    (result,) = await probe_host(transport, host)
    assert result.verdict is Verdict.DEAD, result.summary
    assert result.run is None
    assert f"its worker {worker.pid} lives on" in result.summary
    assert "holding the log open" in result.summary
