"""The names a file imports and uses, read from its statements alone: the
modules it imports (`imported_modules`), what each imported name is bound to
(`import_bindings`, `bound_dotted`), the modules it imports everything of
(`star_imported`), and what each top-level def builds or calls of those
names (`used_names`). The project's references (`refs`), exports and facts
read them.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Dict, Iterable, List, Optional, Set

from gpulint.model.index.walk import index_tree
from gpulint.model.project.modules import resolve_from

MODULE_CODE = "<module>"  # the qualified name of a module's own top-level code


def imported_modules(nodes: Iterable[ast.AST], module: str, package: bool) -> Set[str]:
    """The modules (or module members) that the `import` statements `nodes`
    of the module `module` import, absolute (`from .detr import build` in
    `models/__init__.py` imports `models.detr` and `models.detr.build`)."""
    out: Set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_from(module, package, node.level, node.module)
            if base is None:
                continue
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return out


def import_bindings(nodes: Iterable[ast.AST], module: str, package: bool) -> Dict[str, str]:
    """name -> the absolute dotted name it is bound to by the `import`
    statements `nodes` of `module` (`from .blip import blip_decoder` in
    `train.py` binds `blip_decoder` to `blip.blip_decoder`; `import a.b`
    binds `a`)."""
    names: Dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    names.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_from(module, package, node.level, node.module)
            if base is None:
                continue
            for a in node.names:
                if a.name != "*":
                    names[a.asname or a.name] = f"{base}.{a.name}"
    return names


def star_imported(nodes: Iterable[ast.AST], module: str, package: bool) -> List[str]:
    """The modules that the `import` statements `nodes` of `module` import
    all names of (`from models import *`): what the file uses of them cannot be told."""
    out: List[str] = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            base = resolve_from(module, package, node.level, node.module)
            if base is not None and base not in out:
                out.append(base)
    return out


def bound_dotted(node: ast.AST, names: Dict[str, str]) -> Optional[str]:
    """`a.b.c` with `a` bound in `names` to `pkg.mod`: `pkg.mod.b.c`; None
    for anything else (a call, a subscript, an unbound name)."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    parts.append(names[node.id])
    return ".".join(reversed(parts))


# calls whose first argument is a module read by name (`getattr(models, arch)(...)`)
_MODULE_LOOKUPS = frozenset({"getattr", "vars"})


EVERY_NAME = "*"  # `used_names` key: what every name of the file may use (its star imports)


def used_names(tree: ast.Module, module: str, bindings: Dict[str, str],
               calls: Optional[Iterable[ast.AST]] = None,
               skip: Iterable[str] = (), dict_reads: bool = True, stars: Iterable[str] = (),
               attributes: Optional[Iterable[ast.AST]] = None) -> Dict[str, List[str]]:
    """What each top-level def of the file (and its module code, as
    MODULE_CODE) builds or calls of the names it imports or defines,
    absolute: `blip_decoder(...)` is `models.blip.blip_decoder`,
    `models.vit.VisionTransformer(...)` is itself, a base class is used by
    its class, and a module looked up by name (`vits.__dict__[arch](...)`,
    `getattr(models, arch)(...)`) is used as a whole. Names only read
    (`isinstance(m, DynamicModule)`, an annotation) are not uses: what code
    uses is where the models it trains can be built. `bindings`: the
    file's imported names (`import_bindings`); `calls` and `attributes`:
    the file's calls and attribute nodes, where an index holds them (else
    the tree is walked); names under a
    root in `skip` (`torch`, `numpy`) are left out; `dict_reads`: the text
    may read a `__dict__`; `stars`: the modules it imports all names of
    (`star_imported`), used by every name (EVERY_NAME)."""
    skip = frozenset(skip)
    names = {k: v for k, v in bindings.items() if v.split(".", 1)[0] not in skip}
    tops: Dict[ast.AST, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = f"{module}.{node.name}"
            tops[node] = node.name
    out: Dict[str, Set[str]] = {}
    starred = sorted(m for m in stars if m.split(".", 1)[0] not in skip)
    if starred:
        out[EVERY_NAME] = set(starred)

    def use(key: str, node: ast.AST) -> None:
        used = bound_dotted(node, names)
        if used is not None and used != f"{module}.{key}":
            out.setdefault(key, set()).add(used)

    def call_use(key: str, call: ast.AST) -> None:
        func = call.func  # type: ignore[attr-defined]
        if isinstance(func, ast.Name) and func.id in _MODULE_LOOKUPS and call.args:  # type: ignore[attr-defined]
            use(key, call.args[0])  # type: ignore[attr-defined]
        else:
            use(key, func)

    if calls is not None:
        # the top-level statement of a node, by line: top-level statements never share lines
        # but with `;` (then the first one's name stands for all)
        starts = [min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())]) for stmt in tree.body]

        def owner(node: ast.AST) -> str:
            i = bisect_right(starts, node.lineno) - 1  # type: ignore[attr-defined]
            return tops.get(tree.body[i], MODULE_CODE) if i >= 0 else MODULE_CODE

        for call in calls:
            call_use(owner(call), call)
        for node in attributes if dict_reads and attributes is not None else ():
            if node.attr == "__dict__":  # type: ignore[attr-defined]
                use(owner(node), node.value)  # type: ignore[attr-defined]
    else:
        key = MODULE_CODE
        order, parents = index_tree(tree)
        for node in order:  # pre-order: a top-level statement, then what it holds
            if parents.get(node) is tree:
                key = tops.get(node, MODULE_CODE)
            if isinstance(node, ast.Call):
                call_use(key, node)
            elif dict_reads and isinstance(node, ast.Attribute) and node.attr == "__dict__":
                use(key, node.value)
    for node, key in tops.items():
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                use(key, base)
    return {k: sorted(v) for k, v in out.items()}
