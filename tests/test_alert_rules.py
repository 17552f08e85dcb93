"""The alert rules shipped in ``alerts/``: promtool accepts them and their unit tests
pass, they read only the series ``babysit export`` exposes (tui/export/names.py, the
contract), and each one waits two scrapes and says what to run; README.md's section on
babysit export names every rule and series, and its dashboard queries parse.

A renamed series, a rule without a test, a rule that fires on one scrape, or a README
that forgot one breaks a test here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tui.export import names

ALERTS = Path(__file__).resolve().parent.parent / "alerts"
RULES = ALERTS / "babysit.rules.yml"
RULES_TESTS = ALERTS / "babysit.rules.test.yml"

#: Prometheus's scrape interval the rules are written for (README.md's scrape config).
SCRAPE_INTERVAL_S = 15

#: Series a rule may read besides babysit's own: the scrape's health.
OTHER_SERIES = frozenset({"up"})

#: PromQL words that are neither series nor functions.
KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})

UNITS_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def rules() -> list[dict]:
    """The alerting rules of the file's one group."""
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    assert [g["name"] for g in groups] == ["babysit"]
    return groups[0]["rules"]


def seconds(duration: str) -> float:
    """A Prometheus duration (``1m30s``) in seconds."""
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", duration)
    assert parts, f"not a duration: {duration!r}"
    assert "".join(n + u for n, u in parts) == duration, f"not a duration: {duration!r}"
    return sum(int(n) * UNITS_S[u] for n, u in parts)


def series_in(expr: str) -> set[str]:
    """The series names an expression reads: what is left once strings, label
    matchers, ranges and grouping clauses are taken out, and is neither a function
    (a name before ``(``) nor a keyword."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", bare)
    bare = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    found = set()
    for match in re.finditer(r"(?<![\w.:])[a-zA-Z_:][\w:]*", bare):
        rest = bare[match.end() :].lstrip()
        if not rest.startswith("(") and match.group() not in KEYWORDS:
            found.add(match.group())
    return found


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """promtool run in ``alerts/`` (the test file names the rules beside it)."""
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (./dev/test installs Debian's prometheus)")
    return subprocess.run(
        [tool, *args], capture_output=True, text=True, timeout=60, check=False, cwd=ALERTS
    )


@pytest.mark.unit
def test_series_in_reads_names_not_functions_labels_or_ranges() -> None:
    expr = (
        'sum by (host, gpu) (rate(babysit_metric{name="gen_throughput", part=~"DP.*"}[5m]))'
        " > 1e9 and on(host) up{job='babysit'} == 0 unless absent(babysit_host_up offset 5m)"
    )
    assert series_in(expr) == {"babysit_metric", "up", "babysit_host_up"}


@pytest.mark.unit
def test_rules_read_only_the_exported_series() -> None:
    for rule in rules():
        expr = rule["expr"]
        unknown = series_in(expr) - set(names.ALL) - OTHER_SERIES
        assert not unknown, f"{rule['alert']} reads {sorted(unknown)}, not in tui/export/names.py"
        named = set(re.findall(r"babysit_\w+", expr))
        assert named <= set(names.ALL), f"{rule['alert']}: {sorted(named - set(names.ALL))}"


@pytest.mark.unit
def test_every_rule_waits_two_scrapes_and_says_what_to_do() -> None:
    seen = set()
    for rule in rules():
        alert = rule["alert"]
        assert alert not in seen, f"{alert} is there twice"
        seen.add(alert)
        assert seconds(rule["for"]) >= 2 * SCRAPE_INTERVAL_S, f"{alert}: for {rule['for']}"
        assert rule["labels"]["severity"] in {"critical", "warning"}, alert
        annotations = rule["annotations"]
        assert annotations["summary"].strip(), f"{alert} has no summary"
        assert "babysit" in annotations["description"], f"{alert}: {annotations['description']}"


@pytest.mark.unit
def test_every_rule_has_a_test_that_fires_it_and_one_that_does_not() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for group in yaml.safe_load(RULES_TESTS.read_text(encoding="utf-8"))["tests"]:
        for case in group.get("alert_rule_test", []):
            (fired if case.get("exp_alerts") else quiet).add(case["alertname"])
    alerts = {rule["alert"] for rule in rules()}
    assert alerts - fired == set(), "rules never fired in babysit.rules.test.yml"
    assert alerts - quiet == set(), "rules never shown quiet in babysit.rules.test.yml"
    assert (fired | quiet) - alerts == set(), "tests of rules that do not exist"


@pytest.mark.integration
def test_promtool_accepts_the_rules() -> None:
    done = promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout, done.stdout


@pytest.mark.integration
def test_promtool_unit_tests_of_the_rules_pass() -> None:
    done = promtool("test", "rules", RULES_TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr


def readme_section() -> str:
    """README.md's section on babysit export."""
    text = (ALERTS.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("## Fleets beyond one screen")
    return text[start : text.index("\n## ", start + 1)]


def readme_queries() -> list[str]:
    """The PromQL of the section's table of dashboard panels."""
    table = readme_section().split("PromQL for dashboard panels", 1)[1]
    return re.findall(r"^\| [^|]+ \| `(.+)` \|$", table, flags=re.MULTILINE)


@pytest.mark.unit
def test_readme_names_every_alert_and_every_series() -> None:
    section = readme_section()
    alerts = {rule["alert"] for rule in rules()}
    assert set(re.findall(r"^\| `(Babysit\w+)` \|", section, flags=re.MULTILINE)) == alerts
    tabled = set(re.findall(r"^\| `(babysit_\w+)` \|", section, flags=re.MULTILINE))
    assert tabled == set(names.ALL)
    queries = readme_queries()
    assert queries, "no dashboard query found in README.md"
    for query in queries:
        assert series_in(query) <= set(names.ALL), query


@pytest.mark.integration
def test_promtool_accepts_the_readme_queries(tmp_path: Path) -> None:
    recorded = [
        {"record": f"babysit:readme_panel_{i}", "expr": query}
        for i, query in enumerate(readme_queries())
    ]
    panels = tmp_path / "panels.rules.yml"
    panels.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": recorded}]}))
    done = promtool("check", "rules", str(panels))
    assert done.returncode == 0, done.stdout + done.stderr
