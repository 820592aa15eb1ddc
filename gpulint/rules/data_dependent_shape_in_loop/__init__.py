from __future__ import annotations

import ast
import re
from textwrap import dedent

from gpulint.model.index.nodes import LOOPS, SCOPES
from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.values.shapes import (
    CALL_NAMES,
    MASK_INDEX,
    MASKED_SELECT,
    NONZERO,
    REPEAT_INTERLEAVE,
    UNIQUE,
    WHERE,
    device_data_dependent_op,
)
from gpulint.model.values.kinds import HOST_METHODS
from gpulint.model.values.values import in_model_code
from gpulint.rule import NONE, TIME, Bench, Example, Rule

_MAX_SNIPPET = 56
# inference-only model code: generation and search loops (finished sequences,
# stop tokens) and detection post-processing, whose variable-length results are
# the output itself
_INFERENCE_NAME_RE = re.compile(r"(?:^|_)(?:generat|sample|search|beam|decod|post_?process)", re.IGNORECASE)

_ADVICE = {
    NONZERO: "keep the shape static (a mask, `torch.where(c, x, y)`, or `nonzero_static(size=...)`)",
    WHERE: "use the three-argument `torch.where(cond, x, y)` or multiply by the mask",
    MASKED_SELECT: "multiply by the mask, or `torch.where(mask, x, 0)`, and reduce",
    MASK_INDEX: "multiply by the mask, or `torch.where(mask, x, 0)`, and reduce",
    UNIQUE: "hoist it out of the loop, or count with a fixed-size `bincount(minlength=...)`/`scatter_add_`",
    REPEAT_INTERLEAVE: "pass `output_size=` (the total, if known on the host)",
}


