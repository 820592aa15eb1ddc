"""GPU403 fp32-without-tf32-or-amp: file-level precision choices, the loops it
points at, and the one-per-file unsafe fix."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint

CODE = "GPU403"

LOOP = """
def train(model, loader, optimizer, device):
    model.to(device)
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def rows(code: str, **kw):
    return [f.row for f in lint(src(code), codes=[CODE], **kw)]


def test_flags_first_backward_of_each_training_loop():
    code = """
        import torch

        device = torch.device("cuda")
        for epoch in range(10):
            for x, y in loader:
                d_loss = crit(netD(x.to(device)), y)
                d_loss.backward()
                g_loss = crit(netD(netG(z)), y)
                g_loss.backward()
        for x in loader:
            for _ in range(5):
                model(x.cuda()).sum().backward()
            model(x.cuda()).mean().backward()
        """
    assert rows(code) == [7, 12, 13]


def test_fix_is_inserted_once_after_the_imports():
    code = src(
        """
        import os

        import torch
        from torch import nn

        def train(model, loader, opt):
            for x, y in loader:
                nn.functional.mse_loss(model(x.cuda()), y.cuda()).backward()
                opt.step()
            for x, y in loader:
                nn.functional.l1_loss(model(x.cuda()), y.cuda()).backward()
                opt.step()
        """
    )
    assert [f.row for f in lint(code, codes=[CODE])] == [8, 11]
    assert fix(code, codes=[CODE]) == code  # unsafe: needs opt-in
    out = fix(code, codes=[CODE], unsafe=True)
    assert out == code.replace(
        "from torch import nn\n", 'from torch import nn\n\ntorch.set_float32_matmul_precision("high")\n'
    )
    assert out.count("set_float32_matmul_precision") == 1
    assert lint(out, codes=[CODE]) == []


def test_fix_uses_the_torch_alias():
    code = 'import torch as th\nDEV = "cuda"\n' + LOOP
    out = fix(code, codes=[CODE], unsafe=True)
    assert out.startswith('import torch as th\n\nth.set_float32_matmul_precision("high")\nDEV = "cuda"\n')


def test_fix_adds_import_torch_when_only_from_imports():
    code = 'from torch import nn\nDEVICE = "cuda"\n' + LOOP
    out = fix(code, codes=[CODE], unsafe=True)
    assert out.startswith('from torch import nn\n\nimport torch\n\ntorch.set_float32_matmul_precision("high")\n')
    compile(out, "x.py", "exec")


def test_fix_without_a_trailing_newline():
    code = "import torch\nfor x in loader:\n    model(x.cuda()).sum().backward()"
    out = fix(code, codes=[CODE], unsafe=True)
    assert out == (
        'import torch\n\ntorch.set_float32_matmul_precision("high")\n'
        "for x in loader:\n    model(x.cuda()).sum().backward()"
    )


@pytest.mark.parametrize(
    "header",
    [
        'torch.set_float32_matmul_precision("high")',
        'torch.set_float32_matmul_precision("highest")  # a deliberate choice',
        "torch.set_float32_matmul_precision(args.matmul_precision)",
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "torch.backends.cuda.matmul.allow_tf32 = False",
        'torch.backends.cuda.matmul.fp32_precision = "tf32"',
        "torch.backends.cudnn.allow_tf32 = False",
        "model = model.half()",
        "model = model.to(torch.bfloat16)",
        "model = AutoModel.from_pretrained(name, torch_dtype=torch.float16)",
        'ctx = torch.autocast("cuda", dtype=torch.bfloat16)',
        "scaler = torch.cuda.amp.GradScaler()",
        "amp_autocast = functools.partial(torch.autocast, device_type='cuda')",
        "from accelerate import Accelerator",
        "import lightning as L",
        "from transformers import Trainer",
        "import deepspeed",
        "from apex import amp",
        'parser.add_argument("--precision", default="bf16")',
        "amp_ctx = amp_autocast()",
        "use_amp = args.amp",
        "trainer = make_trainer(mixed_precision=cfg.mixed_precision)",
    ],
)
def test_precision_already_chosen(header):
    code = "import functools\nimport torch\n" + header + "\n" + LOOP
    assert rows(code) == []


def test_cudnn_tf32_alone_does_not_cover_matmuls():
    code = "import torch\ntorch.backends.cudnn.allow_tf32 = True\nDEV = 'cuda'\n" + LOOP
    assert rows(code) == [10]


def test_needs_cuda_in_the_file_and_a_device_in_the_function():
    cpu_file = "import torch\n" + LOOP.replace("device", "dev_")
    assert rows(cpu_file) == []
    mixed = """
        import torch
        gpu = torch.device("cuda")

        def fit_cpu(model, loader, optimizer):
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()

        def fit_gpu(model, loader, optimizer):
            model.cuda()
            for x, y in loader:
                criterion(model(x.cuda()), y.cuda()).backward()
                optimizer.step()
        """
    assert rows(mixed) == [12]


