from __future__ import annotations

import ast
import re
from textwrap import dedent
from typing import List, Optional

from gpulint.model.control.distributed import (
    calls_in,
    conditions_in_scope,
    data_parallel_calls,
    flows_from,
    is_distributed_sampler_call,
    local_class,
    mentions_distributed,
    runs_many_epochs,
    trained_loaders,
    words_of,
)
from gpulint.model.names import last_name
from gpulint.model.values.devices import has_star_args, keyword_value
from gpulint.model.values.loaders import DATALOADER_NAMES, is_torch_dataloader_call
from gpulint.rule import NONE, TIME, Bench, Example, Rule

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
SHUFFLE_POSITION, SAMPLER_POSITION, BATCH_SAMPLER_POSITION = 2, 3, 4
# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
SAMPLER_SHUFFLE_POSITION, SAMPLER_SEED_POSITION = 3, 4
SAMPLER_NAMES = frozenset(("DistributedSampler", "StatefulDistributedSampler"))
# a dataset built with any of these words shards itself (per rank, per node,
# per shard) or streams (an IterableDataset cannot take a sampler)
SELF_SHARDING_RE = re.compile(
    r"rank|world|shard|replica|distributed|node|partition|split_by|iterable|stream|webdataset|\bwds\b|datapipe|"
    r"IterDataPipe",
    re.I,
)
# data that each rank makes itself (rollouts of its own environments, random
# or synthetic samples): different on every rank, nothing to shard
PER_RANK_DATA_RE = re.compile(
    r"^(rand|randn|randint|randperm|rand_like|randn_like|normal)$|rollout|replay|buffer|synthetic|fake|dummy|"
    r"^envs?$|policy|generat|collect",
    re.I,
)
# tensor / pipeline / context parallelism: the ranks of a group must see the same batch
MODEL_PARALLEL_WORDS = (
    "parallelize_module", "ColwiseParallel", "RowwiseParallel", "SequenceParallel", "init_device_mesh", "DeviceMesh",
    "PipelineStage", "pipelining", "tensor_parallel", "model_parallel", "pipeline_parallel", "context_parallel",
    "torch.distributed.rpc",
)
# configuration objects: following them would pull in every option of the script
CONFIG_NAMES = frozenset(("args", "opt", "opts", "cfg", "config", "conf", "hparams", "hp", "FLAGS", "parser"))
MAP_STYLE_DATASETS = frozenset(("TensorDataset", "ImageFolder", "DatasetFolder", "Subset", "ConcatDataset"))

SET_EPOCH_MESSAGE = (
    "`{sampler}` is never given the epoch (`set_epoch`): it shuffles every epoch in the same order; call "
    "`sampler.set_epoch(epoch)` at the start of each epoch"
)


