"""What a call does to training: a model forward, a `.backward()`, an optimizer step."""

from __future__ import annotations

import ast
import re
from typing import Sequence

from gpulint.model.index.nodes import FUNCS
from gpulint.model.names import last_name
from gpulint.model.values.kinds import LOADER_NAME_RE, MODEL, OPTIMIZER, OPTIMIZER_NAME_RE, SCALER, SCALER_NAME_RE
from gpulint.model.values.callfacts import NO_FACTS, CallFacts
from gpulint.model.values.devices import moved_return_positions
from gpulint.model.values.values import Values
from gpulint.model.index.walk import walk


# receivers whose `.step()` is a scheduler's (a learning-rate or a diffusion
# scheduler), which no inference needs to be asked about
_SCHEDULER_NAME_RE = re.compile(r"sched", re.I)


class Steps:
    """The training-step calls of one file."""

    def __init__(self, values: Values, facts: CallFacts = NO_FACTS) -> None:
        self.values = values
        self.facts = facts

    def helper_steps(self, call: ast.AST) -> bool:
        """A call of a function that runs `.backward()` or an optimizer step
        itself or through the functions it calls (`loss_scaler(loss,
        optimizer)`, `self._run_step(x)`), as the project's call graph tells."""
        return isinstance(call, ast.Call) and self.facts.steps(call)

    def is_model_call(self, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """`model(x)`, `self.net(x)`, `model.module(x)`; not `model.eval()`."""
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        if isinstance(func, ast.Name):
            return self.values.kind(func, ancestors) == MODEL
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                return self.values.self_attr_kind(func) == MODEL
            if func.attr in ("forward",):
                return self.values.kind(func.value, ancestors) == MODEL
            if func.attr in ("module", "_orig_mod"):
                return self.values.kind(func.value, ancestors) == MODEL
            # model.encoder(x) style sub-module call on a known model
            return False
        return False

    @staticmethod
    def is_backward_call(call: ast.AST) -> bool:
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
        )

    def is_optimizer_step(self, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """`optimizer.step()`, `opt.step()`, `scaler.step(optimizer)`; not `scheduler.step()`."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
            return False
        if self.named_optimizer_step(call):
            return True  # (by its name: no type inference needed)
        if _SCHEDULER_NAME_RE.search(last_name(call.func.value) or ""):
            return False  # `self.scheduler.step(noise_pred, t, latents)`, `lr_scheduler.step()`: never an optimizer
        return self.values.kind(call.func.value, ancestors) in (OPTIMIZER, SCALER)

    @staticmethod
    def named_optimizer_step(call: ast.Call) -> bool:
        """`<name>.step()` where the receiver is named like an optimizer or a
        scaler (`optimizer`, `opt_d`, `self._scaler`): the part of
        `is_optimizer_step` that needs no type inference."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step"):
            return False
        name = (last_name(func.value) or "").lstrip("_")
        return bool(OPTIMIZER_NAME_RE.match(name) or SCALER_NAME_RE.match(name))

    def forward_helper(self, func: ast.AST, cls: ast.AST) -> bool:
        """`func` is a method of the `nn.Module` class `cls`, other than
        `forward`, that only `forward` calls (`self._prob_QK(q, k)`, at least
        once, and nowhere else in the class): it runs as part of every
        forward pass, not at set-up."""
        if not (isinstance(func, FUNCS) and isinstance(cls, ast.ClassDef)):
            return False
        if func.name in ("forward", "__init__") or func.name.startswith("__") or not self.values.is_module_class(cls):
            return False
        return func.name in self.values.index.memoized("steps.forward_helpers", cls, lambda: _forward_helpers(cls))


def _forward_helpers(cls: ast.ClassDef) -> frozenset:
    """The names of `cls`'s methods that its `forward` calls on `self` and
    no other method of it does."""
    in_forward, elsewhere = set(), set()
    for item in cls.body:
        if not isinstance(item, FUNCS):
            continue
        found = in_forward if item.name == "forward" else elsewhere
        for n in walk(item):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self"):
                found.add(n.func.attr)
    methods = {item.name for item in cls.body if isinstance(item, FUNCS)}
    return frozenset((in_forward - elsewhere) & methods)


def may_start(fa) -> bool:
    """Something in the file can start a step or a loop of them, as a
    file's own summary reads it before the project says anything: a
    `.backward()` (or Lightning's `manual_backward`), a `.step()` of a
    receiver named like an optimizer or a scaler, a generator, or a name
    that may hold a loader (`train_loader`, `self.val_dl`, `IndexLoader`), or a
    def that returns what it put on an accelerator (its callers' models).
    Without one, its summary says nothing that starts a step, and the
    project asks for it only when per-step code calls into it (the word
    test `may_start_steps` passes diffusers' `self.scheduler.step(...)` and
    `LoraLoaderMixin`)."""
    index = fa.index
    for call in index.nodes(ast.Call):
        f = call.func  # type: ignore[attr-defined]
        if isinstance(f, ast.Attribute) and (f.attr in ("backward", "manual_backward") or (
                f.attr == "step" and Steps.named_optimizer_step(call))):  # type: ignore[arg-type]
            return True
    if index.nodes(ast.Yield) or index.nodes(ast.YieldFrom):
        return True
    for ret in index.nodes(ast.Return):  # a def that returns what it moved (`return net.to(device)`)
        owner = index.owner(ret)
        if ret.value is not None and isinstance(owner, FUNCS) and moved_return_positions(fa, owner, [ret]):  # type: ignore[attr-defined]
            return True
    names = {n.id for n in index.nodes(ast.Name)}  # type: ignore[attr-defined]
    names.update(n.attr for n in index.nodes(ast.Attribute))  # type: ignore[attr-defined]
    return any(LOADER_NAME_RE.match(w.lstrip("_")) or w.endswith("Loader") for w in names)
