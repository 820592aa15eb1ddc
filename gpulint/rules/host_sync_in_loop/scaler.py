"""`scaler.get_scale()` of a `GradScaler` in a hot loop: GPU101 reports it
where it waits for the GPU of its own."""

from __future__ import annotations

import ast

from gpulint.model.control.syncs import statement_and_block
from gpulint.model.index.walk import walk
from gpulint.model.values.kinds import SCALER
from gpulint.rules.host_sync_in_loop.reads import candidate


def scale_read(rule, node: ast.Call, ctx) -> bool:
    """`scaler.get_scale()` of a `GradScaler` in a hot loop: it returns
    `self._scale.item()`, a read of the scale the last `update()` left on the
    device (pi-GAN's `if scaler.get_scale() < 1:` and `1. / scaler.get_scale()`
    every step)."""
    if node.args or node.keywords or not candidate(ctx, ctx.ancestors):
        return False
    if ctx.analysis.values.kind_at(node.func.value, ctx.ancestors) != SCALER:
        return False
    if _beside_scaler_step(ctx.analysis, node, ctx.ancestors):
        return False
    return rule._in_covered_loop(ctx.analysis, ctx.ancestors) and rule._hot(ctx.analysis, node, ctx.ancestors) is not None


def _beside_scaler_step(analysis, node: ast.Call, ancestors) -> bool:
    """`scale_before = scaler.get_scale()`, `scaler.step(optimizer)`,
    `scaler.update()`, `scale_after = scaler.get_scale()` (the Hugging Face
    trainer's check for a skipped step): `scaler.step` reads on the host
    whether the gradients are finite, so a read of the scale in the
    statement right before it, or right after it and its `update()`, waits
    for next to nothing of its own."""
    stmt, _ = statement_and_block(list(ancestors) + [node], analysis)
    slot = analysis.index.slot(stmt) if stmt is not None else None
    if slot is None:
        return False
    parent, field, k = slot
    block = getattr(parent, field)
    scaler = ast.dump(node.func.value)  # type: ignore[attr-defined]

    def calls(b: ast.AST, method: str) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
                   and ast.dump(n.func.value) == scaler for n in walk(b))

    before = block[k - 1] if k > 0 else None
    after = block[k + 1] if k + 1 < len(block) else None
    return (after is not None and calls(after, "step")) or (
        before is not None and (calls(before, "step") or (calls(before, "update") and k > 1 and calls(block[k - 2], "step"))))
