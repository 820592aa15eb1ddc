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
