"""A ``match:`` pattern must name something of its own service.

A bare name (``sglang``, ``vllm serve``) matches any server of that engine, another
user's included; :func:`too_broad` says why a pattern is refused, or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

try:  # the regex parser of the standard library, to read a match: pattern's literal text
    from re import _parser as _sre_parser  # type: ignore[attr-defined]  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parser  # type: ignore[no-redef]


#: A literal path: a ``/`` with a name beside it (``/models/qwen``, ``Qwen/Qwen3-8B``).
_PATH_RE = re.compile(r"[\w.~-]/|/[\w.~-]")
#: A literal flag with its value (``--port 30000``, ``--served-model-name=qwen``).
_FLAG_RE = re.compile(r"--[A-Za-z][\w-]*[ =][^\s]")
#: More ways to match than this and the pattern is refused as too intricate to check.
_MAX_MATCH_PATHS = 256

MATCH_RULE = (
    "every way it can match must contain, as literal text, the service's port, "
    "a path (a '/' next to a name: /models/qwen, Qwen/Qwen3-8B, ./serve.sh) "
    "or a flag with its value (--port 30000, --served-model-name qwen)"
)


def too_broad(pattern: str, port: int | None) -> str | None:
    """Why ``pattern`` (a valid ``match:`` regex) could claim another service's process,
    or None when every way it matches names something of this service's own.

    A bare name (``sglang``, ``vllm serve``, ``python3 -m sglang.launch_server``) matches
    any server of that engine, another user's included. The literal text of each
    alternative is read from the regex's parse tree, so ``.``, classes and optional
    parts never count as text that must appear.
    """
    try:
        paths = _literal_paths(_sre_parser.parse(pattern).data)
    except _TooIntricate:
        return (
            f"has more than {_MAX_MATCH_PATHS} alternatives; babysit cannot check that "
            f"{MATCH_RULE}; write one plain pattern per service"
        )
    port_re = re.compile(rf"(?<!\d){port}(?!\d)") if port is not None else None
    for path in paths:
        runs = _runs(path)
        if any(
            _PATH_RE.search(run) or _FLAG_RE.search(run) or (port_re and port_re.search(run))
            for run in runs
        ):
            continue
        text = " … ".join(runs)
        if len(paths) > 1:
            which = f"its alternative {text!r}" if text else "one of its alternatives"
        else:
            which = f"its literal text {text!r}" if text else "it has no literal text and"
        example = f"--port {port}( |$)" if port is not None else "--model-path /models/qwen"
        return (
            f"{pattern!r} is too broad: {which} names nothing of this service's own, so it "
            f"would claim any such process, another user's included; {MATCH_RULE} "
            f"(e.g. {example!r})"
        )
    return None


def _runs(path: _Path) -> list[str]:
    """The stretches of literal text on one path through a regex."""
    runs: list[str] = []
    current: list[str] = []
    for token in [*path, None]:
        if token is not None:
            current.append(token)
        elif current:
            runs.append("".join(current))
            current = []
    return runs


class _TooIntricate(Exception):
    pass


# A path is one way through the regex: a list of literal characters, with None where
# anything (a class, ``.``, an optional part) may stand between them.
_Path = list[str | None]
_REPEATS = tuple(
    op
    for op in (
        _sre_parser.MAX_REPEAT,
        _sre_parser.MIN_REPEAT,
        getattr(_sre_parser, "POSSESSIVE_REPEAT", None),
    )
    if op is not None
)


def _literal_paths(items: Iterable[tuple[object, object]]) -> list[_Path]:
    paths: list[_Path] = [[]]
    for op, av in items:
        choices = _item_paths(op, av)
        if len(paths) * len(choices) > _MAX_MATCH_PATHS:
            raise _TooIntricate
        paths = [path + choice for path in paths for choice in choices]
    return paths


def _item_paths(op: object, av: object) -> list[_Path]:
    """The ways through one item of a parsed regex."""
    sre = _sre_parser
    if op is sre.LITERAL:
        paths: list[_Path] = [[chr(av)]]  # type: ignore[arg-type]
    elif op is sre.SUBPATTERN or op is getattr(sre, "ATOMIC_GROUP", None):
        paths = _literal_paths(av[-1] if op is sre.SUBPATTERN else av)  # type: ignore[index,arg-type]
    elif op is sre.BRANCH:
        paths = [p for branch in av[1] for p in _literal_paths(branch)]  # type: ignore[index]
        if len(paths) > _MAX_MATCH_PATHS:
            raise _TooIntricate
    elif op in _REPEATS:
        low, high, body = av  # type: ignore[misc]
        if low == 0:
            paths = [[None]]
        else:
            inner = _literal_paths(body)
            paths = inner if low == high == 1 else [[None, *p, None] for p in inner]
    elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        paths = [[]]  # zero-width: neither text nor a gap
    else:
        paths = [[None]]  # ., a class, a back-reference: something, but no set text
    return paths
