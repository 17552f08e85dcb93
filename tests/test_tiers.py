"""Every test says its tier, so that ``./dev/test -m unit`` runs exactly the quick ones.

A tier is one of the markers in :data:`TIERS` (registered in pyproject.toml). A
module of one tier says it once (``pytestmark``); a module that holds tests of
more than one tier marks each test instead, since a module's mark would be added
to every test's own. The modules are read as they stand on disk when this runs,
whoever wrote them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TIERS = frozenset({"unit", "integration", "slow"})
"""unit: pure functions and in-process objects; integration: real processes, sshd, a
Textual pilot; slow: the longest few (the big fuzzers, the demo)."""

TESTS = Path(__file__).resolve().parent


def tiers_in(expression: ast.AST) -> set[str]:
    """The tier names among the ``pytest.mark.NAME`` marks that ``expression`` holds."""
    return {
        node.attr
        for node in ast.walk(expression)
        if isinstance(node, ast.Attribute)
        and node.attr in TIERS
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    }


def module_tiers(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
                found |= tiers_in(node)
    return found


def is_test(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name.startswith("test")
    return isinstance(node, ast.ClassDef) and node.name.startswith("Test")


def own_tiers(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    found: set[str] = set()
    for decorator in node.decorator_list:
        found |= tiers_in(decorator)
    return found


def tier_faults(source: str) -> list[str]:
    """Each test of ``source`` that has no tier, or more than one, in words."""
    tree = ast.parse(source)
    shared = module_tiers(tree)
    if len(shared) > 1:
        return [f"pytestmark names {sorted(shared)}: one tier per module"]
    faults = []
    for node in tree.body:
        if not is_test(node):
            continue
        own = own_tiers(node)  # type: ignore[arg-type]
        tiers = shared | own
        if shared and own:
            faults.append(f"{node.name} marks {sorted(own)} in a module marked {sorted(shared)}")
        elif len(tiers) != 1:
            faults.append(f"{node.name} has tiers {sorted(tiers)}: it needs exactly one")
    return faults


def test_every_test_module_names_one_tier_for_each_test() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert modules
    faults = {
        str(path.relative_to(TESTS)): found
        for path in modules
        if (found := tier_faults(path.read_text()))
    }
    assert faults == {}


@pytest.mark.parametrize(
    ("source", "fault"),
    [
        ("def test_a(): pass\n", "test_a has tiers []: it needs exactly one"),
        (
            "import pytest\n@pytest.mark.unit\n@pytest.mark.slow\ndef test_a(): pass\n",
            "test_a has tiers ['slow', 'unit']: it needs exactly one",
        ),
        (
            "import pytest\npytestmark = pytest.mark.unit\n"
            "@pytest.mark.integration\ndef test_a(): pass\n",
            "test_a marks ['integration'] in a module marked ['unit']",
        ),
        ("class TestA:\n    def test_a(self): pass\n", "TestA has tiers []: it needs exactly one"),
    ],
)
def test_a_test_without_exactly_one_tier_is_named(source: str, fault: str) -> None:
    assert tier_faults(source) == [fault]


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\npytestmark = pytest.mark.integration\ndef test_a(): pass\n",
        "import pytest\npytestmark = [pytest.mark.slow, pytest.mark.sshd]\ndef test_a(): pass\n",
        "import pytest\n@pytest.mark.unit\ndef test_a(): pass\n"
        "@pytest.mark.slow\nclass TestB: pass\n",
        "def helper(): pass\n",
    ],
)
def test_a_module_with_its_tiers_said_passes(source: str) -> None:
    assert tier_faults(source) == []
