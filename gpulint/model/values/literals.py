"""Tensors whose values the code writes out, or has numpy make, on the host
only for them to be copied to the GPU (the values layer's question, asked
by `host_built` of what a move copies):

    iden = torch.from_numpy(np.eye(k).flatten().astype(np.float32))   # numpy made it
    kernel = torch.tensor([[1., 4., 6., 4., 1.], [4., 16., 24., 16., 4.], ...])   # a table of literals

Unlike host data (a batch, labels read from a file, sizes computed on the
host), which has to cross anyway, these are constants or fresh numbers the
GPU can make itself: a table of literals kept on the device (a buffer, or
built once outside the loop), `torch.eye(..., device=...)` for numpy's
`eye`, `torch.rand(..., device=...)` for its random draws. A literal of
one repeated number is the rule's constant fill, not a table.

The other way round, a list written out of device tensors
(`torch.tensor([loss_a, loss_b])`) is read on the host element by element
(`tensor_of_device_tensors`, a host read for `control.syncs`).
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.values.host import device_tensor

# numpy calls that make fresh data on the host, and what draws or builds the same on the GPU
NUMPY_DRAWS = {
    "numpy.random.normal": "torch.normal", "numpy.random.randn": "torch.randn",
    "numpy.random.standard_normal": "torch.randn", "numpy.random.rand": "torch.rand",
    "numpy.random.random": "torch.rand", "numpy.random.uniform": "torch.rand",
    "numpy.random.randint": "torch.randint", "numpy.random.permutation": "torch.randperm",
    "numpy.random.binomial": "torch.bernoulli",
    "numpy.ones": "torch.ones", "numpy.zeros": "torch.zeros", "numpy.full": "torch.full",
    "numpy.arange": "torch.arange", "numpy.linspace": "torch.linspace", "numpy.eye": "torch.eye",
}
# numpy functions that repeat an array, and how torch repeats one on the device
# (`np.repeat(range(n_way), n_query)`: few-shot labels, made only to be copied)
NUMPY_REPEATS = {"numpy.repeat": "torch.arange(..., device=...).repeat_interleave(...)",
                 "numpy.tile": "torch.arange(..., device=...).repeat(...)"}
# torch calls that take host data and make a CPU tensor of it
TENSOR_OF_DATA = frozenset(("torch.from_numpy", "torch.tensor", "torch.as_tensor"))
# numpy array methods that keep the data, cast or laid out anew (their arguments are dtypes and sizes)
_NUMPY_LAYOUT = frozenset("astype flatten ravel reshape copy squeeze transpose".split())
# numpy functions that make an array of the literal they are given
_NUMPY_ARRAY = frozenset(("numpy.array", "numpy.asarray", "numpy.float32", "numpy.float64"))
_MIN_TABLE = 2  # numbers in a table, at least


def numpy_draw(fa, expr: ast.AST) -> Optional[str]:
    """The numpy function of `np.random.normal(...)`, `np.ones(...)`, ...: data
    made on the host only to be copied (see `NUMPY_DRAWS`); else None."""
    if not isinstance(expr, ast.Call):
        return None
    q = fa.imports.qualname(expr.func)
    return q if q in NUMPY_DRAWS else None


def literal_table(node: ast.AST) -> bool:
    """`[[1., 4.], [4., 16.]]`, `(1, 0, 0, 1)`: a list or tuple, nested or
    not, of two or more number literals, not all one number (that is a
    fill)."""
    numbers: list = []
    if not _numbers(node, numbers, 0) or len(numbers) < _MIN_TABLE:
        return False
    return len(set(numbers)) > 1 or isinstance(node, (ast.List, ast.Tuple)) and any(
        isinstance(e, (ast.List, ast.Tuple)) for e in node.elts)


def _numbers(node: ast.AST, out: list, depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        out.append(node.value)
        return True
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return all(_numbers(e, out, depth + 1) for e in node.elts)
    return False


def constant_table(fa, call: ast.AST) -> bool:
    """`torch.tensor([[1., 4.], [4., 16.]])`: a CPU tensor of a table of
    literals (`literal_table`), with no other argument than a dtype or
    `requires_grad`. Not a legacy typed constructor's
    (`torch.FloatTensor([0.485, 0.456, 0.406])`): those given data stay
    unflagged, by the measurement in GPU203's doc."""
    if not isinstance(call, ast.Call) or len(call.args) != 1 or not literal_table(call.args[0]):
        return False
    if any(k.arg not in ("dtype", "requires_grad") for k in call.keywords):
        return False
    return (fa.imports.qualname(call.func) or "") in ("torch.tensor", "torch.as_tensor")


