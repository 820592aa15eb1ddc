"""Sweeps: loops over a short literal collection of constants.

`for channels in [30, 32, 64, 71]:` runs a handful of times, set by hand (a
sweep of sizes in a check script, the names of a few metrics), not once per
step or batch. Loops, repetition and the project's call graph ask here, so
that a function called from such a loop is not per-step code.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Set

from gpulint.model.index.nodes import FUNCS, SCOPES
from gpulint.model.index.order import target_names
from gpulint.model.index.walk import child_nodes

if TYPE_CHECKING:
    from gpulint.model.index.tree import TreeIndex


def is_literal_sweep(loop: ast.AST, index: Optional["TreeIndex"] = None, outer: Sequence[ast.AST] = ()) -> bool:
    """`for channels in [30, 32, 64, 71]:`: a loop over a short literal list
    of constants runs a handful of times, set by hand (a sweep of sizes in a
    check script, the names of a few metrics), not once per step or batch;
    a loop around it still repeats it. So does a loop over `.items()`,
    `.keys()` or `.values()` of a literal dict, over `enumerate(...)` of
    such a collection, or (given the file and the loop's ancestors) over a
    name that its scope only ever binds to such a collection, filled with
    constants (`texts = {}; texts["Happy"] = "..."; for k, v in texts.items():`
    in a demo notebook)."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        it = it.args[0]
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args
            and it.func.attr in ("items", "keys", "values")):
        it = it.func.value
    if _literal_constants(it) is not None:
        return True
    if isinstance(it, ast.Name) and index is not None:
        scope = next((a for a in reversed(outer) if isinstance(a, SCOPES + (ast.Module,))), None)
        return scope is not None and _literal_name(index, scope, it.id)
    return False


_SWEEP_MAX = 16


def _is_constant(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) or (isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant))


def _literal_constants(e: ast.AST) -> Optional[int]:
    """How many constants a literal list, tuple, set or dict of constants
    holds (at most `_SWEEP_MAX`; 0 for an empty one); None for anything else."""
    if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
        elts = e.elts
    elif isinstance(e, ast.Dict):
        if any(k is None or not _is_constant(k) for k in e.keys):
            return None
        elts = e.values
    else:
        return None
    if len(elts) > _SWEEP_MAX or not all(_is_constant(x) for x in elts):
        return None
    return len(elts)


def _literal_name(index: "TreeIndex", scope: ast.AST, name: str) -> bool:
    """`name` is bound in `scope` only to literal collections of constants (an
    empty one included) and filled only with constants (`name[k] = "..."`,
    `name.append(3)`), and so holds a handful of constants when looped over."""
    cache = index.memo("repetition.literal_names")
    names = cache.get(scope)
    if names is None:
        names = cache[scope] = _literal_names(scope)
    return name in names  # type: ignore[operator]


def _literal_names(scope: ast.AST) -> Set[str]:
    """The names of `scope` (not of nested scopes) that `_literal_name` accepts,
    each read in one pass over the scope."""
    bindings: Dict[str, int] = {}
    filled: Dict[str, int] = {}
    bad: Set[str] = set()
    if isinstance(scope, FUNCS):
        args = scope.args  # type: ignore[attr-defined]
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                bad.add(a.arg)
    stack = list(getattr(scope, "body", []))
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPES):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bad.add(n.name)
            continue
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    if _literal_constants(n.value) is not None:  # an empty one too
                        bindings[t.id] = bindings.get(t.id, 0) + 1
                    else:
                        bad.add(t.id)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    if _is_constant(t.slice) and _is_constant(n.value):
                        filled[t.value.id] = filled.get(t.value.id, 0) + 1
                    else:
                        bad.add(t.value.id)
                else:
                    bad.update(target_names(t))
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name):
            bad.add(n.target.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            owner = n.func.value.id
            if n.func.attr in ("append", "add", "insert") and all(_is_constant(a) for a in n.args):
                filled[owner] = filled.get(owner, 0) + 1
            elif n.func.attr in ("append", "add", "insert", "extend", "update", "setdefault", "__setitem__",
                                 "__iadd__", "__ior__"):
                bad.add(owner)
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)):
            bad.update(target_names(n.target))
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            bad.update(target_names(n.optional_vars))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bad.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bad.update(n.names)
        stack.extend(child_nodes(n))
    return {
        name for name, count in bindings.items()
        if name not in bad and filled.get(name, 0) <= _SWEEP_MAX * count
    }
