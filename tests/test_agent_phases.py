"""The agent's probe finds a starting run's phases in its log, and keeps the run in the
service's run history on the host.

Each test writes a real log like an engine's startup (after an older run's bytes), runs
a real process as the run (``sleep`` holding the log open for writing, placed by the
run record babysit writes at launch) and runs the agent's probe mode: the answer's
``ready.phases`` are this run's, in log order, and ``<record_dir>/startups.json``
holds the run's record; a second run of the service finds the first's; a history
that cannot be written or read is said, and never fails the probe. A container's run
is kept in the history too.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.dockerd import sim_command, wait_running
from support.ports import free_port
from support.wait import until
from test_engines_phases import LLAMACPP_2026, SGLANG_055, TGI_MAIN, VLLM_033, tgi

from tui.agent.protocol import STARTUPS_FILE, STARTUPS_KEPT
from tui.core.runs import ServiceProbe
from tui.engines import SPECS
from tui.hostsfile import parse_config
from tui.remote.agentcall import agent_argv, agent_input, run_agent, split_output
from tui.remote.local import LocalTransport
from tui.remote.probe import probe_request
from tui.remote.transport import Completed

pytestmark = pytest.mark.integration

#: How long the stand-in run sleeps (it is killed sooner).
RUN_SLEEP = 120
#: Each engine's startup as its log holds it, through its ready line and one line more.
STARTUPS = {
    "sglang": SGLANG_055
    + "[2025-11-30 11:18:07] The server is fired up and ready to roll!\n"
    + "[2025-11-30 11:18:20] Decode batch, #running-req: 1, #token: 90, token usage: 0.00,"
    " cuda graph: True, gen throughput (token/s): 61.20, #queue-req: 0\n",
    # uvicorn's ready line carries no stamp of vLLM's
    "vllm": VLLM_033 + "(APIServer pid=7) INFO:     Application startup complete.\n"
    "(APIServer pid=7) INFO 11-30 11:19:00 [loggers.py:123] Engine 000: Avg prompt"
    " throughput: 0.0 tokens/s\n",
    "tgi": TGI_MAIN
    + tgi("router/src/server.rs:2396: Connected", 105, "text_generation_router::server")
    + tgi("Success", 110, "text_generation_router::server"),
    "llamacpp": LLAMACPP_2026
    + "0.05.000.000 I main: server is listening on http://127.0.0.1:8080 - starting the main"
    " loop\n"
    "0.05.000.100 I srv  update_slots: all slots are idle\n",
}
#: What an older run of the service left in the log before this one.
OLDER = "an older run's last line\n"


def start_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rsplit(b")", 1)[1].split()[19])


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


class Service:
    """One service of a local host, its log and the runs a test starts for it."""

    def __init__(self, tmp_path: Path, engine: str) -> None:
        self.log = tmp_path / "serve.log"
        self.log.write_text("")
        fields = {"engine": engine, "log": str(self.log), "port": free_port()}
        host = parse_config(
            f"hosts:\n  here:\n    local: true\n    services:\n      svc: {json.dumps(fields)}\n"
        ).hosts["here"]
        self.engine = engine
        self.services = list(host.services.values())
        self.record_dir = Path(os.environ["BABYSIT_HOST_STATE"]) / "svc"
        self.history = self.record_dir / STARTUPS_FILE
        self.runs: list[subprocess.Popen[bytes]] = []

    def start(self, text: str, *, recorded: bool = True) -> subprocess.Popen[bytes]:
        """A run that writes ``text`` to the log (after what it holds), and its run
        record (launch offset: where its bytes begin), as a launch by babysit leaves."""
        offset = self.log.stat().st_size
        with self.log.open("ab") as out:
            run = subprocess.Popen(["sleep", str(RUN_SLEEP)], stdout=out)
            out.write(text.encode())
        self.runs.append(run)
        if recorded:
            st = self.log.stat()
            record = {
                "boot_id": boot_id(),
                "pid": run.pid,
                "start_ticks": start_ticks(run.pid),
                "dev": st.st_dev,
                "inode": st.st_ino,
                "launch_offset": offset,
            }
            self.record_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            with (self.record_dir / "runs.jsonl").open("a") as runs:
                runs.write(json.dumps(record) + "\n")
        return run

    def request(self) -> dict[str, object]:
        return probe_request(self.services)

    def probe(self) -> dict[str, object]:
        """This service's entry of the agent's probe answer (checked by core's reader)."""
        result = asyncio.run(run_agent(LocalTransport(), self.request(), timeout=30))
        assert result.ok, result.completed.stderr
        return self.entry(json.loads(result.completed.stdout))

    def entry(self, answer: dict[str, object]) -> dict[str, object]:
        (entry,) = answer["services"]
        assert "error" not in entry, entry
        self.parsed = ServiceProbe.from_json("here", self.engine, answer, entry)
        return entry

    def stop(self) -> None:
        for run in self.runs:
            run.kill()
            run.wait()


@pytest.fixture
def service_of(tmp_path: Path) -> Iterator[Callable[[str], Service]]:
    made: list[Service] = []

    def make(engine: str) -> Service:
        made.append(Service(tmp_path, engine))
        return made[-1]

    try:
        yield make
    finally:
        for service in made:
            service.stop()


def ready_of(entry: dict[str, object], pid: int) -> dict[str, object]:
    (run,) = [r for r in entry["runs"] if r["pid"] == pid]
    return run["ready"]


@pytest.mark.parametrize("engine", sorted(STARTUPS))
def test_a_probe_gives_this_runs_phases_in_order_and_keeps_them_on_the_host(
    service_of, engine: str
) -> None:
    service = service_of(engine)
    service.log.write_text(STARTUPS[engine] + OLDER)
    anchor = service.log.stat().st_size
    run = service.start(STARTUPS[engine])
    entry = service.probe()
    ready = ready_of(entry, run.pid)
    assert ready["seen"] is True and ready["anchor"] == anchor
    phases = ready["phases"]
    assert [p["name"] for p in phases] == [p.name for p in SPECS[engine].phases]
    assert all(p["offset"] >= anchor for p in phases), "the older run's lines are not this run's"
    assert [p["offset"] for p in phases] == sorted(p["offset"] for p in phases)
    assert all(p["at"] is not None and p["dated"] in ("stamp", "before") for p in phases)
    # the history on the host: this run's record, as the answer carries it
    (record,) = json.loads(service.history.read_text())["runs"]
    assert entry["startups"] == [record] and entry["startups_problem"] is None
    assert (record["pid"], record["start_ticks"]) == (run.pid, start_ticks(run.pid))
    assert record["boot_id"] == boot_id()
    assert record["phases"] == [{"name": p["name"], "at": p["at"]} for p in phases]
    assert record["ready_at"] is not None and record["ready_at"] >= phases[-1]["at"]
    assert stat.S_IMODE(service.history.stat().st_mode) == 0o600
    assert not [p for p in service.record_dir.iterdir() if p.name.endswith(".tmp")]


def test_the_progress_of_a_run_still_loading_and_the_time_its_unstamped_line_was_seen(
    service_of,
) -> None:
    service = service_of("vllm")
    head = VLLM_033[: VLLM_033.index("Loading safetensors")]
    bar = "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:09<00:09,  4.61s/it]"
    # one stamped line, then the bar at 2 of 4, its line not ended
    run = service.start(
        "\n".join(line for line in head.splitlines() if "Initializing" in line) + "\n" + bar
    )
    first = service.probe()
    (loading,) = ready_of(first, run.pid)["phases"]
    assert (loading["name"], loading["done"], loading["total"]) == ("loading weights", 2, 4)
    assert loading["dated"] == "before"
    # the history keeps what the agent first saw; probing again changes nothing on disk
    kept = service.history.stat()
    second = service.probe()
    assert ready_of(second, run.pid)["phases"] == ready_of(first, run.pid)["phases"]
    assert service.history.stat().st_ino == kept.st_ino, "nothing changed: nothing written"
    assert second["startups"] == first["startups"]


def test_an_unstamped_phase_line_is_dated_when_first_seen_and_keeps_that_time(
    service_of,
) -> None:
    service = service_of("vllm")
    bar = "Capturing CUDA graph shapes:  45%|████▍     | 30/67 [00:09<00:11,  3.30it/s]"
    before = time.time()
    run = service.start(bar)
    first = service.probe()
    (capture,) = ready_of(first, run.pid)["phases"]
    assert capture["dated"] == "seen" and capture["at"] >= before
    assert (capture["done"], capture["total"]) == (30, 67)
    with service.log.open("ab") as out:
        out.write("\r".join(["", bar.replace("30/67", "31/67")]).encode())
    second = service.probe()
    (again,) = ready_of(second, run.pid)["phases"]
    assert again["at"] == capture["at"], "the time the history first saw it"
    assert (again["done"], again["total"]) == (31, 67)


def test_a_second_run_of_the_service_finds_the_first_runs_record(service_of) -> None:
    service = service_of("sglang")
    first = service.start(STARTUPS["sglang"])
    one = service.probe()
    service.stop()
    second = service.start(STARTUPS["sglang"][: STARTUPS["sglang"].index("KV Cache")])
    entry = service.probe()
    records = entry["startups"]
    assert [(r["pid"], r["start_ticks"]) for r in records] == [
        (first.pid, one["startups"][0]["start_ticks"]),
        (second.pid, start_ticks(second.pid)),
    ]
    assert records[0] == one["startups"][0], "the first run's record as kept"
    assert records[0]["ready_at"] is not None and records[1]["ready_at"] is None
    assert [p["name"] for p in records[1]["phases"]] == ["loading weights", "allocating KV cache"]
    assert [r.pid for r in service.parsed.startups] == [first.pid, second.pid]


def test_the_history_keeps_the_last_runs_only(service_of) -> None:
    service = service_of("sglang")
    older = [
        {"boot_id": "b", "pid": n, "start_ticks": n, "started": 1e9 + n, "phases": []}
        for n in range(1, STARTUPS_KEPT + 1)
    ]
    service.record_dir.mkdir(parents=True, mode=0o700)
    service.history.write_text(json.dumps({"runs": older}))
    run = service.start(STARTUPS["sglang"])
    records = service.probe()["startups"]
    assert len(records) == STARTUPS_KEPT
    assert records[0] == older[1] and records[-1]["pid"] == run.pid


def test_the_history_folder_is_made_private_when_missing(service_of, tmp_path: Path) -> None:
    service = service_of("llamacpp")
    run = service.start(STARTUPS["llamacpp"], recorded=False)
    # no run record: the run is placed where its stamps (time since its start) begin,
    # the file written since the last of them
    later = time.time() + 10
    os.utime(service.log, (later, later))
    entry = service.probe()
    ready = ready_of(entry, run.pid)
    assert ready["anchor"] == 0, ready
    assert stat.S_IMODE(service.record_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(service.history.stat().st_mode) == 0o600
    assert [p["name"] for p in entry["startups"][0]["phases"]] == [
        p.name for p in SPECS["llamacpp"].phases
    ]


def test_a_garbled_history_is_said_and_written_over(service_of) -> None:
    service = service_of("tgi")
    service.record_dir.mkdir(parents=True, mode=0o700)
    service.history.write_bytes(b'{"runs": [{"pid": 1, "start_ti')
    run = service.start(STARTUPS["tgi"])
    entry = service.probe()
    assert entry["startups_problem"] == f"{service.history} is garbled: not read"
    assert [r["pid"] for r in entry["startups"]] == [run.pid]
    again = service.probe()
    assert again["startups_problem"] is None and again["startups"] == entry["startups"]


def test_a_history_too_large_to_be_the_agents_is_not_read(service_of) -> None:
    service = service_of("tgi")
    service.record_dir.mkdir(parents=True, mode=0o700)
    service.history.write_bytes(b" " * (1024 * 1024))
    service.start(STARTUPS["tgi"])
    entry = service.probe()
    assert entry["startups_problem"] == f"{service.history} is larger than 256 KiB: not read"


def run_agent_without_dac_override(request: dict[str, object]) -> dict[str, object]:
    """The agent's answer to ``request``, run as root without the capability that lets
    root write where the modes forbid it (a read-only home, for root too)."""
    stdin, nonce = agent_input(request)
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    out = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-dac_override",
            "--inh-caps=-all",
            python,
            *agent_argv(LocalTransport())[1:],
        ],
        input=stdin,
        capture_output=True,
        check=True,
        cwd="/",
    )
    answer = split_output(Completed((), 0, out.stdout, b""), nonce)
    assert answer.started, out.stdout[:200]
    return json.loads(answer.completed.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="drops a capability of root's")
