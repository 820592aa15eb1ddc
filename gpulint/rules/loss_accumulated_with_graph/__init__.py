from __future__ import annotations

import ast
from typing import List, Set

from gpulint.model.index.nodes import SCOPES
from gpulint.rules.loss_accumulated_with_graph.gradflow import (
    grad_flow,
    mentions,
    training_loop_of,
    unconditional_statements,
)
from gpulint.edits import insert_at
from gpulint.rule import MEMORY, SAFE, UNSAFE, Bench, Example, Rule
from gpulint.model.index.walk import child_nodes, walk

SIMPLE_VALUES = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


class LossAccumulatedWithGraph(Rule):
    """
    ## What it does
    Flags a value that still carries its autograd graph (a loss or model
    output computed in a training loop, or something derived from them by
    arithmetic) being appended to a list (`losses.append(loss)`) or summed
    (`total_loss += loss`, `total = total + loss`) into an accumulator that
    lives across iterations of the training loop, i.e. one that is not
    assigned afresh in the loop body. A training loop is a loop that calls
    `.backward()`.

    Not flagged: values after `.detach()`, `.item()`, `.data`, `float()` or
    `int()`; values computed under `torch.no_grad()`/`inference_mode()`;
    accumulation under `no_grad`; an accumulator that is `.backward()`ed (or
    passed to `torch.autograd.grad`) later in the same function, which is
    gradient accumulation; an accumulator that is assigned afresh or cleared
    unconditionally in every iteration (so nothing outlives an iteration), or
    earlier in a block around the accumulation (`if step % 500 == 0:
    samples = []`, then `samples.append(pipe(prompt))` in that block: each
    run of the block starts the list again);
    loops that never call `.backward()` (validation loops). A reset under a
    condition (`if step % 100 == 0: running_loss = 0`) still lets graphs pile
    up between resets, so that is flagged; the exception is the gradient
    accumulation window: when a loss is backwarded on every iteration and
    the accumulator is reset in the same `if` block that steps the
    optimizer, it only links the already freed graphs of one optimizer
    step's micro-batches, which costs nothing worth reporting.

    Test files are skipped: a test's loop runs a few steps once per case,
    and the graphs it keeps are freed with it.

    ## Why is this bad?
    A tensor that requires grad holds a reference to the graph that produced
    it. Appending it to a list, or adding it into a running total (the total
    then becomes a new graph node that links every iteration's graph into one
    chain), keeps those graphs alive for as long as the accumulator lives:
    the autograd nodes of every step, and any saved activations that a
    backward pass has not freed (outputs that were not part of the
    backwarded loss, `retain_graph=True`), pile up step after step until the
    epoch ends or memory runs out, and every later operation on the total
    (dividing it for logging, say) is recorded by autograd too. The PyTorch
    FAQ's answer to "my model reports cuda runtime error(2): out of memory"
    opens with exactly this `total_loss += loss` example. For logging, a
    detached value (or a Python number) is all that is needed.

    ## Fix safety
    Unsafe when the value is one element unpacked from a helper's result
    (`loss, surrogate = particle(...)`): only its name and the other element
    say it is a tensor, and `.detach()` on a Python number raises (Pyro's
    `Trace_ELBO`, whose `loss_particle` is a float built with `.item()`).
    Otherwise safe: the fix appends `.detach()` to the accumulated value, which keeps
    the same numbers (and device, so it adds no host synchronization, unlike
    `.item()`) but drops the graph. Accumulators that are differentiated
    later are not flagged, so nothing that needs the graph loses it.

    ## References
    - [PyTorch FAQ: Don't accumulate history across your training loop](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "GPU301"
    name = "loss-accumulated-with-graph"
    # a test's loop runs a few steps once per case: the graphs it keeps are
    # freed with it (torchtitan's `test_numerics.py`, the eighteenth corpus)
    message = "A tensor that carries its autograd graph is accumulated across training iterations; accumulate `.detach()` or `.item()`"
    _detail = (
        "`{value}` is accumulated into `{acc}` with its autograd graph, keeping every iteration's graph alive;"
        " accumulate `{value}.detach()` or `.item()`"
    )
    fix_safety = SAFE
    needles = ("backward",)
    examples = (
        Example(
            bad="""
            losses = []
            total_loss = 0.0
            for inputs, targets in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(inputs), targets)
                loss.backward()
                optimizer.step()
                losses.append(loss)
                total_loss += loss
            print(f"mean loss {total_loss / len(train_loader):.4f}")
            """,
            good="""
            losses = []
            total_loss = 0.0
            for inputs, targets in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(inputs), targets)
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
                total_loss += loss.detach()
            print(f"mean loss {total_loss / len(train_loader):.4f}")
            """,
        ),
        Example(
            title="A value derived from the loss",
            bad="""
            running_loss = 0.0
            for step, (images, labels) in enumerate(loader):
                outputs = model(images.cuda())
                loss = criterion(outputs, labels.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running_loss = running_loss + loss * images.size(0)
            """,
            good="""
            running_loss = 0.0
            for step, (images, labels) in enumerate(loader):
                outputs = model(images.cuda())
                loss = criterion(outputs, labels.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running_loss = running_loss + (loss * images.size(0)).detach()
            """,
        ),
    )

    # ------------------------------------------------------------ visitors
    bench = Bench(
        setup="""
        import torch
        from torch import nn
        import torch.nn.functional as F

        # an MLP classifier (25M parameters) trained on 4096-sample batches with 1000 classes
        batch, features, hidden, classes = (16, 32, 64, 10) if SMALL else (4096, 1024, 4096, 1000)

        model = nn.Sequential(
            nn.Linear(features, hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.GELU(),
            nn.Linear(hidden, classes),
        ).to(DEVICE)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        train_batches = [
            (torch.randn(batch, features, device=DEVICE), torch.randint(0, classes, (batch,), device=DEVICE))
            for _ in range(8)
        ]
        """,
        bad="""
        def run(steps):
            # one epoch of `steps` steps that logs the mean loss and the mean entropy of the predictions
            total_loss = 0.0
            total_entropy = 0.0
            for step in range(steps):
                inputs, targets = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                logits = model(inputs)
                loss = F.cross_entropy(logits, targets)
                loss.backward()
                optimizer.step()
                probs = logits.softmax(dim=1)
                entropy = -(probs * probs.clamp_min(1e-12).log()).sum(dim=1).mean()
                total_loss += loss
                total_entropy += entropy
            return {"loss": total_loss / steps, "entropy": total_entropy / steps}
        """,
        good="""
        def run(steps):
            # one epoch of `steps` steps that logs the mean loss and the mean entropy of the predictions
            total_loss = 0.0
            total_entropy = 0.0
            for step in range(steps):
                inputs, targets = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                logits = model(inputs)
                loss = F.cross_entropy(logits, targets)
                loss.backward()
                optimizer.step()
                probs = logits.softmax(dim=1)
                entropy = -(probs * probs.clamp_min(1e-12).log()).sum(dim=1).mean()
                total_loss += loss.detach()
                total_entropy += entropy.detach()
            return {"loss": total_loss / steps, "entropy": total_entropy / steps}
        """,
        metric=MEMORY,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "MLP training epoch (4096x1024 batches, 1000 classes) logging mean loss and prediction entropy with their"
            " graphs: the entropy's softmax/log/mul nodes were never backwarded, so each step keeps ~3 batch x classes"
            " tensors alive until the epoch ends; .detach() keeps the numbers (allclose, tolerance only for GPU"
            " nondeterminism)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "append"):
            return
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            return
        parent = ctx.ancestors[-1] if ctx.ancestors else None
        if not isinstance(parent, ast.Expr):
            return  # `x = lst.append(v)` is not the idiom
        self._check(ctx, ctx.ancestors[:-1], parent, func.value, node.args[0])

    def visit_AugAssign(self, node: ast.AugAssign, ctx) -> None:
        if isinstance(node.op, ast.Add):
            self._check(ctx, ctx.ancestors, node, node.target, node.value)

    def visit_Assign(self, node: ast.Assign, ctx) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, ast.BinOp) or not isinstance(node.value.op, ast.Add):
            return
        target = node.targets[0]
        key = _key(target)
        left, right = node.value.left, node.value.right
        if _key(left) == key:
            self._check(ctx, ctx.ancestors, node, target, right)
        elif _key(right) == key:
            self._check(ctx, ctx.ancestors, node, target, left)

    # --------------------------------------------------------------- check
    def _check(self, ctx, ancestors, stmt: ast.stmt, acc: ast.AST, value: ast.AST) -> None:
        """`stmt` accumulates `value` into `acc`; `ancestors` are the statement's."""
        if not isinstance(acc, (ast.Name, ast.Attribute, ast.Subscript)):
            return
        fa = ctx.analysis
        loop = training_loop_of(fa, ancestors, stmt)
        if loop is None:
            return
        if fa.contexts.grad_disabled(ancestors):
            return
        acc_key = _key(acc)
        if _key(value) == acc_key:
            return
        gf = grad_flow(fa)
        pos = (stmt.lineno, stmt.col_offset)
        if not gf.carries_grad(value, loop, pos):
            return
        if self._reset_each_iteration(loop, acc, stmt, ancestors):
            return
        if _reset_at_optimizer_step(fa, loop, acc, stmt):
            return
        scope = fa.index.enclosing_scope(ancestors)
        if _differentiated_later(fa, scope if scope is not None else ctx.tree, acc):
            return
        src = ctx.source
        start, end = src.node_span(value)
        if isinstance(value, SIMPLE_VALUES):
            edits = [insert_at(end, ".detach()")]
        else:
            edits = [insert_at(start, "("), insert_at(end, ").detach()")]
        # `.detach()` exists on tensors only. A value unpacked from a helper's
        # result may be a Python number (Pyro's `loss_particle`, built with
        # `.item()`, next to the surrogate loss that is backwarded): there the
        # fix could raise, so it is unsafe
        guess = gf.unpacked_from_call(value, loop, pos)
        fix = self.make_fix("Accumulate `.detach()`", edits, UNSAFE if guess else SAFE)
        shown = src.node_text(value)
        if not isinstance(value, SIMPLE_VALUES):
            shown = f"({shown})"
        if len(shown) > 40 or "\n" in shown:
            shown = "(...)"
        self.report(ctx, stmt, message=self._detail.format(value=shown, acc=src.node_text(acc)), fix=fix)

    @staticmethod
    def _reset_each_iteration(loop: ast.AST, acc: ast.AST, stmt: ast.stmt, ancestors=()) -> bool:
        """Is the accumulator assigned afresh (or cleared) on every iteration,
        before or after it is accumulated into? Then nothing outlives an
        iteration. Updates computed from the accumulator itself are not resets.
        So is one assigned afresh earlier in a block around the accumulation,
        inside the loop (`if step % 500 == 0: samples = []`, then `for p in
        prompts: samples.append(pipe(p))`): each run of the block starts
        the list again, so it holds one run's values at most, not a pile."""
        keys = {_key(acc)}
        base = acc
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
            if not (isinstance(base, ast.Name) and base.id == "self"):
                keys.add(_key(base))
        if any(_clears(s, keys) for s in unconditional_statements(loop.body) if s is not stmt):
            return True
        chain = list(ancestors) + [stmt]
        start = next((i for i, a in enumerate(chain) if a is loop), None)
        if start is None:
            return False
        for i in range(start + 1, len(chain) - 1):
            anc, child = chain[i], chain[i + 1]
            for field in ("body", "orelse", "finalbody"):
                block = getattr(anc, field, None)
                if isinstance(block, list) and any(child is b for b in block):
                    before = block[: next(k for k, b in enumerate(block) if b is child)]
                    if any(_clears(b, keys) for b in before):
                        return True
        return False


def _clears(s: ast.stmt, keys) -> bool:
    """`s` assigns one of `keys` afresh (not from itself), clears it
    (`acc.clear()`) or empties it (`del buf[:]`)."""

    def refers_to_acc(expr: ast.AST) -> bool:
        return any(_key(n) in keys for n in walk(expr) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)))

    if isinstance(s, (ast.Assign, ast.AnnAssign)):
        if s.value is None or refers_to_acc(s.value):
            return False
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        return any(_key(elt) in keys for t in targets
                   for elt in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]))
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        f = s.value.func
        return isinstance(f, ast.Attribute) and f.attr == "clear" and _key(f.value) in keys
    if isinstance(s, ast.Delete):
        return any(isinstance(t, ast.Subscript) and _key(t.value) in keys for t in s.targets)  # `del buf[:]`
    return False


