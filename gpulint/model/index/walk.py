"""One fast pre-order walk of a module: every node once, with its depth and
parent. `ast.walk` / `ast.iter_child_nodes` go through the generic
`iter_fields`; this walker knows which fields can hold child nodes and skips
the shared singleton nodes (`ctx=Load()`, operators), which would otherwise
be visited thousands of times and given a wrong parent."""

from __future__ import annotations

import ast
from collections import deque
from typing import Dict, Iterator, List, Tuple

# fields that never hold a child node: the shared singletons (`ctx`, operators)
# and plain identifiers, numbers and flags
_NOT_CHILDREN = frozenset({
    "ctx", "op", "ops", "type_comment", "kind", "id", "attr", "arg", "name", "asname", "module", "level",
    "conversion", "is_async", "simple",
})
# ... and for the index, type annotations (`x: Tensor`, `-> Tensor`), which
# never run as code that matters here: a sixth of the nodes of typed model
# code. Analyses that read an annotation (tensor inference) take it from its
# parameter or assignment directly.
_SKIP_FIELDS = _NOT_CHILDREN | {"annotation", "returns"}
# nodes with no child nodes at all (`Constant.value` is a Python value, never a node)
_LEAVES = (ast.Constant, ast.Global, ast.Nonlocal)
# per class: the fields that can hold child nodes, last first (the walk pushes
# them on a stack, so they come off in source order)
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields_of(cls: type, skip: frozenset, cache: Dict[type, Tuple[str, ...]], last_first: bool) -> Tuple[str, ...]:
    f = cache.get(cls)
    if f is None:
        if issubclass(cls, _LEAVES) or cls.__name__ == "MatchSingleton":
            f = ()
        else:
            names = [n for n in cls._fields if n not in skip]
            f = tuple(reversed(names)) if last_first else tuple(names)
        cache[cls] = f
    return f


def _fields(cls: type) -> Tuple[str, ...]:
    return _fields_of(cls, _SKIP_FIELDS, _CHILD_FIELDS, True)


def index_tree(tree: ast.AST) -> Tuple[List[ast.AST], Dict[ast.AST, ast.AST]]:
    """(every node in pre-order, {child: parent}). No depth is kept: a tuple
    per node cost a sixth of the walk, and a node's subtree is `walk(node)`."""
    AST = ast.AST
    order: List[ast.AST] = []
    parents: Dict[ast.AST, ast.AST] = {}
    stack: List[ast.AST] = [tree]
    pop, push, emit = stack.pop, stack.append, order.append
    known = _CHILD_FIELDS
    while stack:
        node = pop()
        emit(node)
        cls = node.__class__
        fields = known.get(cls)
        if fields is None:
            fields = _fields(cls)
        if not fields:
            continue
        for name in fields:
            v = getattr(node, name, None)
            if v is None:
                continue
            if v.__class__ is list:
                for item in reversed(v):
                    if isinstance(item, AST):  # a list may hold None (`Dict.keys`) or strings
                        parents[item] = node
                        push(item)
            elif isinstance(v, AST):
                parents[v] = node
                push(v)
    return order, parents


# `walk` and `child_nodes`: what `ast.walk` and `ast.iter_child_nodes` give, in
# the same order, without the shared singletons (`ctx=Load()`, operators,
# comparison operators), which no analysis asks for; annotations are kept.
# Per class, the fields that can hold child nodes, in field order.
_ALL_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _all_fields(cls: type) -> Tuple[str, ...]:
    return _fields_of(cls, _NOT_CHILDREN, _ALL_CHILD_FIELDS, False)


def _push_children(node: ast.AST, push) -> None:
    """`push` each direct child node of `node`, in field order."""
    fields = _ALL_CHILD_FIELDS.get(node.__class__)
    if fields is None:
        fields = _all_fields(node.__class__)
    for name in fields:
        v = getattr(node, name, None)
        if v is None:
            continue
        if v.__class__ is list:
            for item in v:
                if isinstance(item, ast.AST):
                    push(item)
        elif isinstance(v, ast.AST):
            push(v)


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """The direct child nodes of `node`, as `ast.iter_child_nodes` gives them
    (less the singletons), as a list."""
    out: List[ast.AST] = []
    _push_children(node, out.append)
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)`: the node and every node under it, breadth first, in
    the same order, less the singletons; several times faster (no generator
    per node for its fields)."""
    todo = deque((node,))
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        _push_children(node, push)
        yield node
