"""GPU202 dataloader-without-workers: which DataLoaders feed a GPU, the
in-memory and configured exceptions, and the exact (unsafe) fix."""

from __future__ import annotations

import textwrap

from helpers import fix, lint

CODE = "GPU202"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def rows(code: str, path: str = "train.py"):
    return [f.row for f in lint(src(code), codes=[CODE], path=path)]


def fixed(code: str, unsafe: bool = True) -> str:
    return fix(src(code), codes=[CODE], unsafe=unsafe)


ONE_LINE = """
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=32, shuffle=True)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
"""


def test_flags_the_dataloader_call():
    assert rows(ONE_LINE) == [3]


def test_fix_one_line():
    assert fixed(ONE_LINE) == src(
        """
        from torch.utils.data import DataLoader

        loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, persistent_workers=True)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
        """
    )


def test_fix_is_unsafe_and_needs_opt_in():
    [finding] = lint(src(ONE_LINE), codes=[CODE])
    assert finding.fix.applicability == "unsafe"
    assert fixed(ONE_LINE, unsafe=False) == src(ONE_LINE)


def test_fix_multi_line_with_trailing_comma():
    code = """
    import torch

    train_loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=64,
        shuffle=True,
    )
    for data, target in train_loader:
        data, target = data.to(device), target.to(device)
    """
    assert fixed(code) == src(
        """
        import torch

        train_loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=64,
            shuffle=True,
            num_workers=4,
            persistent_workers=True,
        )
        for data, target in train_loader:
            data, target = data.to(device), target.to(device)
        """
    )


def test_num_workers_zero_is_replaced():
    code = """
    from torch.utils.data import DataLoader

    loader = DataLoader(
        ds,
        batch_size=64,
        num_workers=0,
        persistent_workers=False,
    )
    for x in loader:
        x = x.to(device)
    """
    assert rows(code) == [3]
    assert fixed(code) == src(
        """
        from torch.utils.data import DataLoader

        loader = DataLoader(
            ds,
            batch_size=64,
            num_workers=4,
            persistent_workers=True,
        )
        for x in loader:
            x = x.to(device)
        """
    )


def test_configured_workers_are_left_alone():
    code = """
    from torch.utils.data import DataLoader

    def f(ds, args, kw):
        a = DataLoader(ds, num_workers=args.workers)
        b = DataLoader(ds, **kw)
        c = DataLoader(ds, num_workers=2)
        d = DataLoader(ds)
        for x in d:
            x.cuda()
        for x in a:
            x.cuda()
        for x in b:
            x.cuda()
        for x in c:
            x.cuda()
    """
    assert rows(code) == [7]  # only `d`


def test_tensor_dataset_directly_or_through_a_split():
    code = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset, random_split

    full = TensorDataset(torch.randn(1000, 8), torch.randn(1000))
    train_set, val_set = random_split(full, [900, 100])
    a = DataLoader(train_set, batch_size=32)
    b = DataLoader(TensorDataset(x, y), batch_size=32)
    c = DataLoader(ImageFolder(root), batch_size=32)
    for x, y in a:
        x.cuda()
    for x, y in b:
        x.cuda()
    for x, y in c:
        x.cuda()
    """
    assert rows(code) == [8]  # only the ImageFolder loader


def test_batches_not_moved_to_a_gpu():
    code = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x in loader:
        a = x.to(torch.float16)
        b = x.to("cpu")
        c = x.to(dtype=torch.float32)
        model(x)
    for x in DataLoader(ds2, batch_size=8):
        x = x.to(0)
    """
    assert rows(code) == [10]  # only the loader whose batches go to cuda:0


def test_moved_with_a_device_variable_or_attribute():
    code = """
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, ds):
            self.device = "cuda"
            self.loader = DataLoader(ds, batch_size=8)

        def fit(self):
            for batch in self.loader:
                batch = {k: v.to(self.device) for k, v in batch.items()}
    """
    assert rows(code) == [6]


def test_test_files_are_skipped():
    assert rows(ONE_LINE, path="tests/test_loader.py") == []


def test_dataset_or_collate_that_use_cuda_themselves():
    code = """
    import torch
    from torch.utils.data import DataLoader, Dataset

    class OnGpu(Dataset):
        def __getitem__(self, i):
            return self.data[i].cuda()

    def collate(samples):
        return torch.stack(samples).to("cuda")

    a = DataLoader(OnGpu(), batch_size=8)
    b = DataLoader(ds, batch_size=8, collate_fn=collate)
    c = DataLoader(ds, batch_size=8, collate_fn=default_collate)
    for x in a:
        x.cuda()
    for x in b:
        x.cuda()
    for x in c:
        x.cuda()
    """
    assert rows(code) == [13]  # only `c`


