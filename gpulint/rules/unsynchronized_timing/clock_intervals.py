"""Host-clock intervals and what the GPU does inside them.

Small, general queries over a FileModel:

* `sync_or_work(fa, node, anc)`: SYNC when `node` makes the host wait for the
  GPU (`torch.cuda.synchronize()`, `<event or stream>.synchronize()`,
  `dist.barrier()`, `.item()` / `.tolist()` / `.cpu()` / `.numpy()`, `.to("cpu")`,
  a blocking `.to(device)` / `.cuda()` (the copy waits for the stream), also
  as the lambda a call maps over a batch (`map_dict(lambda x: x.to(device), batch)`),
  `float()` / `int()` / `bool()` / `print()` / an f-string of a tensor, `if
  <tensor>:`, writing a model or tensors out (`torch.save`, `torch.jit.save`,
  `torch.onnx.export`, `torch.jit.trace`, which checks its trace against the
  model's outputs: each copies device values to the host), a call of a
  function of this file that does one of these, or a
  call we cannot see into that is handed a tensor, such as a logger);
  WORK when it queues CUDA work that runs asynchronously (a model forward,
  a criterion, `.backward()`, an optimizer step, a torch op on tensors, tensor
  arithmetic, a `non_blocking=True` copy); None otherwise. Preparing a batch
  that came from a DataLoader (layout/dtype conversion, moving it) is not
  counted as work: data-time meters conventionally stop there. Nor is a model
  called on raw inputs (a string, a numpy array): that is a predictor with its
  own pre/post-processing, not a tensor forward.
* `clock_intervals(fa, scope)`: the intervals timed with a host clock in
  `scope` (a def or the module): `t0 = clock()` ... `clock() - t0`, or
  `t1 = clock()` ... `t1 - t0`. Each comes with the clock call that ends it
  and, for every start assignment that reaches that call, the stretches of
  source between them (a start assigned later in an enclosing loop reaches
  the read through the loop's back edge, which gives two stretches). A
  difference that is compared (`if time.time() - t0 > timeout:`) is a timeout
  or a throttle, not a measurement, and is not an interval.
* `unsynchronized_work(fa, scope, interval)`: whether CUDA work is still queued
  when the interval's clock is read (see its doc for the loop rules),
  `is_data_pass(fa, loop)`: a loop that runs the model over data, and
  `spans_whole_passes(fa, scope, interval)`: a meter over many passes of a
  loop that is a pass over data or syncs in every pass.

Positions are (line, column) pairs; events are ordered by where they end
(a call completes after its receiver and arguments).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.values.kinds import (
    CRITERION,
    NON_TENSOR_METHODS,
    NUMBER,
    NUMPY,
    TENSOR,
    is_tensor_returning_torch,
)
from gpulint.model.index.nodes import COMPREHENSIONS
from gpulint.model.index.order import Pos, contains, end_of, loops_around, scope_nodes, start_of
from gpulint.model.index.order import callee_name
from gpulint.model.project.callgraph import functions_reaching
from gpulint.model.names import dotted
from gpulint.model.control.constants import dead_statements
from gpulint.model.control.explicit_syncs import is_explicit_sync
from gpulint.model.index.walk import child_nodes, walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

SYNC = "sync"
WORK = "work"

# `torch.cuda.synchronize()`, `event.synchronize()`, `stream.synchronize()`,
# `dist.barrier()`, accelerate's `accelerator.wait_for_everyone()`
SYNC_METHODS = frozenset({"synchronize", "barrier", "wait_for_everyone"})
HOST_READ_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
# calls that write a model's or a tensor's values out, through host memory
SERIALIZING_CALLS = frozenset({"torch.save", "torch.jit.save", "torch.export.save", "torch.onnx.export",
                               "torch.jit.trace", "torch.jit.trace_module"})
# tensor methods that only make a view or change metadata: no kernel
VIEW_METHODS = frozenset(
    """view view_as reshape reshape_as permute transpose t unsqueeze squeeze expand expand_as
    narrow select unbind split chunk flatten unflatten detach detach_ requires_grad_ movedim
    as_strided unfold diagonal real imag pin_memory share_memory_ record_stream""".split()
)
WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "progress_bar", "track", "islice", "zip"})


def _scope_anc(scope: ast.AST) -> List[ast.AST]:
    return [] if isinstance(scope, ast.Module) else [scope]


# ------------------------------------------------------------ sync / work
def _keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _is_true(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _is_cpu_device(fa: FileModel, expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value.split(":")[0] == "cpu"
    if isinstance(expr, ast.Call) and fa.imports.call_qualname(expr) == "torch.device" and expr.args:
        return _is_cpu_device(fa, expr.args[0])
    return False


def _is_dtype(fa: FileModel, expr: ast.AST) -> bool:
    q = fa.imports.qualname(expr) or ""
    if q.startswith("torch.") and q.rsplit(".", 1)[-1] in (
        "float32 float float16 half bfloat16 float64 double int8 uint8 int16 int32 int int64 long bool "
        "complex64 cfloat float8_e4m3fn float8_e5m2".split()
    ):
        return True
    name = (dotted(expr) or "").rsplit(".", 1)[-1].lower()
    return "dtype" in name


def _transfer(fa: FileModel, call: ast.Call) -> Optional[str]:
    """For `.to(...)` / `.cuda(...)`: "cpu" (to host), "device" (to a device),
    or None (a dtype cast or unknown)."""
    attr = call.func.attr  # type: ignore[attr-defined]
    if attr == "cuda":
        return "device"
    if attr == "cpu":
        return "cpu"
    dev = _keyword(call, "device")
    if dev is None and call.args and not _is_dtype(fa, call.args[0]):
        dev = call.args[0]
    if dev is None:
        return None
    return "cpu" if _is_cpu_device(fa, dev) else "device"


def _blocking_copy(fa: FileModel, expr: ast.AST) -> bool:
    """`x.to(device)` / `x.cuda()` without `non_blocking=True`: a lambda's
    body that a call maps over a batch."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("to", "cuda") \
        and _transfer(fa, expr) == "device" and not _is_true(_keyword(expr, "non_blocking"))


