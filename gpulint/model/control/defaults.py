"""What a function's `if` tests give when its parameters keep their literal
defaults: a helper's default path is the one its callers take unless they
say otherwise (`calculate_metrics(pred, gold, loss_type="ce")` with `if
loss_type == "ce":`; a clipping helper copied from torch, called as
`global_grad_norm_(params)`, with `if norm_type == inf:`)."""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.index.nodes import FUNCS, parameter_defaults


_INF_NAMES = frozenset(("inf", "math.inf", "np.inf", "numpy.inf", "torch.inf"))


def _default_value(expr: ast.AST, defaults: dict):
    """The value of `expr` when the function's parameters keep their
    defaults: a parameter with a literal default, a literal, or infinity
    (`inf`, `math.inf`, `float("inf")`); `_UNKNOWN` otherwise."""
    if isinstance(expr, ast.Name) and expr.id in defaults:
        return defaults[expr.id]
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, (ast.Name, ast.Attribute)) and ast.unparse(expr) in _INF_NAMES:
        return float("inf")
    if (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "float"
        and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant) and expr.args[0].value in ("inf", "Inf")
    ):
        return float("inf")
    return _UNKNOWN


_UNKNOWN = object()


def by_default(test: ast.AST, func: ast.AST, index) -> Optional[bool]:
    """The truth of an `if` test of `func` when its parameters keep their
    literal defaults (`if norm_type == inf:` with `norm_type=2`: False), or
    None when the test reads anything else. A helper's default path is the
    one its callers take unless they say otherwise (a clipping helper copied
    from torch, called as `global_grad_norm_(params)`), unless a call of
    the function in this file passes that parameter (poutyne's callers pass
    `return_loss_tensor=True`)."""
    if not isinstance(func, FUNCS):
        return None
    defaults = {a.arg: d.value for a, d in parameter_defaults(func) if isinstance(d, ast.Constant)}
    if defaults:
        passed = _passed_here(index, func)
        defaults = {k: v for k, v in defaults.items() if k not in passed}
    if not defaults:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = by_default(test.operand, func, index)
        return None if inner is None else not inner
    if isinstance(test, ast.Name):
        value = defaults.get(test.id, _UNKNOWN)
        return None if value is _UNKNOWN else bool(value)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    if not any(isinstance(side, ast.Name) and side.id in defaults for side in (test.left, test.comparators[0])):
        return None
    left, right = _default_value(test.left, defaults), _default_value(test.comparators[0], defaults)
    if left is _UNKNOWN or right is _UNKNOWN:
        return None
    return (left == right) is isinstance(test.ops[0], ast.Eq)


def _passed_here(index, func: ast.AST) -> set:
    """The parameters of `func` that some call of it in this file passes
    (`name(...)` or `x.name(...)`): by keyword, by position (after `self` in a
    method called as `x.name(...)`), or all of them through `**kwargs` or `*args`."""

    def compute() -> set:
        name = func.name  # type: ignore[attr-defined]
        args = func.args  # type: ignore[attr-defined]
        positional = [a.arg for a in args.posonlyargs + args.args]
        everything = set(positional) | {a.arg for a in args.kwonlyargs}
        out: set = set()
        for call in index.nodes(ast.Call):
            f = call.func  # type: ignore[attr-defined]
            if not ((isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name)):
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):  # type: ignore[attr-defined]
                return everything
            out.update(k.arg for k in call.keywords)  # type: ignore[attr-defined]
            n = len(call.args)  # type: ignore[attr-defined]
            skip = 1 if positional and positional[0] in ("self", "cls") and isinstance(f, ast.Attribute) else 0
            out.update(positional[skip: skip + n])
        return out

    return index.memoized("defaults.passed", func, compute)
