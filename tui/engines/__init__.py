"""The engines babysit knows, one module each; ask here, never name one elsewhere.

Every module of this package other than :mod:`~tui.engines.spec` is an engine
and defines ``SPEC`` (an :class:`~tui.engines.spec.EngineSpec`); adding an engine
is adding its module (and its simulator's, under ``tui/sim/``). :data:`Engine`
is the enum of their names that hosts.yaml, the reports and the JSON share.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil

from tui.engines.spec import EngineSpec

#: The engine babysit falls back on: a log it cannot read, a server it does not know.
GENERIC = "generic"


def _discover() -> dict[str, EngineSpec]:
    specs: dict[str, EngineSpec] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "spec" or info.name.startswith("_"):
            continue
        spec = importlib.import_module(f"{__name__}.{info.name}").SPEC
        specs[spec.name] = spec
    return specs


SPECS: dict[str, EngineSpec] = _discover()


class _EngineBase(enum.Enum):
    """An engine's name; :attr:`spec` is what babysit knows of it."""

    @property
    def spec(self) -> EngineSpec:
        return SPECS[self.value]

    @property
    def title(self) -> str:
        return SPECS[self.value].title


#: ``Engine.SGLANG``, ``Engine.VLLM``, ``Engine.LLAMACPP``, ``Engine.TGI``, ``Engine.GENERIC``...
Engine = _EngineBase("Engine", {name.upper(): name for name in SPECS})  # type: ignore[misc]


def spec(name: object) -> EngineSpec:
    """The spec of an engine named by its enum member or its name (generic's for any other)."""
    raw = getattr(name, "value", name)
    return SPECS.get(raw, SPECS[GENERIC]) if isinstance(raw, str) else SPECS[GENERIC]


def readable() -> tuple[EngineSpec, ...]:
    """The engines whose logs babysit reads (those with a line reader), in name order."""
    return tuple(s for s in SPECS.values() if s.reader is not None)


def of_program(argv: list[str] | tuple[str, ...]) -> EngineSpec | None:
    """The engine a command line starts (by its program or module words), or None."""
    for word in argv:
        base = word.rsplit("/", 1)[-1].lower()
        for candidate in SPECS.values():
            if any(base.startswith(program) for program in candidate.programs):
                return candidate
    return None


def of_log(name: object) -> tuple[EngineSpec, ...]:
    """The engines whose lines a log of engine ``name`` may hold: its own, or every
    engine's but generic's for a generic server (its log may come from any of them)."""
    own = spec(name)
    if own.name != GENERIC:
        return (own,)
    return tuple(s for s in SPECS.values() if s.name != GENERIC)
