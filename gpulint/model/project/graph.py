"""The project's call graph, from the summaries of its files, and what it
tells each file.

* A call's reference is resolved to a function of the project: by any of
  its module's names, a class's `__init__` when a class is called, and a
  method through the class's bases.
* **Steps**: a function steps when its own code runs `.backward()` or an
  optimizer step, or it calls a function that steps (to a fixpoint), not
  from a loop of its own: each call of it is one step.
* **Drives**: a function drives a loop when it has a hot loop of its own,
  or it calls a function that does: a loop around a call of it is an epoch
  loop. A function that drives a loop does not run every step.
* **Every step**: a function runs every step of a training loop (`train`)
  or of another hot loop (`eval`) when one of its calls sits in the
  every-step part of such a loop, or on every call of a function that runs
  every step (to a fixpoint; `train` wins over `eval`). "Hot" is decided by
  the loops and the call graph, not by the functions' names.
* **Device side**: a function of a file that never mentions a device is
  on the device side when a function of a file that can use one calls it,
  directly or through calls (`agent.update(rollouts)` in `main.py`, which
  moves the model to CUDA, reaching `PPO.update` in `algo/ppo.py`).
* **Layers**: what the `nn.Module` classes of a file and of the project
  files it imports build (convolutions, matmul layers, attention), summed:
  the models a training loop there can train (`models.ModelFiles`).
* **Returns** and **iterates**: as each function's summary says; and
  **builders**: the project class of the object a function builds and
  returns (`build_model(cfg)` returning `Net(cfg).cuda()`), so that a
  caller knows what `model = build_model(cfg)` holds; or the classes of
  which it builds one (`make_agent` returning a `SoftQ` or a `SAC`).
* **Parameters**: the class of the object a parameter holds, where every
  call that passes a known object passes one of the same class; and the
  kind of value it holds on the paths that run it every step, where each
  is a call from a hot loop that passes a host value for it (`metric_logger.update(loss=loss.item())`: its
  `isinstance(v, torch.Tensor)` branch never runs).

`facts_for(path)` gives a file the part of this that its analysis can ask
for: the facts of the functions its calls reach, and which of its own
functions run every step. It is plain data, and its digest is what the
file's cached findings depend on.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Dict, List, Optional, Sequence, Set, Tuple

from gpulint.model.project.hierarchy import (FRAMEWORK_ROOTS, calls_building, class_methods_by_name, descends_from,
                                             duck_typed, held_classes, held_method, overrides, subclasses)
from gpulint.model.project.refs import HELD
from gpulint.model.project.tuples import known_positions
from gpulint.model.project.models import ModelFiles
from gpulint.model.project.programs import Programs
from gpulint.model.project.callers import (
    called_in_low_precision, called_off_step, device_side, entered_evaluated, entered_grad_off, entered_synced, feeds_env,
)
from gpulint.model.project.summary import BODY, EVAL, SOME, TRAIN
from gpulint.model.values.kinds import HOST_KINDS, HOST_MAPPING, HOST_NUMBERS, HOST_TENSOR, IN_MEMORY_DATASET, LOADER, NUMBER, NUMPY, OTHER, TENSOR

# the kinds of return value the values layer takes from the project: a
# DataLoader, a Python number (`loss = self._train_batch(x)` returning
# `loss.item()`: reading it waits for nothing), and a tensor in host memory
# (`return loss.detach().cpu()`), a tuple of numbers (`return l1.item(), l2.item()`), or an array
RETURN_KINDS = frozenset({LOADER, NUMBER, HOST_TENSOR, HOST_NUMBERS, NUMPY, IN_MEMORY_DATASET})
# a parameter the project's calls hand objects of more classes than this holds none known
MAX_UNION = 8


class ProjectGraph:
    def __init__(self, files: Dict[str, Tuple[Sequence[str], dict]],
                 previous: Optional["ProjectGraph"] = None) -> None:
        """`files`: path -> (the module names of the file, main one first; its summary);
        those summarized for their imports only join only the programs (`program_facts`).
        `previous`: the last round's graph of a join, whose resolved references
        are kept where they can name nothing new (`_resolved_from`)."""
        self.program_files = files
        self.files = files = {p: v for p, v in files.items() if not v[1].get("imports_only")}
        self.functions: Dict[str, dict] = {}
        self._body_reach: Dict[str, Set[str]] = {}
        self.owner: Dict[str, str] = {}
        self.classes: Dict[str, List[str]] = {}
        self.held: Dict[str, Dict[str, str]] = {}  # class -> {attr: the class its `self.<attr>` holds}
        self.class_alias: Dict[str, str] = {}
        self.exports: Dict[str, str] = {}  # `pkg.Name` -> what the package's __init__ imports as Name
        self.star_exports: Dict[str, List[str]] = {}  # `pkg` -> the modules its __init__ imports `*` from
        self._star_memo: Optional[Tuple[Set[str], Set[str]]] = None  # `_through_star_exports`
        self._unexported_memo: Dict[str, Optional[str]] = {}  # `_unexported`
        self._class_memo: Dict[str, Optional[str]] = {}  # `_class`
        self._method_owners: Optional[Set[str]] = None  # `_builds_known`
        self.paths_of: Dict[str, List[str]] = {}  # module name -> the files it may name
        # (path, qualified name) -> the function's id: its qualified name, or for a
        # function of a second file of the same module name (two folders' `train.py`),
        # that name and the file's path
        self.ids: Dict[Tuple[str, str], str] = {}
        self.candidates: Dict[str, List[str]] = {}  # reference -> every function it may name
        for path, (names, summary) in files.items():
            if not names:
                continue
            main = names[0]
            for n in names:
                self.paths_of.setdefault(n, []).append(path)
            for name, target in summary.get("exports", {}).items():
                for n in names:
                    self.exports.setdefault(f"{n}.{name}", target)
            for module in summary.get("star_exports", ()):
                for n in names:
                    self.star_exports.setdefault(n, []).append(module)
            for qual, fsum in summary.get("functions", {}).items():
                fid = self._new_id(qual, path)
                self.functions[fid] = fsum
                self.owner[fid] = path
                rest = qual[len(main) + 1:]
                for n in names:
                    self.candidates.setdefault(f"{n}.{rest}", []).append(fid)
            for qual, attrs in summary.get("held", {}).items():
                self.held[qual] = attrs
            for qual, bases in summary.get("classes", {}).items():
                self.classes[qual] = bases
                rest = qual[len(main) + 1:]
                for n in names:
                    self.class_alias.setdefault(f"{n}.{rest}", qual)
        # reference -> the function it names (the first file's, where several define it)
        self.alias: Dict[str, str] = {ref: found[0] for ref, found in self.candidates.items()}
        self._resolved: Dict[str, Optional[str]] = {}
        self._resolved_in: Dict[Tuple[str, str], Optional[str]] = {}
        self._edges: Dict[str, List[Tuple[str, str, list]]] = {}
        self._callers: Optional[Dict[str, List[str]]] = None  # (`_plain_callers`)
        self._below: Optional[Dict[str, List[str]]] = None  # ... also below classes with no bases (`_held_method`)
        self._owners: Optional[Set[str]] = None  # what the functions are defined in (`_method_owners`)
        self._duck: Optional[Dict[str, List[str]]] = None  # (`_duck_methods`)
        self._subclasses: Optional[Dict[str, str]] = None  # (`_subclass_calls`)
        self._abstract = {fid for fid, f in self.functions.items() if f.get("abstract")}  # (`resolved_calls`)
        # which files import which, kept from the last round (`_resolved_from`, `ModelFiles.known_imports`)
        self._imports_kept: Optional[Tuple[Dict[str, List[str]], Optional[Dict[str, List[str]]]]] = None
        self._programs: Optional[Programs] = None
        self._low_precision: Optional[Set[str]] = None  # (`callers.called_in_low_precision`, when asked)
        if previous is not None:
            _resolved_from(self, previous)
        self._model_files: Optional[ModelFiles] = None
        self.params = _param_classes(self)
        self.steps = self._closure("steps")
        self.drives = self._closure("drives", self.steps)
        self.every_step = self._every_step()
        self.entered_synced = entered_synced(self)
        self.feeds_env = feeds_env(self)
        self.grad_off = entered_grad_off(self)
        self.evaluated = entered_evaluated(self)
        self.param_kinds = _param_kinds(self)
        self.device_side = device_side(self)
        self.called_off_step = called_off_step(self)

    def _new_id(self, qual: str, path: str) -> str:
        fid = qual if qual not in self.functions else f"{qual}@{path}"
        self.ids[(path, qual)] = fid
        return fid

    def id_of(self, path: str, qual: str) -> Optional[str]:
        """The id of the function `qual` of the file `path`."""
        return self.ids.get((path, qual))

    # ------------------------------------------------------------ resolution
    def resolve(self, ref: str) -> Optional[str]:
        if ref in self._resolved:
            return self._resolved[ref]
        if HELD in ref:
            self._resolved[ref] = cid = _held_method(self, ref)
            return cid
        cid = None
        seen: Set[str] = set()
        name: Optional[str] = ref
        # through re-exports, a few at most (`from .x import x` in `x`'s package maps `pkg.x` onto itself)
        while name is not None and name not in seen and len(seen) < 4:
            seen.add(name)
            cid = self.alias.get(name) or self.alias.get(name + ".__init__") or self.alias.get(name + ".__new__")
            if cid is None:
                owner, _, method = name.rpartition(".")
                cls = self._class(owner) if owner else None
                if cls is not None and cls != owner:  # (a re-exported class: its own method before its bases')
                    cid = self.alias.get(f"{cls}.{method}")
                if cid is None and owner:
                    cid = self._through_bases(owner, method, set())
                    if cid is None and method == "__call__" and cls is not None:
                        # a module called: `nn.Module.__call__` runs its `forward`
                        cid = self.alias.get(f"{owner}.forward") or self._through_bases(owner, "forward", set())
            if cid is not None:
                break
            name = self._unexported(name)
        self._resolved[ref] = cid
        return cid

    def resolve_in(self, ref: str, path: str) -> Optional[str]:
        """`resolve`, for a call in the file `path`: where several files define the function
        `ref` names (`from augmentations import mixup_data` with an `augmentations.py` at the
        top and another in `old_version/`), the one `module_file` picks for `path`."""
        found = self.candidates.get(ref)
        if found is None or len(found) < 2:
            return self.resolve(ref)
        folder = os.path.dirname(path)
        key = (ref, folder)
        if key not in self._resolved_in:
            owners = [self.owner[cid] for cid in found]
            near = module_file(owners, path)
            self._resolved_in[key] = (found[owners.index(near)] if near else None) or self.resolve(ref)
        return self._resolved_in[key]

    def _unexported(self, ref: str) -> Optional[str]:
        """`ref` with its longest prefix that a package re-exports replaced
        by what it re-exports (`algo.PPO.update` -> `algo.ppo.PPO.update`)."""
        if not self.exports and not self.star_exports:
            return None
        memo = self._unexported_memo
        if ref in memo:
            return memo[ref]
        parts = ref.split(".")
        found: Optional[str] = None
        for i in range(len(parts) - 1, 0, -1):
            target = self.exports.get(".".join(parts[:i + 1]))
            if target is not None:
                found = ".".join([target] + parts[i + 1:])
                break
        else:
            found = _through_star_exports(self, parts)  # `from .logger import *` in `misc`: `misc.MetricLogger`
        memo[ref] = found
        return found

    def _class(self, cls_ref: str) -> Optional[str]:
        memo = self._class_memo
        if cls_ref in memo:
            return memo[cls_ref]
        cls = self.class_alias.get(cls_ref)
        if cls is None:
            moved = self._unexported(cls_ref)
            if moved is not None and moved != cls_ref:
                cls = self.class_alias.get(moved)
        memo[cls_ref] = cls
        return cls

    def _through_bases(self, cls_ref: str, method: str, seen: Set[str]) -> Optional[str]:
        cls = self._class(cls_ref)
        if cls is None or cls in seen or len(seen) > 16:
            return None
        seen.add(cls)
        for base in self.classes.get(cls, ()):
            moved = self._unexported(base)
            cid = (
                self.alias.get(f"{base}.{method}") or (moved is not None and self.alias.get(f"{moved}.{method}"))
                or self._through_bases(base, method, seen)
            )
            if cid is not None:
                return cid
        return None

    def is_abstract(self, fid: str) -> bool:
        """`fid` raises `NotImplementedError` (its subclasses override it)."""
        return fid in self._abstract

    def resolved_calls(self, fid: str) -> List[Tuple[str, str, list]]:
        """(callee, where, the call's summary entry) for each call of `fid`
        that resolves, resolved once per function and graph."""
        found = self._edges.get(fid)
        if found is None:
            path = self.owner[fid]
            resolve_in = self.resolve_in
            calls = self.functions[fid].get("calls", ())
            found = [(cid, call[1], call) for call in calls for cid in (resolve_in(call[0], path),) if cid is not None]
            found += [(cid, call[1], call) for cid, call in duck_typed(calls, lambda: _duck_methods(self))]
            found += _overriding(self, fid, found)
            self._edges[fid] = found
        return found

    def _callees(self, fid: str, wheres: Optional[Set[str]] = None) -> List[str]:
        if wheres is None:
            return [cid for cid, _, _ in self.resolved_calls(fid)]
        return [cid for cid, where, _ in self.resolved_calls(fid) if where in wheres]

    # --------------------------------------------------------------- fixpoints
    def _closure(self, key: str, stop: Set[str] = frozenset()) -> Set[str]:
        """The functions whose summary says `key`, and those that call one
        of them on every or some of their runs (not from a loop of their own:
        a loop around a step is a loop that steps, which `drives` says),
        except through the functions of `stop`. For `drives`, `stop` is the
        functions that step: one that calls a function driving a loop and
        also steps is one training step with micro-batches inside
        (`run_step` calling `forward_backward`, whose loop over slices of the
        batch runs backward, then `optimize`), not an epoch."""
        callers = self._plain_callers()
        done = {fid for fid, f in self.functions.items() if f.get(key)}
        todo = deque(done)
        while todo:
            for caller in callers.get(todo.popleft(), ()):
                if caller not in done and caller not in stop:
                    done.add(caller)
                    todo.append(caller)
        return done

    def _plain_callers(self) -> Dict[str, List[str]]:
        """callee -> the functions that call it on every or some of their runs
        (BODY, SOME), computed once."""
        if self._callers is None:
            callers: Dict[str, List[str]] = {}
            for fid in self.functions:
                for cid, where, _ in self.resolved_calls(fid):
                    if where == BODY or where == SOME:
                        found = callers.get(cid)
                        if found is None:
                            callers[cid] = [fid]
                        else:
                            found.append(fid)
            self._callers = callers
        return self._callers

    def _every_step(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        from_loops: Dict[str, List[str]] = {TRAIN: [], EVAL: []}  # the callees of hot loops, in order
        for fid in self.functions:
            for cid, where, _ in self.resolved_calls(fid):
                if where == TRAIN or where == EVAL:
                    from_loops[where].append(cid)
        for kind in (TRAIN, EVAL):  # train first: it wins
            todo = deque()
            for cid in from_loops[kind]:
                if cid not in out and cid not in self.drives:
                    out[cid] = kind
                    todo.append(cid)
            while todo:
                fid = todo.popleft()
                for cid in self._callees(fid, {BODY}) + _on_every_branch(self, fid):
                    if cid not in out and cid not in self.drives:
                        out[cid] = kind
                        todo.append(cid)
        return out

    def body_closure(self, fid: str) -> Set[str]:
        """`fid` and the functions it reaches through plain calls (BODY), memoized."""
        memo = self._body_reach
        if fid not in memo:
            seen = {fid}
            todo = deque([fid])
            while todo:
                for cid in self._callees(todo.popleft(), {BODY}):
                    if cid not in seen:
                        seen.add(cid)
                        todo.append(cid)
            memo[fid] = seen
        return memo[fid]

    # ------------------------------------------------------------- per file
    def facts_for(self, path: str) -> dict:
        """What the analysis of `path` may ask: for each reference its calls
        make, the callee's facts (only those that say something), and which
        of its own functions run every step."""
        names, summary = self.files[path]
        steps: Set[str] = set()
        drives: Set[str] = set()
        returns: Dict[str, object] = {}  # (a kind; or, for a tuple, the kinds known at its places)
        iterates: Dict[str, int] = {}
        host_built: Set[str] = set()
        # calls whose callee returns right after a host read; chooses a precision
        # (`summary._choosing_precision`); runs its own module's forward and steps nothing
        synced, precision, forwards, hands_back, evaluated_back = set(), set(), set(), set(), set()
        builders: Dict[str, str] = {}
        builders_any: Dict[str, List[str]] = {}  # calls whose callee builds one of several classes
        builders_by: Dict[str, list] = {}  # ... and chooses which by a string parameter
        builders_each: Dict[str, list] = {}  # calls whose callee builds each object of the tuple it returns
        moved: Dict[str, List[int]] = {}  # calls whose callee returns what it put on an accelerator
        every: Dict[str, str] = {}
        params: Dict[str, Dict[str, str]] = {}
        param_kinds: Dict[str, Dict[str, str]] = {}
        # the table's lists of the file's own functions, each from the graph's set of them
        marked = {"device_side": self.device_side, "entered_synced": self.entered_synced,
                  "feeds_env": self.feeds_env, "grad_off": self.grad_off, "called_off_step": self.called_off_step}
        listed: Dict[str, List[str]] = {key: [] for key in marked}
        for qual, fsum in summary.get("functions", {}).items():
            fid = self.id_of(path, qual)  # None for a file with no module name: not in the graph
            for key, fids in marked.items():
                if fid in fids:
                    listed[key].append(qual)
            kind = self.every_step.get(fid)
            if kind is not None:
                every[qual] = kind
            if fid in self.params:
                params[qual] = self.params[fid]
            if fid in self.param_kinds:
                param_kinds[qual] = self.param_kinds[fid]
            resolved = self.resolved_calls(fid) if fid is not None else [
                (cid, call[1], call) for call in fsum.get("calls", ())
                for cid in (self.resolve_in(call[0], path),) if cid is not None
            ]
            for cid, _, call in resolved:
                _callee_answers(self, call[0], cid, steps, drives, returns, iterates, host_built, (synced, precision, forwards, hands_back, evaluated_back),
                                moved)
                built = self.functions[cid].get("builds")
                if built is not None and self._class(built) is not None:
                    builders[call[0]] = built
                choices = self.functions[cid].get("builds_any")
                if choices and all(_builds_known(self, c) for c in choices):
                    builders_any[call[0]] = choices
                    if "builds_by" in self.functions[cid]:
                        builders_by[call[0]] = self.functions[cid]["builds_by"]
                each = known_positions(self.functions[cid].get("builds_each"), lambda c: _builds_known(self, c))
                builders_each.update({call[0]: each} if each else {})
        table = {"steps": sorted(steps), "drives": sorted(drives), "returns": returns, "iterates": iterates, "every_step": every,
                 "params": params, "param_kinds": param_kinds}
        for key, found in (("host_built", host_built), ("returns_synced", synced), ("precision_calls", precision),
                           ("forwards", forwards), ("hands_back", hands_back), ("returns_evaluated", evaluated_back)):
            if found:
                table[key] = sorted(found)
        evaluated = {} if not self.evaluated else {
            qual: self.evaluated[fid] for qual in summary.get("functions", {})
            for fid in (self.id_of(path, qual),) if fid in self.evaluated}
        if evaluated:
            table["evaluated"] = evaluated  # (its functions' parameters that hold a model in eval mode)
        table.update({"returns_moved": moved} if moved else {})
        for key, found in (("builders", builders), ("builders_any", builders_any), ("builders_by", builders_by),
                           ("builders_each", builders_each)):
            table.update({key: found} if found else {})
        for key, quals in listed.items():
            if quals:
                table[key] = sorted(quals)
        table.update(_subclass_calls(self, summary))
        table.update(self.program_facts(path))
        if trains(summary):  # the models its training loop trains (only such a file asks)
            layers = self._models().trained_layers(path, summary)
            if layers:
                table["layers"] = layers
            if not summary.get("cuda") and (
                    any(self.program_files[p][1].get("cuda") for p in self.model_files(path))
                    or self._program_set().imports_one_saying(path, "cuda")):
                table["cuda_nearby"] = True  # (a model file names CUDA, or a file it imports: its `device`)
            if not summary.get("low_precision"):
                if self._low_precision is None:
                    self._low_precision = called_in_low_precision(self)
                if any(self.id_of(path, qual) in self._low_precision for qual in summary.get("functions", {})):
                    table["low_precision_callers"] = True
        return table

    def program_facts(self, path: str) -> dict:
        """`Programs.facts`: the lowest torch pinned in `path`'s program, below its own
        (`torch_pin`), the opt-in flags the program's other files define (`opt_in`), a default
        device one sets (`default_device`), and whether other files import its self-test (`self_test`)."""
        return self._program_set().facts(path)

    def _program_set(self) -> Programs:
        self._programs = self._programs or Programs(self.program_files)
        return self._programs

    def _module_file(self, module: str, importer: str) -> Optional[str]:
        """The file `import module` in `importer` reads (`module_file`)."""
        return module_file(self.paths_of.get(module, []), importer)

    def importers_of(self, path: str) -> List[str]:
        """The project files that import `path`."""
        return list(self._models().importers_of(path))

    def model_files(self, path: str, importers: bool = True) -> Set[str]:
        """`ModelFiles.of` this project."""
        return self._models().of(path, importers)

    def _models(self) -> "ModelFiles":
        """The project's `ModelFiles` (made once, when first asked)."""
        if self._model_files is None:
            # (with the scripts read for their imports only: a script with no def that builds
            # the model and hands it to a trainer in another file, Swin-Unet's `train.py`)
            self._model_files = ModelFiles(self.program_files, self._module_file, self._imports_kept)
            self._imports_kept = None
        return self._model_files


def _overriding(graph: ProjectGraph, fid: str, found: List[Tuple[str, str, list]]) -> List[Tuple[str, str, list]]:
    """The overrides a method's calls may run as well: of an abstract method
    (`self.update(batches)` in a base class whose `update` its subclasses
    implement, tableshift's `train_epoch`), and of a method of the caller's
    own class, called on `self` (mdistiller's `BaseTrainer.train_epoch`
    calling `self.train_iter(...)`, which `CRDTrainer` and `DOT` override:
    each subclass's step runs every step of its own training; `self.forward`
    where the class itself has none)."""
    out: List[Tuple[str, str, list]] = []
    if graph._abstract and any(cid in graph._abstract for cid, _, _ in found):
        below = _below(graph)  # (a base with no bases of its own too: pixel-nerf's `class Trainer:`)
        out += [(oid, where, call) for cid, where, call in found if cid in graph._abstract
                for oid in overrides(below, graph.alias, cid)]
    own = fid.partition("@")[0].rpartition(".")[0]  # (the caller's class, for a method)
    mine = [(cid, where, call) for cid, where, call in found
            if cid not in graph._abstract and call[0].rpartition(".")[0] == own]
    resolved = {id(call) for _, _, call in found}  # (and `self.forward(...)` where the class leaves it to
    mine += [(call[0], call[1], call) for call in graph.functions[fid].get("calls", ())  # its subclasses)
             if own and id(call) not in resolved and call[0] == own + ".forward"]
    if mine:
        below = _below(graph)
        out += [(oid, where, call) for cid, where, call in mine for oid in overrides(below, graph.alias, cid) if oid != cid]
    return out


def _class_of(graph: ProjectGraph, ref: str) -> str:
    """The class `ref` names; a class with no bases of its own is known by
    its name only, or by what a package re-exports under that name
    (`trainlib.Trainer` for `trainlib.trainer.Trainer`)."""
    found = graph._class(ref)
    if found is not None:
        return found
    known = _method_owners(graph)
    if ref in graph.classes or ref in known:
        return ref
    moved = graph._unexported(ref)  # (not for a class known by `ref` itself: ElegantRL's module
    return moved if moved is not None and (moved in graph.classes or moved in known) else ref  # `agents.AgentBase`)


def _duck_methods(graph: ProjectGraph) -> Dict[str, List[str]]:
    """name -> the methods of that name the project's classes define
    (`hierarchy.class_methods_by_name`), built once."""
    if graph._duck is None:
        modules = {n for names, _ in graph.files.values() for n in names}
        graph._duck = class_methods_by_name(graph.functions, modules)
    return graph._duck


def _method_owners(graph: ProjectGraph) -> Set[str]:
    """What the project's functions are defined in (classes, with or without
    bases, and modules), built once."""
    if graph._owners is None:
        graph._owners = {fid.partition("@")[0].rpartition(".")[0] for fid in graph.functions}
    return graph._owners


def _subclass_calls(graph: ProjectGraph, summary: dict) -> dict:
    """{"subclass_of": the file's calls that build a project's subclass of a framework class, each with
    that class (`hierarchy.FRAMEWORK_ROOTS`: a vendored `DataParallelWithCallback`)}, or {}."""
    if graph._subclasses is None:
        graph._subclasses = descends_from(graph.classes, graph._class, FRAMEWORK_ROOTS)
    found = calls_building(summary, graph._class, graph._subclasses) if graph._subclasses else {}
    return {"subclass_of": found} if found else {}


def _below(graph: ProjectGraph) -> Dict[str, List[str]]:
    """class -> its direct subclasses, classes with no bases included (`_class_of`), built once."""
    if graph._below is None:
        graph._below = subclasses(graph.classes, lambda r: _class_of(graph, r))
    return graph._below


def _held_method(graph: ProjectGraph, ref: str) -> Optional[str]:
    """The method a `HELD` reference names (`hierarchy.held_method`)."""
    return held_method(ref, lambda r: _class_of(graph, r), _below(graph), graph.classes, graph.held, graph.resolve)


def held_by(graph: "ProjectGraph", ref: str) -> List[str]:
    """The classes of what the attribute of a `HELD` reference may hold
    (`hierarchy.held_classes`): where to look for its method when the graph
    has not read their files yet."""
    return held_classes(ref, lambda r: _class_of(graph, r), _below(graph), graph.classes, graph.held)


def _resolved_from(graph: ProjectGraph, previous: ProjectGraph) -> None:
    """Take `previous`'s resolved references where what they can name is the
    same: the same files in the same order, each with the same names,
    functions, classes, exports and imports; and a function's resolved
    calls where its file's summary is the very same object. Where only
    some files changed, which project files each unchanged file imports
    is kept (`ModelFiles`)."""
    before, now = previous.program_files, graph.program_files
    if len(before) != len(now) or list(before) != list(now):
        return
    # module names that now name other files (a file read for its imports only before, or now)
    moved = {n for p in previous.files.keys() ^ graph.files.keys() for n in now[p][0]}
    same: Set[str] = set()
    same_skeleton = True
    for path, (names, summary) in now.items():
        old_names, old_summary = before[path]
        if tuple(old_names) != tuple(names):
            return
        if old_summary is summary:
            same.add(path)
        elif same_skeleton and _skeleton(old_summary) != _skeleton(summary):
            same_skeleton = False
    if previous._programs is not None and all(
            previous._programs.same_part(before[p][1], now[p][1]) for p in now):
        graph._programs = previous._programs  # (what it reads of each summary is as it was)
    if previous._model_files is not None:
        graph._imports_kept = previous._model_files.known_imports({
            p for p in graph.files
            if (p in same or before[p][1].get("imports") == now[p][1].get("imports")) and not any(
                m in moved or m.rpartition(".")[0] in moved for m in now[p][1].get("imports", ()))
        })
    if not same_skeleton or moved:
        return
    graph._resolved = previous._resolved
    graph._resolved_in = previous._resolved_in
    graph._star_memo = previous._star_memo
    graph._edges = {fid: e for fid, e in previous._edges.items() if graph.owner.get(fid) in same}
    if previous._model_files is not None:  # (every file imports what it did: `_models`)
        graph._imports_kept = previous._model_files.known_imports()


def _param_classes(graph: "ProjectGraph") -> Dict[str, Dict[str, object]]:
    """function -> {parameter: class}, where the calls that pass an
    object of a known class for it all pass the same class (`loss_scaler`
    of `train_one_epoch(..., loss_scaler)`); or {parameter: [classes]},
    sorted, where they pass objects of a few different classes (each run
    script hands `MFPolicyTrainer(policy=...)` its own policy: the
    parameter holds one of them). Calls passing something else are not
    evidence either way."""
    seen: Dict[str, Dict[str, Set[str]]] = {}
    for fid in graph.functions:
        for cid, _, call in graph.resolved_calls(fid):
            if len(call) < 3:
                continue
            params = graph.functions[cid].get("params", [])
            for key, cls in call[2].items():
                name = params[int(key)] if key.isdigit() and int(key) < len(params) else key
                if name in params:
                    seen.setdefault(cid, {}).setdefault(name, set()).add(cls)
    out: Dict[str, Dict[str, object]] = {}
    for cid, ps in seen.items():
        known = {n: next(iter(c)) if len(c) == 1 else sorted(c) for n, c in ps.items() if len(c) <= MAX_UNION}
        if known:
            out[cid] = known
    return out


def _builds_known(graph: "ProjectGraph", cls_ref: str) -> bool:
    """A class of the project that a function may build, one of several: one
    the graph knows (with bases in the project or torch), or one with
    methods of its own (`class SAC(object)`, whose `update` a caller's loop
    calls). (A function that builds one class only is taken where the graph
    knows the class: with base-less classes there too, composer's trainer
    lost a labelled per-step read.)"""
    if graph._class(cls_ref) is not None:
        return True
    if graph._method_owners is None:
        graph._method_owners = {ref.rpartition(".")[0] for ref in graph.alias}  # (each name of each function)
    return cls_ref in graph._method_owners


def _on_every_branch(graph: "ProjectGraph", fid: str) -> List[str]:
    """The functions that run on every run of `fid` because each branch of
    one of its `if`/`else` chains reaches them through plain calls
    (`optimize` calls `_optimize_fp16` or `_optimize_normal`, and both
    call `_compute_norms`)."""
    out: List[str] = []
    for group in graph.functions[fid].get("either", ()):
        reach = []
        for branch in group:
            found: Set[str] = set()
            for ref in branch:
                cid = graph.resolve_in(ref, graph.owner[fid])
                if cid is not None:
                    found |= graph.body_closure(cid)
            reach.append(found)
        if reach:
            out.extend(sorted(set.intersection(*reach)))
    return out


def _param_kinds(graph: ProjectGraph) -> Dict[str, Dict[str, str]]:
    """function -> {parameter: kind}: what the parameter holds on every
    path that runs the function every step. Where every such call is
    from a hot loop (whose calls record what they pass), or hands on a
    parameter of a function that runs every step (`passing.forwarded`:
    `self._train_step(model, loss)` in `__call__`, which then holds what
    that parameter holds), and all that pass the parameter
    pass a host value (a number, a string, ...: `values.kinds.HOST_KINDS`): `NUMBER` where all pass
    numbers, else `OTHER`, a host tensor where all pass one; `TENSOR` where all pass a
    tensor not known to be in host memory (a batch moved to the device, a model's
    output: what `take_per_row(out, idx, n)` indexes every step); for the
    `**kwargs` parameter, `HOST_MAPPING`. A call that unpacks arguments or
    does not record them leaves the function out; one that passes a value
    of unknown kind leaves that parameter out."""
    passed: Dict[str, Dict[str, Set[Tuple[str, str]]]] = {}
    unknown: Set[str] = set()
    forwards = False
    for fid in graph.functions:
        per_step = fid in graph.every_step
        for cid, _, call in graph.resolved_calls(fid):
            if cid in unknown:
                continue
            if len(call) < 4 or not (per_step or call[1] in (TRAIN, EVAL)):
                if per_step and call[1] == BODY:
                    unknown.add(cid)  # a per-step call that did not record what it passes
                continue  # a call that does not run every step: not what a per-step read sees
            callee = graph.functions[cid]
            params = callee.get("params", [])
            kwargs = callee.get("kwargs")
            mine = passed.setdefault(cid, {})
            for key, kind in call[3].items():
                if key in ("*", "**"):
                    unknown.add(cid)  # unpacked: which parameters it fills is not known
                    break
                name = params[int(key)] if key.isdigit() and int(key) < len(params) else key
                if name not in params:
                    if kwargs is None:
                        unknown.add(cid)
                        break
                    name = "**"
                forwards = forwards or kind[:1] == "="
                mine.setdefault(name, set()).add((fid, kind))
    out: Dict[str, Dict[str, str]] = {}
    # a forwarded parameter holds what the caller's holds: read in rounds, as far as chains of
    # such calls go (a bound: each round can only add what the last one found)
    for _ in range(4 if forwards else 1):
        found: Dict[str, Dict[str, str]] = {}
        for cid, ps in passed.items():
            if cid in unknown:
                continue
            kinds = {}
            for name, pairs in ps.items():
                ks = {out.get(fid, {}).get(k[1:], "?") if k[:1] == "=" else k for fid, k in pairs}
                if ks == {TENSOR} and name != "**":
                    kinds[name] = TENSOR  # a tensor not known to be in host memory, on every per-step path
                    continue
                if not ks <= HOST_KINDS:
                    continue  # a tensor, a model, ... or a value of unknown kind ("?")
                if name == "**":
                    if HOST_TENSOR not in ks:
                        kinds[graph.functions[cid]["kwargs"]] = HOST_MAPPING
                elif ks == {HOST_TENSOR}:
                    kinds[name] = HOST_TENSOR
                elif HOST_TENSOR not in ks:
                    kinds[name] = NUMBER if ks == {NUMBER} else OTHER
            if kinds:
                found[cid] = kinds
        if found == out:
            break
        out = found
    return out


def _skeleton(summary: dict) -> tuple:
    """What of a summary the references of the project can resolve to."""
    return (list(summary.get("functions", {})), summary.get("classes"), summary.get("exports"),
            summary.get("star_exports"), summary.get("imports"), bool(summary.get("imports_only")))


def trains(summary: dict) -> bool:
    """Some function of the file (or its top-level code) steps or drives a hot loop."""
    return any(f.get("drives") or f.get("steps") for f in summary.get("functions", {}).values())


def module_file(found: Sequence[str], importer: str) -> Optional[str]:
    """Of the files a module name may name, the one `importer` reads: the
    only one, or the one beside it (a script's folder comes first on
    `sys.path`: `from models import *` next to `cyclegan.py`), or else the only
    one below its folder (`DiffRec/models/`, for `DiffRec/main.py` beside `L-DiffRec/`)."""
    if len(found) == 1:
        return found[0]
    folder = os.path.dirname(os.path.abspath(importer))  # (paths as given: `gpulint check .` names `utils.py`)
    below = [p for p in found if os.path.abspath(p).startswith(folder + os.sep)]
    return next((p for p in below if os.path.dirname(os.path.abspath(p)) == folder), below[0] if len(below) == 1 else None)


# the parts of a facts table that change what the values and control layers answer
def _through_star_exports(graph: "ProjectGraph", parts: List[str]) -> Optional[str]:
    """`misc.MetricLogger.update` where `misc/__init__.py` says `from .logger
    import *` and `misc.logger` defines a function or class `MetricLogger`:
    `misc.logger.MetricLogger.update`; else None."""
    if graph._star_memo is None:
        graph._star_memo = ({p.split(".", 1)[0] for p in graph.star_exports},
                            {ref.rpartition(".")[0] for ref in graph.alias})
    roots, owners = graph._star_memo
    if parts[0] not in roots:
        return None
    for i in range(len(parts) - 1, 0, -1):
        for module in graph.star_exports.get(".".join(parts[:i]), ()):
            head = f"{module}.{parts[i]}"
            if head in graph.alias or head in graph.class_alias or head in owners:
                return ".".join([head] + parts[i + 1:])
    return None


def _callee_answers(graph: "ProjectGraph", ref: str, cid: str, steps: Set[str], drives: Set[str],
                    returns: Dict[str, object], iterates: Dict[str, int], host_built: Set[str],
                    marked: Tuple[Set[str], Set[str], Set[str], Set[str], Set[str]], moved: Dict[str, List[int]]) -> None:
    """What `ProjectGraph.facts_for` says of a call `ref` to the function `cid`."""
    synced, precision, forwards, hands_back, evaluated_back = marked
    if cid in graph.steps:
        steps.add(ref)
    if cid in graph.drives:
        drives.add(ref)
    callee = graph.functions[cid]
    if callee.get("returns") in RETURN_KINDS:
        returns[ref] = callee["returns"]
    elif "returns_items" in callee:
        returns[ref] = callee["returns_items"]  # (a tuple with Python numbers at some places)
    if "iterates" in callee:
        iterates[ref] = callee["iterates"]
    if callee.get("host_built"):
        host_built.add(ref)
    if callee.get("returns_synced"):
        synced.add(ref)
    if callee.get("precision"):
        precision.add(ref)  # (it chooses the model's precision: an FSDP mixed-precision policy)
    if "moves" in callee:
        moved[ref] = callee["moves"]  # (what it returns that it put on an accelerator)
    if callee.get("hands_back"):
        hands_back.add(ref)  # (`x, y = to_cuda(x, y)`: what it is given, each moved)
    if callee.get("returns_evaluated"):
        evaluated_back.add(ref)  # (`model = get_model(name)`, which returns it after `model.eval()`)
    if callee.get("forwards") and cid not in graph.steps:
        forwards.add(ref)  # (a model's method that runs the model, as `process()` does: a forward of it)

