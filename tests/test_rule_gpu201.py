"""GPU201 non-blocking-without-pin-memory: linking a loop's batches to the
DataLoader(...) that makes them, and the exact `pin_memory=True` fix."""

from __future__ import annotations

import textwrap

from helpers import fix, lint

CODE = "GPU201"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def rows(code: str, path: str = "train.py"):
    return [f.row for f in lint(src(code), codes=[CODE], path=path)]


def fixed(code: str) -> str:
    return fix(src(code), codes=[CODE])


def test_flags_at_the_first_non_blocking_copy_of_the_loop():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=32, num_workers=4)
    for x, y in loader:
        x = x.cuda(non_blocking=True)
        y = y.cuda(non_blocking=True)
    """
    assert rows(code) == [5]  # once per loop and DataLoader, at the first copy


def test_fix_adds_pin_memory_to_a_one_line_call():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=32, num_workers=4)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    """
    assert fixed(code) == src(
        """
        from torch.utils.data import DataLoader

        loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
        for x, y in loader:
            x = x.to(device, non_blocking=True)
        """
    )


def test_fix_keeps_a_multi_line_call_with_trailing_comma():
    code = """
    import torch

    train_loader = torch.utils.data.DataLoader(
        train_dataset,
        batch_size=256,
        shuffle=True,
        num_workers=8,
    )
    for images, target in train_loader:
        images = images.cuda(0, non_blocking=True)
    """
    assert fixed(code) == src(
        """
        import torch

        train_loader = torch.utils.data.DataLoader(
            train_dataset,
            batch_size=256,
            shuffle=True,
            num_workers=8,
            pin_memory=True,
        )
        for images, target in train_loader:
            images = images.cuda(0, non_blocking=True)
        """
    )


def test_fix_multi_line_call_without_trailing_comma():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(
        ds,
        batch_size=32
    )
    for x in loader:
        x = x.to("cuda", non_blocking=True)
    """
    assert fixed(code) == src(
        """
        from torch.utils.data import DataLoader

        loader = DataLoader(
            ds,
            batch_size=32,
            pin_memory=True
        )
        for x in loader:
            x = x.to("cuda", non_blocking=True)
        """
    )


def test_pin_memory_false_becomes_true():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=32, pin_memory=False, num_workers=2)
    for x in loader:
        x = x.to("cuda", non_blocking=True)
    """
    assert rows(code) == [5]
    assert "DataLoader(ds, batch_size=32, pin_memory=True, num_workers=2)" in fixed(code)


def test_pinned_or_unknown_loaders_are_left_alone():
    code = """
    from torch.utils.data import DataLoader

    def a(ds):
        loader = DataLoader(ds, pin_memory=True)
        for x in loader:
            x.cuda(non_blocking=True)

    def b(ds, use_cuda):
        loader = DataLoader(ds, pin_memory=use_cuda)
        for x in loader:
            x.cuda(non_blocking=True)

    def c(ds, kwargs):
        loader = DataLoader(ds, batch_size=8, **kwargs)
        for x in loader:
            x.cuda(non_blocking=True)

    def d(ds):
        loader = DataLoader(ds, batch_size=8)
        loader = accelerator.prepare(loader)
        for x in loader:
            x.cuda(non_blocking=True)
    """
    assert rows(code) == []


