"""The demo's load generator: keeps requests flowing to the simulated servers that serve.

    python -m tui.demo.load --folder DEMO_FOLDER PORT:STREAMS [PORT:STREAMS ...]

Each target gets up to STREAMS concurrent request loops (the OpenAI ``POST
/v1/completions`` that every engine serves), each on one keep-alive connection.
How many of them are busy rises and falls in a slow wave, so throughput and queue
figures move rather than sit flat. A server that is not up yet, or gone, is retried
with a capped backoff.

The process ends by itself once the demo folder is gone, so it can never outlive
its fleet for long, even if nobody signals it. It ends at SIGTERM (which it gets when
the demo's babysit dies, even by SIGKILL), first stopping the workers the fleet
recorded: they live in sessions of their own, and nothing else would end them then.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import random
import signal
import threading
import time
from pathlib import Path

from tui.demo.fleetstate import stop_workers

#: Seconds of one rise and fall of the load.
WAVE_PERIOD = 45.0
REQUEST_TIMEOUT = 60.0
#: Words prompts are made of.
WORDS_TEXT = (
    "the scheduler keeps every batch full while the cache stays warm and each user sees the "
    "first token quickly then the rest at an even pace across the accelerators in the rack"
)
WORDS = tuple(WORDS_TEXT.split(" "))


def wave(now: float, phase: float) -> float:
    """Share of the streams busy at ``now``: between 0.3 and 1."""
    return 0.65 + 0.35 * math.sin(2 * math.pi * now / WAVE_PERIOD + phase)


class Stream(threading.Thread):
    """One request loop on one connection to ``port``; stream ``index`` of ``count``."""

    def __init__(self, port: int, index: int, count: int, stop: threading.Event) -> None:
        super().__init__(name=f"load {port}#{index}", daemon=True)
        self.port = port
        self.index = index
        self.count = count
        self.stop = stop
        self.rng = random.Random(port * 100 + index)
        self.phase = self.rng.uniform(0, 2 * math.pi)
        self.connection: http.client.HTTPConnection | None = None

    def busy_now(self) -> bool:
        return self.index == 0 or wave(time.monotonic(), self.phase) * self.count > self.index

    def run(self) -> None:
        backoff = 0.2
        while not self.stop.is_set():
            if not self.busy_now():
                self.stop.wait(1.0)
                continue
            if self.request():
                backoff = 0.2
                self.stop.wait(self.rng.uniform(0.2, 1.2))
            else:
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)

    def request(self) -> bool:
        """One completion request; False if the server did not answer 200."""
        rng = self.rng
        # a few recurring prompts (cache hits) among fresh ones
        seed = rng.randrange(6) if rng.random() < 0.4 else rng.randrange(10**6)
        words = random.Random(seed).choices(WORDS, k=random.Random(seed).randint(12, 300))
        body = json.dumps(
            {
                "prompt": " ".join(words),
                "max_tokens": rng.randint(128, 768),
                "temperature": 0.7,
            }
        )
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=REQUEST_TIMEOUT
                )
            self.connection.request(
                "POST", "/v1/completions", body, {"content-type": "application/json"}
            )
            answer = self.connection.getresponse()
            answer.read()
            if answer.getheader("connection", "").lower() == "close":
                self.close()
            return answer.status == 200
        except (OSError, http.client.HTTPException):
            self.close()
            return False

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def parse_target(text: str) -> tuple[int, int]:
    port, _, streams = text.partition(":")
    return int(port), int(streams or 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui.demo.load", description=__doc__)
    parser.add_argument("--folder", required=True, help="the demo folder; exit once it is gone")
    parser.add_argument("targets", nargs="+", metavar="PORT:STREAMS", type=parse_target)
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    stop = threading.Event()
    streams = [
        Stream(port, index, count, stop) for port, count in args.targets for index in range(count)
    ]
    for stream in streams:
        stream.start()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        while folder.is_dir() and not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    stop.set()
    stop_workers(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