def numpy_source(fa, call: ast.AST, value_of) -> Optional[ast.Call]:
    """For `torch.from_numpy(a)` (or `torch.tensor(a)`, `torch.as_tensor(a)`;
    not a legacy constructor's, as in `constant_table`) of an array numpy made
    only to be copied: the numpy call that made it, a draw or a constant
    (`NUMPY_DRAWS`: `np.eye(k)`, `np.random.binomial(...)`) or an array of a
    table of literals (`np.array([1, 0, 0, 0, 1, 0, 0, 0, 1])`), through
    casts and layouts (`.astype(np.float32)`, `.flatten()`, `.reshape(...)`)
    and names (`value_of(name)`: the value a name was assigned, or None);
    else None."""
    if not (isinstance(call, ast.Call) and len(call.args) == 1):
        return None
    q = fa.imports.qualname(call.func) or ""
    if q not in TENSOR_OF_DATA:
        return None
    return _array_source(fa, call.args[0], value_of, 0)


def _array_source(fa, arr: ast.AST, value_of, depth: int) -> Optional[ast.Call]:
    """`numpy_source`'s walk from the array handed to torch: also through
    arithmetic of such arrays and numbers (TS-TCC's `diag + l1 + l2` of
    three `np.eye(...)`), the first source found."""
    for _ in range(8):
        if isinstance(arr, ast.BinOp) and depth < 4:
            found = None
            for side in (arr.left, arr.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, (int, float)):
                    continue
                src = _array_source(fa, side, value_of, depth + 1)
                if src is None:
                    return None
                found = found or src
            return found
        if isinstance(arr, ast.Name):
            arr = value_of(arr)
            if arr is None:
                return None
            continue
        if not isinstance(arr, ast.Call):
            return None
        if numpy_draw(fa, arr) is not None:
            return arr
        f = arr.func
        if isinstance(f, ast.Attribute) and f.attr in _NUMPY_LAYOUT:
            arr = f.value
            continue
        made = fa.imports.qualname(f) or ""
        if made in _NUMPY_ARRAY and len(arr.args) == 1:
            return arr if literal_table(arr.args[0]) else None
        if made in NUMPY_REPEATS and arr.args and _a_range(fa, arr.args[0]):
            return arr  # `np.repeat(range(n_way), n_query)`: a range repeated, no data
        return None
    return None


def _a_range(fa, expr: ast.AST) -> bool:
    """`range(n)` or `np.arange(n)`: numbers counted on the host, no data."""
    if not isinstance(expr, ast.Call):
        return False
    q = fa.imports.qualname(expr.func)
    return q in ("builtins.range", "numpy.arange") or (q is None and isinstance(expr.func, ast.Name) and expr.func.id == "range")


# calls that build a new tensor from a Python list of numbers (`torch.tensor([a, b])`)
_FROM_LIST = frozenset(("torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
                        "torch.DoubleTensor", "torch.IntTensor"))


def tensor_of_device_tensors(n: ast.AST, fa) -> bool:
    """`torch.tensor([loss_giou, loss_conf, loss])` (or `torch.Tensor([...])`)
    of a list or tuple holding a tensor not known to be in host memory: torch
    reads each such element on the host (`.item()` of each), one wait per
    element; `torch.stack` keeps them on the device."""
    if not (isinstance(n, ast.Call) and len(n.args) == 1 and isinstance(n.args[0], (ast.List, ast.Tuple))):
        return False
    if fa.imports.qualname(n.func) not in _FROM_LIST:
        return False
    return any(not isinstance(e, (ast.Constant, ast.Starred)) and device_tensor(e, fa) for e in n.args[0].elts)
