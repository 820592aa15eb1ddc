"""Where tensors are built and where they are moved: tensor factories and
device arguments.

* **Tensor factory**: `torch.<name>(...)` for a name in `TENSOR_FACTORIES`
  (resolved through imports; `*_like` and `Tensor.new_*` are not factories:
  they take the device of their input).
* **Device argument**: what the argument of `.to(...)` / a `device=` is, read
  from the expression alone: `"cpu"`, a dtype, a device (`"cuda:0"`, `0`,
  `torch.device("cuda")`, `x.device`, `device`, `args.gpu`, `local_rank`), or
  unknown (a tensor, anything else).

Everything is cached per file on the file's index.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from gpulint.model.names import last_name
from gpulint.model.values.kinds import MODEL, NUMBER, SIZE_METHODS, TENSOR, is_cpu_device, is_tensor_returning_torch
from gpulint.model.index.order import scope_nodes
from gpulint.model.index.walk import walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

# torch.<name>(...) that build a new tensor and take `device=`
TENSOR_FACTORIES = frozenset(
    """zeros ones empty empty_strided full arange range linspace logspace eye
    rand randn randint randperm tensor as_tensor scalar_tensor tril_indices triu_indices
    hann_window hamming_window blackman_window bartlett_window kaiser_window""".split()
)
# factories whose numbers come from a random generator: the CPU and the CUDA
# generators give different numbers for the same seed
RANDOM_FACTORIES = frozenset("rand randn randint randperm normal bernoulli multinomial poisson".split())
# factories whose values are computed by a kernel that may round differently
# on another device (window functions, float ranges)
_COMPUTED_FACTORIES = frozenset(
    "linspace logspace hann_window hamming_window blackman_window bartlett_window kaiser_window".split()
)
_RANGE_FACTORIES = frozenset(("arange", "range"))
_FLOAT_DTYPES = frozenset(
    "float float32 float64 double half float16 bfloat16 complex64 complex128 cfloat cdouble".split()
)
TORCH_DTYPES = _FLOAT_DTYPES | frozenset(
    "int int8 int16 int32 int64 long short uint8 uint16 uint32 uint64 bool qint8 quint8 qint32".split()
)

DEVICE_STRING_RE = re.compile(r"^(cuda|mps|xpu|hpu|npu|xla|mtia|privateuseone)(:\d+)?$")
CPU_STRING_RE = re.compile(r"^cpu(:\d+)?$")
DEVICE_NAME_RE = re.compile(
    r"^(device|dev|gpu|gpu_id|gpu_idx|gpu_index|cuda_device|device_id|device_index|local_rank|rank)$"
    r"|_device$|_dev$",
    re.I,
)

DTYPE_NAME_RE = re.compile(r"^(dtype|\w+_dtype|dtype_\w+)$")

CPU = "cpu"
DTYPE = "dtype"
DEVICE = "device"


# ------------------------------------------------------------------ factories
def factory_name(fa: "FileModel", call: ast.AST) -> Optional[str]:
    """`zeros` for `torch.zeros(...)` (any import form), else None."""
    if not isinstance(call, ast.Call) or last_name(call.func) not in TENSOR_FACTORIES:
        return None
    q = fa.imports.qualname(call.func) or ""
    if q.startswith("torch.") and q.count(".") == 1:
        name = q[6:]
        if name in TENSOR_FACTORIES:
            return name
    return None


def factory_device_arg(name: str, call: ast.Call) -> Optional[ast.AST]:
    """The expression given as the factory's device (keyword, or the third
    positional argument of `as_tensor`), or None."""
    for kw in call.keywords:
        if kw.arg == "device":
            return kw.value
    if name == "as_tensor" and len(call.args) >= 3:
        return call.args[2]
    return None


# in-place fills that draw random numbers: `torch.empty(n).bernoulli_(p)`
RANDOM_FILLS = frozenset((
    "bernoulli_", "uniform_", "normal_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_",
))


def has_generator(call: ast.Call) -> bool:
    """`generator=g`: the numbers come from that generator, which must be on
    the device the tensor is built on. Code that builds on the CPU with one
    works only because the generator is a CPU one (`torch.Generator()`), so
    the tensor has to be built on the CPU and copied: passing `device=`
    would raise."""
    return any(
        kw.arg == "generator" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None)
        for kw in call.keywords
    )


def values_depend_on_device(fa: "FileModel", name: str, call: ast.Call) -> Optional[str]:
    """Why the factory's numbers could differ when it runs on another device,
    or None when they are the same everywhere."""
    if name in RANDOM_FACTORIES:
        return "the CPU and CUDA random generators give different numbers"
    parent = fa.index.parents.get(call)
    if (
        isinstance(parent, ast.Attribute)
        and parent.attr in RANDOM_FILLS
        and isinstance(fa.index.parents.get(parent), ast.Call)
    ):
        return "it is filled with random numbers, which the CPU and CUDA generators draw differently"
    if name in _COMPUTED_FACTORIES:
        return "the CUDA kernel may round differently in the last bit"
    if name in _RANGE_FACTORIES:
        dtype = next((kw.value for kw in call.keywords if kw.arg == "dtype"), None)
        if dtype is not None:
            q = fa.imports.qualname(dtype) or ""
            if q.startswith("torch.") and q[6:] in TORCH_DTYPES and q[6:] not in _FLOAT_DTYPES:
                return None  # an integer range is exact anywhere
            if q.startswith("torch.") and q[6:] in _FLOAT_DTYPES:
                return "a floating-point range may round differently in the last bit on the GPU"
        for arg in list(call.args) + [kw.value for kw in call.keywords if kw.arg in ("start", "end", "step")]:
            for n in walk(arg):
                if isinstance(n, ast.Constant) and isinstance(n.value, float):
                    return "a floating-point range may round differently in the last bit on the GPU"
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                    return "a floating-point range may round differently in the last bit on the GPU"
    return None


# --------------------------------------------------- legacy typed constructors
# `torch.FloatTensor(...)` and friends build on the CPU (`torch.cuda.FloatTensor`
# builds on the GPU); the dtype each one gives, None for `torch.Tensor` (the
# default dtype)
LEGACY_CONSTRUCTORS: Dict[str, Optional[str]] = {
    "Tensor": None,
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8",
    "CharTensor": "int8",
    "ShortTensor": "int16",
    "IntTensor": "int32",
    "LongTensor": "int64",
    "BoolTensor": "bool",
}
# calls and methods that give an int (or a torch.Size)
_SIZE_FUNCS = frozenset(("builtins.len", "builtins.int", "builtins.round", "math.ceil", "math.floor", "math.prod"))


def legacy_constructor(fa: "FileModel", call: ast.AST) -> Optional[str]:
    """`FloatTensor` for `torch.FloatTensor(...)` (any import form), else None.
    `torch.cuda.FloatTensor(...)` is not one: it builds on the GPU."""
    if not isinstance(call, ast.Call) or last_name(call.func) not in LEGACY_CONSTRUCTORS:
        return None
    q = fa.imports.qualname(call.func) or ""
    if q.startswith("torch.") and q.count(".") == 1 and q[6:] in LEGACY_CONSTRUCTORS:
        return q[6:]
    return None


def range_tensor(fa: "FileModel", call: ast.AST) -> bool:
    """`torch.LongTensor(range(n))`, `torch.tensor(range(a, b))`,
    `torch.tensor(list(range(n)))`: an `arange` in disguise, whose numbers
    come from a Python `range` on the host, one element at a time. Unlike
    host data, the GPU can make the same numbers itself with `torch.arange(...,
    device=...)`, so a copy of it is waste."""
    if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "list" and len(arg.args) == 1:
        arg = arg.args[0]
    if not (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "range"
            and not arg.keywords and 1 <= len(arg.args) <= 3):
        return False
    return (fa.imports.qualname(call.func) or "") in ("torch.tensor", "torch.as_tensor") \
        or legacy_constructor(fa, call) is not None


def legacy_size_args(fa: "FileModel", call: ast.Call, ancestors: Sequence[ast.AST]) -> bool:
    """The legacy constructor's arguments are surely sizes, and not zero: an
    uninitialised tensor. Several arguments (`torch.FloatTensor(b, n)`) can
    only be sizes; one must be a size by its form (`3`, `len(xs)`,
    `x.size(0)`, `x.shape[1] * 2`, `x.size()`, a tensor's `x.shape`, `*shape`) or a name that the
    function binds only to such values (`n = x.size(0)`) or to a number.
    False for data (`torch.FloatTensor([1, 2])`, an array, a storage), for a
    value that could be either (`torch.Tensor(n)` with `n` a parameter), and
    for an empty tensor (no arguments, a literal 0)."""
    if not call.args or call.keywords:
        return False
    if any(isinstance(a, ast.Constant) and a.value == 0 for a in call.args):
        return False  # an empty tensor: nothing is copied
    if len(call.args) > 1:
        # only the `(*sizes)` form takes several arguments (`(data)` takes one)
        return not any(
            isinstance(a, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.GeneratorExp, ast.JoinedStr))
            or (isinstance(a, ast.Constant) and not isinstance(a.value, int))
            for a in call.args
        )
    scope = fa.index.enclosing_scope(ancestors)
    arg = call.args[0]
    return isinstance(arg, ast.Starred) or _is_size(fa, arg, ancestors, scope, set())


def _is_size(fa: "FileModel", expr: ast.AST, ancestors: Sequence[ast.AST], scope, seen: Set[str]) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Attribute):
        if expr.attr == "shape":
            # a tensor's torch.Size is sizes; a numpy shape is a tuple, which is data
            return fa.values.kind_at(expr.value, ancestors) == TENSOR
        return expr.attr == "ndim"
    if isinstance(expr, ast.Subscript):
        inner = expr.value
        return (isinstance(inner, ast.Attribute) and inner.attr == "shape") or (
            isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "size"
        )
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in SIZE_METHODS:
            return True
        q = fa.imports.qualname(func) or ""
        return q in _SIZE_FUNCS or q == "torch.Size"
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _is_size(fa, expr.left, ancestors, scope, seen) and _is_size(fa, expr.right, ancestors, scope, seen)
    if isinstance(expr, ast.Name):
        if fa.values.kind_at(expr, ancestors) == NUMBER:
            return True
        # `batch_size = x.size(0)`: every binding of the name in the function is a size
        if expr.id in seen or len(seen) > 8:
            return False
        bindings = fa.host.host_bindings(scope if scope is not None else fa.tree).get(expr.id)
        return bool(bindings) and all(
            isinstance(b, ast.AST) and _is_size(fa, b, ancestors, scope, seen | {expr.id}) for b in bindings
        )
    return False


# ------------------------------------------------------------------ devices
def device_arg_kind(fa: "FileModel", expr: Optional[ast.AST]) -> Optional[str]:
    """CPU, DTYPE or DEVICE (an accelerator, or a device variable) for an
    argument of `.to()` / `device=`; None when it cannot be told (a tensor,
    an unknown value)."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant):
        v = expr.value
        if isinstance(v, str):
            if CPU_STRING_RE.match(v):
                return CPU
            if DEVICE_STRING_RE.match(v):
                return DEVICE
            return None
        if isinstance(v, int) and not isinstance(v, bool):
            return DEVICE  # a CUDA device index
        return None
    if isinstance(expr, ast.JoinedStr):
        first = expr.values[0] if expr.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if first.value.startswith("cpu"):
                return CPU
            if re.match(r"^(cuda|mps|xpu|hpu|npu)(:|$)", first.value):
                return DEVICE
        return None
    if isinstance(expr, ast.Call):
        q = fa.imports.qualname(expr.func) or ""
        if q == "torch.device":
            a = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "type"), None)
            return device_arg_kind(fa, a) if isinstance(a, ast.Constant) and isinstance(a.value, str) else DEVICE
        if q in ("torch.cuda.current_device",):
            return DEVICE
        return None
    q = fa.imports.qualname(expr) or ""
    if q.startswith("torch.") and q[6:] in TORCH_DTYPES:
        return DTYPE
    name = last_name(expr)
    if name is None:
        return None
    if name == "dtype" or DTYPE_NAME_RE.match(name):
        return DTYPE
    if isinstance(expr, ast.Attribute) and name == "device":
        return DEVICE  # x.device, self.device, accelerator.device, args.device
    if DEVICE_NAME_RE.match(name) or (name == "cuda" and isinstance(expr, ast.Name)):
        return DEVICE  # (`.to(cuda)`, DPC's `cuda = torch.device('cuda')`: `.to()` takes no flag)
    return None