def _tensor_not_batch(fa: FileModel, expr: ast.AST, anc: Sequence[ast.AST]) -> bool:
    """A tensor that work on it may queue GPU kernels: not a batch fresh from
    the loader, nor one known to live in host memory (`torch.from_numpy(a)`,
    `x.cpu()`), whose work runs on the CPU while the clock runs."""
    return (fa.values.is_tensor(expr, anc) is True and not fa.values.is_batch(expr, anc)
            and not fa.host.is_host_tensor(expr, anc))


def _raw_input(fa: FileModel, expr: ast.AST, anc: Sequence[ast.AST]) -> bool:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return True
    return fa.values.kind(expr, anc) == NUMPY


def sync_or_work(fa: FileModel, node: ast.AST, anc: Sequence[ast.AST]) -> Optional[str]:
    """SYNC, WORK or None for one node (see the module doc); the tests of
    `if`/`while`/`assert` are checked by `truth_value_syncs`."""
    if isinstance(node, ast.Call):
        return _call_kind(fa, node, anc)
    if isinstance(node, ast.BinOp):
        if fa.values.kind(node, anc) == TENSOR and (
            _tensor_not_batch(fa, node.left, anc) or _tensor_not_batch(fa, node.right, anc)
        ):
            return WORK
        return None
    if isinstance(node, ast.AugAssign):
        if _tensor_not_batch(fa, node.target, anc) or _tensor_not_batch(fa, node.value, anc):
            return WORK
        return None
    if isinstance(node, ast.FormattedValue):
        return SYNC if fa.values.is_tensor(node.value, anc) is True else None
    return None


