"""``babysit export --textfile DIR``: node_exporter's textfile collector only ever reads
a whole exposition, and a stopped exporter leaves no file behind.

node_exporter reads every ``*.prom`` in its folder whenever it is scraped, with no
lock: the exporter writes a temporary name that does not end in ``.prom`` and
renames it over ``babysit.prom``, so a reader sees the old file or the new one,
never half of one. A reader thread here reads the file as fast as it can while the
exporter rewrites it many times (counted by the file's inode: each rename brings a
new one), over two sims on this machine.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.exporter import labels, samples, start_export
from support.servers import Server
from support.wait import wait_until

from tui.export import names

pytestmark = pytest.mark.integration

HOST = "box.example"
TEXTFILE = "babysit.prom"
#: Rewrites the reader must see: each one a new inode at the path.
REWRITES = 8


@dataclass
class Local:
    config: Path
    state: Path


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    """Two sims on this machine, as services ``a`` and ``b`` of a ``local: true`` host."""
    root = tmp_path_factory.mktemp("export-textfile")
    state = root / "state"
    sims = [Server(root / f"{name}.log", load=0.2, state=state / "sim-state") for name in "ab"]
    try:
        for server in sims:
            server.wait_for("The server is fired up")
        services = "".join(
            f"      {name}: {{engine: sglang, log: '{server.log}', port: {server.port}}}\n"
            for name, server in zip("ab", sims, strict=True)
        )
        config = root / "hosts.yaml"
        config.write_text(f"hosts:\n  {HOST}:\n    local: true\n    services:\n{services}")
        yield Local(config=config, state=state)
    finally:
        for server in sims:
            server.kill()


@dataclass
class Reads:
    """What the reader thread saw: how many reads, the inodes, and what was wrong."""

    count: int = 0
    inodes: list[int] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def read_whole(path: Path, reads: Reads) -> None:
    """Read ``path`` once (when it is there) and note whether it is a whole exposition."""
    try:
        with path.open() as handle:
            inode = os.fstat(handle.fileno()).st_ino
            text = handle.read()
    except FileNotFoundError:
        reads.problems.append("the file was missing between two rewrites")
        return
    reads.count += 1
    if not reads.inodes or reads.inodes[-1] != inode:
        reads.inodes.append(inode)
    if not text.endswith("\n"):
        reads.problems.append(f"a read that does not end in a newline: {text[-80:]!r}")
    if names.HOST_UP not in text:
        reads.problems.append(f"a read without {names.HOST_UP}: {text[:80]!r}")
    try:
        list(text_string_to_metric_families(text))
    except ValueError as error:
        reads.problems.append(f"a read that does not parse: {error}")


def test_every_read_of_the_textfile_is_a_whole_exposition(local: Local, tmp_path: Path) -> None:
    folder = tmp_path / "textfile"
    folder.mkdir()
    path = folder / TEXTFILE
    exporter = start_export(
        local.config, local.state, ["--textfile", str(folder), "--every", "0.2"]
    )
    try:
        wait_until(
            lambda: path.exists() or exporter.process.poll() is not None,
            60,
            lambda: f"{path} written (the exporter said: {exporter.stderr()!r})",
        )
        assert exporter.process.poll() is None, exporter.stderr()
        reads = Reads()
        done = threading.Event()

        def reader() -> None:
            while not done.is_set() and len(reads.inodes) <= REWRITES:
                read_whole(path, reads)
                with contextlib.suppress(FileNotFoundError):
                    reads.names.update(os.listdir(folder))

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            wait_until(
                lambda: len(reads.inodes) > REWRITES or exporter.process.poll() is not None,
                60,
                lambda: f"{REWRITES} rewrites of {path} (seen {len(reads.inodes) - 1})",
            )
        finally:
            done.set()
            thread.join(10)
        assert exporter.process.poll() is None, exporter.stderr()
        assert reads.problems == [], reads.problems[:5]
        assert reads.count > len(reads.inodes)  # more reads than rewrites: it raced them
        # node_exporter reads only *.prom: no temporary name may end so.
        others = {name for name in reads.names if name != TEXTFILE}
        assert not {name for name in others if name.endswith(".prom")}, others
        verdicts = samples(path.read_text(), names.VERDICT)
        for service in ("a", "b"):
            assert verdicts[labels(host=HOST, service=service, verdict="live")] == 1
    finally:
        exporter.kill()


def test_sigterm_stops_the_exporter_and_removes_its_textfile(local: Local, tmp_path: Path) -> None:
    folder = tmp_path / "textfile"
    folder.mkdir()
    path = folder / TEXTFILE
    exporter = start_export(
        local.config,
        local.state,
        ["--listen", "127.0.0.1:0", "--textfile", str(folder), "--every", "0.2"],
    )
    try:
        exporter.wait_serving()
        wait_until(path.exists, 30, f"{path} written")
        assert names.HOST_UP in exporter.scrape()
        assert exporter.terminate(timeout=20) == 0, exporter.stderr()
        assert "Traceback" not in exporter.stderr(), exporter.stderr()
        assert sorted(os.listdir(folder)) == []  # neither the textfile nor a temporary one
    finally:
        exporter.kill()
