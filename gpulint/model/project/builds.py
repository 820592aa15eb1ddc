"""What object a function builds and returns, for the project's call graph:
the class of every return (`return Net(cfg).cuda()`), or the classes of
which it returns one (`make_agent` returning `SoftQ(...)` or `SAC(...)`),
or those of each object of the tuple it returns (`return (network, cls_head)`).

A builder that picks the class by a parameter compared with strings
(`if name == "uniform": return UniformSampler(d)` / `elif name ==
"loss-second-moment": ...`) is read as such a choice (`builds_by`): a call
that passes a string the caller fixes (`create_named_schedule_sampler(
"uniform", d)`, or `self.sampler_type` set to one once) builds that class
alone (`refs.FileRefs`), not any of them.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import unbound_parameters
from gpulint.model.project.exports import EXTERNAL_ROOTS
from gpulint.model.project.refs import FileRefs
from gpulint.model.project.tuples import HANDED_BACK


def built_object(refs: FileRefs, returns: List[ast.Return], scope: ast.AST) -> Dict[str, object]:
    """`{"builds": class}`, `{"builds_any": [classes], "builds_by": [i, name,
    {string: class}]}` (the last where the choice is by a parameter), or {}."""
    built = {refs.built_class(n.value, scope) for n in returns}
    if len(built) == 1 and None not in built and next(iter(built)).split(".", 1)[0] not in EXTERNAL_ROOTS:
        return {"builds": built.pop()}
    choices = _built_choices(refs, returns, scope)
    if not choices:
        each = _built_each(refs, returns, scope)
        return {"builds_each": each} if each else {}
    out: Dict[str, object] = {"builds_any": choices}
    chosen = _chosen_by_parameter(refs, returns, scope)
    if chosen is not None:
        out["builds_by"] = chosen
    return out


def _project_classes(refs: FileRefs, value: Optional[ast.AST], scope: ast.AST) -> tuple:
    """The project classes of which `value` builds (or a name of `scope`
    holds) one; () where unknown or not the project's."""
    cls = refs.built_class(value, scope)
    classes = (cls,) if cls is not None else (
        refs.classes_of(value.id, scope) if isinstance(value, ast.Name) else ())
    return () if any(c.split(".", 1)[0] in EXTERNAL_ROOTS for c in classes) else classes


def _built_each(refs: FileRefs, returns: List[ast.Return], scope: ast.AST) -> List[List[str]]:
    """Where every return gives a tuple of one length (`return (network,
    cls_head)`, MetaOptNet's `get_model`): per position, the project classes
    of the object there ([] where unknown), for `a, b = get_model(opt)`;
    [] where the returns are anything else or no position is known."""
    found: List[Optional[Set[str]]] = []
    for ret in returns:
        value = ret.value
        if not isinstance(value, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in value.elts) \
                or (found and len(found) != len(value.elts)):
            return []
        found = found or [set() for _ in value.elts]
        for i, element in enumerate(value.elts):
            classes = _handed_back(refs, element, scope) or _project_classes(refs, element, scope)
            if not classes:
                found[i] = None  # (one return's object there is unknown: none known)
            elif found[i] is not None:
                found[i].update(classes)  # type: ignore[union-attr]
    each = [sorted(f) if f else [] for f in found]
    return each if any(each) else []


def _handed_back(refs: FileRefs, element: ast.AST, scope: ast.AST) -> tuple:
    """(`=<position>:<name>`,) where `element` is a parameter of `scope` the
    function never rebinds (`return model, optimizer, step` of
    `load_checkpoint(path, model, optimizer)`): the caller gets back the
    object it passed (`refs._handed_back`); else ()."""
    if not isinstance(element, ast.Name) or not isinstance(scope, FUNCS):
        return ()
    if element.id not in unbound_parameters(refs.fa.index, scope):
        return ()
    position = _argument_position(refs, scope, element.id)
    return (f"{HANDED_BACK}{position}:{element.id}",) if position is not None else ()


def _argument_position(refs: FileRefs, scope: ast.AST, name: str) -> Optional[int]:
    """Where a call of `scope` passes its parameter `name` positionally: a
    method's `self` (or `cls`) is not passed; None for a keyword-only one."""
    params = [a.arg for a in scope.args.posonlyargs + scope.args.args]  # type: ignore[attr-defined]
    if name not in params:
        return None
    shift = 1 if params[0] in ("self", "cls") and isinstance(refs.fa.index.parents.get(scope), ast.ClassDef) else 0
    return params.index(name) - shift


def _built_choices(refs: FileRefs, returns: List[ast.Return], scope: ast.AST) -> List[str]:
    """The project classes of the objects a function may build and return,
    where each return builds one or returns a name bound to one of several
    (`agent = SoftQ(...)` in one branch, `agent = SAC(...)` in the other);
    [] where one return is anything else."""
    found: Set[str] = set()
    for ret in returns:
        classes = _project_classes(refs, ret.value, scope)
        if not classes:
            return []
        found.update(classes)
    return sorted(found) if len(found) > 1 else []


def _chosen_by_parameter(refs: FileRefs, returns: List[ast.Return], scope: ast.AST) -> Optional[list]:
    """[position, name, {string: class}] where each return builds a class and
    sits right in the body of an `if`/`elif` testing `<parameter> ==
    "<string>"`, the same parameter each time; else None."""
    if not isinstance(scope, FUNCS):
        return None
    params = [a.arg for a in scope.args.posonlyargs + scope.args.args]  # type: ignore[attr-defined]
    parents = refs.fa.index.parents
    param: Optional[str] = None
    table: Dict[str, str] = {}
    for ret in returns:
        test = getattr(parents.get(ret), "test", None)
        cls = refs.built_class(ret.value, scope)
        if not (cls is not None and isinstance(parents.get(ret), ast.If) and ret in parents[ret].body  # type: ignore[attr-defined]
                and isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
                and isinstance(test.comparators[0].value, str) and test.left.id in params):
            return None
        if param is not None and test.left.id != param:
            return None
        param = test.left.id
        table[test.comparators[0].value] = cls
    if param is None or param in ("self", "cls"):
        return None
    return [_argument_position(refs, scope, param), param, table]
