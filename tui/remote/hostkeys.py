"""Host keys checked as OpenSSH checks them.

An SSH endpoint is first resolved as the connection itself resolves it: the
``asyncssh.SSHClientConnectionOptions`` built for the connection (which reads
``~/.ssh/config``) give the host name dialled, the port, the user, the
``HostKeyAlias`` and the known_hosts files. :class:`HostKeyCheck` then decides,
for that connection alone, whether the key the server offers in its handshake is
trusted, following OpenSSH (``sshconnect.c``):

- a host is looked up in known_hosts as its ``HostKeyAlias`` if one is set,
  otherwise as ``host``, or ``[host]:port`` when the port is not 22;
- a key marked ``@revoked`` for that name is refused, whatever the policy;
- a key of the offered type listed for that name but different is a CHANGED key,
  refused whatever the policy, naming the file and line that hold the old key;
- off port 22 and without an alias, when the ``[host]:port`` name knows no key
  of the offered type, an entry for the bare host is consulted as well: the same
  key there is accepted, a different one is not a change (another server, such
  as the host's own sshd on port 22, may answer there) and the key stays new;
- a new key is refused (``strict``), or accepted and appended to the first user
  known_hosts file under the looked-up name (``accept-new``);
- ``@cert-authority`` keys for the name are handed to asyncssh, which checks a
  host certificate against them.

The check never opens a second connection: the key judged, shown and recorded
is the one this connection's server offered.
"""

from __future__ import annotations

import base64
import enum
import functools
import hashlib
import hmac
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncssh
from asyncssh.public_key import get_default_certificate_algs, get_default_public_key_algs

from tui.errors import HostKeyError

DEFAULT_PORT = 22
#: OpenSSH's defaults when ``~/.ssh/config`` names no ``UserKnownHostsFile``.
USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
#: OpenSSH's defaults when ``~/.ssh/config`` names no ``GlobalKnownHostsFile``.
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
#: A known_hosts file larger than this is refused rather than read whole.
MAX_KNOWN_HOSTS_BYTES = 16 * 1024 * 1024

REVOKED = "revoked"
CERT_AUTHORITY = "cert-authority"


def host_port(host: str, port: int) -> str:
    """``host`` as known_hosts names it: ``host`` on port 22, ``[host]:port`` elsewhere."""
    return host if port in (0, DEFAULT_PORT) else f"[{host}]:{port}"


def describe_key(key: asyncssh.SSHKey) -> str:
    return f"{key.get_algorithm()} {key.get_fingerprint()}"


# ---------------------------------------------------------------- where the connection goes


@dataclass(frozen=True)
class Target:
    """Where one endpoint's connection goes, as its ssh config resolves it."""

    #: The host name dialled (``HostName`` of a config alias).
    host: str
    port: int
    user: str
    host_key_alias: str | None
    #: Read and written: a new key is recorded in the first one.
    user_files: tuple[str, ...]
    #: Read only.
    global_files: tuple[str, ...]
    #: False when the connection goes through a jump host or a proxy command, so a
    #: key scan from here would not reach the same server.
    direct: bool = True

    @property
    def files(self) -> tuple[str, ...]:
        return (*self.user_files, *self.global_files)

    def names(self, host: str | None = None, port: int | None = None) -> tuple[str, ...]:
        """The names known_hosts is searched for, in order: the name the key is
        checked and recorded under, then (off port 22, without an alias) the bare host."""
        if self.host_key_alias:
            return (self.host_key_alias,)
        host = self.host if host is None else host
        port = self.port if port is None else port
        primary = host_port(host, port)
        return (primary,) if primary == host else (primary, host)

    @property
    def name(self) -> str:
        return self.names()[0]


def _config_files(value: object, default: Sequence[str]) -> tuple[str, ...]:
    if value is None:  # not set: OpenSSH's default files
        files: Iterable[object] = default
    elif isinstance(value, (list, tuple)):  # ``none`` is an empty list: no file at all
        files = value
    else:
        files = [value]
    return tuple(str(Path(str(name)).expanduser()) for name in files)


