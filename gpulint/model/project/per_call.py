"""Classes a project builds on every call of a layer: a class built in a
method of an `nn.Module` subclass, other than one named for set-up
(`TriangularCausalMask(B, L, device=queries.device)` in an attention
layer's `forward`, the Informer family's `utils/masking.py`). Its
`__init__` then runs on every forward, not once: what it builds on the CPU
and copies to the GPU, it copies every step (`Programs.per_call`)."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from gpulint.model.control.repetition import is_once_only_name
from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.walk import walk


def built_per_call(tree: ast.Module, module: str, bindings: Dict[str, str]) -> List[str]:
    """The dotted names of the classes of the project (of this file, or
    imported: `bindings`, name -> dotted) that the methods of the file's
    `nn.Module` subclasses build by name, set-up methods (`__init__`,
    `reset_parameters`, ...) aside."""
    local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    out = set()
    set_up: Optional[set] = None
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or not any(_names_module(b) for b in cls.bases):
            continue
        for func in cls.body:
            if not isinstance(func, FUNCS) or is_once_only_name(func.name):
                continue
            if set_up is None:
                set_up = _set_up_helpers(tree)
            if func.name in set_up:
                continue
            for n in walk(func):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id[:1].isupper():
                    name = n.func.id
                    if name in local:
                        out.add(f"{module}.{name}")
                    elif "." in bindings.get(name, ""):
                        out.add(bindings[name])
    return sorted(out)


def _names_module(base: ast.AST) -> bool:
    """`nn.Module`, `torch.nn.Module`, `Module` as a base."""
    return (isinstance(base, ast.Attribute) and base.attr == "Module") or (
        isinstance(base, ast.Name) and base.id == "Module")


def _set_up_helpers(tree: ast.Module) -> Set[str]:
    """The method names that the file calls as `self.<name>(...)` only from
    methods named for set-up, once at least: a layer builder `__init__`
    calls (diffpool's `self.build_conv_layers(...)`, which builds its
    `GraphConv`s in a loop) runs when the model is built, not every call."""
    callers: Dict[str, Set[bool]] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for func in cls.body:
            if not isinstance(func, FUNCS):
                continue
            once = is_once_only_name(func.name)
            for n in walk(func):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self":
                    callers.setdefault(n.func.attr, set()).add(once)
    return {name for name, kinds in callers.items() if kinds == {True}}
