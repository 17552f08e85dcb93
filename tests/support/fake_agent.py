"""A ``python3`` for a test host that runs the real agent and changes what it answers.

Installed as ``python3`` first on a test sshd's session PATH (see :func:`install`),
it reads the bootstrap's input from its stdin as the real interpreter would (the
"<n> <m>" line, the agent's source, the request), starts the real python3 with the
same arguments and the same input, and passes the agent's output back, except that
for the modes named in ``fake-agent.json`` beside it each JSON line after the
agent's mark is changed:

- ``{"poison": {"modes": [...], "keys": [...], "text": "..."}}``: every string
  under one of ``keys`` gets ``text`` appended (a list of strings gets it as one
  more item); everything else, and the answer's shape, stays as the agent said;
- ``{"replace": {"modes": [...], "line": "..."}}``: every answer line is ``line``.

Anything other than those modes (a follower's frames, which carry raw bytes) passes
through as it is. With no ``fake-agent.json``, it is the real python3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent


def install(bin_dir: Path) -> Path:
    """Put this ``python3`` in ``bin_dir``; returns the control file to write."""
    shim = bin_dir / "python3"
    control = bin_dir / "fake-agent.json"
    shim.write_text(
        f'#!/bin/sh\nFAKE_AGENT_CONTROL="{control}" exec "{sys.executable}" '
        f'"{HERE / "fake_agent.py"}" "$@"\n'
    )
    shim.chmod(0o755)
    return control


def _read(n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _change(value: object, keys: set[str], text: str) -> object:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                out[key] = item + text
            elif key in keys and isinstance(item, list) and all(isinstance(x, str) for x in item):
                out[key] = [*item, text]
            else:
                out[key] = _change(item, keys, text)
        return out
    if isinstance(value, list):
        return [_change(item, keys, text) for item in value]
    return value


def main() -> int:
    argv = sys.argv[1:]
    control_file = Path(os.environ["FAKE_AGENT_CONTROL"])
    control = json.loads(control_file.read_text()) if control_file.is_file() else {}
    if "-c" not in argv:  # `python3 --version`, scripts: the real one
        os.execv(sys.executable, [sys.executable, *argv])  # noqa: S606 - the real python3
    head = b""
    while not head.endswith(b"\n"):
        byte = _read(1)
        if not byte:
            break
        head += byte
    try:
        source_size, request_size = (int(x) for x in head.split())
    except ValueError:
        os.execv(sys.executable, [sys.executable, *argv])  # noqa: S606 - the real python3
    source = _read(source_size)
    request = _read(request_size)
    mode = json.loads(request).get("mode")
    rule = next(
        (
            (kind, spec)
            for kind, spec in control.items()
            if kind in ("poison", "replace") and mode in spec.get("modes", ())
        ),
        None,
    )
    child = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(head + source + request)
    child.stdin.flush()

    def forward() -> None:
        while chunk := os.read(0, 65536):
            child.stdin.write(chunk)  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
        child.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=forward, daemon=True).start()
    out = sys.stdout.buffer
    if rule is None:
        while chunk := child.stdout.read1(65536):
            out.write(chunk)
            out.flush()
        return child.wait()
    kind, spec = rule
    marked = False
    for line in child.stdout:
        if not marked:  # the agent's mark line (and whatever came before it) as it is
            marked = line.startswith(b"\x1ebabysit-agent:")
            out.write(line)
        elif not line.strip():
            out.write(line)
        elif kind == "replace":
            out.write(spec["line"].encode("utf-8", "surrogatepass") + b"\n")
        else:
            answer = json.loads(line)
            changed = _change(answer, set(spec["keys"]), spec["text"])
            out.write(json.dumps(changed, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            out.write(b"\n")
        out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
