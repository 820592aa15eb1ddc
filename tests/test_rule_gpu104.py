"""GPU101 takes training loops, GPU104 evaluation/inference loops; an
accumulation guard around the optimizer step is not a logging interval."""

from __future__ import annotations

import textwrap

from helpers import lint


def found(code: str):
    return sorted((f.row, f.code) for f in lint(textwrap.dedent(code).lstrip("\n"), codes=["GPU101", "GPU104"]))


def test_training_loop_is_gpu101_eval_loop_is_gpu104():
    assert found(
        """
        import torch

        def train(model, loader, opt):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(loss.item())

        def evaluate(model, loader):
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x.cuda()).argmax(1) == y.cuda()).sum().item()
            return correct
        """
    ) == [(9, "GPU101"), (15, "GPU104")]


def test_gpu104_is_off_by_default():
    from gpulint.engine.config import resolve_selection

    assert "GPU104" not in resolve_selection(None, (), ())
    assert "GPU104" in resolve_selection(("GPU104",), (), ())
    assert "GPU104" not in resolve_selection(("GPU1",), (), ())


def test_accumulation_boundary_is_not_a_logging_interval():
    # the `%` guard holds the optimizer step: its body runs on every training step
    assert found(
        """
        import torch

        def train(model, loader, optimizer, accum):
            running_loss = 0
            for idx, batch in enumerate(loader):
                loss = model(batch["x"].cuda()).mean() / accum
                running_loss += loss
                loss.backward()
                if (idx + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                    print(f"loss {running_loss.item():.3f}")
                    running_loss = 0
                if idx % 100 == 0:
                    print(loss.item())
        """
    ) == [(12, "GPU101")]


def test_decoding_loop_is_neither():
    assert found(
        """
        import torch

        def greedy(model, ids, eos):
            for _ in range(32):
                nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
                ids = torch.cat([ids, nxt], dim=-1)
                if (nxt == eos).all():
                    break
            return ids
        """
    ) == []
