from __future__ import annotations

import ast

from gpulint.edits import find_keyword, replace_node
from gpulint.rule import TIME, UNSAFE, Bench, Example, Rule
from gpulint.workloads import LANGUAGE_MODEL


class ZeroGradNotSetToNone(Rule):
    """
    ## What it does
    Flags `zero_grad(set_to_none=False)` on an optimizer or a model, and a bare
    `zero_grad()` when the `torch-version` setting (or, without one and
    without a torch pin in the project, the installed torch) is older than
    2.0, where `set_to_none` defaulted to `False`. A project's torch pin sets
    only the oldest torch the code must run on, not this: the change is
    measured below at no measurable gain, so gpulint does not press it on
    code whose authors did not ask for it (`torch-version = "1.13"` asks).

    Not in a file that captures CUDA graphs (`torch.cuda.graph`,
    `CUDAGraph`, `make_graphed_callables`, tensordict's `CudaGraphModule`,
    `torch.compile(mode="reduce-overhead")`): a replayed graph writes the
    gradients into the same buffers every step, so they must be zeroed in
    place (torchrl's Dreamer trainer).

    ## Why is this bad?
    Zeroing gradients in place launches a memset kernel per parameter every
    step and keeps every gradient buffer allocated between steps. With
    `set_to_none=True` the gradients are simply dropped: the next backward
    allocates them fresh and writes them directly instead of accumulating into
    zeros, which saves the memsets and a read-modify-write of every gradient.

    ## Fix safety
    Unsafe: after `set_to_none=True`, `param.grad` is `None` until the next
    backward. Code that reads `.grad` between `zero_grad()` and `backward()`
    (gradient logging, manual clipping, custom optimizers that assume a tensor)
    would fail or behave differently.

    ## References
    - [torch.optim.Optimizer.zero_grad](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - [PyTorch performance tuning guide: use parameter.grad = None](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-parameter-grad-none-instead-of-model-zero-grad-or-optimizer-zero-grad)
    """

    code = "GPU302"
    name = "zero-grad-not-set-to-none"
    message = "`zero_grad(set_to_none=False)` zeroes every gradient in place each step; let it set them to `None`"
    fix_safety = UNSAFE
    needles = ("zero_grad",)
    examples = (
        Example(
            bad="""
            for x, y in loader:
                optimizer.zero_grad(set_to_none=False)
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
            good="""
            for x, y in loader:
                optimizer.zero_grad(set_to_none=True)
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
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
                optimizer.zero_grad(set_to_none=False)
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
                loss.backward()
                optimizer.step()
            return loss.detach()
        """,
        good="""
        def run(steps):
            model.train()
            for step in range(steps):
                tokens = train_batches[step % len(train_batches)]
                optimizer.zero_grad(set_to_none=True)
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
                loss.backward()
                optimizer.step()
            return loss.detach()
        """,
        metric=TIME,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "GPT-2-small-sized LM (124M parameters, bf16 autocast, AdamW) on 8x512 tokens: zeroing in place adds a"
            " memset of every gradient and a read-modify-write in backward, a few percent of the step; 0 + g == g, so"
            " the losses agree up to GPU nondeterminism (atomics in the embedding backward)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "zero_grad"):
            return
        if ctx.analysis.index.uses_cuda_graphs:
            return  # a captured graph needs the gradient buffers to stay where they are
        kw = find_keyword(node, "set_to_none")
        if kw is not None:
            if isinstance(kw.value, ast.Constant) and kw.value.value is False:
                fix = self.make_fix("Set `set_to_none=True`", [replace_node(ctx.source, kw.value, "True")])
                self.report(ctx, node, fix=fix)
            return
        if node.args:
            a = node.args[0]
            if isinstance(a, ast.Constant) and a.value is False:
                fix = self.make_fix("Set `set_to_none=True`", [replace_node(ctx.source, a, "True")])
                self.report(ctx, node, fix=fix)
            return
        if ctx.torch_newest < (2, 0) and ctx.torch_version >= (1, 7):
            # only when the code is said to run on torch < 2 (a pin leaves the
            # newest open), and `set_to_none` exists (torch 1.7)
            from gpulint.edits import add_keyword

            fix = self.make_fix("Add `set_to_none=True`", [add_keyword(ctx.source, node, "set_to_none=True")])
            self.report(
                ctx,
                node,
                message="`zero_grad()` zeroes every gradient in place on torch < 2.0; pass `set_to_none=True`",
                fix=fix,
            )
