from __future__ import annotations

import ast
from textwrap import dedent

from gpulint.model.names import dotted
from gpulint.rules.optimizer_not_fused.params import MOVED, param_owners, placements
from gpulint.edits import add_keyword, find_keyword
from gpulint.rule import TIME, UNSAFE, Bench, Example, Rule

# optimizer -> the first torch release whose `fused=True` runs on CUDA
_FUSED_SINCE = {
    "torch.optim.Adam": (1, 13),
    "torch.optim.adam.Adam": (1, 13),
    "torch.optim.AdamW": (2, 0),
    "torch.optim.adamw.AdamW": (2, 0),
}
# before 2.5 a fused optimizer checks its parameters' device when it is built
# (pytorch#131153 moved the check to the first step)
_CHECKS_AT_STEP = (2, 5)


def _is_false(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def _pos(node: ast.AST):
    return (node.lineno, node.col_offset)


class OptimizerNotFused(Rule):
    """
    ## What it does
    Flags `torch.optim.Adam(...)` and `torch.optim.AdamW(...)` built on the
    parameters of a model that the file puts on an accelerator
    (`model.to(device)`, `model.cuda()`, `model = Net().to(device)`, a model
    handed to `accelerator.prepare(...)` or `fabric.setup(...)`, or one that
    a project function returns moved: `model, tokenizer = init_model(cfg)`
    with `return model.to(device), tokenizer`, in this file or another)
    without `fused=` or `foreach=`.

    Only where the targeted torch release (the `torch-version` setting)
    supports `fused=True` on CUDA for that optimizer: Adam from 1.13, AdamW
    from 2.0. Before 2.5 a fused optimizer checks its parameters' device when
    it is built, so there the model must be moved before the optimizer is
    (in the same function), and a model that accelerate or Fabric places
    later does not count.

    Not flagged: a call with `fused=`, `foreach=`, `**kwargs` or
    `differentiable=True` (fused does not support it); parameters whose model
    cannot be told or is not moved in the file (an optimizer factory that
    takes a model as an argument, `optimizer_cls(params, **kwargs)` built from
    a config, a LightningModule's `configure_optimizers`, whose device the
    Trainer picks); test files.

    Other optimizers are left alone on purpose. With `SGD(fused=True)` and
    a `GradScaler`, a first step skipped for an overflow leaves the momentum
    buffers uninitialised (`torch.empty_like`) and the next step uses them
    (reproduced with torch 2.13), and a benchmark in pytorch#129350 found
    fused SGD slower than the default for large tensors. `Adagrad` gained a
    CUDA fused kernel only in 2026 (pytorch#177672), with mixed benchmarks.

    Off by default: the labelled corpus of libraries (docs/accuracy.md)
    builds its optimizers in factories or from configs, so the rule has no
    finding there to measure its precision on. Turn it on with
    `--select GPU405` for training scripts that build their own optimizer.

    ## Why is this bad?
    Since torch 2.0, Adam and AdamW on CUDA default to the multi-tensor
    ("foreach") implementation: each step launches a handful of kernels per
    group of tensors and reads and writes every parameter, gradient and both
    moment buffers several times. `fused=True` does the whole update in one
    pass, reading each of them once. The update is pure memory traffic, so
    the fused step is faster, and on a model with many parameters trained on
    small batches the optimizer step is a visible part of every training
    step. PyTorch keeps foreach as the default only to give the fused
    kernels more bake-in time.

    ## Fix safety
    Unsafe: `fused=True` requires every parameter to be a floating-point
    tensor on a device with fused kernels (CUDA; the CPU from torch 2.4; not
    XLA/TPU), and raises otherwise: on torch < 2.5 when the optimizer is
    built, so a script that falls back to the CPU (`"cuda" if
    torch.cuda.is_available() else "cpu"`) breaks there on torch < 2.4. It
    cannot be combined with `differentiable=True`. The fused kernel computes
    the same update in a different order, so results differ in the last bits
    (within float rounding, not bit-for-bit). With a `GradScaler` the fused
    optimizer unscales and skips inf steps inside its own kernel
    (`_step_supports_amp_scaling`), which is supported. For CUDA-graph
    capture, pass `capturable=True` as well.

    ## References
    - [torch.optim.AdamW (`fused`)](https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html)
    - [torch.optim.Adam (`fused`)](https://pytorch.org/docs/stable/generated/torch.optim.Adam.html)
    - [torch.optim: algorithms and implementations (for-loop, foreach, fused)](https://pytorch.org/docs/stable/optim.html#algorithms)
    """

    code = "GPU405"
    name = "optimizer-not-fused"
    message = "`{name}(...)` on a CUDA model runs the multi-kernel foreach update every step; pass `fused=True`"
    fix_safety = UNSAFE
    default = False
    needles = ("Adam",)
    examples = (
        Example(
            bad="""
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
            """,
            good="""
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
            """,
        ),
    )
    bench = Bench(
        setup=dedent(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            # a stack of 6 Linear(4096, 4096) layers with GELU: 6 * (4096 * 4096 + 4096) = 100,687,872
            # parameters, trained on a small batch (64 rows) so that the optimizer step is a large part of it
            width, depth, batch = (32, 2, 4) if SMALL else (4096, 6, 64)
            torch.set_float32_matmul_precision("high")
            layers = []
            for _ in range(depth):
                layers += [nn.Linear(width, width), nn.GELU()]
            model = nn.Sequential(*layers[:-1]).to(DEVICE)
            inputs = torch.randn(batch, width, device=DEVICE)
            targets = torch.randn(batch, width, device=DEVICE)
            """
        ),
        bad="""
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)


            def run(steps):
                for _ in range(steps):
                    loss = F.mse_loss(model(inputs), targets)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach(), model[0].weight.detach()[:4, :4].clone()
        """,
        good="""
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)


            def run(steps):
                for _ in range(steps):
                    loss = F.mse_loss(model(inputs), targets)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach(), model[0].weight.detach()[:4, :4].clone()
        """,
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-6,
        note=(
            "100.7M-parameter MLP (6 x Linear(4096, 4096), TF32 matmuls) trained on 64 rows per step, forward +"
            " backward + AdamW step: bad uses the default foreach AdamW, good fused=True (one kernel pass over"
            " parameters, gradients and both moments). The fused kernel computes the same update in another"
            " order: the loss and weights agree to float32 rounding (rtol 1e-4)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        q = ctx.analysis.imports.call_qualname(node)
        since = _FUSED_SINCE.get(q or "")
        if since is None or ctx.torch_version < since:
            return
        if any(isinstance(a, ast.Starred) for a in node.args):
            return
        for kw in node.keywords:
            if kw.arg is None or kw.arg in ("fused", "foreach"):
                return  # `**kwargs` may hold them
            if kw.arg == "differentiable" and not _is_false(kw.value):
                return  # fused does not support differentiable=True
        params = node.args[0] if node.args else getattr(find_keyword(node, "params"), "value", None)
        if params is None:
            return
        owners = param_owners(ctx.analysis, params, ctx.ancestors)
        if owners is None or not all(self._on_accelerator(ctx, owner, node) for owner in owners):
            return
        name = (dotted(node.func) or q or "").strip()
        fix = self.make_fix("Add `fused=True`", [add_keyword(ctx.source, node, "fused=True")])
        self.report(ctx, node, fix=fix, name=name)

    @staticmethod
    def _on_accelerator(ctx, owner: str, call: ast.Call) -> bool:
        found = placements(ctx.analysis, owner, ctx.ancestors)
        if ctx.torch_version >= _CHECKS_AT_STEP:
            return bool(found)
        # the device check runs when the optimizer is built: the model must be
        # moved by then (before it in the same function, or in another one)
        scope = ctx.analysis.index.enclosing_scope(ctx.ancestors)
        for how, where in found:
            if how != MOVED:
                continue
            if ctx.analysis.index.enclosing_scope(ctx.analysis.index.ancestors(where)) is not scope or _pos(where) < _pos(call):
                return True
        return False
