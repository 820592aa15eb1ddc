"""The calls a file makes to its own functions, found by name: `name(...)`,
`self.name(...)` (through `self.<attr> = self.<method>` aliases) and
`obj.name(...)`; and which of the file's classes are related by
inheritance, so that a method's callers are looked for in its own class and
its relatives, not in every class with a method of the same name.
`repetition` asks these to tell whether a function runs repeatedly."""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar

from gpulint.model.index.nodes import FUNCS, class_method_aliases
from gpulint.model.index.tree import TreeIndex


def own_callee_name(call: ast.Call) -> Optional[str]:
    """`name` of `name(...)`, `self.name(...)` or `cls.name(...)`: a call of
    the file's own function or method; else None (`index.order.callee_name`
    also names `obj.m(...)`)."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
        return f.attr
    return None


def calls_by_callee(index: TreeIndex) -> Dict[str, List[ast.Call]]:
    """The file's `name(...)` / `self.name(...)` calls, by name, in source order."""
    def compute() -> Dict[str, List[ast.Call]]:
        out: Dict[str, List[ast.Call]] = {}
        aliases = file_method_aliases(index)
        for call in index.nodes(ast.Call):
            name = own_callee_name(call)  # type: ignore[arg-type]
            if name is not None:
                # `self.timestep_embedding(t)` with `self.timestep_embedding = self.positional_embedding`
                # in the class: the call runs `positional_embedding`
                if aliases and isinstance(call.func, ast.Attribute) and name in aliases:  # type: ignore[attr-defined]
                    name = aliases[name]
                out.setdefault(name, []).append(call)  # type: ignore[arg-type]
        return out

    return index.memoized("file_calls.by_callee", "file", compute)  # type: ignore[return-value]


def object_calls(index: TreeIndex) -> Dict[str, List[ast.Call]]:
    """The file's `obj.name(...)` calls on a plain name other than `self`/`cls`, by name."""
    def compute() -> Dict[str, List[ast.Call]]:
        out: Dict[str, List[ast.Call]] = {}
        for call in index.nodes(ast.Call):
            f = call.func  # type: ignore[attr-defined]
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in ("self", "cls"):
                out.setdefault(f.attr, []).append(call)  # type: ignore[arg-type]
        return out

    return index.memoized("file_calls.object_calls", "file", compute)  # type: ignore[return-value]


def file_method_aliases(index: TreeIndex) -> Dict[str, str]:
    """attr -> method for the `self.<attr> = self.<method>` aliases of the
    file's classes (`index.nodes.method_aliases`), where no two classes
    alias one attribute to different methods."""
    out: Dict[str, str] = {}
    clash = set()
    for cls in index.nodes(ast.ClassDef):
        for attr, method in class_method_aliases(index, cls).items():  # type: ignore[arg-type]
            if out.get(attr, method) != method:
                clash.add(attr)
            out[attr] = method
    return {k: v for k, v in out.items() if k not in clash}


def calling_class(call: ast.Call, ancestors: Sequence[ast.AST]) -> Optional[str]:
    """The class whose method makes `self.name(...)` (its nearest class), or
    None for a plain `name(...)` call."""
    if not isinstance(call.func, ast.Attribute):
        return None
    return next((a.name for a in reversed(ancestors) if isinstance(a, ast.ClassDef)), None)


def class_group(index: TreeIndex, name: str) -> str:
    """One name for `name` and every class of the file joined to it by
    inheritance among the file's classes (by their bases' last names): the
    same for all of a group, found in one pass (union-find)."""
    def compute() -> Dict[str, str]:
        classes = list(index.nodes(ast.ClassDef))
        parent: Dict[str, str] = {c.name: c.name for c in classes}  # type: ignore[attr-defined]

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for c in classes:
            for b in c.bases:  # type: ignore[attr-defined]
                base = b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", None)
                if base in parent:
                    parent[find(base)] = find(c.name)  # type: ignore[attr-defined]
        return {n: find(n) for n in parent}

    return index.memoized("file_calls.groups", "file", compute).get(name, name)  # type: ignore[union-attr]


def in_forward(ancestors: Sequence[ast.AST]) -> bool:
    """The innermost def around is a method named `forward`."""
    at = next((i for i in range(len(ancestors) - 1, -1, -1) if isinstance(ancestors[i], FUNCS)), None)
    return at is not None and at > 0 and ancestors[at].name == "forward" and isinstance(  # type: ignore[attr-defined]
        ancestors[at - 1], ast.ClassDef)


_K = TypeVar("_K")


def reached_below(seeds: Set[_K], edges: Iterable[Tuple[_K, _K]]) -> Set[_K]:
    """The callees reached from `seeds` through (callee, caller) `edges`,
    however deep (the seeds not included unless reached)."""
    edges = list(edges)
    reached: Set[_K] = set()
    frontier = set(seeds)
    while frontier:
        new = {callee for callee, caller in edges if caller in frontier and callee not in reached
               and callee not in seeds}
        reached |= new
        frontier = new
    return reached