def _is_none(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _is_false(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value in (False, None, 0) and not isinstance(expr.value, str)


def _flow(fa, expr: Optional[ast.AST], depth: int = 4) -> List[ast.AST]:
    out = flows_from(fa, expr, depth)
    # drop what configuration objects were assigned from (`args = parser.parse_args()`)
    return [
        v for v in out
        if not (isinstance(v, ast.Call) and last_name(v.func) in ("parse_args", "parse_known_args"))
        and not (isinstance(v, ast.Call) and last_name(v.func) == "ArgumentParser")
    ]


def _local_dataset_kind(cls: ast.ClassDef) -> Optional[str]:
    """"map" / "iterable" for a Dataset class of the file, else None."""
    bases = [last_name(b) or "" for b in cls.bases]
    if any("Iterable" in b or "IterDataPipe" in b for b in bases):
        return "iterable"
    methods = {item.name for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "__iter__" in methods:
        return "iterable"
    if "__getitem__" in methods:
        return "map"
    return None


class DdpWithoutDistributedSampler(Rule):
    """
    ## What it does
    In a data-parallel training script (one that wraps its model in
    `DistributedDataParallel` or FSDP, or calls
    `torch.distributed.init_process_group`), flags:

    - a training `DataLoader` with no sampler at all: no `sampler=` and no
      `batch_sampler=`, over a map-style dataset (one it shuffles, or a
      `TensorDataset`, `ImageFolder` or `Dataset` class of the same file);
    - a `DistributedSampler` whose `set_epoch()` is never called, feeding a
      training loop that runs for several epochs.

    A *training* `DataLoader` is one that a loop of the same file iterates
    while taking training steps (`.backward()`, an optimizer step, directly or
    through one function or method of the file).

    Not flagged, because the sampler may well be distributed or is someone
    else's job: a `sampler=`/`batch_sampler=` given from a variable; a
    `DataLoader(**kwargs)`; a loader handed to a library that injects the
    sampler itself (`accelerator.prepare(loader)`, Lightning's
    `fabric.setup_dataloaders(loader)` or a `*_dataloader()` hook, a Hugging
    Face `Trainer`, an mmengine `Runner`: the file's own loop then iterates
    what the library returned, or the library runs the loop); a loader built
    under an `if` on something distributed (`if args.distributed:`,
    `if world_size > 1:`), which is the single-process branch of a script
    that does both; a dataset whose construction mentions the rank, world
    size, shards or nodes (it shards itself), that is iterable or streamed
    (an `IterableDataset` cannot take a sampler), or that each rank makes
    itself (rollouts, replay buffers, random or synthetic data); a loader
    that only evaluation loops iterate; scripts that use tensor, pipeline or
    context parallelism (`parallelize_module`, a `DeviceMesh`,
    `PipelineStage`: the ranks of a group must see the same batch); scripts
    without DDP, FSDP or a process group in the same file; test files. For
    `set_epoch`: any file that calls `set_epoch` anywhere (on the sampler,
    the loader, or `loader.sampler.set_epoch(...)`); a sampler with
    `shuffle=False` or a non-literal `seed=` (a new seed per epoch is the
    other way to reshuffle); a training loop that runs once (no epoch loop
    and no loop around it).

    Off by default: the labelled corpus (docs/accuracy.md) holds libraries
    and recipes that shard correctly and no hand-written DDP training script
    with this mistake, so the rule has no findings there to measure its
    precision on (it needs 10 at 95% to be on by default). It was checked on
    its fixtures and on realistic torchrun/`mp.spawn` scripts instead. Turn it
    on with `--select GPU002` for projects that write their own DDP loops.

    ## Why is this bad?
    `DistributedDataParallel` runs one process per GPU and averages their
    gradients every step. Each process builds its own `DataLoader`; without a
    `DistributedSampler` every one of them walks the *whole* dataset in the
    same (or an independently shuffled) order. An epoch then takes as many
    steps on N GPUs as on one: N times the work for no more data seen, and
    the "global batch" of N ranks is N copies of similar data. With
    `DistributedSampler(dataset)` each rank reads its own 1/N of the indices,
    so an epoch takes 1/N of the steps.

    `DistributedSampler` shuffles with a generator seeded by `seed + epoch`.
    The epoch is whatever `set_epoch()` last set, 0 by default: without the
    call every epoch visits the samples in exactly the same order on every
    rank. This costs no time, but the training is not shuffled between
    epochs, which usually hurts convergence.

    ## Fix safety
    No automatic fix. Adding a sampler changes what each rank sees, the
    number of steps per epoch (and so learning-rate schedules counted in
    steps), and requires removing `shuffle=True` from the `DataLoader` (the
    two cannot be combined): the script's author has to decide. Where the
    script also runs single-process, the usual form is
    `sampler = DistributedSampler(ds) if distributed else None` with
    `shuffle=(sampler is None)`. Evaluation loaders need
    `shuffle=False` (and note that `DistributedSampler` pads the last batch
    by repeating samples unless `drop_last=True`).

    ## References
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    - [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [Getting started with distributed data parallel](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html)
    - [Multi-GPU training with DDP (the tutorial series)](https://pytorch.org/tutorials/beginner/ddp_series_multigpu.html)
    """

    code = "GPU002"
    name = "ddp-without-distributed-sampler"
    message = (
        "`DataLoader` of a distributed (DDP) training script has no `DistributedSampler`: every rank iterates the "
        "whole dataset, so each epoch does world-size times the work; pass `sampler=DistributedSampler(dataset)`"
    )
    fix_safety = NONE
    default = False
    needles = ("DistributedDataParallel", "init_process_group", "FullyShardedDataParallel", "fully_shard",
               "DistributedSampler")
    examples = (
        Example(
            bad="""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader

            dist.init_process_group("nccl")
            model = DDP(model.cuda(), device_ids=[local_rank])
            loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8)
            for epoch in range(epochs):
                for images, labels in loader:
                    loss = criterion(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader, DistributedSampler

            dist.init_process_group("nccl")
            model = DDP(model.cuda(), device_ids=[local_rank])
            sampler = DistributedSampler(train_set)  # shuffles; each rank gets its own 1/world_size
            loader = DataLoader(train_set, batch_size=64, sampler=sampler, num_workers=8)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for images, labels in loader:
                    loss = criterion(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Example(
            title="DistributedSampler without set_epoch",
            bad="""
            from torch.utils.data import DataLoader, DistributedSampler

            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, batch_size=64, sampler=sampler, num_workers=8)
            for epoch in range(epochs):
                for images, labels in loader:
                    loss = criterion(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            from torch.utils.data import DataLoader, DistributedSampler

            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, batch_size=64, sampler=sampler, num_workers=8)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for images, labels in loader:
                    loss = criterion(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
        ),
    )
    bench = Bench(
        setup='''
            import numpy as np
            import torch
            import torch.distributed as dist
            import torch.nn.functional as F
            from torch import nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader, Dataset, DistributedSampler

            # One rank of a 2-GPU data-parallel job, simulated in one process: a ResNet-style classifier trained
            # for an epoch over 2048 decoded 64x64 images held in memory (one `run` step = one epoch of this rank).
            # No process group is started (the DDP wrap below is skipped), so only the data each rank walks differs.
            world_size, rank = 2, 0
            n_images, batch_size, size, width, classes = (16, 4, 16, 8, 10) if SMALL else (2048, 128, 64, 64, 1000)


            class DecodedImages(Dataset):
                """uint8 HWC images in memory, converted and normalised per sample as a transform would."""

                def __init__(self, n, size, classes):
                    g = np.random.default_rng(0)
                    self.images = torch.from_numpy(g.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8))
                    self.labels = torch.from_numpy(g.integers(0, classes, size=n))

                def __len__(self):
                    return len(self.images)

                def __getitem__(self, i):
                    x = self.images[i].permute(2, 0, 1).float().div_(255).sub_(0.5).div_(0.25)
                    return x, self.labels[i]


            train_set = DecodedImages(n_images, size, classes)


            def block(cin, cout, stride=1):
                conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                return nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


            model = nn.Sequential(
                block(3, width), block(width, 2 * width, 2),
                block(2 * width, 4 * width, 2), block(4 * width, 8 * width, 2),
                nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
            ).to(DEVICE)
            if dist.is_available() and dist.is_initialized():  # under torchrun; not here
                model = DDP(model)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            torch.manual_seed(0)
        ''',
        bad=dedent('''
            loader = DataLoader(
                train_set, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=2, persistent_workers=True
            )


            def run(epochs):
                model.train()
                for epoch in range(epochs):
                    for images, labels in loader:
                        images, labels = images.to(DEVICE), labels.to(DEVICE)
                        loss = F.cross_entropy(model(images), labels)
                        optimizer.zero_grad(set_to_none=True)
                        loss.backward()
                        optimizer.step()
                return loss.detach()
            '''),
        good=dedent('''
            sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True, drop_last=True)
            loader = DataLoader(
                train_set, batch_size=batch_size, sampler=sampler, drop_last=True, num_workers=2, persistent_workers=True
            )


            def run(epochs):
                model.train()
                for epoch in range(epochs):
                    sampler.set_epoch(epoch)
                    for images, labels in loader:
                        images, labels = images.to(DEVICE), labels.to(DEVICE)
                        loss = F.cross_entropy(model(images), labels)
                        optimizer.zero_grad(set_to_none=True)
                        loss.backward()
                        optimizer.step()
                return loss.detach()
            '''),
        metric=TIME,
        steps=3,
        warmup=1,
        check="none",
        note=(
            "One rank's epoch (one `run` step) of a ResNet-style classifier on 2048 64x64 in-memory images (a "
            "map-style Dataset, 2 persistent workers), batch 128, for a simulated world of 2 ranks without a process "
            "group: the bad loader walks the whole dataset (16 steps per epoch), `DistributedSampler(num_replicas=2, rank=0)` gives this rank half of it (8 steps); "
            "the ranks together see the dataset once per epoch either way. The two sides train on different samples, "
            "so their losses are not compared. `set_epoch` (the second message) has no speed cost: it only reshuffles"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        name = last_name(node.func)
        if name in DATALOADER_NAMES:
            self._check_loader(node, ctx)
        elif name in SAMPLER_NAMES:
            self._check_sampler(node, ctx)

    # ------------------------------------------------------------ no sampler
    def _check_loader(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if not is_torch_dataloader_call(fa, node) or has_star_args(node):
            return
        if not data_parallel_calls(fa) or node not in trained_loaders(fa):
            return
        if any(fa.index.mentions(w) for w in MODEL_PARALLEL_WORDS):
            return
        for arg, pos in (("sampler", SAMPLER_POSITION), ("batch_sampler", BATCH_SAMPLER_POSITION)):
            present, value = keyword_value(node, arg, pos)
            if present and not _is_none(value):
                return
        chain = list(ctx.ancestors) + [node]
        if any(mentions_distributed(test) for test in conditions_in_scope(chain)):
            return  # the single-process branch of a script that does both
        present, dataset = keyword_value(node, "dataset", 0)
        if not present or isinstance(dataset, ast.Starred):
            return
        flow = _flow(fa, dataset)
        for w in words_of(flow):
            if w not in CONFIG_NAMES and (SELF_SHARDING_RE.search(w) or PER_RANK_DATA_RE.search(w)):
                return
        map_style = False
        for call in calls_in(flow):
            cls = local_class(fa, call)
            if cls is not None:
                kind = _local_dataset_kind(cls)
                if kind == "iterable":
                    return
                map_style = map_style or kind == "map"
            q = fa.imports.qualname(call.func) or ""
            if q.startswith("torchvision.datasets.") or last_name(call.func) in MAP_STYLE_DATASETS:
                map_style = True
        shuffle_present, shuffle = keyword_value(node, "shuffle", SHUFFLE_POSITION)
        if shuffle_present and not _is_false(shuffle):
            map_style = True  # an IterableDataset cannot be shuffled by the DataLoader
        if not map_style:
            return
        self.report(ctx, node)

    # ------------------------------------------------------------ no set_epoch
    def _check_sampler(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if fa.index.mentions("set_epoch") or not is_distributed_sampler_call(fa, node):
            return
        present, shuffle = keyword_value(node, "shuffle", SAMPLER_SHUFFLE_POSITION)
        if present and _is_false(shuffle):
            return
        present, seed = keyword_value(node, "seed", SAMPLER_SEED_POSITION)
        if present and not isinstance(seed, ast.Constant):
            return  # `seed=epoch`: a new order each time the sampler is built
        for loader, loop in trained_loaders(fa).items():
            sources = []
            for arg, pos in (("sampler", SAMPLER_POSITION), ("batch_sampler", BATCH_SAMPLER_POSITION)):
                present, value = keyword_value(loader, arg, pos)
                if present and value is not None:
                    sources.extend(flows_from(fa, value, 3))
            for kw in loader.keywords:
                if kw.arg is None:  # `DataLoader(ds, **loader_kwargs)` with the sampler in the dict
                    sources.extend(flows_from(fa, kw.value, 3))
            if any(n is node for n in calls_in(sources)) and runs_many_epochs(fa, loop):
                self.report(ctx, node, message=SET_EPOCH_MESSAGE.format(sampler=last_name(node.func)))
                return
