"""The container kill's pure parts: the agent's identity re-check, and how the outcome
of a container's stop is said."""

from __future__ import annotations

import pytest

from tui.agent.container_action import restarted_since
from tui.ops.container_kill import ContainerTarget
from tui.ops.kill_outcome import KillEvent, outcome_of, stopped_words

pytestmark = pytest.mark.unit

ID = "4f3c" + "0" * 60
STARTED = 1764620000.123456


def facts(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "found": True,
        "id": ID,
        "started_at": STARTED,
        "restart_count": 0,
        "problem": None,
    }
    return {**base, **changes}


def confirmed(**changes: object) -> dict[str, object]:
    return {"id": ID, "started_at": STARTED, "restart_count": 0, **changes}


def test_the_run_confirmed_passes_the_check() -> None:
    assert restarted_since(facts(), confirmed(), "stopped") == (None, False)


@pytest.mark.parametrize(
    "now",
    [
        {"started_at": STARTED + 5},
        {"restart_count": 1},
        {"started_at": None},
    ],
)
def test_a_restart_since_the_confirm_is_refused_as_another_run(now: dict[str, object]) -> None:
    reason, changed = restarted_since(facts(**now), confirmed(), "stopped")
    assert changed is True
    assert reason is not None
    assert reason.startswith("the container was restarted since you confirmed")
    assert reason.endswith("nothing was stopped")


def test_a_container_gone_or_replaced_is_refused() -> None:
    gone, changed = restarted_since(
        facts(found=False, problem="no container x on this host"), confirmed(), "started"
    )
    assert gone == "no container x on this host; nothing was started" and not changed
    other, changed = restarted_since(facts(id="9" * 64), confirmed(), "stopped")
    assert other is not None and "is now another container" in other and changed


def test_the_stop_outcome_says_how_the_container_ended() -> None:
    target = ContainerTarget("docker", ID, "vllm-qwen", "vllm/vllm-openai", STARTED, 0)
    stopped = {
        "found": True,
        "running": False,
        "status": "exited",
        "exit_code": 137,
        "finished_at": 1764620100.0,
        "oom_killed": True,
        "error": "",
        "already": False,
    }
    events = [
        KillEvent("started", None, "", {}),
        KillEvent("stopped", None, stopped_words(stopped), stopped),
        KillEvent("done", None, "done", {"remaining": [], "port_owners": [], "gpu": None}),
    ]
    outcome = outcome_of(events)
    assert outcome.ok and outcome.exit_status == 0
    assert outcome.summary(target, 8000) == (
        "container vllm-qwen (4f3c00000000): the container stopped (exited): exit code 137 "
        "at 2025-12-01T20:15:00Z, OOM-killed; port 8000 is closed"
    )


def test_a_container_still_running_or_removed_is_said() -> None:
    assert stopped_words({"found": False}) == "the container is gone (removed at its exit: --rm)"
    still = {"found": True, "running": True, "status": "running"}
    assert stopped_words(still) == "the container is still running (status running)"
    events = [KillEvent("stopped", None, "", still), KillEvent("done", None, "", {})]
    assert not outcome_of(events).ok
