"""Host consumers: values copied to the host because the host needs them.

A reinforcement-learning loop hands its actions to an environment that runs
on the host: `next_obs, reward, terminated, truncated, info =
envs.step(actions)` (the Gym API, whose `step` returns four or five values).
Copying the actions to the host every step is the point, not waste.
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence

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
    name = stmt.targets[0].id
    loop = next((a for a in reversed(ancestors) if isinstance(a, LOOPS)), None)
    if loop is None:
        return False
    for n in ast.walk(loop):
        if (
            isinstance(n, ast.Call) and n.lineno > stmt.lineno and _environment_step(index, n)
            and any(isinstance(a, ast.Name) and a.id == name for a in n.args)
        ):
            return True
    return False


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
