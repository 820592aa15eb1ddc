"""Tuples a project function returns, as the call graph gives them to a
file (`builders_each`, per position: the classes of the object it builds
there, or `HANDED_BACK` and the parameter it returns unchanged), read at a
binding that unpacks a call of it:

* `known_positions`: what the call graph gives the callers of such a
  function;
* `unpack_built`: `(network, cls_head) = get_model(opt)` binds each name to
  an object of its position's classes;
* `handed_back`: the names of `model, optim, step = load_checkpoint(path,
  model, optim)` that get back the object they passed.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Set, Tuple

# the mark of a position that holds the function's parameter unchanged
# (`=1:model` for `return model, step` of `load_checkpoint(path, model)`)
HANDED_BACK = "="


def known_positions(each: Optional[list], known: Callable[[str], bool]) -> Optional[list]:
    """A function's `builds_each` for the files that call it: per position,
    its classes where the graph knows each (`known`), else [] (a handed-back
    parameter stays); None where no position is left."""
    kept = [cs if all(c.startswith(HANDED_BACK) or known(c) for c in cs) else [] for cs in each or ()]
    return kept if any(kept) else None


def unpack_built(each: Optional[list], target: ast.AST, found: Dict[str, List[Tuple[str, ...]]]) -> None:
    """`(network, cls_head) = get_model(opt)`, where the project function
    builds each object of the tuple it returns (`each`): each name's binding
    holds an object of the classes of its position (added to `found`)."""
    if each is None or len(each) != len(target.elts):  # type: ignore[attr-defined]
        return
    for element, classes in zip(target.elts, each):  # type: ignore[attr-defined]
        if isinstance(element, ast.Name) and classes and not classes[0].startswith(HANDED_BACK):
            found.setdefault(element.id, []).append(tuple(classes))


def handed_back(each: Optional[list], target: ast.AST, call: ast.Call) -> Set[str]:
    """The names of the tuple `target` that get back the object they passed
    in `call`: the function returns that parameter there unchanged
    (`builds.built_object`'s `=<position>:<name>`); such a binding holds the
    same object and says nothing new of its class."""
    if each is None or len(each) != len(target.elts):  # type: ignore[attr-defined]
        return set()
    out = set()
    for element, classes in zip(target.elts, each):  # type: ignore[attr-defined]
        if not (isinstance(element, ast.Name) and len(classes) == 1 and classes[0].startswith(HANDED_BACK)):
            continue
        position, _, name = classes[0][len(HANDED_BACK):].partition(":")
        passed = call.args[int(position)] if int(position) < len(call.args) else next(
            (k.value for k in call.keywords if k.arg == name), None)
        if isinstance(passed, ast.Name) and passed.id == element.id:
            out.add(element.id)
    return out
