"""What a call hands to the function it calls, as a summary records it: the
kind of each argument of a call from a hot loop (`argument_kinds`), and which
of the caller's own parameters a call on every run of it hands on
(`forwarded`). The project joins them into what each parameter holds
(`graph._param_kinds`), and into which parameters every caller hands a
model it switched to eval mode (`evaluated_arguments`,
`graph.entered_evaluated`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Set

from gpulint.model.control.modes import EVAL, mode_before, model_key, switching_scopes
from gpulint.model.values.kinds import HOST_TENSOR, TENSOR

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel


def forwarded(call: ast.Call, params: Set[str]) -> Optional[tuple]:
    """For a call on every run of a def whose `params` are never bound again
    (`index.order.unbound_parameters`): ((position or keyword, "=" + parameter), ...)
    where an argument is one of them (`self._train_step(model, loss)` in
    `__call__(self, model, loss)`), "?" for the other arguments; None where
    no argument is such a parameter. The callee's parameter then holds what
    the caller's does. Read without type inference."""
    if not params or not any(isinstance(v, ast.Name) and v.id in params
                             for v in list(call.args) + [k.value for k in call.keywords]):
        return None
    out = []
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            out.append(("*", "?"))
            break
        out.append((str(i), "=" + a.id if isinstance(a, ast.Name) and a.id in params else "?"))
    for kw in call.keywords:
        if kw.arg is None:
            out.append(("**", "?"))
        else:
            v = kw.value
            out.append((kw.arg, "=" + v.id if isinstance(v, ast.Name) and v.id in params else "?"))
    return tuple(sorted(out))


def evaluated_arguments(fa: "FileModel", call: ast.Call, scope: ast.AST) -> Set[str]:
    """The arguments (position, or keyword) of `call` that are models `scope`
    switched to eval mode before it (`model.eval()` then `evaluate(model,
    data)`)."""
    out: Set[str] = set()
    if scope not in switching_scopes(fa):
        return out
    for key, value in [(str(i), a) for i, a in enumerate(call.args)] + [(k.arg, k.value) for k in call.keywords]:
        if key is None or isinstance(value, ast.Starred):
            break  # (`*args` / `**kw`: which parameters the rest fill is not known)
        model = model_key(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if model is not None and mode_before(fa, model, call, scope) == EVAL:
            out.add(key)
    return out


def argument_kinds(fa: "FileModel", call: ast.Call, ancestors) -> tuple:
    """((position or keyword, kind), ...) for every argument of the call, the
    kind "?" where unknown; "*" and "**" for unpacked arguments."""
    out = []
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            out.append(("*", "?"))
            break
        out.append((str(i), kind_passed(fa, a, ancestors) or "?"))
    for kw in call.keywords:
        if kw.arg is None:
            out.append(("**", "?"))
        else:
            out.append((kw.arg, kind_passed(fa, kw.value, ancestors) or "?"))
    return tuple(sorted(out))


def kind_passed(fa: "FileModel", expr: ast.AST, ancestors) -> Optional[str]:
    """The kind of a value handed to another function (an argument, a return
    value): a tensor known to live in host memory is `HOST_TENSOR`. Names
    are read as they stand where the value is handed on (`check_nan(loss)`
    after `loss = criterion(...)`, before a later `loss = loss.item()`)."""
    kind = fa.values.kind_at(expr, ancestors)
    if kind == TENSOR and fa.host.is_host_tensor(expr, ancestors):
        return HOST_TENSOR
    return kind
