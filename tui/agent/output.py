"""The agent's output: frames (a JSON line, then raw bytes) and one-line answers."""

import binascii
import json
import sys


class Closed(Exception):
    """Our stdout or stdin closed: the other end is gone, so are we."""


class Output(object):
    def __init__(self, stream):
        self.stream = stream
        self.bytes_read = 0

    def frame(self, kind, payload=None, **fields):
        fields["t"] = kind
        if payload:
            fields["n"] = len(payload)
        try:
            self.stream.write(json.dumps(fields, separators=(",", ":")).encode("utf-8") + b"\n")
            if payload:
                self.stream.write(payload)
        except (BrokenPipeError, OSError):
            raise Closed() from None

    def flush(self):
        try:
            self.stream.flush()
        except (BrokenPipeError, OSError):
            raise Closed() from None


def hexlify(data):
    return binascii.hexlify(data).decode("ascii")


def unhexlify(text):
    if not text:
        return b""
    try:
        return binascii.unhexlify(text)
    except (TypeError, ValueError):
        return b""


def emit_line(kind, **fields):
    fields["t"] = kind
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()
