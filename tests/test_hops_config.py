"""hosts.yaml's hops: every form reads as its chain, every mistake is one file:line:key
line, and each hop tells its own failures from the command's exit status by their words
(the runtimes' and pct's real messages)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tui.cli import main
from tui.config import ContainerRef
from tui.errors import ConfigError
from tui.hops import python_of
from tui.hops.docker import DockerHop
from tui.hops.pct import PctHop
from tui.hops.spec import Answer
from tui.hostsfile import parse_config
from tui.remote.local import LocalTransport

pytestmark = pytest.mark.unit

FORMS = """hosts:
  gpu1:       {ssh: root@gpu1.example}
  ct105:      {pct: {node: root@pve1.example, vmid: 105}}
  sglang-box:
    ssh: root@gpu1.example
    docker: {container: sglang-0}
  here-docker: {local: true, docker: {container: x}}
  lxc-docker:  {docker: {container: x}, pct: {node: root@pve1.example, vmid: 105}}
  podman-box:
    ssh: ops@gpu2.example
    port: 2222
    docker: {container: 4f3c9a, runtime: podman, python: /usr/bin/python3.11}
"""


def test_every_form_reads_as_its_chain() -> None:
    hosts = parse_config(FORMS).hosts
    chains = {name: host.chain() for name, host in hosts.items()}
    assert chains == {
        "gpu1": ("ssh root@gpu1.example",),
        "ct105": ("ssh root@pve1.example", "pct exec 105"),
        "sglang-box": ("ssh root@gpu1.example", "docker exec sglang-0"),
        "here-docker": ("local", "docker exec x"),
        "lxc-docker": ("ssh root@pve1.example", "pct exec 105", "docker exec x"),
        "podman-box": ("ssh ops@gpu2.example:2222", "podman exec 4f3c9a"),
    }
    assert {name: host.transport for name, host in hosts.items()} == {
        "gpu1": "ssh",
        "ct105": "pct",
        "sglang-box": "docker",
        "here-docker": "docker",
        "lxc-docker": "docker",
        "podman-box": "docker",
    }
    assert hosts["here-docker"].ssh is None
    assert hosts["lxc-docker"].ssh is not None and hosts["lxc-docker"].ssh.host == "pve1.example"
    podman = hosts["podman-box"].hops[-1]
    assert podman == DockerHop(ContainerRef("4f3c9a", "podman"), "/usr/bin/python3.11")
    assert podman.prefix() == ("podman", "exec", "-i", "4f3c9a")
    assert python_of(hosts["podman-box"].hops) == "/usr/bin/python3.11"
    assert python_of(hosts["sglang-box"].hops) == "python3"
    assert python_of(hosts["ct105"].hops) == "python3"


def test_babysit_hosts_shows_each_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(FORMS)
    assert main(["hosts", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  lxc-docker   ssh root@pve1.example → pct exec 105 → docker exec x" in lines
    assert "  podman-box   ssh ops@gpu2.example:2222 → podman exec 4f3c9a" in lines
    assert main(["hosts", "--json", "--config", str(path)]) == 0
    hosts = {h["name"]: h for h in json.loads(capsys.readouterr().out)["hosts"]}
    assert hosts["sglang-box"]["transport"] == "docker"
    assert hosts["sglang-box"]["hops"] == [
        {"kind": "ssh", "texts": ["ssh root@gpu1.example"]},
        {"kind": "docker", "texts": ["docker exec sglang-0"]},
    ]


def test_the_agent_runs_with_each_chains_python() -> None:
    hosts = parse_config(FORMS).hosts
    assert LocalTransport().python == sys.executable
    assert LocalTransport(hosts["here-docker"].hops).python == "python3"
    prefixes = LocalTransport(hosts["here-docker"].hops).prefix
    assert prefixes == ("docker", "exec", "-i", "x")


MISTAKES = [
    pytest.param(
        "  a:\n    docker: {container: x}\n",
        "{path}:3: hosts.a.docker: goes on from a machine babysit must reach first: say which "
        "with local: true, ssh: or pct:",
        id="docker-without-a-base",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: {runtime: docker}\n",
        "{path}:4: hosts.a.docker.container: missing required key (the container's name)",
        id="no-container",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: {container: 'x y'}\n",
        "{path}:4: hosts.a.docker.container: must be a container's name or id (letters, "
        "digits, '_', '.', '-'), not 'x y'",
        id="bad-container",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: {container: x, runtime: podmn}\n",
        "{path}:4: hosts.a.docker.runtime: must be one of docker, podman, not 'podmn' "
        "(did you mean 'podman'?)",
        id="bad-runtime",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: {container: x, python: bin/python3}\n",
        "{path}:4: hosts.a.docker.python: must be a program name or an absolute path",
        id="relative-python",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: {container: x, image: y}\n",
        "{path}:4: hosts.a.docker.image: unknown key",
        id="unknown-docker-key",
    ),
    pytest.param(
        "  a:\n    local: true\n    docker: x\n",
        "{path}:4: hosts.a.docker: must be a mapping, not 'x'",
        id="docker-not-a-mapping",
    ),
    pytest.param(
        "  a:\n    local: true\n    port: 22\n",
        "{path}:4: hosts.a.port: applies to ssh and pct hosts only",
        id="ssh-option-on-a-local-host",
    ),
    pytest.param(
        "  a:\n    local: true\n    ssh: root@x\n    docker: {container: x}\n",
        "{path}:4: hosts.a.ssh: a host has one transport, but this one has local and ssh",
        id="two-bases",
    ),
    pytest.param(
        "  a:\n    dokcer: {container: x}\n",
        "{path}:3: hosts.a.dokcer: unknown key (did you mean 'docker'?)",
        id="typo",
    ),
]


@pytest.mark.parametrize(("body", "expected"), MISTAKES)
def test_each_hop_mistake_names_file_line_and_key(body: str, expected: str) -> None:
    path = "/etc/babysit/hosts.yaml"
    with pytest.raises(ConfigError) as raised:
        parse_config("hosts:\n" + body, path)
    assert raised.value.message.startswith(expected.format(path=path)), raised.value.message


DOCKER = DockerHop(ContainerRef("sglang-0"))
PODMAN = DockerHop(ContainerRef("q", "podman"), "/opt/py/bin/python3")

# What the runtimes and the shells on the way really print (docker 28, podman 4, bash,
# dash, lxc-attach), and the words the hop says; None: the command's own status.
FAILURES = [
    (DOCKER, 1, b"", b"Error response from daemon: No such container: sglang-0\n",
     "No such container: sglang-0"),
    (DOCKER, 1, b"", b"Error response from daemon: Container 4f3c9a17 is not running\n",
     "container sglang-0 is not running"),
    (DOCKER, 1, b"", b"Error response from daemon: Container 4f3c is paused, unpause the "
     b"container before exec\n", "container sglang-0 is paused"),
    (DOCKER, 127, b"", b"bash: line 1: docker: command not found\n",
     "the docker CLI is not installed where `docker exec` runs (bash: line 1: docker: "
     "command not found)"),
    (DOCKER, 127, b"", b'lxc-attach: 105: attach.c: 1841 No such file or directory - Failed '
     b'to exec "docker"\n', "the docker CLI is not installed where `docker exec` runs"),
    (DOCKER, 1, b"", b"Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
     b"Is the docker daemon running?\n", "the docker daemon does not answer: Cannot connect"),
    (DOCKER, 126, b'OCI runtime exec failed: exec failed: unable to start container process: '
     b'exec: "python3": executable file not found in $PATH: unknown\r\n', b"",
     "python3 not found in container sglang-0: babysit's agent needs a python3"),
    (PODMAN, 127, b"", b"Error: crun: executable file `/opt/py/bin/python3` not found in $PATH"
     b": No such file or directory: OCI runtime attempted to invoke a command that was not "
     b"found\n", "/opt/py/bin/python3 not found in container q"),
    (PODMAN, 125, b"", b'Error: no container with name or ID "q" found: no such container\n',
     "No such container: q"),
    (PODMAN, 125, b"", b"Error: can only create exec sessions on running containers: "
     b"container state improper\n", "container q is not running"),
    (DOCKER, 126, b'OCI runtime exec failed: exec failed: unable to start container process: '
     b'exec: "no-such": executable file not found in $PATH: unknown\r\n', b"", None),
    (DOCKER, 3, b"out\n", b"err\n", None),
    (DOCKER, 0, b"", b"Error response from daemon: No such container: sglang-0\n", None),
]  # fmt: skip


@pytest.mark.parametrize(("hop", "status", "stdout", "stderr", "words"), FAILURES)
def test_the_docker_hop_tells_its_failures_by_their_words(
    hop: DockerHop, status: int, stdout: bytes, stderr: bytes, words: str | None
) -> None:
    said = hop.failure(hop.settle(Answer(status, stdout, stderr)))
    if words is None:
        assert said is None
    else:
        assert said is not None and said.startswith(words), said


def test_a_program_missing_inside_is_exit_127_with_the_words_on_stderr() -> None:
    line = (
        b'OCI runtime exec failed: exec failed: unable to start container process: exec: "x": '
        b"executable file not found in $PATH: unknown"
    )
    settled = DOCKER.settle(Answer(126, line + b"\r\n", b""))
    assert settled == Answer(127, b"", line + b"\n")
    denied = line.replace(b"executable file not found in $PATH", b"permission denied")
    assert DOCKER.settle(Answer(126, denied + b"\r\n", b"")).exit_status == 126
    assert DOCKER.settle(Answer(0, line, b"")) == Answer(0, line, b"")


def test_the_pct_hop_tells_its_failures_by_their_words() -> None:
    hop = PctHop(105, "pve1")
    assert hop.failure(Answer(255, b"", b"CT 105 not running\n")) == (
        "container 105 is not usable on pve1: CT 105 not running"
    )
    assert hop.failure(Answer(127, b"", b"bash: pct: command not found\n")) == (
        "pct not found on pve1; is it a Proxmox VE node?"
    )
    assert hop.failure(Answer(255, b"", b"the command's own error\n")) is None
