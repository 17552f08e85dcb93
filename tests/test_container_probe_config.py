"""hosts.yaml's ``container:`` and ``runtime:`` keys of a service."""

from __future__ import annotations

import pytest

from tui.config import ContainerRef
from tui.errors import ConfigError
from tui.hostsfile import parse_config

pytestmark = pytest.mark.unit


def _services(body: str) -> dict[str, object]:
    text = "hosts:\n  a:\n    local: true\n    services:\n" + body
    return dict(parse_config(text, "hosts.yaml").hosts["a"].services)


def test_a_container_service_needs_no_log() -> None:
    service = _services("      q: {engine: vllm, container: vllm-qwen, port: 8000}\n")["q"]
    assert service.container == ContainerRef("vllm-qwen", "docker")
    assert service.log == ""
    assert service.log_text == "the log of container vllm-qwen"


def test_a_log_beside_a_container_and_another_runtime() -> None:
    service = _services("      q: {container: 4f3c12, runtime: podman, log: /srv/q.log}\n")["q"]
    assert service.container == ContainerRef("4f3c12", "podman")
    assert service.log == "/srv/q.log"


def test_an_id_written_as_a_number_is_its_text() -> None:
    assert _services("      q: {container: 123456}\n")["q"].container == ContainerRef("123456")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "      q: {engine: vllm}\n",
            "hosts.yaml:5: hosts.a.services.q.log: missing required key (the server's log "
            "file); a server in a container may give container: instead",
            id="neither",
        ),
        pytest.param(
            "      q:\n        container: c1\n        port: 8000\n"
            "        match: 'vllm serve --port 8000'\n",
            "hosts.yaml:8: hosts.a.services.q.match: the run of a service in container c1 "
            "is the container's processes",
            id="match-without-log",
        ),
        pytest.param(
            "      q: {container: c1, log: /l, port: 8000, match: 'serve --port 8000'}\n",
            "hosts.yaml:5: hosts.a.services.q.match: the run of a service in container c1",
            id="match-beside-log",
        ),
        pytest.param(
            "      q: {container: 'bad name'}\n",
            "hosts.yaml:5: hosts.a.services.q.container: must be a container's name or id",
            id="bad-name",
        ),
        pytest.param(
            "      q: {container: c1, runtime: dokcer}\n",
            "hosts.yaml:5: hosts.a.services.q.runtime: must be one of docker, podman, not "
            "'dokcer' (did you mean 'docker'?)",
            id="bad-runtime",
        ),
        pytest.param(
            "      q: {log: /l, runtime: podman}\n",
            "hosts.yaml:5: hosts.a.services.q.runtime: names the CLI that runs a container; "
            "give container: too",
            id="runtime-alone",
        ),
        pytest.param(
            "      q: {container: [a]}\n",
            "hosts.yaml:5: hosts.a.services.q.container: must be a string",
            id="list",
        ),
    ],
)
def test_container_mistakes_name_file_line_and_key(body: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _services(body)
    assert str(caught.value).startswith(expected), str(caught.value)
