"""Import contracts between babysit's layers, read from the source with :mod:`ast`.

:func:`imports_of` lists what one module imports; each test states one contract
and names the file and line of every import that breaks it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "tui" / "sim"


@dataclass(frozen=True)
class Import:
    """One imported module: its absolute dotted name and the line that imports it."""

    module: str
    line: int


def _package_of(path: Path) -> list[str]:
    """The package ``path`` belongs to, as names: every parent folder with an ``__init__.py``
    (``tui/sim/cli.py`` -> ``["tui", "sim"]``)."""
    names: list[str] = []
    folder = path.resolve().parent
    while (folder / "__init__.py").exists():
        names.insert(0, folder.name)
        folder = folder.parent
    return names


def imports_of(path: Path) -> list[Import]:
    """Every module the file at ``path`` imports, at any depth (functions included).

    Relative imports are resolved against the file's package; ``from X import name``
    counts as importing ``X.name``, since ``name`` may be a submodule.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(path)
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.extend(Import(f"{base}.{alias.name}", node.lineno) for alias in node.names)
    return sorted(found, key=lambda item: item.line)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_simulator_imports_nothing_from_tui_outside_tui_sim() -> None:
    """The sim shares no code with the parsers it tests (DESIGN: a shared table would pass
    a wrong format through every test)."""
    sources = sorted(SIM.rglob("*.py"))
    assert sources, f"no modules under {SIM}"
    broken = [
        f"{path.relative_to(ROOT)}:{item.line}: imports {item.module}"
        for path in sources
        for item in imports_of(path)
        if _within(item.module, "tui") and not _within(item.module, "tui.sim")
    ]
    assert not broken, "tui.sim imports from tui outside tui.sim:\n" + "\n".join(broken)


def test_imports_of_resolves_relative_and_nested_imports(tmp_path: Path) -> None:
    """The helper sees imports inside functions and resolves ``from ..x import y``."""
    package = tmp_path / "tui" / "sim"
    package.mkdir(parents=True)
    for folder in (tmp_path / "tui", package):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    probe = package / "probe.py"
    probe.write_text(
        "import os\n\ndef f():\n    from ..errors import BabysitError\n    from . import out\n",
        encoding="utf-8",
    )
    assert imports_of(probe) == [
        Import("os", 1),
        Import("tui.errors.BabysitError", 4),
        Import("tui.sim.out", 5),
    ]


CORE = ROOT / "tui" / "core"
#: What the core never imports: a UI, a link, or anything that does I/O. It decides
#: facts from values; the sessions, the screens and the verbs do the talking.
NOT_IN_CORE = (
    "textual",
    "asyncssh",
    "rich",
    "asyncio",
    "io",
    "os",
    "pathlib",
    "psutil",
    "select",
    "selectors",
    "shutil",
    "socket",
    "subprocess",
    "sys",
    "tempfile",
    "urllib",
    "http",
    "yaml",
    "tui.app",
    "tui.commands",
    "tui.demo",
    "tui.hostsfile",
    "tui.ops",
    "tui.remote",
    "tui.session",
    "tui.sim",
)


def _core_sources() -> list[Path]:
    return [*sorted(CORE.rglob("*.py")), ROOT / "tui" / "config.py"]


def test_the_core_and_the_domain_model_import_no_ui_no_link_and_no_io() -> None:
    """``tui.core`` and ``tui.config`` (the domain model) are pure: every view and every
    verb can use them, and a test of them needs no host, no terminal and no file."""
    broken = [
        f"{path.relative_to(ROOT)}:{item.line}: imports {item.module}"
        for path in _core_sources()
        for item in imports_of(path)
        if any(_within(item.module, banned) for banned in NOT_IN_CORE)
    ]
    assert not broken, "the core imports what it must not:\n" + "\n".join(broken)


def test_the_agent_imports_only_the_stdlib() -> None:
    """The agent runs on hosts with nothing but python3 (see also test_agent_package)."""
    import sys

    agent = ROOT / "tui" / "agent"
    broken = [
        f"{path.relative_to(ROOT)}:{item.line}: imports {item.module}"
        for path in sorted(agent.rglob("*.py"))
        for item in imports_of(path)
        if not _within(item.module, "tui.agent")
        and item.module.split(".")[0] not in sys.stdlib_module_names
    ]
    assert not broken, "the agent imports beyond the stdlib:\n" + "\n".join(broken)


#: The longest a source file may be: one file holds one thing.
MAX_LINES = 500


def test_no_source_file_is_over_500_lines() -> None:
    sources = [*(ROOT / "tui").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    long = sorted(
        f"{path.relative_to(ROOT)}: {count} lines"
        for path in sources
        # hidden folders hold what bench/run installs (its peers' venvs), not babysit's code
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert not long, f"over {MAX_LINES} lines:\n" + "\n".join(long)
