"""GPU404 grad-scaler-with-bfloat16: the dtype of every autocast in the file decides."""

from __future__ import annotations

import textwrap

import pytest

from helpers import lint

CODE = "GPU404"


def rows(code: str):
    return [f.row for f in lint(textwrap.dedent(code).lstrip("\n"), codes=[CODE])]


@pytest.mark.parametrize(
    "scaler",
    [
        'torch.amp.GradScaler("cuda")',
        "torch.cuda.amp.GradScaler()",
        "torch.GradScaler()",
        "GradScaler(enabled=True)",
        "ShardedGradScaler()",
    ],
)
def test_any_scaler_spelling_with_bf16_autocast(scaler):
    code = f"""
        import torch
        from torch.amp import GradScaler
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        scaler = {scaler}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
        with torch.cuda.amp.autocast(True, torch.bfloat16):
            pass
        """
    assert rows(code) == [4]


def test_string_dtype_and_cpu_default():
    assert rows(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype="bfloat16"):
            pass
        with torch.autocast("cpu"):
            pass
        """
    ) == [2]


@pytest.mark.parametrize(
    "autocasts",
    [
        # no dtype on CUDA: float16
        ['torch.autocast("cuda")'],
        ["torch.cuda.amp.autocast()"],
        # one float16 region among bf16 ones
        ['torch.autocast("cuda", dtype=torch.bfloat16)', 'torch.autocast("cuda", dtype=torch.float16)'],
        # dtype or device not known statically
        ['torch.autocast("cuda", dtype=amp_dtype)'],
        ["torch.autocast(device.type, dtype=None)"],
        ["torch.autocast(**amp_kwargs)"],
        # no autocast at all (a scaler alone, e.g. a library helper)
        [],
    ],
)
def test_not_all_bfloat16(autocasts):
    body = "\n".join(f"with {a}:\n    pass" for a in autocasts)
    code = "import torch\nscaler = torch.amp.GradScaler('cuda')\n" + body + "\n"
    assert rows(code) == []


def test_autocast_passed_around_is_unknown():
    assert rows(
        """
        import functools
        import torch
        amp_autocast = functools.partial(torch.autocast, device_type="cuda", dtype=amp_dtype)
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
        """
    ) == []


def test_disabled_regions_and_disabled_scalers():
    code = """
        import torch
        s1 = torch.amp.GradScaler("cuda", enabled=False)
        s2 = torch.amp.GradScaler("cuda", enabled=args.fp16)
        s3 = torch.cuda.amp.GradScaler(2.0**16, 2.0, 0.5, 2000, False)
        s4 = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with torch.autocast("cuda", enabled=False):
                pass
        """
    assert rows(code) == [5]
