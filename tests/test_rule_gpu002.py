"""GPU002 ddp-without-distributed-sampler: the training loader of a DDP script
with no sampler, a DistributedSampler never given the epoch, and the many
ways real scripts shard correctly."""

from __future__ import annotations

import textwrap

from helpers import lint

CODE = "GPU002"
NO_SAMPLER = "no `DistributedSampler`"
NO_EPOCH = "never given the epoch"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def findings(code: str, path: str = "train.py"):
    return [(f.row, f.message) for f in lint(src(code), codes=[CODE], path=path)]


def flagged_rows(code: str, path: str = "train.py"):
    return [row for row, _ in findings(code, path)]


DDP_HEAD = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("nccl")
model = DDP(build().cuda())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""

LOOP = """
for epoch in range(10):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def script(loader_line: str, head: str = DDP_HEAD, loop: str = LOOP) -> str:
    return src(head) + loader_line + "\n" + src(loop)


def loader_row(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("loader ="))


def test_shuffled_loader_without_sampler_is_flagged():
    text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)")
    got = findings(text)
    assert [row for row, _ in got] == [loader_row(text)]
    assert NO_SAMPLER in got[0][1]


def test_every_trigger_of_a_data_parallel_script():
    for head in (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom torch.distributed import init_process_group\n"
        "init_process_group('nccl')\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n",
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n",
    ):
        text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", head=head)
        assert flagged_rows(text) == [loader_row(text)], head


def test_no_data_parallel_in_the_file_is_not_flagged():
    head = "import torch\nfrom torch.utils.data import DataLoader\nmodel = build().cuda()\n"
    assert flagged_rows(script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", head=head)) == []
    # DistributedDataParallel only mentioned, never constructed
    head2 = head + "# TODO: wrap in DistributedDataParallel and init_process_group\n"
    assert flagged_rows(script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", head=head2)) == []


def test_any_sampler_argument_is_trusted():
    for line in (
        "loader = DataLoader(train_set, batch_size=64, sampler=sampler)",
        "loader = DataLoader(train_set, batch_size=64, sampler=make_sampler(train_set))",
        "loader = DataLoader(train_set, batch_sampler=GroupedBatchSampler(train_set, 64))",
        "loader = DataLoader(train_set, 64, False, sampler)",  # positional sampler
        "loader = DataLoader(train_set, **loader_kwargs)",
        "loader = DataLoader(*loader_args)",
    ):
        assert flagged_rows(script(line)) == [], line
    # `sampler=None` is no sampler
    text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True, sampler=None)")
    assert flagged_rows(text) == [loader_row(text)]


def test_only_training_loops_count():
    eval_loop = """
    with torch.no_grad():
        for x, y in loader:
            model(x.cuda())
    """
    assert flagged_rows(script("loader = DataLoader(val_set, batch_size=64, shuffle=True)", loop=eval_loop)) == []
    # a loop that hands each batch to a training-step function of the file counts
    helper_loop = """
    def train_step(batch):
        loss = model(batch[0].cuda()).sum()
        loss.backward()
        optimizer.step()

    for epoch in range(3):
        for batch in loader:
            train_step(batch)
    """
    text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", loop=helper_loop)
    assert flagged_rows(text) == [loader_row(text)]
    # a loader built but never iterated here (handed to a library): not flagged
    lib_loop = """
    trainer.train(loader)
    """
    assert flagged_rows(script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", loop=lib_loop)) == []


def test_library_prepared_loaders_are_not_flagged():
    accel = "loader = accelerator.prepare(loader)\n" + src(LOOP)
    fabric = "loader = fabric.setup_dataloaders(loader)\n" + src(LOOP)
    for loop in (accel, fabric):
        assert flagged_rows(script("loader = DataLoader(train_set, batch_size=64, shuffle=True)", loop=loop)) == []


def test_single_process_branch_is_not_flagged():
    text = script(
        "if args.distributed:\n"
        "    loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set))\n"
        "else:\n"
        "    loader = DataLoader(train_set, batch_size=64, shuffle=True)\n"
        "loader.sampler.set_epoch(0)"
    )
    assert flagged_rows(text) == []
    text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True) if world_size == 1 else None")
    assert flagged_rows(text) == []


def test_self_sharding_or_per_rank_datasets_are_not_flagged():
    for line in (
        "loader = DataLoader(ShardedSet(path, rank=dist.get_rank()), batch_size=8, shuffle=True)",
        "loader = DataLoader(split_dataset_by_node(raw, rank=r, world_size=w), batch_size=8)",
        "loader = DataLoader(load_dataset('c4', streaming=True), batch_size=8)",
        "loader = DataLoader(Files(files[local_rank::n]), batch_size=8, shuffle=True)",
        "loader = DataLoader(TensorDataset(torch.randn(512, 3)), batch_size=8, shuffle=True)",
        "loader = DataLoader(TensorDataset(*collect_rollouts(envs)), batch_size=8, shuffle=True)",
    ):
        assert flagged_rows(script(line)) == [], line


def test_dataset_followed_through_assignments():
    text = script(
        "files = sorted(glob.glob('data/*.pt'))\n"
        "mine = files[int(os.environ['RANK'])::int(os.environ['WORLD_SIZE'])]\n"
        "ds = Files(mine)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)"
    )
    assert flagged_rows(text) == []
    # following stops at the argument parser: its help texts are not the dataset
    text = script(
        "parser = argparse.ArgumentParser(description='distributed training on every rank')\n"
        "args = parser.parse_args()\n"
        "ds = datasets.ImageFolder(args.data)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)"
    )
    assert flagged_rows(text) == [loader_row(text)]


def test_iterable_or_unknown_datasets_need_evidence_of_map_style():
    iterable = """
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            yield from range(10)

    """
    text = script("loader = DataLoader(Stream(), batch_size=8)", head=DDP_HEAD + src(iterable))
    assert flagged_rows(text) == []
    # an imported dataset without shuffling may be iterable: not flagged
    assert flagged_rows(script("loader = DataLoader(corpus, batch_size=8)")) == []
    # a map-style class of the file, or a torchvision dataset, is enough without shuffle
    mapstyle = """
    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i

    """
    text = script("loader = DataLoader(Images(), batch_size=8)", head=DDP_HEAD + src(mapstyle))
    assert flagged_rows(text) == [loader_row(text)]
    text = script("loader = DataLoader(torchvision.datasets.CIFAR10('data'), batch_size=8)",
                  head=DDP_HEAD + "import torchvision\n")
    assert flagged_rows(text) == [loader_row(text)]


def test_tensor_parallel_scripts_are_not_flagged():
    head = DDP_HEAD + "from torch.distributed.tensor.parallel import parallelize_module\n"
    assert flagged_rows(script("loader = DataLoader(train_set, batch_size=8, shuffle=True)", head=head)) == []


def test_test_files_are_not_flagged():
    text = script("loader = DataLoader(train_set, batch_size=64, shuffle=True)")
    assert flagged_rows(text, path="tests/test_ddp.py") == []
    assert flagged_rows("import pytest\n" + text, path="test_ddp.py") == []
    assert flagged_rows(text, path="test_ddp.py") != []  # a script named like a test, using no test framework


# ------------------------------------------------------------------ set_epoch
SAMPLER_HEAD = """
import torch
from torch.utils.data import DataLoader, DistributedSampler
"""


def sampler_row(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "DistributedSampler(" in line)


def test_sampler_without_set_epoch_is_flagged():
    text = script(
        "sampler = DistributedSampler(train_set)\nloader = DataLoader(train_set, batch_size=64, sampler=sampler)",
        head=SAMPLER_HEAD,
    )
    got = findings(text)
    assert [row for row, _ in got] == [sampler_row(text)]
    assert NO_EPOCH in got[0][1] and "`DistributedSampler`" in got[0][1]


def test_set_epoch_in_any_spelling_is_enough():
    for call in ("sampler.set_epoch(epoch)", "loader.sampler.set_epoch(epoch)",
                 "getattr(loader.sampler, 'set_epoch')(epoch)"):
        loop = LOOP.replace("for epoch in range(10):\n", f"for epoch in range(10):\n    {call}\n")
        text = script(
            "sampler = DistributedSampler(train_set)\nloader = DataLoader(train_set, batch_size=64, sampler=sampler)",
            head=SAMPLER_HEAD, loop=loop,
        )
        assert flagged_rows(text) == [], call


def test_sampler_cases_that_need_no_epoch():
    for line in (
        "sampler = DistributedSampler(train_set, shuffle=False)",
        "sampler = DistributedSampler(train_set, 2, 0, False)",
        "sampler = DistributedSampler(train_set, seed=args.seed + epoch)",
    ):
        text = script(line + "\nloader = DataLoader(train_set, batch_size=64, sampler=sampler)", head=SAMPLER_HEAD)
        assert flagged_rows(text) == [], line
    # a literal seed is the same seed every epoch: still flagged
    text = script(
        "sampler = DistributedSampler(train_set, seed=0)\nloader = DataLoader(train_set, batch_size=64, sampler=sampler)",
        head=SAMPLER_HEAD,
    )
    assert flagged_rows(text) == [sampler_row(text)]


def test_sampler_of_a_single_pass_or_of_evaluation_is_not_flagged():
    one_pass = """
    for x, y in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()
    """
    text = script(
        "sampler = DistributedSampler(train_set)\nloader = DataLoader(train_set, batch_size=64, sampler=sampler)",
        head=SAMPLER_HEAD, loop=one_pass,
    )
    assert flagged_rows(text) == []
    evaluation = """
    for epoch in range(3):
        for x, y in loader:
            model(x.cuda())
    """
    text = script(
        "sampler = DistributedSampler(val_set)\nloader = DataLoader(val_set, batch_size=64, sampler=sampler)",
        head=SAMPLER_HEAD, loop=evaluation,
    )
    assert flagged_rows(text) == []


def test_epoch_loop_found_through_calls():
    text = src(
        """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler


        def train_one_epoch(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()


        def main(train_set, model, optimizer, epochs):
            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, batch_size=64, sampler=sampler)
            for epoch in range(epochs):
                train_one_epoch(model, loader, optimizer)
        """
    )
    assert flagged_rows(text) == [sampler_row(text)]
    # the same function called once: one pass, not flagged
    assert flagged_rows(text.replace("for epoch in range(epochs):\n        train_one", "train_one")) == []


def test_sampler_linked_through_kwargs_dicts_and_recipes():
    text = src(
        """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler


        def main(dataset, model, optimizer, args):
            sampler1 = DistributedSampler(dataset, shuffle=True)
            train_kwargs = {"batch_size": args.batch_size, "sampler": sampler1}
            train_kwargs.update({"num_workers": 2})
            train_loader = DataLoader(dataset, **train_kwargs)
            for epoch in range(args.epochs):
                for x, y in train_loader:
                    model(x.cuda()).sum().backward()
                    optimizer.step()


        class Recipe:
            def setup(self, cfg):
                self._sampler, self._dataloader = self._setup_data(cfg)

            def _setup_data(self, cfg):
                ds = build_dataset(cfg)
                sampler = DistributedSampler(ds, shuffle=True, seed=0)
                dataloader = DataLoader(ds, batch_size=cfg.batch_size, sampler=sampler)
                return sampler, dataloader

            def train(self):
                for curr_epoch in range(self.total_epochs):
                    for batch in self._dataloader:
                        self._model(**batch).loss.backward()
                        self._optimizer.step()
        """
    )
    rows = [i for i, line in enumerate(text.splitlines(), 1) if "DistributedSampler(" in line and "import" not in line]
    assert flagged_rows(text) == rows


def test_local_class_named_distributed_sampler_is_not_torchs():
    text = src(
        """
        import torch
        from torch.utils.data import DataLoader


        class DistributedSampler:
            def __init__(self, dataset):
                self.dataset = dataset


        sampler = DistributedSampler(train_set)
        loader = DataLoader(train_set, batch_size=64, sampler=sampler)
        """
    ) + src(LOOP)
    assert flagged_rows(text) == []
