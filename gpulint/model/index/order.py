"""Source-order structure of one scope: its own nodes, node positions, and the
loops around a node.

Positions are (line, column) pairs; comparing the end of one node with the
start of another tells which runs first in straight-line code.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import COMPREHENSIONS, FUNCS, LOOPS, SCOPES
from gpulint.model.index.walk import child_nodes, walk

Pos = Tuple[int, int]


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
        stack = child_nodes(scope)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            # a nested def's decorators run in this scope; its body does not
            if isinstance(node, FUNCS):
                stack.extend(node.decorator_list)
            continue
        stack.extend(child_nodes(node))


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
        stack.extend(reversed(child_nodes(node)))


def stored_names(index) -> Dict[Optional[ast.AST], Set[str]]:
    """def, lambda, class or module (`index.owner`) -> the names its own code
    binds or deletes (a `Name` not loaded), from one pass over the file's
    names, kept in the index."""
    def compute() -> Dict[Optional[ast.AST], Set[str]]:
        out: Dict[Optional[ast.AST], Set[str]] = {}
        for n in index.nodes_of(ast.Name):
            if not isinstance(n.ctx, ast.Load):
                out.setdefault(index.owner(n), set()).add(n.id)
        return out
    return index.memoized("order.stored_names", None, compute)


def unbound_parameters(index, scope: ast.AST) -> Set[str]:
    """The parameters of the def `scope` (not `self` / `cls`) that its own
    code never binds again (`stored_names`): wherever it reads one, it
    holds the argument."""
    a = scope.args  # type: ignore[attr-defined]
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"self", "cls"}
    if params:
        params -= stored_names(index).get(scope, set())
    return params


def callee_name(call: ast.Call) -> Optional[str]:
    """`f` for `f(...)`, `m` for `obj.m(...)`."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


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


def target_names(target: ast.AST) -> Iterable[str]:
    """The names an assignment or loop target binds."""
    for n in walk(target):
        if isinstance(n, ast.Name):
            yield n.id


def walk_scope(body: List[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope in source order, not descending into nested scopes."""
    stack: List[object] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):  # an assignment whose value has been walked
            yield node[0]
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # the value (and comprehensions in it, which bind their own names)
            # is walked before the assignment binds its targets, as Python runs
            # it: `batch = {k: v.cuda() for k, v in batch.items()}` sees the old batch
            stack.append((node,))
            stack.extend(child_nodes(node))
            continue
        yield node
        if isinstance(node, SCOPES):
            continue
        stack.extend(reversed(child_nodes(node)))


def own_nodes(loop: ast.AST) -> Iterator[ast.AST]:
    """Nodes of the loop's own body: not in nested loops, defs, lambdas or classes."""
    stack = [
        n
        for n in list(loop.body) + list(getattr(loop, "orelse", []))  # type: ignore[attr-defined]
        if not isinstance(n, LOOPS) and not isinstance(n, SCOPES)
    ]
    while stack:
        node = stack.pop()
        yield node
        for child in child_nodes(node):
            if isinstance(child, LOOPS) or isinstance(child, SCOPES):
                continue
            stack.append(child)


def nested_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes inside `node`, at any depth, not looking into defs, lambdas or classes."""
    stack = child_nodes(node)
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPES):
            continue
        yield n
        stack.extend(child_nodes(n))


def nested_loops(loop: ast.AST) -> Iterator[ast.AST]:
    """The loops inside `loop`, at any depth, not looking into defs, lambdas or classes."""
    return (n for n in nested_nodes(loop) if isinstance(n, LOOPS))
