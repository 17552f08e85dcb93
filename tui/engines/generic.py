"""A server babysit has no module for: its process, its log's bytes and ``ready:`` from
hosts.yaml, no metric lines, no args line."""

from __future__ import annotations

from tui.engines.spec import EngineSpec, Stamp

SPEC = EngineSpec(
    name="generic",
    title="generic server",
    # ISO-8601 at the start of a line, bracketed or not
    stamps=(Stamp(r"\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)"),),
)
