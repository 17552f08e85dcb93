"""The docker hop: commands run inside a container through ``docker exec -i``.

hosts.yaml: ``docker: {container: NAME}`` beside the host's base (``ssh:``,
``pct:`` or ``local: true``: where the runtime's CLI runs), with optional
``runtime: podman`` and ``python: /path/to/python3`` (the container's python, for
the agent, when ``python3`` is not on its PATH).

``docker exec -i CONTAINER argv…`` runs the argv as a list (no shell inside) and
keeps stdin open: the agent reads its request there, and the transports' lifeline
ends a stream when babysit goes. The runtime's own failures (no CLI, no daemon, no
such container, a container that is not running, no such program inside) are told
apart from the command's exit status by their words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from tui.config import ContainerRef
from tui.hops.spec import (
    DEFAULT_PYTHON,
    EXIT_NOT_FOUND,
    Answer,
    Hop,
    HopAnswer,
    HopInput,
    HopSpec,
    Outcome,
    last_line,
)

KIND = "docker"
KEYS = ("container", "runtime", "python")
#: A python for the agent: a program name (``python3.11``) or an absolute path.
PYTHON_RE = re.compile(r"[^\s/-][^\s/]*|/[^\s]+")
#: The shell the transports' lifeline needs inside the container.
SHELL = "sh"

# The runtime could not start the program inside the container (docker writes this to
# stdout, podman to stderr).
_EXEC_FAILED = re.compile(
    rb"^.*(?:OCI runtime exec failed|OCI runtime attempted to invoke).*$", re.MULTILINE
)
_NOT_FOUND = re.compile(
    rb'exec: "(?P<a>[^"]+)": (?:executable file not found|stat [^\n]*no such file)'
    rb"|executable file [`'\"](?P<b>[^`'\"]+)[`'\"] not found"
)
_NO_SUCH = re.compile(
    rb"^(?:Error response from daemon: No such container: |Error: no container with name or ID )",
    re.MULTILINE,
)
_STATE = re.compile(
    rb"^Error(?: response from daemon)?: .*?(?P<state>is not running|is paused|is restarting"
    rb"|can only create exec sessions on running containers)",
    re.MULTILINE | re.IGNORECASE,
)
_DAEMON = re.compile(
    rb"Cannot connect to the Docker daemon|Is the docker daemon running"
    rb"|permission denied while trying to connect to the Docker daemon|Cannot connect to Podman"
)


@dataclass(frozen=True)
class DockerHop(Hop):
    """The container ``container`` on the machine before this hop."""

    kind = KIND
    container: ContainerRef
    #: The container's python for the agent, when hosts.yaml names one.
    python_path: str | None = None

    @property
    def runtime(self) -> str:
        return self.container.runtime

    @property
    def name(self) -> str:
        return self.container.name

    @property
    def texts(self) -> tuple[str, ...]:
        return (f"{self.runtime} exec {self.name}",)

    def prefix(self) -> tuple[str, ...]:
        return (self.runtime, "exec", "-i", self.name)

    def python(self, outer: str) -> str:
        return self.python_path or DEFAULT_PYTHON

    def settle(self, answer: Answer) -> Answer:
        if answer.exit_status in (0, None):
            return answer
        said = _EXEC_FAILED.search(answer.stdout) or _EXEC_FAILED.search(answer.stderr)
        if said is None:
            return answer
        line = said.group(0).strip()
        stdout = answer.stdout.replace(said.group(0), b"", 1).lstrip(b"\r\n")
        stderr = answer.stderr if line in answer.stderr else answer.stderr + line + b"\n"
        status = EXIT_NOT_FOUND if _NOT_FOUND.search(line) else answer.exit_status
        return Answer(status, stdout, stderr)

    def failure(self, outcome: Outcome) -> str | None:
        status, err = outcome.exit_status, outcome.stderr
        if status in (0, None):
            return None
        words = last_line(err)
        if status == EXIT_NOT_FOUND and self._cli_missing(err):
            return (
                f"the {self.runtime} CLI is not installed where `{self.runtime} exec` runs "
                f"({words})"
            )
        if _DAEMON.search(err):
            return f"the {self.runtime} daemon does not answer: {words}"
        if _NO_SUCH.search(err):
            return f"No such container: {self.name}"
        state = _STATE.search(err)
        if state is not None:
            return f"container {self.name} {_state_words(state.group('state'))}"
        missing = _NOT_FOUND.search(err) if status == EXIT_NOT_FOUND else None
        return self._missing_words(missing) if missing is not None else None

    def _cli_missing(self, err: bytes) -> bool:
        cli = re.escape(self.runtime.encode())
        return (
            re.search(
                rb"\b" + cli + rb": (?:command )?not found|command not found: " + cli + rb"\b"
                rb'|Failed to exec "' + cli + rb'"|^' + cli + rb": No such file or directory",
                err,
                re.MULTILINE,
            )
            is not None
        )

    def _missing_words(self, missing: re.Match[bytes]) -> str | None:
        """Words for a program missing in the container, when babysit itself needs it."""
        program = (missing.group("a") or missing.group("b")).decode("utf-8", "replace")
        python = self.python(DEFAULT_PYTHON)
        if program == python:
            return (
                f"{python} not found in container {self.name}: babysit's agent needs a "
                "python3 (>= 3.6) there; name the container's own with hosts.yaml's "
                f"{KIND}: python:"
            )
        if program == SHELL:
            return (
                f"container {self.name} has no {SHELL}: babysit needs one there to end "
                "what it runs when it leaves"
            )
        return None

    def check_command(self) -> tuple[str, ...]:
        return (self.runtime, "inspect", "--type", "container", "--", self.name)

    def check_answer(self, outcome: Outcome) -> HopAnswer:
        if outcome.exit_status != 0:
            words = self.failure(outcome) or last_line(outcome.stderr)
            return HopAnswer(False, words or f"{self.runtime} inspect exited {outcome.exit_status}")
        try:
            found = json.loads(outcome.stdout.decode("utf-8", "replace"))[0]
            state = found.get("State") or {}
            image = (found.get("Config") or {}).get("Image") or "?"
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as error:
            return HopAnswer(False, f"{self.runtime} inspect gave an unreadable answer ({error})")
        status = state.get("Status") or "?"
        if status == "running":
            return HopAnswer(
                True,
                f"the {self.runtime} CLI answers; container {self.name} runs "
                f"({image}, started {state.get('StartedAt') or '?'})",
            )
        code = state.get("ExitCode")
        exited = f", exit code {code}" if status == "exited" and code is not None else ""
        return HopAnswer(
            False,
            f"the {self.runtime} CLI answers, but container {self.name} is not running "
            f"({status}{exited}; {image})",
        )


def _state_words(state: bytes) -> str:
    text = state.decode().lower()
    return "is not running" if text.startswith("can only") else text


def parse(given: HopInput) -> tuple[Hop, ...]:
    reader = given.reader
    fields = reader.mapping(given.node, given.key, allowed=KEYS)
    if "container" not in fields:
        raise reader.fail(
            given.node, f"{given.key}.container", "missing required key (the container's name)"
        )
    runtime = fields.get("runtime")
    container = reader.container(
        (fields["container"][1], f"{given.key}.container"),
        (runtime[1], f"{given.key}.runtime") if runtime is not None else None,
    )
    python = None
    if "python" in fields:
        node = fields["python"][1]
        python = reader.host_path(node, f"{given.key}.python")
        if not PYTHON_RE.fullmatch(python):
            raise reader.fail(
                node, f"{given.key}.python", "must be a program name or an absolute path"
            )
    return (DockerHop(container, python),)


SPEC = HopSpec(kind=KIND, written=f"{KIND}:", rank=20, base=False, parse=parse)
