"""Correctness under the traps: rotation, truncate-and-regrow, rm-while-writing, per follower.

A writer appends uniquely numbered lines (``seq=000001`` …) to a log that a
follower is already following: 40 lines at 40 lines/s, a 2 s pause (so every
follower has shown them), then one trap, then more lines:

* **rotate** — rename the log to ``.1`` (the writer still holds it and writes
  10 more lines there, as a server does until it is told to reopen), create a
  new log, write a burst of 60 lines and then 20 more;
* **truncate** — truncate the log to 0 bytes (copytruncate) while the writer
  appends with O_APPEND, then a burst of 60 lines that regrows the file past its
  old size before a size-polling follower looks, then 20 more;
* **rm** — unlink the log while the writer keeps writing 80 lines to the
  deleted inode.

Followers: ``babysit tail -f --json`` (local transport), babysit's TUI, GNU
``tail -F``, toolong and lnav (each TUI in tmux, read by capture-pane every
0.2 s in a pane tall enough to hold every line, and lnav's own
``:write-view-to`` export in the pause and at the end). For each: lines never
shown (lost), lines shown twice (in one output, or on one screen at once), and
whether the switch was reported (babysit's events, tail's stderr, any words on
screen about the file changing that were not there before the trap).

    .venv/bin/python bench/traps.py [--json FILE] [--only babysit,tail-F,...]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from screens import Tmux, kill_tree, lnav_env

TRAPS = ("rotate", "truncate", "rm")
FOLLOWERS = ("babysit", "babysit-tui", "tail-F", "toolong", "lnav")
PRE, AFTER_RENAME, BURST, POST = 40, 10, 60, 20
#: A written line shown as a line: its own stamp first on the row (after a border or a
#: gutter), not the same words quoted further on in one of the viewer's own lines (a
#: banner's "last line: …" or an event's "… → DEAD: …; last line: …").
SEQ = re.compile(r"^[^\w\n]*\d{4}-\d\d-\d\dT[\d:.]+ INFO seq=(\d{6}) trap=", re.M)
#: A written line anywhere, quoted or not.
QUOTED = re.compile(r"seq=(\d{6}) trap=")
#: Words a follower might use to tell that the file changed under it.
REPORT_WORDS = re.compile(
    r"replaced|rotat|truncat|delet|removed|renamed|inaccessible|cannot be opened|"
    r"no such file|moved|new file|shrunk|reopen",
    re.IGNORECASE,
)

WRITER = r"""
import datetime, os, sys, time
path, trap, pre, after_rename, burst, post = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
out = open(path, "a", buffering=1)
n = 0
def write(k, gap):
    global n
    for _ in range(k):
        n += 1
        stamp = datetime.datetime.now().isoformat(timespec="microseconds")
        out.write(f"{stamp} INFO seq={n:06d} trap={trap} payload=abcdefghijklmnop\n")
        if gap:
            time.sleep(gap)
write(pre, 0.025)
print("paused", flush=True)
time.sleep(2.0)
print("trap", flush=True)
if trap == "rotate":
    os.rename(path, path + ".1")
    write(after_rename, 0)
    out.close()
    out = open(path, "a", buffering=1)
elif trap == "truncate":
    os.truncate(path, 0)
elif trap == "rm":
    os.unlink(path)
