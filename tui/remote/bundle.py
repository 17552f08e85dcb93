"""The agent's script for one mode: the modules of :mod:`tui.agent` it needs, in one text.

A mode names the module and the function that run it; the bundle holds that
module and every module it imports (``from .module import name``), each after
what it imports, those import lines dropped, and ends with the call that runs
the mode. It is what is sent, compressed, to the host and exec'd there (see
tui/remote/agentcall.py), and what ``babysit agent --print MODE`` shows.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tui.agent import protocol

#: Where the agent's modules are.
AGENT_DIR = Path(protocol.__file__).parent
#: The module every bundle begins with: the words of the wire protocol.
PROTOCOL_MODULE = "protocol"
#: The module every bundle ends with: it says the agent started, then runs the mode.
MAIN_MODULE = "main"


@dataclass(frozen=True)
class Mode:
    """One of the agent's modes: the module and function that run it."""

    name: str
    module: str
    function: str
    #: A long-lived mode gives back first the memory its compiling took.
    trim: bool = False


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(protocol.MODE_FOLLOW, "follow", "follow", trim=True),
        Mode(protocol.MODE_PROBE, "probe", "probe_once"),
        Mode(protocol.MODE_SERVE_PROBES, "probe", "serve_probes", trim=True),
        Mode(protocol.MODE_KILL, "kill", "kill"),
        Mode(protocol.MODE_KILL_RECORD, "killlog", "kill_record"),
        Mode(protocol.MODE_ALIVE, "alive", "alive"),
        Mode(protocol.MODE_LAUNCH, "launch", "launch"),
        Mode(protocol.MODE_PREFLIGHT, "preflight", "preflight"),
        Mode(protocol.MODE_CONTAINER, "container_action", "container_action"),
        Mode(protocol.MODE_CANARY, "canary", "canary"),
        Mode(protocol.MODE_DUMP, "dump", "dump"),
    )
}


class BundleError(ValueError):
    """The agent's modules break the rules a bundle rests on (see tui/agent/__init__.py)."""


def mode_of(args: dict[str, object]) -> Mode:
    """The mode a request asks for (a request without one asks to follow)."""
    name = args.get("mode") or protocol.MODE_FOLLOW
    if not isinstance(name, str) or name not in MODES:
        raise KeyError(f"the agent has no mode {name!r}; its modes: {', '.join(MODES)}")
    return MODES[name]


@dataclass(frozen=True)
class Module:
    """One module's text with its sibling imports taken out, and what it imports."""

    name: str
    text: str
    imports: tuple[str, ...]
    defines: frozenset[str]
    #: The stdlib names it binds at its top level (``import os``: os).
    stdlib: frozenset[str]


@cache
def read_module(name: str) -> Module:
    path = AGENT_DIR / f"{name}.py"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level != 1 or not node.module:
                raise BundleError(f"{path.name}: import siblings as 'from .module import name'")
            imports.append(node.module)
            drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    text = "".join(line for at, line in enumerate(lines) if at not in drop)
    stdlib = {
        (alias.asname or alias.name).split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
        for alias in node.names
    }
    return Module(name, text, tuple(imports), frozenset(_top_level_names(tree)), frozenset(stdlib))


def _top_level_names(tree: ast.Module) -> list[str]:
    """The names a module defines at its top level (its stdlib imports aside)."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def modules_of(mode: Mode) -> list[str]:
    """The modules ``mode`` runs, each after every module it imports: the protocol
    first (the words the script speaks), main last."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise BundleError(f"the agent's modules import each other in a cycle at {name}")
        visiting.add(name)
        for imported in read_module(name).imports:
            visit(imported)
        visiting.discard(name)
        order.append(name)

    visit(PROTOCOL_MODULE)
    visit(mode.module)
    visit(MAIN_MODULE)
    order.remove(MAIN_MODULE)
    return [*order, MAIN_MODULE]


@cache
def bundle(name: str) -> str:
    """The script that runs mode ``name`` on a host, as it is exec'd there."""
    mode = MODES[name]
    modules = [read_module(m) for m in modules_of(mode)]
    stdlib = {name for module in modules for name in module.stdlib}
    seen: dict[str, str] = {}
    for module in modules:
        for defined in module.defines:
            if defined in seen or defined in stdlib:
                where = f"{seen[defined]}.py" if defined in seen else "a stdlib import"
                raise BundleError(f"{defined} in {module.name}.py is also {where}")
            seen[defined] = module.name
    parts = [f"# babysit's agent for the {mode.name} mode: {', '.join(m.name for m in modules)}\n"]
    parts += [f"\n# ---- tui/agent/{module.name}.py\n{module.text}" for module in modules]
    parts.append(
        "\n# ---- the mode\n"
        'if __name__ == "__main__":\n'
        f"    sys.exit(main(sys.argv[-1:], {mode.name!r}, {mode.function}, trim={mode.trim}))\n"
    )
    return "".join(parts)


__all__ = ["MODES", "BundleError", "Mode", "bundle", "mode_of", "modules_of"]