def test_blocking_copies_and_non_batches_are_not_flagged():
    code = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x in loader:
        a = x.cuda(non_blocking=False)
        b = x.cuda()
        w = torch.ones(3).to("cuda", non_blocking=True)
        p = x.pin_memory().to("cuda", non_blocking=True)
    """
    assert rows(code) == []


def test_parameter_loader_linked_by_name_in_another_function():
    code = """
    import torch

    def train(train_loader, model):
        for i, (images, target) in enumerate(train_loader):
            images = images.cuda(non_blocking=True)

    def main(ds, model):
        train_loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4)
        val_loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
        train(train_loader, model)
    """
    assert rows(code) == [5]


def test_parameter_loader_linked_to_the_files_only_dataloader():
    code = """
    from torch.utils.data import DataLoader

    def train_epoch(model, loader):
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)

    def main(ds, model):
        dl = DataLoader(ds, batch_size=32, num_workers=4)
        train_epoch(model, dl)
    """
    assert rows(code) == [5]


def test_parameter_loader_with_two_dataloaders_in_the_file_is_unknown():
    code = """
    from torch.utils.data import DataLoader

    def train_epoch(model, loader):
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)

    def main(train_ds, val_ds):
        return DataLoader(train_ds, pin_memory=True), DataLoader(val_ds)
    """
    assert rows(code) == []


def test_only_dataloader_consumed_in_the_file_is_not_the_parameters():
    code = """
    from torch.utils.data import DataLoader

    def train_epoch(model, loader):
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)

    def validate(model, val_ds):
        val_loader = DataLoader(val_ds, batch_size=64)
        for x, y in val_loader:
            model(x.cuda())
    """
    assert rows(code) == []


def test_dict_comprehension_over_batch_items():
    code = """
    from torch.utils.data import DataLoader

    train_dataloader = DataLoader(ds, shuffle=True, collate_fn=collator, batch_size=8)
    for step, batch in enumerate(train_dataloader):
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        loss = model(**batch).loss
    """
    assert rows(code) == [5]


def test_tuple_generator_over_batch():
    code = """
    from torch.utils.data import DataLoader
    from tqdm import tqdm

    loader = DataLoader(ds, batch_size=8, num_workers=2)
    for batch in tqdm(loader, desc="train"):
        batch = tuple(t.to(device, non_blocking=True) for t in batch)
    """
    assert rows(code) == [6]


def test_next_of_iter_of_loader():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8, num_workers=2)
    it = iter(loader)
    for step in range(1000):
        x, y = next(it)
        x = x.to("cuda", non_blocking=True)
    """
    assert rows(code) == [7]


def test_self_attribute_loader():
    code = """
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, ds):
            self.loader = DataLoader(ds, batch_size=8, num_workers=2)

        def fit(self, model):
            for batch in self.loader:
                batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
    """
    assert rows(code) == [9]
    assert "DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)" in fixed(code)


def test_two_loops_over_two_loaders_in_one_function():
    # the same loop variable names: each loop is linked to its own loader
    code = """
    from torch.utils.data import DataLoader

    def run(train_ds, val_ds):
        train_loader = DataLoader(train_ds, batch_size=8, num_workers=2, pin_memory=True)
        val_loader = DataLoader(val_ds, batch_size=8, num_workers=2)
        for x, y in train_loader:
            x = x.cuda(non_blocking=True)
        for x, y in val_loader:
            x = x.cuda(non_blocking=True)
    """
    assert rows(code) == [9]


def test_positional_pin_memory():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, 32, True, None, None, 4, None, False)
    for x in loader:
        x = x.cuda(non_blocking=True)
    """
    assert rows(code) == [5]
    assert "DataLoader(ds, 32, True, None, None, 4, None, True)" in fixed(code)


def test_fix_is_safe():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds)
    for x in loader:
        x = x.cuda(non_blocking=True)
    """
    [finding] = lint(src(code), codes=[CODE])
    assert finding.fix is not None and finding.fix.applicability == "safe"
    # the edit is in the DataLoader statement, not at the finding
    assert finding.fix.edits[0].location[0] == 3


def test_tensor_pinned_or_copied_on_the_host_before_the_copy():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x, y in loader:
        x = x.pin_memory()
        x = x.cuda(non_blocking=True)
        y = y.float().cuda(non_blocking=True)
    """
    assert rows(code) == []


def test_views_of_the_batch_are_still_the_batch():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for batch in loader:
        x = batch["image"].permute(0, 3, 1, 2).to("cuda", non_blocking=True)
    """
    assert rows(code) == [5]


def test_copies_to_the_host_or_casts_are_not_flagged():
    code = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x, y in loader:
        a = x.to("cpu", non_blocking=True)
        b = x.to(torch.float16, non_blocking=True)
        c = x.to(non_blocking=True)
    """
    assert rows(code) == []
