"""Qualified names: what a name or dotted expression refers to, through imports.

`nn.DataParallel` (with `from torch import nn`), `DP` (with
`from torch.nn.parallel import DataParallel as DP`) and `torch.nn.DataParallel`
all resolve to `torch.nn.DataParallel`; a class named `DataParallel` defined
in the linted file resolves to `<local>.DataParallel` and is told apart.

This is a deliberately light analysis on the stdlib `ast` (LibCST's scope
provider costs 30x a parse): imports anywhere in the module bind names
module-wide, and module-level `class`/`def` statements shadow imports.
"""

from __future__ import annotations

import ast
import builtins
from typing import Dict, Optional, Tuple

LOCAL = "<local>"

# Different spellings of the same public object -> one canonical name.
CANONICAL: Dict[str, str] = {
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    # PyG's subclass, which scatters lists of graphs: one process driving every GPU, the same
    "torch_geometric.nn.DataParallel": "torch.nn.DataParallel",
    "torch_geometric.nn.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch_geometric.data.in_memory_dataset.InMemoryDataset": "torch_geometric.data.InMemoryDataset",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.dataset.TensorDataset": "torch.utils.data.TensorDataset",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.inference_mode": "torch.inference_mode",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "torch.autograd.grad_mode.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.grad_mode.enable_grad": "torch.enable_grad",
    "torch.autograd.enable_grad": "torch.enable_grad",
    "torch.autocast": "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast": "torch.amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.autograd.anomaly_mode.detect_anomaly": "torch.autograd.detect_anomaly",
    "torch.autograd.anomaly_mode.set_detect_anomaly": "torch.autograd.set_detect_anomaly",
    "torch.nn.modules.module.Module": "torch.nn.Module",
    "torch.nn.modules.Module": "torch.nn.Module",
}

_BUILTINS = frozenset(dir(builtins))


# compound statements and the fields that hold their nested statements
_NESTED = {
    ast.FunctionDef: ("body",), ast.AsyncFunctionDef: ("body",), ast.ClassDef: ("body",),
    ast.If: ("body", "orelse"), ast.For: ("body", "orelse"), ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"), ast.With: ("body",), ast.AsyncWith: ("body",),
    ast.Try: ("body", "handlers", "orelse", "finalbody"),
}
if hasattr(ast, "TryStar"):
    _NESTED[ast.TryStar] = ("body", "handlers", "orelse", "finalbody")
if hasattr(ast, "Match"):
    _NESTED[ast.Match] = ("cases",)
_IMPORTS = (ast.Import, ast.ImportFrom)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def module_level_defs(body) -> list:
    """The defs and classes a module's code binds: those of its body, and
    those under its `if`/`try`/`with` blocks (a script's `def train(it):`
    under `if __name__ == "__main__":`), not those inside a def or class."""
    out = []
    for node in body:
        if isinstance(node, _DEFS):
            out.append(node)
            continue
        fields = _NESTED.get(node.__class__)
        if fields:
            for f in fields:
                if f == "handlers" or f == "cases":
                    for clause in getattr(node, f):
                        out.extend(module_level_defs(clause.body))
                else:
                    out.extend(module_level_defs(getattr(node, f)))
    return out


def _imports(body, out: list) -> list:
    """The import statements under `body`, nested ones too, in source order:
    only compound statements are entered, never an expression."""
    for node in body:
        cls = node.__class__
        if cls in _IMPORTS:
            out.append(node)
            continue
        fields = _NESTED.get(cls)
        if fields:
            for f in fields:
                if f == "handlers" or f == "cases":  # except clauses, match cases: each has a body
                    for clause in getattr(node, f):
                        _imports(clause.body, out)
                else:
                    _imports(getattr(node, f), out)
    return out


# modules that torch removed, and the last torch that had each: a file that
# imports one at its top level runs on that torch or older only
REMOVED_TORCH_MODULES: Dict[str, Tuple[int, ...]] = {
    "torch._six": (1, 13),  # (gone in 2.0)
    # torchtext's legacy API, gone in torchtext 0.12, released with torch 1.11 (each
    # torchtext release builds against one torch): `from torchtext.legacy.data import Field`
    "torchtext.legacy": (1, 10), "torchtext.legacy.data": (1, 10), "torchtext.legacy.datasets": (1, 10),
}


