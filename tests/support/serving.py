"""Serving end to end: sims that serve (or stop serving), load on them, and the answers a
real host watch gives, in order.

:func:`serving_sim` starts SGLang's or vLLM's sim by hand (``cmd >> log``) with a model
folder of the test's own (where a ``generation_config.json`` may be written);
:class:`Load` keeps requests in flight with long timeouts, so that a wedged server has
clients still waiting; :func:`last_progress` reads the time of the sim's last progress
line from its own log (the clock the WEDGED rule counts from); :class:`Answers` records
each answer of a :class:`~tui.session.watch.HostWatch` as it comes.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sim_helpers import Sim

from tui.core.report import ServiceReport
from tui.core.verdicts import Verdict
from tui.session.watch import HostWatch

#: The model's name its folder is given (the sim reads its shape from the name).
MODEL_NAME = "Qwen3-8B"
#: Seconds a load request waits for its answer: longer than any test, so that requests
#: to a wedged server are still waiting when the watch looks.
LOAD_TIMEOUT = 300.0
#: Seconds a load waits for its requests in flight to end once told to stop.
LOAD_STOP = 30.0
#: The load's own program (stdlib only).
LOAD_CLIENT = Path(__file__).with_name("load_client.py")
#: Tokens a load request asks for (a fraction of a second at the sim's speed).
LOAD_TOKENS = 40
#: Seconds the sim's vLLM prints its stats line every (its default is 10).
VLLM_STATS_INTERVAL = 1.0
#: SGLang's speculative decoding flags (EAGLE, three steps, one draft each).
SGLANG_SPEC = (
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
)

#: A progress line of each engine, with its stamp and its generation throughput.
_PROGRESS = {
    "sglang": re.compile(
        r"^\[(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?[^\]]*\] Decode batch[^\n]*"
        r"gen throughput \(token/s\): (?P<gen>[\d.]+)",
        re.MULTILINE,
    ),
    "vllm": re.compile(
        r"^(?:\([^)]*\) )?INFO (?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)[^\n]*"
        r"Avg prompt throughput: (?P<prefill>[\d.]+) tokens/s, "
        r"Avg generation throughput: (?P<gen>[\d.]+) tokens/s",
        re.MULTILINE,
    ),
}


def model_folder(tmp: Path, generation_config: dict[str, float] | None = None) -> Path:
    """A model folder for the sim's ``--model-path`` (with ``generation_config.json`` when
    given)."""
    folder = tmp / "models" / MODEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    if generation_config is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation_config))
    return folder


def serving_sim(
    tmp: Path,
    engine: str,
    *,
    scenario: str = "healthy",
    wedge_after: float | None = None,
    model: Path | None = None,
    extra: tuple[str, ...] = (),
) -> Sim:
    """A sim of ``engine`` (sglang or vllm) serving the model folder ``model``."""
    folder = str(model if model is not None else model_folder(tmp))
    server = ("--model-path", folder, *extra) if engine == "sglang" else ("serve", folder, *extra)
    args = ["--load-seconds", "0.3", "--scenario", scenario, "--seed", "1"]
    if wedge_after is not None:
        args += ["--wedge-after", f"{wedge_after:g}"]
    if engine == "vllm":
        args += ["--stats-interval", f"{VLLM_STATS_INTERVAL:g}"]
    return Sim(tmp, engine, *args, server=server)


def last_progress(engine: str, text: str) -> float | None:
    """Epoch seconds of the last line of ``text`` (the sim's log) that shows progress
    (generation or prefill throughput above 0), by its stamp (this machine's clock)."""
    found = None
    for match in _PROGRESS[engine].finditer(text):
        moved = float(match["gen"]) > 0 or float(match.groupdict().get("prefill") or 0) > 0
        if moved:
            found = match["stamp"]
    if found is None:
        return None
    if engine == "vllm":  # vLLM's stamp has no year
        found = f"{datetime.now().year}-{found}"
    return datetime.strptime(found, "%Y-%m-%d %H:%M:%S").timestamp()


class Load:
    """Completions sent one after another on each of ``streams`` threads of a process of
    their own (the clients of a server are other programs: babysit's own process and its
    ancestors hold no client of the server it watches), until :meth:`stop`; a request
    that never ends keeps its thread waiting until the server goes away."""

    def __init__(self, port: int, *, streams: int = 3, stream: bool = False) -> None:
        argv = [sys.executable, str(LOAD_CLIENT), str(port), str(streams), str(LOAD_TOKENS)]
        argv += [f"{LOAD_TIMEOUT:g}", "stream" if stream else "whole"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.answered = 0
        self._reader = threading.Thread(target=self._count, daemon=True, name=f"load {port}")
        self._reader.start()

    def _count(self) -> None:
        assert self.proc.stdout is not None
        while self.proc.stdout.read(1):
            self.answered += 1

    def stop(self) -> None:
        """No more requests; the process ends once those in flight are answered (or, on a
        server that does not answer, at once)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(LOAD_STOP)
        self._reader.join(LOAD_STOP)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(LOAD_STOP)


def hangs(port: int, seconds: float = 1.0) -> bool:
    """Whether a completion to the server gets no answer within ``seconds`` (it wedged)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions",
        data=json.dumps({"prompt": "are you there", "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=seconds) as answer:  # noqa: S310
            answer.read()
    except TimeoutError:
        return True
    except urllib.error.URLError as error:
        return isinstance(error.reason, TimeoutError)
    return False


def health(port: int) -> int:
    """The status ``/health`` answers now (0: no answer)."""
    try:
        url = f"http://127.0.0.1:{port}/health"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


class Running:
    """The sims and loads a test started (add them); :meth:`end` ends each."""

    def __init__(self) -> None:
        self.sims: list[Sim] = []
        self.loads: list[Load] = []

    def sim(self, sim: Sim) -> Sim:
        self.sims.append(sim)
        return sim

    def load(self, port: int, **kwargs: object) -> Load:
        load = Load(port, **kwargs)  # type: ignore[arg-type]
        self.loads.append(load)
        return load

    def end(self) -> None:
        for load in self.loads:
            load.kill()
        for sim in self.sims:
            sim.stop()


@dataclass(frozen=True)
class Answer:
    """One answer of the watch for a service: the host's time it was checked at and the
    report (None: the round trip failed)."""

    at: float | None
    report: ServiceReport | None

    @property
    def verdict(self) -> Verdict:
        return self.report.verdict if self.report is not None else Verdict.UNKNOWN


class Answers:
    """Every answer ``watch`` gives for ``service``, in order, from when it is made."""

    def __init__(self, watch: HostWatch, service: str) -> None:
        self.service = service
        self.got: list[Answer] = []
        self._seen = watch.answers
        self._stop = watch.listen(self._heard)

    def _heard(self, watch: HostWatch) -> None:
        if watch.answers == self._seen:
            return  # a round trip set off, or a state it told already
        self._seen = watch.answers
        report = watch.state.reports.get(self.service) if watch.state.failure is None else None
        self.got.append(Answer(report.assessment.checked_at if report else None, report))

    def close(self) -> None:
        self._stop()

    def verdicts(self) -> list[str]:
        return [a.verdict.word for a in self.got]

    def since(self, at: float) -> list[Answer]:
        """The answers checked at ``at`` or later (host time)."""
        return [a for a in self.got if a.at is not None and a.at >= at]
