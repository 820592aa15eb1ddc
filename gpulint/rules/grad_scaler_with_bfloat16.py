from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.control.amp import (
    BFLOAT16,
    autocast_dtype,
    autocast_enabled,
    autocast_uses,
    call_argument,
    has_unpacking,
    is_grad_scaler_call,
    literal_bool,
)
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import LANGUAGE_MODEL, LM_TRAIN_LOOP


class GradScalerWithBfloat16(Rule):
    """
    ## What it does
    Flags the construction of a `GradScaler` (`torch.amp.GradScaler`,
    `torch.cuda.amp.GradScaler`, `torch.GradScaler`, FSDP's
    `ShardedGradScaler`) in a file whose autocast regions all use
    `torch.bfloat16`. A file with no autocast, with a float16 autocast (an
    autocast on CUDA without `dtype=` uses float16), or with an autocast whose
    dtype is a variable is not flagged, nor a scaler built with an
    `enabled=` that is not literally `True` (`enabled=use_fp16` is the usual
    way to switch it off for bf16).

    ## Why is this bad?
    Loss scaling exists because float16 has a 5-bit exponent: small gradients
    underflow to zero unless the loss is multiplied up before backward. bfloat16
    has float32's 8-bit exponent and the same range, so gradients do not
    underflow and there is nothing to scale. With bf16 a GradScaler only adds
    work: a multiply of the loss, an unscale of every gradient, an inf/NaN
    check over all of them with a host synchronization in `scaler.step()`, and
    skipped optimizer steps whenever the growing scale makes a gradient
    overflow.

    ## Fix safety
    No automatic fix: removing the scaler means rewriting
    `scaler.scale(loss).backward()`, `scaler.step(optimizer)`,
    `scaler.unscale_(optimizer)` and `scaler.update()` and the scaler's
    checkpoint state. Call `loss.backward()` and `optimizer.step()` directly.

    ## References
    - [PyTorch: Automatic Mixed Precision package (torch.amp)](https://pytorch.org/docs/stable/amp.html)
    - [PyTorch: Gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [PyTorch recipe: Automatic Mixed Precision](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "GPU404"
    name = "grad-scaler-with-bfloat16"
    message = "`GradScaler` with bfloat16 autocast: bf16 has float32's exponent range and needs no loss scaling; drop the scaler"
    fix_safety = NONE
    needles = ("GradScaler",)
    examples = (
        Example(
            bad="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            for images, targets in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = criterion(model(images), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
            good="""
            import torch

            for images, targets in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = criterion(model(images), targets)
                loss.backward()
                optimizer.step()
            """,
        ),
    )

    bench = Bench(
        setup=LANGUAGE_MODEL,
        bad="""
        scaler = torch.amp.GradScaler(DEVICE)


        def run(steps):
            model.train()
            for step in range(steps):
                tokens = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            return loss.detach()
        """,
        good=LM_TRAIN_LOOP,
        metric=TIME,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "GPT-2-small-sized LM (124M parameters, bf16 autocast, AdamW) on 8x512 tokens: the scaler adds a loss"
            " multiply, an unscale and inf check over every gradient and a host sync in scaler.step(); its scale is a"
            " power of two that bf16 gradients never overflow, so no step is skipped and the losses agree up to GPU"
            " nondeterminism"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._all_bf16: Optional[bool] = None

    def _only_bfloat16(self, ctx) -> bool:
        if self._all_bf16 is None:
            fa = ctx.analysis
            seen = False
            ok = True
            for use in autocast_uses(fa):
                if not isinstance(use, ast.Call):
                    ok = False  # an autocast passed around: its dtype is not known here
                    break
                enabled = autocast_enabled(fa, use)
                if enabled is False:
                    continue  # a region that turns autocast off
                if autocast_dtype(fa, use) != BFLOAT16:
                    ok = False
                    break
                seen = True
            self._all_bf16 = ok and seen
        return self._all_bf16

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if not is_grad_scaler_call(fa, node):
            return
        if has_unpacking(node):
            return
        q = fa.imports.qualname(node.func) or ""
        # torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)
        pos = 5 if q in ("torch.amp.GradScaler", "torch.GradScaler") else 4
        if "Sharded" in q:
            pos = 5
        enabled = call_argument(node, "enabled", pos)
        if enabled is not None and literal_bool(enabled) is not True:
            return
        if self._only_bfloat16(ctx):
            self.report(ctx, node)
