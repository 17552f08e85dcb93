"""What each engine prints that babysit looks for, in one place.

Every list here is read by all the code that needs it (the probe request, the
launch diff, the run boundaries, the readiness wait, the reports); none keeps a
copy. Engines are named by their ``engine:`` value in hosts.yaml (``sglang``,
``vllm``, ``generic``), which both engine enums share.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArgsHead:
    """The text that starts the line where a server prints the arguments it runs with.

    ``form`` is the :class:`tui.core.launch.ReportedFormat` value the line is read as.
    """

    engine: str
    text: str
    form: str


#: The args lines of every release, newest form first within each engine.
ARGS_HEADS: tuple[ArgsHead, ...] = (
    # SGLang >= 0.5.20: server_args={'model_path': ..., ...} (a dict; redacted from 0.5.22)
    ArgsHead("sglang", "server_args={", "sglang-server-args-dict"),
    # SGLang <= 0.5.18: server_args=ServerArgs(model_path=..., ...) (the dataclass repr)
    ArgsHead("sglang", "server_args=ServerArgs(", "sglang-server-args"),
    # vLLM >= 0.9: non-default args: {'model': ..., ...}
    ArgsHead("vllm", "non-default args: {", "vllm-non-default-args"),
    # vLLM <= 0.8: args: Namespace(model=..., ...)
    ArgsHead("vllm", "args: Namespace(", "vllm-args-namespace"),
)


def args_heads(engine: str) -> tuple[str, ...]:
    """The args-line heads to look for in a log of ``engine`` (every engine's for
    ``generic``, whose log may come from any of them)."""
    known = {head.engine for head in ARGS_HEADS}
    return tuple(h.text for h in ARGS_HEADS if h.engine == engine or engine not in known)
