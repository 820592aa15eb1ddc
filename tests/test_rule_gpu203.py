"""GPU203 cpu-tensor-then-moved: what counts as a move to an accelerator,
and the exact `device=` fix, including when it must not be offered."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint

CODE = "GPU203"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def one(line: str, imports: str = "import torch"):
    findings = lint(f"{imports}\n{line}\n", codes=[CODE])
    return findings


def fixed_line(line: str, unsafe: bool = True, imports: str = "import torch") -> str:
    out = fix(f"{imports}\n{line}\n", codes=[CODE], unsafe=unsafe)
    return out.split("\n", 1)[1].rstrip("\n")


@pytest.mark.parametrize(
    "before,after",
    [
        ("w = torch.ones(10).cuda()", 'w = torch.ones(10, device="cuda")'),
        ("w = torch.ones(10).cuda(1)", 'w = torch.ones(10, device="cuda:1")'),
        ('w = torch.ones(10).cuda("cuda:2")', 'w = torch.ones(10, device="cuda:2")'),
        ("w = torch.ones(10).cuda(non_blocking=True)", 'w = torch.ones(10, device="cuda")'),
        ("p = torch.arange(n).to(device)", "p = torch.arange(n, device=device)"),
        ("p = torch.arange(n).to(device=device)", "p = torch.arange(n, device=device)"),
        ("p = torch.arange(n).to(x.device, non_blocking=True)", "p = torch.arange(n, device=x.device)"),
        ("p = torch.arange(n).to(self.device)", "p = torch.arange(n, device=self.device)"),
        ("p = torch.arange(n).to(args.gpu)", "p = torch.arange(n, device=args.gpu)"),
        ("p = torch.arange(n).to(0)", "p = torch.arange(n, device=0)"),
        ('p = torch.arange(n).to(torch.device("cuda"))', 'p = torch.arange(n, device=torch.device("cuda"))'),
        ('p = torch.arange(n).to(f"cuda:{rank}")', 'p = torch.arange(n, device=f"cuda:{rank}")'),
        ("m = torch.zeros(n, dtype=torch.bool).to(device)", "m = torch.zeros(n, dtype=torch.bool, device=device)"),
        ('i = torch.zeros(n, device="cpu").cuda()', 'i = torch.zeros(n, device="cuda")'),
        ("e = torch.eye(3).to(device, torch.float16)", "e = torch.eye(3, device=device, dtype=torch.float16)"),
        ("e = torch.ones(3).to(device, dtype=x.dtype)", "e = torch.ones(3, device=device, dtype=x.dtype)"),
        ("t = torch.tensor([1.0, 2.0]).cuda()", 't = torch.tensor([1.0, 2.0], device="cuda")'),
        ("t = torch.as_tensor(arr, torch.float32).to(device)", "t = torch.as_tensor(arr, torch.float32, device=device)"),
        ("t = torch.full((b,), 1.0, dtype=x.dtype).to(device)", "t = torch.full((b,), 1.0, dtype=x.dtype, device=device)"),
        ("n = torch.randn(b, z).to(device)", "n = torch.randn(b, z, device=device)"),
        ("r = torch.arange(0, 1, 0.1).cuda()", 'r = torch.arange(0, 1, 0.1, device="cuda")'),
        ("y = (torch.zeros(3).cuda() + 1).sum()", 'y = (torch.zeros(3, device="cuda") + 1).sum()'),
    ],
)
def test_fix(before, after):
    assert [f.code for f in one(before)] == [CODE]
    assert fixed_line(before) == after


@pytest.mark.parametrize(
    "line,why",
    [
        ("n = torch.randn(b, z).to(device)", "random generator"),
        ("n = torch.randperm(b).cuda()", "random generator"),
        ("r = torch.arange(0, 1, 0.1).cuda()", "float range"),
        ("r = torch.arange(n, dtype=torch.float32).cuda()", "float range"),
        ("r = torch.linspace(0, 1, 5).cuda()", "computed floats"),
    ],
)
def test_unsafe_when_the_numbers_may_differ(line, why):
    [finding] = one(line)
    assert finding.fix is not None and finding.fix.applicability == "unsafe", why
    assert fixed_line(line, unsafe=False) == line


@pytest.mark.parametrize(
    "line",
    [
        "p = torch.arange(n).cuda()",
        "p = torch.arange(n, dtype=torch.long).cuda()",
        "z = torch.zeros(b, 3).cuda()",
        "t = torch.tensor([0.5, 0.25]).cuda()",
    ],
)
def test_safe_when_the_values_are_exact(line):
    [finding] = one(line)
    assert finding.fix.applicability == "safe"


@pytest.mark.parametrize(
    "line",
    [
        "g = torch.ones(3).cuda(gpu)",  # `.cuda(None)` is the current device; device=None is the CPU
        "a = torch.arange(10).to(device, torch.float32)",  # arange computed in another dtype differs
        "t = torch.tensor([0.1]).to(device, torch.float64)",  # 0.1 rounded to float32 first
        "z = torch.zeros(3, dtype=torch.int64).to(device, torch.float16)",  # a second dtype
        "w = torch.zeros(3, requires_grad=True).cuda()",  # the result would become a leaf
        "w = torch.zeros(3, pin_memory=True).cuda()",  # only CPU tensors can be pinned
        "w = torch.zeros(3).to(device, memory_format=torch.channels_last)",
        "w = torch.zeros(3).to(device, dt)",  # an unknown second argument
    ],
)
def test_reported_without_fix(line):
    [finding] = one(line)
    assert finding.fix is None


@pytest.mark.parametrize(
    "line",
    [
        "w = torch.zeros(3, device=device)",
        "w = torch.zeros(3, device=device).cuda()",
        "w = torch.zeros_like(x).cuda()",
        "w = x.new_zeros(3).to(device)",
        "w = torch.zeros(3).to(torch.float16)",
        "w = torch.zeros(3).to(dtype=torch.float16)",
        "w = torch.zeros(3).to('cpu')",
        "w = torch.zeros(3).to(torch.device('cpu'))",
        "w = torch.zeros(3).to(other)",
        "w = torch.zeros(3).float().cuda()",
        "w = torch.from_numpy(a).cuda()",
        "w = torch.load(p).to(device)",
        "w = np.zeros(3).to(device)",
        "w = zeros(3).cuda()",
        "w = torch.zeros(3, out=buf).cuda()",
    ],
)
def test_not_flagged(line):
    assert one(line, imports="import numpy as np\nimport torch") == []


def test_import_forms():
    assert [f.code for f in one("w = zeros(3).cuda()", imports="from torch import zeros")] == [CODE]
    assert [f.code for f in one("w = T.ones(3).to(device)", imports="import torch as T")] == [CODE]


def test_multi_line_factory_with_trailing_comma():
    code = src(
        """
        import torch

        noise = torch.randn(
            batch_size,
            nz,
            1,
            1,
        ).to(device, non_blocking=True)
        """
    )
    [finding] = lint(code, codes=[CODE])
    assert finding.row == 3
    assert fix(code, codes=[CODE], unsafe=True) == src(
        """
        import torch

        noise = torch.randn(
            batch_size,
            nz,
            1,
            1,
            device=device,
        )
        """
    )


def test_move_on_its_own_line():
    code = src(
        """
        import torch

        mask = (
            torch.ones(n, n, dtype=torch.bool)
            .cuda()
        )
        """
    )
    assert fix(code, codes=[CODE]) == src(
        """
        import torch

        mask = (
            torch.ones(n, n, dtype=torch.bool, device="cuda")
        )
        """
    )


def test_comment_inside_the_removed_part_keeps_it_unfixed():
    code = src(
        """
        import torch

        mask = (
            torch.ones(n)  # all ones
            .cuda()
        )
        """
    )
    [finding] = lint(code, codes=[CODE])
    assert finding.fix is None
