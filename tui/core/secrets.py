"""Secrets in command lines and environments: known by their name, never shown, still compared.

A flag or a variable whose name says it holds a key, a token, a secret or a
password (``--api-key``, ``--hf-token``, ``--ssl-keyfile-password``, ``HF_TOKEN``,
``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``) has its value replaced by
``<redacted, 16 chars>`` wherever babysit shows or stores it. :func:`redact_argv`
is the one place that does it for a command line (``--flag value``, ``--flag=value``,
``NAME=value`` words as ``env`` takes them, and the same inside a shell script
given to ``sh -c``); :func:`redact_env` for an environment.

The value is read once, where the text enters babysit's data, and what takes its
place is a :class:`Redacted` word: it reads as the placeholder and carries a keyed
digest of the value (HMAC-SHA-256 under a key this process draws at random and
never writes anywhere). Two redacted words are equal exactly when they say the
same and their values are the same, so the launch diff can still tell that the
key a server runs with differs from the one hosts.yaml names without either
value ever being kept, printed or stored.
"""

from __future__ import annotations

import functools
import hmac
import re
import secrets as random_source
import shlex
from collections.abc import Mapping, Sequence

#: Parts of a name that say its value is a secret wherever they stand in it.
_ANYWHERE = re.compile(r"secret|passw(?:or)?d|passphrase|credential", re.IGNORECASE)
#: Last words of a name that say so (``--api-key``, ``HF_TOKEN``; not ``--max-tokens``,
#: ``--tokenizer`` or ``--ssl-keyfile``, whose values are counts, names and paths).
_LAST_WORDS = frozenset({"key", "keys", "apikey", "apikeys"})
_LAST_ENDINGS = ("token", "apikey")
#: Flags of these families are switches: a word after one is not its value.
_SWITCH_PREFIXES = ("no-", "enable-", "disable-")
#: A value that is already a mask, not a secret: babysit's own placeholder (an argv read
#: back from a record) or what a server prints in a secret's place (SGLang >= 0.5.22 and
#: vLLM redact their args lines): kept as it is, never redacted again as if it were one.
_MASK = re.compile(r"<[^<>]*(?:redacted|hidden|masked|secret)[^<>]*>|\*{3,}", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_NUMBER = re.compile(r"-\d|-\.\d")
# Inside a shell script: ``--name value``, ``--name=value`` and ``NAME=value``, the value
# one shell word (quoted or not).
# The pair is looked at without being taken (a lookahead): the word after a name that is
# no secret is looked at again as a name of its own (``cd /srv && vllm serve --api-key k``).
# The value is one whole shell word: quoted parts, $(…) and `…`, escapes and bare
# characters, in any mix (``SEK'RET'``, ``$(cat /run/key)``, ``SEK\ RET``).
_SCRIPT_PAIR = re.compile(
    r"""(?P<name>(?<![\w./-])--?[A-Za-z][\w.-]*|(?<![\w$./-])[A-Za-z_]\w*)"""
    r"""(?=(?P<sep>=|(?:[ \t]|\\\n)+)"""
    r"""(?P<value>(?:'[^']*'|"(?:[^"\\]|\\.)*"|\$\([^)]*\)|`[^`]*`|\\[\s\S]"""
    r"""|[^\s'"`\\;&|()<>])+))"""
)
#: Flags after which the next word is a shell script: ``-c`` (and ``-lc``, ``-ec``, …), ``-S``.
_SCRIPT_FLAG = re.compile(r"-[a-zA-Z]*c|-S")

_KEY = random_source.token_bytes(32)


@functools.lru_cache(maxsize=4096)  # the same flag and variable names, probe after probe
def secret_name(name: str) -> bool:
    """Whether a flag or variable named ``name`` holds a secret (by its name alone)."""
    if _ANYWHERE.search(name):
        return True
    words = [w for w in re.split(r"[-_.]+", name.lower()) if w]
    if not words:
        return False
    last = words[-1]
    return last in _LAST_WORDS or last.endswith(_LAST_ENDINGS)


def placeholder(value: str) -> str:
    """What is shown in a secret's place: ``<redacted, 16 chars>``."""
    return f"<redacted, {len(value)} chars>"


def is_mask(value: object) -> bool:
    """Whether ``value`` is a mask in a secret's place (``<redacted>``, ``***``), which
    says nothing of the secret. A :class:`Redacted` word is none: it carries its digest."""
    return (
        isinstance(value, str)
        and not isinstance(value, Redacted)
        and _MASK.fullmatch(value.strip()) is not None
    )


def digest(value: str) -> str:
    """The value's keyed digest: equal for equal values in this process, and nothing an
    onlooker can invert or test a guess against."""
    data = value.encode("utf-8", "surrogateescape")
    return hmac.new(_KEY, data, "sha256").hexdigest()


class Redacted(str):
    """A word of an argv (or a value) whose secret is replaced by its placeholder.

    It is the text that is shown (``<redacted, 16 chars>``, ``--api-key=<redacted,
    16 chars>``) and carries :attr:`digest`, the digest of what it replaced. Two are
    equal when their text and their digests are; a redacted word never equals plain
    text, so a secret compared with anything but another redacted secret differs."""

    digest: str

    def __new__(cls, shown: str, digest: str) -> Redacted:
        word = super().__new__(cls, shown)
        word.digest = digest
        return word

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Redacted)
            and str.__eq__(self, other)
            and hmac.compare_digest(self.digest, other.digest)
        )

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((str(self), self.digest))

    def __reduce__(self) -> tuple[object, ...]:
        return (Redacted, (str(self), self.digest))

    def tail(self, start: int) -> Redacted:
        """The text from ``start`` on (past ``--api-key=``), still carrying the digest."""
        return Redacted(str(self)[start:], self.digest)


