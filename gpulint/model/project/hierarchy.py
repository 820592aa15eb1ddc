"""The project's classes below each class, for the call graph (`graph`): a
call of an abstract method (`self.update(batches)` in a base class whose
`update` only raises, tableshift's `DomainGeneralizationModel.train_epoch`)
runs one of the overrides its subclasses define."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

# the overrides of an abstract method a call of it is taken to run, at most
MAX_OVERRIDES = 16


def subclasses(classes: Dict[str, List[str]], class_of: Callable[[str], Optional[str]]) -> Dict[str, List[str]]:
    """class id -> the ids of its direct subclasses, from each class's base
    references (`classes`) resolved with `class_of`."""
    direct: Dict[str, List[str]] = {}
    for sub, bases in classes.items():
        for base in bases:
            found = class_of(base)
            if found is not None and found != sub:
                direct.setdefault(found, []).append(sub)
    return direct


def overrides(below: Dict[str, List[str]], alias: Dict[str, str], fid: str) -> List[str]:
    """The ids of the methods of the subclasses (at any depth, nearest
    first) of the class of the method `fid` that override it, at most
    MAX_OVERRIDES; `below`: `subclasses`, `alias`: reference -> function id."""
    cls, _, method = fid.partition("@")[0].rpartition(".")
    out: List[str] = []
    seen = {cls}
    todo = list(below.get(cls, ()))
    while todo and len(out) < MAX_OVERRIDES:
        sub = todo.pop(0)
        if sub in seen:
            continue
        seen.add(sub)
        oid = alias.get(f"{sub}.{method}")
        if oid is not None and oid not in out:
            out.append(oid)
        todo.extend(below.get(sub, ()))
    return out