def _reset_at_optimizer_step(fa, loop: ast.AST, acc: ast.AST, stmt: ast.stmt) -> bool:
    """Gradient-accumulation logging: the loop backwards a loss on every
    iteration (which frees the saved activations of that iteration's graph)
    and the accumulator is reset in the same `if` block that steps the
    optimizer. Then the accumulator only ever links the few already
    backwarded micro-batch graphs of one optimizer step, which costs nothing
    worth reporting."""
    if not any(
        isinstance(s, ast.Expr) and fa.steps.is_backward_call(s.value) for s in unconditional_statements(loop.body)
    ):
        return False
    acc_key = _key(acc)

    def own(node: ast.AST):
        stack = child_nodes(node)
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES) or isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                continue
            yield n
            stack.extend(child_nodes(n))

    for branch in own(loop):
        if not isinstance(branch, ast.If) or any(n is stmt for n in walk(branch)):
            continue
        resets = any(
            isinstance(s, ast.Assign)
            and any(_key(t) == acc_key for t in s.targets)
            and not any(_key(n) == acc_key for n in walk(s.value) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)))
            for s in unconditional_statements(branch.body)
        )
        if not resets:
            continue
        if any(_steps_optimizer(fa, n) for n in own(branch)):
            return True
    return False


def _steps_optimizer(fa, node: ast.AST) -> bool:
    """An optimizer step (the shared check also knows `self._optimizer.step()`)."""
    return isinstance(node, ast.Call) and fa.steps.is_optimizer_step(node, fa.index.ancestors(node))


