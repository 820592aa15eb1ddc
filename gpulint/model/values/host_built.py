"""A tensor computed on the host from a CPU factory: with casts,
arithmetic or elementwise functions between the factory and where it goes,
and through names assigned once in the def (the values layer's question,
asked by GPU203 of a move and by the project's summaries of a return):

    freqs = torch.exp(-math.log(10000) * torch.arange(half) / half)

    pe = torch.zeros(d, h, w)
    pe[0::2] = torch.sin(pos * div)      # written into in place, from the host too

`host_factory` finds the factory such an expression is computed from. An
operation that mixes a CPU tensor of more than one element with a CUDA
tensor raises, so an expression that computes with a CPU factory's tensor
runs on the CPU. The expression must hold no other tensor data: `(t *
torch.arange(n))` with `t` data from the host crosses either way (as
`torch.tensor(data)` does), so only numbers, names of unknown kind that
are not tensors, and other CPU factories may join it. A call of a project
function that returns such a tensor (`CallFacts.returns` is `HOST_BUILT`)
counts as a factory.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.index.order import target_names
from gpulint.model.names import last_name
from gpulint.model.values.devices import (
    CPU,
    DTYPE,
    device_arg_kind,
    is_cpu_tensor_type,
    factory_device_arg,
    factory_name,
    has_generator,
    range_tensor,
)
from gpulint.model.values.kinds import SIZE_METHODS, TENSOR_JOINS
from gpulint.model.values.literals import constant_table, numpy_source
from gpulint.model.index.walk import walk

# torch functions that draw samples from their first argument, where it is (the rest are numbers
# and options): `torch.multinomial(torch.ones(n), k)` samples on the CPU
TORCH_SAMPLING = frozenset(("multinomial", "bernoulli", "poisson"))
# torch functions that compute elementwise (or reshape) on their tensor arguments, where they are
# what lays one tensor's data (or a few tensors' data, `meshgrid`) out into parts that a
# tuple unpacks: each part holds the call's data and no other (`_splits`)
_SPLITTING = frozenset(("meshgrid", "chunk", "split", "unbind", "tensor_split"))
TORCH_ELEMENTWISE = frozenset(
    """exp exp2 expm1 log log2 log10 log1p sin cos tan sinh cosh tanh sigmoid sqrt rsqrt pow abs neg floor ceil
    round clamp clip minimum maximum outer ger cat stack flip repeat_interleave cumsum cumprod
    unsqueeze reshape triu tril""".split()
) | _SPLITTING
# tensor methods that do the same on their receiver (casts, reshapes, elementwise math)
TENSOR_ELEMENTWISE = frozenset(
    """float double half bfloat16 long int short bool byte type_as exp exp2 log log2 log1p sin cos tan sigmoid sqrt
    rsqrt pow abs neg floor ceil round clamp clamp_min clamp_max mul add sub div mul_ add_ sub_ div_ pow_ exp_
    unsqueeze squeeze view reshape expand repeat t transpose permute flip contiguous cumsum cumprod clone detach""".split()
)
# factories of host data: `device=` still builds them on the CPU and copies
# them synchronously (PyTorch's `tensor(data, device=...)` does exactly
# that), so moving the target into them saves nothing
HOST_DATA_FACTORIES = frozenset(("tensor", "as_tensor"))
_MAX_HOPS = 4  # names followed to their assignment, at most
_MAX_NEST = 48  # levels of an expression followed, at most
def host_factory(fa, expr: ast.AST, func: Optional[ast.AST], tensor_kind) -> Optional[ast.Call]:
    """The CPU factory call `expr` is computed from on the host, through
    casts, arithmetic and elementwise functions and through names assigned
    once in `func` (the def around it); None when it is not one, or holds
    other tensor data. `tensor_kind(expr)`: whether a leaf may be a tensor
    (True), is not one (False), or is not known (None)."""
    found = _walk(fa, expr, func, tensor_kind, 0, expr)
    return found if isinstance(found, ast.Call) else None


_DATA = object()  # the expression holds tensor data that is not a CPU factory's
# the old autograd wrapper, which gives back the tensor it wraps (torch 0.4 on)
_VARIABLE = frozenset(("torch.autograd.Variable", "torch.autograd.variable.Variable"))
# tensor methods that lay their receiver out anew, taking only sizes and dims
_LAYOUT_METHODS = frozenset(
    "view reshape expand repeat permute transpose t squeeze unsqueeze contiguous unfold".split()) | (_SPLITTING - {"meshgrid"}) | {
    "expand_as", "view_as", "reshape_as"}  # (these read only the other tensor's shape)
# tensor methods that give its data back where it is, as it is or copied (irr's
# `grid.float().requires_grad_(False).cuda()`)
_SAME_DATA_METHODS = frozenset(("requires_grad_", "detach", "detach_", "clone"))
# attributes of a tensor that are host facts about it (a torch.Size, a dtype, a device)
_TENSOR_FACTS = frozenset(("shape", "dtype", "device", "ndim", "is_cuda"))
# functions of other libraries that lay a tensor out anew where it is (same device)
_LAYOUT_FUNCTIONS = frozenset(f"einops.{f}" for f in ("repeat", "rearrange", "reduce"))


def _walk(fa, expr: ast.AST, func, tensor_kind, depth: int, use: ast.AST, nest: int = 0):
    """The factory found (an ast.Call), None (nothing tensor-like here), or
    _DATA. `depth`: how many names were followed to their assignment;
    `nest`: how deep in the expression (a deeper one is not followed)."""
    if nest > _MAX_NEST:
        return _DATA
    nest += 1
    if isinstance(expr, ast.Constant):
        return None
    if isinstance(expr, ast.Call):
        if range_tensor(fa, expr):
            return expr  # `torch.LongTensor(range(n))`: an arange built on the host
        if host_constant(fa, expr, func, use):
            return expr  # `torch.tensor([[1., 4.], ...])`, `torch.from_numpy(np.eye(k))`: made to be copied
        name = factory_name(fa, expr)
        if name is not None:
            if builds_on_cpu(fa, name, expr) or _on_a_host_tensors_device(fa, name, expr, func, tensor_kind, depth, use, nest):
                return expr
            return _DATA
        if fa.facts.host_built(expr):
            return expr  # a project function that returns a tensor it built on the host
        if distribution_draw(fa, expr, func):
            return expr  # `Normal(0, 1).sample(mean.shape)`: drawn on the CPU
        f = expr.func
        q = fa.imports.qualname(f) or ""
        if q in _VARIABLE and len(expr.args) == 1 and not expr.keywords:
            return _walk(fa, expr.args[0], func, tensor_kind, depth, use, nest)  # `Variable(t)`: `t` itself
        if q.startswith("math.") or (isinstance(f, ast.Name) and f.id in ("int", "float", "len", "max", "min")):
            return None  # a Python number
        torch_fn = q[6:] if q.startswith("torch.") and q.count(".") == 1 else ""  # `torch.exp`, not `torch.nn.x`
        if (torch_fn in TORCH_SAMPLING or q in _LAYOUT_FUNCTIONS) and expr.args:
            return _walk(fa, expr.args[0], func, tensor_kind, depth, use, nest)
        if torch_fn in TENSOR_JOINS and expr.args and isinstance(expr.args[0], (ast.List, ast.Tuple)):
            # `torch.cat((torch.zeros(b, 1), data))`: every part is a tensor, so a part the walk
            # cannot place (a parameter, `data`) is a tensor the code was handed: data
            parts = [_walk(fa, e, func, tensor_kind, depth, use, nest) for e in expr.args[0].elts]
            return _DATA if any(p is _DATA or p is None for p in parts) else next((p for p in parts if p), None)
        if torch_fn in TORCH_ELEMENTWISE:
            return _first(fa, [a for a in expr.args] + [k.value for k in expr.keywords if k.arg != "dim"],
                          func, tensor_kind, depth, use, nest)
        if isinstance(f, ast.Attribute) and f.attr in _LAYOUT_METHODS:
            return _walk(fa, f.value, func, tensor_kind, depth, use, nest)  # (its arguments are sizes and dims)
        if torch_fn in _SAME_DATA_METHODS and expr.args:
            return _walk(fa, expr.args[0], func, tensor_kind, depth, use, nest)  # `torch.clone(mask)`
        if isinstance(f, ast.Attribute) and f.attr in _SAME_DATA_METHODS and not torch_fn:
            return _walk(fa, f.value, func, tensor_kind, depth, use, nest)  # `.requires_grad_(False)`: where it was
        if isinstance(f, ast.Attribute) and f.attr in TENSOR_ELEMENTWISE:
            return _first(fa, [f.value] + list(expr.args) + [k.value for k in expr.keywords],
                          func, tensor_kind, depth, use, nest)
        if isinstance(f, ast.Attribute) and f.attr == "to" and _dtype_only(fa, expr):
            return _walk(fa, f.value, func, tensor_kind, depth, use, nest)
        if isinstance(f, ast.Attribute) and f.attr == "type" and len(expr.args) == 1 and (
                is_cpu_tensor_type(fa, expr.args[0]) or device_arg_kind(fa, expr.args[0]) == DTYPE):
            # `.type(torch.ByteTensor)`, `.type(torch.uint8)`: a cast that stays on the host
            return _walk(fa, f.value, func, tensor_kind, depth, use, nest)
        if isinstance(f, ast.Attribute) and f.attr in ("to", "cuda", "cpu"):
            return _DATA  # moved already: not what the factory built where it built it
        if isinstance(f, ast.Attribute) and f.attr in SIZE_METHODS:
            return None  # `x.size(0)`: a Python int (a torch.Size)
        return _DATA if tensor_kind(expr) is not False else None
    if isinstance(expr, ast.BinOp):
        return _first(fa, [expr.left, expr.right], func, tensor_kind, depth, use, nest)
    if isinstance(expr, (ast.List, ast.Tuple)) and isinstance(expr.ctx, ast.Load):
        return _first(fa, list(expr.elts), func, tensor_kind, depth, use, nest)  # `torch.cat([a, b])`
    if isinstance(expr, ast.UnaryOp):
        return _walk(fa, expr.operand, func, tensor_kind, depth, use, nest)
    if isinstance(expr, ast.Compare):  # `(mask == 0)`: elementwise, where its operands are
        return _first(fa, [expr.left] + list(expr.comparators), func, tensor_kind, depth, use, nest)
    if isinstance(expr, ast.Subscript):
        return _walk(fa, expr.value, func, tensor_kind, depth, use, nest)
    if isinstance(expr, ast.Name):
        writing = fa.index.memo("host_built.writing")  # arrays whose item writes are being read
        if (func, expr.id) in writing:
            return None  # `ids[..., 1] = ids[..., 1] + torch.arange(h)`: the array itself, read already
        value = assigned_value(fa.index, expr, func, use)
        if value is not None:
            if depth >= _MAX_HOPS:
                return _DATA
            writing[(func, expr.id)] = True
            try:
                for write in _item_writes(fa, func).get(expr.id, ()):
                    # `pe[0::2] = torch.sin(pos * div)`: what is written in must be computed from a CPU
                    # factory too; Python numbers written in (`lengths[i] = n + 1`) are host data
                    if not isinstance(_walk(fa, write.value, func, tensor_kind, depth + 1, write.value, nest), ast.Call):
                        return _DATA
                for update in plain_bindings(fa, func).get(expr.id, ()):
                    # `xy += 0.5`, `xy *= self.stride[level]`: updated in place on the CPU, where a
                    # CUDA tensor of data cannot be the operand (a number, or host data)
                    if not isinstance(update, ast.AugAssign):
                        continue
                    kind = tensor_kind(update.value)
                    if kind is True or (kind is False and _walk(
                            fa, update.value, func, tensor_kind, depth + 1, update.value, nest) is _DATA):
                        return _DATA
            finally:
                del writing[(func, expr.id)]
            return _walk(fa, value, func, tensor_kind, depth + 1, value, nest)
        return _DATA if tensor_kind(expr) is True else None
    if isinstance(expr, ast.Attribute):
        if expr.attr in _TENSOR_FACTS:
            return None  # `x.shape`, `x.dtype`: host facts about a tensor, no data of it
        return _DATA if tensor_kind(expr) is not False else None
    return _DATA


def _on_a_host_tensors_device(fa, name: str, call: ast.Call, func, tensor_kind, depth: int, use, nest: int) -> bool:
    """`torch.arange(end, device=freqs.device)` where `freqs` is itself
    computed on the host from a CPU factory (llama's `precompute_freqs_cis`):
    the device of a CPU tensor is the CPU."""
    built_on = factory_device_arg(name, call)
    if not (isinstance(built_on, ast.Attribute) and built_on.attr == "device" and isinstance(built_on.value, ast.Name)):
        return False
    return _fresh(name, call) and isinstance(_walk(fa, built_on.value, func, tensor_kind, depth, use, nest), ast.Call)


def host_constant(fa, call: ast.Call, func, use: ast.AST) -> bool:
    """`call` makes a CPU tensor of a table of literals or of an array numpy
    made only to be copied (`literals`), through names assigned once in
    `func` before `use` and not written into after (an array filled with a
    server's answers, item by item, holds data)."""
    def value_of(name: ast.Name) -> Optional[ast.AST]:
        if func is not None and (_item_writes(fa, func).get(name.id) or any(
                isinstance(b, ast.AugAssign) for b in plain_bindings(fa, func).get(name.id, ()))):
            return None  # `actual = np.full(...)`, then `actual[i, :n] = ...`: filled with data
        return assigned_value(fa.index, name, func, use)

    return constant_table(fa, call) or numpy_source(fa, call, value_of) is not None


def _first(fa, parts, func, tensor_kind, depth: int, use: ast.AST, nest: int):
    found = None
    for p in parts:
        r = _walk(fa, p, func, tensor_kind, depth, use, nest)
        if r is _DATA:
            return _DATA
        if found is None:
            found = r
    return found


# the draws of a `torch.distributions` object
_DRAWS = frozenset(("sample", "rsample", "sample_n"))


def distribution_draw(fa, call: ast.AST, func: Optional[ast.AST]) -> bool:
    """`Normal(0, 1).sample(shape)`, or `.sample(...)` of a name `func` binds
    once to such a distribution: a `torch.distributions` class built from
    Python numbers only, whose draws are CPU tensors (SAC's reparameterized
    noise, `normal = Normal(0, 1); z = normal.sample(mean.shape)`)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _DRAWS):
        return False
    dist = call.func.value
    if isinstance(dist, ast.Name) and func is not None:
        dist = assigned_value(fa.index, dist, func, call)
    if not isinstance(dist, ast.Call):
        return False
    q = fa.imports.qualname(dist.func) or ""
    args = list(dist.args) + [k.value for k in dist.keywords]
    return q.startswith("torch.distributions.") and bool(args) and all(
        isinstance(a, ast.Constant) and isinstance(a.value, (int, float)) and not isinstance(a.value, bool)
        or (isinstance(a, ast.UnaryOp) and isinstance(a.operand, ast.Constant)) for a in args)


def builds_on_cpu(fa, name: str, call: ast.Call) -> bool:
    """The factory call `torch.<name>(...)` builds fresh values on the CPU,
    which `device=` would build on the GPU instead: not host data
    (`HOST_DATA_FACTORIES`), no `out=` or `**kwargs`, no CPU generator, and
    no device or the CPU given."""
    if not _fresh(name, call):
        return False
    built_on = factory_device_arg(name, call)
    return built_on is None or device_arg_kind(fa, built_on) == CPU


def _fresh(name: str, call: ast.Call) -> bool:
    """The factory call makes fresh values where it builds: not host data
    (`HOST_DATA_FACTORIES`), no `out=` or `**kwargs`, no CPU generator (drawn
    from one, a tensor has to be built on the CPU)."""
    return name not in HOST_DATA_FACTORIES and not any(kw.arg in ("out", None) for kw in call.keywords) \
        and not has_generator(call)


def _dtype_only(fa, call: ast.Call) -> bool:
    """`.to(torch.float32)` / `.to(dtype=...)`: a cast, not a move."""
    if any(kw.arg != "dtype" for kw in call.keywords):
        return False
    return all(device_arg_kind(fa, a) == DTYPE for a in call.args)


def assigned_value(index, name: ast.Name, func, use: ast.AST) -> Optional[ast.AST]:
    """The value of the last plain `name = value` before `use` in `func`,
    where that statement always runs before it: it sits in a block that
    also holds `use` (not in a branch or loop of its own), and `name` is
    bound in no other way in the function (a loop target, `+=`, ...)."""
    if func is None:
        return None
    found = bindings_of(index, func).get(name.id)
    if not found:
        return None
    pos = (use.lineno, use.col_offset)
    best = None
    for stmt in found:
        if stmt is None:
            return None  # bound some other way too: not followed
        if isinstance(stmt, ast.AugAssign):
            continue  # updated in place, not bound anew (`_walk` checks what goes in)
        if (stmt.end_lineno, stmt.end_col_offset) <= pos:  # (not the statement the use is in)
            best = stmt
    if best is None:
        return None
    where = index.slot(best)  # (the block that holds the assignment)
    if where is None:
        return None
    parents = index.parents
    node = use
    while node is not None and parents.get(node) is not where[0]:
        node = parents.get(node)
    here = index.slot(node) if node is not None else None
    if here is None or here[:2] != where[:2]:
        return None
    return best.value


def _item_writes(fa, func) -> dict:
    """name -> the statements of `func` that write into it in place
    (`pe[0::2] = ...`), in one walk."""
    def compute() -> dict:
        out: dict = {}
        for stmt in walk(func):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                t = stmt.targets[0]
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    out.setdefault(t.value.id, []).append(stmt)
        return out
    return fa.index.memoized("host_built.item_writes", func, compute)


def plain_bindings(fa, func) -> dict:
    """`_bindings` of `func`, read once per model."""
    return bindings_of(fa.index, func)


def bindings_of(index, func) -> dict:
    """`_bindings` of `func`, read once per index."""
    return index.memoized("host_built.bindings", func, lambda: _bindings(func))


def _bindings(func) -> dict:
    """name -> its plain single-name assignments in `func`, in source order
    (None for a binding of another kind), read in one walk. Writes into a
    tensor in place (`pe[0::2] = ...`) do not bind the name (`_item_writes`)."""
    out: dict = {}
    for stmt in walk(func):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            out.setdefault(stmt.targets[0].id, []).append(stmt)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _splits(stmt.value) and isinstance(
                stmt.targets[0], (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts):
            for e in stmt.targets[0].elts:  # `gy, gx = torch.meshgrid(...)`: each part is the call's data
                out.setdefault(e.id, []).append(stmt)  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            out.setdefault(stmt.target.id, []).append(stmt)  # an update in place (`x += 0.5`)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript) \
                and isinstance(stmt.targets[0].value, ast.Name):
            continue  # an item written in place: `_item_writes`
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
                               ast.AsyncWith)):
            for t in _targets(stmt):
                for name in target_names(t):
                    out.setdefault(name, []).append(None)
    for v in out.values():
        v.sort(key=lambda st: (0, 0) if st is None else (st.lineno, st.col_offset))
    return out


def _splits(value: ast.AST) -> bool:
    """`torch.meshgrid(...)`, `x.chunk(2)`, ...: a call of `_SPLITTING`."""
    if not isinstance(value, ast.Call):
        return False
    f = value.func
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None) in _SPLITTING


def _targets(stmt: ast.AST):
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    return [i.optional_vars for i in stmt.items if i.optional_vars is not None]  # type: ignore[attr-defined]


def defs_building_on_cpu(fa) -> frozenset:
    """The defs (None for the module's code) that call a tensor factory
    building on the CPU: the only places `host_factory` can end. Once per
    file, from its calls."""
    def compute() -> frozenset:
        owners = set()
        ranges = fa.index.mentions("(range(") or fa.index.mentions("(list(range(")  # (`range_tensor`'s forms)
        for call in fa.index.nodes(ast.Call):
            name = factory_name(fa, call)
            drawn = isinstance(call.func, ast.Attribute) and call.func.attr in _DRAWS  # type: ignore[attr-defined]
            # (`torch.tensor(list(range(n)))` as well as `torch.LongTensor(range(n))`)
            ranged = name in (None, "tensor", "as_tensor") and not drawn and ranges and range_tensor(fa, call)
            of_data = len(call.args) == 1 and (name in HOST_DATA_FACTORIES
                                               or name is None and last_name(call.func) == "from_numpy")
            if name is None and not drawn and not ranged and not of_data:
                continue
            func = next((a for a in reversed(fa.index.ancestors(call))
                         if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            if ranged or (builds_on_cpu(fa, name, call) if name is not None else distribution_draw(fa, call, func)) \
                    or of_data and host_constant(fa, call, func, call):
                owners.add(func)
        return frozenset(owners)

    return fa.index.memoized("host_built.defs", None, compute)
