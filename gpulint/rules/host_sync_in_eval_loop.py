from __future__ import annotations

from gpulint.rule import NONE, Example
from gpulint.rules.host_sync_in_loop import HostSyncInLoop


class HostSyncInEvalLoop(HostSyncInLoop):
    """
    ## What it does
    Flags the same host-device syncs as GPU101 (`.item()`, `.cpu()`,
    `.numpy()`, `.tolist()`, `float()`/`int()`/`bool()` of a tensor, printing
    or formatting a tensor, `if tensor:`), but in evaluation and inference
    loops: hot loops that iterate data (a DataLoader, or stored batches such as
    `for batch in batches:`) and run no `backward()` and no optimizer step.
    The same exemptions apply (periodic guards, code that runs once per loop,
    numpy values and host tensors, test files).

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
    fix_safety = NONE
    default = False
    element_reads = False  # loops over a tensor's elements are GPU101's, in any loop
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

    @staticmethod
    def covers_loop(analysis, loop) -> bool:
        """Evaluation / inference loops: they iterate data and take no training step."""
        if analysis.is_training_step_loop(loop):
            return False
        return analysis.is_step_loop(loop) or analysis.loop_iterates_data(loop)