def _snippet(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _MAX_SNIPPET else text[: _MAX_SNIPPET - 3].rstrip() + "..."


def _every_pass(_loop) -> bool:
    return True


def _is_failed_assert(stmt: ast.AST, analysis) -> bool:
    """`torch._assert(False, msg)`: raises, like `raise`."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return (
        analysis.imports.call_qualname(call) in ("torch._assert", "torch._assert_async")
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value is False
    )


def _on_error_path(node, ancestors, analysis) -> bool:
    """A block around `node` (within its function) ends in `torch._assert(False, ...)`."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc = chain[i]
        if isinstance(anc, SCOPES):
            return False
        for field in ("body", "orelse", "finalbody"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and block and any(b is chain[i + 1] for b in block):
                if _is_failed_assert(block[-1], analysis):
                    return True
    return False


def _in_inference_code(ancestors) -> bool:
    """The enclosing function is named for generation, search or post-processing."""
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return _INFERENCE_NAME_RE.search(anc.name) is not None
    return False


def _read_on_host(node, ancestors) -> bool:
    """The result goes straight to the host (`torch.where(m)[0].tolist()`,
    `x[mask].cpu()`): the values are needed there, so the wait is too."""
    child = node
    for anc in reversed(ancestors):
        if isinstance(anc, ast.Attribute) and anc.value is child:
            if anc.attr in HOST_METHODS:
                return True
        elif isinstance(anc, ast.Subscript) and anc.value is child:
            pass
        elif isinstance(anc, ast.Call) and anc.func is child:
            pass
        else:
            return False
        child = anc
    return False


class DataDependentShapeInLoop(Rule):
    """
    ## What it does
    Flags operations whose output size depends on a CUDA tensor's values, in
    code that runs every step:

    - `torch.nonzero(x)` / `x.nonzero()` (with or without `as_tuple`),
      `torch.argwhere(x)`, and `torch.where(cond)` with one argument;
    - `torch.masked_select(x, mask)` / `x.masked_select(mask)`;
    - reading `x[mask]` (or `x[:, mask]`) where `mask` is known to be a bool
      tensor: a comparison with a tensor, `.bool()`, `torch.isnan(...)`,
      `~m`, `m1 & m2`, or a name bound only to such values;
    - `torch.unique(x)` / `x.unique()` and `unique_consecutive`;
    - `repeat_interleave` with a tensor `repeats` and no `output_size=`.

    It looks in training loops (the hot loop of GPU101: the loop calls
    `backward()` or an optimizer step) and in loops of model code (a method of
    an `nn.Module` subclass, or a function named like `forward`, `step` or
    `loss`), where the operation runs once per iteration: a loop over experts
    or images pays one sync per expert or image on every forward. Reading a
    mask-indexed value twice in one statement (`F.cross_entropy(logits[m],
    labels[m])`) is reported once.

    Not flagged: code that runs once (`__init__`, set-up), tensors known to
    be in host memory, files that never mention CUDA or a device, test
    files, `x[mask] = v` (with a number, a masked fill that sizes nothing;
    with a tensor value torch finds the mask's positions and the host waits,
    as `mask.nonzero()` does, which this rule does not flag yet: ibot's
    `x[mask, :] = self.masked_embed` in every student forward, where
    `torch.where(mask[..., None], masked_embed, x)` waits for nothing), a result
    read on the host at once (`torch.where(m)[0].tolist()`: the values are
    wanted there), error paths (a block ending in `raise` or
    `torch._assert(False, ...)`), code under a periodic guard, and loops of
    generation, search and post-processing functions (`generate`,
    `_sample`, `beam_search`, `postprocess_detections`), whose
    variable-length results are the output itself.

    Off by default. In the labelled corpus (docs/accuracy.md) no training
    loop had one of these operations; all 116 findings were in loops of
    model code, and only 22 of them (10 of the 60 sampled) could be avoided.
    Most of the rest are transformers' eager mixture-of-experts loops, the
    reference path behind `@use_experts_implementation` (the library runs a
    grouped-GEMM implementation with a single sync by default), and
    tracking, tokenisation or position-id code that needs the sizes on the
    host. Turn it on with `--select GPU105` when hunting syncs in a model
    of your own: a per-expert `torch.where`, a per-image loss that selects
    its foreground with a mask.

    ## Why is this bad?
    PyTorch must allocate a result before the kernel that fills it runs. When
    the size is a count that only the data can tell (how many elements are
    nonzero, how many are unique), the host has to wait for the GPU to finish
    everything queued so far, copy the count back, and only then launch the
    next kernel: a device-to-host synchronization, exactly like `.item()`.
    In a loop, the GPU idles once per iteration while the CPU catches up.

    Keep shapes static where the semantics allow it: `torch.where(cond, x, y)`
    with three arguments, multiplying by the mask (`(loss * mask).sum() /
    mask.sum()` instead of `loss[mask].mean()`), `torch.nonzero_static(x,
    size=...)` (on CUDA from torch 2.6) with a known upper bound, `output_size=` for
    `repeat_interleave`, and counting with `bincount(minlength=...)`. Where a
    dynamic size is needed, compute all of them with one read before the loop
    (`counts.tolist()`) instead of one sync per iteration.

    ## Fix safety
    No automatic fix: the sync-free forms change shapes (a masked tensor
    keeps the masked-out elements as zeros) and what later code can do with
    the result.

    ## References
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - [torch.cuda.set_sync_debug_mode](https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html)
    - [torch.nonzero](https://pytorch.org/docs/stable/generated/torch.nonzero.html)
    - [torch.nonzero_static](https://pytorch.org/docs/stable/generated/torch.nonzero_static.html)
    - [torch.where](https://pytorch.org/docs/stable/generated/torch.where.html)
    - [torch.repeat_interleave](https://pytorch.org/docs/stable/generated/torch.repeat_interleave.html)
    """

    code = "GPU105"
    name = "data-dependent-shape-in-loop"
    message = "`{expr}` sizes its result from a CUDA tensor's values, a host-device sync every step"
    fix_safety = NONE
    default = False
    needles = ("nonzero", "argwhere", "masked_select", "unique", "where", "repeat_interleave", "[")
    examples = (
        Example(
            bad="""
            import torch
            import torch.nn.functional as F

            for tokens, labels in loader:
                tokens, labels = tokens.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                logits = model(tokens)
                keep = labels != -100
                loss = F.cross_entropy(logits[keep], labels[keep])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            """,
            good="""
            import torch
            import torch.nn.functional as F

            for tokens, labels in loader:
                tokens, labels = tokens.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                logits = model(tokens)
                loss = F.cross_entropy(logits.flatten(0, -2), labels.flatten(), ignore_index=-100)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            """,
        ),
    )

    bench = Bench(
        setup=dedent(
            """
            from itertools import islice

            import torch
            import torch.nn.functional as F
            from torch import nn
            from torch.utils.data import DataLoader, TensorDataset

            # a small token tagger (4 transformer layers, width 256) on 32 sequences of 128 tokens,
            # about a fifth of whose labels are -100 (padding and prompt tokens that take no loss)
            vocab, width, depth, heads, batch, seq, n_batches = (
                (64, 16, 1, 2, 2, 8, 4) if SMALL else (8192, 256, 4, 4, 32, 128, 48)
            )
            torch.set_float32_matmul_precision("high")
            model = nn.Sequential(
                nn.Embedding(vocab, width),
                nn.TransformerEncoder(
                    nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True),
                    depth,
                    enable_nested_tensor=False,
                ),
                nn.LayerNorm(width),
                nn.Linear(width, vocab),
            ).to(DEVICE)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            tokens = torch.randint(0, vocab, (n_batches * batch, seq))
            labels = torch.randint(0, vocab, (n_batches * batch, seq))
            labels[torch.rand(n_batches * batch, seq) < 0.2] = -100
            loader = DataLoader(
                TensorDataset(tokens, labels), batch_size=batch, num_workers=0, pin_memory=DEVICE.startswith("cuda")
            )
            """
        ),
        bad="""
            def run(steps):
                for input_ids, labels in islice(loader, steps):
                    input_ids, labels = input_ids.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    logits = model(input_ids)
                    active = labels != -100
                    loss = F.cross_entropy(logits[active], labels[active])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach()
        """,
        good="""
            def run(steps):
                for input_ids, labels in islice(loader, steps):
                    input_ids, labels = input_ids.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    logits = model(input_ids)
                    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach()
        """,
        metric=TIME,
        steps=40,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "token-tagging training step (4-layer width-256 transformer, TF32, 32x128 tokens from a pinned"
            " DataLoader, a fifth of the labels -100): bad drops the ignored tokens with logits[labels != -100], a"
            " nonzero that makes the host wait for the forward before it can launch the loss, backward and optimizer"
            " step; good passes ignore_index, the same mean over the kept tokens with static shapes. Same math,"
            " different reduction order: rtol 1e-4"
        ),
    )

    # also loops of model code (a loop over experts in a forward), not only training loops
    model_code_loops = True

    def begin_file(self, ctx) -> None:
        self._statements = set()

    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in CALL_NAMES:
            self._check(node, ctx)

    def visit_Subscript(self, node: ast.Subscript, ctx) -> None:
        if isinstance(node.ctx, ast.Load):
            self._check(node, ctx)

    def _check(self, node, ctx) -> None:
        analysis = ctx.analysis
        if not analysis.index.may_use_accelerator:
            return
        ancestors = ctx.ancestors
        if not any(isinstance(a, LOOPS) for a in ancestors):
            return
        found = device_data_dependent_op(analysis, node, ancestors)
        if found is None:
            return
        op = found[0]
        stmt = next((a for a in reversed(ancestors) if isinstance(a, ast.stmt)), None)
        if id(stmt) in self._statements:
            return  # `F.cross_entropy(logits[keep], labels[keep])`: one finding per statement
        where = self._where(analysis, node, ancestors)
        if where is None:
            return
        self._statements.add(id(stmt))
        self.report(
            ctx,
            node,
            message=(
                f"`{_snippet(ctx.node_text(node))}` sizes its result from a tensor's values, "
                f"a host-device sync every {where}; {_ADVICE[op]}"
            ),
        )

    def _where(self, analysis, node, ancestors):
        """"step" in a training loop, "iteration" in a loop of model code, else None."""
        if _read_on_host(node, ancestors) or _on_error_path(node, ancestors, analysis):
            return None
        loop = analysis.loops.hot_loop(node, ancestors)
        if loop is not None and analysis.loops.is_training_step_loop(loop):
            return "step"
        if not self.model_code_loops:
            return None
        if analysis.loops.hot_loop(node, ancestors, is_hot=_every_pass) is None:
            return None
        if not in_model_code(analysis.values, ancestors) or _in_inference_code(ancestors):
            return None
        if not runs_repeatedly(analysis, node, ancestors):
            return None
        return "iteration"
