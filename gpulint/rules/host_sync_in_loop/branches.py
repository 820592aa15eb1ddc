"""Which branches of an every-step helper run on every call: GPU101 reports a
read in a function that runs every training step only when every call of
that function runs it. A branch on an option or a rare path does not; a
branch that a step counter past a warm-up, a distributed switch, a type
check or the function's own parameter defaults select does."""

from __future__ import annotations

import ast
import re

from gpulint.model.control.defaults import by_default
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
            if by_default(anc.test, func, analysis.index) is not (child in anc.body):
                return True
        if isinstance(anc, ast.IfExp) and child is not anc.test and not _type_check(anc.test):
            return True
    return False


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
