"""A real Prometheus on 127.0.0.1 for tests, scraping one target, with its data in a
temporary folder.

:func:`start_prometheus` runs Debian's ``prometheus`` (2.42) with a config made for
the run: one job, :data:`JOB`, scraping one ``127.0.0.1:PORT`` every
:data:`INTERVAL`, its TSDB under the test's folder with a short retention, its web
listener on a free loopback port, and nothing remote (no remote write or read, no
Alertmanager, no lifecycle or admin API). It is ready when ``/-/ready`` answers.

Tests ask it through its HTTP API (:meth:`Prometheus.query`,
:meth:`Prometheus.targets`) and count scrapes rather than seconds: every scrape
stores one ``up`` sample for the target, so ``count_over_time(up[…])`` is the number
of scrapes so far (:meth:`Prometheus.scrapes`, :meth:`Prometheus.wait_scrapes`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from support.ports import free_port
from support.wait import wait_until

#: The job name of the one scrape config.
JOB = "babysit"
#: Seconds between two scrapes (also the scrape timeout and rule evaluation interval).
INTERVAL = 1
#: How long the TSDB keeps samples: longer than any test, short enough to stay small.
RETENTION = "1h"
#: Lines of its log a failure shows.
TAIL = 30
#: Why a test that needs Prometheus is skipped.
NOT_INSTALLED = "prometheus is not installed (./dev/test installs Debian's prometheus package)"


class PrometheusUnavailable(RuntimeError):
    """Prometheus is not installed here (./dev/test installs Debian's ``prometheus``)."""


def find_prometheus() -> str | None:
    """The prometheus server on this machine's PATH (or Debian's place for it), if any."""
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None
    )


def find_promtool() -> str | None:
    """promtool, shipped in the same Debian package as the server, if installed."""
    return shutil.which("promtool") or (
        "/usr/bin/promtool" if Path("/usr/bin/promtool").exists() else None
    )


def config_text(target: str, interval: float = INTERVAL) -> str:
    """The prometheus.yml of the run: one job scraping ``target`` (``127.0.0.1:PORT``)."""
    every = f"{interval}s"
    config = {
        "global": {
            "scrape_interval": every,
            "scrape_timeout": every,
            "evaluation_interval": every,
        },
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [target]}]}],
    }
    return json.dumps(config, indent=2) + "\n"  # JSON is YAML, and needs no quoting rules


@dataclass
class Prometheus:
    """A running Prometheus and the way to ask it."""

    root: Path
    port: int
    target: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def last_words(self, lines: int = TAIL) -> str:
        """The end of its log, for a failure's message."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return "\n".join(tail) or "(prometheus logged nothing)"

    def api(self, path: str, **params: str) -> object:
        """``data`` of the answer to ``GET /api/v1/PATH?PARAMS``; an error answer raises
        AssertionError with Prometheus's own words and the end of its log."""
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
                body = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
        except (OSError, ValueError) as error:
            raise AssertionError(f"{url}: {error}\n{self.last_words()}") from error
        if body.get("status") != "success":
            words = f"{body.get('errorType')}: {body.get('error')}"
            raise AssertionError(f"{url}: {words}\n{self.last_words()}")
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """The instant vector ``expr`` is now: ``[{"metric": {…}, "value": [t, "v"]}, …]``."""
        data = self.api("query", query=expr)
        assert isinstance(data, dict)
        if data["resultType"] != "vector":
            raise AssertionError(f"{expr!r} is a {data['resultType']}, not an instant vector")
        return data["result"]

    def values(self, expr: str) -> list[tuple[dict[str, str], float]]:
        """Each series of ``expr`` now, as its labels and its value."""
        return [(item["metric"], float(item["value"][1])) for item in self.query(expr)]

    def value(self, expr: str) -> float | None:
        """The one value ``expr`` has now, or None when it has no series; more than one
        series is an error (the expression was meant to name one)."""
        found = self.values(expr)
        if len(found) > 1:
            raise AssertionError(f"{expr!r} has {len(found)} series: {found}")
        return found[0][1] if found else None

    def targets(self) -> list[dict]:
        """The active targets (``/api/v1/targets``): labels, health, lastScrape, lastError."""
        data = self.api("targets", state="active")
        assert isinstance(data, dict)
        return data["activeTargets"]

    def scrapes(self) -> int:
        """How many scrapes of the job have been stored (each stores one ``up`` sample)."""
        found = self.value(f'count_over_time(up{{job="{JOB}"}}[{RETENTION}])')
        return int(found or 0)

    def wait_scrapes(self, count: int, timeout: float = 30.0, since: int | None = None) -> int:
        """Wait for ``count`` more scrapes than ``since`` (default: the count now); the
        count reached. A target that fails its scrapes fails the wait with its error."""
        start = self.scrapes() if since is None else since

        def what() -> str:
            health = [(t["scrapeUrl"], t["health"], t["lastError"]) for t in self.targets()]
            return f"{count} more scrapes of {self.target} (targets: {health})\n{self.last_words()}"

        return wait_until(
            lambda: (n := self.scrapes()) >= start + count and n, timeout, what, step=0.1
        )

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Wait until the job's target has been scraped and its last scrape succeeded."""

        def healthy() -> bool:
            return any(t["health"] == "up" for t in self.targets())

        wait_until(
            healthy,
            timeout,
            lambda: (
                f"{self.target} scraped and up (targets: {self.targets()})\n" + self.last_words()
            ),
            step=0.1,
        )

    def stop(self) -> None:
        """Stop it by its pid (SIGTERM, then SIGKILL) and remove its folder."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.root / "data", ignore_errors=True)


def start_prometheus(root: Path, target: str, timeout: float = 30.0) -> Prometheus:
    """Start a Prometheus under ``root`` scraping ``target`` and wait until it is ready;
    raises :class:`PrometheusUnavailable` when it is not installed."""
    binary = find_prometheus()
    if binary is None:
        raise PrometheusUnavailable(NOT_INSTALLED)
    root.mkdir(parents=True, exist_ok=True)
    config = root / "prometheus.yml"
    config.write_text(config_text(target))
    log = root / "prometheus.log"
    port = free_port()
    argv = [
        binary,
        f"--config.file={config}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--storage.tsdb.path={root / 'data'}",
        f"--storage.tsdb.retention.time={RETENTION}",
        "--log.level=info",
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=root,
            start_new_session=True,
        )
    prometheus = Prometheus(root=root, port=port, target=target, process=process, log=log)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(
                f"prometheus exited with {process.returncode}:\n{prometheus.last_words()}"
            )
        with contextlib.suppress(OSError):
            url = f"{prometheus.url}/-/ready"
            with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - loopback
                return answer.status == 200
        return False

    try:
        wait_until(ready, timeout, lambda: f"prometheus ready\n{prometheus.last_words()}", step=0.1)
    except BaseException:
        prometheus.stop()
        raise
    return prometheus