def torch_ceiling(tree: ast.Module, text: str) -> Optional[Tuple[int, ...]]:
    """The newest torch the file can import on, where it imports a module
    torch removed at its top level (`from torch._six import inf`: torch 1.13
    at most). An import under a `try` (a fallback for newer torch) or in a
    function does not count."""
    if "_six" not in text and "legacy" not in text:
        return None
    out: Optional[Tuple[int, ...]] = None
    for node in tree.body:
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for m in mods:
            last = REMOVED_TORCH_MODULES.get(m)
            if last is not None and (out is None or last < out):
                out = last
    return out


# the names a star import of a project module gives a torch program, by convention
_STAR_ALIASES = {"nn": "torch.nn", "F": "torch.nn.functional"}


class ImportTable:
    """Maps each name bound by an import (or a module-level def) to what it is."""

    def __init__(self, tree: ast.Module, nodes=None) -> None:
        self.names: Dict[str, str] = {}
        self.modules_imported: set = set()
        star = False
        for node in nodes if nodes is not None else _imports(tree.body, []):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules_imported.add(alias.name)
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom):
                if node.level or not node.module:
                    # relative import: a project module, never torch itself
                    for alias in node.names:
                        self.names[alias.asname or alias.name] = f"{LOCAL}.{alias.name}"
                    continue
                self.modules_imported.add(node.module)
                for alias in node.names:
                    if alias.name == "*":
                        star = True
                        continue
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in module_level_defs(tree.body):  # (also under `if __name__ == "__main__":`)
            self.names[node.name] = f"{LOCAL}.{node.name}"
        if star and "torch" not in self.names:
            # `from utils import *` where utils imports torch (PyTorch-RL's examples): a name
            # `torch` the file never binds itself is torch, as the star import gave it
            self.names["torch"] = "torch"
        if star:
            # ... and so are its conventional aliases (DPC's `main.py` takes `nn` from
            # `from model_3d import *`, whose `import torch.nn as nn` it then wraps with)
            for alias, module in _STAR_ALIASES.items():
                self.names.setdefault(alias, module)

    def imports_module(self, prefix: str) -> bool:
        return any(m == prefix or m.startswith(prefix + ".") for m in self.modules_imported)

    def qualname(self, node: ast.AST) -> Optional[str]:
        """Canonical qualified name of a Name / dotted Attribute, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.names.get(node.id)
        if base is None:
            if node.id in _BUILTINS:
                base = f"builtins.{node.id}"
            else:
                return None
        parts.append(base)
        full = ".".join(reversed(parts))
        return canonical(full)

    def call_qualname(self, call: ast.AST) -> Optional[str]:
        """The qualified name of what a call calls (`torch.zeros` for `th.zeros(3)`), or None."""
        return self.qualname(call.func) if isinstance(call, ast.Call) else None


# tensor frameworks other than torch, by their top-level module
# tensor frameworks other than torch (Jittor, OneFlow and MegEngine copy torch's
# API: `model.eval()`, `.item()`, `.cuda()` there are theirs)
OTHER_FRAMEWORKS = ("paddle", "tensorflow", "jax", "mxnet", "mindspore", "jittor", "oneflow", "megengine")


def other_framework(tree: ast.Module, text: str) -> Optional[str]:
    """The tensor framework other than torch that the file is written in: it
    imports one (`import paddle`) and never torch (RT-DETR's `rtdetr_paddle/`
    beside its PyTorch trees: `.numpy()` there is Paddle's). None for a file
    that imports torch, or no such framework, or names torch through a star
    import."""
    if not any(f in text for f in OTHER_FRAMEWORKS):
        return None
    table = ImportTable(tree)
    if table.imports_module("torch") or table.names.get("torch") == "torch":
        return None
    return next((f for f in OTHER_FRAMEWORKS if table.imports_module(f)), None)


def canonical(name: str) -> str:
    return CANONICAL.get(name, name)


def dotted(node: ast.AST) -> Optional[str]:
    """The source spelling of a Name / Attribute chain (`self.model`), or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def node_word(node: ast.AST) -> Optional[str]:
    """The word a node of a condition spells, for tests such as `if args.debug:`:
    a name, an attribute, a string constant or a keyword's name; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.keyword):
        return node.arg
    return None


def last_name(node: ast.AST) -> Optional[str]:
    """`loss` for `loss`, `model` for `self.model`, None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
