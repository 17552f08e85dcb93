"""How much of a text repeats itself: the share of its tokens covered by n-grams that
occur at least twice (a model caught in a loop scores near 1, fresh prose near 0).

Tokens are the text's words (split at white space, case folded), or its characters
(white space left out) when it has few spaces: under one per :data:`CHARS_PER_SPACE`
characters, as Chinese, Japanese or code without spaces. The n-grams are
:data:`WORD_GRAM` words (a phrase: a shared article or ``of the`` does not count) or
:data:`CHAR_GRAM` characters, and never longer than a third of the tokens, so a short
text looped three times still shows its loop.
"""

from __future__ import annotations

from collections import Counter

#: Words per n-gram: four words that come again in the same order are a repeated phrase.
WORD_GRAM = 4
#: Characters per n-gram for text read by its characters (about two CJK words).
CHAR_GRAM = 8
#: Text with fewer spaces than one per this many characters is read by its characters.
CHARS_PER_SPACE = 12
#: A text repeated this many times always scores 1: the n-grams are at most this
#: share of its tokens.
LOOPS_SEEN = 3


def tokens_of(text: str) -> tuple[list[str], int]:
    """The text's tokens and the n-gram length used for them."""
    words = text.lower().split()
    chars = sum(len(word) for word in words)
    if words and chars > CHARS_PER_SPACE * len(words):
        return list("".join(words)), CHAR_GRAM
    return words, WORD_GRAM


def repetition_score(text: str) -> float:
    """The share of ``text`` covered by n-grams that occur more than once (0: none, 1: all);
    0 for a text with no tokens. Never raises."""
    tokens, gram = tokens_of(text)
    size = min(gram, len(tokens) // LOOPS_SEEN)
    if size < 1:
        return 0.0
    grams = [tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)]
    counts = Counter(grams)
    covered = [False] * len(tokens)
    for start, found in enumerate(grams):
        if counts[found] > 1:
            for at in range(start, start + size):
                covered[at] = True
    return sum(covered) / len(tokens)
