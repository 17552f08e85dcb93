"""A container service's verdict from what the probe answers of its container and its run."""

from __future__ import annotations

import pytest
from support.container_answers import (
    CONTAINER_ID,
    LOG_PATH,
    SERVER_ARGV,
    WRAPPER_ARGV,
    at,
    container,
    json_log,
    probe,
    run,
    stopped,
    verdict,
)

from tui.app.widgets.run_banner import banner_lines
from tui.core.assess_container import server_process
from tui.core.containers import DOCKER_JSON, ContainerState, run_since
from tui.core.verdicts import Verdict

pytestmark = pytest.mark.unit

HEAD = "container vllm-qwen (4f3c1a2b3c4d, vllm/vllm-openai:v0.9)"


def test_a_running_container_whose_run_saw_its_ready_line_is_live() -> None:
    ready = {"seen": True, "anchor": 5120, "at": at("14:03:00"), "source": "log"}
    a = verdict(container(), runs=[run(ready)])
    assert a.verdict is Verdict.LIVE, a.summary
    assert a.summary == (
        f"{HEAD} started 14:02:11 (3 min ago) as pid 4242, run 4 of this container "
        "(RestartCount 3); "
        "ready since 14:03:00"
    )
    assert a.container is not None and a.container.identity is not None
    assert a.container.identity.restart_count == 3
    assert a.run is not None and a.run.root.pid == 4242


def test_the_daemon_writes_the_json_log_so_the_run_holds_it_by_its_container() -> None:
    a = verdict(container(), runs=[run({"seen": True, "anchor": 0})])
    assert a.log is not None and a.log.format == DOCKER_JSON
    assert a.writes_log  # no process of the run holds the json-file open
    assert a.log_writer is None  # the daemon writes it, not a pid of the run


def test_not_ready_yet_counts_from_this_runs_anchor() -> None:
    a = verdict(container(), runs=[run({"seen": False, "anchor": 5120})])
    assert a.verdict is Verdict.STARTING, a.summary
    assert a.summary == (
        f"{HEAD} started 14:02:11 (3 min ago) as pid 4242, run 4 of this container "
        "(RestartCount 3); "
        "not ready yet (no ready line since this run began at offset 5120)"
    )


def test_health_tells_when_the_json_log_cannot_be_read() -> None:
    unreadable = json_log(regular=False, problem="permission denied")
    ready = {"seen": None, "source": "the log cannot be read"}
    a = verdict(container(), runs=[run(ready)], log=unreadable, health=200)
    assert a.verdict is Verdict.LIVE, a.summary
    assert "ready (by HTTP /health; no ready line found)" in a.summary
    assert f"its log {LOG_PATH} cannot be read (permission denied)" in a.summary
    assert not a.writes_log


def test_a_first_run_says_its_restart_count() -> None:
    a = verdict(container(restart_count=0), runs=[run({"seen": False, "anchor": 0})])
    assert "started 14:02:11 (3 min ago) as pid 4242, RestartCount 0;" in a.summary


def test_an_exited_container_is_dead_with_its_exit() -> None:
    a = verdict(stopped(oom_killed=True))
    assert a.verdict is Verdict.DEAD
    assert a.summary == (
        f"{HEAD} exited with status 137 (signal 9, SIGKILL) at 14:05:02 (9 s ago); "
        "OOMKilled: killed by the kernel's OOM killer"
    )
    assert a.run is None and a.container is not None and a.container.oom_killed


def test_the_runtimes_error_and_a_plain_exit() -> None:
    a = verdict(stopped(exit_code=1, error="failed to create task: no GPU"))
    assert a.summary == (
        f"{HEAD} exited with status 1 at 14:05:02 (9 s ago); "
        "docker says: failed to create task: no GPU"
    )


def test_a_rm_container_that_exited_says_its_log_goes_with_it() -> None:
    a = verdict(stopped(exit_code=0, auto_remove=True))
    assert a.summary.endswith("; it runs with --rm: docker removes it, and its log, as it exits")


def test_a_created_container_never_started() -> None:
    a = verdict(stopped(status="created", started_at=None, finished_at=None, exit_code=0))
    assert a.verdict is Verdict.DEAD
    assert a.summary == f"{HEAD} was created 13:00:00 (1h05m ago) and never started"


def test_a_dead_container() -> None:
    a = verdict(stopped(status="dead", dead=True, exit_code=255))
    assert a.verdict is Verdict.DEAD
    assert "is dead (docker could not stop or remove it); it exited with status 255" in a.summary


