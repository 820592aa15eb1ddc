"""The shared hot-loop and host-tensor analysis (gpulint/model: control.loops and values.host),
asked directly: which statement runs every step, what is on the host."""

from __future__ import annotations

import ast
import textwrap

from gpulint.model.file import FileModel


def analyse(code: str):
    text = textwrap.dedent(code).lstrip("\n")
    tree = ast.parse(text)
    return FileModel(tree, text, "train.py"), tree


def call_named(tree, text: str) -> ast.Call:
    """The call whose source text is `text` (unique in the snippet)."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n) == text]
    assert len(found) == 1, (text, len(found))
    return found[0]


def hot(fa, tree, call_text):
    node = call_named(tree, call_text)
    return fa.loops.hot_loop(node, fa.index.ancestors(node))


LOOPS = """
def train(model, loader, val_loader, optimizer, metrics, args):
    for epoch in range(args.epochs):
        epoch_start()
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            every_step()
            for name in metrics:
                per_metric(name)
            if step % args.log_every == 0:
                periodic()
            if step == args.max_steps:
                once_before_break()
                break
            if loss is None:
                once_before_raise()
                raise ValueError
            try:
                guarded()
            except RuntimeError:
                on_error()
        else:
            after_loop()
        epoch_end()
        for x, y in val_loader:
            out = model(x)
            val_step()
    after_training()
"""


def test_hot_loop_statements():
    fa, tree = analyse(LOOPS)
    batch_loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For) and "enumerate" in ast.unparse(n.iter))
    val_loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For) and ast.unparse(n.iter) == "val_loader")
    assert hot(fa, tree, "every_step()") is batch_loop
    assert hot(fa, tree, "per_metric(name)") is batch_loop
    assert hot(fa, tree, "guarded()") is batch_loop
    assert hot(fa, tree, "val_step()") is val_loop
    for once in (
        "periodic()",
        "once_before_break()",
        "once_before_raise()",
        "on_error()",
        "after_loop()",
        "epoch_start()",
        "epoch_end()",
        "after_training()",
    ):
        assert hot(fa, tree, once) is None, once


def test_step_loop_around_an_inner_hot_loop_stays_hot():
    fa, tree = analyse(
        """
        def train(loader, netD, netG, optD, optG, n_critic):
            for real in loader:
                for _ in range(n_critic):
                    netD(real).mean().backward()
                    optD.step()
                    critic_step()
                netD(netG(real)).mean().backward()
                optG.step()
                generator_step()
        """
    )
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)]
    outer, inner = loops
    assert hot(fa, tree, "critic_step()") is inner
    assert hot(fa, tree, "generator_step()") is outer


def test_while_test_and_header():
    fa, tree = analyse(
        """
        def run(model, x, it, optimizer):
            while cond(x):
                model(x).sum().backward()
                optimizer.step()
            for b in make_batches(model):
                model(b)
        """
    )
    while_loop = next(n for n in ast.walk(tree) if isinstance(n, ast.While))
    assert hot(fa, tree, "cond(x)") is while_loop
    assert hot(fa, tree, "make_batches(model)") is None


def test_kind_at_sees_rebinding_in_order():
    fa, tree = analyse(
        """
        def f(model, x, criterion):
            loss = criterion(model(x), x)
            loss = loss.item()
            use(loss)
        """
    )
    item = call_named(tree, "loss.item()")
    use = call_named(tree, "use(loss)")
    assert fa.values.kind_at(item.func.value, fa.index.ancestors(item)) == "tensor"
    assert fa.values.kind_at(use.args[0], fa.index.ancestors(use)) == "number"
    # the flow-insensitive view keeps the final kind
    assert fa.values.kind(item.func.value, fa.index.ancestors(item)) == "number"


def test_is_host_tensor():
    fa, tree = analyse(
        """
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader

        def f(model, dataset, device):
            loader = DataLoader(dataset, batch_size=8)
            for x, y in loader:
                a = torch.rand([])
                b = torch.zeros(3, device="cuda")
                c = torch.tensor([1, 2])
                d = F.interpolate(x.float(), size=8)
                e = x.to(device)
                g = model(e).cpu()
                h = c * 2 + 1
                k = c + b
                probe(x, y["labels"], a, b, c, d, e, g, h, k, a < 0.5)
        """
    )
    call = call_named(tree, "probe(x, y['labels'], a, b, c, d, e, g, h, k, a < 0.5)")
    anc = fa.index.ancestors(call)
    got = [fa.host.is_host_tensor(arg, anc) for arg in call.args]
    assert got == [True, True, True, False, True, True, False, True, True, False, True]


def test_host_batches_need_an_unmoved_name():
    fa, tree = analyse(
        """
        from torch.utils.data import DataLoader

        def f(model, dataset, device):
            loader = DataLoader(dataset)
            for x, y in loader:
                x = x.to(device)
                probe(x, y)
        """
    )
    call = call_named(tree, "probe(x, y)")
    anc = fa.index.ancestors(call)
    assert [fa.host.is_host_tensor(a, anc) for a in call.args] == [False, True]


def test_lists_of_host_tensors_joined_are_host_tensors():
    """`codes = []`, `codes.append(enc(x)[0].cpu())`, `codes = torch.cat(codes)`:
    the join of a list whose every element is a host tensor is one; a list
    that takes a device tensor too, one changed by index, or one never
    filled is not known to be."""
    fa, tree = analyse(
        """
        import torch

        def f(model, batch, dev):
            if len(batch) > 1:
                codes = []
                codes.append(model(batch[:2])[0].cpu())
                codes.append(model(batch[2:])[0].cpu())
                codes = torch.cat(codes, dim=0)
            else:
                codes = model(batch)[0].cpu()
            mixed = [torch.zeros(2)]
            mixed.append(model(batch).to(dev))
            by_index = [torch.zeros(2), torch.ones(2)]
            by_index[0] = model(batch)
            empty = []
            both = torch.stack([torch.zeros(2), torch.ones(2)])
            probe(codes[0], torch.cat(mixed), torch.cat(by_index), torch.cat(empty), both)
        """
    )
    call = call_named(tree, "probe(codes[0], torch.cat(mixed), torch.cat(by_index), torch.cat(empty), both)")
    anc = fa.index.ancestors(call)
    assert [fa.host.is_host_tensor(a, anc) for a in call.args] == [True, False, False, False, True]


def test_timing_reads():
    fa, tree = analyse(
        """
        import time
        from timeit import default_timer as timer

        def f(model, x, start, end):
            for _ in range(3):
                t = time.perf_counter()
                model(x)
                end.record()
                start.elapsed_time(end)
                timer()
                def inner():
                    time.time()
        """
    )
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For))
    reads = sorted(ast.unparse(c) for c in fa.contexts.timing_reads(loop))
    assert reads == ["start.elapsed_time(end)", "time.perf_counter()", "timer()"]
