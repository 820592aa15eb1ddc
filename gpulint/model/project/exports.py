"""What a package's `__init__` re-exports, for the project's call graph: the
names it imports at its top level (`package_exports`), and the summary of an
`__init__` that defines nothing (`exports_summary`)."""

from __future__ import annotations

import ast
from typing import Dict

from gpulint.model.project.modules import resolve_from
from gpulint.model.project.imports import import_bindings, star_imported, used_names

# calls into these never reach the project's own code: not summarized
EXTERNAL_ROOTS = frozenset(
    """torch numpy np math os sys re json time logging collections itertools functools typing warnings
    random copy inspect dataclasses pathlib subprocess shutil pickle contextlib abc enum argparse string
    datetime glob tempfile threading multiprocessing operator io struct traceback uuid hashlib""".split()
)


def package_exports(tree: ast.Module, module: str, package: bool) -> Dict[str, str]:
    """A package's `__init__` names what it imports at its top level:
    `from .ppo import PPO` in `algo/__init__.py` makes `algo.PPO` the
    project's `algo.ppo.PPO`. {} for a module that is not a package."""
    if not package:
        return {}
    out: Dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = resolve_from(module, package, node.level, node.module)
            if base is not None:
                for a in node.names:
                    if a.name != "*":
                        out[a.asname or a.name] = f"{base}.{a.name}"
    return out


def exports_summary(tree: ast.Module, module: str) -> dict:
    """The summary of a package's `__init__` that defines nothing: what it
    re-exports, the modules it imports, and what its code builds or calls
    of them (`uses`; a re-export is no use). `partial`: not read as a
    file whose loops and calls the project's facts change."""
    exports = package_exports(tree, module, True)
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    stars = star_imported(top, module, True)  # `from .logger import *`: every public name of `.logger`
    if not exports:  # only `*` re-exports: where the names it re-exports come from, for resolving calls
        return {"functions": {}, "classes": {}, "imports": [], "partial": True, "star_exports": stars}
    imported = set(exports.values()) | {target.rsplit(".", 1)[0] for target in exports.values()}
    uses = used_names(tree, module, import_bindings(top, module, True), None, EXTERNAL_ROOTS, True, stars)
    out = {"functions": {}, "classes": {}, "imports": sorted(imported), "exports": exports, "uses": uses,
           "partial": True}
    if stars:
        out["star_exports"] = stars
    return out
