"""Which branches of an every-step helper run on every call: GPU101 reports a
read in a function that runs every training step only when every call of
that function runs it. A branch on an option or a rare path does not; a
branch that a step counter past a warm-up, a distributed switch, a type
check or the function's own parameter defaults select does."""

from __future__ import annotations

import ast
import re
from typing import Optional

from gpulint.model.index.nodes import FUNCS, parameter_defaults
from gpulint.model.control.distributed import turns_on_distributed
from gpulint.model.values.narrowing import tests_parameter_tensor


def conditional_in(node: ast.AST, ancestors, func: ast.AST, analysis) -> bool:
    """`node` runs under an `if` of `func` (or one branch of `x if c else y`)
    that is not a type check (`isinstance(v, torch.Tensor)`, `v is None`,
    `torch.is_tensor(x)` of a parameter `x`).
    In a helper that runs every step, such a branch is most often an option
    or a rare path (`if self.autobalance:`, a DeepSpeed-only branch, an
    error path), which the call graph cannot tell from an every-step one."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if anc is func:
            return False
        if isinstance(anc, ast.If) and child is not anc.test and not _type_check(anc.test) \
                and not tests_parameter_tensor(anc.test, func, analysis.imports):
            if child in anc.body and (_past_a_step(anc.test) or turns_on_distributed(anc.test)):
                continue
            if _by_default(anc.test, func, analysis.index) is not (child in anc.body):
                return True
        if isinstance(anc, ast.IfExp) and child is not anc.test and not _type_check(anc.test):
            return True
    return False


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


def _by_default(test: ast.AST, func: ast.AST, index) -> Optional[bool]:
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
        inner = _by_default(test.operand, func, index)
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


_COUNTER_RE = re.compile(r"(^|_)(steps?|iters?|iterations?|updates?|epochs?)$")


def _past_a_step(test: ast.AST) -> bool:
    """`if self.steps > self.config["discriminator_train_start_steps"]:`: a
    step counter past a threshold, true on every step after a warm-up, not
    an option or a rare path."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Gt, ast.GtE))):
        return False
    left = test.left
    name = left.attr if isinstance(left, ast.Attribute) else left.id if isinstance(left, ast.Name) else None
    return name is not None and _COUNTER_RE.search(name) is not None


def _type_check(test: ast.AST) -> bool:
    """`isinstance(...)` (not for a Python scalar type), `x is None` / `x is not
    None`, and `not` / `and` of them."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _type_check(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(_type_check(v) for v in test.values)
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in ("isinstance", "hasattr", "callable"):
        # a test for a Python scalar type picks a rarer path by the input's kind
        # (`if isinstance(num_samples, float):` under sequence parallelism)
        return not (test.func.id == "isinstance" and len(test.args) == 2 and _scalar_types(test.args[1]))
    return (
        isinstance(test, ast.Compare)
        and all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)
        and all(isinstance(c, ast.Constant) and c.value is None for c in test.comparators)
    )


def _scalar_types(types: ast.AST) -> bool:
    elts = types.elts if isinstance(types, ast.Tuple) else [types]
    return bool(elts) and all(isinstance(t, ast.Name) and t.id in ("float", "int", "bool", "str") for t in elts)


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

    return index.memoized("branches.passed", func, compute)