def move_target(fa: "FileModel", call: ast.AST) -> Optional[Tuple[ast.AST, Optional[ast.AST]]]:
    """For `x.cuda(...)` / `x.to(<device>, ...)` moving to an accelerator:
    (x, the device expression, None for `.cuda()`); else None."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    attr = call.func.attr
    if attr == "cuda":
        dev = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
        return call.func.value, dev
    if attr == "to":
        dev = next((k.value for k in call.keywords if k.arg == "device"), None)
        if dev is None and call.args:
            dev = call.args[0]
        if dev is not None and not isinstance(dev, ast.Starred) and device_arg_kind(fa, dev) == DEVICE:
            return call.func.value, dev
    return None


def moved_return_positions(fa: "FileModel", func: ast.AST, returns: Sequence[ast.Return]) -> List[int]:
    """The positions of what every `return` of `func` gives that are put on
    an accelerator there: -1 for the whole value, i for element i of a
    returned tuple (`return model.to(device), tokenizer` gives [0]). A
    position counts where each return has there a move (`x.to(device)`,
    `x.cuda()`) or a name `func` moves (`model.to(device)` as a statement,
    `model = Net().to(device)`)."""
    if not returns or any(r.value is None for r in returns):
        return []
    shapes = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else -1 for r in returns}  # type: ignore[union-attr]
    if len(shapes) != 1:
        return []
    width = shapes.pop()
    moved = _moved_names(fa).get(func, frozenset())
    def is_moved(e: ast.AST) -> bool:
        return (isinstance(e, ast.Name) and e.id in moved) or move_target(fa, e) is not None
    if width == -1:
        return [-1] if all(is_moved(r.value) for r in returns) else []  # type: ignore[arg-type]
    return [i for i in range(width) if all(is_moved(r.value.elts[i]) for r in returns)]  # type: ignore[union-attr]


def hands_back_moved(fa: "FileModel", returns: Sequence[ast.Return]) -> bool:
    """Every `return` gives each element of what it is handed, moved to an
    accelerator: `return [None if x is None else x.cuda() for x in args]`
    (XLM's `to_cuda`), `return tuple(t.to(device) for t in ts)`."""
    def each_moved(e: Optional[ast.AST]) -> bool:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("list", "tuple") and len(
                e.args) == 1 and not e.keywords:
            e = e.args[0]
        if not isinstance(e, (ast.ListComp, ast.GeneratorExp)):
            return False
        elt = e.elt
        branches = [b for b in (elt.body, elt.orelse) if not (isinstance(b, ast.Constant) and b.value is None)] \
            if isinstance(elt, ast.IfExp) else [elt]
        return len(branches) == 1 and move_target(fa, branches[0]) is not None
    return bool(returns) and all(each_moved(r.value) for r in returns)


def _moved_names(fa: "FileModel") -> Dict[ast.AST, FrozenSet[str]]:
    """def -> the plain names it moves to an accelerator (`model.to(device)`
    as a statement, `model = Net().to(device)`), once per file from the
    calls of `.to` and `.cuda`."""
    def compute() -> Dict[ast.AST, FrozenSet[str]]:
        out: Dict[ast.AST, set] = {}
        for call in fa.index.nodes(ast.Call):
            if not (isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda")):  # type: ignore[attr-defined]
                continue
            moved = move_target(fa, call)
            if moved is None:
                continue
            parent = fa.index.parents.get(call)
            if isinstance(parent, ast.Expr) and isinstance(moved[0], ast.Name):
                names = [moved[0].id]  # `model.to(device)`: a module moves in place
            elif isinstance(parent, ast.Assign):
                names = [t.id for t in parent.targets if isinstance(t, ast.Name)]
            else:
                continue
            owner = fa.index.owner(call)
            if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(owner, set()).update(names)
        return {k: frozenset(v) for k, v in out.items()}
    return fa.index.memoized("devices.moved_names", None, compute)  # type: ignore[return-value]


def type_move_target(fa: "FileModel", call: ast.AST) -> Optional[ast.AST]:
    """For `x.type(torch.cuda.FloatTensor)`, or `x.type(Tensor)` with the
    module's `Tensor = torch.cuda.FloatTensor if cuda else
    torch.FloatTensor` (the idiom of older training scripts): x, a value
    moved to the GPU (where there is one); else None."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "type"):
        return None
    if len(call.args) != 1 or not is_cuda_tensor_type(fa, call.args[0]):
        return None
    return call.func.value


def is_cpu_tensor_type(fa: "FileModel", expr: ast.AST) -> bool:
    """`torch.FloatTensor` (a legacy CPU tensor type with a dtype, not
    `torch.Tensor`) or its name as a string: `x.type(torch.FloatTensor)`
    copies a CUDA `x` to the host."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        name = expr.value[len("torch."):] if expr.value.startswith("torch.") else ""
    else:
        q = fa.imports.qualname(expr) or ""
        name = q[len("torch."):] if q.startswith("torch.") and q.count(".") == 1 else ""
    return name != "Tensor" and name in LEGACY_CONSTRUCTORS


def is_cuda_tensor_type(fa: "FileModel", expr: ast.AST, follow: bool = True) -> bool:
    """`torch.cuda.FloatTensor` (a legacy CUDA tensor type), its name as a
    string, `torch.cuda.FloatTensor if cuda else torch.FloatTensor`, or a
    name the module binds once to one of these."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value.startswith("torch.cuda.") and expr.value[len("torch.cuda."):] in LEGACY_CONSTRUCTORS
    if isinstance(expr, ast.Attribute) and expr.attr not in LEGACY_CONSTRUCTORS:
        return False  # (its qualified name ends in its attribute: no look-up needed)
    q = fa.imports.qualname(expr) or ""
    if q.startswith("torch.cuda.") and q[len("torch.cuda."):] in LEGACY_CONSTRUCTORS:
        return True
    if isinstance(expr, ast.IfExp):
        return is_cuda_tensor_type(fa, expr.body, False) or is_cuda_tensor_type(fa, expr.orelse, False)
    if follow and isinstance(expr, ast.Name) and fa.index.memoized(
            "devices.names_cuda_types", None, lambda: _CUDA_TYPE_TEXT_RE.search(fa.index.text) is not None):
        owner = fa.index.owner(expr)
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = fa.index.memoized("devices.local_cuda_tensor_types", owner, lambda: _bound_once(fa, owner))
            if expr.id in local:  # `dtype = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor` in the def
                return local[expr.id]
        types = fa.index.memo("devices.cuda_tensor_types")
        if "names" not in types:
            bound: Dict[str, List[ast.AST]] = {}
            for stmt in fa.tree.body:
                if isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            bound.setdefault(t.id, []).append(stmt.value)
            types["names"] = {n: len(v) == 1 and is_cuda_tensor_type(fa, v[0], False) for n, v in bound.items()}
        return bool(types["names"].get(expr.id))  # type: ignore[union-attr]
    return False


# a legacy CUDA tensor type in a file's text (`torch.cuda.FloatTensor`, or its name as a
# string): without one, no name of the file is bound to such a type
_CUDA_TYPE_TEXT_RE = re.compile(r"cuda\.[A-Z]\w*Tensor")


def _bound_once(fa: "FileModel", func: ast.AST) -> Dict[str, bool]:
    """{name: bound to a CUDA tensor type} for the plain names that `func`'s
    own code binds (a name bound more than once, or otherwise than by a
    plain assignment, is no such type)."""
    count: Dict[str, int] = {}
    value: Dict[str, ast.AST] = {}
    parents = fa.index.parents
    for node in scope_nodes(func):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            count[node.id] = count.get(node.id, 0) + 1
            stmt = parents.get(node)
            if isinstance(stmt, ast.Assign) and stmt.targets == [node]:
                value[node.id] = stmt.value
    return {n: c == 1 and n in value and is_cuda_tensor_type(fa, value[n], False) for n, c in count.items()}


# helpers whose name says they move a (nested) batch to a device:
# `batch_to_device(batch, device)`, `move_to_device(batch, device)`,
# accelerate's `send_to_device(batch, device)`, `to_device(batch, device)`
MOVE_HELPER_RE = re.compile(r"^(batch_to_device|(move|send)_(batch_)?to_device|to_device)$")


def helper_move_target(fa: "FileModel", call: ast.AST) -> Optional[Tuple[ast.AST, ast.AST]]:
    """For `batch_to_device(batch, device)` (a function named for moving a
    batch to a device, see `MOVE_HELPER_RE`) whose device argument (second
    positional, or `device=`) is a device expression: (batch, the device
    expression); else None. `x.to_device(dev)`, with the value as the
    receiver, is not such a call."""
    if not isinstance(call, ast.Call) or not call.args or isinstance(call.args[0], ast.Starred):
        return None
    name = last_name(call.func)
    if name is None or not MOVE_HELPER_RE.match(name):
        return None
    dev = next((k.value for k in call.keywords if k.arg == "device"), None)
    if dev is None and len(call.args) >= 2:
        dev = call.args[1]
    if dev is None or isinstance(dev, ast.Starred) or device_arg_kind(fa, dev) != DEVICE:
        return None
    return call.args[0], dev


def keyword_value(call: ast.Call, name: str, position: Optional[int] = None) -> Tuple[bool, Optional[ast.AST]]:
    """(present, value) of an argument given by keyword or at `position`."""
    for kw in call.keywords:
        if kw.arg == name:
            return True, kw.value
    if position is not None and len(call.args) > position:
        return True, call.args[position]
    return False, None


def has_star_args(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)


# ------------------------------------------------------------- parameters
# attributes and methods that only a tensor (or an array) has
_TENSOR_EVIDENCE = frozenset(
    """shape size device dtype dim ndim view reshape transpose permute unsqueeze squeeze flatten
    contiguous float half bfloat16 long bool masked_fill masked_fill_ matmul mean sum softmax
    new_zeros new_ones new_full new_empty new_tensor type_as expand expand_as repeat chunk narrow
    numel norm clamp exp log sigmoid tanh argmax unbind flip roll is_cuda""".split()
)
_CONTAINER_METHODS = frozenset("items keys values get pop update append extend".split())


def param_used_as_tensor(fa: "FileModel", fn: ast.FunctionDef, name: str) -> bool:
    """Evidence in the body that the parameter is a tensor (tensor attributes,
    arithmetic, `x[:, None]`, the input of a torch function or of an `nn` layer
    of the module), and none that it is a container."""
    cls = fa.index.enclosing_class(fa.index.ancestors(fn))
    layers = {attr for attr, kind in fa.values.class_kinds(cls).items() if kind == MODEL} if cls is not None else set()
    evidence = False
    for n in walk(fn):
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == name:
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                if f.attr in layers:
                    evidence = True
            else:
                q = fa.imports.qualname(f) or ""
                if q.startswith("torch.") and is_tensor_returning_torch(q):
                    evidence = True
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name:
            if n.attr in _CONTAINER_METHODS:
                return False
            if n.attr in _TENSOR_EVIDENCE:
                evidence = True
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
            sl = n.slice
            if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
                return False
            if isinstance(sl, ast.Tuple) and any(
                isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value in (None, Ellipsis))
                for e in sl.elts
            ):
                evidence = True  # x[:, None], x[..., 0]: only arrays index like this
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            if any(isinstance(side, ast.Name) and side.id == name for side in (n.left, n.right)):
                evidence = True
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance":
            if n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == name:
                return False
    return evidence


# calls that change the device a factory without `device=` builds on
_DEFAULT_DEVICE_CALLS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})


def default_device_set(fa: "FileModel", ancestors: Sequence[ast.AST]) -> bool:
    """A factory without `device=` here builds on an accelerator: the file
    sets a default device that is not the CPU (`torch.set_default_device(device)`,
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`), or a file of its
    program does (NeuS's `exp_runner.py` for the renderer it imports:
    `CallFacts.default_device`), or a `with torch.device("cuda"):` block is
    around it."""
    for anc in ancestors:
        if isinstance(anc, (ast.With, ast.AsyncWith)) and any(_device_context(fa, i.context_expr) for i in anc.items):
            return True
    return fa.facts.default_device() or sets_default_device(fa)


def sets_default_device(fa: "FileModel") -> bool:
    """The file sets a default device that is not the CPU."""
    if not (fa.index.mentions("set_default_device") or fa.index.mentions("set_default_tensor_type")):
        return False
    return fa.index.memoized("devices.default_device_set", None, lambda: _sets_default_device(fa))


def sets_program_default_device(fa: "FileModel") -> bool:
    """The file's module code (its `__main__` block too) sets a default
    device that is not the CPU, to a literal (`torch.set_default_tensor_type(
    "torch.cuda.FloatTensor")`), and nothing in the file sets it back: the
    default its whole program runs with (NeuS's `exp_runner.py`). Not a
    switch while a model is built (LLaMA's `torch.set_default_tensor_type(
    torch.cuda.HalfTensor)`, then back to `torch.FloatTensor`), nor one a
    method makes with a value it is given."""
    if not sets_default_device(fa):
        return False
    found = False
    for call in fa.index.nodes_of(ast.Call):
        q = fa.imports.call_qualname(call)
        if q not in _DEFAULT_DEVICE_CALLS or not call.args:
            continue
        arg = call.args[0]
        to_device = not is_cpu_device(arg) if q == "torch.set_default_device" else "cuda" in ast.unparse(arg)
        if not to_device:
            return False  # set back to the CPU somewhere
        literal = isinstance(arg, (ast.Constant, ast.Attribute)) or (
            isinstance(arg, ast.Call) and all(isinstance(a, ast.Constant) for a in arg.args))
        if literal and fa.index.enclosing_scope(fa.index.ancestors(call)) is None \
                and fa.index.enclosing_class(fa.index.ancestors(call)) is None:
            found = True
    return found


def _sets_default_device(fa: "FileModel") -> bool:
    for call in fa.index.nodes_of(ast.Call):
        q = fa.imports.call_qualname(call)
        if q not in _DEFAULT_DEVICE_CALLS or not call.args:
            continue
        arg = call.args[0]
        if q == "torch.set_default_device":
            if not is_cpu_device(arg) and not (isinstance(arg, ast.Constant) and arg.value is None):
                return True
        elif "cuda" in ast.unparse(arg):
            return True
    return False


def _device_context(fa: "FileModel", expr: ast.AST) -> bool:
    """`torch.device("cuda")` (or any device but the CPU) used as a context manager."""
    return (
        isinstance(expr, ast.Call) and fa.imports.call_qualname(expr) == "torch.device"
        and bool(expr.args) and not is_cpu_device(expr)
    )


def zero_dim_size(args) -> bool:
    """`torch.zeros(())`, `torch.ones([])`, `torch.full((), v)`: a 0-dim tensor."""
    return bool(args) and isinstance(args[0], (ast.Tuple, ast.List)) and not args[0].elts


# factories whose positional arguments are the sizes (not `arange(0, 1, 0.1)`'s range)
SHAPED_FACTORIES = frozenset(("zeros", "ones", "empty", "full", "rand", "randn"))


def empty_placeholder(name: str, call: ast.Call) -> bool:
    """`torch.empty(0)`, `torch.empty([0])`, `torch.zeros(0, d)`, `torch.full([0], v)`:
    a factory (`name`, `factory_name`'s) whose size has a literal 0 dimension, a
    placeholder with nothing to copy."""
    if name not in SHAPED_FACTORIES:
        return False
    args = call.args[:1] if name == "full" else call.args
    dims = args[0].elts if args and isinstance(args[0], (ast.Tuple, ast.List)) else args
    return any(isinstance(d, ast.Constant) and d.value == 0 and type(d.value) is int for d in dims)
