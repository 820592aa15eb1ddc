from __future__ import annotations

import ast

from gpulint.edits import remove_statement
from gpulint.rule import TIME, UNSAFE, Bench, Example, Rule
from gpulint.workloads import HOST_PIPELINE_TRAINING


_SYNCHRONIZE = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize"})


class SynchronizeInLoop(Rule):
    """
    ## What it does
    Flags `torch.cuda.synchronize()` (in any import form, and its
    device-generic twin `torch.accelerator.synchronize()`) that runs every
    iteration of a hot loop: the innermost loop that runs a model forward,
    `backward()`, an optimizer step or iterates a DataLoader. A call under a
    periodic guard (`if step % log_every == 0:`) is not flagged, nor is one in
    a loop body that reads a clock (`time.time()`, `time.perf_counter()`, ...)
    or CUDA event timings (`start.elapsed_time(end)`): that is timing code,
    which needs the synchronization to measure anything.

    ## Why is this bad?
    CUDA kernels run asynchronously: while the GPU works through one step, the
    CPU is already queueing the next one. `torch.cuda.synchronize()` blocks the
    CPU until every queued kernel has finished, so the GPU runs dry while the
    CPU does the Python, data-loading and launch work of the next step. PyTorch
    already synchronizes where it has to (copies to the host, `.item()`), so
    outside timing code a per-step `synchronize()` only adds idle time.

    ## Fix safety
    Unsafe: the fix removes the call (an only statement of its block becomes
    `pass`). The computed results do not change, but code that relies on the
    wait for something PyTorch cannot see, such as timing the step without a
    clock read in the same loop, handing buffers to another library or
    process, or making an asynchronous CUDA error surface at a known line
    while debugging, would behave differently.

    ## References
    - [torch.cuda.synchronize](https://pytorch.org/docs/stable/generated/torch.cuda.synchronize.html)
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - [PyTorch performance tuning guide: avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    """

    code = "GPU102"
    name = "synchronize-in-loop"
    message = "`{name}()` in a hot loop makes the CPU wait for the GPU every step"
    fix_safety = UNSAFE
    needles = ("synchronize",)
    examples = (
        Example(
            bad="""
            import torch

            for images, labels in loader:
                images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                loss = criterion(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                torch.cuda.synchronize()  # wait for the step to finish
            """,
            good="""
            import torch

            for images, labels in loader:
                images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                loss = criterion(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            """,
        ),
    )
    bench = Bench(
        setup=HOST_PIPELINE_TRAINING + "peak_memory = []\n",
        bad='''
            def run(steps):
                for _ in range(steps):
                    images, labels = next_batch()
                    images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    loss = F.cross_entropy(model(images), labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if DEVICE == "cuda":
                        torch.cuda.synchronize()  # wait for the step before reading its peak memory
                        peak_memory.append(torch.cuda.max_memory_allocated())
                return loss.detach()
        ''',
        good='''
            def run(steps):
                for _ in range(steps):
                    images, labels = next_batch()
                    images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    loss = F.cross_entropy(model(images), labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if DEVICE == "cuda":
                        peak_memory.append(torch.cuda.max_memory_allocated())
                return loss.detach()
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "ResNet-style training step on a batch of 256 64x64 crops that the host prepares with numpy (about as long "
            "as the GPU step), copied from pinned memory, with torch.cuda.synchronize() after every step (before a "
            "memory reading that needs no sync); the fix removes it. Same kernels in the same order: the last loss "
            "agrees up to cuDNN's run-to-run rounding (rtol 1e-4)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name not in _SYNCHRONIZE:
            return
        loop = ctx.analysis.loops.hot_loop(node, ctx.ancestors)
        if loop is None:
            return
        if ctx.analysis.contexts.timing_reads(loop):
            return  # timing code: the synchronization is what makes the clock reads mean something
        fix = None
        parent = ctx.ancestors[-1] if ctx.ancestors else None
        if isinstance(parent, ast.Expr) and parent.value is node:
            fix = self.make_fix(f"Remove `{name}()`", remove_statement(ctx.source, parent, ctx.ancestors[:-1]))
        self.report(ctx, node, fix=fix, name=name)
