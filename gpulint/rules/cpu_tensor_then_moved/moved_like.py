"""GPU203's move to another tensor's device: `torch.zeros(1, 1, n,
k).to(mask)` in a model's code (LLaMA-Adapter's adapter mask, built in each
of 30 layers), where `mask` is a tensor of the forward and so lives where
the model does. Reported without a fix: `device=` alone would not carry the
dtype that `.to(mask)` also takes."""

from __future__ import annotations

import ast
from typing import Optional, Sequence

from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.values.devices import device_arg_kind
from gpulint.model.values.kinds import TENSOR


def moved_like(fa, node: ast.Call, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """For `<factory>.to(t)` in a `forward` (a layer's every call), with `t`
    a tensor (by inference, or a parameter of that `forward`), named as
    neither a device nor a dtype: `t`; else None. Measured on the corpora,
    the same move in a beam-search step, a sampler or a preprocessing
    helper ran once per decoding step after a sync, or once per call."""
    if not (node.func.attr == "to" and len(node.args) == 1 and not node.keywords):  # type: ignore[attr-defined]
        return None
    like = node.args[0]
    if not isinstance(like, ast.Name) or "device" in like.id.lower() or device_arg_kind(fa, like) is not None:
        return None  # (an attribute may hold a device: `self.loss_device`)
    func = next((a for a in reversed(ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or func.name != "forward":
        return None  # a layer's every call; not a search step, a sampler or a preprocessing helper
    kind = fa.values.kind_at(like, ancestors)
    if kind != TENSOR and not (kind is None and _parameter_of_forward(like, func)):
        return None
    if not runs_repeatedly(fa, node, ancestors):
        return None
    return like


def moved_like_message(other: str, factory: str) -> str:
    other = other if len(other) <= 20 else "..."
    return (
        f"`torch.{factory}()` builds the tensor on the CPU and `.to({other})` then copies it to the GPU; "
        f"pass `device={other}.device, dtype={other}.dtype` instead"
    )


def _parameter_of_forward(expr: ast.AST, func: ast.AST) -> bool:
    """A parameter of `forward` (`mask` in `forward(self, x, mask)`): a tensor of the step."""
    if not isinstance(expr, ast.Name):
        return False
    args = func.args  # type: ignore[attr-defined]
    return expr.id in {a.arg for a in args.posonlyargs + args.args[1:] + args.kwonlyargs}
