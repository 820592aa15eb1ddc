"""What a project's other files tell a file: the device and precision its
program chooses, what a helper of another file returns, and the torch an
import pins."""

from __future__ import annotations

import os
from pathlib import Path

from cli_helpers import findings, invoke, write as write_one


def write(root: Path, files) -> None:
    for rel, text in files.items():
        write_one(root, rel, text)


def found(root: Path, *codes: str):
    """{(path below root, row, code)} of `gpulint check --preview .` with `codes` selected."""
    res = invoke(["check", "--preview", "--select", ",".join(codes), "."], root)
    assert res.exit_code in (0, 1), res.output
    return {(path.replace(os.sep, "/"), row, code) for path, row, _, code in findings(res.stdout)}


def test_a_helper_returning_a_read_number_hands_back_no_tensor(tmp_path):
    """`average_loss(loss, device)` returns `reduced.item()`: the caller's
    `loss`, a tensor the step returned just before, is now a Python number,
    and formatting it reads nothing from the GPU (picotron's step print)."""
    write(tmp_path, {
        "utils.py": """
            import torch


            def average_loss(loss, device):
                reduced = torch.tensor([loss if loss is not None else 0.0], dtype=torch.float32, device=device)
                return reduced.item()
        """,
        "engine.py": """
            def train_step(model, data_loader, device):
                acc = 0.0
                for batch in data_loader:
                    loss = model(batch.to(device)).sum()
                    loss.backward()
                    acc += loss.detach()
                return acc
        """,
        "train.py": """
            from engine import train_step
            from utils import average_loss


            def main(model, data_loader, optimizer, device, steps):
                for step in range(steps):
                    optimizer.zero_grad(set_to_none=True)
                    loss = train_step(model, data_loader, device)
                    loss = average_loss(loss, device)
                    optimizer.step()
                    print(f"Step: {step:<5d} | Loss: {loss:6.4f}")
        """,
    })
    assert found(tmp_path, "GPU101") == {("utils.py", 7, "GPU101")}


# a transformer trained by a pipeline step of another file (picotron): the trainer
# script chooses the precision, the step's file names none
PIPELINE = {
    "engine.py": """
        import torch


        def train_step(model, data_loader, device):
            total = 0.0
            for batch in data_loader:
                out = model(batch["x"].to(device))
                loss = out.sum()
                loss.backward()
                total += loss.detach()
            return total
    """,
    "model.py": """
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, 8)
                self.up = nn.Linear(d, 4 * d)
                self.down = nn.Linear(4 * d, d)

            def forward(self, x):
                a, _ = self.attn(x, x, x)
                return self.down(self.up(a))
    """,
    "train.py": """
        import torch
        from engine import train_step
        from model import Block


        def main(loader, steps):
            device = torch.device("cuda")
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
            model = Block(512).to(dtype).to(device)
            optimizer = torch.optim.AdamW(model.parameters(), fused=True)
            for _ in range(steps):
                optimizer.zero_grad(set_to_none=True)
                loss = train_step(model, loader, device)
                optimizer.step()
    """,
}


def test_a_step_called_by_a_file_that_chooses_a_reduced_precision_is_not_full_fp32(tmp_path):
    write(tmp_path, PIPELINE)
    assert not any(code == "GPU403" for _, _, code in found(tmp_path, "GPU403"))
    # the same trainer in full FP32: the step's file is flagged
    files = dict(PIPELINE)
    files["train.py"] = PIPELINE["train.py"].replace(
        "dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32", "dtype = torch.float32")
    write(tmp_path, files)
    assert ("engine.py", 10, "GPU403") in found(tmp_path, "GPU403")


def test_a_device_a_star_import_brings_from_a_config_file_is_cuda(tmp_path):
    """`train.py` names no device of its own: `device` comes from `conf.py`
    through `from data import *`, and `conf.py` names CUDA."""
    write(tmp_path, {
        "conf.py": """
            import torch

            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            batch_size = 128
        """,
        "data.py": """
            from conf import *

            loader = [(i, i) for i in range(10)]
        """,
        "model.py": PIPELINE["model.py"],
        "train.py": """
            from torch.optim import Adam
            from data import *
            from model import Block

            model = Block(512).to(device)
            optimizer = Adam(model.parameters(), lr=1e-4, fused=True)


            def train(iterator):
                model.train()
                for src, trg in iterator:
                    optimizer.zero_grad(set_to_none=True)
                    loss = model(src.to(device)).sum()
                    loss.backward()
                    optimizer.step()
        """,
    })
    assert ("train.py", 15, "GPU403") in found(tmp_path, "GPU403")


