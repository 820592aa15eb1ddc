"""Data-parallel training in one file: is the script data-parallel, which
`DataLoader(...)` calls feed its own training loops, and where a value comes from.

* **Data-parallel script**: the file wraps a model in
  `DistributedDataParallel` / `FullyShardedDataParallel` (or calls
  `fully_shard`) or calls `torch.distributed.init_process_group`, in any
  import form.
* **Trained loader**: a `DataLoader(...)` call whose batches a training loop
  of the same file iterates: a `for` loop over the loader (by name, `self`
  attribute, or the call itself; see `loaders.loader_constructions`) whose
  body (nested loops included, nested defs not) calls `.backward()`,
  `manual_backward`, or an optimizer step, or calls a function or method of
  the same file whose own body does. A loop over something that is neither
  recognisably a loader nor a name bound in the file is not followed (the
  loader of a library's own loop is that library's business).
* **Flows from**: the expressions a value is built from, following
  assignments to the same names (or `self` attributes) in the file a few
  levels deep.

Everything is cached per file on the `FileModel`.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.names import last_name, node_word
from gpulint.model.values.loaders import (
    all_assignments,
    binds_ref,
    dataloader_calls,
    is_dataloader_call,
    loader_constructions,
)
from gpulint.model.index.walk import child_nodes, walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

# wrappers that make a model data-parallel across processes, and the call that
# joins a process group
DATA_PARALLEL_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
    }
)
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group"})

DISTRIBUTED_SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
        "torchdata.stateful_dataloader.sampler.StatefulDistributedSampler",
        "torchdata.stateful_dataloader.StatefulDistributedSampler",
    }
)

# a name in a test that switches between distributed and single-process code
DISTRIBUTED_TEST_RE = re.compile(
    r"distributed|world|rank|ddp|fsdp|is_initialized|multi_?gpu|multiprocessing|n_?gpus?\b|num_gpus|ngpus|"
    r"num_processes|num_replicas|\bgpus\b|parallel",
    re.I,
)


# what a test that turns on the distributed path names (not `rank`: `if rank == 0:` picks one process)
DISTRIBUTED_ON_RE = re.compile(
    r"distributed|world_?size|is_initialized|\bddp\b|fsdp|multi_?gpu|num_processes|num_replicas|n_?gpus?\b|num_gpus",
    re.I,
)


def turns_on_distributed(test: ast.AST) -> bool:
    """`if world_size > 1:`, `if dist.is_initialized():`, `if args.distributed:`:
    the path of a distributed run, which a training repository is built to
    take on every step, not an option or a rare path."""
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Gt, ast.GtE, ast.NotEq)):
            return False
        test = test.left
    if isinstance(test, ast.Call):
        test = test.func
    word = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else None
    return word is not None and DISTRIBUTED_ON_RE.search(word) is not None


def data_parallel_calls(fa: "FileModel") -> List[ast.Call]:
    """The file's data-parallel wrapper constructions and `init_process_group` calls."""

    def build():
        text = fa.text
        if not any(w in text for w in ("DistributedDataParallel", "init_process_group", "FullyShardedDataParallel",
                                       "fully_shard")):
            return []
        out = []
        for call in fa.index.nodes(ast.Call):
            q = fa.imports.qualname(call.func)  # type: ignore[attr-defined]
            if q in DATA_PARALLEL_WRAPPERS or q in INIT_PROCESS_GROUP:
                out.append(call)
        return out

    return fa.index.memoized("placement", "distributed.dp_calls", build)  # type: ignore[return-value]


def is_distributed_sampler_call(fa: "FileModel", node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and fa.imports.qualname(node.func) in DISTRIBUTED_SAMPLERS


def mentions_distributed(test: ast.AST) -> bool:
    """An `if` test (or any expression) that names something distributed:
    `args.distributed`, `world_size > 1`, `dist.is_initialized()`, `rank`."""
    for n in walk(test):
        text = node_word(n)
        if text and DISTRIBUTED_TEST_RE.search(text):
            return True
    return False


def conditions_in_scope(chain: Sequence[ast.AST]) -> Iterable[ast.AST]:
    """The tests of the `if` statements and conditional expressions that
    decide whether the last node of `chain` (ancestors + node) runs, up to
    its enclosing def (either branch)."""
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            return
        if isinstance(anc, ast.If) and child is not anc.test:
            yield anc.test
        elif isinstance(anc, ast.IfExp) and child is not anc.test:
            yield anc.test
        elif isinstance(anc, ast.comprehension) and child not in anc.ifs and anc.ifs:
            yield from anc.ifs


# ------------------------------------------------------------------ training loops
def _own_calls(body: Iterable[ast.AST]) -> Iterable[ast.Call]:
    """Calls in `body`, nested loops included, nested defs, lambdas and classes not."""
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(child_nodes(node))


def _is_step_call(fa: "FileModel", call: ast.Call, ancestors: Sequence[ast.AST]) -> bool:
    if fa.steps.is_backward_call(call):
        return True
    if isinstance(call.func, ast.Attribute) and call.func.attr == "manual_backward":
        return True
    return fa.steps.is_optimizer_step(call, ancestors)


def _training_functions(fa: "FileModel") -> Dict[str, List[ast.AST]]:
    """Functions and methods of the file whose own body takes a training step, by name."""

    def build():
        out: Dict[str, List[ast.AST]] = {}
        for fn in fa.index.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
            inner = fa.index.ancestors(fn) + [fn]
            if any(_is_step_call(fa, c, inner) for c in _own_calls(fn.body)):  # type: ignore[attr-defined]
                out.setdefault(fn.name, []).append(fn)  # type: ignore[attr-defined]
        return out

    return fa.index.memoized("placement", "distributed.training_functions", build)  # type: ignore[return-value]


def loop_trains(fa: "FileModel", loop: ast.AST) -> bool:
    """The loop's body takes a training step: itself (nested loops included)
    or through one call of a function or method of the same file."""
    inner = fa.index.ancestors(loop) + [loop]
    trainers = _training_functions(fa)
    cls = fa.index.enclosing_class(inner)
    for call in _own_calls(loop.body):  # type: ignore[attr-defined]
        if _is_step_call(fa, call, inner):
            return True
        func = call.func
        if isinstance(func, ast.Name) and func.id in trainers:
            if any(fa.index.enclosing_class(fa.index.ancestors(fn)) is None for fn in trainers[func.id]):
                return True
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in trainers
            and cls is not None
            and any(fa.index.enclosing_class(fa.index.ancestors(fn)) is cls for fn in trainers[func.attr])
        ):
            return True
    return False