def test_a_record_dir_that_cannot_be_written_says_why_and_the_probe_goes_on(
    service_of,
) -> None:
    service = service_of("sglang")
    run = service.start(STARTUPS["sglang"])
    service.record_dir.chmod(0o500)
    try:
        entry = service.entry(run_agent_without_dac_override(service.request()))
    finally:
        service.record_dir.chmod(0o700)
    assert entry["startups_problem"].startswith(f"cannot write {service.record_dir}/")
    assert entry["startups_problem"].endswith(": Permission denied")
    assert not service.history.exists()
    # the run and its phases are said all the same, its record among the answer's
    assert [p["name"] for p in ready_of(entry, run.pid)["phases"]] == [
        p.name for p in SPECS["sglang"].phases
    ]
    assert [r["pid"] for r in entry["startups"]] == [run.pid]


async def test_a_container_run_is_kept_in_the_history_from_its_json_file(dockerd) -> None:
    """A container's json-file holds no phase scan: its run's record has its start and
    its ready time."""
    port = free_port()
    name = "phases-vllm"
    dockerd.run_container(name, sim_command("vllm", port, load=0.3))
    wait_running(dockerd, name)
    (svc,) = (
        parse_config(
            "hosts:\n  here:\n    local: true\n    services:\n"
            f"      svc: {{engine: vllm, container: {name}, port: {port}}}\n"
        )
        .hosts["here"]
        .services.values()
    )

    async def ready() -> dict[str, object] | None:
        result = await run_agent(LocalTransport(), probe_request([svc]), timeout=30)
        answer = json.loads(result.completed.stdout)
        (entry,) = answer["services"]
        ServiceProbe.from_json("here", "vllm", answer, entry)
        runs = entry["runs"]
        return entry if runs and runs[0].get("ready", {}).get("seen") else None

    entry = await until(ready, "the container's run to be ready", timeout=60)
    (run,) = entry["runs"]
    (record,) = entry["startups"]
    assert (record["pid"], record["start_ticks"]) == (run["pid"], run["start_ticks"])
    assert record["ready_at"] == run["ready"]["at"]
    history = Path(os.environ["BABYSIT_HOST_STATE"]) / "svc" / STARTUPS_FILE
    assert json.loads(history.read_text())["runs"] == [record]
