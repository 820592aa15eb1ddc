"""The project's classes below each class, for the call graph (`graph`): a
call of an abstract method (`self.update(batches)` in a base class whose
`update` only raises, tableshift's `DomainGeneralizationModel.train_epoch`)
runs one of the overrides its subclasses define; a call of a method of what
a base class's `self.<attr>` holds runs the method of what its subclasses
set there (`held_method`). And which classes descend from a framework
class (`descends_from`, `calls_building`)."""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from gpulint.model.names import CANONICAL
from gpulint.model.project.refs import DUCK

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


def held_method(ref: str, class_of: Callable[[str], str], below: Dict[str, List[str]],
                classes: Dict[str, Sequence[str]], held: Dict[str, Dict[str, str]],
                resolve: Callable[[str], Optional[str]]) -> Optional[str]:
    """The method `cls#attr.method` names (a `refs.HELD` reference): that of
    the object the `self.<attr>` of `cls`, of a class it derives from or of
    one deriving from it holds (`self.model = ProgressiveGAN(...)` in each
    trainer subclass of the base whose loop calls
    `self.model.optimizeParameters(...)`), where every such holder's class
    gives the same method; else None. `below`: `subclasses`; `classes`:
    class -> its base references; `held`: class -> {attr: the class held}."""
    method = ref.partition("#")[2].partition(".")[2]
    found = {resolve(f"{h}.{method}") for h in held_classes(ref, class_of, below, classes, held)}
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def held_classes(ref: str, class_of: Callable[[str], str], below: Dict[str, List[str]],
                 classes: Dict[str, Sequence[str]], held: Dict[str, Dict[str, str]]) -> List[str]:
    """The classes of the objects that the `self.<attr>` of a `refs.HELD`
    reference (`cls#attr.method`) may hold: those the class, the classes
    deriving from it and those it derives from bind it to (`held_method`)."""
    cls_ref, _, rest = ref.partition("#")
    attr = rest.partition(".")[0]
    cls = class_of(cls_ref)
    related, todo = [], [cls]
    while todo and len(related) < MAX_OVERRIDES:  # the class and those below it
        c = todo.pop(0)
        if c not in related:
            related.append(c)
            todo.extend(below.get(c, ()))
    up = cls
    for _ in range(8):  # and those above it, nearest first
        bases = [class_of(r) for r in classes.get(up, ())]
        if not bases or bases[0] in related:
            break
        up = bases[0]
        related.append(up)
    out: List[str] = []
    for c in related:
        h = held.get(c, {}).get(attr)
        if h and h not in out:
            out.append(h)
    return out


# the most classes a parameter's method may resolve to (`refs.DUCK`): beyond, the name says too little
MAX_DUCK_CLASSES = 8


def duck_method(ref: str) -> Optional[str]:
    """The method name a `refs.DUCK` reference (`?.train_a_batch`) names; None for any other reference."""
    return ref[len(DUCK) + 1:] if ref.startswith(DUCK + ".") else None


def duck_typed(calls: Sequence[list], methods: Callable[[], Dict[str, List[str]]]) -> List[Tuple[str, list]]:
    """(method, call) for each call of a parameter's method whose class no
    caller shows (`?.train_a_batch`, `refs.DUCK`): the methods of that
    name the project's classes define, where one to `MAX_DUCK_CLASSES`
    classes do. `methods`: name -> the methods of that name, built once
    when some call asks."""
    out: List[Tuple[str, list]] = []
    for call in calls:
        name = duck_method(call[0])
        if name is not None:
            found = methods().get(name, ())
            if 0 < len(found) <= MAX_DUCK_CLASSES:
                out += [(fid, call) for fid in found]
    return out


def class_methods_by_name(functions: Iterable[str], modules: Set[str]) -> Dict[str, List[str]]:
    """name -> the functions of that name defined in a class: those whose
    owner is neither a module (`modules`) nor a function."""
    fids = set(functions)
    out: Dict[str, List[str]] = {}
    for fid in fids:
        owner, _, name = fid.partition("@")[0].rpartition(".")
        if owner and owner not in modules and owner not in fids:
            out.setdefault(name, []).append(fid)
    return out


# the framework classes whose subclasses a file's calls build are told to it (`graph.facts_for`: a
# class of the project that subclasses `torch.nn.DataParallel`, GPU001, `DataLoader`, or PyTorch
# Geometric's `InMemoryDataset`, whose samples are slices of tensors it holds, GPU202)
FRAMEWORK_ROOTS = frozenset({"torch.nn.DataParallel", "torch.utils.data.DataLoader", "torch_geometric.data.InMemoryDataset"})


def descends_from(classes: Dict[str, List[str]], class_of: Callable[[str], Optional[str]],
                  roots: FrozenSet[str]) -> Dict[str, str]:
    """The project's classes whose bases lead to one of `roots` (framework
    classes, named canonically), directly or through other project classes
    (`class DataParallelWithCallback(DataParallel)` in a vendored
    `sync_batchnorm`), each with the root it leads to."""
    out: Dict[str, str] = {}

    def reaches(cls: str, seen: Set[str]) -> Optional[str]:
        for base in classes.get(cls, ()):
            name = CANONICAL.get(base, base)
            if name in roots:
                return name
            up = class_of(base)
            if up is not None and up in classes and up not in seen:
                seen.add(up)
                found = reaches(up, seen)
                if found is not None:
                    return found
        return None

    for cls in classes:
        root = reaches(cls, {cls})
        if root is not None:
            out[cls] = root
    return out


def calls_building(summary: dict, class_of: Callable[[str], Optional[str]], classes: Dict[str, str]) -> Dict[str, str]:
    """The references of the summarized file's calls that build one of
    `classes`, each with the framework class it descends from."""
    return {call[0]: classes[cls] for fsum in summary.get("functions", {}).values() for call in fsum.get("calls", ())
            for cls in (class_of(call[0]),) if cls in classes}
