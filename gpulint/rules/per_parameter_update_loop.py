from __future__ import annotations

import ast
from gpulint.model.control.repetition import runs_repeatedly
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.model.index.walk import walk

# the first torch with the `torch._foreach_*` functions (its multi-tensor optimizers)
FOREACH_SINCE = (1, 7)

# what iterates a model's tensors: `model.parameters()`, `ema.named_buffers()`, `sd.values()`
_TENSOR_LISTS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
# in-place tensor methods that `torch._foreach_*` does for a whole list in one launch each
_IN_PLACE = frozenset({"mul_", "add_", "sub_", "div_", "lerp_", "copy_", "addcmul_", "addcdiv_", "zero_"})


def _iterates_model_tensors(it: ast.AST) -> bool:
    """`model.parameters()`, `zip(ema.parameters(), model.parameters())`,
    `ema.state_dict().values()`: the loop walks a model's tensors."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("zip", "list", "enumerate"):
        return bool(it.args) and all(_iterates_model_tensors(a) for a in it.args)
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)):
        return False
    if it.func.attr in _TENSOR_LISTS:
        return True
    v = it.func.value  # `<model>.state_dict().values()`
    return (it.func.attr == "values" and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr == "state_dict")


def _in_place_update(stmt: ast.stmt, targets: set) -> bool:
    """`p_ema.mul_(d).add_(p, alpha=1 - d)`, `ema_p.data.lerp_(p.data, w)`,
    `p.data.copy_(q)`: one statement of in-place arithmetic on a loop variable."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    node: ast.AST = stmt.value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr not in _IN_PLACE:
            return False
        node = node.func.value
        while isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
    return isinstance(node, ast.Name) and node.id in targets


# the bench's set-up: a small denoiser of 48 residual blocks (194 tensors) and its EMA copy
_EMA_DENOISER = """\
import copy

import torch
import torch.nn.functional as F
from torch import nn

width, depth, batch = (16, 2, 4) if SMALL else (256, 48, 256)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc(F.silu(self.norm(x)))


model = nn.Sequential(nn.Linear(2, width), *[Block() for _ in range(depth)], nn.Linear(width, 2)).to(DEVICE)
ema = copy.deepcopy(model).requires_grad_(False)
params, ema_params = list(model.parameters()), list(ema.parameters())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
decay = 0.999
batches = [(torch.randn(batch, 2, device=DEVICE), torch.randn(batch, 2, device=DEVICE)) for _ in range(8)]
"""


def _loop_targets(loop: ast.For) -> set:
    return {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}