def test_a_metric_named_precision_is_no_precision_choice(tmp_path):
    """sklearn's `precision_recall_fscore_support` and a `precision` variable
    are the metric: they say nothing of the matmul precision."""
    files = {"model.py": PIPELINE["model.py"], "solver.py": """
        import torch
        from sklearn.metrics import precision_recall_fscore_support
        from model import Block


        def train(loader):
            model = Block(512).cuda()
            optimizer = torch.optim.Adam(model.parameters(), fused=True)
            for x in loader:
                optimizer.zero_grad(set_to_none=True)
                loss = model(x.cuda()).sum()
                loss.backward()
                optimizer.step()


        def test(gt, pred):
            precision, recall, f_score, support = precision_recall_fscore_support(gt, pred)
            return precision
    """}
    write(tmp_path, files)
    assert ("solver.py", 13, "GPU403") in found(tmp_path, "GPU403")


def test_a_model_wrapped_around_its_own_move_keeps_its_class(tmp_path):
    """`model = DDP(model.to(device), ...)` still holds the `Flow` built
    above, so its forward runs every step, and the constant table its
    helper of another file builds is copied every step (gmflow)."""
    write(tmp_path, {
        "utils.py": """
            import torch


            def normalize_img(img):
                mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).to(img.device)
                return img - mean
        """,
        "flow.py": """
            from torch import nn
            from utils import normalize_img


            class Flow(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(3, 8, 3)

                def forward(self, img):
                    return self.conv(normalize_img(img))
        """,
        "main.py": """
            import torch
            from flow import Flow


            def main(args, loader, device):
                model = Flow().to(device)
                if args.distributed:
                    model = torch.nn.parallel.DistributedDataParallel(model.to(device), device_ids=[0])
                optimizer = torch.optim.AdamW(model.parameters(), fused=True)
                for img, target in loader:
                    loss = (model(img.to(device)) - target.to(device)).abs().mean()
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
        """,
    })
    assert ("utils.py", 6, "GPU203") in found(tmp_path, "GPU203")


def test_torchtext_legacy_pins_the_torch_of_the_program_that_imports_it(tmp_path):
    """`torchtext.legacy` is gone from the torchtext of torch 1.11: a
    program that imports it runs on torch 1.10, which has no fused Adam."""
    files = {
        "util/data_loader.py": """
            from torchtext.legacy.data import Field, BucketIterator
        """,
        "data.py": """
            from util.data_loader import Field
        """,
        "train.py": """
            import torch
            from torch.optim import Adam
            from data import Field


            def train(loader):
                model = torch.nn.Linear(4, 4).cuda()
                optimizer = Adam(model.parameters(), lr=1e-4)
                for x in loader:
                    optimizer.zero_grad(set_to_none=True)
                    model(x.cuda()).sum().backward()
                    optimizer.step()
        """,
    }
    write(tmp_path, files)
    assert not any(code == "GPU405" for _, _, code in found(tmp_path, "GPU405"))
    files["util/data_loader.py"] = "import numpy\n"
    write(tmp_path, files)
    assert ("train.py", 9, "GPU405") in found(tmp_path, "GPU405")