def test_a_restarting_container_is_dead_while_docker_waits() -> None:
    facts = stopped(status="restarting", restarting=True, running=True, exit_code=1)
    a = verdict(facts)
    assert a.verdict is Verdict.DEAD
    assert a.summary == (
        f"{HEAD} is restarting: docker waits to start it again (restart policy "
        "unless-stopped); its last run exited with status 1 at 14:05:02 (9 s ago); "
        "RestartCount 3"
    )


def test_a_paused_container_is_stale() -> None:
    a = verdict(container(status="paused", paused=True), runs=[run()])
    assert a.verdict is Verdict.STALE
    assert a.summary.startswith(
        f"{HEAD} is paused: its processes are frozen and serve nothing until `docker unpause`"
    )
    assert a.run is not None


def test_no_such_container_is_dead() -> None:
    facts = {
        "ref": "vllm-qwen",
        "runtime": "docker",
        "found": False,
        "absent": True,
        "problem": "no container vllm-qwen on this host (No such container: vllm-qwen)",
    }
    a = verdict(facts)
    assert a.verdict is Verdict.DEAD
    assert a.summary == "no container vllm-qwen on gpu1"
    assert a.container is not None and a.container.absent


def test_a_runtime_that_cannot_be_asked_is_unknown_in_its_words() -> None:
    words = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
    a = verdict({"ref": "vllm-qwen", "runtime": "docker", "found": False, "problem": words})
    assert a.verdict is Verdict.UNKNOWN
    assert a.summary == f"cannot tell: docker cannot say what container vllm-qwen is: {words}"


def test_podman_is_named() -> None:
    a = verdict(stopped(runtime="podman", exit_code=0))
    assert a.summary.startswith("podman container vllm-qwen (4f3c1a2b3c4d")


def test_running_without_a_process_seen_is_unknown() -> None:
    a = verdict(container(), runs=[])
    assert a.verdict is Verdict.UNKNOWN
    assert "runs (State.Pid 4242), but the probe saw none of its processes" in a.summary


def test_a_log_beside_the_container_is_judged_by_the_usual_file_rules() -> None:
    own = {"path": "/srv/qwen.log", "regular": True, "dev": 5, "inode": 9, "size": 10}
    own["mtime"] = at("14:04:00")
    held = {"fd": 1, "path": "/srv/qwen.log", "dev": 5, "inode": 9, "deleted": False}
    held.update(write=True, at_log=True)
    a = verdict(container(), runs=[run({"seen": True, "anchor": 0}, files=[held])], log=own)
    assert a.verdict is Verdict.LIVE, a.summary
    assert a.summary.startswith(f"{HEAD}: pid 4242 (started 14:02:11, 3 min ago) writes this log")
    assert a.log_writer == 4250
    # a server that does not write that file: the file rules say so
    a = verdict(container(), runs=[run({"seen": False, "anchor": 0})], log=own)
    assert a.verdict is Verdict.STALE, a.summary
    assert a.summary.startswith(f"{HEAD}: pid 4242 (started 14:02:11, 3 min ago) runs but")


def test_the_server_inside_is_the_member_its_engine_recognises() -> None:
    (found,) = probe(container(), runs=[run()]).runs
    assert found.root.cmdline == tuple(WRAPPER_ARGV)
    assert server_process(found, "vllm").cmdline == tuple(SERVER_ARGV)
    assert server_process(found, "generic").cmdline == tuple(SERVER_ARGV)
    # an engine that is not the one inside: the root stands
    assert server_process(found, "sglang").pid == 4242


def test_the_container_state_reads_and_writes_its_answer() -> None:
    state = probe(container()).container
    assert isinstance(state, ContainerState)
    assert state.identity is not None and state.identity.id == CONTAINER_ID
    written = state.to_json(lambda ts: None if ts is None else round(ts))
    assert written["started_at"] == round(at("14:02:11"))
    assert written["pids"] == [4242, 4250] and written["running"] is True


def test_the_banner_names_the_containers_run_first() -> None:
    ready = {"seen": True, "anchor": 5120, "at": at("14:03:00"), "source": "log"}
    a = verdict(container(), runs=[run(ready)])
    facts = banner_lines(a, a.checked_at)[0]
    assert facts.startswith("● LIVE  container vllm-qwen 4f3c1a2b3c4d · pid 4242")
    gone = verdict(container(found=False, absent=True, id="", name=""), runs=[])
    assert "container" not in banner_lines(gone, gone.checked_at)[0]


def test_a_runs_bound_is_the_last_finish_before_its_start() -> None:
    """One rule for "which records are this run's", seconds or nanoseconds alike."""
    assert run_since(100.0, None) is None  # never finished: every record is this run's
    assert run_since(100, -62135596800) is None  # Docker's zero time
    assert run_since(100.0, 99.5) == 99.5  # restarted: from the last run's finish
    assert run_since(100, 150) == 100  # finished after this start (a stale FinishedAt)
