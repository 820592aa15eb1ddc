"""Loops: which loop is hot, which runs once per step, which fetches data.

Definitions (the ones the rule docs promise):

* **Hot loop**: the innermost `for`/`while` whose own body (not a nested loop,
  def, lambda or class) calls `.backward()`, an optimizer's `.step()`, a model
  forward, or iterates a DataLoader. A statement under a periodic guard
  (`if step % log_every == 0:`, or after `if i % n: continue`; also the rest
  of `step % n == 0 and ...` and `x if step % n == 0 else y`) runs rarely and
  is not hot; neither is one that runs at most once per loop: in a block that
  ends in `return` / `raise` (or in `break`, for the loop it leaves), in an
  `except` handler, in an `assert` message, or in the loop's `else`. A loop
  around a hot loop runs once per inner pass and is not hot (an epoch loop),
  unless it is a step loop itself: it iterates a DataLoader or its own body
  calls `.backward()` / an optimizer step (a GAN's batch loop around its
  critic loop). A small loop with no trigger of its own nested inside a hot
  loop (over a dict of metrics, say) runs every step and is hot.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Sequence, Set

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.index.order import loops_around, nested_loops, own_nodes, target_names
from gpulint.model.names import dotted, last_name
from gpulint.model.values.kinds import CRITERION, MODEL, OPTIMIZER_NAME_RE, TENSOR
from gpulint.model.values.narrowing import tests_parameter_tensor
from gpulint.model.values.values import Values
from gpulint.model.control.defaults import by_default
from gpulint.model.control.distributed import turns_on_distributed
from gpulint.model.control.steps import Steps
from gpulint.model.control.periodic import elapsed_test, held_test, is_periodic_continue, is_periodic_test
from gpulint.model.control.sweeps import is_literal_sweep
from gpulint.model.index.walk import child_nodes, walk


# methods of nn.Module that walk the module's own structure
_MODULE_STRUCTURE = frozenset((
    "modules", "children", "named_modules", "named_children", "parameters", "named_parameters", "buffers",
    "named_buffers",
))


def step_nodes(loop: ast.AST) -> List[ast.AST]:
    """The nodes of the loop's own body (`own_nodes`), and those of a loop in
    it that goes over the step's optimizers (`for opt, sched in
    zip(optimizers, schedulers): opt.step()`): stepping each optimizer is
    one part of the step around it, not a loop of steps; and those of a
    hand-written sweep in it (`for dataset in ['CelebA', 'RaFD']:`, StarGAN's
    `train_multi`), whose every pass each pass of the loop runs, as the
    project's `Hotness` reads it. One walk."""
    out: List[ast.AST] = []
    stack = [n for n in list(loop.body) + list(getattr(loop, "orelse", [])) if not isinstance(n, SCOPES)]  # type: ignore[attr-defined]
    while stack:
        n = stack.pop()
        if isinstance(n, LOOPS):
            if isinstance(n, (ast.For, ast.AsyncFor)) and over_optimizers(n):
                out.extend(own_nodes(n))
            elif isinstance(n, (ast.For, ast.AsyncFor)) and is_literal_sweep(n):
                stack.extend(c for c in list(n.body) + list(n.orelse) if not isinstance(c, SCOPES))
            continue
        out.append(n)
        for child in child_nodes(n):
            if not isinstance(child, SCOPES):
                stack.append(child)
    return out


def _step_nodes_of(index, loop: ast.AST) -> List[ast.AST]:
    """`step_nodes`, once per loop: three questions about each loop ask it."""
    return index.memoized("loops.step_nodes", loop, lambda: step_nodes(loop))


def over_optimizers(loop: ast.AST) -> bool:
    """`for opt in optimizers:`, `for opt, sched in zip(optimizers, schedulers):`:
    a loop variable named as an optimizer, over a collection (not a range)."""
    it = loop.iter  # type: ignore[attr-defined]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "enumerate"):
        return False
    return any(OPTIMIZER_NAME_RE.match(n) for n in target_names(loop.target))  # type: ignore[attr-defined]


def _steps_each_optimizer(loops: "Loops", loop: ast.AST) -> bool:
    """`for opt in self.optimizer: opt.step()`: the loop steps one step's
    optimizers (`step_nodes`), it is no loop of steps."""
    return isinstance(loop, (ast.For, ast.AsyncFor)) and over_optimizers(loop) and not loops.loop_iterates_loader(
        loop, loops.index.ancestors(loop))


class Loops:
    """The loops of one file."""

    def __init__(self, values: Values, steps: Steps) -> None:
        self.values = values
        self.index = values.index
        self.steps = steps
        self._loop_hot: Dict[ast.AST, bool] = {}
        self._loop_triggers: Dict[ast.AST, bool] = {}

    def loop_iterates_loader(self, loop: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        base, _ = self.values.unwrap(loop.iter)
        info = self.values.info_for(ancestors)
        return self.values.is_loader(base, info.kinds)

    def iterates_model_structure(self, loop: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """`for i, block in enumerate(model.transformer.h):`, `for m in
        model.modules():`: a loop over a model's own layers or parameters
        (conversion, quantization, layer-by-layer offloading), not over
        data or steps."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        it = loop.iter
        while isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in (
            "enumerate", "reversed", "list", "tuple", "sorted"
        ) and it.args:
            it = it.args[0]
        node = it
        while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute) and node.func.attr in _MODULE_STRUCTURE:
                    return True
                node = node.func
            else:
                node = node.value
        if node is it or not isinstance(node, ast.Name):
            return False  # a bare name: what it holds is not known here
        return self.values.kind_at(node, ancestors) == MODEL

    def loop_iterates_data(self, loop: ast.AST) -> bool:
        """`for batch in batches:` / `for i, b in enumerate(tqdm(dataset)):`: a
        loop over stored data, not over `range(...)` (decoding steps) or a tensor."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or iterates_mapping_keys(loop):
            return False
        base = self.loader_of_loop(loop)
        while isinstance(base, ast.Call) and (last_name(base.func) or "") == "zip" and base.args:
            base = base.args[0]
        if not isinstance(base, (ast.Name, ast.Attribute, ast.Subscript)):
            return False
        return self.values.kind(base, self.index.ancestors(loop)) != TENSOR

    def loop_fetches_data(self, loop: ast.AST) -> bool:
        """A `for` loop (`for _ in range(steps):`) whose every pass takes fresh
        data and runs the model on it: its own body (not a nested loop, and not
        under a periodic `if`) draws `buffer.sample(...)`, `next(<iterator>)` or
        `data[i]` / `data[i * bs:(i + 1) * bs]` indexed by the loop variable, and
        that value, directly or through names bound from it in the loop, reaches
        the arguments of a model forward or a criterion, or the receiver of a
        `.backward()`. Not a fetch: `.sample()` of a model or a tensor,
        `next(model.parameters())` (only `next(it)` / `next(iter(data))`).
        The same inputs timed over and over (the benchmark pattern) take nothing
        fresh."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        cache = self.index.memo("loop_fetches_data")
        found = cache.get(loop)
        if found is None:
            found = self._loop_fetches_data(loop)
            cache[loop] = found
        return found  # type: ignore[return-value]

    def _loop_fetches_data(self, loop: ast.AST) -> bool:
        anc = self.index.ancestors(loop) + [loop]
        body: List[ast.AST] = []
        stack = list(loop.body)  # type: ignore[attr-defined]
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            body.append(n)
            stack.extend(child_nodes(n))
        bindings = []
        for n in body:
            if isinstance(n, ast.Assign):
                bindings.append((n.targets, n.value))
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                bindings.append(([n.target], n.value))
            elif isinstance(n, (ast.For, ast.AsyncFor)):
                bindings.append(([n.target], n.iter))
        # `out[i]` of an `out` computed in the loop is not stored data
        bound_here = {dotted(n) for targets, _ in bindings for t in targets for n in walk(t)} - {None}
        loop_vars = set(target_names(loop.target))  # type: ignore[attr-defined]
        fetches: Set[int] = set()
        for node in own_nodes(loop):
            if (
                self._is_fetch(node, loop_vars, bound_here, anc)
                and self.hot_loop(node, self.index.ancestors(node), is_hot=lambda lp: lp is loop) is loop
            ):
                fetches.add(id(node))
        if not fetches:
            return False
        fresh: Set[str] = set()

        def mentions(expr: Optional[ast.AST]) -> bool:
            if expr is None:
                return False
            for n in walk(expr):
                if id(n) in fetches:
                    return True
                if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in fresh:
                    return True
            return False

        changed = True
        while changed:  # the names bound from fresh data, to a fixed point
            changed = False
            for targets, value in bindings:
                if not mentions(value):
                    continue
                for t in targets:
                    for n in walk(t):
                        key = dotted(n) if isinstance(n, (ast.Name, ast.Attribute)) else None
                        if key is not None and key not in fresh:
                            fresh.add(key)
                            changed = True
        for n in body:
            if not isinstance(n, ast.Call):
                continue
            if self.steps.is_backward_call(n) and mentions(n.func.value):  # type: ignore[attr-defined]
                return True
            is_criterion = isinstance(n.func, (ast.Name, ast.Attribute)) and self.values.kind(n.func, anc) == CRITERION
            if (is_criterion or self.steps.is_model_call(n, anc)) and any(
                mentions(a) for a in list(n.args) + [kw.value for kw in n.keywords]
            ):
                return True
        return False

    def _is_fetch(
        self, node: ast.AST, loop_vars: Set[str], bound_here: Set[Optional[str]], anc: Sequence[ast.AST]
    ) -> bool:
        """`x.sample(...)`, `next(it)`, `data[i]` with `i` a loop variable (see `loop_fetches_data`)."""
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "sample":
                return self.values.kind(func.value, anc) not in (MODEL, TENSOR)
            if isinstance(func, ast.Name) and func.id == "next" and node.args:
                it = node.args[0]
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "iter" and it.args:
                    it = it.args[0]
                return isinstance(it, (ast.Name, ast.Attribute, ast.Subscript)) and self.values.kind(it, anc) != MODEL
            return False
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if dotted(node.value) in bound_here:
                return False
            return any(isinstance(n, ast.Name) and n.id in loop_vars for n in walk(node.slice))
        return False

    def loader_of_loop(self, loop: ast.AST) -> Optional[ast.AST]:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return None
        base, _ = self.values.unwrap(loop.iter)
        return base

    def after_periodic_continue(self, parent: ast.AST, child: ast.AST) -> bool:
        """An earlier statement of `child`'s block is `if step % k: continue`
        (so `child` runs only on some steps)."""
        where = self.index.slot(child)
        if where is None or where[0] is not parent:
            return False
        firsts = self.index.memo("loops.periodic_continue")
        key = (parent, where[1])
        first = firsts.get(key)  # type: ignore[call-overload]
        if first is None:
            block = getattr(parent, where[1])
            first = firsts[key] = next(  # type: ignore[index]
                (i for i, stmt in enumerate(block) if is_periodic_continue(stmt)), len(block)
            )
        return first < where[2]  # type: ignore[operator]

    def loop_has_triggers(self, loop: ast.AST) -> bool:
        cached = self._loop_triggers.get(loop)
        if cached is None:
            ancestors = self.index.ancestors(loop) + [loop]
            cached = self.loop_iterates_loader(loop, ancestors[:-1])
            if not cached:
                for node in _step_nodes_of(self.index, loop):
                    if isinstance(node, ast.Call) and (
                        self.steps.is_backward_call(node)
                        or self.steps.is_optimizer_step(node, ancestors)
                        or self.steps.is_model_call(node, ancestors)
                        or self.steps.helper_steps(node)
                    ):
                        cached = True
                        break
            self._loop_triggers[loop] = cached
        return cached

    def is_hot_loop(self, loop: ast.AST) -> bool:
        cached = self._loop_hot.get(loop)
        if cached is None:
            cached = self.loop_has_triggers(loop) and (
                not self.contains_hot_loop(loop) or self.is_step_loop(loop)
            ) and not is_literal_sweep(loop, self.index, self.index.ancestors(loop)) and not _steps_each_optimizer(self, loop)
            self._loop_hot[loop] = cached
        return cached

    def periodic_block(self, node: ast.If, ancestors: Sequence[ast.AST]) -> bool:
        """`if step % 1000 == 0:` (or a name holding such a test) around
        work that runs every n-th pass: logging, saving, sampling previews.
        Not the `if (i + 1) % accum == 0:` around an optimizer step, which
        ends every training step."""
        return self._periodic_test(node.test) and not self._if_takes_step(node, ancestors)

    def _if_takes_step(self, node: ast.If, ancestors: Sequence[ast.AST]) -> bool:
        """`_block_takes_step` of an `if`'s body, once per `if`."""
        return self.index.memoized("loops.if_takes_step", node, lambda: self._block_takes_step(node.body, ancestors))

    def _block_takes_step(self, body: List[ast.AST], ancestors: Sequence[ast.AST]) -> bool:
        """The block calls an optimizer step: `if (i + 1) % accum == 0:` around
        `optimizer.step()` marks the end of each training step, not a logging
        interval, so what it does runs every step."""
        stack = list(body)
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            if isinstance(n, ast.Call) and (self.steps.is_optimizer_step(n, ancestors) or self.steps.helper_steps(n)):
                return True
            stack.extend(child_nodes(n))
        return False

    def is_training_step_loop(self, loop: ast.AST) -> bool:
        """The loop's own body calls `.backward()` (also `accelerator.backward`,
        `fabric.backward`, `manual_backward`) or an optimizer step."""
        return self.index.memoized("loops.training_step_loop", loop, lambda: self._is_training_step_loop(loop))

    def _is_training_step_loop(self, loop: ast.AST) -> bool:
        inner = self.index.ancestors(loop) + [loop]
        for n in _step_nodes_of(self.index, loop):
            if not isinstance(n, ast.Call):
                continue
            if self.steps.is_backward_call(n) or self.steps.is_optimizer_step(n, inner):
                return True
            if isinstance(n.func, ast.Attribute) and n.func.attr == "manual_backward":
                return True
            if self.steps.helper_steps(n):
                return True
        return False

    def is_step_loop(self, loop: ast.AST) -> bool:
        """A loop that runs once per training/evaluation step even when a hot
        loop is nested in it: it iterates a DataLoader, or its own body calls
        `.backward()` or an optimizer step (a GAN's batch loop around its
        critic loop, a batch loop around gradient-accumulation micro-steps).
        An epoch loop does neither itself."""
        def compute() -> bool:
            ancestors = self.index.ancestors(loop)
            inner = ancestors + [loop]
            return self.loop_iterates_loader(loop, ancestors) or any(
                isinstance(n, ast.Call) and (
                    self.steps.is_backward_call(n) or self.steps.is_optimizer_step(n, inner) or self.steps.helper_steps(n)
                )
                for n in _step_nodes_of(self.index, loop)
            )

        return self.index.memoized("loops.step_loop", loop, compute)

    def contains_hot_loop(self, loop: ast.AST) -> bool:
        facts = self.steps.facts
        return self.index.memoized(
            "loops.contains_hot_loop", loop,
            lambda: any(self.is_hot_loop(inner) for inner in nested_loops(loop))
            or any(isinstance(n, ast.Call) and facts.drives(n) for n in own_nodes(loop)),
        )

    def is_training_loop(self, loop: ast.AST) -> bool:
        return self.index.memoized(
            "loops.training_loop", loop,
            lambda: any(isinstance(n, ast.Call) and self.steps.is_backward_call(n) for n in own_nodes(loop)),
        )

    def hot_loop(
        self, node: ast.AST, ancestors: Sequence[ast.AST], is_hot: Optional[Callable[[ast.AST], bool]] = None
    ) -> Optional[ast.AST]:
        """The hot loop `node` runs in every iteration of, or None.

        `ancestors` runs from the module down to node's parent. `is_hot`
        replaces `is_hot_loop` as the test of which loops count (with
        `lambda loop: True`: the innermost loop of the function whose every
        pass runs `node`, under the same exemptions)."""
        found = self._every_pass(node, ancestors, is_hot or self.is_hot_loop)
        return found if isinstance(found, LOOPS) else None

    def every_step(self, node: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        """The hot loop `node` runs in every iteration of (`hot_loop`), or the
        function it sits in when every call of that function runs it and the
        function runs every step of a hot loop elsewhere (in this file or
        another, through calls: `CallFacts.every_step`)."""
        found = self._every_pass(node, ancestors, self.is_hot_loop)
        if isinstance(found, LOOPS):
            return found
        return found if isinstance(found, FUNCS) and self.steps.facts.every_step(found) else None

    def region(
        self, node: ast.AST, ancestors: Sequence[ast.AST], is_hot: Optional[Callable[[ast.AST], bool]] = None,
        contains_hot: Optional[Callable[[ast.AST], bool]] = None,
        takes_step: Optional[Callable[[ast.If], bool]] = None,
    ) -> Optional[ast.AST]:
        """Where `node` runs every time: the hot loop around it, else its
        function (each call of the function runs it), else None (it runs
        only on some passes or calls: under a periodic guard, in an error
        handler, in a block that leaves, ...). `is_hot`, `contains_hot` and
        `takes_step` replace `is_hot_loop`, `contains_hot_loop` and the test
        of a periodic `if` that ends a step (the project's call graph reads
        every call of a file with cheaper tests)."""
        return self._every_pass(node, ancestors, is_hot or self.is_hot_loop, contains_hot, takes_step)

    def _periodic_test(self, test: ast.AST) -> bool:
        """`is_periodic_test`, once per test: every call under an `if` asks.
        A name bound just before the `if` (eight statements back at most), in
        the same block, is read as the test it holds (`should_validate = step % interval == 0 or ...` then
        `if should_validate:`)."""
        return self.index.memoized("loops.periodic_test", test, lambda: is_periodic_test(held_test(self.index, test))
                                   or elapsed_test(self.index, self.values.imports, test))

    def _every_pass(
        self, node: ast.AST, ancestors: Sequence[ast.AST], is_hot: Callable[[ast.AST], bool],
        contains_hot: Optional[Callable[[ast.AST], bool]] = None,
        takes_step: Optional[Callable[[ast.If], bool]] = None,
    ) -> Optional[ast.AST]:
        """The innermost hot loop (by `is_hot`) whose every pass runs `node`;
        else the enclosing def, lambda or class when every run of its body
        runs `node` (the module, outside any); None when `node` runs only on
        some passes."""
        chain = list(ancestors) + [node]
        periodic = self._periodic_test
        # set when a block ending in `break` was passed: it runs at most once
        # per pass of the innermost loop around it
        once_per_loop = False
        for i in range(len(chain) - 2, -1, -1):
            anc = chain[i]
            child = chain[i + 1]
            if isinstance(anc, SCOPES):
                if _after_guard_before_raise(self.index, anc, child):
                    return None
                return None if once_per_loop else anc
            if (
                isinstance(anc, ast.If)
                and periodic(anc.test)
                and self.index.in_block(child, anc)
                and not (takes_step(anc) if takes_step is not None else self._if_takes_step(anc, chain[: i + 1]))
            ):
                return None
            if isinstance(anc, ast.If) and child in anc.body and (
                    first_passes_only(anc.test, chain[:i]) or fills_once(anc, chain[:i])):
                return None  # `if plots and batch_i < 3:`, `if ema is None:` run on the first passes only
            if isinstance(anc, ast.IfExp) and child is anc.body and periodic(anc.test):
                return None  # `loss.item() if step % 10 == 0 else None`
            if isinstance(anc, ast.BoolOp) and isinstance(anc.op, ast.And):
                # `step % 10 == 0 and loss.item() > x`: evaluated only on periodic steps
                earlier = anc.values[: next(k for k, v in enumerate(anc.values) if v is child)]
                if any(periodic(v) for v in earlier):
                    return None
            if isinstance(anc, ast.ExceptHandler):
                return None  # error handling: runs when something failed, not every step
            if isinstance(anc, ast.Assert) and child is anc.msg:
                return None  # the message is built only when the assertion fails
            body = self.index.block_of(anc, child)
            if body is not None and self.after_periodic_continue(anc, child):
                return None
            if body is not None and body and (isinstance(body[-1], (ast.Return, ast.Raise)) or exits(body[-1])) and not (
                isinstance(body[-1], ast.Return) and isinstance(anc, ast.If) and child in anc.body
                and _taken_path(self, anc.test, next((a for a in reversed(chain[:i]) if isinstance(a, FUNCS)), None))
                and not loops_around(chain[: i + 1])
            ) and not (isinstance(anc, (ast.With, ast.AsyncWith, ast.Try)) and body is anc.body
                       and not loops_around(chain[: i + 1])):
                # (a `with` block, or a `try` body, that ends the function with its return is the function's own
                # path, which every call takes: `with torch.no_grad(): ...; return acc`)
                # a block that leaves the function runs once, except the distributed path of a
                # helper's own flow (`if world_size > 1: ... return x.item()`), which a
                # distributed run takes on every call, the path a tensor takes
                # (`if torch.is_tensor(x): return x.item()`), on every call with one, and
                # the path the function's defaults take (`if loss_type == "ce": ... return`)
                return None
            if body is not None and body and isinstance(body[-1], ast.Break):
                once_per_loop = True
            if isinstance(anc, LOOPS):
                # the loop's header (iter/test) and its `else` run once per pass of the outer code
                if not self.index.in_block(child, anc):
                    if not (isinstance(anc, ast.While) and child is anc.test):
                        continue
                if is_hot(anc):
                    return None if once_per_loop else anc
                if (contains_hot or self.contains_hot_loop)(anc):
                    return None
                once_per_loop = False
        return None if once_per_loop else chain[0]


# calls that end the process: a block ending with one runs once
_EXITS = frozenset({"sys.exit", "os._exit", "exit", "quit"})


def exits(stmt: ast.AST) -> bool:
    """`sys.exit(1)`, `exit()`, `os._exit(0)`: the statement ends the process
    (DETR-style loops print the losses and stop when the loss is not finite)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    if isinstance(func, ast.Name):
        return func.id in _EXITS
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" in _EXITS


def _after_guard_before_raise(index, func: ast.AST, stmt: ast.AST) -> bool:
    """`stmt` (a statement of `func`'s own body) comes after a guard
    clause that returns (`if torch.isfinite(t).all(): return`), and the
    body ends by raising: it runs only on the error path, once."""
    where = index.slot(stmt)
    if where is None or where[0] is not func or where[1] != "body":
        return False
    body = func.body  # type: ignore[attr-defined]
    if not isinstance(body[-1], ast.Raise):
        return False
    return any(
        isinstance(b, ast.If) and b.body and isinstance(b.body[-1], ast.Return) for b in body[: where[2]]
    )


def counts_passes(loop: ast.AST, name: str) -> bool:
    """`name` is the counter of `for name in range(...)` or the index of `for
    name, x in enumerate(...)`, or a name the loop's body adds a positive
    number to on every pass (`global_step += 1` among its statements, no
    `continue` before it): a value it holds on one pass only."""
    if _advanced_every_pass(loop, name):
        return True
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it, target = loop.iter, loop.target  # type: ignore[attr-defined]
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
        return False
    if it.func.id == "range":
        return isinstance(target, ast.Name) and target.id == name and len(it.args) == 1
    if it.func.id == "enumerate" and len(it.args) == 1 and not it.keywords:
        return (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)
                and target.elts[0].id == name)
    return False


def _advanced_every_pass(loop: ast.AST, name: str) -> bool:
    """`name += k` (k a positive int) is a statement of the loop's own body,
    and no statement before it can skip it (`continue`)."""
    for stmt in getattr(loop, "body", ()):
        if (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name)
                and stmt.target.id == name and isinstance(stmt.value, ast.Constant)
                and type(stmt.value.value) is int and stmt.value.value > 0):
            return True
        if any(isinstance(n, ast.Continue) for n in walk(stmt)):
            return False
    return False


# a guard that lets only the first few passes of a loop through: `if plots and batch_i < 3:`
_FIRST_PASSES_MAX = 16


def first_passes_only(test: ast.AST, outer: Sequence[ast.AST]) -> bool:
    """`batch_i < 3` (or `... and batch_i < 3`, `3 > batch_i`, `i <= 2`) where
    `batch_i` counts the passes of a loop around it: the block runs on the
    first few passes (plots of the first batches), not on every one; and
    `batch_cnt == 1` (`... and epoch == 0`), or the last pass (`i ==
    len(loader) - 1`, `i_update == num_update - 1`, a bound the loop never
    rebinds): on one pass only."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(first_passes_only(v, outer) for v in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    most = _FIRST_PASSES_MAX
    if isinstance(op, (ast.Gt, ast.GtE)):
        left, right = right, left
    elif isinstance(op, ast.Eq):
        if isinstance(left, ast.Constant):
            left, right = right, left
        most = None  # (any one pass)
    elif not isinstance(op, (ast.Lt, ast.LtE)):
        return False
    if most is None and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add) \
            and isinstance(left.right, ast.Constant) and type(left.right.value) is int:
        left = left.left  # `i + 1 == len(loader)`
    if not isinstance(left, ast.Name):
        return False
    bound = None  # `i == len(loader) - 1`, `i_update == num_update - 1`: the last pass
    if not (isinstance(right, ast.Constant) and type(right.value) is int
            and 0 <= right.value and (most is None or right.value <= most)):
        if most is not None or not _pass_invariant_form(right, left.id):
            return False
        bound = right
    for anc in reversed(outer):
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, LOOPS) and counts_passes(anc, left.id):
            # the batch loop's counter bounds the image loop inside it too
            return bound is None or not _bound_in(anc, bound)
        if most is None and isinstance(anc, LOOPS):
            return False  # `epoch == 0` in the batch loop: every batch of the first epoch
    return False


def _pass_invariant_form(e: ast.AST, counter: str) -> bool:
    """`e` is made of names, attributes, numbers, arithmetic and `len(...)`
    (`len(loader) - 1`, `num_update - 1`, `self.n_steps`), without the counter."""
    for n in walk(e):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1):
                return False
        elif isinstance(n, ast.Name):
            if n.id == counter:
                return False
        elif not isinstance(n, (ast.Attribute, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                                ast.expr_context)):
            return False
    return True


def _bound_in(loop: ast.AST, e: ast.AST) -> bool:
    """A name of `e` is bound in the loop (its target or its body): the bound
    may change from pass to pass."""
    names = {n.id for n in walk(e) if isinstance(n, ast.Name)}
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names
               for n in walk(loop) if isinstance(n, ast.Name))


def fills_once(guard: ast.If, outer: Sequence[ast.AST]) -> bool:
    """`if ema is None: ema = loss.item()` in a loop: the body binds the name
    the test finds None, and nothing in the loop sets it back to None, so
    the body runs on the first pass only (once per run of the loop: a
    running average reset before each epoch's loop), not on every pass.
    The `else` branch runs on the others."""
    test = guard.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Name) and _is_none(test.comparators[0])):
        return False
    name = test.left.id
    if not any(isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and not _is_none(stmt.value)
               and any(isinstance(t, ast.Name) and t.id == name for t in _targets(stmt)) for stmt in guard.body):
        return False
    for anc in reversed(outer):
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, LOOPS):
            # the name starts each pass as it was left: not the loop's variable, never reset to None
            for n in walk(anc):
                if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and any(
                        isinstance(t, ast.Name) and t.id == name for t in walk(n.target)):
                    return False
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and (n.value is None or _is_none(n.value)) and any(
                        isinstance(t, ast.Name) and t.id == name for t in _targets(n)):
                    return False
                if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
                    return False
            return True
    return False


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _targets(stmt: ast.AST) -> List[ast.AST]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]


def iterates_mapping_keys(loop: ast.AST) -> bool:
    """`for split in data: data[split] = encoder(data[split])`: the loop's
    variable is the key its own body looks the iterated container up with,
    so it walks the few named entries of a mapping (the train/val/test
    splits, a dict of metrics), not batches of data. A list is never indexed
    by its own elements."""
    target, it = loop.target, loop.iter  # type: ignore[attr-defined]
    if not isinstance(target, ast.Name) or not isinstance(it, (ast.Name, ast.Attribute)):
        return False
    key, container = target.id, ast.dump(it)
    for stmt in loop.body:  # type: ignore[attr-defined]
        for n in walk(stmt):
            if (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Name) and n.slice.id == key
                    and ast.dump(n.value) == container):
                return True
    return False


def iterates_names(loop: ast.AST) -> bool:
    """`for k in batch2model_input: if k == "image_only_indicator": ...`: the
    loop's variable is compared with a string literal in its body, so it
    walks a few named entries (the inputs a sampler's model takes), not
    batches or steps."""
    target = getattr(loop, "target", None)
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(target, ast.Name):
        return False
    for stmt in loop.body:  # type: ignore[attr-defined]
        for n in walk(stmt):
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Eq, ast.NotEq, ast.In)):
                sides = [n.left, n.comparators[0]]
                if any(isinstance(a, ast.Name) and a.id == target.id for a in sides) and any(
                        isinstance(b, ast.Constant) and isinstance(b.value, str)
                        or isinstance(b, (ast.List, ast.Tuple, ast.Set)) and b.elts
                        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in b.elts)
                        for b in sides):
                    return True
    return False


def _taken_path(loops: "Loops", test: ast.AST, func: Optional[ast.AST]) -> bool:
    """An `if` test of `func` whose block a caller takes on every call:
    a distributed switch, a test that the value is a tensor, or a test that
    holds when the parameters keep their defaults (`defaults.by_default`)."""
    return (turns_on_distributed(test) or tests_parameter_tensor(test, func, loops.values.imports)
            or by_default(test, func, loops.index) is True)
