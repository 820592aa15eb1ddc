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


def attention(nn: str = "torch.nn") -> str:
    """A transformer block, appended to a snippet: the evidence of matmul
    work that the rule asks for (no line of the snippet above it moves)."""
    return (f"\n\nclass Block({nn}.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.attn = {nn}.MultiheadAttention(1024, 16)\n        self.mlp = {nn}.Linear(1024, 4096)\n")


def rows(code: str, evidence: bool = True, **kw):
    text = src(code) + (attention() if evidence else "")
    return [f.row for f in lint(text, codes=[CODE], **kw)]


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
    assert rows(code) == [7]  # the finding is about the file: once, at its first training loop
    assert rows(code, evidence=False) == []  # no evidence of matmul work: nothing to gain


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
    ) + attention("nn")
    assert [f.row for f in lint(code, codes=[CODE])] == [8]
    assert fix(code, codes=[CODE]) == code  # unsafe: needs opt-in
    out = fix(code, codes=[CODE], unsafe=True)
    assert out == code.replace(
        "from torch import nn\n", 'from torch import nn\n\ntorch.set_float32_matmul_precision("high")\n'
    )
    assert out.count("set_float32_matmul_precision") == 1
    assert lint(out, codes=[CODE]) == []


def test_fix_uses_the_torch_alias():
    code = 'import torch as th\nDEV = "cuda"\n' + LOOP + attention("th.nn")
    out = fix(code, codes=[CODE], unsafe=True)
    assert out.startswith('import torch as th\n\nth.set_float32_matmul_precision("high")\nDEV = "cuda"\n')


def test_fix_adds_import_torch_when_only_from_imports():
    code = 'from torch import nn\nDEVICE = "cuda"\n' + LOOP + attention("nn")
    out = fix(code, codes=[CODE], unsafe=True)
    assert out.startswith('from torch import nn\n\nimport torch\n\ntorch.set_float32_matmul_precision("high")\n')
    compile(out, "x.py", "exec")


def test_fix_without_a_trailing_newline():
    code = attention().lstrip("\n").replace("class", "import torch\nclass", 1) + (
        "for x in loader:\n    model(x.cuda()).sum().backward()")
    out = fix(code, codes=[CODE], unsafe=True)
    assert out == code.replace("import torch\n", 'import torch\n\ntorch.set_float32_matmul_precision("high")\n', 1)
    assert not out.endswith("\n")


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


VIT = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim=768, heads=12):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj(attn @ v)
"""


def test_only_evidence_of_matmul_work_is_flagged():
    # cuDNN runs convolutions in TF32 by default: a DCGAN's loop is not flagged
    assert rows(DCGAN + TRAIN_SCRIPT, evidence=False) == []
    # nor a small MLP's (launch-bound), nor a model the rule cannot see
    mlp_script = TRAIN_SCRIPT.replace("Generator()", "Net()").replace("Discriminator()", "Net()")
    assert rows(MLP + mlp_script, evidence=False) == []
    assert rows("import torch\n" + LOOP + "\ntrain(model, loader, opt, 'cuda')\n", evidence=False) == []
    # a conv net with a product or two of attention is still convolutional (a UNet's low-resolution attention)
    conv_attention = DCGAN.replace(
        "return self.adv_layer(self.model(img).flatten(1))",
        "h = self.model(img).flatten(1)\n        return self.adv_layer(torch.softmax(h @ h.T, -1) @ h)",
    )
    assert rows(conv_attention + TRAIN_SCRIPT, evidence=False) == []
    # attention computed by hand in a model of Linear layers (a ViT, a GPT), or attention layers proper
    vit_script = TRAIN_SCRIPT.replace("Generator(), Discriminator()", "Attention(), Attention()")
    assert rows(VIT + vit_script, evidence=False) == [15 + vit_script.count("\n", 0, vit_script.index("backward")) + 1]
    assert rows(MLP + mlp_script, evidence=True) != []


@pytest.mark.parametrize(
    "build,flagged",
    [
        ("AutoModelForCausalLM.from_pretrained(name)", True),
        ("BertForSequenceClassification(config)", True),
        ("timm.create_model('vit_base_patch16_224')", True),
        ("timm.create_model('resnet50')", False),
        ("timm.create_model(args.model)", False),  # says nothing of the architecture
    ],
)
def test_library_transformers_are_evidence(build, flagged):
    code = ("import timm\nimport torch\nfrom transformers import AutoModelForCausalLM, BertForSequenceClassification\n\n"
            f"model = {build}.cuda()\n" + LOOP + "\ntrain(model, loader, opt, 'cuda')\n")
    assert bool(rows(code, evidence=False)) is flagged


def test_the_models_of_an_imported_project_file_count(tmp_path):
    # PyTorch-GAN's layout: `from models import *` beside a training script with no def
    (tmp_path / "cyclegan").mkdir()
    (tmp_path / "vit").mkdir()
    (tmp_path / "cyclegan" / "models.py").write_text(DCGAN)
    (tmp_path / "vit" / "models.py").write_text(VIT + "\n\nGenerator = Discriminator = Attention\n")
    script = "import torch\nfrom models import *\n" + TRAIN_SCRIPT
    (tmp_path / "cyclegan" / "cyclegan.py").write_text(script)
    (tmp_path / "vit" / "gan.py").write_text(script)
    assert found_in(tmp_path) == ["gan.py"]  # each script reads the models.py beside it


def found_in(folder) -> list:
    import json
    import os

    from click.testing import CliRunner

    from gpulint.frontends.cli import cli

    cwd = os.getcwd()
    os.chdir(folder)
    try:
        res = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "json", "--select", CODE, "."])
    finally:
        os.chdir(cwd)
    return sorted(f["filename"].replace(os.sep, "/").split("/")[-1] for f in json.loads(res.stdout))


TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, device):
        self.model, self.loader, self.device = model, loader, device
        self.opt = torch.optim.AdamW(model.parameters())

    def run(self):
        for x, y in self.loader:
            loss = torch.nn.functional.cross_entropy(self.model(x.to(self.device)), y.to(self.device))
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""


def test_a_trainer_handed_its_model_reads_the_models_of_its_callers(tmp_path):
    # minGPT and DETR: the loop is in a file that builds no model and never names CUDA;
    # the script that imports it builds the model and chooses the device
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "model.py").write_text(VIT)
    main = ("import torch\nfrom model import Attention\nfrom trainer import Trainer\n\n\ndef main(loader):\n"
            "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    Trainer(Attention().to(device), loader, device).run()\n")
    (tmp_path / "main.py").write_text(main)
    assert found_in(tmp_path) == ["trainer.py"]
    # a caller on the CPU only: nothing says the loop runs on CUDA
    (tmp_path / "main.py").write_text(main.replace("'cuda' if torch.cuda.is_available() else 'cpu'", "'cpu'"))
    assert found_in(tmp_path) == []


def test_own_models_decide_before_the_callers(tmp_path):
    # rtdl's layout: an analysis script imports both a ResNet-style MLP script and a transformer;
    # the MLP script's loop trains its own MLP, not the transformer
    (tmp_path / "mlp.py").write_text(MLP + "\nmodel = Net().cuda()\n" + LOOP.replace("def train", "def fit"))
    (tmp_path / "model.py").write_text(VIT)
    (tmp_path / "analysis.py").write_text("import mlp\nimport model\n\n\ndef main(loader):\n"
                                          "    mlp.fit(mlp.model, loader, None, 'cuda')\n")
    assert found_in(tmp_path) == []


def _layout(tmp_path, files) -> list:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return found_in(tmp_path)


STRATEGY = """
import torch
from models.utils import forward_all


