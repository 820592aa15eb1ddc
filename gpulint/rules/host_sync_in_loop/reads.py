"""What GPU101 and GPU104 ask of a node before looking closer: whether the
file or function can run on an accelerator at all, which def it runs in,
whether a value is a device tensor, and how a piece of code is shown in a
message."""

from __future__ import annotations

import ast
import re
from typing import Optional

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.values.kinds import HOST_KINDS, TENSOR
from gpulint.model.control.loops import counts_passes
from gpulint.model.control.syncs import derived_from_host_read
from gpulint.model.index.walk import walk

MAX_SNIPPET = 56


def snippet(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MAX_SNIPPET else text[: MAX_SNIPPET - 3].rstrip() + "..."


def candidate(ctx, ancestors) -> bool:
    """Cheap first checks: the file can put tensors on an accelerator at all
    (a file that never mentions CUDA, a device, `.to(...)` or a library that
    moves tensors computes on the CPU, unless the project's call graph says
    that a file which can use one calls the function, or, for a module that
    is not a script, that the function runs every step and some file of the
    project can use an accelerator: the CPU-only scripts of a repository
    whose other scripts use a GPU stay on the CPU), and a for/while
    encloses the node within its function, or the function runs every step."""
    analysis = ctx.analysis
    func = function_of(ancestors)
    facts = analysis.facts
    per_step = func is not None and facts.every_step(func) is not None and facts.project_uses_accelerator()
    if not (analysis.index.may_use_accelerator or (func is not None and facts.device_side(func))
            or (per_step and not (analysis.index.is_cpu_script() and not facts.self_test()))):
        # a script that never names a device is a program of its own that runs on the CPU (the
        # CPU-only examples of a repository whose other scripts use a GPU); a library module's
        # per-step code may run on tensors its callers moved
        return False
    for anc in reversed(ancestors):
        if isinstance(anc, SCOPES):
            return per_step
        if isinstance(anc, LOOPS):
            return True
    return False


def function_of(ancestors) -> Optional[ast.AST]:
    """The def that `ancestors` run in (not through a lambda or a class)."""
    for anc in reversed(ancestors):
        if isinstance(anc, FUNCS):
            return anc
        if isinstance(anc, SCOPES):
            return None
    return None


def is_device_tensor(expr: ast.AST, ctx) -> bool:
    """Known to be a tensor, and not known to be in host memory."""
    if ctx.analysis.values.kind_at(expr, ctx.ancestors) != TENSOR:
        return False
    if isinstance(expr, ast.Name) and derived_from_host_read(expr.id, ctx.ancestors, ctx.analysis):
        return False
    return not ctx.analysis.host.is_host_tensor(expr, ctx.ancestors)


def indexed_element(analysis, expr: ast.AST, ancestors) -> Optional[ast.AST]:
    """`t[i]` of a device tensor `t`, where `i` counts the passes of a loop
    around it (`for i in range(n)`, the index of `enumerate`, also in a
    comprehension), and `t` is not bound again in that loop: the loop reads
    one element of `t` per pass (Autoformer's `int(index[i])` for each of
    the top-k delays, `int(memory_len[i])` for each sample). Returns `t`, or None."""
    if not (isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Name)
            and isinstance(expr.value, (ast.Name, ast.Attribute))):
        return None
    index = expr.slice.id
    for i in range(len(ancestors) - 1, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, SCOPES):
            return None
        if isinstance(anc, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if any(_range_index(g.iter, g.target, index) for g in anc.generators):
                return _device_base(analysis, expr.value, ancestors, anc)
        elif isinstance(anc, (ast.For, ast.AsyncFor)) and counts_passes(anc, index):
            return _device_base(analysis, expr.value, ancestors, anc) if _queues_device_work(
                analysis, anc, expr, ancestors[:i + 1]) else None
    return None


def _queues_device_work(analysis, loop: ast.AST, read: ast.AST, outer) -> bool:
    """The loop's body does device work besides the read (a torch call, a
    method or arithmetic of a tensor, a store into one: `torch.roll(values,
    -int(index[i]))`): each pass's read waits for the work of the pass
    before. A loop that only reads the elements and builds host values
    (DETR's panoptic post-processor filling its segment records) reads
    values that are ready, a copy each."""
    inside = {id(n) for n in walk(read)}
    for n in walk(loop):
        if id(n) in inside or n is loop.iter:  # type: ignore[attr-defined]
            continue
        if isinstance(n, ast.Call):
            q = analysis.imports.qualname(n.func) or ""
            if q.startswith("torch.") and not q.startswith(("torch.cuda.", "torch.distributed.")):
                return True
            if (isinstance(n.func, ast.Attribute) and n.func.attr not in _HOST_SIDE_METHODS
                    and analysis.values.kind_at(n.func.value, outer) not in HOST_KINDS):
                return True  # (`logprob[k].roll(...)`: a tensor's method, or one that may be)
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, ast.Subscript) and analysis.values.kind_at(t.value, outer) == TENSOR for t in targets):
                return True
        elif isinstance(n, ast.BinOp) and any(analysis.values.kind_at(side, outer) == TENSOR for side in (n.left, n.right)):
            return True
    return False


# methods that queue no device work: a tensor's reads and questions about it, and those
# of the host's containers and strings (`segments_info.append({...})`)
_HOST_SIDE_METHODS = frozenset({
    "item", "tolist", "cpu", "numpy", "size", "dim", "numel", "type",
    "append", "extend", "insert", "pop", "get", "items", "keys", "values", "update", "setdefault", "add",
    "format", "join", "split", "strip", "replace", "startswith", "endswith", "write", "print",
})


def _range_index(it: ast.AST, target: ast.AST, name: str) -> bool:
    return (isinstance(target, ast.Name) and target.id == name and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range" and len(it.args) == 1)


def _device_base(analysis, base: ast.AST, ancestors, loop: ast.AST) -> Optional[ast.AST]:
    if not is_device_value(analysis, base, ancestors):
        return None
    text = ast.unparse(base)
    if any(isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store) and ast.unparse(n) == text
           for n in walk(loop)):
        return None  # bound again in the loop: another tensor on each pass
    return base


def is_device_value(analysis, expr: ast.AST, ancestors) -> bool:
    """Known to be a tensor, and not known to be in host memory."""
    return (analysis.values.kind_at(expr, ancestors) == TENSOR
            and not analysis.host.is_host_tensor(expr, ancestors))
