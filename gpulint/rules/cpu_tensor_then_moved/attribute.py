"""GPU203's kept case: a tensor that `__init__` builds on the host and keeps
as a plain attribute, copied to the device on every call:

    self.freqs_cis = precompute_freqs_cis(dim, n)      # in __init__: a CPU tensor
    freqs_cis = self.freqs_cis.to(x.device)[pos]       # in forward: copied every call

`model.to(device)` moves parameters and buffers, not plain attributes, so the
table stays on the CPU and every call copies it again, a blocking copy from
pageable memory. `self.register_buffer(...)` keeps it on the model's device
(and keeps it out of the state dict with `persistent=False`). Only an
attribute the class binds nowhere but in `__init__`, each time to what a CPU
factory computes there (`values.host_built`), or, in an `nn.Module`, to
host data made a tensor there (`torch.Tensor(adjacency)`,
`torch.from_numpy(table)`: a trainer's reward weights or a scheduler's
constants have no buffers to move with), or a list that `__init__` fills
only with such tensors (`self.priors.append(torch.Tensor(...))`, moved
item by item or joined by `torch.cat`): one bound again, a cache filled on
first use, or a parameter on another path is left alone.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Tuple

from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.index.nodes import FUNCS
from gpulint.model.values.attributes import is_self_attr
from gpulint.model.values.devices import default_device_set, legacy_constructor
from gpulint.model.values.host_built import TENSOR_ELEMENTWISE, host_factory

# methods between the attribute and the move that keep its data where it is
_KEEPING = TENSOR_ELEMENTWISE | {"clone", "detach", "expand", "expand_as", "view_as", "reshape_as"}


def kept_attribute(fa, move: ast.Call, ancestors: Sequence[ast.AST]) -> Optional[Tuple[str, bool]]:
    """For a move (`.to(<device>)` / `.cuda()`, the caller checks the
    target) of `self.<name>`, through casts and layouts, in code that runs
    repeatedly: `name`, where the class binds it only in `__init__`, each
    time to a tensor a CPU factory computes there; else None."""
    recv = move.func.value  # type: ignore[attr-defined]
    item = False  # (an item of a list the attribute holds, or the list joined: `_list_on_host`)
    while True:
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and (
                recv.func.attr in _KEEPING or _to_dtype(recv)):
            recv = recv.func.value
        elif isinstance(recv, ast.BinOp) and isinstance(recv.left, ast.Constant):
            recv = recv.right  # `(1.0 * self.anchors).to(device)`
        elif isinstance(recv, ast.BinOp) and isinstance(recv.right, ast.Constant):
            recv = recv.left
        elif isinstance(recv, ast.Subscript) and isinstance(recv.ctx, ast.Load):
            recv, item = recv.value, True  # `self.priors[i][:, :1].to(d)`: an item of a list `__init__` fills
        elif isinstance(recv, ast.Call) and fa.imports.call_qualname(recv) in _JOINS and recv.args \
                and is_self_attr(recv.args[0]):
            recv, item = recv.args[0], True  # `torch.cat(self.priors, 0).to(d)`: such a list joined
        else:
            break
    if not is_self_attr(recv):
        return None
    cls = next((a for a in reversed(ancestors) if isinstance(a, ast.ClassDef)), None)
    if cls is None or default_device_set(fa, ancestors):
        return None
    if fa.index.memoized("gpu203.kept", (cls, recv.attr), lambda: _kept_on_host(fa, cls, recv.attr)) != (
            _LIST if item else _TENSOR):
        return None  # (rows of a replay buffer's tensor, `self.state[ind].to(d)`, are data, not a constant)
    return (recv.attr, item) if runs_repeatedly(fa, move, ancestors) else None


# what joins a list of tensors into one where the list's tensors are
_JOINS = frozenset(("torch.cat", "torch.stack", "torch.concat", "torch.concatenate"))


def _to_dtype(call: ast.Call) -> bool:
    """`.to(x.dtype)`, `.to(torch.float16)`: a cast, which keeps the data where it is."""
    if not (call.func.attr == "to" and len(call.args) == 1 and not call.keywords):  # type: ignore[attr-defined]
        return False
    arg = call.args[0]
    return isinstance(arg, ast.Attribute) and (arg.attr == "dtype" or (
        isinstance(arg.value, ast.Name) and arg.value.id == "torch" and arg.attr in _DTYPES))


_DTYPES = frozenset(("float32", "float", "float16", "half", "bfloat16", "float64", "double", "int64", "long",
                     "int32", "int", "bool", "uint8", "int8", "int16"))


_TENSOR, _LIST = "tensor", "list"


def _kept_on_host(fa, cls: ast.ClassDef, name: str) -> Optional[str]:
    """_TENSOR where the class binds `self.<name>` only in `__init__`, each
    time to a tensor a CPU factory computes there (`_built_on_host`); _LIST
    where it holds a list of such tensors (`_list_on_host`); else None."""
    init = next((m for m in cls.body if isinstance(m, FUNCS) and m.name == "__init__"), None)
    if init is None:
        return None
    bindings = _bindings(cls, name)
    if not bindings or any(not _within(stmt, init) for stmt, _ in bindings):
        return None  # bound again (a cache, a move stored back) or elsewhere: not known to stay on the CPU
    data = fa.values.is_module_class(cls)  # (a module's host data: a buffer would move it once)
    if len(bindings) == 1 and isinstance(bindings[0][1], ast.List) and not bindings[0][1].elts:
        return _LIST if data and _list_on_host(fa, cls, init, name) else None
    return _TENSOR if all(value is not None and _built_on_host(fa, value, init, data) for _, value in bindings) else None


def _list_on_host(fa, cls: ast.ClassDef, init: ast.AST, name: str) -> bool:
    """`self.<name> = []` in an `nn.Module`'s `__init__`, then only
    `self.<name>.append(<host tensor>)` there (AFSD's per-level priors,
    `torch.Tensor([[(c + 0.5) / t] for c in range(t)])`): a plain list of CPU
    tensors, which `model.to(device)` does not move; nothing else in the
    class changes it (no other method appends, no item is stored back)."""
    appends = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_self_attr(node.func.value, name):
            if node.func.attr in ("append", "extend", "insert", "__setitem__"):
                appends.append(node)
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and _is_self_attr(node.value, name):
            return False  # `self.priors[i] = t.cuda()`
    return bool(appends) and all(
        a.func.attr == "append" and len(a.args) == 1 and _within(a, init)  # type: ignore[attr-defined]
        and _built_on_host(fa, a.args[0], init, True) for a in appends)


def _built_on_host(fa, value: ast.AST, init: ast.AST, data: bool = False) -> bool:
    """`value` is computed on the host from a CPU factory (`host_factory`),
    or is a call of a function of the file every `return` of which is (a
    model file's `precompute_freqs_cis(dim, n)`, whose summary the project
    may not have read); with `data`, or is host data made a tensor
    (`_host_data`)."""
    def tensor_kind(e: ast.AST):
        return fa.values.is_tensor(e, fa.index.ancestors(e))

    if host_factory(fa, value, init, tensor_kind) is not None or (data and _host_data(fa, value)):
        return True
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    helper = next((d for d in fa.tree.body if isinstance(d, FUNCS) and d.name == value.func.id), None)
    if helper is None:
        return False
    returns = [n for n in ast.walk(helper) if isinstance(n, ast.Return)]
    return bool(returns) and all(r.value is not None and host_factory(fa, r.value, helper, tensor_kind) is not None
                                 for r in returns)


# what turns host data into a CPU tensor (and the casts that keep it there)
_DATA_CONSTRUCTORS = frozenset(("torch.tensor", "torch.as_tensor", "torch.from_numpy"))
_CASTS = frozenset(("float", "double", "half", "long", "int", "bool", "contiguous"))
_LAYOUTS = frozenset(("view", "reshape", "unsqueeze", "squeeze", "permute", "transpose", "flatten"))


def _host_data(fa, value: ast.AST) -> bool:
    """`torch.Tensor(A_scales)`, `torch.from_numpy(table).float()`,
    `torch.tensor(weights)` with no `device=`: host data made a CPU tensor
    once, in `__init__` (MS-G3D's adjacency powers); every later move
    copies it again, where a buffer would move once."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
            value.func.attr in _CASTS and not value.args or value.func.attr in _LAYOUTS):
        value = value.func.value
    if not isinstance(value, ast.Call) or any(k.arg == "device" for k in value.keywords):
        return False
    return fa.imports.call_qualname(value) in _DATA_CONSTRUCTORS or legacy_constructor(fa, value) is not None


