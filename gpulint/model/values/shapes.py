"""Operations whose output shape depends on a tensor's values.

PyTorch must know a result's size before it can allocate it. For the
operations below the size is a count of elements that only the data can
tell, so on a CUDA tensor the host waits for the GPU to compute it and copy
it back (a device-to-host sync) before the next kernel can be launched:

* `torch.nonzero(x)` / `x.nonzero()` (also `as_tuple=True`),
  `torch.argwhere(x)` / `x.argwhere()`, and `torch.where(cond)` with one
  argument (the same as `nonzero(as_tuple=True)`);
* `torch.masked_select(x, m)` / `x.masked_select(m)`;
* reading `x[mask]` (also `x[:, mask]`) with a boolean tensor `mask`
  (`is_bool_mask`); assigning through one, `x[mask] = 0`, does not size a
  result and is not counted;
* `torch.unique(x)` / `x.unique()`, `torch.unique_consecutive(x)` /
  `x.unique_consecutive()`;
* `torch.repeat_interleave(x, repeats)` / `x.repeat_interleave(repeats)`
  (and `torch.repeat_interleave(repeats)`) with a tensor `repeats` and no
  `output_size=`.

A **boolean mask** is an expression known to hold a bool tensor: a
comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) with a tensor operand, a
`.bool()` / `.to(torch.bool)`, `torch.isnan`/`isinf`/`isfinite`/`isin`/
`logical_*` and the named comparisons (`eq`, `ne`, `gt`, ...) as functions
or tensor methods, `~m`, `m1 & m2` / `m1 | m2` / `m1 ^ m2` of masks, a
slice or reshape of a mask, and a name every binding of which in the scope
(the function, or the module) is a mask.

Only the expression is read: whether the tensor is on a GPU is for the
caller to decide (`FileModel.is_host_tensor` tells tensors known to be in
host memory).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Sequence, Set, Tuple

from gpulint.model.values.devices import factory_name
from gpulint.model.values.host import device_tensor
from gpulint.model.values.kinds import TENSOR
from gpulint.model.index.walk import walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

# torch functions / tensor methods whose result is a bool tensor
_BOOL_FUNCS = frozenset(
    """isnan isinf isfinite isposinf isneginf isreal isin isclose
    logical_and logical_or logical_not logical_xor
    eq ne lt le gt ge greater greater_equal less less_equal not_equal
    signbit""".split()
)
# tensor methods that keep a mask a mask
_MASK_VIEWS = frozenset(
    """view reshape flatten unsqueeze squeeze expand expand_as t permute transpose
    contiguous clone detach flip roll repeat view_as reshape_as""".split()
)
# `x.any(dim)` / `x.all(dim)`: a mask (without a dim: one value, not a mask to index with)
_REDUCE_BOOL = frozenset(("any", "all"))

NONZERO = "nonzero"
MASKED_SELECT = "masked_select"
UNIQUE = "unique"
WHERE = "where"
MASK_INDEX = "mask_index"
REPEAT_INTERLEAVE = "repeat_interleave"

_NONZERO_NAMES = frozenset(("nonzero", "argwhere"))
_UNIQUE_NAMES = frozenset(("unique", "unique_consecutive"))
# the last name of every call `data_dependent_op` can match (a cheap first test)
CALL_NAMES = _NONZERO_NAMES | _UNIQUE_NAMES | {MASKED_SELECT, WHERE, REPEAT_INTERLEAVE}


def _is_bool_dtype(fa: "FileModel", expr: ast.AST) -> bool:
    return fa.imports.qualname(expr) == "torch.bool"


def is_bool_mask(fa: "FileModel", expr: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`expr` is known to hold a bool tensor (see the module docstring)."""
    scope = fa.index.enclosing_scope(ancestors)
    return _mask(fa, expr, ancestors, scope if scope is not None else fa.tree, set())