write(burst, 0)
write(post, 0.025)
out.close()
print(n, flush=True)
"""


def header(trap: str) -> str:
    stamp = datetime.datetime.now().isoformat(timespec="microseconds")
    return f"{stamp} INFO seq=000000 trap={trap} ready\n"


def seqs(text: str) -> list[int]:
    return [int(m.group(1)) for m in SEQ.finditer(text)]


def _norm(line: str) -> str:
    return re.sub(r"\d+", "#", line).strip()


class Run:
    """One follower on one trap: start it, run the writer, collect what it showed."""

    def __init__(self, follower: str, trap: str, work: Path, peers: dict[str, str | None]):
        self.follower, self.trap, self.work, self.peers = follower, trap, work, peers
        self.log = work / f"{trap}.log"
        self.log.write_text(header(trap))
        self.config = work / "hosts.yaml"
        self.config.write_text(
            f"hosts:\n  here:\n    local: true\n    services:\n"
            f"      svc: {{log: {json.dumps(str(self.log))}}}\n"
        )
        self.captures: list[tuple[float, str]] = []
        self.trap_at: float | None = None
        self.sent = 0

    # -------------------------------------------------------------- writer

    def write(self, during=None, at_pause=None) -> None:
        writer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(self.log),
                self.trap,
                str(PRE),
                str(AFTER_RENAME),
                str(BURST),
                str(POST),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        paused = threading.Event()

        def read() -> None:
            assert writer.stdout is not None
            for line in writer.stdout:
                if line.strip() == "trap":
                    self.trap_at = time.monotonic()
                if line.strip() == "paused":
                    paused.set()
                lines.append(line.strip())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        paused_at: float | None = None
        while writer.poll() is None:
            if during:
                during()
            if at_pause and paused.is_set():
                # Half way through the writer's 2 s pause: every follower has had 1 s
                # to show the lines written so far, and 1 s remains before the trap.
                if paused_at is None:
                    paused_at = time.monotonic()
                elif time.monotonic() - paused_at >= 0.8:
                    at_pause()
                    at_pause = None
            time.sleep(0.2)
        reader.join(5)
        self.sent = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        settle = time.monotonic() + 2.0
        while time.monotonic() < settle:
            if during:
                during()
            time.sleep(0.2)

    # -------------------------------------------------------------- CLIs

    def run_cli(self, argv: list[str], ready) -> dict[str, object]:
        out_path, err_path = self.work / "out.txt", self.work / "err.txt"
        with out_path.open("w") as out, err_path.open("w") as err:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT
            )
            try:
                deadline = time.monotonic() + 20
                while not ready(out_path) and time.monotonic() < deadline:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.05)
                time.sleep(0.3)
                self.write()
            finally:
                kill_tree(proc.pid)
        return {
            "out": out_path.read_text(errors="replace"),
            "err": err_path.read_text(errors="replace"),
        }

    def babysit_cli(self) -> dict[str, object]:
        got = self.run_cli(
            [
                sys.executable,
                "-m",
                "tui",
                "tail",
                "here/svc",
                "-f",
                "-n",
                "0",
                "--json",
                "--config",
                str(self.config),
            ],
            lambda p: '"opened"' in p.read_text(errors="replace"),
        )
        shown: list[int] = []
        events = []
        for line in str(got["out"]).splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if record.get("type") == "line":
                    shown.extend(seqs(record.get("text", "")))
                elif record.get("type") == "event" and record.get("event") != "opened":
                    events.append(f"{record.get('event')}: {record.get('message')}")
        return self.tally(shown, [shown], events, extra=str(got["err"]).strip())

    def tail_f(self) -> dict[str, object]:
        got = self.run_cli(["tail", "-F", "-n", "0", str(self.log)], lambda p: True)
        shown = seqs(str(got["out"]))
        events = [line for line in str(got["err"]).splitlines() if line.strip()]
        return self.tally(shown, [shown], events)

    # -------------------------------------------------------------- TUIs

    def run_tui(
        self, argv: list[str], env: dict[str, str] | None = None, export=None
    ) -> dict[str, object]:
        """``export(tmux, name)``, where given, dumps the program's whole view to text: it is
        called in the writer's pause before the trap and at the end."""
        exports: list[str] = []
        tmux = Tmux(self.work / "tmux.sock")
        tmux.start(argv, width=160, height=200, env=env)
        try:
            ready = tmux.wait_for(lambda s: "seq=000000" in s, timeout=30)
            if ready is None:
                return {"error": "never showed the file: " + _last_words(tmux.screen())}
            time.sleep(0.5)

            def capture() -> None:
                self.captures.append((time.monotonic(), tmux.screen()))

            capture()
            self.write(
                during=capture,
                at_pause=(lambda: exports.append(export(tmux, "pre"))) if export else None,
            )
            capture()
            if export:
                exports.append(export(tmux, "end"))
        finally:
            tmux.stop()
        before = self.trap_at or float("inf")
        baseline = {
            _norm(line)
            for at, screen in self.captures
            if at < before
            for line in screen.splitlines()
            if REPORT_WORDS.search(line)
        }
        events: list[str] = []
        for at, screen in self.captures:
            if at < before:
                continue
            for line in screen.splitlines():
                if QUOTED.search(line) or not REPORT_WORDS.search(line):
                    continue
                text = " ".join(line.strip(" │┃").split())
                if _norm(line) not in baseline and text not in events:
                    events.append(text)
        views = [seqs(screen) for _, screen in self.captures]
        views.extend(seqs(text) for text in exports)
        ever = [n for view in views for n in set(view)]
        return self.tally(ever, views, events, final=views[-1])

    def babysit_tui(self) -> dict[str, object]:
        return self.run_tui([sys.executable, "-m", "tui", "here", "--config", str(self.config)])

    def toolong(self) -> dict[str, object]:
        tl = self.peers.get("toolong")
        if not tl:
            return {"missing": "toolong not installed"}
        return self.run_tui([tl, str(self.log)])

    def lnav(self) -> dict[str, object]:
        lnav = self.peers.get("lnav")
        if not lnav:
            return {"missing": "lnav not installed"}

        def export(tmux: Tmux, name: str) -> str:
            dump = self.work / f"lnav-view-{name}.txt"
            tmux.keys("Escape")
            tmux.keys(f":write-view-to {dump}")
            tmux.keys("Enter")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not dump.exists():
                time.sleep(0.1)
            time.sleep(0.3)
            return dump.read_text(errors="replace") if dump.exists() else ""

        return self.run_tui(
            [lnav, str(self.log)], env=lnav_env(self.work / "lnav-home"), export=export
        )

    # -------------------------------------------------------------- tally

    def tally(
        self,
        shown: list[int],
        views: list[list[int]],
        events: list[str],
        final: list[int] | None = None,
        extra: str = "",
    ) -> dict[str, object]:
        expected = set(range(1, self.sent + 1))
        seen = set(shown) & expected
        lost = sorted(expected - seen)
        # Shown twice: in one output (a CLI's) or on one screen at once (a TUI's).
        dup = max((sum(c - 1 for n, c in Counter(v).items() if n) for v in views), default=0)
        result: dict[str, object] = {
            "sent": self.sent,
            "lost": len(lost),
            "lost_ranges": _ranges(lost),
            "duplicated": dup,
            "reported": bool(events),
            "reports": events[:6],
        }
        if final is not None:
            result["dropped_from_view"] = len(seen - set(final))
        if extra:
            result["stderr"] = extra[-400:]
        return result


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    for n in numbers:
        if out and int(out[-1].split("-")[-1]) == n - 1:
            out[-1] = out[-1].split("-")[0] + f"-{n}"
        else:
            out.append(str(n))
    return ",".join(out)