class Strategy:
    def __init__(self, model, loader):
        self.model, self.loader = model.cuda(), loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self):
        for x, y in self.loader:
            loss = torch.nn.functional.cross_entropy(forward_all(self.model, x.cuda()), y.cuda())
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""


def test_a_strategy_handed_its_model_does_not_count_every_model_of_the_package(tmp_path):
    # avalanche's layout: a strategy calls a helper of the models package, which also
    # defines a transformer the strategy never builds
    files = {
        "models/__init__.py": "from .utils import forward_all\nfrom .vit import Attention\n",
        "models/utils.py": ("from models.vit import Attention\n\n\ndef forward_all(model, x):\n"
                            "    return model(x)[0] if isinstance(model, Attention) else model(x)\n"),
        "models/vit.py": VIT,
        "strategies/naive.py": STRATEGY,
    }
    assert _layout(tmp_path, files) == []
    # the strategy that builds the transformer it trains is flagged
    files["strategies/naive.py"] = STRATEGY.replace(
        "from models.utils import forward_all",
        "from models.utils import forward_all\nfrom models import Attention",
    ).replace("self.model, self.loader = model.cuda(), loader", "self.model, self.loader = Attention().cuda(), loader")
    assert _layout(tmp_path, files) == ["naive.py"]


BUILDERS = {
    # BLIP's layout: the script calls a builder function, whose class builds a ViT of another file
    "models/vit.py": VIT,
    "models/blip.py": """
        import torch.nn as nn
        from models.vit import Attention


        def create_vit():
            return Attention(), 768


        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.visual_encoder, width = create_vit()
                self.head = nn.Linear(width, 10)


        def blip_decoder():
            return Decoder()
    """,
    "train.py": """
        import torch
        from models.blip import blip_decoder

        model = blip_decoder().cuda()
        opt = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            loss = model(x.cuda(), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
    """,
}


def test_models_built_through_functions_and_classes_of_other_files_count(tmp_path):
    assert _layout(tmp_path, BUILDERS) == ["train.py"]


def test_a_model_chosen_by_name_from_a_module_counts_that_module(tmp_path):
    # DINO's `vits.__dict__[args.arch]()`, and `getattr(models, arch)()`
    for pick in ("vits.__dict__[arch]()", "getattr(vits, arch)()"):
        files = dict(BUILDERS)
        files["train.py"] = BUILDERS["train.py"].replace(
            "from models.blip import blip_decoder", "import models.vit as vits"
        ).replace("blip_decoder()", pick)
        assert _layout(tmp_path, files) == ["train.py"], pick