def _call_kind(fa: FileModel, call: ast.Call, anc: Sequence[ast.AST], local: bool = True) -> Optional[str]:
    func = call.func
    q = fa.imports.call_qualname(call) or ""
    attr = func.attr if isinstance(func, ast.Attribute) else None
    # ---- host syncs
    if is_explicit_sync(call, fa):  # `torch.cuda.synchronize()`, a barrier, an alias (nanochat's `synchronize()`)
        return SYNC
    if attr in SYNC_METHODS:
        return SYNC
    if q in SERIALIZING_CALLS and not (q.startswith("torch.jit.trace") and _keyword(call, "check_trace") is not None):
        return SYNC  # the values are copied to the host (a trace compares its outputs with the model's there)
    if attr is not None:
        recv = func.value  # type: ignore[union-attr]
        recv_kind = fa.values.kind(recv, anc)
        if attr in HOST_READ_METHODS and (
            recv_kind not in (NUMPY, NUMBER) or fa.values.kind_at(recv, anc) == TENSOR
        ):
            # `running_loss.item()` where `running_loss = 0` is re-bound later in
            # the loop but holds a tensor here (after `running_loss += loss`)
            return SYNC
        if attr in ("to", "cuda") and recv_kind not in (NUMPY, NUMBER):
            where = _transfer(fa, call)
            if where == "cpu":
                return SYNC
            if where == "device":
                if not _is_true(_keyword(call, "non_blocking")):
                    return SYNC  # a blocking copy waits for the stream to drain
                return None if fa.values.is_batch(recv, anc) else WORK
            # a dtype cast: a kernel on a tensor
            return WORK if _tensor_not_batch(fa, recv, anc) else None
    if q in ("builtins.float", "builtins.int", "builtins.bool") and call.args:
        return SYNC if fa.values.is_tensor(call.args[0], anc) is True else None
    if q == "builtins.print" and any(fa.values.is_tensor(a, anc) is True for a in call.args):
        return SYNC
    if fa.facts.returns_synced(call):
        return SYNC  # a project function whose every return reads on the host
    if any(isinstance(a, ast.Lambda) and _blocking_copy(fa, a.body) for a in call.args):
        return SYNC  # `map_dict(lambda x: x.to(self.device), batch)`: each element copied, blocking
    if local:
        name = callee_name(call)
        if name is not None and name in sync_functions(fa):
            return SYNC
        if _opaque_call_with_tensor(fa, call, q, name, anc):
            return SYNC
    # ---- queued CUDA work
    if fa.steps.is_model_call(call, anc):
        # `model(np_image)` / `model("bus.jpg")`: a predictor that takes raw
        # inputs and does its own pre/post-processing, not a tensor forward
        return None if any(_raw_input(fa, a, anc) for a in call.args) else WORK
    if fa.steps.is_backward_call(call) or fa.steps.is_optimizer_step(call, anc):
        return WORK
    if isinstance(func, (ast.Name, ast.Attribute)) and fa.values.kind(func, anc) == CRITERION:
        return WORK
    if q.startswith("torch.") and is_tensor_returning_torch(q):
        dev = _keyword(call, "device")
        if dev is not None and not _is_cpu_device(fa, dev):
            return WORK
        if fa.host.is_host_tensor(call, anc):
            return None  # built in host memory (`torch.from_numpy(a)`): no kernel is queued
        if any(_tensor_not_batch(fa, a, anc) for a in call.args):
            return WORK
        return None
    if attr is not None and attr not in NON_TENSOR_METHODS and attr not in VIEW_METHODS:
        if _tensor_not_batch(fa, func.value, anc):  # type: ignore[union-attr]
            return WORK
    return None


def truth_value_syncs(fa: FileModel, stmt: ast.AST, anc: Sequence[ast.AST]) -> bool:
    """`if <tensor>:` / `while <tensor>:` / `assert <tensor>`: the truth value of
    a tensor is read on the host."""
    test = getattr(stmt, "test", None)
    if not isinstance(stmt, (ast.If, ast.While, ast.Assert, ast.IfExp)) or test is None:
        return False
    return fa.values.is_tensor(test, anc) is True


