"""The file's call graph, by name: which functions reach a kind of node
directly or through the functions they call."""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, List, Set

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import callee_name, scope_nodes
from gpulint.model.index.walk import walk


def functions_reaching(tree: ast.AST, is_direct: Callable[[ast.AST, List[ast.AST]], bool]) -> FrozenSet[str]:
    """Names of the functions of `tree` whose own code has a node for which
    `is_direct(node, [function])` holds, plus every function that calls one of
    them (by name, or as a method by attribute name), transitively."""
    direct: Set[str] = set()
    callees: Dict[str, Set[str]] = {}
    for func in walk(tree):
        if not isinstance(func, FUNCS):
            continue
        anc: List[ast.AST] = [func]
        for node in scope_nodes(func):
            if func.name not in direct and is_direct(node, anc):
                direct.add(func.name)
            if isinstance(node, ast.Call):
                name = callee_name(node)
                if name is not None:
                    callees.setdefault(func.name, set()).add(name)
    return callers_closure(direct, callees)


def callers_closure(direct: Set[str], callees: Dict[str, Set[str]]) -> FrozenSet[str]:
    """The functions in `direct`, plus every function that calls (through
    same-file calls, transitively) one of them. `callees` maps a function's
    name to the names it calls."""
    result = set(direct)
    changed = True
    while changed:
        changed = False
        for name, called in callees.items():
            if name not in result and called & result:
                result.add(name)
                changed = True
    return frozenset(result)
