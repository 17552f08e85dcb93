"""hosts.yaml's ``wedged_after:`` and ``canary:``: read into the service, each mistake named
by file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main
from tui.config import DEFAULT_CANARY_PROMPT, DEFAULT_WEDGED_AFTER, CanaryConfig
from tui.hostsfile import parse_config, parse_config_file

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
HEAD = "hosts:\n  a:\n    local: true\n    services:\n      s:\n        log: /l\n"


def _service(body: str):
    return parse_config(HEAD + body, "hosts.yaml").hosts["a"].services["s"]


def test_every_key_is_read_into_the_service() -> None:
    service = _service(
        "        wedged_after: 45\n"
        "        canary:\n"
        "          every: 30\n"
        "          prompt: 'Count to five:'\n"
        "          max_tokens: 16\n"
        "          timeout: 7.5\n"
        "          sampling: {temperature: 0.6, top_p: 0.95, top_k: 20}\n"
    )
    assert service.wedged_after == 45.0
    assert service.canary == CanaryConfig(
        every=30.0,
        prompt="Count to five:",
        max_tokens=16,
        sampling=(("temperature", 0.6), ("top_p", 0.95), ("top_k", 20.0)),
        timeout=7.5,
    )


def test_without_the_keys_the_defaults_hold() -> None:
    service = _service("")
    assert service.wedged_after == DEFAULT_WEDGED_AFTER
    assert service.canary == CanaryConfig()
    assert service.canary.every is None
    assert service.canary.prompt == DEFAULT_CANARY_PROMPT


def test_a_canary_without_every_is_asked_on_demand_only() -> None:
    canary = _service("        canary: {max_tokens: 4}\n").canary
    assert canary.every is None
    assert canary.max_tokens == 4
    assert canary.timeout == CanaryConfig().timeout


def test_the_example_hosts_yaml_documents_both_keys() -> None:
    text = (REPO / "hosts.example.yaml").read_text()
    assert "wedged_after:" in text
    assert "canary:" in text
    parse_config_file(REPO / "hosts.example.yaml")


def test_instances_fill_templates_in_the_canary() -> None:
    config = parse_config(
        "hosts:\n  a:\n    local: true\n    services:\n      s:\n        instances: 2\n"
        "        log: /l{i}\n        canary: {prompt: 'instance {i}', every: 10}\n",
        "hosts.yaml",
    )
    prompts = [s.canary.prompt for s in config.hosts["a"].services.values()]
    assert prompts == ["instance 0", "instance 1"]


MISTAKES = [
    pytest.param(
        "        wedged_after: 0\n",
        "{path}:7: hosts.a.services.s.wedged_after: must be more than 0 and at most 86400",
        id="wedged-after-zero",
    ),
    pytest.param(
        "        wedged_after: soon\n",
        "{path}:7: hosts.a.services.s.wedged_after: must be a number of seconds, not 'soon'",
        id="wedged-after-text",
    ),
    pytest.param(
        "        canary: 30\n",
        "{path}:7: hosts.a.services.s.canary: must be a mapping, not int '30'",
        id="canary-not-a-mapping",
    ),
    pytest.param(
        "        canary:\n          evry: 30\n",
        "{path}:8: hosts.a.services.s.canary.evry: unknown key (did you mean 'every'?)",
        id="unknown-key",
    ),
    pytest.param(
        "        canary:\n          every: -5\n",
        "{path}:8: hosts.a.services.s.canary.every: must be more than 0 and at most 86400",
        id="every-negative",
    ),
    pytest.param(
        "        canary:\n          every: .inf\n",
        "{path}:8: hosts.a.services.s.canary.every: must be more than 0 and at most 86400",
        id="every-infinite",
    ),
    pytest.param(
        "        canary:\n          prompt: ''\n",
        "{path}:8: hosts.a.services.s.canary.prompt: must not be empty",
        id="prompt-empty",
    ),
    pytest.param(
        "        canary:\n          prompt: 42\n",
        "{path}:8: hosts.a.services.s.canary.prompt: must be a string, not int '42'",
        id="prompt-number",
    ),
    pytest.param(
        "        canary:\n          max_tokens: 0\n",
        "{path}:8: hosts.a.services.s.canary.max_tokens: must be between 1 and 4096, not 0",
        id="max-tokens-zero",
    ),
    pytest.param(
        "        canary:\n          max_tokens: 5000\n",
        "{path}:8: hosts.a.services.s.canary.max_tokens: must be between 1 and 4096, not 5000",
        id="max-tokens-too-many",
    ),
    pytest.param(
        "        canary:\n          max_tokens: 2.5\n",
        "{path}:8: hosts.a.services.s.canary.max_tokens: must be a whole number, not float '2.5'",
        id="max-tokens-fraction",
    ),
    pytest.param(
        "        canary:\n          timeout: 0\n",
        "{path}:8: hosts.a.services.s.canary.timeout: must be more than 0 and at most 86400",
        id="timeout-zero",
    ),
    pytest.param(
        "        canary:\n          sampling: [0.6]\n",
        "{path}:8: hosts.a.services.s.canary.sampling: must be a mapping, not a list",
        id="sampling-list",
    ),
    pytest.param(
        "        canary:\n          sampling:\n            temperature: hot\n",
        "{path}:9: hosts.a.services.s.canary.sampling.temperature: must be a number, not 'hot'",
        id="sampling-text",
    ),
    pytest.param(
        "        canary:\n          sampling:\n            top_p: .nan\n",
        "{path}:9: hosts.a.services.s.canary.sampling.top_p: must be a finite number, not '.nan'",
        id="sampling-nan",
    ),
    pytest.param(
        "        canary:\n          sampling:\n            temperature: true\n",
        "{path}:9: hosts.a.services.s.canary.sampling.temperature: must be a number, not "
        "bool 'true'",
        id="sampling-bool",
    ),
    pytest.param(
        "        canary:\n          sampling:\n            top-p: 0.9\n",
        "{path}:9: hosts.a.services.s.canary.sampling.top-p: a sampling parameter's name uses "
        "letters, digits and '_'",
        id="sampling-name",
    ),
    pytest.param(
        "        canary:\n          sampling:\n            top_p: 0.9\n            top_p: 0.8\n",
        "{path}:10: hosts.a.services.s.canary.sampling.top_p: repeated key (first given on line 9)",
        id="sampling-repeated",
    ),
]


@pytest.mark.parametrize(("body", "expected"), MISTAKES)
def test_each_mistake_names_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, expected: str
) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(HEAD + body)
    status = main(["hosts", "--config", str(path)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("babysit: " + expected.format(path=path)), lines[0]
