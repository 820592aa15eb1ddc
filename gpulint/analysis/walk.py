"""One fast pre-order walk of a module: every node once, with its depth and
parent. `ast.walk` / `ast.iter_child_nodes` go through the generic
`iter_fields`; this walker knows which fields can hold child nodes and skips
the shared singleton nodes (`ctx=Load()`, operators), which would otherwise
be visited thousands of times and given a wrong parent."""

from __future__ import annotations

import ast
from typing import Dict, List, Tuple

_SKIP_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "kind"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields(cls: type) -> Tuple[str, ...]:
    f = _CHILD_FIELDS.get(cls)
    if f is None:
        f = tuple(n for n in cls._fields if n not in _SKIP_FIELDS)
        _CHILD_FIELDS[cls] = f
    return f


def index_tree(tree: ast.AST) -> Tuple[List[Tuple[ast.AST, int]], Dict[ast.AST, ast.AST]]:
    """(pre-order list of (node, depth), {child: parent})."""
    AST = ast.AST
    order: List[Tuple[ast.AST, int]] = []
    parents: Dict[ast.AST, ast.AST] = {}
    stack: List[Tuple[ast.AST, int]] = [(tree, 0)]
    pop, push, emit = stack.pop, stack.append, order.append
    while stack:
        node, depth = pop()
        emit((node, depth))
        kids = []
        for name in _fields(type(node)):
            v = getattr(node, name, None)
            if v is None:
                continue
            if isinstance(v, list):
                for item in v:
                    if isinstance(item, AST):
                        kids.append(item)
            elif isinstance(v, AST):
                kids.append(v)
        if kids:
            d = depth + 1
            for k in reversed(kids):
                parents[k] = node
                push((k, d))
    return order, parents
