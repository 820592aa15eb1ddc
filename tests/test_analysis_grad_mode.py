"""Shared analysis used by GPU501/GPU601: grad-off functions, train/eval switches,
frozen models, and `self.<method>()` not being taken for a sub-module call."""

from __future__ import annotations

import ast
import textwrap

from gpulint.model.file import FileModel
from gpulint.model.control.modes import EVAL, TRAIN, mode_before, model_key
from gpulint.rules.inference_without_no_grad.grad_mode import (
    grad_off_functions,
    is_frozen_model,
    runs_with_grad_off,
)


def analyse(code: str) -> FileModel:
    text = textwrap.dedent(code).lstrip("\n")
    return FileModel(ast.parse(text), text, "x.py")


def calls(fa: FileModel, name: str):
    return [
        n
        for n in ast.walk(fa.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)) and model_key(n.func) == name
    ]


def test_grad_off_functions_are_transitive_and_decorators_count():
    fa = analyse(
        """
        import torch
        from utils import smart_inference_mode

        def leaf(): pass
        def middle(): leaf()
        def under_with(): pass
        def never(): pass
        @torch.no_grad()
        def decorated(): middle()
        @smart_inference_mode()
        def wrapped(): pass
        def grad_back_on(): pass

        def main():
            with torch.inference_mode():
                under_with()
                with torch.enable_grad():
                    grad_back_on()
            never()
        """
    )
    assert grad_off_functions(fa) >= {"leaf", "middle", "under_with", "decorated", "wrapped"}
    assert not grad_off_functions(fa) & {"never", "grad_back_on", "main"}


def test_runs_with_grad_off_for_a_call_inside_such_a_function():
    fa = analyse(
        """
        import torch
        def helper(model, x):
            return model(x)
        def free(model, x):
            return model(x)
        with torch.no_grad():
            helper(m, y)
        """
    )
    inside, outside = calls(fa, "model")
    assert runs_with_grad_off(fa, fa.index.ancestors(inside))
    assert not runs_with_grad_off(fa, fa.index.ancestors(outside))


def test_mode_before_reads_switches_in_source_order():
    fa = analyse(
        """
        def f(model, other, x):
            model(x)
            model.eval()
            model(x)
            model.train()
            model(x)
            model.module.train(False)
            model(x)
            other.train()
            model(x)
        """
    )
    func = fa.tree.body[0]
    got = [mode_before(fa, "model", c, func) for c in sorted(calls(fa, "model"), key=lambda c: c.lineno) if c.args]
    assert got == [None, EVAL, TRAIN, EVAL, EVAL]


def test_frozen_models():
    fa = analyse(
        """
        def f(vae, unet, text_encoder):
            vae.requires_grad_(False)
            for p in text_encoder.parameters():
                p.requires_grad_(False)
            for n, p in unet.named_parameters():
                if "lora" not in n:
                    p.requires_grad = False
        """
    )
    func = fa.tree.body[0]
    assert is_frozen_model(fa, "vae", func)
    assert is_frozen_model(fa, "text_encoder", func)
    # a conditional freeze leaves some parameters (LoRA) recording a graph
    assert not is_frozen_model(fa, "unet", func)
    assert not is_frozen_model(fa, "model", func)


def test_self_method_named_like_a_model_is_not_a_forward():
    fa = analyse(
        """
        class Trainer:
            def __init__(self, net):
                self.model = net

            def save_model(self):
                pass

            def run(self, x):
                self.save_model()
                self.model(x)
                self.best_model(x)
        """
    )
    run = fa.tree.body[0].body[2]
    c_save, c_model, c_best = [n.value for n in run.body]
    anc = [fa.tree, fa.tree.body[0], run]
    assert not fa.steps.is_model_call(c_save, anc)
    assert fa.steps.is_model_call(c_model, anc)
    assert fa.steps.is_model_call(c_best, anc)
