"""Module names of the project's files, and where an import leads.

A file's module name is its path below a root, dotted: `pkg/sub/mod.py` is
`pkg.sub.mod` and `pkg/sub/__init__.py` is `pkg.sub`. A file can be
imported under more than one name (a script's folder, a `src/` layout, the
top of its package), so each file gets every name it can have: below the
project root, below `<root>/src`, and below the first folder above it that
is not a package. Imports are resolved against those names.
"""

from __future__ import annotations

import os
from typing import Iterable, List, Optional


def module_names(path: str, roots: Iterable[str]) -> List[str]:
    """Every dotted name `path` can be imported as: below each root that
    holds it, and below the top of its package; the first is its main name."""
    path = os.path.abspath(path)
    stem, ext = os.path.splitext(path)
    if ext not in (".py", ".pyi"):
        return []
    out: List[str] = []
    bases = [os.path.abspath(r) for r in roots]
    # the folder Python puts on sys.path for a script, or the top of its package
    top = os.path.dirname(path)
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    bases.append(top)
    for base in bases:
        name = _below(stem, base)
        if name and name not in out:
            out.append(name)
    return out


def _below(stem: str, base: str) -> Optional[str]:
    rel = os.path.relpath(stem, base)
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return None
    parts = rel.split(os.sep)
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
