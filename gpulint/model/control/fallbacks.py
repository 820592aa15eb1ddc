"""Empty fallbacks: what a step does when a value holds no items.

SPIN's losses return `torch.FloatTensor(1).fill_(0.).to(device)` for a
batch in which no sample has 3D joints: the `else` of `if len(gt) > 0:`.
That branch runs for a rare batch with nothing to score, not every step
(`repetition.runs_repeatedly` asks). Only a block that hands back
placeholders built from literals counts: a loss computed for an image
without boxes (retinanet's `torch.ones(classification.shape)`, as large as
the image's anchors) is work.
"""

from __future__ import annotations

import ast

from gpulint.model.index.walk import walk


def _size_of(expr: ast.AST) -> bool:
    """`len(x)`, `x.numel()`, `x.shape[0]`, `x.size(0)`: how many items `x` holds."""
    if isinstance(expr, ast.Call):
        f = expr.func
        if isinstance(f, ast.Name):
            return f.id == "len" and len(expr.args) == 1
        if isinstance(f, ast.Attribute):
            return (f.attr == "numel" and not expr.args) or (
                f.attr == "size" and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant)
                and expr.args[0].value == 0)
        return False
    return (isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape"
            and isinstance(expr.slice, ast.Constant) and expr.slice.value == 0)


def empty_fallback(branch: ast.If, child: ast.AST) -> bool:
    """`child` is what runs when a value holds no items: the `else` of `if
    len(valid) > 0:` (or `x.numel() > 0`, `x.shape[0]`, plain `if len(x):`),
    or the body of `if x.numel() == 0:`. SPIN's `return
    torch.FloatTensor(1).fill_(0.).to(device)` for a batch with no 3D
    joints: a placeholder for a rare batch, not per-step work."""
    test = branch.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) \
            and _size_of(test.left):
        op, n = test.ops[0], test.comparators[0].value
        if type(n) is not int:
            return False
        nonempty = isinstance(op, ast.Gt) and n == 0 or isinstance(op, ast.GtE) and n == 1 \
            or isinstance(op, ast.NotEq) and n == 0
        empty = isinstance(op, ast.Eq) and n == 0 or isinstance(op, ast.Lt) and n == 1
        if nonempty and child in branch.orelse:
            return _placeholders(branch.orelse)
        return empty and child in branch.body and _placeholders(branch.body)
    if _size_of(test) and child in branch.orelse:
        return _placeholders(branch.orelse)
    return False


def _placeholders(block) -> bool:
    """The block only binds or returns values built from literals: every call
    in it takes constants only (`torch.FloatTensor(1).fill_(0.)`,
    `torch.zeros(1)`), but for the device a move names. Not a loss computed
    for an image without boxes (retinanet's `torch.ones(classification.shape)`
    of 37 MB, per such image)."""
    if len(block) > 4:
        return False
    for stmt in block:
        if not isinstance(stmt, (ast.Return, ast.Assign, ast.AnnAssign)):
            return False
        for n in walk(stmt):
            if isinstance(n, ast.Call):
                moves = isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda", "type")
                if not moves and not all(isinstance(a, ast.Constant) for a in n.args + [k.value for k in n.keywords]):
                    return False
    return True