def _bindings(cls: ast.ClassDef, name: str) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    """(statement, value) for each statement of the class's methods that
    binds `self.<name>`; the value is None where it is not one plain value
    (unpacked, updated in place, annotated only)."""
    out: List[Tuple[ast.AST, Optional[ast.AST]]] = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if _is_self_attr(t, name):
                    out.append((node, node.value if len(node.targets) == 1 else None))
                elif isinstance(t, (ast.Tuple, ast.List)) and any(_is_self_attr(e, name) for e in t.elts):
                    out.append((node, None))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _is_self_attr(node.target, name):
            out.append((node, node.value if isinstance(node, ast.AnnAssign) else None))
    return out


def _is_self_attr(t: ast.AST, name: str) -> bool:
    return is_self_attr(t) and t.attr == name  # type: ignore[attr-defined]


def _within(stmt: ast.AST, func: ast.AST) -> bool:
    return func.lineno <= stmt.lineno <= func.end_lineno  # type: ignore[attr-defined]


def kept_message(name: str, listed: bool) -> str:
    if listed:
        return (
            f"`self.{name}` is a list of tensors `__init__` builds on the CPU and keeps as a plain attribute, so "
            f"this copies them to the GPU on every call; register each as a buffer "
            f"(`self.register_buffer(f\"{name}_{{i}}\", ..., persistent=False)`), which `model.to(device)` moves once"
        )
    return (
        f"`self.{name}` is a tensor `__init__` builds on the CPU and keeps as a plain attribute, so this copies it "
        f"to the GPU on every call; register it as a buffer (`self.register_buffer(\"{name}\", ..., "
        "persistent=False)`), which `model.to(device)` moves once"
    )

