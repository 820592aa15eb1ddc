"""The values layer reads torch's own signatures (gpulint/model/values/torch_signatures.json):
what a Tensor method or attribute, or a torch function, returns."""

from __future__ import annotations

import ast
import textwrap

from gpulint.model.file import FileModel
from gpulint.model.values.kinds import NUMBER, OTHER, TENSOR, is_tensor_returning_torch

from helpers import lint

LOOP = """
import torch


def train(model, loader, opt):
    for x in loader:
        loss = model(x.cuda())
        loss.backward()
        opt.step()
        {line}
"""


def _kind(expr: str) -> str:
    text = textwrap.dedent(f"""
        import torch

        def f(model, x):
            t = model(x)
            v = {expr}
    """)
    fa = FileModel(ast.parse(text), text)
    assign = [n for n in ast.walk(fa.tree) if isinstance(n, ast.Assign)][-1]
    return fa.values.kind(assign.value, fa.index.ancestors(assign.value))


def test_tensor_methods_and_attributes_take_their_kinds_from_the_stubs():
    assert _kind("t.type()") == OTHER  # a string
    assert _kind("t.type(torch.half)") == TENSOR
    assert _kind("t.dim()") == NUMBER
    assert _kind("t.size()") == OTHER and _kind("t.size(0)") == NUMBER
    assert _kind("t.nbytes") == NUMBER
    assert _kind("t.shape") == OTHER
    assert _kind("t.cpu()") == TENSOR
    # where the stubs say nothing (an unannotated method), the hand-written lists decide
    assert _kind("t.norm()") == TENSOR


def test_printing_a_tensors_type_is_no_sync():
    assert lint(LOOP.format(line="print(loss.type())"), ["GPU101"]) == []
    assert [f.code for f in lint(LOOP.format(line="print(loss.type(torch.half))"), ["GPU101"])] == ["GPU101"]


def test_torch_functions_take_their_kinds_from_the_stubs():
    assert is_tensor_returning_torch("torch.zeros")
    assert is_tensor_returning_torch("torch.linalg.norm")
    assert not is_tensor_returning_torch("torch.get_default_device")
    assert not is_tensor_returning_torch("torch.promote_types")
    # bool results computed from the values still read as tensors: their truth value syncs
    assert is_tensor_returning_torch("torch.equal") and is_tensor_returning_torch("torch.allclose")
    found = lint(LOOP.format(line="assert torch.allclose(loss, loss)"), ["GPU101"])
    assert [f.code for f in found] == ["GPU101"]
