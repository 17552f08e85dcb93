"""How TGI writes a line: the launcher's and the router's ``tracing-subscriber`` formats.

Launcher (``launcher/src/main.rs``): ``fmt().compact()``, or ``fmt().json()``
with ``--json-output``. Router (``router/src/logging.rs``): the full format
with ``with_file(true).with_line_number(true)``, ANSI colours unless
``LOG_COLORIZE=1`` (``ansi = LOG_COLORIZE != "1"``), or ``json().flatten_event(true)``
with ``--json-output`` (the launcher passes the flag on). The launcher prints
the router's lines verbatim; the Python shard's lines reach the log re-logged
by the launcher with no span.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tui.sim.engine import Engine
from tui.sim.out import STDERR, STDOUT
from tui.sim.tgi.releases import SITES
from tui.sim.version import Version

LAUNCHER = "text_generation_launcher"
#: tracing's level names, padded to five as the text formats print them
LEVELS = {"INFO": " INFO", "WARN": " WARN", "ERROR": "ERROR", "DEBUG": "DEBUG"}
LEVEL_COLORS = {"INFO": "32", "WARN": "33", "ERROR": "31", "DEBUG": "34"}
_DIM, _BOLD, _ITALIC, _RESET = "\033[2m", "\033[1m", "\033[3m", "\033[0m"
COLORIZE_ENV = "LOG_COLORIZE"


@dataclass(frozen=True)
class Field:
    """One span field: ``text`` as the text formats show it (strings quoted), ``value`` for JSON."""

    key: str
    text: str
    value: object

    @classmethod
    def string(cls, key: str, value: str) -> Field:
        """A field recorded as ``format!(...)`` (a ``&str``: quoted in text)."""
        return cls(key, json.dumps(value, ensure_ascii=False), value)

    @classmethod
    def debug(cls, key: str, value: str) -> Field:
        """A field recorded with ``?`` (its Debug text, unquoted; a string in JSON)."""
        return cls(key, value, value)

    @classmethod
    def number(cls, key: str, value: int) -> Field:
        return cls(key, str(value), value)


@dataclass(frozen=True)
class Span:
    name: str
    fields: tuple[Field, ...] = ()


def utc_stamp(now: float | None = None) -> str:
    """tracing-subscriber's default timer: RFC 3339 in UTC with microseconds."""
    now = time.time() if now is None else now
    micros = int(now * 1_000_000) % 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{micros:06d}Z"


def _dim(text: str) -> str:
    return f"{_DIM}{text}{_RESET}"


def _json(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _json_span(span: Span, *, sort: bool) -> dict[str, object]:
    fields = {field.key: field.value for field in span.fields}
    if sort:
        fields = dict(sorted(fields.items()))
    return {**fields, "name": span.name}


class TgiLines(Engine):
    """The line writers every part of :class:`tui.sim.tgi.engine.TGI` uses."""

    v: Version
    json_output: bool
    layout: str

    @property
    def router_colour(self) -> bool:
        return os.environ.get(COLORIZE_ENV) != "1"

    def launcher(self, message: str, level: str = "INFO", span: Span | None = None) -> None:
        """One launcher record (compact or JSON); multi-line messages stay as written."""
        stamp = utc_stamp()
        if self.json_output:
            record: dict[str, object] = {
                "timestamp": stamp,
                "level": level,
                "fields": {"message": message},
                "target": LAUNCHER,
            }
            if span is not None:
                record["span"] = _json_span(span, sort=False)
                record["spans"] = [_json_span(span, sort=False)]
            self.host.out.line(_json(record), STDOUT)
            return
        head = f"{span.name}: " if span is not None else ""
        tail = "".join(f" {field.key}={field.text}" for field in span.fields) if span else ""
        self.host.out.line(f"{stamp} {LEVELS[level]} {head}{LAUNCHER}: {message}{tail}", STDOUT)

    def router(
        self, key: str, message: str, level: str = "INFO", spans: Sequence[Span] = ()
    ) -> None:
        """One router record from call site ``key`` (full format, coloured or not, or JSON)."""
        target, file, line = SITES[self.layout][key]
        stamp = utc_stamp()
        if self.json_output:
            record: dict[str, object] = {
                "timestamp": stamp,
                "level": level,
                "message": message,
                "target": target,
                "filename": file,
                "line_number": line,
            }
            if spans:
                # span fields go through a serde_json map: keys in sorted order, name last
                record["span"] = _json_span(spans[-1], sort=True)
                record["spans"] = [_json_span(span, sort=True) for span in spans]
            self.host.out.line(_json(record), STDOUT)
            return
        if not self.router_colour:
            context = "".join(
                span.name
                + (
                    "{" + " ".join(f"{f.key}={f.text}" for f in span.fields) + "}"
                    if span.fields
                    else ""
                )
                + ":"
                for span in spans
            )
            context = context + " " if context else ""
            self.host.out.line(
                f"{stamp} {LEVELS[level]} {context}{target}: {file}:{line}: {message}", STDOUT
            )
            return
        context = ""
        for span in spans:
            context += f"{_BOLD}{span.name}{_RESET}"
            if span.fields:
                inner = " ".join(
                    f"{_ITALIC}{f.key}{_RESET}{_dim('=')}{f.text}" for f in span.fields
                )
                context += f"{_BOLD}{{{_RESET}{inner}{_BOLD}}}{_RESET}"
            context += _dim(":")
        context = context + " " if context else ""
        coloured_level = f"\033[{LEVEL_COLORS[level]}m{LEVELS[level]}{_RESET}"
        where = f"{_dim(target)}{_dim(':')} {_dim(file)}{_dim(':')}{_DIM}{line}:{_RESET}"
        self.host.out.line(f"{_dim(stamp)} {coloured_level} {context}{where} {message}", STDOUT)

    def shard_span(self, rank: int) -> Span:
        return Span("shard-manager", (Field.number("rank", rank),))

    def fatal(self, error: str) -> None:
        """What Rust prints when ``main`` returns ``Err``: ``Error: {:?}`` on stderr."""
        self.host.out.line(f"Error: {error}", STDERR)

    def access(self, client: str, request_line: str, status: int) -> None:
        """The router writes no access log."""