def _last_words(screen: str) -> str:
    words = " ".join(screen.split())
    return words[-200:]


def run_all(
    peers: dict[str, str | None], only: list[str] | None = None, log=print
) -> dict[str, dict[str, object]]:
    """{trap: {follower: result}} for every trap and follower."""
    results: dict[str, dict[str, object]] = {}
    followers = [f for f in FOLLOWERS if not only or f in only]
    for trap in TRAPS:
        results[trap] = {}
        for follower in followers:
            with tempfile.TemporaryDirectory(prefix=f"bench-trap-{trap}-") as tmp:
                run = Run(follower, trap, Path(tmp), peers)
                method = {
                    "babysit": run.babysit_cli,
                    "babysit-tui": run.babysit_tui,
                    "tail-F": run.tail_f,
                    "toolong": run.toolong,
                    "lnav": run.lnav,
                }[follower]
                started = time.monotonic()
                try:
                    result = method()
                except Exception as error:
                    result = {"error": f"{type(error).__name__}: {error}"}
                result["seconds"] = round(time.monotonic() - started, 1)
                results[trap][follower] = result
                log(f"  trap {trap:<8} {follower:<12} {summary(result)}")
    return results


def summary(result: dict[str, object]) -> str:
    if "missing" in result:
        return f"not run: {result['missing']}"
    if "error" in result:
        return f"error: {result['error']}"
    reported = "yes" if result["reported"] else "no"
    return f"lost {result['lost']}, dup {result['duplicated']}, reported {reported}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON here")
    parser.add_argument("--only", help="comma-separated followers: " + ",".join(FOLLOWERS))
    args = parser.parse_args()
    import shutil

    peers = {
        "lnav": shutil.which("lnav"),
        "toolong": shutil.which("tl")
        or (
            str(ROOT / "bench/.peers/toolong/bin/tl")
            if (ROOT / "bench/.peers/toolong/bin/tl").exists()
            else None
        ),
    }
    results = run_all(peers, args.only.split(",") if args.only else None)
    for trap, by in results.items():
        for follower, result in by.items():
            print(f"{trap:<9} {follower:<12} {summary(result)}  {result.get('reports', '')}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
