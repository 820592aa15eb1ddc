"""GPU203's constant case: a tensor of one number, written as a literal
(`torch.tensor([0.])`, `torch.FloatTensor([0.5])`, `torch.tensor([0] *
batch_size)`, `torch.tensor(-100)`) and moved to the GPU:

    reg_term = torch.tensor([0.]).to(nll.device)

Unlike host data, which has to cross anyway (and for which `torch.tensor(list,
device=...)` measured slower than the copy: the rule's doc), a constant is
no data: `torch.zeros(1, device=...)` or `torch.full((n,), v, device=...)`
fills it on the GPU with one kernel, no copy and no wait for the stream.
"""

from __future__ import annotations

import ast
from typing import NamedTuple, Optional

from gpulint.model.values.devices import LEGACY_CONSTRUCTORS, legacy_constructor
from gpulint.model.index.walk import walk

_MAX_TEXT = 30


class Fill(NamedTuple):
    size: str  # the size as the fix writes it: "()", "1", "args.batch_size"
    value: object  # the number
    dtype: Optional[str]  # "torch.long", or None for the default
    grad: Optional[str] = None  # the `requires_grad=` given, as written


def constant_fill(fa, call: ast.AST, text_of) -> Optional[Fill]:
    """The fill a call builds from a literal of one repeated number: a
    scalar (`torch.tensor(-100)`; not a legacy constructor's, `FloatTensor(3)`
    is a size), a list or tuple of equal numbers (`[0.]`, `(1, 1)`), or one
    number repeated (`[0] * n`, `[trg_idx] * n`); else None. A
    `requires_grad=` given with it (TANGOS's `torch.tensor(0.,
    requires_grad=True).to(device)`, a loss term's start) goes with the fill."""
    if not isinstance(call, ast.Call) or len(call.args) != 1 \
            or any(k.arg not in ("dtype", "requires_grad") for k in call.keywords):
        return None
    legacy = legacy_constructor(fa, call)
    if legacy is None and (fa.imports.qualname(call.func) or "") not in ("torch.tensor", "torch.as_tensor"):
        return None
    if legacy is not None and call.keywords:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant):
        if legacy is not None or not _number(arg):
            return None
        size, value = "()", arg.value
    elif isinstance(arg, (ast.List, ast.Tuple)) and arg.elts and all(_number(e) for e in arg.elts):
        values = {e.value for e in arg.elts}  # type: ignore[attr-defined]
        if len(values) != 1 or len({type(e.value) for e in arg.elts}) != 1:  # type: ignore[attr-defined]
            return None
        size, value = str(len(arg.elts)), arg.elts[0].value  # type: ignore[attr-defined]
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult):
        literal, times = (arg.left, arg.right) if isinstance(arg.left, ast.List) else (arg.right, arg.left)
        if not (isinstance(literal, ast.List) and len(literal.elts) == 1):
            return None
        if isinstance(times, (ast.List, ast.Tuple)) or len(text_of(times)) > _MAX_TEXT or "\n" in text_of(times):
            return None
        one = literal.elts[0]
        if _number(one):
            size, value = text_of(times), one.value  # type: ignore[attr-defined]
        elif _host_scalar(fa, one, call):  # `[trg_idx] * N`: one Python number, repeated
            size, value = text_of(times), _Named(text_of(one))
        else:
            return None
    else:
        return None
    if legacy is not None:
        base = LEGACY_CONSTRUCTORS[legacy]
        dtype = f"torch.{base}" if base and base != "float32" else None
    else:
        given = next((k.value for k in call.keywords if k.arg == "dtype"), None)
        if given is not None:
            dtype = text_of(given)
        else:
            dtype = "torch.long" if isinstance(value, (int, _Named)) else None  # (a counter is an int)
    grad = next((text_of(k.value) for k in call.keywords if k.arg == "requires_grad"), None)
    return Fill(size, value, dtype, grad)


class _Named(str):
    """A fill value named in the code (`trg_idx`), written as it is."""

    def __repr__(self) -> str:
        return str(self)


def _host_scalar(fa, node: ast.AST, call: ast.Call) -> bool:
    """`node` is a loop's counter: the name a `for` around `call` binds to
    `range(...)` or to `enumerate(...)`'s index (`for trg_idx, domain in
    enumerate(domains)`), and binds nowhere else in the function."""
    if not isinstance(node, ast.Name):
        return False
    ancestors = fa.index.ancestors(call)
    scope = fa.index.enclosing_scope(ancestors)
    for loop in reversed(ancestors):
        if loop is scope:
            return False
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) \
                or not isinstance(loop.iter.func, ast.Name):
            continue
        target, iterated = loop.target, loop.iter.func.id
        if isinstance(target, ast.Tuple) and iterated == "enumerate" and target.elts:
            target = target.elts[0]
        elif iterated != "range":
            continue
        if isinstance(target, ast.Name) and target.id == node.id:
            return scope is not None and sum(
                1 for n in walk(scope) if isinstance(n, ast.Name) and n.id == node.id
                and isinstance(n.ctx, ast.Store)) == 1
    return False


def stored_under_a_key(fa, move: ast.Call) -> bool:
    """`losses["loss_bbox_dn"] = torch.as_tensor(0.).to("cuda")`: a zero
    standing in for an entry the step computes on its other path (DINO's
    and DN-DETR's denoising losses at evaluation), which the host reads
    with the rest of the dict; not a value the step computes with."""
    stmt = fa.index.parents.get(move)
    return isinstance(stmt, ast.Assign) and stmt.value is move and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], ast.Subscript)


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def fill_message(fill: Fill, built: str) -> str:
    """The finding's message: what fills the same tensor on the GPU."""
    built = built if len(built) <= 40 and "\n" not in built else "torch.tensor(...)"
    dtype = f", dtype={fill.dtype}" if fill.dtype else ""
    if fill.grad is not None:
        dtype += f", requires_grad={fill.grad}"
    if fill.value == 0 and fill.size != "()":
        fix = f"torch.zeros({fill.size}{dtype}, device=...)"
    elif fill.value == 1 and fill.size != "()":
        fix = f"torch.ones({fill.size}{dtype}, device=...)"
    else:
        size = "()" if fill.size == "()" else f"({fill.size},)"
        fix = f"torch.full({size}, {fill.value!r}{dtype}, device=...)"
    return (f"`{built}` builds a constant on the CPU and copies it to the GPU, a blocking copy each time; "
            f"`{fix}` fills it there (or build it once, outside the loop)")
