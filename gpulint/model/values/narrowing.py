"""What an `isinstance` or `type(x) == float` test says about a name in the
branches it guards (`not_a_tensor_here`, `non_tensor_branch`); and a name its
function subscripts with a string holds a mapping (`keyed_by_text`)."""

from __future__ import annotations

import ast
from typing import Optional, Sequence

from gpulint.model.index.nodes import FUNCS, SCOPES
from gpulint.model.names import ImportTable
from gpulint.model.index.order import scope_nodes
from gpulint.model.index.walk import walk

TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter"})


def not_a_tensor_here(name: ast.Name, ancestors: Sequence[ast.AST], imports: ImportTable) -> bool:
    """`name` is read in the `else` (or an `elif`) of `if isinstance(name,
    torch.Tensor):` in its function, and that branch does not bind it
    again: there it holds something else (`elif is_list_of(v, Tensor):`)."""
    chain = list(ancestors) + [name]
    for i in range(len(chain) - 2, -1, -1):
        anc = chain[i]
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, ast.If) and tests_tensor_type(anc.test, name.id, imports):
            child = chain[i + 1]
            if any(child is s for s in anc.orelse):
                return not any(
                    isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store)
                    for s in anc.orelse for n in walk(s)
                )
    return False


def tests_tensor_type(test: ast.AST, name: str, imports: ImportTable) -> bool:
    """`isinstance(name, torch.Tensor)` (or a tuple of tensor types), or
    `torch.is_tensor(name)`."""
    if (isinstance(test, ast.Call) and imports.qualname(test.func) == "torch.is_tensor" and len(test.args) == 1
            and isinstance(test.args[0], ast.Name) and test.args[0].id == name):
        return True
    if not (
        isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
        and len(test.args) == 2 and isinstance(test.args[0], ast.Name) and test.args[0].id == name
    ):
        return False
    types = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    return bool(types) and all(imports.qualname(t) in TENSOR_TYPES for t in types)


# Python's number types, as a test names them (`type(x) == float`, `isinstance(x, (int, float))`)
_NUMBER_TYPES = frozenset({"int", "float", "bool", "complex"})


def non_tensor_branch(test: ast.AST, name: str, imports: ImportTable) -> Optional[bool]:
    """Which branch of a test `name` holds no tensor in: True for the one the
    test takes (`type(x) == float`, `isinstance(x, float)`), False for the
    other (`type(x) != float`, `isinstance(x, torch.Tensor)`; GROVER's
    `s += x.item() if type(x) != float else x`), None when the test does not
    say."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = non_tensor_branch(test.operand, name, imports)
        return None if inner is None else not inner
    if tests_tensor_type(test, name, imports):
        return False
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and isinstance(test.args[0], ast.Name) and test.args[0].id == name):
        types = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        if types and all(isinstance(t, ast.Name) and t.id in _NUMBER_TYPES for t in types):
            return True
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Call)
            and isinstance(test.left.func, ast.Name) and test.left.func.id == "type" and len(test.left.args) == 1
            and isinstance(test.left.args[0], ast.Name) and test.left.args[0].id == name):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(right, ast.Name) and right.id in _NUMBER_TYPES:
        if isinstance(op, (ast.Eq, ast.Is)):
            return True
        if isinstance(op, (ast.NotEq, ast.IsNot)):
            return False
    return None


def tests_parameter_tensor(test: ast.AST, func: ast.AST, imports: ImportTable) -> bool:
    """`isinstance(x, torch.Tensor)` / `torch.is_tensor(x)` where `x` is a
    parameter of `func` (`def tensor_to_scalar(x): if torch.is_tensor(x):
    return x.item()`): the path the function's tensor inputs take, on every
    call with one. A local tested so (`last_lr` from a scheduler, most often
    a float) says nothing about how often the path runs."""
    if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name)
            and isinstance(func, FUNCS)):
        return False
    name = test.args[0].id
    args = func.args
    if name not in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}:
        return False
    return tests_tensor_type(test, name, imports)


def keyed_by_text(t: ast.AST, analysis) -> bool:
    """`t` is a name its function also subscripts with a string (`if target_2d:`
    then `target_2d["features"]`, VIBE's batch dicts): a mapping, whose truth
    is its emptiness, on the host; no tensor is indexed by a string."""
    if not isinstance(t, ast.Name):
        return False
    ancestors = analysis.index.ancestors(t)
    scope = analysis.index.enclosing_scope(ancestors) or analysis.tree

    def compute():
        return frozenset(n.value.id for n in scope_nodes(scope)
                         if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                         and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str))

    return t.id in analysis.index.memoized("narrowing.keyed_by_text", scope, compute)
