from __future__ import annotations

import ast
from textwrap import dedent

from gpulint.model.index.order import nested_nodes
from gpulint.model.index.walk import walk

from gpulint.rule import NONE, TIME, Bench, Example
from gpulint.workloads import RESNET_CLASSIFIER
from gpulint.model.values.callfacts import EVAL
from gpulint.rules.host_sync_in_loop import HostSyncInLoop


class HostSyncInEvalLoop(HostSyncInLoop):
    """
    ## What it does
    Flags the same host-device syncs as GPU101 (`.item()`, `.cpu()`,
    `.numpy()`, `.tolist()`, `float()`/`int()`/`bool()`/`str()` of a tensor,
    printing or formatting a tensor, a tensor's truth value in `if tensor:`,
    `if loss < best:`, `assert`, `x if t else y` and `max()`/`min()`), but
    in evaluation and inference loops: hot loops that iterate data (a DataLoader, or stored batches such as
    `for batch in batches:`) and run no `backward()` and no optimizer step.
    The same exemptions apply (periodic guards, code that runs once per loop,
    numpy values and host tensors, test files). A loop whose own body runs
    whole passes over the data (a loop or comprehension of its own over a
    DataLoader, or calling the model per element: `for part in parts:
    preds[part] = torch.cat([model(X[i]) for i in batches]).cpu()`) is a
    loop over splits, not batches: its reads run once per pass.

    Off by default: in the labelled study (docs/accuracy.md) most of these
    findings were reads an evaluation loop cannot avoid, such as predictions
    copied to the host to be saved or scored with numpy. Turn it on with
    `--select GPU104` when tuning an evaluation or inference loop whose
    per-batch reads are only bookkeeping (accuracy counters, running losses).

    ## Why is this bad?
    Each read makes the host wait until the GPU has finished every kernel
    queued so far, so the next batch cannot be loaded, moved and launched
    while the GPU works on this one. In an evaluation loop that counts
    correct predictions with `.item()` per batch, the GPU idles during every
    host-side step of the loop; keeping the counters on the GPU and reading
    them once at the end removes the stall.

    ## Fix safety
    No automatic fix: whether a value can stay on the GPU until the end of
    the loop depends on what the loop does with it on the host.

    ## References
    - [PyTorch performance tuning guide: avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    """

    code = "GPU104"
    name = "host-sync-in-eval-loop"
    message = "`{expr}` in an evaluation loop waits for the GPU every batch (host-device sync)"
    function_message = "`{expr}` in `{function}`, which runs every evaluation batch, waits for the GPU (host-device sync)"
    fix_safety = NONE
    default = False
    element_reads = False  # loops over a tensor's elements are GPU101's, in any loop
    step_kind = EVAL  # functions that run every step of an evaluation loop
    examples = (
        Example(
            bad="""
            import torch

            model.eval()
            correct = 0
            with torch.inference_mode():
                for images, labels in val_loader:
                    images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                    preds = model(images).argmax(dim=1)
                    correct += (preds == labels).sum().item()
            accuracy = correct / len(val_loader.dataset)
            """,
            good="""
            import torch

            model.eval()
            correct = torch.zeros((), dtype=torch.long, device="cuda")
            with torch.inference_mode():
                for images, labels in val_loader:
                    images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                    preds = model(images).argmax(dim=1)
                    correct += (preds == labels).sum()
            accuracy = correct.item() / len(val_loader.dataset)
            """,
        ),
    )
    bench = Bench(
        setup=dedent('''
            import numpy as np
            import torch
            import torch.nn.functional as F
            from torch import nn

            # evaluation of a ResNet-style classifier on 64x64 center crops, batch 256; the input
            # pipeline (crop, normalise) runs on the host with numpy, between the batches
            batch_size, size, width, classes, n_images = (8, 16, 8, 4, 32) if SMALL else (256, 64, 160, 1000, 4096)
            rng = np.random.default_rng(0)


            class ValLoader:
                """Center-crops and normalises validation batches with numpy, one batch at a time."""

                def __init__(self, images, targets):
                    self.images, self.targets = images, targets
                    self.mean = np.array([123.7, 116.3, 103.5], dtype=np.float32)
                    self.std = np.array([58.4, 57.1, 57.4], dtype=np.float32)

                def __iter__(self):
                    for start in range(0, len(self.images) - batch_size + 1, batch_size):
                        crops = self.images[start : start + batch_size, 4 : 4 + size, 4 : 4 + size]
                        x = np.ascontiguousarray(((crops - self.mean) / self.std).transpose(0, 3, 1, 2), dtype=np.float32)
                        x, y = torch.from_numpy(x), torch.from_numpy(self.targets[start : start + batch_size])
                        if torch.cuda.is_available():
                            x, y = x.pin_memory(), y.pin_memory()
                        yield x, y


            val_loader = ValLoader(
                rng.integers(0, 256, size=(n_images, size + 8, size + 8, 3), dtype=np.uint8),
                rng.integers(0, classes, size=n_images),
            )


            ''')
        + RESNET_CLASSIFIER
        + "model.eval()\n",
        bad='''
            def run(steps):
                total_loss, correct, seen = 0.0, 0, 0
                with torch.inference_mode():
                    while seen < steps * batch_size:
                        for images, labels in val_loader:
                            images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                            logits = model(images)
                            total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
                            correct += (logits.argmax(dim=1) == labels).sum().item()
                            seen += labels.size(0)
                            if seen == steps * batch_size:
                                break
                return total_loss / seen, correct / seen
        ''',
        good='''
            def run(steps):
                total_loss = torch.zeros((), device=DEVICE)
                correct = torch.zeros((), dtype=torch.long, device=DEVICE)
                seen = 0
                with torch.inference_mode():
                    while seen < steps * batch_size:
                        for images, labels in val_loader:
                            images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                            logits = model(images)
                            total_loss += F.cross_entropy(logits, labels, reduction="sum")
                            correct += (logits.argmax(dim=1) == labels).sum()
                            seen += labels.size(0)
                            if seen == steps * batch_size:
                                break
                return total_loss.item() / seen, correct.item() / seen
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-6,
        note=(
            "Evaluation of a ResNet-style classifier on batches of 256 64x64 crops that the host prepares with numpy, "
            "copied from pinned memory; bad reads the summed loss and the correct count with .item() per batch, good "
            "keeps both on the GPU and reads them once. Same kernels: the accuracy is equal, the mean loss agrees up to "
            "float32 vs float64 summation (rtol 1e-4)"
        ),
    )

    @staticmethod
    def covers_loop(analysis, loop) -> bool:
        """Evaluation / inference loops: they iterate data and take no training step."""
        if analysis.loops.is_training_step_loop(loop) or around_data_passes(analysis, loop):
            return False  # (a loop over splits, each a whole pass over a loader: once per pass)
        return analysis.loops.is_step_loop(loop) or analysis.loops.loop_iterates_data(loop)


def around_data_passes(analysis, loop: ast.AST) -> bool:
    """The loop's body runs whole passes over data: a loop or a
    comprehension of its own iterates a DataLoader, or runs the model on
    each element (`torch.cat([model(X[idx]) for idx in batches]).cpu()`
    for each split): what its own code does runs once per pass over the
    data, not once per batch. Not a loop over a DataLoader itself (a batch
    loop with an inner loop of its own: test-time augmentation)."""
    loops, values, index = analysis.loops, analysis.values, analysis.index

    def compute() -> bool:
        if loops.loop_iterates_loader(loop, index.ancestors(loop)):
            return False
        for n in nested_nodes(loop):
            if isinstance(n, (ast.For, ast.AsyncFor)):
                if loops.loop_iterates_loader(n, index.ancestors(n)) or _runs_model(analysis, n.body):
                    return True
            elif isinstance(n, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
                gen = n.generators[0]
                base, _ = values.unwrap(gen.iter)
                if values.is_loader(base, values.info_for(index.ancestors(gen.iter)).kinds) or _runs_model(analysis, [n.elt]):
                    return True
        return False

    return index.memoized("gpu104.around_data_passes", loop, compute)  # type: ignore[return-value]


def _runs_model(analysis, nodes) -> bool:
    """A model's forward called among `nodes` and their descendants (`Steps.is_model_call`)."""
    return any(analysis.steps.is_model_call(n, analysis.index.ancestors(n)) for top in nodes for n in walk(top))
