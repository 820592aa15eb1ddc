from __future__ import annotations

import ast

from gpulint.rule import NONE, Example, Rule


class DataParallel(Rule):
    """
    ## What it does
    Flags the construction of `torch.nn.DataParallel`, in any import form
    (`nn.DataParallel`, `from torch.nn.parallel import DataParallel as DP`, ...).
    `isinstance` checks, strings, comments and unrelated classes that happen to
    be named `DataParallel` are not flagged.

    ## Why is this bad?
    `DataParallel` runs one Python process that drives every GPU from a single
    thread: each step it scatters the batch, replicates the model onto every
    device, gathers outputs on GPU 0 and reduces gradients there. The GIL, the
    per-step replication and the imbalance on GPU 0 cap its scaling well below
    `DistributedDataParallel` (one process per GPU, gradients all-reduced with
    NCCL and overlapped with backward). PyTorch's own documentation recommends
    `DistributedDataParallel` even on a single machine.

    ## Fix safety
    No automatic fix: moving to `DistributedDataParallel` changes how the
    program is launched (`torchrun`), how data is sharded (`DistributedSampler`)
    and how the process group is set up.

    ## References
    - [PyTorch: DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [PyTorch: Use nn.parallel.DistributedDataParallel instead of multiprocessing or nn.DataParallel](https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel)
    - [torchrun](https://pytorch.org/docs/stable/elastic/run.html)
    """

    code = "GPU001"
    name = "data-parallel"
    message = "`DataParallel` drives all GPUs from one process; use `DistributedDataParallel` launched with `torchrun`"
    fix_safety = NONE
    needles = ("DataParallel",)
    examples = (
        Example(
            bad="""
            import torch
            from torch import nn

            model = nn.Linear(1024, 1024).cuda()
            model = nn.DataParallel(model)
            """,
            good="""
            import os

            import torch
            import torch.distributed as dist
            from torch import nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            # launched with: torchrun --nproc_per_node=NUM_GPUS train.py
            dist.init_process_group("nccl")
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            model = nn.Linear(1024, 1024).cuda()
            model = DDP(model, device_ids=[local_rank])
            """,
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) == "torch.nn.DataParallel":
            self.report(ctx, node)
