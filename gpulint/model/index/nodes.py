"""The node types the layers ask about, named once."""

from __future__ import annotations

import ast
from typing import List, Tuple

LOOPS = (ast.For, ast.While, ast.AsyncFor)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# what a node's code belongs to: a def, a lambda, a class body, or the module
OWNERS = SCOPES + (ast.Module,)


def is_main_guard(stmt: ast.AST) -> bool:
    """`if __name__ == "__main__":` (or any test of `__name__` against
    "__main__"): the block that runs when the file is run as a program."""
    if not isinstance(stmt, ast.If):
        return False
    names = consts = False
    for n in ast.walk(stmt.test):
        names = names or (isinstance(n, ast.Name) and n.id == "__name__")
        consts = consts or (isinstance(n, ast.Constant) and n.value == "__main__")
    return names and consts


def parameter_defaults(func: ast.AST) -> List[Tuple[ast.arg, ast.expr]]:
    """(parameter, its default) for each parameter of a def (or lambda) that
    has one, positional then keyword-only."""
    args = func.args  # type: ignore[attr-defined]
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    return pairs + [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
