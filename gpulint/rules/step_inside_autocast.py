from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.control.amp import autocast_region
from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import callee_name
from gpulint.model.names import dotted
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import LANGUAGE_MODEL


class StepInsideAutocast(Rule):
    """
    ## What it does
    Flags `.backward()` (including `scaler.scale(loss).backward()` and
    `accelerator.backward(loss)`) and an optimizer's or GradScaler's `.step()`
    that run inside an autocast region: a `with torch.autocast(...)` /
    `torch.amp.autocast(...)` / `torch.cuda.amp.autocast(...)` block, or a
    function decorated with one. A learning-rate scheduler's `.step()` is not
    flagged, nor code under an autocast that is turned off with
    `enabled=False`, nor code in a function that is merely defined inside the
    block. A function whose every call in the same file runs inside an
    autocast region (`with torch.autocast(...): train_step(model, batch)`)
    has its backward and step flagged too, with the caller's line.

    ## Why is this bad?
    Autocast is meant to wrap the forward pass and the loss computation only;
    the PyTorch AMP documentation says backward passes under autocast are not
    recommended. The backward ops already run in the dtype autocast chose for
    the matching forward ops, so running `backward()` inside the region gains
    nothing. The optimizer step (and the scaler's unscale and inf checks) has
    nothing to gain either: keeping it inside only widens the region beyond
    what the AMP recipes describe, and any op in a custom optimizer,
    preconditioner or gradient-clipping code that is on autocast's cast lists
    (a matmul, say) silently runs in reduced precision.

    ## Fix safety
    No automatic fix: moving statements out of a `with` block changes the
    indentation of the surrounding code, and what else belongs inside the
    region (logging, metric computation) is a judgement call. Dedent the
    backward pass and the optimizer step so they run after the block exits.

    ## References
    - [PyTorch: Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [torch.autocast: "Backward passes under autocast are not recommended"](https://pytorch.org/docs/stable/amp.html#torch.autocast)
    - [PyTorch recipe: Automatic Mixed Precision](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "GPU402"
    name = "step-inside-autocast"
    message = "Backward pass or optimizer step inside an autocast region; run it after the `autocast` block exits"
    _detail = "`{what}` runs inside an autocast region; run it after the `autocast` block exits"
    _caller = (
        "`{what}` runs inside the autocast region that its caller opens (line {line}); "
        "open the region in this function, around the forward and the loss only"
    )
    fix_safety = NONE
    needles = ("autocast",)
    examples = (
        Example(
            bad="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            for images, targets in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.float16):
                    output = model(images)
                    loss = criterion(output, targets)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
            """,
            good="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            for images, targets in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.float16):
                    output = model(images)
                    loss = criterion(output, targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
    )

    bench = Bench(
        setup=LANGUAGE_MODEL,
        bad="""
        def run(steps):
            model.train()
            for step in range(steps):
                tokens = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            return loss.detach()
        """,
        good="""
        def run(steps):
            model.train()
            for step in range(steps):
                tokens = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            return loss.detach()
        """,
        metric=TIME,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "GPT-2-small-sized LM (124M parameters, bf16 autocast) with backward, gradient clipping and AdamW inside vs"
            " after the autocast block: backward ops already run in the forward's dtypes and the clipping/AdamW ops are"
            " float32 either way, so no measurable gain is expected; same numbers up to GPU nondeterminism"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if fa.steps.is_backward_call(node):
            what = ".backward()"
        elif fa.steps.is_optimizer_step(node, ctx.ancestors):
            recv = node.func.value  # type: ignore[attr-defined]
            what = (dotted(recv) or "optimizer") + ".step()"
        else:
            return
        if autocast_region(fa, ctx.ancestors) is not None:
            self.report(ctx, node, message=self._detail.format(what=what))
            return
        region = _callers_region(fa, ctx.ancestors)
        if region is not None:
            self.report(ctx, node, message=self._caller.format(what=what, line=region.lineno))


def _callers_region(fa, ancestors) -> Optional[ast.AST]:
    """The autocast region that every call of the function around the node
    (in this file, by `name(...)` or `<obj>.name(...)`) runs in: `with
    torch.autocast(...): train_step(...)`. None when the file does not call
    the function, or calls it once outside such a region."""
    func = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
    if func is None:
        return None

    def find() -> Optional[ast.AST]:
        regions = [autocast_region(fa, fa.index.ancestors(c)) for c in fa.index.nodes(ast.Call)
                   if callee_name(c) == func.name]
        if not regions or any(r is None for r in regions):
            return None
        return regions[0]

    return fa.index.memoized("GPU402.callers_region", func, find)
