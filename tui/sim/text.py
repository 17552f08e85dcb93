"""The text a simulated server generates: ordinary words, or one phrase again and again."""

from __future__ import annotations

import random

#: what an ordinary answer says, word after word, from a place that depends on the request
_ANSWER = (
    "the model answers each request with a steady stream of tokens while the scheduler "
    "keeps the batch full and the cache warm so that every user sees the first word "
    "quickly and the rest follows at an even pace across the whole cluster of eight "
    "accelerators in the rack"
)
_WORDS = _ANSWER.split()
#: what a looping answer (the repeat scenario) says again and again
_LOOP = ["I", "will", "repeat", "the", "answer."]


def generated(tokens: int, rid: int, *, repeat: bool) -> str:
    """About ``tokens`` tokens of text for request ``rid`` (looping when ``repeat``)."""
    return piece(0, tokens, rid, repeat=repeat)


def piece(first: int, end: int, rid: int, *, repeat: bool) -> str:
    """Tokens ``first`` to ``end`` (excluded) of request ``rid``'s text, each a space and
    a word, so the pieces of a stream joined are :func:`generated`. An ordinary answer's
    words are drawn anew for each position (seeded by the request and the position), so it
    does not loop however long it runs; the repeat scenario's phrase does."""
    if repeat:
        return "".join(" " + _LOOP[i % len(_LOOP)] for i in range(max(first, 0), end))
    return "".join(" " + _word(rid, i) for i in range(max(first, 0), end))


def _word(rid: int, position: int) -> str:
    return random.Random(rid * 1_000_003 + position).choice(_WORDS)
