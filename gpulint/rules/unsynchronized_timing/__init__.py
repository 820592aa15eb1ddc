from __future__ import annotations

import ast
from textwrap import dedent

from gpulint.model.control.constants import dead_statements
from gpulint.model.index.nodes import FUNCS
from gpulint.rules.unsynchronized_timing.clock_intervals import clock_intervals, unsynchronized_work
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import RESNET18
from gpulint.model.index.walk import walk


class UnsynchronizedTiming(Rule):
    """
    ## What it does
    Flags a host clock read (`time.time()`, `time.perf_counter()`,
    `time.monotonic()`, `timeit.default_timer()`, in any import form) that ends
    a timed interval around CUDA work when nothing waits for the GPU between
    the last of that work and the read.

    An interval is `t0 = clock()` followed, in the same function, by
    `clock() - t0`, or by `t1 = clock()` used as `t1 - t0`. A start assigned at
    the end of a loop body times the next pass through the loop (the
    `end = time.time()` of the PyTorch ImageNet example). CUDA work is a model
    forward, a criterion, `.backward()`, an optimizer step, torch operations
    and arithmetic on tensors, and `non_blocking=True` copies. What waits for
    the GPU: `torch.cuda.synchronize()`, `event.synchronize()`,
    `torch.cuda.current_stream().synchronize()`, `dist.barrier()`, and host
    reads of a tensor (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
    `float(t)`, printing or formatting a tensor, `if t:`), a blocking
    `.to(device)` copy (also as the lambda a call maps over a batch,
    `map_dict(lambda x: x.to(device), batch)`), writing a model or tensors out (`torch.save`,
    `torch.jit.save`, `torch.onnx.export`, and `torch.jit.trace`, which
    checks its trace against the model's outputs: each copies device values
    to the host, so an export script's clock reads the whole export), a
    call of a function of the same file that does one of these, or a call of
    a project function whose every return reads on the host (`return
    out.cpu().numpy()`).

    Not flagged:
    - intervals around CPU-only work: data loading, tokenization, file IO
      (moving or reshaping a batch that came from a DataLoader counts as data
      loading), and torch work on tensors known to live in host memory
      (`torch.from_numpy(a)`, a factory without `device=`, `.cpu()`
      results);
    - an interval that ends with a sync, and a loop inside the interval that
      syncs in every pass (timing a whole epoch whose steps call
      `loss.item()`: at most one step's tail is missed);
    - a whole pass over data inside the interval (a loop over a DataLoader, or
      one that runs the model on each item): the CPU runs at most a few steps
      ahead of the GPU, a small part of an epoch or an evaluation run. A loop
      that repeats work a counted number of times (`for _ in range(iters):`,
      the benchmark pattern) is flagged, unless every pass takes fresh data
      for the model: `range(len(data))`, or a body that draws
      `buffer.sample(...)`, `next(it)` or `data[i]` / `data[i * bs:(i + 1) *
      bs]` indexed by the loop variable (not under a periodic `if`), whose
      value, directly or through names bound from it in the loop, reaches a
      model forward, a criterion or a `.backward()` (the minibatch loop of a
      replay-buffer or PPO update). The same inputs timed over and over take
      nothing fresh and are flagged;
    - a meter over many passes of a loop that is such a pass over data or that
      syncs in every pass: the clock is read in a block that does not run
      every pass (`if step % log_every == 0:`), and the interval starts before
      the loop or is restarted in such a block (a throughput meter over
      `log_every` steps). A per-step time read only now and then is flagged;
    - a meter read and restarted in every pass of a loop that syncs in every
      pass (`time_left = ... (time.time() - prev_time)`, `prev_time =
      time.time()`, then `print(loss.item())`): each reading spans one pass
      from one sync to the next, so it measures the pass on average (an ETA,
      the ImageNet example's `batch_time`). Once the per-pass sync is gone
      (as GPU101 advises), the same meter reads launch time and is flagged.
      So is a meter never restarted, read in every pass of such a loop
      (`step / (time.time() - t0)`, an objective-vs-time curve): each reading
      spans whole synced passes but the current one's tail, an error that
      shrinks with every pass. One restarted another way (`self.iter_time =
      tnow`) is read as before, and a never-restarted meter in a loop that
      does not sync every pass is flagged;
    - a step timer started and read in every pass, with a host sync of the
      pass between the two and no model forward or backward after that
      sync (picotron's `step_start_time`, a loss read through a helper that
      returns `.item()`, then the optimizer step): the sync waits for the
      pass's work and the previous pass's tail, so each reading is one
      pass's worth of work. In a training loop, whose every pass
      backpropagates, with the clock read every `print_freq` passes (DPC's
      `T:`, with the loss read before the backward), the backward after that
      sync is waited for by the reading pass's sync, so that timer is not
      flagged either; read on every pass, it is (a printout after the reading
      may wait for the backward outside every reading: tacotron2's
      `duration`). A request timed from its blocking
      upload to after its forward is flagged: the reading misses the forward;
    - model calls on raw inputs (`model("bus.jpg")`, `model(numpy_image)`):
      predictors that do their own pre- and post-processing;
    - differences that are compared (`if time.time() - t0 > timeout:`):
      timeouts and log throttles, not measurements;
    - a difference stored in a local name that is never read again
      (`model_time = time.time() - model_time` with its print commented
      out): the figure reaches nobody;
    - timers under a module-level switch that the file sets to False once
      and never changes (`time_it = False` ... `if time_it:`), and
      differences printed only under `if False:`: the user turns them on
      by editing the file;
    - files that never mention CUDA.

    A module-level alias of `torch.cuda.synchronize` (`synchronize =
    torch.cuda.synchronize if device_type == "cuda" else lambda: None`) syncs
    like the function itself.

    ## Why is this bad?
    CUDA kernels run asynchronously: a forward, a backward or an optimizer
    step returns as soon as its kernels are queued, long before the GPU has
    run them. A host clock read right after measures how long it took to
    *launch* the work, and the time the GPU actually spends is billed to
    whatever line next waits for it. Latency and throughput figures computed
    this way can be off by a wide margin, and optimizations chosen from them
    are chosen blind. Even in a loop that waits for the GPU once per step,
    each step's figure holds part of the previous step's GPU work instead of
    its own tail, so per-step timings and per-phase meters are misattributed.

    ## Fix safety
    No automatic fix: where to synchronize is part of what is being measured.
    Call `torch.cuda.synchronize()` right before reading the clock (and before
    starting it), time on the GPU with `torch.cuda.Event(enable_timing=True)`
    and `start.elapsed_time(end)` after synchronizing the end event, or use
    `torch.utils.benchmark.Timer`, which synchronizes and warms up for you.

    ## References
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - [torch.cuda.synchronize](https://pytorch.org/docs/stable/generated/torch.cuda.synchronize.html)
    - [torch.cuda.Event](https://pytorch.org/docs/stable/generated/torch.cuda.Event.html)
    - [PyTorch benchmark recipe (torch.utils.benchmark)](https://pytorch.org/tutorials/recipes/recipes/benchmark.html)
    """

    code = "GPU601"
    name = "unsynchronized-timing"
    message = (
        "`{clock}` ends a timed interval while CUDA work may still be queued: kernels run asynchronously, "
        "so this measures launch time, not GPU time; call `torch.cuda.synchronize()` before reading the clock"
    )
    fix_safety = NONE
    needles = ("time(", "time_ns", "perf_counter", "monotonic", "default_timer", "from time import")
    examples = (
        Example(
            bad="""
            import time

            import torch

            model = torch.nn.Linear(4096, 4096).cuda()
            x = torch.randn(256, 4096, device="cuda")
            with torch.inference_mode():
                start = time.perf_counter()
                for _ in range(100):
                    y = model(x)
                elapsed = time.perf_counter() - start
            print(f"{elapsed / 100 * 1e3:.2f} ms per batch")
            """,
            good="""
            import time

            import torch

            model = torch.nn.Linear(4096, 4096).cuda()
            x = torch.randn(256, 4096, device="cuda")
            with torch.inference_mode():
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(100):
                    y = model(x)
                torch.cuda.synchronize()
                elapsed = time.perf_counter() - start
            print(f"{elapsed / 100 * 1e3:.2f} ms per batch")
            """,
        ),
        Example(
            title="CUDA events",
            bad="""
            import time

            import torch

            def step_time(model, images, labels, optimizer):
                images, labels = images.cuda(), labels.cuda()
                t0 = time.time()
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
                t1 = time.time()
                return t1 - t0
            """,
            good="""
            import torch

            def step_time(model, images, labels, optimizer):
                images, labels = images.cuda(), labels.cuda()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
                end.record()
                end.synchronize()
                return start.elapsed_time(end) / 1000
            """,
        ),
    )

    bench = Bench(
        setup=dedent("""
            import time

            import torch
            from torch import nn

            if DEVICE == "cuda":
                torch.backends.cudnn.benchmark = True

            """)
        + RESNET18
        + dedent("""\
            images = torch.randn(batch, 3, size, size, device=DEVICE).to(memory_format=torch.channels_last)
            model.eval()
            timings = []
            """),
        bad="""
        def run(steps):
            # measure the inference latency per batch
            with torch.inference_mode():
                start = time.perf_counter()
                for _ in range(steps):
                    output = model(images)
                elapsed = time.perf_counter() - start
            timings.append(elapsed / steps)
            return output
        """,
        good="""
        def run(steps):
            # measure the inference latency per batch
            with torch.inference_mode():
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(steps):
                    output = model(images)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                elapsed = time.perf_counter() - start
            timings.append(elapsed / steps)
            return output
        """,
        metric=TIME,
        check="allclose",
        rtol=1e-4,
        atol=1e-4,
        note=(
            "inference latency benchmark of a ResNet-18-sized conv net on 256x3x224x224 (channels_last): the fix buys a"
            " correct latency figure (the bad side records launch time), not speed; two syncs per timed run cost"
            " nothing measurable, so expect no measurable gain; same kernels, outputs agree up to cuDNN nondeterminism"
        ),
    )

    def end_file(self, ctx) -> None:
        fa = ctx.analysis
        if not fa.index.uses_cuda:
            return
        scopes = [fa.tree] + list(fa.index.nodes(*FUNCS))
        dead = dead_statements(fa.index)  # `if time_it:` with `time_it = False`: a timer the user turns on
        for scope in scopes:
            flagged = set()
            for interval in clock_intervals(fa, scope):
                if id(interval.end) in flagged:
                    continue
                if dead and any(id(a) in dead for a in fa.index.ancestors(interval.end)):
                    continue
                if unsynchronized_work(fa, scope, interval) and not _never_read(fa, scope, interval.end):
                    flagged.add(id(interval.end))
                    clock = ctx.node_text(interval.end.func) + "()"
                    self.report(ctx, interval.end, clock=clock)


def _never_read(fa, scope, end) -> bool:
    """`model_time = time.time() - model_time`, and `model_time` is not read
    again in `scope` (YOLOv4's evaluate keeps a commented-out print): the
    wrong figure reaches nobody."""
    sub = fa.index.parents.get(end)
    stmt = fa.index.parents.get(sub) if isinstance(sub, ast.BinOp) else None
    if not (isinstance(stmt, ast.Assign) and stmt.value is sub and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    if isinstance(scope, ast.Module):
        return False  # a module-level name: others may read it
    inside = {id(n) for n in walk(stmt)}
    for n in walk(scope):
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return False  # bound outside the def: others may read it
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in inside:
            return False
    return True
