"""A service's ``wedged_after:`` and ``canary:`` (the completion that checks it serves)."""

from __future__ import annotations

import re

import yaml

from tui.config import DEFAULT_WEDGED_AFTER, CanaryConfig
from tui.hostsfile.reader import Reader, value_node

#: The keys of a service's ``canary:``.
CANARY_KEYS = ("every", "prompt", "max_tokens", "timeout", "sampling")
#: The most tokens a canary may ask for (it is a small completion).
MAX_CANARY_TOKENS = 4096
#: The longest period, timeout and ``wedged_after`` hosts.yaml may give (a day).
MAX_SECONDS = 86400.0
#: Parameters in ``canary.sampling``.
MAX_SAMPLING = 32
#: A sampling parameter's name (``temperature``, ``top_p``, …).
SAMPLING_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_wedged_after(reader: Reader, key: str, node: yaml.Node | None) -> float:
    """``wedged_after:``: seconds of pending work without progress before WEDGED."""
    if node is None:
        return DEFAULT_WEDGED_AFTER
    return reader.number(node, f"{key}.wedged_after", 0, MAX_SECONDS)


def parse_canary(reader: Reader, key: str, node: yaml.Node | None) -> CanaryConfig:
    """``canary:``, each value checked; the defaults of :class:`CanaryConfig` for what is
    not given (and for no ``canary:`` at all)."""
    default = CanaryConfig()
    if node is None:
        return default
    key = f"{key}.canary"
    entries = reader.mapping(node, key, allowed=CANARY_KEYS)
    every = None
    if (every_node := value_node(entries, "every")) is not None:
        every = reader.number(every_node, f"{key}.every", 0, MAX_SECONDS)
    prompt = default.prompt
    if (prompt_node := value_node(entries, "prompt")) is not None:
        prompt = reader.string(prompt_node, f"{key}.prompt")
    max_tokens = default.max_tokens
    if (tokens_node := value_node(entries, "max_tokens")) is not None:
        max_tokens = reader.integer(tokens_node, f"{key}.max_tokens", 1, MAX_CANARY_TOKENS)
    timeout = default.timeout
    if (timeout_node := value_node(entries, "timeout")) is not None:
        timeout = reader.number(timeout_node, f"{key}.timeout", 0, MAX_SECONDS)
    sampling: tuple[tuple[str, float], ...] = ()
    if (sampling_node := value_node(entries, "sampling")) is not None:
        sampling = _sampling(reader, f"{key}.sampling", sampling_node)
    return CanaryConfig(
        every=every, prompt=prompt, max_tokens=max_tokens, sampling=sampling, timeout=timeout
    )


def _sampling(reader: Reader, key: str, node: yaml.Node) -> tuple[tuple[str, float], ...]:
    """``canary.sampling``: parameter name -> a finite number, in the file's order."""
    entries = reader.mapping(node, key)
    if len(entries) > MAX_SAMPLING:
        raise reader.fail(
            node, key, f"has {len(entries)} parameters; it may have at most {MAX_SAMPLING}"
        )
    pairs = []
    for name, (name_node, number_node) in entries.items():
        where = f"{key}.{name}"
        reader.name(
            name_node,
            name,
            where,
            "a sampling parameter's name uses letters, digits and '_' (temperature, top_p)",
            SAMPLING_NAME_RE,
        )
        pairs.append((name, reader.finite(number_node, where)))
    return tuple(pairs)
