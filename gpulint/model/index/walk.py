"""One fast pre-order walk of a module: every node once, with its depth and
parent. `ast.walk` / `ast.iter_child_nodes` go through the generic
`iter_fields`; this walker knows which fields can hold child nodes and skips
the shared singleton nodes (`ctx=Load()`, operators), which would otherwise
be visited thousands of times and given a wrong parent."""

from __future__ import annotations

import ast
from typing import Dict, List, Tuple

# fields that never hold a child node: the shared singletons (`ctx`, operators)
# and plain identifiers, numbers and flags; and type annotations (`x: Tensor`,
# `-> Tensor`), which never run as code that matters here: a sixth of the
# nodes of typed model code. Analyses that read an annotation (tensor
# inference) take it from its parameter or assignment directly.
_SKIP_FIELDS = frozenset({
    "ctx", "op", "ops", "type_comment", "kind", "id", "attr", "arg", "name", "asname", "module", "level",
    "conversion", "is_async", "simple", "annotation", "returns",
})
# nodes with no child nodes at all (`Constant.value` is a Python value, never a node)
_LEAVES = (ast.Constant, ast.Global, ast.Nonlocal)
# per class: the fields that can hold child nodes, last first (the walk pushes
# them on a stack, so they come off in source order)
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields(cls: type) -> Tuple[str, ...]:
    f = _CHILD_FIELDS.get(cls)
    if f is None:
        if issubclass(cls, _LEAVES) or cls.__name__ == "MatchSingleton":
            f = ()
        else:
            f = tuple(reversed([n for n in cls._fields if n not in _SKIP_FIELDS]))
        _CHILD_FIELDS[cls] = f
    return f


def index_tree(tree: ast.AST) -> Tuple[List[Tuple[ast.AST, int]], Dict[ast.AST, ast.AST]]:
    """(pre-order list of (node, depth), {child: parent})."""
    AST = ast.AST
    order: List[Tuple[ast.AST, int]] = []
    parents: Dict[ast.AST, ast.AST] = {}
    stack: List[Tuple[ast.AST, int]] = [(tree, 0)]
    pop, push, emit = stack.pop, stack.append, order.append
    known = _CHILD_FIELDS
    while stack:
        node, depth = pop()
        emit((node, depth))
        cls = node.__class__
        fields = known.get(cls)
        if fields is None:
            fields = _fields(cls)
        if not fields:
            continue
        d = depth + 1
        for name in fields:
            v = getattr(node, name, None)
            if v is None:
                continue
            if v.__class__ is list:
                for item in reversed(v):
                    if isinstance(item, AST):  # a list may hold None (`Dict.keys`) or strings
                        parents[item] = node
                        push((item, d))
            elif isinstance(v, AST):
                parents[v] = node
                push((v, d))
    return order, parents