def test_metric_helpers_called_right_after_one_that_read_wait_for_nothing_new(tmp_path):
    """The segmentation metrics imported with `*`: `get_accuracy` reads on
    the host after the step (the wait), and `get_specificity`, called right
    after it returned, waits only for its few comparison kernels. A star
    import finds the project's facts of what it binds."""
    write(tmp_path, {
        "evaluation.py": """
            import torch


            def get_accuracy(SR, GT, threshold=0.5):
                SR = SR > threshold
                GT = GT == torch.max(GT)
                corr = torch.sum(SR == GT)
                return float(corr) / SR.numel()


            def get_specificity(SR, GT, threshold=0.5):
                SR = SR > threshold
                GT = GT == torch.max(GT)
                TN = ((SR == 0) + (GT == 0)) == 2
                FP = ((SR == 1) + (GT == 0)) == 2
                return float(torch.sum(TN)) / (float(torch.sum(TN + FP)) + 1e-6)
        """,
        "solver.py": """
            import torch
            from evaluation import *


            def train(unet, loader, optimizer, criterion, device):
                acc = SP = 0.0
                for images, GT in loader:
                    images, GT = images.to(device), GT.to(device)
                    SR = unet(images)
                    loss = criterion(SR, GT)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    acc += get_accuracy(SR, GT)
                    SP += get_specificity(SR, GT)
        """,
    })
    assert found(tmp_path, "GPU101") == {("evaluation.py", 9, "GPU101")}


def test_a_dataset_class_of_another_file_serving_stored_items_needs_no_workers(tmp_path):
    """ABSA-PyTorch's `ABSADataset` tokenizes everything in `__init__` and
    its `__getitem__` returns `self.data[index]`: a loader over it (bound to
    a `self` attribute, then split) is in memory. A dataset class of another
    file that decodes per item still is not."""
    write(tmp_path, {
        "data_utils.py": """
            from PIL import Image
            from torch.utils.data import Dataset


            class TokenizedDataset(Dataset):
                def __init__(self, lines, tokenizer):
                    self.data = [tokenizer(line) for line in lines]

                def __getitem__(self, index):
                    return self.data[index]

                def __len__(self):
                    return len(self.data)


            class ImageDataset(Dataset):
                def __init__(self, paths):
                    self.paths = paths

                def __getitem__(self, index):
                    return Image.open(self.paths[index])

                def __len__(self):
                    return len(self.paths)
        """,
        "train.py": """
            import torch
            from torch.utils.data import DataLoader, random_split
            from data_utils import ImageDataset, TokenizedDataset


            class Instructor:
                def __init__(self, lines, paths, tokenizer):
                    self.trainset = TokenizedDataset(lines, tokenizer)
                    self.trainset, self.valset = random_split(self.trainset, (90, 10))
                    self.images = ImageDataset(paths)

                def run(self, model, optimizer):
                    texts = DataLoader(dataset=self.trainset, batch_size=16, shuffle=True)
                    images = DataLoader(dataset=self.images, batch_size=16, shuffle=True)
                    for batch in texts:
                        loss = model(batch.cuda()).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                    for batch in images:
                        loss = model(batch.cuda()).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
        """,
    })
    assert found(tmp_path, "GPU202") == {("train.py", 15, "GPU202")}


