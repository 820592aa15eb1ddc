"""The values layer on the data flow of real training code: optimizer
hyperparameters, annotations, numbers rebound through arithmetic,
`isinstance` narrowing, and calls of functions by what they are."""

from __future__ import annotations

import ast
import textwrap

from gpulint.model.file import FileModel
from gpulint.model.values.kinds import MODEL, NUMBER, OTHER, PARAM_GROUP, TENSOR

from helpers import lint


def _kinds(text: str) -> dict:
    """{name: kind of the value of the last `name = ...` of the text}."""
    text = textwrap.dedent(text)
    fa = FileModel(ast.parse(text), text)
    out = {}
    for n in ast.walk(fa.tree):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            out[n.targets[0].id] = fa.values.kind(n.value, fa.index.ancestors(n.value))
    return out


def _name_kinds(text: str, name: str) -> list:
    """The kind of every load of `name`, in source order."""
    text = textwrap.dedent(text)
    fa = FileModel(ast.parse(text), text)
    loads = [n for n in ast.walk(fa.tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    loads.sort(key=lambda n: (n.lineno, n.col_offset))
    return [fa.values.kind_at(n, fa.index.ancestors(n)) for n in loads]


def test_an_optimizers_hyperparameters_are_numbers():
    k = _kinds("""
        def f(optimizer):
            lr = optimizer.param_groups[0]["lr"]
            peak = max(0.0, lr)
            for group in optimizer.param_groups:
                g = group
                wd = group["weight_decay"]
                params = group["params"]
    """)
    assert k["lr"] == NUMBER and k["peak"] == NUMBER and k["wd"] == NUMBER
    assert k["g"] == PARAM_GROUP
    assert k["params"] is None  # the parameters themselves: tensors


def test_a_parameter_annotated_float_is_a_number():
    k = _kinds("""
        def f(loss, smooth: float, name: str):
            a = smooth
            b = name
            c = loss
    """)
    assert k["a"] == NUMBER and k["b"] == OTHER and k["c"] == TENSOR  # `loss` by its name, without evidence


def test_a_number_rebound_through_arithmetic_stays_a_number():
    kinds = _name_kinds("""
        def f(history, smooth: float):
            loss = float(history[-1])
            loss = smooth * loss + (1 - smooth) * history[-2]
            if loss < 1.0:
                pass
    """, "loss")
    assert kinds[-1] == NUMBER  # not the tensor its name suggests
    tensor = _name_kinds("""
        import torch

        def f(x):
            loss = float(x)
            loss = loss * torch.ones(3)
            if loss.sum() < 1.0:
                pass
    """, "loss")
    assert tensor[-1] == TENSOR


def test_isinstance_narrowing_in_the_else_branch():
    kinds = _name_kinds("""
        import torch

        def f(losses):
            for name, loss_value in losses.items():
                if isinstance(loss_value, torch.Tensor):
                    print(loss_value)
                elif isinstance(loss_value, list):
                    for v in loss_value:
                        print(v)
    """, "loss_value")
    assert kinds[-1] == OTHER  # the `elif`: not a tensor


def test_a_function_is_called_for_what_it_returns_not_for_its_name():
    k = _kinds("""
        from peft_utils import is_peft_model, build_model, loss_fn

        def f(m, x, y):
            a = is_peft_model(m)
            b = build_model(m)
            c = loss_fn(x, y)
    """)
    assert k["a"] == OTHER  # a predicate returns a bool
    assert k["b"] == MODEL  # builds a model, it is not one: calling it runs no forward
    assert k["c"] == TENSOR  # a loss function returns the loss


def test_a_read_after_a_guard_clause_in_a_function_that_ends_by_raising_runs_once():
    found = lint(textwrap.dedent("""
        import torch


        def _assert_finite(tensor):
            if torch.isfinite(tensor).all():
                return
            bad = (~torch.isfinite(tensor)).sum().item()
            raise RuntimeError(f"{bad} non-finite values")


        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda())
                _assert_finite(loss)
                loss.backward()
                optimizer.step()
    """), codes=("GPU101",))
    assert [(f.row, f.code) for f in found] == [(6, "GPU101")]  # the check, every step; not the error path


def test_an_attribute_set_from_the_run_settings_is_not_a_tensor():
    # OpenRLHF's reward-model trainer: a flag named like a loss
    from helpers import lint

    code = (
        "import torch\n\n\nclass Trainer:\n"
        "    def __init__(self, strategy):\n"
        "        self.margin_loss = self.strategy.args.model.margin_loss_enable\n\n"
        "    def fit(self, model, loader, opt):\n"
        "        for x in loader:\n"
        "            loss = model(x.cuda()).mean()\n"
        "            if self.margin_loss:\n"
        "                loss = loss * 2\n"
        "            loss.backward()\n"
        "            opt.step()\n"
    )
    assert lint(code, codes=["GPU101"]) == []
    assert [f.row for f in lint(code.replace("self.strategy.args.model.margin_loss_enable", "model.margin"),
                                codes=["GPU101"])] == [11]  # unknown: the name still says loss


def _attr_kinds(text: str, attr: str) -> list:
    """The kind of every load of `self.<attr>`, in source order."""
    text = textwrap.dedent(text)
    fa = FileModel(ast.parse(text), text)
    loads = [n for n in ast.walk(fa.tree) if isinstance(n, ast.Attribute) and n.attr == attr
             and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id == "self"]
    loads.sort(key=lambda n: (n.lineno, n.col_offset))
    return [fa.values.kind_at(n, fa.index.ancestors(n)) for n in loads]


COUNTERS = """
    class Trainer:
        def __init__(self):
            self.tokens = 0
            self.avg_loss = -1
            self.seen = 0

        def step(self, loader, loss):
            x, y = next(iter(loader))
            x, y = x.cuda(), y.cuda()
            self.tokens += (y >= 0).sum()
            self.seen += x.shape[0]
            now_loss = 0
            now_loss += loss.item()
            now_loss = now_loss / 2
            self.avg_loss = now_loss
            self.avg_loss = self.avg_loss * 0.9 + now_loss * 0.1
            return self.tokens, self.avg_loss, self.seen
"""


def test_an_attribute_grown_by_a_tensor_is_a_tensor():
    # `self.tokens = 0`, then `self.tokens += (y >= 0).sum()` (RWKV-LM): a tensor from then on
    assert _attr_kinds(COUNTERS, "tokens") == [TENSOR]
    # `+= x.shape[0]` keeps a number
    assert _attr_kinds(COUNTERS, "seen") == [NUMBER]


def test_an_attribute_set_from_a_local_number_is_a_number_whatever_its_name():
    # `now_loss` is built from `.item()` values: its name says loss, its bindings say number;
    # the update `self.avg_loss * 0.9 + ...` says nothing new
    assert set(_attr_kinds(COUNTERS, "avg_loss")) == {NUMBER}


def test_a_loop_over_a_name_bound_to_a_wrapped_loader_iterates_the_loader():
    kinds = _name_kinds("""
        from torch.utils.data import DataLoader
        from tqdm import tqdm

        def train(data, is_train):
            loader = DataLoader(data, batch_size=8)
            pbar = tqdm(enumerate(loader), total=len(loader)) if is_train else enumerate(loader)
            for it, (x, y) in pbar:
                print(it, x, y)
    """, "x")
    assert kinds[-1] == TENSOR
    assert _name_kinds("""
        from torch.utils.data import DataLoader
        from tqdm import tqdm

        def train(data):
            loader = DataLoader(data, batch_size=8)
            pbar = tqdm(enumerate(loader))
            for it, (x, y) in pbar:
                print(it)
    """, "it")[-1] == NUMBER


def test_the_sizes_unpacked_from_a_shape_are_numbers():
    text = """
        def evaluate(net, loader, scales):
            for imgs, label in loader:
                N, _, H, W = imgs.shape
                *_, h, w = label.size()
                nl = label.shape[0]
                for scale in scales:
                    print(int(scale * H), h, w, nl)
    """
    assert _name_kinds(text, "H")[-1] == NUMBER
    assert _name_kinds(text, "h")[-1] == NUMBER
    assert _name_kinds(text, "nl")[-1] != TENSOR  # (a part of the batch's facts, not of its data)


def test_a_name_bound_to_a_wrapped_loader_in_either_branch_is_a_loader():
    from gpulint.model.values.kinds import LOADER

    text = textwrap.dedent("""
        import torch.distributed as dist
        from tqdm import tqdm

        def evaluate(net, dl):
            if dist.get_rank() != 0:
                diter = enumerate(dl)
            else:
                diter = enumerate(tqdm(dl))
            for i, (imgs, label) in diter:
                net(imgs)
    """)
    fa = FileModel(ast.parse(text), text)
    loop = next(n for n in ast.walk(fa.tree) if isinstance(n, ast.For))
    assert fa.values.kind(loop.iter, fa.index.ancestors(loop.iter)) == LOADER
    assert fa.loops.loop_iterates_loader(loop, fa.index.ancestors(loop))


def _host(text: str, line: int) -> bool:
    """Whether the model knows the first expression statement's value on `line` lives on the host."""
    text = textwrap.dedent(text).lstrip("\n")
    fa = FileModel(ast.parse(text), text)
    expr = next(n.value for n in ast.walk(fa.tree) if isinstance(n, ast.Expr) and n.lineno == line)
    return fa.host.is_host_tensor(expr, fa.index.ancestors(expr))


def test_host_values_read_through_conversions_facts_and_the_binding_that_reaches():
    text = """
        import torch


        def validate(model, loader, batch_size, imgsz):
            shape = (batch_size, 3, imgsz, imgsz)
            for im, targets, paths, shapes in loader:
                preds = model(im.cuda())
                for si, pred in enumerate(preds):
                    path, shape = paths[si], shapes[si][0]
                    h0, w0 = shape
                    _, mask_h, mask_w = pred.shape
                    mask_h / h0 == mask_w / w0
                    pad = int(pred[0, 0])
                    pad
                    pred.shape
                    pred.argmax(1)
    """
    assert _host(text, 12)  # `shape` here is the loader's metadata, not the tuple of sizes built above
    assert _host(text, 14)  # `int(...)`: a Python number (its own read is where it waits)
    assert _host(text, 15)  # a tensor's facts
    assert not _host(text, 16)


def test_a_function_named_for_loading_a_model_hands_the_model_back():
    # KGAT-pytorch: `load_model` comes from `from utils.model_helper import *`;
    # its name says model, but a call of it returns the model, not an output
    k = _kinds("""
        from utils.model_helper import *

        def train(args, model, x):
            model = load_model(model, args.path)
            net = build_net(args)
            out = model(x)
    """)
    assert k["model"] == MODEL
    assert k["net"] == MODEL
    assert k["out"] == TENSOR
