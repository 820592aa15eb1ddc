"""Host consumers: values copied to the host because the host needs them.

A reinforcement-learning loop hands its actions to an environment that runs
on the host: `next_obs, reward, terminated, truncated, info =
envs.step(actions)` (the Gym API, whose `step` returns four or five values).
Copying the actions to the host every step is the point, not waste.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Sequence

from gpulint.model.index.nodes import LOOPS
from gpulint.model.index.tree import TreeIndex


def feeds_environment_step(index: TreeIndex, read: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """The host read `read` is an argument of an environment's step
    (`envs.step(actions.cpu().numpy())`), or its value is bound to a name
    that a later statement of the same loop body passes to one
    (`actions = actions.cpu().numpy()` ... `envs.step(actions)`)."""
    chain = list(ancestors) + [read]
    for i in range(len(chain) - 2, -1, -1):
        anc = chain[i]
        if isinstance(anc, ast.stmt):
            break
        if isinstance(anc, ast.Call) and chain[i + 1] is not anc.func and _environment_step(index, anc):
            return True
    stmt = next((a for a in reversed(chain) if isinstance(a, ast.stmt)), None)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    loop = next((a for a in reversed(ancestors) if isinstance(a, LOOPS)), None)
    if loop is None:
        return False
    return _last_steps(index).get(loop, {}).get(stmt.targets[0].id, 0) > stmt.lineno


def _last_steps(index: TreeIndex) -> Dict[ast.AST, Dict[str, int]]:
    """For each loop, the names passed to an environment's step inside it, each
    with the last line that passes it. Built once per file from its step calls
    (asking the loop's body again for each read made the rule quadratic)."""

    def compute() -> Dict[ast.AST, Dict[str, int]]:
        out: Dict[ast.AST, Dict[str, int]] = {}
        for call in index.nodes(ast.Call):
            if not _environment_step(index, call):  # type: ignore[arg-type]
                continue
            names = [a.id for a in call.args if isinstance(a, ast.Name)]  # type: ignore[attr-defined]
            for anc in index.ancestors(call):
                if isinstance(anc, LOOPS):
                    last = out.setdefault(anc, {})
                    for name in names:
                        last[name] = max(last.get(name, 0), call.lineno)  # type: ignore[attr-defined]
        return out

    return index.memoized("consumers.steps", "last", compute)


def _environment_step(index: TreeIndex, call: ast.Call) -> bool:
    """`x.step(...)` whose result is unpacked into four or five names (Gym's
    `obs, reward, done, info` or `obs, reward, terminated, truncated, info`)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step" and call.args):
        return False
    parent: Optional[ast.AST] = index.parents.get(call)
    return (
        isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
        and isinstance(parent.targets[0], (ast.Tuple, ast.List)) and len(parent.targets[0].elts) in (4, 5)
    )
