"""GPU203's move to another tensor's device: `torch.zeros(1, 1, n,
k).to(mask)` in a model's code (LLaMA-Adapter's adapter mask, built in each
of 30 layers), where `mask` is a tensor of the forward and so lives where
the model does. Reported without a fix: `device=` alone would not carry the
dtype that `.to(mask)` also takes."""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional, Sequence, Set, Tuple

from gpulint.model.control.repetition import called_repeatedly, runs_repeatedly
from gpulint.model.index.order import scope_nodes
from gpulint.model.index.walk import walk
from gpulint.model.values.devices import device_arg_kind, factory_name
from gpulint.model.values.host_built import host_factory
from gpulint.rules.cpu_tensor_then_moved.host_built import in_module_forward, waits_anyway
from gpulint.model.values.kinds import TENSOR


def moved_like(fa, node: ast.Call, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """For `<factory>.to(t)` in a `forward` (a layer's every call), or in a
    method that the class's `forward` calls on `self`, with `t`
    a tensor (by inference, or a parameter of that `forward`), named as
    neither a device nor a dtype: `t`; else None. Measured on the corpora,
    the same move in a beam-search step, a sampler or a preprocessing
    helper ran once per decoding step after a sync, or once per call."""
    if not (node.func.attr == "to" and len(node.args) == 1 and not node.keywords):  # type: ignore[attr-defined]
        return None
    return _like_in_layer(fa, node, node.args[0], ancestors)


def typed_like(fa, node: ast.Call, ancestors: Sequence[ast.AST]) -> Optional[Tuple[ast.AST, ast.Call]]:
    """For `<CPU factory>.repeat(...).view(x.shape).type_as(x)` where
    `moved_like` would take `.to(x)`: the factory's result, through casts
    and reshapes, cast to `x`'s type, which moves it to `x`'s device (YOLO
    losses' grids, rebuilt per level of every step): (x, the factory)."""
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in ("type_as", "type")
            and len(node.args) == 1 and not node.keywords):
        return None
    other = node.args[0]
    if node.func.attr == "type":  # `.type(x.type())`: x's type name, its device included
        if not (isinstance(other, ast.Call) and isinstance(other.func, ast.Attribute)
                and other.func.attr == "type" and not other.args and not other.keywords):
            return None
        other = other.func.value
    like = _like_in_layer(fa, node, other, ancestors, typed=node.func.attr == "type")
    if like is None:
        return None
    parent = ancestors[-1] if ancestors else None
    if isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda"):
        return None  # `.type_as(tokens).to(device)`: the move after it is judged as a move
    func = next((a for a in reversed(ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if waits_anyway(fa, func) or in_module_forward(fa, func):
        return None  # the host waits there anyway; a factory in a forward is GPU204's
    factory = host_factory(fa, node.func.value, func, lambda e: fa.values.is_tensor(e, ancestors))
    if factory is None or (factory_name(fa, factory) is None and not fa.facts.host_built(factory)):
        return None  # (or a project function returning what a CPU factory built: ARFlow's `mesh_grid`)
    return like, factory


def moved_like_text(fa, node: ast.Call, ancestors: Sequence[ast.AST], text_of, factory: str) -> Optional[str]:
    """The finding's message for a `moved_like` move of `factory`'s tensor; else None."""
    like = moved_like(fa, node, ancestors)
    return moved_like_message(text_of(like), factory) if like is not None else None


def typed_like_message(fa, node: ast.Call, ancestors: Sequence[ast.AST], text_of) -> Optional[str]:
    """The finding's message for a `typed_like` cast, once per factory
    (however many casts copy what it built); else None."""
    found = typed_like(fa, node, ancestors)
    if found is None:
        return None
    like, factory = found
    reported = fa.index.memo("gpu203.computed")
    if factory in reported:
        return None
    reported[factory] = True
    method = "type_as" if node.func.attr == "type_as" else "type"  # type: ignore[attr-defined]
    name = factory_name(fa, factory)
    if name is None:  # a project function that returns what it builds on the CPU
        other, cast = _cast_text(text_of(like), method)
        return (
            f"`{text_of(factory.func)}()` returns a tensor it builds on the CPU and `{cast}` then copies it to "
            f"the GPU; build it on the device (pass `{other}.device` in, and `device=` to its factories)"
        )
    return moved_like_message(text_of(like), name, method)


def _like_in_layer(fa, node: ast.Call, like: ast.AST, ancestors: Sequence[ast.AST],
                   typed: bool = False) -> Optional[ast.AST]:
    """`like`, where the move to its device runs on every call of a layer;
    else None. With `typed` (`.type(like.type())`), `like` is a tensor by
    its own use: `.type()` with no argument is the tensor's type name, which
    neither a module nor an array has."""
    if not isinstance(like, ast.Name) or "device" in like.id.lower() or device_arg_kind(fa, like) is not None:
        return None  # (an attribute may hold a device: `self.loss_device`)
    func = next((a for a in reversed(ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or not (func.name == "forward" or _called_by_forward(fa, func, ancestors)
                            or fa.facts.every_step(func)):
        return None  # a layer's every call, or a function the call graph runs every step (a flow
        # loss's `flow_warp`); not a search step, a sampler or a preprocessing helper
    kind = fa.values.kind_at(like, ancestors)
    if kind != TENSOR and not (kind is None and (typed or _parameter_of_forward(like, func))):
        return None
    if not runs_repeatedly(fa, node, ancestors):
        return None
    return like


def _cast_text(other: str, method: str) -> Tuple[str, str]:
    """(the other tensor's text, shortened, and the cast or move as written:
    `.to(x)`, `.type_as(x)`, `.type(x.type())`)."""
    other = other if len(other) <= 20 else "..."
    return other, f".type({other}.type())" if method == "type" else f".{method}({other})"


def moved_like_message(other: str, factory: str, method: str = "to") -> str:
    other, cast = _cast_text(other, method)
    return (
        f"`torch.{factory}()` builds the tensor on the CPU and `{cast}` then copies it to the GPU; "
        f"pass `device={other}.device, dtype={other}.dtype` instead"
    )


def _called_by_forward(fa, func: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`func` is a method that its class's `forward` calls as `self.<name>(...)`
    (Chronos-2's `_prepare_patched_future` and `_compute_loss`): part of the
    layer's every call, as the forward's own code is."""
    at = next((i for i, a in enumerate(ancestors) if a is func), 0)
    cls = ancestors[at - 1] if at > 0 else None
    if not isinstance(cls, ast.ClassDef):
        return False
    direct, deeper = fa.index.memoized("gpu203.forward_helpers", cls, lambda: _forward_helpers(cls))
    # (a method further down runs every forward unless a cache guard stands between: RT-DETR's
    # `_generate_anchors`, called by `_get_decoder_input` only when the feature shapes change)
    return func.name in direct or (func.name in deeper and called_repeatedly(fa, func))  # type: ignore[attr-defined]


def _forward_helpers(cls: ast.ClassDef) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(the methods of `cls` that its `forward` calls on `self`, those it
    calls through other such methods): svoice's `pad_segment`, which
    `create_chuncks` calls for `forward`, is of the second."""
    methods = {b.name: b for b in cls.body if isinstance(b, ast.FunctionDef)}
    if "forward" not in methods:
        return frozenset(), frozenset()
    seen: Set[str] = set()
    direct: Set[str] = set()
    todo = ["forward"]
    while todo:
        caller = todo.pop()
        for n in scope_nodes(methods[caller]):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self" and n.func.attr in methods and n.func.attr not in seen):
                seen.add(n.func.attr)
                todo.append(n.func.attr)
                if caller == "forward":
                    direct.add(n.func.attr)
    return frozenset(direct), frozenset(seen - direct)


def _parameter_of_forward(expr: ast.AST, func: ast.AST) -> bool:
    """A parameter of `forward` (`mask` in `forward(self, x, mask)`), or a
    name the function binds only to an item of one (`y = states[0]` in an
    ODE function's `forward(self, t, states)`): a tensor of the step."""
    if not isinstance(expr, ast.Name):
        return False
    args = func.args  # type: ignore[attr-defined]
    params = {a.arg for a in args.posonlyargs + args.args[1:] + args.kwonlyargs}
    if expr.id in params:
        return True
    stores = items = 0
    for n in walk(func):
        if isinstance(n, ast.Name) and n.id == expr.id and not isinstance(n.ctx, ast.Load):
            stores += 1
        elif (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
              and n.targets[0].id == expr.id and isinstance(n.value, ast.Subscript)
              and isinstance(n.value.value, ast.Name) and n.value.value.id in params
              and isinstance(n.value.slice, ast.Constant) and isinstance(n.value.slice.value, int)):
            items += 1
    return stores > 0 and items == stores
