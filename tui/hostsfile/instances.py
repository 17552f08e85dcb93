"""``instances: N``: one service entry of hosts.yaml written once, copied N times.

Each copy ``name-0`` … ``name-(N-1)`` has the ``{i}``-style templates in its values
filled in for its index, before the copy is read as a service of its own.
"""

from __future__ import annotations

import re

import yaml

from tui.hostsfile.reader import Reader
from tui.yamlnodes import MAX_NODES, shown

#: ``{i}``, ``{i + 30000}``, ``{30000 + i}``, ``{2 * i}``: all an instance template may say.
_TEMPLATE_RE = re.compile(r"\{([^{}]*)\}")
_EXPR_RE = re.compile(r"^\s*(?:(\d+)\s*([-+*])\s*)?i(?:\s*([-+*])\s*(\d+))?\s*$")
#: Copies one service's ``instances:`` may make.
MAX_INSTANCES = 1024
#: Digits a number in an instance template may have (``{30000 + i}``).
_MAX_TEMPLATE_DIGITS = 9


def expand_instances(
    reader: Reader, key: str, name: str, node: yaml.Node
) -> list[tuple[str, yaml.Node]]:
    """A service with ``instances: N`` becomes N services ``name-0`` … ``name-(N-1)``,
    each with ``{i}``-style templates in its values filled in for its index."""
    if not isinstance(node, yaml.MappingNode):
        return [(name, node)]
    count_node = next((v for k, v in node.value if getattr(k, "value", None) == "instances"), None)
    if count_node is None:
        return [(name, node)]
    count = reader.integer(count_node, f"{key}.instances", 1, MAX_INSTANCES)
    body = [(k, v) for k, v in node.value if getattr(k, "value", None) != "instances"]
    try:
        return [
            (
                f"{name}-{i}",
                yaml.MappingNode(
                    node.tag, [(k, _fill(reader, key, k, v, i)) for k, v in body], node.start_mark
                ),
            )
            for i in range(count)
        ]
    except _OverBudget:
        raise reader.fail(
            count_node,
            f"{key}.instances",
            f"{count} copies of this service would make the file hold more than {MAX_NODES} "
            "values and templates; babysit refuses it (fewer instances, or a smaller service)",
        ) from None


class _OverBudget(Exception):
    """Copying instances would build more than MAX_NODES values from one file."""


def _fill(reader: Reader, key: str, key_node: yaml.Node, node: yaml.Node, i: int) -> yaml.Node:
    """``node`` with every ``{…}`` template filled in for instance ``i``. A value that is
    one template alone (``"{30000 + i}"``) becomes a number. Each value copied, and
    each template filled, is spent from the reader's budget: an alias copied for every
    instance is counted for every instance."""
    reader.budget -= 1
    if reader.budget < 0:
        raise _OverBudget
    where = f"{key}.{getattr(key_node, 'value', '?')}"
    if isinstance(node, yaml.MappingNode):
        return yaml.MappingNode(
            node.tag, [(k, _fill(reader, where, k, v, i)) for k, v in node.value], node.start_mark
        )
    if isinstance(node, yaml.SequenceNode):
        return yaml.SequenceNode(
            node.tag, [_fill(reader, key, key_node, v, i) for v in node.value], node.start_mark
        )
    if not isinstance(node, yaml.ScalarNode) or "{" not in str(node.value):
        return node

    def value(match: re.Match[str]) -> str:
        reader.budget -= 1
        if reader.budget < 0:
            raise _OverBudget
        expr = _EXPR_RE.match(match.group(1))
        if not expr:
            raise reader.fail(
                node,
                where,
                f"cannot read template {shown(match.group(0))}: write {{i}}, {{i + N}}, {{N + i}} "
                "or {N * i}",
            )
        if any(len(n or "") > _MAX_TEMPLATE_DIGITS for n in (expr.group(1), expr.group(4))):
            raise reader.fail(
                node,
                where,
                f"cannot read template {shown(match.group(0))}: its numbers may have at most "
                f"{_MAX_TEMPLATE_DIGITS} digits",
            )
        result = i
        if expr.group(1):
            result = _apply(int(expr.group(1)), expr.group(2), result)
        if expr.group(3):
            result = _apply(result, expr.group(3), int(expr.group(4)))
        return str(result)

    text = _TEMPLATE_RE.sub(value, str(node.value))
    whole = _TEMPLATE_RE.fullmatch(str(node.value)) is not None
    tag = "tag:yaml.org,2002:int" if whole else node.tag
    return yaml.ScalarNode(tag, text, node.start_mark, node.end_mark, node.style)


def _apply(left: int, op: str, right: int) -> int:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    return left * right
