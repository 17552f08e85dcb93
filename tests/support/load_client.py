"""A client program that keeps a server busy: ``load_client.py PORT STREAMS TOKENS TIMEOUT
stream|whole``.

Each of STREAMS threads sends ``/v1/completions`` requests one after another (streamed or
not) and writes one byte to stdout per answer. SIGTERM: no more requests; it exits once
those in flight are answered. A request the server never answers keeps its thread
waiting (up to TIMEOUT seconds); a server gone ends the thread.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import urllib.error
import urllib.request

STOP = threading.Event()
WRITE = threading.Lock()


def stream(port: int, tokens: int, timeout: float, streamed: bool) -> None:
    body = json.dumps({"prompt": "hello", "max_tokens": tokens, "stream": streamed}).encode()
    while not STOP.is_set():
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
                answer.read()
        except (OSError, urllib.error.URLError):
            return
        with WRITE:
            sys.stdout.buffer.write(b".")
            sys.stdout.buffer.flush()


def main(argv: list[str]) -> None:
    port, streams, tokens, timeout = int(argv[0]), int(argv[1]), int(argv[2]), float(argv[3])
    streamed = argv[4] == "stream"
    threads = [
        threading.Thread(target=stream, args=(port, tokens, timeout, streamed), daemon=True)
        for _ in range(streams)
    ]
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(0.1)


if __name__ == "__main__":
    main(sys.argv[1:])