def _key(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False).replace("Store()", "Load()").replace("Del()", "Load()")


def _differentiated_later(fa, scope: ast.AST, acc: ast.AST) -> bool:
    """Is the accumulator (or a value computed from it) `.backward()`ed or
    passed to `torch.autograd.grad`/`backward` anywhere in the scope?"""
    root = acc
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    acc_key = _key(acc)
    nodes = list(_scope_walk(scope))
    tainted_names: Set[str] = set()
    if isinstance(acc, ast.Name):
        tainted_names.add(acc.id)

    def uses_acc(expr: ast.AST) -> bool:
        if mentions(expr, tainted_names):
            return True
        return any(_key(n) == acc_key for n in walk(expr) if isinstance(n, (ast.Attribute, ast.Subscript)))

    assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
    for _ in range(4):
        grew = False
        for a in assigns:
            if a.value is None or not uses_acc(a.value):
                continue
            targets: List[ast.AST] = a.targets if isinstance(a, ast.Assign) else [a.target]
            for t in targets:
                for n in walk(t):
                    if isinstance(n, ast.Name) and n.id not in tainted_names:
                        tainted_names.add(n.id)
                        grew = True
        if not grew:
            break
    for n in nodes:
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        q = fa.imports.qualname(f) or ""
        if fa.steps.is_backward_call(n) or q in ("torch.autograd.grad", "torch.autograd.backward"):
            if uses_acc(n):
                return True
    return False


def _scope_walk(scope: ast.AST):
    body = scope.body if isinstance(getattr(scope, "body", None), list) else [scope.body]
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        for child in child_nodes(node):
            if isinstance(child, SCOPES):
                continue
            stack.append(child)