def test_non_torch_dataloader_is_not_flagged():
    code = """
    from mylib import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x in loader:
        x.cuda()
    """
    assert rows(code) == []


# ------------------------------------------- loaders built by a setup method
RECIPE = """
import torch
from torch.utils.data import DataLoader, DistributedSampler
from torchtune import utils


class Recipe:
    def setup(self, cfg):
        self._device = torch.device("cuda")
        self._sampler, self._dataloader = self._setup_data(cfg)

    def _setup_data(self, cfg):
        sampler = DistributedSampler(cfg.ds)
        dataloader = DataLoader(cfg.ds, batch_size=4, sampler=sampler)
        return sampler, dataloader

    def train(self):
        for idx, batch in enumerate(self._dataloader):
            utils.batch_to_device(batch, self._device)
"""


def test_loader_returned_in_a_tuple_and_moved_by_a_helper():
    assert rows(RECIPE) == [13]


def test_tuple_positions_must_match():
    # the attribute iterated is bound to the sampler, not to the loader
    code = RECIPE.replace("return sampler, dataloader", "return dataloader, sampler")
    assert rows(code) == []


def test_helper_to_cpu_or_dtype_is_not_a_gpu_move():
    assert rows(RECIPE.replace("batch_to_device(batch, self._device)", 'batch_to_device(batch, "cpu")')) == []
    assert rows(RECIPE.replace("batch_to_device(batch, self._device)", "to_device(batch, torch.float16)")) == []


def test_helper_names_that_move_a_batch():
    for helper in ("move_to_device", "to_device", "send_to_device"):
        assert rows(RECIPE.replace("utils.batch_to_device", helper)) == [13], helper
    # a helper whose name does not say it moves the batch
    assert rows(RECIPE.replace("utils.batch_to_device", "utils.log_batch")) == []


def test_method_that_does_not_always_return_a_loader():
    code = RECIPE.replace(
        "        return sampler, dataloader",
        "        if cfg.cached:\n            return sampler, cfg.batches\n        return sampler, dataloader",
    )
    assert rows(code) == []


def test_generator_method_is_not_a_loader_factory():
    code = RECIPE.replace("return sampler, dataloader", "yield sampler, dataloader")
    assert rows(code) == []


STATEFUL = """
import torch
from torchdata.stateful_dataloader import StatefulDataLoader


class Recipe:
    def setup(self, cfg):
        self._device = torch.device("cuda")
        self._dataloader = self._setup_data(cfg)

    def _setup_data(self, cfg):
        loader = StatefulDataLoader(cfg.ds, batch_size=4, shuffle=True)
        return loader

    def train(self, model):
        for batch in self._dataloader:
            tokens = batch["tokens"].to(self._device)
            model(tokens)
"""


def test_stateful_dataloader_returned_by_a_method():
    assert rows(STATEFUL) == [11]


def test_stateful_dataloader_fix():
    assert "StatefulDataLoader(cfg.ds, batch_size=4, shuffle=True, num_workers=4, persistent_workers=True)" in fixed(
        STATEFUL
    )


def test_stateful_dataloader_with_workers_or_from_elsewhere():
    assert rows(STATEFUL.replace("shuffle=True)", "shuffle=True, num_workers=cfg.workers)")) == []
    # a class of the same name that is not torchdata's
    code = STATEFUL.replace("from torchdata.stateful_dataloader import", "from mylib.loaders import")
    assert rows(code) == []


def test_self_attributes_of_two_classes_are_not_mixed():
    code = STATEFUL + """

class Evaluator:
    def setup(self, cfg):
        self._dataloader = self._setup_data(cfg)

    def _setup_data(self, cfg):
        return StatefulDataLoader(cfg.ds, batch_size=4)

    def run(self, model):
        for batch in self._dataloader:
            model(batch["tokens"])
"""
    assert rows(code) == [11]


# ------------------------------------------- the move one call away from the loop
HANDED_TO_METHOD = """
import torch
from torch.utils.data import DataLoader


class PairTrainer:
    def __init__(self, cfg):
        self._device = torch.device("cuda")
        self._loader = self._build(cfg)

    def _build(self, cfg):
        return DataLoader(cfg.pairs, batch_size=8, shuffle=True)

    def step(self, model, batch):
        ids, labels = batch
        ids = ids.to(self._device)
        return model(ids), labels

    def train(self, model):
        for batch in self._loader:
            self.step(model, batch)
"""


def test_batch_moved_inside_a_method_it_is_passed_to():
    assert rows(HANDED_TO_METHOD) == [11]


def test_batch_passed_by_keyword_to_a_method():
    assert rows(HANDED_TO_METHOD.replace("self.step(model, batch)", "self.step(model=model, batch=batch)")) == [11]