def test_an_option_another_file_declares_keeps_its_default_there(tmp_path):
    """TTSR: `option.py` declares `--num_gpu` with `default=1`, and the
    trainer wraps in `DataParallel` only `if not args.cpu and args.num_gpu >
    1:`, which is false at that default: the user asks for several GPUs
    (GPU001 leaves it). An option the program does not declare stays
    unknown, and its wrap is reported."""
    write(tmp_path, {
        "option.py": """
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("--num_gpu", type=int, default=1)
            parser.add_argument("--cpu", action="store_true")
            args = parser.parse_args()
        """,
        "trainer.py": """
            import torch
            from torch import nn
            from option import args


            def train(model, loader, world):
                model = model.cuda()
                if not args.cpu and args.num_gpu > 1:
                    model = nn.DataParallel(model, list(range(args.num_gpu)))
                if world.size > 1:
                    model = nn.DataParallel(model)
                optimizer = torch.optim.Adam(model.parameters(), fused=True)
                for x, y in loader:
                    loss = (model(x.cuda()) - y.cuda()).abs().mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    assert found(tmp_path, "GPU001") == {("trainer.py", 12, "GPU001")}


def _seeded_training(model_module: str, model_text: str) -> dict:
    return {
        f"{model_module}.py": model_text,
        "train.py": f"""
            import torch
            from {model_module} import Net

            torch.backends.cudnn.deterministic = True


            def train(loader):
                net = Net().cuda()
                opt = torch.optim.Adam(net.parameters())
                for x, y in loader:
                    loss = (net(x.cuda()) - y.cuda()).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """,
    }


def test_cudnn_deterministic_counts_only_where_the_program_names_cudnn_work(tmp_path):
    """`cudnn.deterministic = True` in a script whose program (the models file
    it imports) builds MLPs only restricts no cuDNN kernel (DiffRec, the
    offline-RL kits): not flagged. Where the imported models file builds a
    convolution, or where the models come from a package the project does not
    hold, it is."""
    mlp = """
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

            def forward(self, x):
                return self.fc(x)
    """
    write(tmp_path / "mlp", _seeded_training("models", mlp))
    assert found(tmp_path / "mlp", "GPU503") == set()
    write(tmp_path / "conv", _seeded_training("models", mlp.replace("nn.Linear(8, 64)", "nn.Conv1d(8, 64, 3)")))
    assert found(tmp_path / "conv", "GPU503") == {("train.py", 5, "GPU503")}
    outside = _seeded_training("other", "X = 1\n")
    outside["train.py"] = outside["train.py"].replace("from other import Net", "from somepackage import Net")
    write(tmp_path / "outside", outside)
    assert found(tmp_path / "outside", "GPU503") == {("train.py", 5, "GPU503")}


def test_a_script_imports_the_module_below_its_own_folder_where_sub_projects_share_names(tmp_path):
    """DiffRec's four variants each hold `main.py` and `models/diffusion.py`:
    `from models.diffusion import Diffusion` in `DiffRec/main.py` is
    `DiffRec/models/diffusion.py`, as the script's folder comes first on
    `sys.path`, so the per-step method it calls is read and its host read
    found, in every variant."""
    model = """
        import torch


        class Diffusion:
            def __init__(self, steps):
                self.counts = torch.zeros(steps, dtype=torch.long).cuda()

            def training_losses(self, model, x, ts):
                loss = model(x)
                for t in ts:
                    if self.counts[t] == 10:
                        self.counts[t] = 0
                return loss.mean()
    """
    main = """
        import torch
        from models.diffusion import Diffusion


        def train(model, loader, optimizer):
            diffusion = Diffusion(100)
            for batch in loader:
                batch = batch.cuda()
                ts = torch.randint(0, 100, (batch.size(0),), device=batch.device)
                loss = diffusion.training_losses(model, batch, ts)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    write(tmp_path, {f"{variant}/{rel}": text for variant in ("DiffRec", "L-DiffRec")
                     for rel, text in (("main.py", main), ("models/diffusion.py", model))})
    assert found(tmp_path, "GPU101") == {(f"{variant}/models/diffusion.py", 12, "GPU101")
                                        for variant in ("DiffRec", "L-DiffRec")}


def test_a_base_class_forward_left_to_subclasses_reaches_their_layers_through_a_rewrapped_encoder(tmp_path):
    """EfficientConformer: `Model.fit` (a module class with no `forward` of its
    own) calls `self.forward(batch)`, which `ModelCTC` defines; it calls
    `self.encoder`, re-bound to `DistributedDataParallel(self.encoder)` in
    another method (still the encoder's forward when called), whose forward
    runs `self.augment` under `if self.training:` (taken by every training
    step). The read in the augmentation runs every step."""
    write(tmp_path, {
        "models/base.py": """
            import torch
            from torch import nn


            class Model(nn.Module):
                def fit(self, loader, optimizer):
                    for batch in loader:
                        loss = self.forward([t.cuda() for t in batch]).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
        """,
        "models/layers.py": """
            import torch
            from torch import nn


            class Augment(nn.Module):
                def forward(self, x, lengths):
                    for b in range(x.size(0)):
                        x[b, : int(0.1 * lengths[b].item())] = 0
                    return x


            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.augment = Augment()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x, lengths):
                    if self.training:
                        x = self.augment(x, lengths)
                    return self.proj(x)
        """,
        "models/ctc.py": """
            import torch
            from models.base import Model
            from models.layers import Encoder


            class ModelCTC(Model):
                def __init__(self):
                    super().__init__()
                    self.encoder = Encoder()

                def distribute(self, rank):
                    self.encoder = torch.nn.parallel.DistributedDataParallel(self.encoder, device_ids=[rank])

                def forward(self, batch):
                    x, lengths = batch
                    return self.encoder(x, lengths)
        """,
    })
    assert found(tmp_path, "GPU101") == {("models/layers.py", 9, "GPU101")}
