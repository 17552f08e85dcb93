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

    ``form`` is the :class:`tui.core.launch.reported.ReportedFormat` value the line is read as.
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


#: Lines that say a part of the server died, or is being torn down because one did, at
#: startup or while serving (substrings; each engine's own, every release).
DEATH_LINES: dict[str, tuple[str, ...]] = {
    "sglang": (
        # Scheduler / DetokenizerManager / TokenizerManager ... hit an exception: Traceback
        " hit an exception: ",
        # the main process's SIGQUIT handler (0.4.3 printed "proces")
        "Received sigquit from a child proces",
        "SIGQUIT received",
        # startup: Rank N scheduler is dead. Please check if there are relevant logs.
        " scheduler is dead",
        # startup, 0.5.23: Rank N scheduler died during initialization (exit code: ...)
        " scheduler died during initialization",
        # the watchdog: Subprocess NAME (pid=N) crashed with exit code C. Triggering SIGQUIT
        " crashed with exit code ",
        # 0.4.6's SIGCHLD handler
        "Child process unexpectedly failed with an exit code",
    ),
    "vllm": (
        "EngineCore failed to start",
        "Engine core initialization failed",
        "Engine process failed to start",  # 0.7.x
        "EngineCore encountered a fatal error",
        # Engine core proc NAME died unexpectedly, shutting down client. (0.11-0.15);
        # Worker proc NAME died unexpectedly (exit code: C), shutting down executor. and
        # RuntimeError: Engine core process NAME died unexpectedly. (0.33)
        " died unexpectedly",
        "MQLLMEngine is already dead",  # V0
    ),
    "generic": (),
}

#: Lines that, before this run's ready line, also mean it failed to start (Python's
#: own; while serving they may be one request's error, so they are not deaths).
STARTUP_FAILURE_LINES: tuple[str, ...] = (
    "Traceback (most recent call last)",
    "RuntimeError",
    "Not enough memory",
    "CUDA out of memory",
)

#: Among a failure's lines, those that say what went wrong: the first of them (in log
#: order) is given as the reason.
TELLING_LINES: tuple[str, ...] = (
    "Not enough memory",
    "CUDA out of memory",
    "RuntimeError",
    "ValueError",
    "EngineCore failed to start",
    "Engine core initialization failed",
    " scheduler is dead",
    " scheduler died during initialization",
    " crashed with exit code ",
    " died unexpectedly",
)


def death_lines(engine: str) -> tuple[str, ...]:
    """What says a part of a running ``engine`` server died (none for ``generic``)."""
    return DEATH_LINES.get(engine, ())


def failure_lines(engine: str) -> tuple[str, ...]:
    """What says a run of ``engine`` failed before it was ready (none for ``generic``,
    whose log babysit cannot read)."""
    deaths = death_lines(engine)
    return (*deaths, *STARTUP_FAILURE_LINES) if deaths else ()
