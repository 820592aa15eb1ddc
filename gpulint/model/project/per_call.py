"""Classes a project builds on every call of a layer: a class built in a
method of an `nn.Module` subclass, other than one named for set-up
(`TriangularCausalMask(B, L, device=queries.device)` in an attention
layer's `forward`, the Informer family's `utils/masking.py`). Its
`__init__` then runs on every forward, not once: what it builds on the CPU
and copies to the GPU, it copies every step (`Programs.per_call`)."""

from __future__ import annotations

import ast
from typing import Dict, List, Set

from gpulint.model.control.repetition import is_once_only_name
from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.walk import walk


def built_per_call(tree: ast.Module, module: str, bindings: Dict[str, str]) -> List[str]:
    """The dotted names of the classes of the project (of this file, or
    imported: `bindings`, name -> dotted) that the methods of the file's
    `nn.Module` subclasses build by name, set-up methods (`__init__`,
    `reset_parameters`, ...) aside, and the methods that only set-up methods
    call (`_set_up_helpers`)."""
    local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    built: Dict[str, Set[str]] = {}  # method name -> what it builds
    per_call: Set[str] = set()  # the methods they call as `self.<name>(...)`
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or not any(_names_module(b) for b in cls.bases):
            continue
        for func in cls.body:
            if not isinstance(func, FUNCS) or is_once_only_name(func.name):
                continue
            for n in walk(func):
                if not isinstance(n, ast.Call):
                    continue
                f = n.func
                if isinstance(f, ast.Name) and f.id[:1].isupper():
                    name = f.id
                    if name in local:
                        built.setdefault(func.name, set()).add(f"{module}.{name}")
                    elif "." in bindings.get(name, ""):
                        built.setdefault(func.name, set()).add(bindings[name])
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                    per_call.add(f.attr)
    if not built:
        return []
    # (a method these methods call is no set-up helper: the walk is asked only of the others)
    helpers = {name for name in built if name not in per_call and not name.startswith(("forward", "__"))}
    set_up = _set_up_helpers(tree, helpers) if helpers else set()
    return sorted({ref for name, refs in built.items() if name not in set_up for ref in refs})


def _names_module(base: ast.AST) -> bool:
    """`nn.Module`, `torch.nn.Module`, `Module` as a base."""
    return (isinstance(base, ast.Attribute) and base.attr == "Module") or (
        isinstance(base, ast.Name) and base.id == "Module")


def _set_up_helpers(tree: ast.Module, names: Set[str]) -> Set[str]:
    """Those of `names` (methods no per-call method calls) that the file
    calls as `self.<name>(...)` from methods named for set-up: a layer builder
    `__init__` calls (diffpool's `self.build_conv_layers(...)`, which builds
    its `GraphConv`s in a loop) runs when the model is built, not every
    call. Asked only of files whose methods build a class every call."""
    found: Set[str] = set()
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for func in cls.body:
            if not isinstance(func, FUNCS) or not is_once_only_name(func.name):
                continue
            for n in walk(func):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in names \
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self":
                    found.add(n.func.attr)
    return found
