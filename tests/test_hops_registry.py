"""The hop registry: one module per way of reaching a shell, and nothing else in babysit
names one.

Each kind of hop (``tui/hops/<kind>.py``) owns its hosts.yaml key, its argv prefix, its
words in the chain and its failures; no other product module holds its kind as a
string literal (``"pct"``, ``"pct exec …"``): the reader, the transports and the verbs
ask :mod:`tui.hops`. A kind written in a temporary folder, and nowhere else, is read
from hosts.yaml, shown in the chain and run through.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from test_engines_registry import literals

import tui
import tui.hops
from tui.config import CONTAINER_RUNTIMES
from tui.hops import python_of, specs
from tui.hops.spec import HopSpec
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport

ROOT = Path(tui.__file__).parent
#: The kinds babysit knows: adding one is adding its module.
KNOWN = {"local", "ssh", "pct", "docker"}
#: Literals that are a kind's words but not the hop's: the container runtimes' CLI names
#: (a container service names its runtime; the docker hop's kind is that CLI's name too),
#: and the link state a chain without a link reports (its base's words), which the host
#: header colours.
NOT_A_HOP = {
    **{(None, runtime): "a container runtime's CLI" for runtime in CONTAINER_RUNTIMES},
    ("app/widgets/host_header.py", "local"): "the link state of a local chain",
}


def hop_modules() -> set[str]:
    import pkgutil

    return {
        m.name
        for m in pkgutil.iter_modules(tui.hops.__path__)
        if m.name != "spec" and not m.name.startswith("_")
    }


@pytest.mark.unit
def test_the_registry_lists_every_hop_module() -> None:
    found = specs()
    assert set(found) == KNOWN
    assert set(found) == hop_modules(), "each module defines the SPEC of the kind it names"
    for kind, spec in found.items():
        assert isinstance(spec, HopSpec) and spec.kind == kind
    assert [spec.rank for spec in found.values()] == sorted(s.rank for s in found.values())
    assert {kind for kind, spec in found.items() if spec.base} == {"local", "ssh", "pct"}


def exempt(path: Path, value: str) -> bool:
    where = str(path.relative_to(ROOT))
    return (None, value) in NOT_A_HOP or (where, value) in NOT_A_HOP


@cache
def product_literals() -> tuple[tuple[Path, int, str], ...]:
    """(module, line, text) of every string literal of babysit but the simulator's."""
    return tuple(
        (path, line, value)
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] != "sim"
        for line, value in literals(path)
    )


@pytest.mark.unit
@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_a_hop_is_one_module(kind: str) -> None:
    found = []
    for path, line, value in product_literals():
        if path.relative_to(ROOT).parts == ("hops", f"{kind}.py"):
            continue
        named = value == kind or value.startswith((f"{kind} ", f"{kind}:"))
        if named and not exempt(path, value):
            found.append(f"{path.relative_to(ROOT)}:{line}: {value[:60]!r}")
    assert not found, f"the {kind} hop's knowledge outside its module:\n" + "\n".join(found)


#: A kind of hop that exists only in the test's folder: it runs the command under `env`
#: with one variable set, on the machine before it.
ENV_HOP = """
from dataclasses import dataclass

from tui.hops.spec import Hop, HopInput, HopSpec

KIND = "withenv"


@dataclass(frozen=True)
class EnvHop(Hop):
    kind = KIND
    value: str

    @property
    def texts(self):
        return (f"env BABYSIT_HOP={self.value}",)

    def prefix(self):
        return ("env", f"BABYSIT_HOP={self.value}")

    def python(self, outer):
        return "python3.999"


def parse(given: HopInput):
    fields = given.reader.mapping(given.node, given.key, allowed=("value",))
    return (EnvHop(given.reader.string(fields["value"][1], given.key + ".value")),)


SPEC = HopSpec(kind=KIND, written=KIND + ":", rank=30, base=False, parse=parse)
"""


@pytest.fixture
def env_hop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry with one more kind, found in a folder of its own."""
    folder = tmp_path / "hops"
    folder.mkdir()
    (folder / "withenv.py").write_text(ENV_HOP)
    monkeypatch.setattr(tui.hops, "__path__", [*tui.hops.__path__, str(folder)])
    specs.cache_clear()
    try:
        yield
    finally:
        monkeypatch.undo()
        sys.modules.pop("tui.hops.withenv", None)
        specs.cache_clear()


@pytest.mark.integration
async def test_a_new_hop_is_one_file(env_hop: None) -> None:
    assert "withenv" in specs()
    config = parse_config(
        "hosts:\n  h:\n    local: true\n    withenv: {value: 'a b'}\n    services: {}\n"
    )
    host = config.hosts["h"]
    assert host.chain() == ("local", "env BABYSIT_HOP=a b")
    assert host.transport == "withenv"
    assert python_of(host.hops) == "python3.999"
    transport = open_transport(host, SshLinks())
    done = await transport.run(["sh", "-c", 'printf %s "$BABYSIT_HOP"'], timeout=20)
    assert done.ok and done.stdout == b"a b"
    async with transport.stream(["sh", "-c", 'printf %s "$BABYSIT_HOP"']) as process:
        assert b"".join([chunk async for chunk in process.chunks()]) == b"a b"
