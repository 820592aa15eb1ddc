from __future__ import annotations

import ast
from textwrap import dedent
from typing import List, Optional

from gpulint.model.values.devices import CPU, DTYPE, device_arg_kind, has_star_args, keyword_value
from gpulint.model.values.loaders import batch_source, is_torch_dataloader_call, loader_constructions
from gpulint.edits import find_keyword, replace_node, set_keyword
from gpulint.rule import SAFE, TIME, Bench, Example, Rule
from gpulint.workloads import LOADER_TRAIN_LOOP_NON_BLOCKING, RESNET_CLASSIFIER_WITH_STEM

# taken from a batch without copying it: the result shares its pinned memory
VIEW_METHODS = frozenset(
    """items values get view view_as permute transpose unsqueeze squeeze narrow select unbind
    split chunk t expand expand_as""".split()
)
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, ...)
PIN_MEMORY_POSITION = 7


def _non_blocking(call: ast.Call) -> bool:
    """`.to(..., non_blocking=True)` / `.cuda(..., non_blocking=True)` / `.cuda(dev, True)`."""
    kw = find_keyword(call, "non_blocking")
    if kw is not None:
        return isinstance(kw.value, ast.Constant) and kw.value.value is True
    if isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and len(call.args) >= 2:
        a = call.args[1]
        return isinstance(a, ast.Constant) and a.value is True
    return False


def unpinned(fa, call: ast.Call) -> Optional[bool]:
    """True: the DataLoader does not pin memory; False: it does; None: unknown."""
    if not is_torch_dataloader_call(fa, call) or has_star_args(call):
        return None
    present, value = keyword_value(call, "pin_memory", PIN_MEMORY_POSITION)
    if not present:
        return True
    if isinstance(value, ast.Constant) and value.value is False:
        return True
    if isinstance(value, ast.Constant) and value.value is True:
        return False
    return None


