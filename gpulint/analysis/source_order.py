"""Source-order structure of one scope: its own nodes, node positions, and the
loops around a node. Shared by the grad-mode and clock-interval analyses.

Positions are (line, column) pairs; comparing the end of one node with the
start of another tells which runs first in straight-line code.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from gpulint.analysis.core import FUNCS, LOOPS, SCOPES

Pos = Tuple[int, int]
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def start_of(node: ast.AST) -> Pos:
    return (node.lineno, node.col_offset)


def end_of(node: ast.AST) -> Pos:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """`inner` lies within `outer`'s source span."""
    return start_of(outer) <= start_of(inner) and end_of(inner) <= end_of(outer)


def scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """Every node of `scope`'s own code (a def, or the module), not looking into
    nested defs, lambdas or classes; the scope node itself is not yielded."""
    if isinstance(scope, ast.Lambda):
        stack: List[ast.AST] = [scope.body]
    elif isinstance(scope, ast.Module) or isinstance(scope, FUNCS):
        stack = list(scope.body)
    else:
        stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            # a nested def's decorators run in this scope; its body does not
            if isinstance(node, FUNCS):
                stack.extend(node.decorator_list)
            continue
        stack.extend(ast.iter_child_nodes(node))


def nodes_in_order(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under the statements `body`, pre-order and in source order,
    not looking into nested defs, lambdas or classes (those nodes themselves are
    yielded)."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def callee_name(call: ast.Call) -> Optional[str]:
    """`f` for `f(...)`, `m` for `obj.m(...)`."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def functions_reaching(tree: ast.AST, is_direct: Callable[[ast.AST, List[ast.AST]], bool]) -> FrozenSet[str]:
    """Names of the functions of `tree` whose own code has a node for which
    `is_direct(node, [function])` holds, plus every function that calls one of
    them (by name, or as a method by attribute name), transitively."""
    direct: Set[str] = set()
    callees: Dict[str, Set[str]] = {}
    for func in ast.walk(tree):
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


def loops_around(chain: Sequence[ast.AST]) -> List[ast.AST]:
    """The loops (innermost first) whose repeated part holds `chain[-1]`, up to
    the enclosing def; comprehensions count. `chain` runs from the module down
    to the node. A `for` loop's iterable is evaluated once, outside the loop;
    a `while` loop's test runs on every pass."""
    loops: List[ast.AST] = []
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            break
        if isinstance(anc, LOOPS):
            if child is not getattr(anc, "iter", None) and child is not getattr(anc, "target", None):
                loops.append(anc)
        elif isinstance(anc, COMPREHENSIONS):
            first = anc.generators[0]
            if not (child is first and i + 2 < len(chain) and chain[i + 2] is first.iter):
                loops.append(anc)
    return loops