def _tensor_args(call: ast.Call) -> List[ast.AST]:
    """Arguments, looking into tuple/list/dict displays (`log({"loss": loss})`)."""
    out: List[ast.AST] = []
    stack = list(call.args) + [kw.value for kw in call.keywords]
    while stack:
        a = stack.pop()
        if isinstance(a, ast.Starred):
            stack.append(a.value)
        elif isinstance(a, (ast.Tuple, ast.List, ast.Set)):
            stack.extend(a.elts)
        elif isinstance(a, ast.Dict):
            stack.extend(v for v in a.values if v is not None)
        else:
            out.append(a)
    return out


def _opaque_call_with_tensor(
    fa: FileModel, call: ast.Call, q: str, name: Optional[str], anc: Sequence[ast.AST]
) -> bool:
    """A call we cannot see into that is handed a tensor: a logger or metrics
    sink (`writer.add_scalar("loss", loss)`, `wandb.log({"loss": loss})`,
    `logger.info("%s", loss)`) reads it on the host. Not: torch and builtin
    functions, functions of this file (`sync_functions` knows them), and
    methods of values whose kind is known (`preds.append(out)`)."""
    if q.startswith(("torch.", "builtins.")) or (name is not None and name in local_functions(fa)):
        return False
    func = call.func
    if isinstance(func, ast.Attribute) and fa.values.kind(func.value, anc) is not None:
        return False
    if isinstance(func, ast.Name) and fa.values.kind(func, anc) is not None:
        return False
    return any(fa.values.is_tensor(a, anc) is True for a in _tensor_args(call))


def local_functions(fa: FileModel) -> FrozenSet[str]:
    """Names of every def in this file (methods included)."""
    cache = fa.index.memo("clock_intervals")
    found = cache.get("local_functions")
    if found is None:
        found = frozenset(n.name for n in fa.index.nodes(*FUNCS))
        cache["local_functions"] = found
    return found  # type: ignore[return-value]


def sync_functions(fa: FileModel) -> FrozenSet[str]:
    """Names of the functions of this file that make the host wait for the GPU
    (a SYNC in their own code, or a call of another such function)."""
    cache = fa.index.memo("clock_intervals")
    found = cache.get("sync_functions")
    if found is not None:
        return found  # type: ignore[return-value]
    cache["sync_functions"] = frozenset()  # no recursion while computing

    def syncs(node: ast.AST, anc: List[ast.AST]) -> bool:
        if isinstance(node, ast.Call):
            return _call_kind(fa, node, anc, local=False) == SYNC or _opaque_call_with_tensor(
                fa, node, fa.imports.call_qualname(node) or "", callee_name(node), anc
            )
        if isinstance(node, ast.FormattedValue):
            return fa.values.is_tensor(node.value, anc) is True
        return truth_value_syncs(fa, node, anc)

    found = functions_reaching(fa.tree, syncs)
    cache["sync_functions"] = found
    return found


# ------------------------------------------------------------- intervals
@dataclass
class Interval:
    """`end` (a clock call) ends an interval started at `start` (an assignment
    of a clock value); `stretches` are the (after, up to) source ranges that
    run between them, in execution order."""

    end: ast.Call
    start: ast.AST
    stretches: List[Tuple[Pos, Pos]] = field(default_factory=list)
    loop: Optional[ast.AST] = None  # the loop whose back edge the interval crosses


@dataclass
class _Def:
    stmt: ast.AST
    clock: Optional[ast.Call]  # the clock call when the value is a fresh clock read
    is_clock: bool  # a clock value (fresh, or copied from another clock variable)


def _bindings(node: ast.AST) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    """(target, value) pairs an assignment binds; the value is None when it is
    not known per target (`a, b = f()`, `t += 1`)."""
    out: List[Tuple[ast.AST, Optional[ast.AST]]] = []
    if isinstance(node, ast.Assign):
        for t in node.targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                v = node.value
                if isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(t.elts):
                    out.extend(zip(t.elts, v.elts))  # `start, loss_sum = time.time(), 0.0`
                else:
                    out.extend((e, None) for e in t.elts)
            else:
                out.append((t, node.value))
    elif isinstance(node, ast.AnnAssign):
        out.append((node.target, node.value))
    elif isinstance(node, ast.AugAssign):
        out.append((node.target, None))
    return out


