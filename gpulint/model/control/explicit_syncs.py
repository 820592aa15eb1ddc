"""Calls that make the host wait for all the GPU work queued so far: an
explicit sync (`torch.cuda.synchronize()`, a barrier, an alias of one:
`is_explicit_sync`), for the walks of `syncs` and the timed intervals of
GPU601."""

from __future__ import annotations

import ast

# calls that make the host wait for all the GPU work queued so far
EXPLICIT_SYNCS = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.distributed.barrier"})


def is_explicit_sync(n: ast.AST, analysis=None) -> bool:
    """`torch.cuda.synchronize()`, `dist.barrier()`, `event.synchronize()`,
    or a module-level alias of one: what runs right after it waits for
    nothing queued before."""
    if not isinstance(n, ast.Call):
        return False
    func = n.func
    if isinstance(func, ast.Attribute) and func.attr == "synchronize" and not n.args and not n.keywords:
        return True
    if analysis is None:
        return False
    if isinstance(func, ast.Name) and not n.args and not n.keywords and func.id in sync_aliases(analysis):
        return True
    return analysis.imports.qualname(func) in EXPLICIT_SYNCS


def sync_aliases(analysis) -> frozenset:
    """The module-level names bound to an explicit sync: `synchronize =
    torch.cuda.synchronize`, or the sync on CUDA and a no-op elsewhere
    (nanochat's `torch.cuda.synchronize if device_type == "cuda" else
    lambda: None`: on the CPU nothing is queued to wait for)."""
    def find() -> frozenset:
        out = set()
        for stmt in analysis.index.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                value = stmt.value
                options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                syncs = [o for o in options if analysis.imports.qualname(o) in EXPLICIT_SYNCS]
                if syncs and all(o in syncs or isinstance(o, ast.Lambda) for o in options):
                    out.add(stmt.targets[0].id)
        return frozenset(out)
    if not (analysis.index.mentions("synchronize") or analysis.index.mentions("barrier")):
        return frozenset()
    return analysis.index.memoized("syncs.aliases", None, find)

