"""GPU105 data-dependent-shape-in-loop: which operations size a result from a
CUDA tensor's values, and in which loops that is reported."""

from __future__ import annotations

import textwrap

import pytest

from helpers import lint

TRAIN = """
import torch
import torch.nn.functional as F

def train(model, loader, optimizer, device, counts_host):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        out = model(x)
        {line}
        loss = F.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def findings(code: str, path: str = "train.py"):
    return [f for f in lint(textwrap.dedent(code).lstrip("\n"), codes=["GPU105"], path=path)]


def rows(code: str, path: str = "train.py"):
    return [f.row for f in findings(code, path)]


@pytest.mark.parametrize(
    "line",
    [
        "idx = torch.nonzero(y)",
        "idx = torch.nonzero(y, as_tuple=True)",
        "idx = y.nonzero()",
        "idx = (y == 3).nonzero(as_tuple=False)",
        "idx = torch.argwhere(y > 0)",
        "idx = torch.where(y > 0)",
        "idx = torch.where(condition=y > 0)",
        "sel = torch.masked_select(out, y[:, None] > 0)",
        "sel = torch.masked_select(out, mask=y[:, None] > 0)",
        "sel = out.masked_select(y[:, None] > 0)",
        "sel = out[y != -100]",
        "sel = out[:, y.bool()]",
        "sel = out[torch.isnan(out).any(dim=1)]",
        "sel = out[~torch.isfinite(out)]",
        "sel = out[(y > 0) & (y < 5)]",
        "sel = out[y.eq(1)]",
        "sel = out[y.to(torch.bool)]",
        "classes = torch.unique(y)",
        "classes = y.unique(sorted=True)",
        "runs = torch.unique_consecutive(y)",
        "rep = torch.repeat_interleave(x, y)",
        "rep = torch.repeat_interleave(y)",
        "rep = x.repeat_interleave(y, dim=0)",
        "rep = x.repeat_interleave(repeats=y, dim=0)",
    ],
)
def test_each_data_dependent_operation_in_a_training_loop(line):
    found = findings(TRAIN.format(line=line))
    assert [f.row for f in found] == [8], line
    assert "a host-device sync every step" in found[0].message


@pytest.mark.parametrize(
    "line",
    [
        "sel = torch.where(y > 0, out.argmax(1), y)",  # three arguments: same shape as the input
        "out[y == -100] = 0.0",  # assigning through a mask sizes nothing
        "out[y == -100] += 1.0",
        "rep = torch.repeat_interleave(x, y, output_size=4 * x.size(0))",
        "rep = x.repeat_interleave(2, dim=0)",
        "rep = x.repeat_interleave(counts_host, dim=0)",  # unknown repeats: may be an int
        "idx = torch.nonzero_static(y, size=8)",
        "sel = out[counts_host]",  # an unknown index, not known to be a mask
        "sel = out[y]",  # an integer tensor index: gather, no sync
        "idx = torch.nonzero(torch.arange(8))",  # a tensor built on the host
        "classes = torch.unique(y).tolist()",  # the values are wanted on the host anyway (GPU101's)
        "n = len(torch.where(y > 0)[0].cpu())",
    ],
)
def test_look_alikes_in_a_training_loop(line):
    assert rows(TRAIN.format(line=line)) == [], line


def test_bool_mask_through_names_and_views():
    code = """
    import torch

    def train(model, loader, optimizer):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = model(x)
            keep = y != -100
            flat = keep.view(-1)
            both = flat & (y.view(-1) > 0)
            a = out.flatten(0, 1)[both]
            maybe = keep if x.dim() > 1 else x
            b = out[maybe]
            loss = a.sum() + b.sum()
            loss.backward()
            optimizer.step()
    """
    # `maybe` is a mask on one branch only: not known to be one
    assert rows(code) == [10]


def test_one_finding_per_statement():
    code = """
    import torch.nn.functional as F

    def train(model, loader, optimizer):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            logits = model(x)
            keep = y != -100
            loss = F.cross_entropy(logits[keep], y[keep])
            loss.backward()
            optimizer.step()
    """
    assert rows(code) == [8]


def test_not_every_step():
    code = """
    import torch

    def train(model, loader, optimizer, log_every=50):
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(), y.cuda()
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                print(torch.unique(y))
            if torch.isnan(loss):
                bad = torch.nonzero(torch.isnan(x))
                raise RuntimeError(f"nan at {bad}")
            for i in range(3):
                pass
        final = torch.unique(y)
    """
    assert rows(code) == []


def test_evaluation_loops_outside_model_code_are_not_covered():
    code = """
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        hits = []
        for x, y in loader:
            preds = model(x.cuda()).argmax(1)
            hits.append(torch.nonzero(preds == y.cuda()))
        return hits
    """
    assert rows(code) == []


MODEL = """
import torch
from torch import nn


class Experts(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))
        for i in range(n):
            self.register_buffer(f"eye{i}", torch.nonzero(torch.eye(n, device="cuda")[i]))

    def forward(self, x, chosen):
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            tokens, slots = torch.where(chosen == i)
            out.index_add_(0, tokens, expert(x[tokens]))
        first = torch.nonzero(chosen == 0)
        return out + first.sum()

    def generate(self, x, steps):
        for _ in range(steps):
            x = self(x, x.argmax(-1, keepdim=True))
            done = torch.nonzero(x.sum(-1) > 0)
        return x


def postprocess_detections(scores, boxes, device="cuda"):
    out = []
    for s, b in zip(scores, boxes):
        keep = torch.where(s > 0.05)[0]
        out.append(b[keep])
    return out


def compute_loss(preds, targets, device="cuda"):
    total = 0
    for p, t in zip(preds, targets):
        fg = torch.where(t > 0)
        total = total + p[fg].sum()
    return total
"""


def test_model_code_loops():
    found = findings(MODEL, path="model.py")
    # the expert loop of a forward and a loss helper's loop over images; not
    # __init__, not outside a loop, not generation or post-processing
    assert [f.row for f in found] == [15, 38]
    assert all("a host-device sync every iteration" in f.message for f in found)


def test_files_without_accelerator_and_test_files_are_skipped():
    code = TRAIN.format(line="idx = torch.nonzero(y)")
    assert rows(code, path="tests/test_train.py") == []
    cpu_only = textwrap.dedent(
        """
        import torch

        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x)[torch.nonzero(y)].sum()
                loss.backward()
                optimizer.step()
        """
    )
    assert rows(cpu_only) == []


def test_numpy_and_pandas_receivers():
    code = """
    import numpy as np
    import torch

    def train(model, loader, optimizer, frame):
        for x, y in loader:
            x = x.cuda()
            a = np.asarray([0, 1, 2])
            idx = a.nonzero()
            names = frame["name"].unique()
            both = np.unique(a)
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
    """
    assert rows(code) == []


def test_off_by_default():
    from gpulint.engine.config import resolve_selection

    assert "GPU105" not in resolve_selection(None, (), ())
    assert "GPU105" in resolve_selection(("GPU105",), (), ())