def clock_intervals(fa: FileModel, scope: ast.AST) -> List[Interval]:
    """The clock-timed intervals of `scope` (see the module doc)."""
    nodes = list(scope_nodes(scope))
    defs: Dict[str, List[_Def]] = {}
    bindings = [
        (node, dotted(t), v)
        for node in nodes
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        for t, v in _bindings(node)
    ]
    clock_keys = {key for _, key, v in bindings if key is not None and v is not None and fa.contexts.is_clock_call(v)}
    if not clock_keys:
        return []
    for node, key, value in bindings:
        if key is None:
            continue
        fresh = value if value is not None and fa.contexts.is_clock_call(value) else None
        alias = value is not None and (dotted(value) or "") in clock_keys
        defs.setdefault(key, []).append(_Def(node, fresh, fresh is not None or alias))  # type: ignore[arg-type]
    for lst in defs.values():
        lst.sort(key=lambda d: start_of(d.stmt))

    def reaching(key: str, at: ast.AST) -> List[Tuple[_Def, Optional[ast.AST]]]:
        lst = defs.get(key, [])
        before = [d for d in lst if end_of(d.stmt) <= start_of(at)]
        lin = before[-1] if before else None
        out: List[Tuple[_Def, Optional[ast.AST]]] = [(lin, None)] if lin else []
        for loop in loops_around(fa.index.ancestors(at) + [at]):
            if lin is not None and contains(loop, lin.stmt):
                break
            later = [d for d in lst if contains(loop, d.stmt) and start_of(d.stmt) >= end_of(at)]
            if later:
                out.append((later[-1], loop))
        return out

    ends: Dict[int, Tuple[ast.Call, Set[str]]] = {}
    parents = fa.index.parents
    dead = dead_statements(fa.index)
    for node in nodes:
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
            continue
        if _in_comparison(node, parents):
            continue
        if dead and any(id(a) in dead for a in fa.index.ancestors(node)):
            continue  # printed under `if False:`: a figure nobody reads
        right = dotted(node.right)
        if right is None or right not in clock_keys:
            continue
        if fa.contexts.is_clock_call(node.left):
            ends.setdefault(id(node.left), (node.left, set()))[1].add(right)  # type: ignore[arg-type]
            continue
        left = dotted(node.left)
        if left is None or left not in clock_keys:
            continue
        for d, _ in reaching(left, node):
            if d.clock is not None:
                ends.setdefault(id(d.clock), (d.clock, set()))[1].add(right)
    intervals: List[Interval] = []
    for end, keys in sorted(ends.values(), key=lambda e: start_of(e[0])):
        for key in sorted(keys):
            for d, loop in reaching(key, end):
                if not d.is_clock or d.clock is end:
                    continue
                if loop is None:
                    stretches = [(end_of(d.stmt), start_of(end))]
                else:
                    top = start_of(loop) if isinstance(loop, ast.While) else start_of(loop.body[0])
                    stretches = [(end_of(d.stmt), end_of(loop)), (top, start_of(end))]
                intervals.append(Interval(end, d.stmt, stretches, loop))
    return intervals


