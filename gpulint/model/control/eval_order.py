"""Python's evaluation order within one statement.

`evaluation_order(stmt)` lists the expression nodes of a statement (of a
compound statement: its header, such as an `if`'s test) in the order their
evaluation *completes*: a call after its function and arguments, a dict
display key by key (`k1, v1, k2, v2`), an assignment's value before its
targets. Each node comes with `sure`: whether it is evaluated every time the
statement runs. Branches of `x if c else y`, operands of `and`/`or` after the
first, comparisons of a chain after the first (`a < b < c`) and an `assert`'s
message may not run. The bodies of lambdas and the per-item parts of
comprehensions (all but the first iterable) run later or any number of
times, at no fixed point of the order, and are left out; so are the bodies of
nested defs and classes.
"""

from __future__ import annotations

import ast
from typing import List, Tuple

from gpulint.model.index.nodes import COMPREHENSIONS
from gpulint.model.index.walk import child_nodes

_SIMPLE = (ast.Expr, ast.Return, ast.AugAssign, ast.Delete, ast.Raise)


def evaluation_order(stmt: ast.stmt) -> List[Tuple[ast.AST, bool]]:
    """[(node, surely evaluated)] of `stmt`'s own expressions, in the order
    their evaluation completes (see the module docstring)."""
    out: List[Tuple[ast.AST, bool]] = []

    def visit(node, sure: bool) -> None:
        if node is None:
            return
        if isinstance(node, ast.Lambda):
            args = node.args
            for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
                visit(d, sure)  # defaults are evaluated where the lambda is made; its body when called
        elif isinstance(node, COMPREHENSIONS):
            visit(node.generators[0].iter, sure)  # the rest runs once per item, if any
        elif isinstance(node, ast.IfExp):
            visit(node.test, sure)
            visit(node.body, False)
            visit(node.orelse, False)
        elif isinstance(node, ast.BoolOp):
            visit(node.values[0], sure)
            for v in node.values[1:]:
                visit(v, False)
        elif isinstance(node, ast.Compare):
            visit(node.left, sure)
            for i, c in enumerate(node.comparators):
                visit(c, sure and i == 0)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                visit(k, sure)  # None for `**mapping`
                visit(v, sure)
        elif isinstance(node, ast.Call):
            visit(node.func, sure)
            for a in node.args:
                visit(a, sure)
            for kw in node.keywords:
                visit(kw.value, sure)
        elif isinstance(node, ast.NamedExpr):
            visit(node.value, sure)
            visit(node.target, sure)
        else:
            # in field order, which is evaluation order for the rest: `a + b`,
            # `x[i]`, `x.attr`, `*xs`, `(a, b)`, f-string parts, `lo:hi:step`
            for child in child_nodes(node):
                if isinstance(child, ast.expr):
                    visit(child, sure)
        out.append((node, sure))

    if isinstance(stmt, (ast.If, ast.While)):
        visit(stmt.test, True)
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        visit(stmt.iter, True)
        visit(stmt.target, True)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            visit(item.context_expr, True)
            visit(item.optional_vars, True)
    elif isinstance(stmt, ast.Assert):
        visit(stmt.test, True)
        visit(stmt.msg, False)  # only when the test fails
    elif isinstance(stmt, ast.Assign):
        visit(stmt.value, True)
        for t in stmt.targets:
            visit(t, True)
    elif isinstance(stmt, ast.AnnAssign):
        visit(stmt.value, True)
        visit(stmt.target, True)
    elif isinstance(stmt, _SIMPLE):
        for child in child_nodes(stmt):  # `d[k] += v`: the target's parts first
            if isinstance(child, ast.expr):
                visit(child, True)
    return out