def test_method_that_moves_something_else_is_not_a_move_of_the_batch():
    code = HANDED_TO_METHOD.replace("ids = ids.to(self._device)", "ids = ids.float()\n        model.to(self._device)")
    assert rows(code) == []


def test_method_called_with_something_other_than_the_batch():
    assert rows(HANDED_TO_METHOD.replace("self.step(model, batch)", "self.step(model, self._prompt)")) == []


def test_method_of_another_object_with_the_same_name_is_not_followed():
    assert rows(HANDED_TO_METHOD.replace("self.step(model, batch)", "model.step(model, batch)")) == []


def test_parameter_rebound_in_the_method_is_not_followed():
    code = HANDED_TO_METHOD.replace(
        "        return model(ids), labels",
        "        batch = self._pending.pop()\n        return model(ids), labels",
    )
    assert rows(code) == []


def test_star_args_over_the_parameter_are_not_followed():
    assert rows(HANDED_TO_METHOD.replace("self.step(model, batch)", "self.step(*extra, batch)")) == []


HANDED_TO_FUNCTION = """
from torch.utils.data import DataLoader


def forward_on(model, batch, device):
    return model(**{k: v.to(device) for k, v in batch.items()})


def main(model, data, device):
    loader = DataLoader(data, batch_size=32)
    for batch in loader:
        forward_on(model, batch, device)
"""


def test_batch_moved_inside_a_module_function_it_is_passed_to():
    assert rows(HANDED_TO_FUNCTION) == [9]


def test_module_function_shadowed_by_an_import_is_not_followed():
    code = HANDED_TO_FUNCTION.replace(
        "from torch.utils.data import DataLoader",
        "from torch.utils.data import DataLoader\nfrom mylib.steps import forward_on",
    )
    assert rows(code) == []


def test_only_one_call_deep():
    code = HANDED_TO_FUNCTION.replace(
        "        forward_on(model, batch, device)",
        "        relay(model, batch, device)",
    ) + """

def relay(model, batch, device):
    return forward_on(model, batch, device)
"""
    assert rows(code) == []


PREDICT = """
import torch
from torch.utils.data import DataLoader


class Model:
    def predict(self, X):
        self.network.eval()
        loader = DataLoader(PredictDataset(X), batch_size=1024)
        out = []
        for data in loader:
            data = data.to(self.device).float()
            out.append(self.network(data).cpu())
        return torch.cat(out)
"""


def test_a_one_off_inference_pass_is_not_flagged():
    # pytorch-tabnet's predict / predict_proba / explain: once, over in-memory arrays
    assert rows(PREDICT) == []


def test_an_inference_pass_run_from_a_loop_is_flagged():
    code = PREDICT + """

    def fit(self, X, epochs):
        for epoch in range(epochs):
            self.train_epoch()
            self.predict(X)
"""
    assert rows(code) == [8]


def test_a_pass_that_trains_is_flagged():
    code = PREDICT.replace("out.append(self.network(data).cpu())", "self.network(data).sum().backward()")
    assert rows(code) == [8]


def test_batches_moved_with_type_to_a_cuda_tensor_type():
    # the idiom of older training scripts (PyTorch-GAN): `.type(Tensor)` with a CUDA type
    code = """
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets

        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        dataloader = DataLoader(datasets.MNIST("data", download=True), batch_size=64, shuffle=True)
        for imgs, _ in dataloader:
            real_imgs = imgs.type(Tensor)
    """
    assert rows(code) == [7]
    assert rows(code.replace("imgs.type(Tensor)", 'imgs.type(torch.cuda.FloatTensor)')) == [7]
    # a CPU type, or a dtype string, is no move
    assert rows(code.replace("torch.cuda.FloatTensor if cuda else ", "")) == []
    assert rows(code.replace("imgs.type(Tensor)", 'imgs.type("torch.FloatTensor")')) == []


PADDED = """
import torch
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __init__(self, clips, max_size):
        self.data = torch.cat(clips, dim=1)
        self.offsets = [0] + [c.size(1) for c in clips]
        self.max_size = max_size

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, idx):
        start, end = self.offsets[idx], self.offsets[idx + 1]
        out = torch.zeros((1, self.max_size))
        out[:, :end - start] = self.data[:, start:end]
        return out


def train(model, optimizer, clips):
    loader = DataLoader(Clips(clips, 20480), batch_size=8, shuffle=True)
    for x in loader:
        loss = model(x.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_dataset_padding_slices_of_what_init_loaded_is_in_memory():
    # CPC_audio's SingleSequenceDataset: `__getitem__` copies one stored slice into a zero buffer
    assert rows(PADDED) == []
    # the same dataset reading each clip from a file per item needs workers
    assert rows(PADDED.replace("self.data[:, start:end]", "torch.load(self.paths[idx])")) == [22]
