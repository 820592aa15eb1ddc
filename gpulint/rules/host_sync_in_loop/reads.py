"""What GPU101 and GPU104 ask of a node before looking closer: whether the
file or function can run on an accelerator at all, which def it runs in,
whether a value is a device tensor, and how a piece of code is shown in a
message."""

from __future__ import annotations

import ast
import re
from typing import Optional

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.values.kinds import TENSOR
from gpulint.model.control.syncs import derived_from_host_read

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