def test_a_builder_re_exported_by_a_package_is_followed(tmp_path):
    # DETR's layout: `from models import build_model`, defined in `models/__init__.py` over `.detr`
    files = dict(BUILDERS)
    files["models/__init__.py"] = "from .blip import blip_decoder as build\n\n\ndef build_model():\n    return build()\n"
    files["train.py"] = BUILDERS["train.py"].replace(
        "from models.blip import blip_decoder", "from models import build_model"
    ).replace("blip_decoder()", "build_model()")
    assert _layout(tmp_path, files) == ["train.py"]
    # a convolutional model built the same way is not
    files["models/vit.py"] = DCGAN.replace("class Generator", "class Attention")
    assert _layout(tmp_path, files) == []


BASE_MODEL = """
import torch


class BaseModel:
    def __init__(self, device):
        self.device = device

    def fit(self, loader):
        opt = torch.optim.AdamW(self.model.parameters())
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(self.model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_a_base_class_loop_counts_the_subclasses_that_keep_it(tmp_path):
    # TabSurvey's layout: `BaseModelTorch.fit` trains the MLP; the transformers subclass
    # it but train in a `fit` of their own
    files = {
        "models/base.py": BASE_MODEL,
        "models/mlp.py": MLP + "\nfrom models.base import BaseModel\n\n\nclass MLPModel(BaseModel):\n"
                         "    def __init__(self, device='cuda'):\n        super().__init__(device)\n"
                         "        self.model = Net().to(device)\n",
        "models/vit.py": VIT + "\nfrom models.base import BaseModel\n\n\nclass ViTModel(BaseModel):\n"
                         "    def __init__(self, device='cuda'):\n        super().__init__(device)\n"
                         "        self.model = Attention().to(device)\n\n"
                         "    def fit(self, loader):\n        return None\n",
    }
    assert _layout(tmp_path, files) == []
    # the transformer that keeps the shared loop makes it a transformer's loop
    files["models/vit.py"] = files["models/vit.py"].replace("    def fit(self, loader):\n        return None\n", "")
    assert _layout(tmp_path, files) == ["base.py"]


TORCHVISION = """
import torch
import torchvision.models as models

model = {build}.cuda()
"""


@pytest.mark.parametrize(
    "build,flagged",
    [
        ("models.resnet50()", False),  # a convolutional family by name
        ("models.__dict__[arch]()", False),  # chosen at run time: no evidence
        ("models.vit_b_16()", True),  # a vision transformer
        ("models.swin_t()", True),
        ("models.get_model(arch)", False),  # says nothing of the architecture
    ],
)
def test_torchvision_transformers_are_evidence(build, flagged):
    code = TORCHVISION.format(build=build) + LOOP + "\ntrain(model, loader, opt, 'cuda')\n"
    assert bool(rows(code, evidence=False)) is flagged


def test_a_helper_that_builds_a_convolution_counts_as_one():
    # MelGAN: `def WNConv1d(*a, **k): return weight_norm(nn.Conv1d(*a, **k))`, used by the modules
    wn = DCGAN.replace("import torch.nn as nn\n", "import torch.nn as nn\n\n\ndef WNConv2d(*a, **k):\n"
                       "    return nn.utils.weight_norm(nn.Conv2d(*a, **k))\n", 1).replace("nn.Conv2d(", "WNConv2d(")
    wn = wn.replace("return nn.utils.weight_norm(WNConv2d(*a, **k))", "return nn.utils.weight_norm(nn.Conv2d(*a, **k))")
    assert "WNConv2d(" in wn
    # with hand-written attention, the convolutions it builds through the helper still outnumber the Linear layers
    attn = wn.replace("return self.adv_layer(self.model(img).flatten(1))",
                      "h = self.model(img).flatten(1)\n        return self.adv_layer(torch.softmax(h @ h.T, -1) @ h)")
    assert rows(attn + TRAIN_SCRIPT, evidence=False) == []


DISTRIBUTED = """
import torch
from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard


def parallelize_model(model, dtype="bf16"):
    param_dtype = dict(fp32=torch.float32, bf16=torch.bfloat16)[dtype]
    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32))
    return model


def unrelated(model):
    return model
"""

FSDP_TRAIN = """
import torch
from distributed import {helper}


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(1024, 16)
        self.mlp = torch.nn.Linear(1024, 4096)


def train(loader):
    model = {helper}(Block().cuda())
    opt = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    train([])
"""


@pytest.mark.parametrize("helper,flagged", [("parallelize_model", []), ("unrelated", ["train.py"])])
def test_a_precision_policy_built_in_a_function_of_another_file_counts(tmp_path, helper, flagged):
    # lingua's layout: `parallelize_model` wraps the model with FSDP's MixedPrecisionPolicy
    (tmp_path / "distributed.py").write_text(DISTRIBUTED)
    (tmp_path / "train.py").write_text(FSDP_TRAIN.format(helper=helper))
    assert found_in(tmp_path) == flagged
