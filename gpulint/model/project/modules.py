"""Module names of the project's files, and where an import leads.

A file's module name is its path below a root, dotted: `pkg/sub/mod.py` is
`pkg.sub.mod` and `pkg/sub/__init__.py` is `pkg.sub`. A file can be
imported under more than one name (a script's folder, a `src/` layout, the
top of its package), so each file gets every name it can have: below the
project root, below `<root>/src`, below the first folder above it that is
not a package, and below each folder above that one, up to a root: folders
without an `__init__.py` are namespace packages (`from
model.synthesizer.transformer import ImageTransformer`, run from the folder
that holds `model/`). Imports are resolved against those names.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional


def module_names(path: str, roots: Iterable[str], tops: Optional[Dict[str, str]] = None) -> List[str]:
    """Every dotted name `path` can be imported as: below each root that
    holds it, and below the top of its package; the first is its main name.
    `tops`: a folder -> top-of-its-package memo shared by the calls of one run
    (each folder is looked at once, not once per file in it)."""
    path = os.path.abspath(path)
    stem, ext = os.path.splitext(path)
    if ext not in (".py", ".pyi"):
        return []
    out: List[str] = []
    bases = [r if os.path.isabs(r) else os.path.abspath(r) for r in roots]
    # the folder Python puts on sys.path for a script, or the top of its package
    top = _package_top(os.path.dirname(path), tops if tops is not None else {})
    bases.append(top)
    # namespace packages: each folder above the package's top, up to a root (a few at most)
    above = top
    for _ in range(_NAMESPACE_DEPTH):
        parent = os.path.dirname(above)
        if parent == above or above in bases[:-1] or not os.path.basename(above).isidentifier():
            break
        bases.append(parent)
        above = parent
    for base in bases:
        name = _below(stem, base)
        if name and name not in out:
            out.append(name)
    return out


# how many folders above a package's top may hold it as a namespace package
_NAMESPACE_DEPTH = 4


def _package_top(folder: str, tops: Dict[str, str]) -> str:
    """The first folder at or above `folder` that is not a package."""
    top = tops.get(folder)
    if top is None:
        if os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
            top = _package_top(os.path.dirname(folder), tops)
        else:
            top = folder
        tops[folder] = top
    return top


def _below(stem: str, base: str) -> Optional[str]:
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not stem.startswith(prefix):
        return None
    parts = stem[len(prefix):].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def is_package(path: str) -> bool:
    return os.path.basename(path) in ("__init__.py", "__init__.pyi")


def resolve_from(module: str, package: bool, level: int, name: Optional[str]) -> Optional[str]:
    """The absolute module of `from <level dots><name> import ...` written in
    `module` (itself a package's `__init__` when `package`)."""
    if level == 0:
        return name
    parts = module.split(".") if module else []
    if not package:
        parts = parts[:-1]  # a module's own package
    drop = level - 1
    if drop > len(parts):
        return None
    parts = parts[: len(parts) - drop] if drop else parts
    if name:
        parts = parts + name.split(".")
    return ".".join(parts) if parts else None
