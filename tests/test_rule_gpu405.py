"""GPU405 optimizer-not-fused: which optimizers, which torch releases, whose
parameters, and the fix."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint


def rows(code: str, torch_version=(2, 13), path: str = "train.py"):
    code = textwrap.dedent(code).lstrip("\n")
    return [f.row for f in lint(code, codes=["GPU405"], path=path, torch_version=torch_version)]


SCRIPT = """
import torch
from torch import nn

device = torch.device("cuda")
model = nn.Linear(1024, 1024).to(device)
optimizer = {call}
"""


@pytest.mark.parametrize(
    "call, version, flagged",
    [
        ("torch.optim.Adam(model.parameters(), lr=1e-3)", (1, 13), True),
        ("torch.optim.Adam(model.parameters(), lr=1e-3)", (1, 12), False),
        ("torch.optim.AdamW(model.parameters(), lr=1e-3)", (2, 0), True),
        ("torch.optim.AdamW(model.parameters(), lr=1e-3)", (1, 13), False),
        ("torch.optim.adamw.AdamW(model.parameters(), lr=1e-3)", (2, 13), True),
        # other optimizers are left alone on purpose (see the docs)
        ("torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)", (2, 13), False),
        ("torch.optim.Adagrad(model.parameters(), lr=1e-2)", (2, 13), False),
        ("torch.optim.RMSprop(model.parameters(), lr=1e-2)", (2, 13), False),
        # the implementation is chosen, or may be
        ("torch.optim.AdamW(model.parameters(), lr=1e-3, fused=False)", (2, 13), False),
        ("torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)", (2, 13), False),
        ("torch.optim.AdamW(model.parameters(), **opt_kwargs)", (2, 13), False),
        ("torch.optim.AdamW(*opt_args)", (2, 13), False),
        ("torch.optim.AdamW(model.parameters(), differentiable=True)", (2, 13), False),
        ("torch.optim.AdamW(model.parameters(), differentiable=False)", (2, 13), True),
        ("torch.optim.AdamW(params=model.parameters(), lr=1e-3)", (2, 13), True),
    ],
)
def test_optimizers_and_versions(call, version, flagged):
    assert rows(SCRIPT.format(call=call), torch_version=version) == ([6] if flagged else [])


def test_fix_adds_fused_true_keeping_the_layout():
    bad = textwrap.dedent(
        """
        import torch

        model = Net().cuda()
        optimizer = torch.optim.AdamW(
            model.parameters(),
            lr=3e-4,
            betas=(0.9, 0.95),
        )
        """
    ).lstrip("\n")
    good = bad.replace("betas=(0.9, 0.95),\n", "betas=(0.9, 0.95),\n    fused=True,\n")
    assert fix(bad, codes=["GPU405"], unsafe=True) == good
    # unsafe: nothing changes without --unsafe-fixes
    assert fix(bad, codes=["GPU405"]) == bad


def test_only_models_the_same_variable_puts_on_a_device():
    code = """
    import torch

    def build_optimizer(model, lr):
        return torch.optim.AdamW(model.parameters(), lr=lr)

    def train(model, loader):
        model = model.to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        return optimizer

    def train_cpu(model):
        model = model.to("cpu")
        return torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_half(model):
        model = model.to(torch.bfloat16)
        return torch.optim.AdamW(model.parameters(), lr=1e-3)
    """
    assert rows(code) == [8]


def test_self_attributes_are_matched_within_the_class():
    code = """
    import torch

    class Trainer:
        def __init__(self, model):
            self.model = model.cuda()

        def configure(self):
            return torch.optim.Adam(self.model.parameters(), lr=1e-3)

    class Other:
        def configure(self):
            return torch.optim.Adam(self.model.parameters(), lr=1e-3)
    """
    assert rows(code) == [8]


def test_parameter_groups_and_filters():
    code = """
    import torch

    def train(model, lr, wd):
        model.cuda()
        decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        groups = [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]
        a = torch.optim.AdamW(groups, lr=lr)
        b = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=lr)
        c = torch.optim.AdamW([{"params": model.parameters()}, {"params": extra_params}], lr=lr)
        return a, b, c
    """
    # `extra_params` is a global of unknown origin: not known to be on the GPU
    assert rows(code) == [8, 9]


def test_before_2_5_the_model_must_be_on_the_device_when_the_optimizer_is_built():
    code = """
    import torch

    def train(model, accelerator):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model = model.cuda()
        return optimizer

    def train_prepared(model, accelerator):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model, optimizer = accelerator.prepare(model, optimizer)
        return optimizer
    """
    assert rows(code, torch_version=(2, 5)) == [4, 9]
    assert rows(code, torch_version=(2, 4)) == []


def test_test_files_are_skipped():
    code = SCRIPT.format(call="torch.optim.AdamW(model.parameters(), lr=1e-3)")
    assert rows(code, path="tests/test_optim.py") == []
    assert rows("import pytest\n" + code, path="test_optim.py") == []


def test_off_by_default():
    from gpulint.engine.config import resolve_selection

    assert "GPU405" not in resolve_selection(None, (), ())
    assert "GPU405" in resolve_selection(("GPU405",), (), ())