def _mask(fa: "FileModel", expr: ast.AST, ancestors, scope, seen: Set[str]) -> bool:
    if isinstance(expr, ast.Compare):
        if not all(isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in expr.ops):
            return False
        operands = [expr.left] + list(expr.comparators)
        if any(isinstance(o, ast.Constant) and not isinstance(o.value, (int, float)) for o in operands):
            return False  # `x == None`, `mode == "train"`: not a tensor comparison
        return any(_is_tensor(fa, o, ancestors, scope, seen) for o in operands)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return _mask(fa, expr.operand, ancestors, scope, seen)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _mask(fa, expr.left, ancestors, scope, seen) and _mask(fa, expr.right, ancestors, scope, seen)
    if isinstance(expr, ast.Subscript):
        return _mask(fa, expr.value, ancestors, scope, seen)
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return False
        bindings = fa.host.host_bindings(scope).get(expr.id)
        if not bindings:
            return False  # a parameter, a global, a name bound elsewhere: unknown
        inner = seen | {expr.id}
        return all(b is not None and isinstance(b, ast.AST) and _mask(fa, b, ancestors, scope, inner) for b in bindings)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    q = fa.imports.qualname(func) or ""
    if q.startswith("torch.") and q.count(".") == 1:
        name = q[6:]
        if name in _BOOL_FUNCS:
            return True
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            return any(kw.arg == "dtype" and _is_bool_dtype(fa, kw.value) for kw in expr.keywords)
        return False
    if not isinstance(func, ast.Attribute):
        return False
    method = func.attr
    recv = func.value
    if method == "bool" and not expr.args and not expr.keywords:
        return _is_tensor(fa, recv, ancestors, scope, seen)
    if method in ("to", "type") and (
        any(_is_bool_dtype(fa, a) for a in expr.args)
        or any(kw.arg == "dtype" and _is_bool_dtype(fa, kw.value) for kw in expr.keywords)
    ):
        return _is_tensor(fa, recv, ancestors, scope, seen)
    if method in _BOOL_FUNCS:
        return _is_tensor(fa, recv, ancestors, scope, seen)
    if method in _REDUCE_BOOL and (expr.args or any(kw.arg == "dim" for kw in expr.keywords)):
        return _is_tensor(fa, recv, ancestors, scope, seen)
    if method in _MASK_VIEWS:
        return _mask(fa, recv, ancestors, scope, seen)
    return False


def _is_tensor(fa: "FileModel", expr: ast.AST, ancestors, scope, seen: Set[str]) -> bool:
    if fa.values.kind_at(expr, ancestors) == TENSOR:
        return True
    return _mask(fa, expr, ancestors, scope, seen)


# index expressions that can be a mask
_MASK_SHAPED = (ast.Name, ast.Compare, ast.UnaryOp, ast.BinOp, ast.Call, ast.Subscript, ast.Attribute)