def redact_value(value: object, prefix: str = "") -> str:
    """``prefix`` and the placeholder of ``value`` (kept as it is when already redacted,
    None or empty: there is nothing to hide)."""
    if isinstance(value, Redacted) or value is None or value == "" or isinstance(value, bool):
        return value  # type: ignore[return-value]
    text = value if isinstance(value, str) else str(value)
    if is_mask(text):
        return prefix + text
    return Redacted(prefix + placeholder(text), digest(text))


def _is_flag(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--") and _NUMBER.match(word) is None


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` with the value of every secret-named flag or variable redacted; every
    other word as it is. Idempotent: a redacted argv (also as plain text, read back from
    JSON) is given back the same."""
    shown: list[str] = []
    taking = False
    script = False
    for word in argv:
        if isinstance(word, Redacted):
            shown.append(word)
            script = False
            continue
        if taking and not _is_flag(word):
            shown.append(redact_value(word))
            taking = script = False
            continue
        taking = False
        shown.append(_redact_script(word) if script else _redact_word(word))
        # ``sh -c SCRIPT``, ``bash -lc SCRIPT``, ``env -S SCRIPT``: the next word is a script.
        script = _SCRIPT_FLAG.fullmatch(word) is not None
        if _is_flag(word) and "=" not in word:
            name = word.lstrip("-")
            taking = secret_name(name) and not name.startswith(_SWITCH_PREFIXES)
    return tuple(shown)


def _redact_word(word: str) -> str:
    if _is_flag(word):
        name, eq, value = word.partition("=")
        if eq and secret_name(name):
            return redact_value(value, name + "=")
        if eq:  # ``--env=HF_TOKEN=…`` (docker, podman): the value is an assignment
            inner = _redact_word(value) if _ASSIGNMENT.fullmatch(value) else value
            return word if inner == value else Redacted(name + "=" + inner, digest(word))
        return word
    assignment = _ASSIGNMENT.fullmatch(word)
    if assignment is not None and secret_name(assignment.group(1)):
        # The whole value, spaces and all (``env 'DB_PASSWORD=correct horse'``).
        return redact_value(assignment.group(2), assignment.group(1) + "=")
    if any(c.isspace() for c in word):  # a script given some other way (``ssh host '…'``)
        return _redact_script(word)
    return word


def _redact_script(script: str) -> str:
    """A shell script's secret-named flags and assignments redacted, the rest kept."""
    parts: list[str] = []
    done = 0
    for match in _SCRIPT_PAIR.finditer(script):
        if match.start() < done:
            continue  # inside a value already redacted
        name, sep, value = match.group("name", "sep", "value")
        flag = name.startswith("-")
        if not secret_name(name) or (not flag and sep != "="):
            continue
        if flag and name.lstrip("-").startswith(_SWITCH_PREFIXES):
            continue
        inner = value[1:-1] if value[:1] in "'\"" and len(value) > 1 else value
        value_at = match.end() + len(sep)
        parts.append(script[done:value_at])
        parts.append(placeholder(inner))
        done = value_at + len(value)
    if not parts:
        return script
    parts.append(script[done:])
    return Redacted("".join(parts), digest(script))


_SHOWN_BARE = re.compile(r"(?:[\w.-]+=)*<redacted, \d+ chars>")


def command_text(argv: Sequence[str]) -> str:
    """A command line as one line of text, its secrets redacted: each word quoted for a
    shell as :func:`shlex.join` does, but a placeholder stands bare
    (``--api-key <redacted, 16 chars>``), since it is no value to paste."""
    return " ".join(
        word if _SHOWN_BARE.fullmatch(word) else shlex.quote(word) for word in redact_argv(argv)
    )


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the value of every secret-named variable redacted."""
    return {
        name: redact_value(value) if secret_name(name) else value for name, value in env.items()
    }


__all__ = [
    "Redacted",
    "command_text",
    "digest",
    "is_mask",
    "placeholder",
    "redact_argv",
    "redact_env",
    "redact_value",
    "secret_name",
]
