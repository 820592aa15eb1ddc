"""Code that never runs: the body of an `if` on a module-level flag that
the file sets to False once and never again (`time_it = False` ...
`if time_it: t0 = time.time()`; `DEBUG = False`). Editing the constant is
how a user opts into that code, as with a command-line flag that is off by
default (`options`): it is not the program's own per-step work, and no
rule reports in it. So is the branch that a command-line flag no command
line can change never takes (`store_true` with `default=True`)."""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List

from gpulint.model.control.options import constant_flags
from gpulint.model.index.tree import TreeIndex

_OFF = (False, None, 0)


def off_flags(index: TreeIndex) -> FrozenSet[str]:
    """Module-level names bound once, to False, None or 0, and stored
    nowhere else in the file (no `global` rebinding, no second assignment,
    no loop or `with` target, no import or parameter of the same name), in
    a file that does not set its globals another way (`exec`, `globals()`)."""

    def compute() -> FrozenSet[str]:
        candidates = set()
        for stmt in index.tree.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Constant) and stmt.value.value in _OFF
                    and not isinstance(stmt.value.value, float)):
                candidates.add(stmt.targets[0].id)
        if not candidates:
            return frozenset()
        stores: dict = {}
        for n in index.nodes(ast.Name):
            if n.id in candidates and not isinstance(n.ctx, ast.Load):  # type: ignore[attr-defined]
                stores[n.id] = stores.get(n.id, 0) + 1
        for g in index.nodes(ast.Global):
            for name in g.names:  # type: ignore[attr-defined]
                stores[name] = stores.get(name, 0) + 2  # rebound in a function
        for a in index.nodes(ast.alias):
            name = a.asname or a.name.split(".")[0]  # type: ignore[attr-defined]
            stores[name] = stores.get(name, 0) + 2  # imported under the same name
        for a in index.nodes(ast.arg):
            stores[a.arg] = stores.get(a.arg, 0) + 2  # type: ignore[attr-defined]  # a parameter hides it
        return frozenset(name for name in candidates if stores.get(name, 0) == 1)

    if not any(index.mentions(w) for w in ("= False", "= None", "= 0", "=False", "=None", "=0")):
        return frozenset()
    if (index.mentions("exec(") or index.mentions("globals()")) and any(
            isinstance(c.func, ast.Name) and c.func.id in ("exec", "globals")  # type: ignore[attr-defined]
            for c in index.nodes(ast.Call)):
        return frozenset()  # nanoGPT's `exec(open('configurator.py').read())` sets them from the command line
    return index.memoized("constants.off_flags", None, compute)


def dead_statements(index: TreeIndex) -> FrozenSet[int]:
    """`id()` of each statement in the body of an `if` whose test is an off
    flag (`if time_it:`, `if DEBUG and step % 10 == 0:`) or a false
    constant (`if False:`, `if 0:`, a block kept switched off by hand): it
    never runs."""
    flags = off_flags(index)
    constants = bool(flags) or any(index.mentions(w) for w in ("if False", "if 0", "if None"))
    if not constants and not (index.mentions("= False") or index.mentions("=False")) and not index.mentions("store_"):
        return frozenset()

    def off(o: ast.AST) -> bool:
        if isinstance(o, ast.Constant):
            return o.value is None or (isinstance(o.value, (bool, int)) and not o.value)
        return isinstance(o, ast.Name) and o.id in flags

    def compute() -> FrozenSet[int]:
        out = set()
        for node in index.nodes(ast.If) if constants else ():
            if any(off(o) for o in _and_operands(node.test)):  # type: ignore[attr-defined]
                out.update(id(s) for s in node.body)  # type: ignore[attr-defined]
        out.update(_dead_under_local_switches(index))
        out.update(_dead_under_constant_flags(index))
        return frozenset(out)

    return index.memoized("constants.dead", None, compute)


def _dead_under_constant_flags(index: TreeIndex) -> List[int]:
    """The branch of `if args.flag:` (or `if not args.flag:`) that a flag no
    command line can change never takes (`options.constant_flags`): the
    `else` of `if args.joint_edgeseg_loss:` where the flag is `store_true`
    with `default=True` (GSCNN), the body where it is `store_false` with
    `default=False`."""
    flags = constant_flags(index)
    if not flags:
        return []
    out: List[int] = []
    for node in index.nodes(ast.If):
        test, negated = node.test, False  # type: ignore[attr-defined]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.attr in flags:
            dead = node.orelse if flags[test.attr] != negated else node.body  # type: ignore[attr-defined]
            out.extend(id(s) for s in dead)
    return out


def _and_operands(test: ast.AST) -> List[ast.AST]:
    """The operands of `a and b` (each of which alone can switch the block
    off), or the test itself."""
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


# `    parallel = False` alone on an indented line: a local switch, maybe
_LOCAL_OFF_RE = re.compile(r"^[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*False[ \t]*(?:#.*)?$", re.M)


def _dead_under_local_switches(index: TreeIndex) -> List[int]:
    """The statements a local switched off by hand keeps from running:
    `parallel = False` in a function's own body, the name stored nowhere
    else in the file (nor declared `global` or `nonlocal`, nor a parameter
    anywhere), and then `if parallel:` in that function."""
    if not (index.mentions("= False") or index.mentions("=False")):
        return []
    names = set(_LOCAL_OFF_RE.findall(index.text))
    if not names:
        return []
    stores: Dict[str, int] = {}
    for n in index.nodes(ast.Name):
        if n.id in names and not isinstance(n.ctx, ast.Load):  # type: ignore[attr-defined]
            stores[n.id] = stores.get(n.id, 0) + 1
    for n in index.nodes(ast.Global, ast.Nonlocal):
        names.difference_update(n.names)  # type: ignore[attr-defined]
    for a in index.nodes(ast.arg):
        names.discard(a.arg)  # type: ignore[attr-defined]
    names = {name for name in names if stores.get(name) == 1}
    out: List[int] = []
    for node in index.nodes(ast.If) if names else ():
        switch = next((o.id for o in _and_operands(node.test)  # type: ignore[attr-defined]
                       if isinstance(o, ast.Name) and o.id in names), None)
        func = index.enclosing_scope(index.ancestors(node)) if switch is not None else None
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == switch and isinstance(stmt.value, ast.Constant) and stmt.value.value is False
                for stmt in func.body):
            out.extend(id(s) for s in node.body)  # type: ignore[attr-defined]
    return out
