"""GPU101's reads by slicing: a device tensor as a slice bound (`x[:length]`)
makes Python read its `__index__` on the host. A mixin of the rule class,
which provides `_in_covered_loop`, `_hot`, `step_kind` and `report`, and
empties `_sliced` at the start of each file."""

from __future__ import annotations

import ast
from typing import List

from gpulint.model.values.callfacts import EVAL
from gpulint.model.control.syncs import slice_bound_tensor
from gpulint.rules.host_sync_in_loop.reads import candidate, snippet


class SliceReads:
    _sliced: set  # the statements reported, one finding each (emptied by the rule's `begin_file`)

    def visit_Slice(self, node: ast.Slice, ctx) -> None:
        """`x[:length]` with a device tensor as a bound: Python asks the
        tensor for its `__index__`, which reads it on the host (StyleTTS's
        `_s2s_pred[:_text_length]` over the CUDA lengths, StyleGAN's
        `ws[:, cutoff:]`)."""
        bounds = [b for b in (node.lower, node.upper, node.step) if b is not None and not isinstance(b, ast.Constant)]
        if not bounds or not candidate(ctx, ctx.ancestors) or not self._in_covered_loop(ctx.analysis, ctx.ancestors):
            return
        tensor = next((b for b in bounds for t in _bound_tensors(b)
                       if slice_bound_tensor(t, ctx.analysis.index.ancestors(t), ctx.analysis)), None)
        stmt = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.stmt)), None)
        if tensor is None or id(stmt) in self._sliced or self._hot(ctx.analysis, node, ctx.ancestors) is None:
            return
        self._sliced.add(id(stmt))
        self.report(ctx, tensor, message=(
            f"slicing with the tensor `{snippet(ctx.node_text(tensor))}` as a bound reads it on the host, "
            f"a GPU sync every {'batch' if self.step_kind == EVAL else 'step'}; slice with a Python int "
            "(read the lengths once, or keep them on the CPU)"))


def _bound_tensors(bound: ast.AST) -> List[ast.AST]:
    """The names a slice bound reads as its value: `length`, `length - 1`
    (arithmetic of a tensor is a tensor), `lengths[i]` (an element of a
    tensor is a tensor: svoice's `mask[i, :, source_lengths[i]:] = 0`); not
    `len(x)`, `x.shape[1]`, `n.item()`."""
    if isinstance(bound, ast.Name):
        return [bound]
    if isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Name) and not isinstance(
            bound.slice, (ast.Slice, ast.Tuple)):
        return [bound.value]
    if isinstance(bound, ast.BinOp):
        return _bound_tensors(bound.left) + _bound_tensors(bound.right)
    if isinstance(bound, ast.UnaryOp):
        return _bound_tensors(bound.operand)
    return []