def resolve(options: asyncssh.SSHClientConnectionOptions, known_hosts: str | None) -> Target:
    """The target of a connection made with ``options``; ``known_hosts`` (from
    hosts.yaml) replaces the config's ``UserKnownHostsFile``."""
    config = options.config
    user_files = (
        (known_hosts,)
        if known_hosts
        else _config_files(config.get("UserKnownHostsFile"), USER_KNOWN_HOSTS)
    )
    global_files = _config_files(config.get("GlobalKnownHostsFile"), GLOBAL_KNOWN_HOSTS)
    return Target(
        host=options.host,
        port=int(options.port or DEFAULT_PORT),
        user=options.username,
        host_key_alias=options.host_key_alias or None,
        user_files=user_files,
        global_files=global_files,
        direct=not options.tunnel and not options.proxy_command,
    )


# ---------------------------------------------------------------- known_hosts files


@functools.lru_cache(maxsize=1024)
def _wildcard(pattern: str) -> re.Pattern[str]:
    parts = (".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile("".join(parts), re.DOTALL)


@dataclass(frozen=True)
class Entry:
    """One key line of a known_hosts file."""

    path: str
    line: int
    #: ``None``, ``"revoked"`` or ``"cert-authority"``.
    marker: str | None
    hosts: str
    key: asyncssh.SSHKey

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def matches(self, name: str) -> bool:
        """Whether this line names ``name`` (OpenSSH's ``match_hostname`` on the
        comma-separated patterns, ``!`` negating; or a ``|1|salt|hash`` hashed name)."""
        name = name.lower()
        if self.hosts.startswith("|"):
            return _hashed_matches(self.hosts, name)
        positive = False
        for pattern in self.hosts.lower().split(","):
            negated = pattern.startswith("!")
            if _wildcard(pattern[1:] if negated else pattern).fullmatch(name):
                if negated:
                    return False
                positive = True
        return positive

    def same_key(self, key: asyncssh.SSHKey) -> bool:
        return bool(self.key.public_data == key.public_data)


def _hashed_matches(hosts: str, name: str) -> bool:
    try:
        magic, salt, digest = hosts[1:].split("|")
        if magic != "1":
            return False
        mac = hmac.new(base64.b64decode(salt), name.encode(), hashlib.sha1).digest()
        return hmac.compare_digest(mac, base64.b64decode(digest))
    except ValueError:  # binascii.Error is a ValueError
        return False


def _entry(path: str, number: int, line: str) -> Entry | None:
    """The entry a line holds; ``None`` for comments, blanks and lines OpenSSH skips."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    fields = line.split()
    marker = None
    if fields[0].startswith("@"):
        marker = fields.pop(0)[1:]
        if marker not in (REVOKED, CERT_AUTHORITY):
            return None
    if len(fields) < 3:
        return None
    try:
        key = asyncssh.import_public_key(f"{fields[1]} {fields[2]}")
    except (asyncssh.KeyImportError, ValueError):
        return None
    return Entry(path, number, marker, fields[0], key)


@dataclass(frozen=True)
class KnownHosts:
    """The entries of every known_hosts file a connection reads, in file order."""

    entries: tuple[Entry, ...]
    #: The files that exist and were read.
    read: tuple[str, ...]

    @classmethod
    def load(cls, files: Sequence[str]) -> KnownHosts:
        """Read ``files`` (blocking: call it off the event loop). A missing or
        unreadable file holds no keys, as for OpenSSH."""
        entries: list[Entry] = []
        read: list[str] = []
        for path in files:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_KNOWN_HOSTS_BYTES + 1)
            except OSError:
                continue
            if len(data) > MAX_KNOWN_HOSTS_BYTES:
                raise HostKeyError(
                    f"known_hosts file {path} is larger than "
                    f"{MAX_KNOWN_HOSTS_BYTES // (1024 * 1024)} MiB; babysit does not read it"
                )
            read.append(path)
            text = data.decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                entry = _entry(path, number, line)
                if entry is not None:
                    entries.append(entry)
        return cls(tuple(entries), tuple(read))

    def matching(self, name: str, marker: str | None = None) -> list[Entry]:
        return [e for e in self.entries if e.marker == marker and e.matches(name)]


# ---------------------------------------------------------------- the verdict


class Verdict(enum.Enum):
    KNOWN = "known"
    NEW = "new"
    CHANGED = "changed"
    REVOKED = "revoked"


@dataclass(frozen=True)
class Judgement:
    """What known_hosts says of the key a server offered."""

    verdict: Verdict
    #: The name the key is checked and recorded under.
    name: str
    key: asyncssh.SSHKey
    #: The lines behind the verdict: the trusting, revoking or offending ones.
    entries: tuple[Entry, ...] = ()


def judge(known: KnownHosts, names: Sequence[str], key: asyncssh.SSHKey) -> Judgement:
    """OpenSSH's verdict on ``key`` for a host looked up as ``names`` (see the module)."""
    name = names[0]
    revoking = [e for n in names for e in known.matching(n, REVOKED) if e.same_key(key)]
    if revoking:
        return Judgement(Verdict.REVOKED, name, key, (revoking[0],))
    same_type = [e for e in known.matching(name) if e.key.algorithm == key.algorithm]
    trusting = [e for e in same_type if e.same_key(key)]
    if trusting:
        return Judgement(Verdict.KNOWN, name, key, (trusting[0],))
    if same_type:
        return Judgement(Verdict.CHANGED, name, key, tuple(same_type))
    for other in names[1:]:
        trusting = [e for e in known.matching(other) if e.same_key(key)]
        if trusting:
            return Judgement(Verdict.KNOWN, name, key, (trusting[0],))
    return Judgement(Verdict.NEW, name, key)


class HostKeyCheck:
    """The host key check of one connection attempt.

    asyncssh is handed :meth:`known_hosts` (the trusted, CA and revoked keys of the
    name it validates) and calls back :meth:`offered` for a key it does not trust
    already; the verdict, and for ``accept-new`` the key to record, stay here for
    the caller to act on once the handshake is over (no file is written on the
    event loop).
    """

    def __init__(self, target: Target, known: KnownHosts, *, accept_new: bool) -> None:
        self.target = target
        self.known = known
        self.accept_new = accept_new
        self.judgement: Judgement | None = None
        #: The untrusted CA that signed the server's certificate, if it sent one.
        self.untrusted_ca: asyncssh.SSHKey | None = None
        #: A new key accepted in this handshake, to be recorded.
        self.to_record: Judgement | None = None

    def _names(self, host: str, port: int | None) -> tuple[str, ...]:
        return self.target.names(host, port or DEFAULT_PORT)

    def known_hosts(
        self, host: str, _addr: str, port: int | None
    ) -> tuple[list[asyncssh.SSHKey], list[asyncssh.SSHKey], list[asyncssh.SSHKey]]:
        """asyncssh's known_hosts callable: the keys it may trust without asking."""
        names = self._names(host, port)
        revoked = [e.key for n in names for e in self.known.matching(n, REVOKED)]
        revoked_data = {k.public_data for k in revoked}
        trusted = [
            e.key for e in self.known.matching(names[0]) if e.key.public_data not in revoked_data
        ]
        authorities = next(
            (found for n in names if (found := self.known.matching(n, CERT_AUTHORITY))), []
        )
        cas = [e.key for e in authorities if e.key.public_data not in revoked_data]
        return trusted, cas, revoked

    def host_key_algorithms(self) -> list[str]:
        """The host key algorithms to offer, in OpenSSH's order: those of the keys
        known for the host first, so that a server holding several keys shows the
        one known_hosts lists; host certificates only when a ``@cert-authority``
        line could vouch for one (otherwise the plain key is checked, which is
        where OpenSSH ends up for a certificate signed by a CA it does not know)."""
        names = self.target.names()
        known: list[str] = []
        for entry in self.known.matching(names[0]):
            known.extend(a.decode() for a in entry.key.sig_algorithms if a.decode() not in known)
        plain = [a.decode() for a in get_default_public_key_algs()]
        if any(self.known.matching(n, CERT_AUTHORITY) for n in names):
            known = [a.decode() for a in get_default_certificate_algs()] + known
        return known + [a for a in plain if a not in known]

    def offered(self, host: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Whether to trust ``key``, which the name's own entries do not list."""
        judgement = judge(self.known, self._names(host, port), key)
        self.judgement = judgement
        if judgement.verdict is Verdict.KNOWN:
            return True
        if judgement.verdict is Verdict.NEW and self.accept_new and self.target.user_files:
            self.to_record = judgement
            return True
        return False

    def offered_ca(self, key: asyncssh.SSHKey) -> bool:
        self.untrusted_ca = key
        return False

    def record(self) -> None:
        """Append the accepted new key to the first user known_hosts file (blocking)."""
        judgement = self.to_record
        if judgement is None:
            return
        path = Path(self.target.user_files[0])
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            current = KnownHosts.load([str(path)])
            if judge(current, (judgement.name,), judgement.key).verdict is Verdict.KNOWN:
                return  # recorded meanwhile by another connection
            fields = judgement.key.export_public_key("openssh").decode().split()
            line = f"{judgement.name} {fields[0]} {fields[1]}\n".encode()
            if path.exists() and path.stat().st_size and not _ends_with_newline(path):
                line = b"\n" + line
            with path.open("ab") as out:
                out.write(line)
        except OSError as error:
            raise HostKeyError(
                f"could not record the host key of {judgement.name} in {path}: "
                f"{error.strerror or error}"
            ) from None

    # ------------------------------------------------------------ what to tell the user

    def refusal(self, link: str, reason: str) -> str:
        """Why the handshake's host key was refused, and what to do, in plain words."""
        judgement = self.judgement
        if judgement is not None and judgement.verdict is Verdict.CHANGED:
            return self._changed(link, judgement)
        if judgement is not None and judgement.verdict is Verdict.REVOKED:
            return self._revoked(link, judgement.name, judgement.entries, judgement.key)
        if "revoked" in reason.lower():
            names = self.target.names()
            lines = [e for n in names for e in self.known.matching(n, REVOKED)]
            return self._revoked(link, names[0], tuple(dict.fromkeys(lines)), None)
        if self.untrusted_ca is not None:
            return (
                f"{link}: host certificate not trusted: the server's certificate for "
                f"{self.target.name} is signed by {describe_key(self.untrusted_ca)}, which "
                f"no @cert-authority line for {self.target.name} trusts ({self._files_read()})"
            )
        if judgement is not None and judgement.verdict is Verdict.NEW:
            return self._unknown(link, judgement)
        return f"{link}: host key refused for {self.target.name}: {reason}"

    def _files_read(self) -> str:
        return "read " + ", ".join(self.known.read) if self.known.read else "no known_hosts file"

    def _unknown(self, link: str, judgement: Judgement) -> str:
        key = judgement.key
        algorithm = key.get_algorithm()
        head = (
            f"{link}: host key not known: no {algorithm} host key is known for "
            f"{judgement.name} ({self._files_read()}); the server offers {describe_key(key)}."
        )
        if not self.target.user_files:
            return (
                f"{head} UserKnownHostsFile is none for this host in the ssh config, so "
                "there is no known_hosts file to add it to; name one there or in hosts.yaml "
                "(known_hosts)"
            )
        path = self.target.user_files[0]
        if self.target.direct and not self.target.host_key_alias:
            port = f"-p {self.target.port} " if self.target.port != DEFAULT_PORT else ""
            scan = f"ssh-keyscan {port}{shlex.quote(self.target.host)} >> {shlex.quote(path)}"
            how = f"then add it: {scan}"
        else:
            fields = key.export_public_key("openssh").decode().split()
            how = f"then add this line to {path}: {judgement.name} {fields[0]} {fields[1]}"
        return (
            f"{head} Check the fingerprint with the host's owner, {how} "
            "(or set host_key_policy: accept-new for this host in hosts.yaml)"
        )

    def _changed(self, link: str, judgement: Judgement) -> str:
        old = judgement.entries[0]
        user_file = self.target.user_files[0] if self.target.user_files else old.path
        remove = f"ssh-keygen -f {shlex.quote(old.path)} -R {shlex.quote(judgement.name)}"
        return (
            f"{link}: HOST KEY CHANGED for {judgement.name}: the server offers "
            f"{describe_key(judgement.key)}, but {old.where} holds another key for it "
            f"({describe_key(old.key)}). Someone may be intercepting the connection "
            "(man in the middle), or the host was reinstalled; the connection was refused "
            "whatever host_key_policy says. Only if you know why the key changed, remove "
            f"the old key with: {remove} and add the correct one to {user_file}"
        )

    @staticmethod
    def _revoked(
        link: str, name: str, entries: Sequence[Entry], key: asyncssh.SSHKey | None
    ) -> str:
        offered = f"the {describe_key(key)} key" if key is not None else "the key"
        lines = ", ".join(f"{e.where} ({describe_key(e.key)})" for e in entries)
        return (
            f"{link}: HOST KEY REVOKED: {offered} the server offers for {name} is marked "
            f"@revoked in known_hosts ({lines or 'a @revoked line'}); a stolen key may be "
            "impersonating this host. The connection was refused whatever host_key_policy says"
        )


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


__all__ = [
    "Entry",
    "HostKeyCheck",
    "Judgement",
    "KnownHosts",
    "Target",
    "Verdict",
    "host_port",
    "judge",
    "resolve",
]