def test_test_files_and_old_torch_are_skipped():
    code = "import torch\nDEV = 'cuda'\n" + LOOP
    assert rows(code) == [9]
    assert [f.row for f in lint(code, codes=[CODE], path="tests/test_training.py")] == []
    assert rows(code, torch_version=(1, 11)) == []
    assert rows(code, torch_version=(1, 12)) == [9]


DCGAN = """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Sequential(nn.Linear(100, 128 * 8 * 8))
        self.conv_blocks = nn.Sequential(
            nn.Upsample(scale_factor=2), nn.Conv2d(128, 128, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Upsample(scale_factor=2), nn.Conv2d(128, 64, 3, padding=1), nn.Conv2d(64, 1, 3, padding=1),
        )

    def forward(self, z):
        return self.conv_blocks(self.l1(z).view(z.shape[0], 128, 8, 8))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()

        def block(i, o):
            return [nn.Conv2d(i, o, 3, 2, 1), nn.LeakyReLU(0.2)]

        self.model = nn.Sequential(*block(1, 16), *block(16, 32), *block(32, 64))
        self.adv_layer = nn.Linear(64 * 4 * 4, 1)

    def forward(self, img):
        return self.adv_layer(self.model(img).flatten(1))
"""

TRAIN_SCRIPT = """
generator, discriminator = Generator().cuda(), Discriminator().cuda()
opt = torch.optim.Adam(generator.parameters())
for imgs in loader:
    loss = discriminator(generator(torch.randn(64, 100, device="cuda"))).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

MLP = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(784, 512)
        self.b = nn.Linear(512, 10)

    def forward(self, x):
        return self.b(self.a(x))
"""


def test_convolutional_models_already_run_in_tf32():
    # cuDNN runs convolutions in TF32 by default: a DCGAN's loop is not flagged
    assert rows(DCGAN + TRAIN_SCRIPT) == []
    # an MLP's is, and so is a conv net with attention
    assert rows(MLP + TRAIN_SCRIPT.replace("Generator()", "Net()").replace("Discriminator()", "Net()")) != []
    attention = DCGAN.replace(
        "return self.adv_layer(self.model(img).flatten(1))",
        "h = self.model(img).flatten(1)\n        return self.adv_layer(torch.softmax(h @ h.T, -1) @ h)",
    )
    assert rows(attention + TRAIN_SCRIPT) != []


def test_the_models_of_an_imported_project_file_count(tmp_path):
    # PyTorch-GAN's layout: `from models import *` beside a training script with no def
    import json
    import os

    from click.testing import CliRunner

    from gpulint.frontends.cli import cli

    (tmp_path / "cyclegan").mkdir()
    (tmp_path / "mlp").mkdir()
    (tmp_path / "cyclegan" / "models.py").write_text(DCGAN)
    (tmp_path / "mlp" / "models.py").write_text(MLP.replace("class Net", "class Generator").replace(
        "return self.b(self.a(x))", "return self.b(self.a(x))\n\n\nclass Discriminator(Generator):\n    pass"))
    script = "import torch\nfrom models import *\n" + TRAIN_SCRIPT
    (tmp_path / "cyclegan" / "cyclegan.py").write_text(script)
    (tmp_path / "mlp" / "gan.py").write_text(script)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "json", "--select", CODE, "."])
    finally:
        os.chdir(cwd)
    found = sorted(f["filename"].replace(os.sep, "/").split("/")[-1] for f in json.loads(res.stdout))
    assert found == ["gan.py"]  # each script reads the models.py beside it


TORCHVISION = """
import torch
import torchvision.models as models

model = {build}.cuda()
"""


@pytest.mark.parametrize(
    "build,flagged",
    [
        ("models.resnet50()", False),  # a convolutional family by name
        ("models.__dict__[arch]()", False),  # chosen at run time: torchvision's choices are convnets
        ("models.vit_b_16()", True),  # a vision transformer
        ("models.get_model(arch)", True),  # says nothing of the architecture
    ],
)
def test_torchvision_convnets_already_run_in_tf32(build, flagged):
    code = TORCHVISION.format(build=build) + LOOP + "\ntrain(model, loader, opt, 'cuda')\n"
    assert bool(rows(code)) is flagged


def test_a_helper_that_builds_a_convolution_counts_as_one():
    # MelGAN: `def WNConv1d(*a, **k): return weight_norm(nn.Conv1d(*a, **k))`, used by the modules
    wn = DCGAN.replace("import torch.nn as nn\n", "import torch.nn as nn\n\n\ndef WNConv2d(*a, **k):\n"
                       "    return nn.utils.weight_norm(nn.Conv2d(*a, **k))\n", 1).replace("nn.Conv2d(", "WNConv2d(")
    wn = wn.replace("return nn.utils.weight_norm(WNConv2d(*a, **k))", "return nn.utils.weight_norm(nn.Conv2d(*a, **k))")
    assert "WNConv2d(" in wn
    assert rows(wn + TRAIN_SCRIPT) == []
