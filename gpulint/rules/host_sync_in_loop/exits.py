"""Reads whose value the host needs at once: the exit test of a loop that
trains nothing, and the action a policy hands back to `env.step`."""

from __future__ import annotations

import ast

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.index.order import scope_nodes


def stops_search(analysis, node: ast.AST, ancestors) -> bool:
    """`if is_finished.all(): break`, `while not done.all():`: the read
    decides whether a loop that trains nothing (a decoding loop, a
    convergence search) goes on, so the host needs its value every pass. A
    training loop's own exit test (`if loss.isnan(): break`) is still a read
    per step that could be checked less often."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, ast.stmt) and not (isinstance(anc, (ast.If, ast.While)) and child is anc.test):
            return False  # (the read is not the test of the statement it is in)
        if isinstance(anc, ast.While):
            loop = anc
        elif isinstance(anc, ast.If) and anc.body and isinstance(anc.body[-1], ast.Break):
            loop = next((a for a in reversed(chain[:i]) if isinstance(a, LOOPS + SCOPES)), None)
        else:
            continue
        return isinstance(loop, LOOPS) and not analysis.loops.is_training_step_loop(loop)
    return False


def returns_the_action(analysis, func, node: ast.AST, ancestors) -> bool:
    """`return action.item()` in a function whose every per-step caller hands
    what it returns to `env.step` (`CallFacts.feeds_env`)."""
    return isinstance(func, FUNCS) and analysis.facts.feeds_env(func) and _returned(node, ancestors)


def _returned(node: ast.AST, ancestors) -> bool:
    """`node` is what its function returns, or part of a returned tuple
    (`return action.item()`, `return a.cpu().numpy(), h`), through the
    calls and attributes that take it there; or it is bound to a name that
    a later `return` of the function returns so (`action = action.cpu()`
    ... `return action[0]`)."""
    for i in range(len(ancestors) - 1, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, ast.Return):
            return True
        if isinstance(anc, ast.Assign) and len(anc.targets) == 1 and isinstance(anc.targets[0], ast.Name):
            func = next((a for a in reversed(ancestors[:i]) if isinstance(a, FUNCS)), None)
            if func is None:
                return False
            nodes = list(scope_nodes(func))
            names = _derived_names(nodes, anc.targets[0].id, anc.lineno)
            return any(
                isinstance(r, ast.Return) and r.value is not None and r.lineno > anc.lineno
                and any(_returns_name(r.value, n) for n in names) for r in nodes)
        if not isinstance(anc, (ast.Tuple, ast.Call, ast.Attribute, ast.Subscript)):
            return False
    return False


def _derived_names(nodes, name: str, after: int) -> set:
    """`name` and the names that later plain assignments of the function
    compute from it, in line order (`action_value = q.cpu().numpy()` then
    `action = np.argmax(action_value)`: the action is the read's value)."""
    names = {name}
    for stmt in sorted((n for n in nodes if isinstance(n, ast.Assign) and n.lineno > after
                        and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)), key=lambda n: n.lineno):
        if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(stmt.value)):
            names.add(stmt.targets[0].id)
    return names


def _returns_name(value: ast.AST, name: str) -> bool:
    parts = value.elts if isinstance(value, ast.Tuple) else [value]
    for part in parts:
        while isinstance(part, (ast.Subscript, ast.Attribute)) or (
                isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute)):
            part = part.func.value if isinstance(part, ast.Call) else part.value
        if isinstance(part, ast.Name) and part.id == name:
            return True
    return False
