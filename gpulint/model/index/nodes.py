"""The node types the layers ask about, named once."""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

from gpulint.model.index.walk import walk

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
    for n in walk(stmt.test):
        names = names or (isinstance(n, ast.Name) and n.id == "__name__")
        consts = consts or (isinstance(n, ast.Constant) and n.value == "__main__")
    return names and consts


# what a program that takes its settings from outside reads them with: a command
# line, a config file, the environment
_TAKES_INPUT = re.compile(
    r"argv|parse_args|ArgumentParser|\btyro\b|\bfire\b|\bhydra\b|\bclick\b|OmegaConf|load_config|from_cli|environ")


def takes_input(text: str) -> bool:
    """The text reads a command line, a config file or the environment
    (`_TAKES_INPUT`): a program its user configures."""
    return _TAKES_INPUT.search(text) is not None


def self_test_block(tree: ast.Module, text: str) -> bool:
    """The file has an `if __name__ == "__main__":` block that reads no
    command line, config or environment: it runs the same few steps on every
    run, a check of the module by hand (kohya's `sdxl_original_unet.py` times
    ten steps), not a program the user configures (cleanrl's `dqn.py` trains
    under `tyro.cli(Args)` there)."""
    lines = None
    for stmt in tree.body:
        if is_main_guard(stmt):
            lines = lines if lines is not None else text.splitlines()
            if not _TAKES_INPUT.search("\n".join(lines[stmt.lineno - 1:stmt.end_lineno])):
                return True
    return False


def abstract_method(func: ast.AST) -> bool:
    """A method that only its subclasses implement: decorated
    `@abstractmethod`, or whose body (past its docstring) is only `pass`,
    `...`, a `raise` (`raise NotImplementedError`) or a `return` of
    `NotImplementedError` (the slip of OpenNMT-style loss bases)."""
    if any((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")) == "abstractmethod"
           for d in func.decorator_list):  # type: ignore[attr-defined]
        return True
    body = func.body  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return len(body) == 1 and (isinstance(body[0], (ast.Pass, ast.Raise)) or (
        isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and body[0].value.value is ...) or (
        isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Name)
        and body[0].value.id == "NotImplementedError"))


def parameter_defaults(func: ast.AST) -> List[Tuple[ast.arg, ast.expr]]:
    """(parameter, its default) for each parameter of a def (or lambda) that
    has one, positional then keyword-only."""
    args = func.args  # type: ignore[attr-defined]
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    return pairs + [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]


def method_aliases(cls: ast.ClassDef) -> Dict[str, str]:
    """attr -> method for each `self.<attr> = self.<method>` in the class's
    own methods, where `<method>` is a method of the class, the attribute
    is assigned nothing else, and it is no method of the class itself
    (`self.forward = self.forward_fused` may or may not run: `forward` stays
    `forward`)."""
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: Dict[str, Optional[str]] = {}
    for func in cls.body:
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in walk(func):
            if not isinstance(node, ast.Assign):
                continue
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                        and t.attr not in methods:
                    v = node.value
                    named = (v.attr if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name)
                             and v.value.id == "self" and v.attr in methods else None)
                    found[t.attr] = named if t.attr not in found or found[t.attr] == named else None
    return {k: v for k, v in found.items() if v is not None}


def _self_values(assigns: List[ast.AST]) -> frozenset:
    """The names `<name>` of the `self.<attr> = self.<name>` among `assigns`."""
    out = set()
    for node in assigns:
        v = node.value  # type: ignore[attr-defined]
        if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "self" and any(
                isinstance(t, ast.Attribute) for t in node.targets):  # type: ignore[attr-defined]
            out.add(v.attr)
    return frozenset(out)


def class_method_aliases(index, cls: ast.ClassDef) -> Dict[str, str]:
    """`method_aliases(cls)` once per class of the file that `index` (its
    `TreeIndex`) indexes; none at once where no `self.<attr> = self.<name>`
    of the file names a method of the class (most classes: the walk of
    their methods is not paid for them)."""
    values = index.memoized("nodes.self_values", None, lambda: _self_values(index.nodes(ast.Assign)))
    if not values or not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in values
                             for n in cls.body):
        return {}
    return index.memoized("nodes.method_aliases", cls, lambda: method_aliases(cls))