def _in_comparison(node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> bool:
    """`clock() - t0 > limit` (also through arithmetic / parentheses)."""
    cur = node
    while True:
        parent = parents.get(cur)
        if isinstance(parent, ast.Compare):
            return True
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            cur = parent
            continue
        return False


def scope_events(fa: FileModel, scope: ast.AST) -> Tuple[List[Tuple[Pos, str]], List[ast.AST]]:
    """(end position, SYNC/WORK) of every event in `scope`, sorted, and the
    scope's loops (comprehensions included)."""
    cache = fa.index.memo("clock_intervals")
    key = ("events", id(scope))
    found = cache.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    anc = _scope_anc(scope)
    events: List[Tuple[Pos, str]] = []
    loops: List[ast.AST] = []
    for node in scope_nodes(scope):
        if isinstance(node, LOOPS) or isinstance(node, COMPREHENSIONS):
            loops.append(node)
        if truth_value_syncs(fa, node, anc):
            events.append((end_of(node.test), SYNC))  # type: ignore[attr-defined]
        kind = sync_or_work(fa, node, anc)
        if kind is not None:
            events.append((end_of(node), kind))
    events.sort()
    found = (events, loops)
    cache[key] = found
    return found


def is_data_pass(fa: FileModel, loop: ast.AST) -> bool:
    """A `for` loop (or comprehension) that runs the model over data: it
    iterates a DataLoader, or its body runs a model forward, a backward or an
    optimizer step, and it does not iterate a repetition count (`range(n)`,
    `itertools.repeat`, the benchmark pattern). A counted loop is a pass when
    `range(len(data))` indexes data, or when every pass takes fresh data for
    the model (`buffer.sample()`, `next(it)`, `data[i]`: see
    `FileModel.loop_fetches_data`). Such a pass runs for many steps."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        it = loop.iter
    elif isinstance(loop, COMPREHENSIONS):
        it = loop.generators[0].iter
    else:
        return False  # `while`: a count or a condition
    while isinstance(it, ast.Call) and it.args and isinstance(it.func, ast.Name) and it.func.id in WRAPPERS:
        it = it.args[0]
    if isinstance(it, ast.Call):
        f = it.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in ("range", "trange", "repeat", "count") and not (
            _sized_by_data(it) or fa.loops.loop_fetches_data(loop)
        ):
            return False
    if isinstance(loop, COMPREHENSIONS):
        anc = fa.index.ancestors(loop)
        return any(isinstance(n, ast.Call) and fa.steps.is_model_call(n, anc + [loop]) for n in walk(loop))
    return fa.loops.loop_has_triggers(loop)


def _sized_by_data(call: ast.Call) -> bool:
    """`range(len(dataset))`, `range(0, data.size(0) - 1, bptt)`: indices into data."""
    for n in walk(call):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            return True
        if isinstance(n, ast.Attribute) and n.attr in ("size", "shape"):
            return True
    return False


def unsynchronized_work(fa: FileModel, scope: ast.AST, interval: Interval) -> bool:
    """Whether CUDA work is queued inside `interval` with no host sync between
    the last such work and the clock read.

    A loop that lies wholly inside the interval counts as a sync at its end
    when it syncs in its body, or when it is a pass over data (`is_data_pass`):
    the CPU can only run a bounded number of kernels ahead of the GPU, so what
    is left unsynced is a step or a few of a long pass (an epoch or an
    evaluation run timed as a whole is measured well enough). A loop that
    repeats work a counted number of times (`for _ in range(iters):`, the
    benchmark pattern) is short enough for the tail to matter. For the same
    reason an interval that spans whole passes of such a loop (a throughput
    meter read and restarted under `if step % n == 0:`) is measured well
    enough (`spans_whole_passes`)."""
    events, loops = scope_events(fa, scope)
    last: Optional[str] = None
    for lo, hi in interval.stretches:
        synced_loops = []
        for loop in loops:
            if lo <= start_of(loop) and end_of(loop) <= hi:
                if is_data_pass(fa, loop) or any(
                    start_of(loop) <= p <= end_of(loop) and k == SYNC for p, k in events
                ):
                    synced_loops.append(loop)
        stretch: List[Tuple[Pos, str]] = []
        for p, k in events:
            if not (lo < p <= hi):
                continue
            if any(start_of(lp) <= p <= end_of(lp) for lp in synced_loops):
                continue
            stretch.append((p, k))
        stretch.extend((end_of(lp), SYNC) for lp in synced_loops)
        stretch.sort()
        for _, k in stretch:
            last = k
    return last == WORK and not spans_whole_passes(fa, scope, interval) and not _one_pass_between_syncs(
        fa, scope, interval
    )


def _one_pass_between_syncs(fa: FileModel, scope: ast.AST, interval: Interval) -> bool:
    """A meter read and restarted once in every pass of a loop (the interval
    crosses the loop's back edge: `time_left = ... (time.time() - prev_time)`,
    then `prev_time = time.time()`) that syncs in every pass (`loss.item()`
    in the step's print): each reading spans one pass from one sync to the
    next, shifted by where the sync sits in the pass, so on average it
    measures the pass (an ETA, a steps/s figure). The same holds for the
    first reading, from a start before the loop, where the loop restarts
    the meter in every pass, and for a meter never restarted (`step /
    (time.time() - t0)`): its readings span whole synced passes but the
    current one's tail. A meter restarted some other way (`self.iter_time
    = tnow`) is not taken here."""
    loop = interval.loop or _loop_read_in(fa, interval)
    if loop is None:
        return _synced_within_each_pass(fa, scope, interval)
    if interval.loop is None:
        if not _restarted_every_pass(fa, interval.start, loop) and _rebound_in(interval.start, loop):
            return False  # restarted some other way (`self.iter_time = tnow`): read as before
        # (a meter never restarted, `step / (time.time() - t0)` or an elapsed-time curve, reads
        # whole synced passes but the current one's tail: its error shrinks as 1/k)
    elif not (contains(loop, interval.start) and _every_pass(fa, interval.start, loop)):
        return False
    return _every_pass(fa, interval.end, loop) and _syncs_every_pass(fa, scope, loop)


def _synced_within_each_pass(fa: FileModel, scope: ast.AST, interval: Interval) -> bool:
    """A meter started and read in every pass of a loop, with a host read in
    every pass between the two (picotron's `step_start_time = time.time()`
    at the top of the step, `average_loss(...)`, which returns `.item()`,
    then the optimizer step and `time.time() - step_start_time`): the read
    waits for the pass's work and the previous pass's tail, so each reading
    spans one pass's worth of work, shifted by where the read sits in the
    pass (on average, the pass). Where the model's forward or backward comes
    after the last such read, the reading misses it (a served request's forward
    after its blocking upload), except in a training loop whose clock is read
    every n-th pass: the reading pass's read waits for the pass before."""
    around = loops_around(fa.index.ancestors(interval.end) + [interval.end])
    loop = next((lp for lp in around if isinstance(lp, LOOPS) and contains(lp, interval.start)), None)
    if loop is None or not _every_pass(fa, interval.start, loop):
        return False
    # a training loop, whose every pass backpropagates, with the clock read every
    # `print_freq` passes: what the pass before a reading queues after its read (the
    # backward, the optimizer step) is waited for by the reading pass's read, so each
    # reading is one pass's worth of work, on average one step (DPC's `T:`, with
    # `loss.item()` before `loss.backward()`). Not where the clock is read every pass:
    # a sync after the reading (a printout of the gradient norm) may take the
    # backward out of every reading (tacotron2's `duration`)
    every = _every_pass(fa, interval.end, loop)
    periodic = not every and _periodic_reading(fa, interval.end, loop) and any(
        isinstance(n, ast.Call) and fa.steps.is_backward_call(n) and _every_pass(fa, n, loop) for n in walk(loop))
    if not (every or periodic):
        return False
    lo, hi = end_of(interval.start), start_of(interval.end)
    calls = [n for n in walk(loop) if isinstance(n, ast.Call) and lo < start_of(n) < hi]
    reads = [n for n in calls if _host_read(fa, n) and _every_pass(fa, n, loop)]
    if not reads:
        return False
    last = max(start_of(n) for n in reads)
    return periodic or not any(start_of(n) > last and (fa.steps.is_model_call(n, fa.index.ancestors(n))
                                                       or fa.steps.is_backward_call(n)) for n in calls)


def _periodic_reading(fa: FileModel, end: ast.AST, loop: ast.AST) -> bool:
    """The clock is read under an `if step % n == 0:` of the loop's body."""
    chain = fa.index.ancestors(end)
    for i in range(len(chain) - 1, -1, -1):
        anc = chain[i]
        if anc is loop:
            return False
        if isinstance(anc, ast.If) and fa.loops.periodic_block(anc, chain[:i]):
            return True
    return False


def _host_read(fa: FileModel, call: ast.Call) -> bool:
    """`x.item()`, `x.tolist()`, an explicit sync, or a project function
    whose every return reads on the host: a wait for what the pass queued."""
    return (isinstance(call.func, ast.Attribute) and call.func.attr in ("item", "tolist") and not call.args) \
        or is_explicit_sync(call, fa) or fa.facts.returns_synced(call)


def _rebound_in(start: ast.AST, loop: ast.AST) -> bool:
    """What `start` binds (a name, an attribute) is assigned again somewhere in `loop`."""
    targets = getattr(start, "targets", None) or [getattr(start, "target", None)]
    texts = {ast.dump(t) for t in targets if t is not None}
    return any(
        isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
            ast.dump(t) in texts for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        for n in walk(loop)
    )


def _loop_read_in(fa: FileModel, interval: Interval) -> Optional[ast.AST]:
    """For an interval that starts before the loop its clock is read in: that
    loop (the innermost around the read that does not hold the start)."""
    around = loops_around(fa.index.ancestors(interval.end) + [interval.end])
    loop = next((lp for lp in around if not contains(lp, interval.start)), None)
    return loop if isinstance(loop, LOOPS) else None


def _restarted_every_pass(fa: FileModel, start: ast.AST, loop: ast.AST) -> bool:
    """A name that `start` binds is bound again in every pass of `loop`."""
    targets = getattr(start, "targets", None) or [getattr(start, "target", None)]
    names = {t.id for t in targets if isinstance(t, ast.Name)}
    return bool(names) and any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
        and _every_pass(fa, n, loop)
        for n in walk(loop) if n is not loop
    )


def _every_pass(fa: FileModel, node: ast.AST, loop: ast.AST) -> bool:
    """`node` runs in every pass of `loop` (not under a periodic `if`, in an
    `except` handler, ...: the exemptions of `FileModel.hot_loop`)."""
    return fa.loops.hot_loop(node, fa.index.ancestors(node), is_hot=lambda lp: lp is loop) is loop


def _syncs_every_pass(fa: FileModel, scope: ast.AST, loop: ast.AST) -> bool:
    """A host sync runs in every pass of `loop` (`loss.item()` each step)."""
    cache = fa.index.memo("clock_intervals")
    key = ("syncs_every_pass", id(loop))
    found = cache.get(key)
    if found is None:
        anc = _scope_anc(scope)
        found = False
        stack = list(loop.body)  # type: ignore[attr-defined]
        while stack and not found:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            found = (truth_value_syncs(fa, n, anc) or sync_or_work(fa, n, anc) == SYNC) and _every_pass(fa, n, loop)
            stack.extend(child_nodes(n))
        cache[key] = found
    return found  # type: ignore[return-value]


def spans_whole_passes(fa: FileModel, scope: ast.AST, interval: Interval) -> bool:
    """A meter over many passes of a loop: the clock is read in a block of the
    loop that does not run every pass (`if step % log_every == 0:`), and the
    interval starts before the loop or is restarted in such a block (not once
    per pass), so it spans whole passes of the loop; and the loop is one that
    counts as a sync when it lies inside an interval: a pass over data
    (`is_data_pass`), or one that syncs in every pass. What the read misses is
    the tail of a step or a few, a small part of the passes measured."""
    loop = interval.loop
    if loop is None:
        loop = _loop_read_in(fa, interval)
        if loop is None:
            return False
    elif _every_pass(fa, interval.start, loop):
        return False
    if _every_pass(fa, interval.end, loop):
        return False
    return is_data_pass(fa, loop) or _syncs_every_pass(fa, scope, loop)