class NonBlockingWithoutPinMemory(Rule):
    """
    ## What it does
    Flags `.to(device, non_blocking=True)` and `.cuda(non_blocking=True)` on a
    batch from a `DataLoader` that is built in the same file without
    `pin_memory=True` (the argument is absent, or `False`).

    A batch is a loop variable over a `DataLoader` and anything taken from it
    by indexing, attributes, unpacking or a `.items()` comprehension. The loop's
    loader is matched to its `DataLoader(...)` call: the same name assigned in
    the same function, else the same name (or `self` attribute) assigned
    elsewhere in the file, else, when the loop iterates a parameter, the file's
    only `DataLoader(...)` call (unless the file iterates that one itself and
    never hands it on). A `DataLoader` given `**kwargs` or a non-literal
    `pin_memory=` is left alone, and so is a loop whose loader is ambiguous.

    One finding per loop and `DataLoader`: at the first non-blocking copy of
    that loop (the fix is the same for every copy in it). A batch that is
    pinned by hand (`.pin_memory()`) or copied on the host on its way to the
    GPU (`.float()`, `.contiguous()`, ...) is not flagged: pinning the loader
    would not pin the tensor that is copied.

    ## Why is this bad?
    A host-to-device copy can only run asynchronously from page-locked
    (pinned) memory. From ordinary pageable memory the CUDA driver first
    copies the data into a pinned staging buffer on the CPU, and the call
    returns only after that host-side copy is done, so `non_blocking=True`
    buys next to nothing: the training loop still stalls on every batch
    copy instead of overlapping it with the GPU's work. With
    `pin_memory=True` the DataLoader's pin-memory thread puts each batch in
    pinned memory, which is what `non_blocking=True` needs.

    ## Fix safety
    Safe: the fix adds `pin_memory=True` to that `DataLoader(...)` call (or
    turns `pin_memory=False` into `True`). Pinning changes where the batch
    lives on the host, not its values. On a machine without CUDA, PyTorch only
    warns that pinning is unavailable and carries on.

    ## References
    - [torch.utils.data: memory pinning](https://pytorch.org/docs/stable/data.html#memory-pinning)
    - [CUDA semantics: use pinned memory buffers](https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers)
    - [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [A guide on good usage of non_blocking and pin_memory() in PyTorch](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    """

    code = "GPU201"
    name = "non-blocking-without-pin-memory"
    message = "`non_blocking=True` has no effect: this batch comes from a `DataLoader` without `pin_memory=True`"
    fix_safety = SAFE
    needles = ("non_blocking",)
    examples = (
        Example(
            bad="""
            import torch
            from torch.utils.data import DataLoader

            loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=8)
            for images, labels in loader:
                images = images.to("cuda", non_blocking=True)
                labels = labels.to("cuda", non_blocking=True)
                loss = criterion(model(images), labels)
            """,
            good="""
            import torch
            from torch.utils.data import DataLoader

            loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=8, pin_memory=True)
            for images, labels in loader:
                images = images.to("cuda", non_blocking=True)
                labels = labels.to("cuda", non_blocking=True)
                loss = criterion(model(images), labels)
            """,
        ),
    )
    bench = Bench(
        setup=dedent('''
            import torch
            import torch.nn.functional as F
            from torch import nn
            from torch.utils.data import DataLoader, TensorDataset

            # ImageNet-sized batches (64 x 3 x 224 x 224 float32, 38.5 MB) from 4 loader workers,
            # copied with non_blocking=True and fed to a ResNet-style classifier
            batch_size, size, width, classes, n_batches = (4, 32, 8, 10, 3) if SMALL else (64, 224, 64, 1000, 8)
            train_set = TensorDataset(
                torch.randn(n_batches * batch_size, 3, size, size), torch.randint(0, classes, (n_batches * batch_size,))
            )


            ''')
        + RESNET_CLASSIFIER_WITH_STEM
        + "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\n",
        bad=(
            "loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=4, persistent_workers=True)\n\n\n"
            + LOADER_TRAIN_LOOP_NON_BLOCKING
        ),
        good=(
            "loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=4, persistent_workers=True,"
            " pin_memory=True)\n\n\n"
            + LOADER_TRAIN_LOOP_NON_BLOCKING
        ),
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "ResNet-style training step on ImageNet-sized batches (64x3x224x224 float32) from a 4-worker DataLoader, "
            "copied with non_blocking=True from pageable (bad) or pinned (good) memory. Pinning does not change values: "
            "the last loss agrees up to cuDNN's run-to-run rounding (rtol 1e-4)"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._seen = set()

    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in ("to", "cuda")):
            return
        if not _non_blocking(node):
            return
        fa = ctx.analysis
        if func.attr == "to":
            target = find_keyword(node, "device")
            dev = target.value if target is not None else (node.args[0] if node.args else None)
            if dev is None or device_arg_kind(fa, dev) in (CPU, DTYPE):
                return  # a copy to the host, or a dtype cast
        recv = func.value
        ancestors = ctx.ancestors
        if not fa.values.is_batch(recv, ancestors):
            return
        methods: set = set()
        src = batch_source(fa, recv, list(ancestors) + [node, func], methods)
        if src is None or methods - VIEW_METHODS:
            # not traced to a loader; or pinned by hand, or copied on the host
            # (`.float()`, `.contiguous()`) on the way: pinning the loader
            # would not pin the tensor that is copied
            return
        producer, loader = src
        calls = loader_constructions(fa, loader, fa.index.ancestors(loader))
        if not calls:
            return
        states = [unpinned(fa, c) for c in calls]
        if not all(s is True for s in states):
            return
        key = (id(producer), tuple(sorted(id(c) for c in calls)))
        if key in self._seen:
            return
        self._seen.add(key)
        edits: List = [_pin_edit(ctx.source, c) for c in calls]
        fix = self.make_fix("Add `pin_memory=True` to the `DataLoader`", edits)
        self.report(ctx, node, fix=fix)


def _pin_edit(source, call: ast.Call):
    if len(call.args) > PIN_MEMORY_POSITION:
        return replace_node(source, call.args[PIN_MEMORY_POSITION], "True")
    return set_keyword(source, call, "pin_memory", "True")
