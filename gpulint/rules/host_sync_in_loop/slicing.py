"""GPU101's reads by slicing: a device tensor as a slice bound (`x[:length]`)
makes Python read its `__index__` on the host. A mixin of the rule class,
which provides `_in_covered_loop`, `_hot`, `step_kind` and `report`, and
empties `_sliced` at the start of each file."""

from __future__ import annotations

import ast
from typing import List

from gpulint.model.values.callfacts import EVAL
from gpulint.model.control.syncs import slice_bound_tensor, zipped_from
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


    def visit_Subscript(self, node: ast.Subscript, ctx) -> None:
        """`out[i, lengths[i] - 1]` or `features[y]` with `y` taken from a
        device tensor element by element (`for x, y in zip(inputs,
        indexes)`): an element of a device tensor, a 0-dim tensor, used as
        an integer index; Python (or torch's indexing) reads it on the host,
        once per element (weak-to-strong's last-token pick, SpCL's memory
        update). A whole index tensor (`x[idx]`) is advanced indexing, which
        stays on the device: not flagged."""
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        elements = [e for p in parts if not isinstance(p, (ast.Slice, ast.Constant)) for e in _tensor_elements(p)]
        if not elements or not candidate(ctx, ctx.ancestors) or not self._in_covered_loop(ctx.analysis, ctx.ancestors):
            return
        analysis = ctx.analysis
        tensor = next((e for e in elements if _device_element(e, analysis)), None)
        stmt = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.stmt)), None)
        if tensor is None or id(stmt) in self._sliced or self._hot(analysis, node, ctx.ancestors) is None:
            return
        self._sliced.add(id(stmt))
        self.report(ctx, tensor, message=(
            f"indexing with `{snippet(ctx.node_text(tensor))}`, an element of a device tensor, reads it on the "
            f"host, a GPU sync per element every {'batch' if self.step_kind == EVAL else 'step'}; index with "
            "Python ints (read the values once with `.tolist()`), or gather with the whole index tensor"))


def _tensor_elements(index: ast.AST) -> List[ast.AST]:
    """The parts of an index that may be one element of a tensor: `lengths[i]`
    (with a number added or taken: `lengths[i] - 1`), or a name."""
    if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.Add, ast.Sub)) and isinstance(index.right, ast.Constant):
        index = index.left
    if isinstance(index, ast.Subscript) and isinstance(index.value, ast.Name) and not isinstance(
            index.slice, (ast.Slice, ast.Tuple)):
        return [index]
    return [index] if isinstance(index, ast.Name) else []


def _device_element(element: ast.AST, analysis) -> bool:
    """`lengths[i]` of a device tensor `lengths`, or a name a loop binds to
    the elements of one (`for x, y in zip(inputs, indexes)`); not a name that
    holds a whole tensor, which indexes on the device."""
    if isinstance(element, ast.Subscript):
        name = element.value
        return slice_bound_tensor(name, analysis.index.ancestors(name), analysis)
    ancestors = analysis.index.ancestors(element)
    source = zipped_from(element, ancestors)
    return source is not None and slice_bound_tensor(source, analysis.index.ancestors(source), analysis)


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