def _bound_in_file(fa: "FileModel", ref: ast.AST) -> bool:
    return any(binds_ref(t, ref) for t, v, _ in all_assignments(fa) if v is not None)


def trained_loaders(fa: "FileModel") -> Dict[ast.Call, ast.AST]:
    """DataLoader(...) calls that a training loop of this file iterates, each
    with the first such loop."""

    def build():
        out: Dict[ast.Call, ast.AST] = {}
        if not dataloader_calls(fa):
            return out
        for loop in fa.index.nodes(ast.For, ast.AsyncFor):
            base = fa.loops.loader_of_loop(loop)
            if base is None:
                continue
            ancestors = fa.index.ancestors(loop)
            if not (
                is_dataloader_call(fa, base)
                or fa.loops.loop_iterates_loader(loop, ancestors)
                or (isinstance(base, (ast.Name, ast.Attribute)) and _bound_in_file(fa, base))
            ):
                continue
            calls = loader_constructions(fa, base, ancestors)
            if not calls or not loop_trains(fa, loop):
                continue
            for c in calls:
                out.setdefault(c, loop)
        return out

    return fa.index.memoized("placement", "distributed.trained_loaders", build)  # type: ignore[return-value]


def runs_many_epochs(fa: "FileModel", loop: ast.AST) -> bool:
    """The loop runs more than once per program: it sits in another loop of
    its function, or its function (or a function that calls it) is called
    from a loop of the file (`for epoch in ...: train_one_epoch(...)`), one
    or two calls deep."""
    return _in_repeated_code(fa, loop, 2)


def _in_repeated_code(fa: "FileModel", node: ast.AST, calls_left: int) -> bool:
    ancestors = fa.index.ancestors(node)
    fn = None
    for anc in reversed(ancestors):
        if isinstance(anc, FUNCS):
            fn = anc
            break
        if isinstance(anc, LOOPS) and anc is not node:
            return True
        if isinstance(anc, SCOPES):
            return False
    if fn is None or calls_left == 0:
        return False
    cls = fa.index.enclosing_class(fa.index.ancestors(fn))
    for call in fa.index.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        if cls is None:
            hit = isinstance(func, ast.Name) and func.id == fn.name  # type: ignore[attr-defined]
        else:
            hit = (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr == fn.name  # type: ignore[attr-defined]
            )
        if hit and _in_repeated_code(fa, call, calls_left - 1):
            return True
    return False


# ------------------------------------------------------------------ data flow
def _refs(expr: ast.AST) -> List[ast.AST]:
    """Names and `self.x` attributes read in `expr`."""
    out: List[ast.AST] = []
    for n in walk(expr):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in ("self", "cls"):
            out.append(n)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            out.append(n)
    return out


def _ref_key(ref: ast.AST) -> Optional[str]:
    if isinstance(ref, ast.Name):
        return ref.id
    if isinstance(ref, ast.Attribute) and isinstance(ref.value, ast.Name):
        return f"self.{ref.attr}"
    return None


def flows_from(fa: "FileModel", expr: Optional[ast.AST], depth: int = 4) -> List[ast.AST]:
    """`expr` and the values assigned (anywhere in the file) to the names and
    `self` attributes it reads, and to theirs, up to `depth` assignments deep."""
    if expr is None:
        return []
    out: List[ast.AST] = [expr]
    seen: Set[str] = set()
    todo = [expr]
    assignments = all_assignments(fa)
    for _ in range(depth):
        nxt: List[ast.AST] = []
        for e in todo:
            for ref in _refs(e):
                key = _ref_key(ref)
                if key is None or key in seen:
                    continue
                seen.add(key)
                for target, value, _stmt in assignments:
                    if value is not None and binds_ref(target, ref):
                        out.append(value)
                        nxt.append(value)
        if not nxt:
            break
        todo = nxt
    return out


def words_of(exprs: Iterable[ast.AST]) -> Iterable[str]:
    """Identifiers, attribute names, keyword names and strings in `exprs`."""
    for e in exprs:
        for n in walk(e):
            if isinstance(n, ast.Name):
                yield n.id
            elif isinstance(n, ast.Attribute):
                yield n.attr
            elif isinstance(n, ast.keyword) and n.arg:
                yield n.arg
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                yield n.value


def calls_in(exprs: Iterable[ast.AST]) -> Iterable[ast.Call]:
    for e in exprs:
        for n in walk(e):
            if isinstance(n, ast.Call):
                yield n


def local_class(fa: "FileModel", call: ast.Call) -> Optional[ast.ClassDef]:
    """The class of this file that `call` constructs, if any."""
    name = last_name(call.func)
    if name is None:
        return None
    for cls in fa.index.nodes(ast.ClassDef):
        if cls.name == name:  # type: ignore[attr-defined]
            return cls  # type: ignore[return-value]
    return None