class PerParameterUpdateLoop(Rule):
    """
    ## What it does
    Flags a Python `for` loop over a model's tensors (`model.parameters()`,
    `zip(ema.parameters(), model.parameters())`, `named_buffers()`,
    `state_dict().values()`) whose body only updates each tensor in place
    (`mul_`, `add_`, `lerp_`, `copy_`, ...), in code that runs every step:
    the exponential moving average of a model's weights (diffusion models,
    MoCo's and BYOL's momentum encoders), or a hand-written weight update.

    Not flagged: a loop that does anything else per tensor (a test of its
    name, a host read, a new tensor), a loop that runs once (set-up, loading
    a checkpoint), a loop that already calls `torch._foreach_*`, and test
    files.

    Off by default, even with `--preview` (select it by its code): the fix
    pays only where the step is launch-bound and the model has many tensors.
    Measured on an NVIDIA H200 (torch 2.11, 2026-12-04, `gpulint bench
    GPU406`), a small denoiser of 194 tensors with a weight EMA every step
    ran 1.26x and, on a second run, 1.32x faster with `torch._foreach_lerp_`;
    a TD3-style critic of 6 tensors with its soft target update gained
    nothing measurable (0.89x, the spreads overlapping), and a 124M-parameter
    language model (about 150 tensors, 30-40 ms steps) 1.13x-1.23x by the
    median, within the noise. Most findings in the labelled corpora are
    such target updates of small RL networks: 40 of 62 findings over them
    run every step on CUDA, as judged on first sight (the rest run on the
    CPU, once, or in tests), but few of those 40 would measure a gain.

    ## Why is this bad?
    Each in-place method is a kernel launch, so the loop launches one or two
    kernels per tensor every step: hundreds for a ResNet or a transformer,
    each doing a few microseconds of work, with the host in Python between
    them. `torch._foreach_lerp_`, `torch._foreach_mul_` and friends update
    the whole list with a few launches (the optimizers in `torch.optim` do
    the same by default), and `torch.optim.swa_utils.AveragedModel` with
    `get_ema_multi_avg_fn` is the public form of the EMA.

    Not flagged where the project pins a torch older than 1.7, which has
    no `torch._foreach_*` functions.

    ## Fix safety
    No automatic fix: the rewrite needs the two lists (kept once, outside
    the step), and `lerp_` rounds differently from `mul_` then `add_` in
    low precision. Use instead:

    ```python
    ema_params, params = list(ema.parameters()), list(model.parameters())
    ...
    with torch.no_grad():
        torch._foreach_lerp_(ema_params, params, 1 - decay)
    ```

    ## References
    - [torch.optim.swa_utils.AveragedModel and get_ema_multi_avg_fn](https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema)
    - [PyTorch: foreach implementations of the optimizers](https://pytorch.org/docs/stable/optim.html#algorithms)
    """

    code = "GPU406"
    name = "per-parameter-update-loop"
    message = (
        "this loop updates the model's tensors one by one every step, a kernel launch per tensor; "
        "update the whole list with `torch._foreach_*` (or `AveragedModel` with `get_ema_multi_avg_fn`)"
    )
    fix_safety = NONE
    default = False
    needles = ("parameters", "buffers", "state_dict")
    examples = (
        Example(
            bad="""
            import torch


            def update_ema(ema, model, decay=0.999):
                with torch.no_grad():
                    for p_ema, p in zip(ema.parameters(), model.parameters()):
                        p_ema.mul_(decay).add_(p, alpha=1 - decay)


            def train(model, ema, loader, optimizer):
                for x, y in loader:
                    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    update_ema(ema, model)
            """,
            good="""
            import torch


            def update_ema(ema_params, params, decay=0.999):
                with torch.no_grad():
                    torch._foreach_lerp_(ema_params, params, 1 - decay)


            def train(model, ema, loader, optimizer):
                ema_params, params = list(ema.parameters()), list(model.parameters())
                for x, y in loader:
                    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    update_ema(ema_params, params)
            """,
        ),
    )

    bench = Bench(
        setup=_EMA_DENOISER,
        bad="""
        def run(steps):
            for step in range(steps):
                x, noise = batches[step % len(batches)]
                loss = F.mse_loss(model(x + noise), noise)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    for p_ema, p in zip(ema.parameters(), model.parameters()):
                        p_ema.mul_(decay).add_(p, alpha=1 - decay)
            return sum(p.sum() for p in ema.parameters())
        """,
        good="""
        def run(steps):
            for step in range(steps):
                x, noise = batches[step % len(batches)]
                loss = F.mse_loss(model(x + noise), noise)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    torch._foreach_lerp_(ema_params, params, 1 - decay)
            return sum(p.sum() for p in ema.parameters())
        """,
        metric=TIME,
        check="allclose",
        rtol=1e-4,
        atol=1e-3,
        note=(
            "A small denoiser (48 residual blocks of 256 units, 194 tensors, batch 256, Adam) with a weight EMA every"
            " step, the kind of toy diffusion run where the step is launch-bound: the loop launches two kernels per"
            " tensor, the foreach form one per group; lerp_ and mul_ then add_ round differently in fp32"
        ),
    )

    def visit_For(self, node: ast.For, ctx) -> None:
        if ctx.torch_version < FOREACH_SINCE or not _iterates_model_tensors(node.iter):
            return  # (a project pinned to an older torch has no `torch._foreach_*` to use)
        targets = _loop_targets(node)
        if not node.body or not all(_in_place_update(s, targets) for s in node.body):
            return
        if not runs_repeatedly(ctx.analysis, node, ctx.ancestors):
            return
        self.report(ctx, node)
