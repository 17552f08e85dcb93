"""The hops babysit knows, one module each; ask here, never name one elsewhere.

Every module of this package other than :mod:`~tui.hops.spec` is a kind of hop and
defines ``SPEC`` (a :class:`~tui.hops.spec.HopSpec`); adding a kind is adding its
module. The hosts.yaml reader builds a host's chain from :func:`specs`, the
transports run what each hop says, and ``babysit check`` asks each hop whether it
answers. The modules are found at first use, so :mod:`tui.config` (which they
import) never waits on them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from functools import cache
from types import MappingProxyType

from tui.hops.spec import DEFAULT_PYTHON, Hop, HopSpec


@cache
def specs() -> Mapping[str, HopSpec]:
    """Every kind of hop by its hosts.yaml key, in rank order (then by name)."""
    found: list[HopSpec] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "spec" or info.name.startswith("_"):
            continue
        found.append(importlib.import_module(f"{__name__}.{info.name}").SPEC)
    found.sort(key=lambda spec: (spec.rank, spec.kind))
    return MappingProxyType({spec.kind: spec for spec in found})


def python_of(hops: Iterable[Hop]) -> str:
    """The python the agent runs with at the end of ``hops``: each hop's choice, in turn."""
    python = DEFAULT_PYTHON
    for hop in hops:
        python = hop.python(python)
    return python


def chain_of(hops: Iterable[Hop]) -> tuple[str, ...]:
    """The words of each hop, in order (``("ssh root@gpu1", "docker exec sglang-0")``)."""
    return tuple(text for hop in hops for text in hop.texts)


__all__ = ["Hop", "HopSpec", "chain_of", "python_of", "specs"]