def _loop_target(name: str, ancestors: Sequence[ast.AST]) -> bool:
    """`name` is bound by a `for` loop or comprehension around the node (an
    index or an element, not a mask built in the loop body)."""
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.For, ast.AsyncFor)):
            if any(isinstance(n, ast.Name) and n.id == name for n in walk(anc.target)):
                return True
        elif isinstance(anc, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            if any(isinstance(n, ast.Name) and n.id == name for g in anc.generators for n in walk(g.target)):
                return True
        elif isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
    return False


def _keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def _value(call: ast.Call, name: str) -> Optional[ast.AST]:
    kw = _keyword(call, name)
    return kw.value if kw is not None else None


def _has_star(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)


def data_dependent_op(
    fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST]
) -> Optional[Tuple[str, ast.AST]]:
    """(which operation, the tensor whose values size the result) when `node`
    is one of the operations of the module docstring, else None. For a method
    the receiver must be known to be a tensor (`a.nonzero()` on a numpy array,
    `s.unique()` on a pandas Series are not); for `x[mask]`, the mask must be
    known to be a bool tensor."""
    if isinstance(node, ast.Subscript):
        if not isinstance(node.ctx, ast.Load):
            return None
        index = node.slice
        parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        for part in parts:
            if not isinstance(part, _MASK_SHAPED) or (isinstance(part, ast.Name) and _loop_target(part.id, ancestors)):
                continue  # `x[0]`, `x[1:]`, `x[i]` in `for i in ...`: no mask
            if is_bool_mask(fa, part, ancestors):
                if fa.values.kind_at(node.value, ancestors) not in (TENSOR, None):
                    return None  # a numpy array, a list, a number
                return MASK_INDEX, part
        return None
    if not isinstance(node, ast.Call) or _has_star(node):
        return None
    func = node.func
    q = fa.imports.qualname(func) or ""
    if q.startswith("torch.") and q.count(".") == 1:
        name = q[6:]
        args = node.args
        first = args[0] if args else _value(node, "input")
        if name in _NONZERO_NAMES and first is not None:
            return NONZERO, first
        if name == MASKED_SELECT:
            mask = args[1] if len(args) >= 2 else _value(node, "mask")
            return (MASKED_SELECT, mask) if mask is not None else None
        if name in _UNIQUE_NAMES and first is not None:
            return UNIQUE, first
        if name == WHERE and len(args) + len(node.keywords) == 1:
            return WHERE, args[0] if args else node.keywords[0].value
        if name == REPEAT_INTERLEAVE and _keyword(node, "output_size") is None:
            repeats = args[1] if len(args) >= 2 else (args[0] if len(args) == 1 and not node.keywords else None)
            kw = _keyword(node, "repeats")
            if kw is not None:
                repeats = kw.value
            if repeats is not None and fa.values.kind_at(repeats, ancestors) == TENSOR:
                return REPEAT_INTERLEAVE, repeats
        return None
    if not isinstance(func, ast.Attribute) or q.startswith(("numpy.", "pandas.")):
        return None
    method = func.attr
    recv = func.value
    if method in _NONZERO_NAMES or method in _UNIQUE_NAMES or method == MASKED_SELECT:
        mask = node.args[0] if node.args else _value(node, "mask")
        if method == MASKED_SELECT and mask is None:
            return None
        if fa.values.kind_at(recv, ancestors) != TENSOR and not is_bool_mask(fa, recv, ancestors):
            return None
        if method in _NONZERO_NAMES:
            return NONZERO, recv
        if method in _UNIQUE_NAMES:
            return UNIQUE, recv
        return MASKED_SELECT, mask
    if method == REPEAT_INTERLEAVE and _keyword(node, "output_size") is None:
        repeats = node.args[0] if node.args else None
        kw = _keyword(node, "repeats")
        if kw is not None:
            repeats = kw.value
        if repeats is None or fa.values.kind_at(repeats, ancestors) != TENSOR:
            return None
        if fa.values.kind_at(recv, ancestors) != TENSOR:
            return None
        return REPEAT_INTERLEAVE, repeats
    return None


def device_data_dependent_op(
    fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST]
) -> Optional[Tuple[str, ast.AST]]:
    """`data_dependent_op`, where the tensor whose values size the result is
    not known to be in host memory (`HostValues.is_host_tensor`): the host
    waits for the GPU to count it."""
    found = data_dependent_op(fa, node, ancestors)
    if found is None or fa.host.is_host_tensor(found[1], ancestors):
        return None
    return found


# factories that take sizes and bounds (not data: `torch.tensor(t)` copies `t` where it is)
_DATA_FACTORIES = frozenset(("tensor", "as_tensor", "scalar_tensor"))


def sized_by_tensor(n: ast.AST, analysis) -> bool:
    """`torch.arange(torch.max(lengths))`, `torch.zeros(n_pos)`: a factory
    handed a device tensor as a size or bound reads it on the host (its
    `__index__` / `.item()`) before it can allocate."""
    if not isinstance(n, ast.Call) or not n.args:
        return False
    name = factory_name(analysis, n)
    return name is not None and name not in _DATA_FACTORIES and any(
        not isinstance(a, (ast.Constant, ast.Starred, ast.Tuple, ast.List)) and device_tensor(a, analysis)
        for a in n.args)
