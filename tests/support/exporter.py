"""``babysit export`` as a real process for tests: started, read and stopped by its pid.

:func:`start_export` runs ``python -m tui export --config HOSTS …`` from this
checkout with babysit's state folders under the test's own folder, and waits for
the one line it prints on stderr once it serves
(``babysit: serving http://HOST:PORT/metrics …``), which gives the port it
really listens on (``--listen 127.0.0.1:0`` picks a free one). Its stderr is read
by a thread all along, so a chatty exporter never blocks on a full pipe and a
failure can show what it said.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from support.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
#: The line ``babysit export`` prints on stderr once it serves /metrics.
SERVING_RE = re.compile(r"^babysit: serving (http://(\S+?):(\d+)/metrics)")
#: The Accept header of a plain text exposition (format 0.0.4), as promtool reads it.
TEXT_PLAIN = "text/plain"


def export_argv(config: Path, *args: str) -> list[str]:
    """The command line of ``babysit export --config CONFIG ARGS``."""
    return [sys.executable, "-m", "tui", "export", "--config", str(config), *args]


def export_env(state: Path) -> dict[str, str]:
    """This process's environment with this checkout first on the import path and
    babysit's state folders (run records, audit log, the sims' registry) under
    ``state``: a module-scoped fixture runs before any test's own folders are set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env["BABYSIT_HOST_STATE"] = str(state / "host-state")
    env["BABYSIT_STATE"] = str(state / "local-state")
    env["BABYSIT_SIM_STATE"] = str(state / "sim-state")
    return env


def samples(text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of series ``name`` in the exposition ``text``: labels to value."""
    return {
        frozenset(sample.labels.items()): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def labels(**pairs: str) -> frozenset[tuple[str, str]]:
    """A key of :func:`samples`: ``labels(host="a", service="b")``."""
    return frozenset(pairs.items())


@dataclass
class Exporter:
    """A running ``babysit export`` and what it has said on stderr."""

    process: subprocess.Popen[str]
    said: list[str] = field(default_factory=list)
    url: str | None = None
    _reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return "".join(self.said)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line)
            found = SERVING_RE.match(line)
            if found and self.url is None:
                self.url = found.group(1)

    def wait_serving(self, timeout: float = 60.0) -> str:
        """The /metrics URL from its serving line; it exiting first fails the wait."""

        def serving() -> str | None:
            if self.url is None and self.process.poll() is not None:
                if self._reader is not None:
                    self._reader.join(5)
                raise AssertionError(
                    f"babysit export exited with {self.process.returncode} before serving:\n"
                    + self.stderr()
                )
            return self.url

        return wait_until(
            serving, timeout, lambda: f"babysit export to serve (it said: {self.stderr()!r})"
        )

    def scrape(self, accept: str = TEXT_PLAIN) -> str:
        """GET /metrics with ``Accept: accept``: the exposition's text."""
        assert self.url is not None, "not serving yet"
        request = urllib.request.Request(self.url, headers={"Accept": accept})  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return answer.read().decode()

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM, then its exit code (waited for up to ``timeout`` s: a TimeoutExpired
        means it did not stop)."""
        if self.process.poll() is None:
            self.process.terminate()
        code = self.process.wait(timeout)
        if self._reader is not None:
            self._reader.join(5)
        return code

    def kill(self) -> None:
        """SIGKILL by its pid, for teardown after a failure."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        if self._reader is not None:
            self._reader.join(5)


def start_export(config: Path, state: Path, args: Sequence[str] = ()) -> Exporter:
    """Start ``babysit export --config CONFIG ARGS`` (not waiting for it to serve)."""
    process = subprocess.Popen(
        export_argv(config, *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=export_env(state),
    )
    exporter = Exporter(process)
    exporter._reader = threading.Thread(target=exporter._read, daemon=True)
    exporter._reader.start()
    return exporter
