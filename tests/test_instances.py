"""``instances: 1024``, the documented maximum, over every transport: every service is
assessed from one probe, whose answer holds a bounded share of each log."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path

import pytest
from support.ports import FIXED
from support.sshd import Sshd

from tui.cli import main
from tui.hostsfile import parse_config
from tui.hostsfile.instances import MAX_INSTANCES
from tui.remote.agentcall import run_agent
from tui.remote.probe import MAX_ANSWER_TAIL, PROBE_TIMEOUT, REPORT_TAIL, probe_request
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

VMID = 105


def instances_yaml(folder: Path, count: int = MAX_INSTANCES) -> str:
    """A service of ``count`` instances, each with its own log in ``folder`` and port (from
    support.ports.FIXED on: no test's server listens there)."""
    port = "{" + f"{FIXED} + i" + "}"  # a template of hosts.yaml, filled in per instance
    return (
        "  services:\n    dp:\n      engine: sglang\n"
        f"      instances: {count}\n"
        f"      log: {json.dumps(str(folder / 'gpu{i}.log'))}\n"
        f"      port: '{port}'\n"
        "      gpus: ['{i}']\n"
        f"      match: 'sglang\\.launch_server .*--port {port}( |$)'\n"
        f"      launch: {{command: [python3, -m, sglang.launch_server, --port, '{port}']}}\n"
    )


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_status_assesses_every_one_of_1024_instances(
    kind: str, sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    sshd.add_container(VMID)
    host = {
        "local": "gpu:\n  local: true\n",
        "ssh": sshd.host_yaml("gpu"),
        "pct": sshd.pct_host_yaml("gpu", VMID),
    }[kind]
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n" + "".join(f"  {line}\n" for line in (host + instances_yaml(logs)).splitlines())
    )
    main(["status", "--json", "--config", str(config)])
    services = json.loads(capsys.readouterr().out)["services"]
    assert [s["service"] for s in services] == [f"dp-{i}" for i in range(MAX_INSTANCES)]
    assert Counter(s["verdict"] for s in services) == {"dead": MAX_INSTANCES}, services[0]
    assert services[-1]["summary"] == (
        f"no SGLang process on gpu and no log at {logs / 'gpu1023.log'}"
    )


async def test_a_probe_answer_holds_a_bounded_share_of_each_log(
    transport: Transport, tmp_path: Path
) -> None:
    share = MAX_ANSWER_TAIL // MAX_INSTANCES
    services = list(
        parse_config(
            "hosts:\n  gpu:\n    local: true\n"
            + "".join(f"  {line}\n" for line in instances_yaml(tmp_path).splitlines())
        )
        .hosts["gpu"]
        .services.values()
    )
    for i, service in enumerate(services):
        line = f"[2026-01-01 00:00:00] instance {i} says hello\n".encode()
        Path(service.log).write_bytes(line * (2 * share // len(line) + 1))
    answer = await run_agent(
        transport, probe_request(services, tail_bytes=REPORT_TAIL), timeout=PROBE_TIMEOUT
    )
    assert answer.ok, answer.completed.stderr
    entries = json.loads(answer.completed.stdout)["services"]
    assert len(entries) == MAX_INSTANCES
    total = 0
    for service, entry in zip(services, entries, strict=True):
        tail = base64.b64decode(entry["log"]["tail"])
        assert tail == Path(service.log).read_bytes()[-share:]
        total += len(tail)
    assert total <= MAX_ANSWER_TAIL
