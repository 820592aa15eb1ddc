"""The project: the files a run lints, joined as one program.

- `context_summaries`: the files the linted ones import (a few imports
  deep), read for their summaries only, so a file linted alone (pre-commit
  with one changed file, an editor's buffer, flake8's one file at a time)
  still sees the helpers it calls;
- `join_project`: the project's call graph (`ProjectGraph`) joined to a
  fixpoint, each file read again while the facts it was read with change;
- `ProjectLinter`: one text linted as a file of its project, for the front
  ends that lint one file at a time (the language server, the flake8
  plugin, stdin).

`runner.run` uses the first two over every file of a run, with the disk cache.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from gpulint.engine.cache import Cache, facts_key, table_key
from gpulint.engine.config import Settings
from gpulint.engine.files import FileResult, lint_file, lint_text
from gpulint.engine.lint import LintOptions, ProjectInput, collector_paused
from gpulint.model.project.graph import ProjectGraph, held_by, module_file, trains
from gpulint.model.project.hierarchy import MAX_DUCK_CLASSES, duck_method
from gpulint.model.project.refs import HELD
from gpulint.model.project.modules import is_package, module_names
from gpulint.model.project.programs import TOLD_ALONE
from gpulint.registry import suppression_judges

# a run reads files in worker processes from this many on
PARALLEL_MIN_FILES = 24
# the project's call graph is joined this many times at most (each round
# re-reads only the files whose facts changed); real projects settle in two,
# a model a factory builds in four to six (the factory's file is read, then the
# training file knows the model, then the model's file is read, then what its
# forward reaches knows it runs every step)
PROJECT_ROUNDS = 6
# how far imports are followed out of the linted files for their summaries
CONTEXT_DEPTH = 3


def lint_job(args) -> FileResult:
    """One file of a project read: (path, options, keep_source, ProjectInput,
    text), where `text` is an editor's buffer to read instead of the disk (or None)."""
    path, options, keep_source, project = args[:4]
    text = args[4] if len(args) > 4 else None
    with collector_paused():
        if text is not None:
            return lint_text(text, path, options, keep_source, project)
        return lint_file(path, options, keep_source, project)


def lint_all(args: list, jobs: int) -> List[FileResult]:
    """`lint_job` of each, in worker processes when there are enough."""
    if jobs > 1 and len(args) >= PARALLEL_MIN_FILES:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lint_job, args, chunksize=max(1, len(args) // (jobs * 8))))
    return [lint_job(a) for a in args]


def demanded(graph: ProjectGraph, done: Dict[str, FileResult], inputs: Dict[str, ProjectInput]) -> List[str]:
    """The files whose summaries were deferred (nothing in them starts a
    step) but that per-step code calls into: a call in the every-step part of
    a hot loop, or on every run of a function that runs every step, whose
    callee the graph cannot find yet; or any call that hands the callee an
    object of a class one of whose methods steps (a trainer handed to a
    `fit_one_epoch` whose loop calls `train_util.train_step(...)`), or a
    model its caller switched to eval mode (GPU501 asks the callee's loop)."""
    by_name = _deferred_by_name(done, inputs)
    if not by_name:
        return []
    out: List[str] = _importing_steps(graph, done, inputs)

    duck_files: Optional[Dict[str, List[str]]] = None  # method name -> the deferred files whose classes define it

    def defining(name: str) -> None:
        """Ask for the deferred files whose classes define a method `name`, where few do."""
        nonlocal duck_files
        if duck_files is None:
            duck_files = {}
            for paths in by_name.values():
                for p in paths:
                    for method in (done[p].summary or {}).get("methods", ()):
                        duck_files.setdefault(method, []).append(p)
        found = sorted(set(duck_files.get(name, ())))
        if len(found) <= MAX_DUCK_CLASSES:
            out.extend(p for p in found if p not in out)

    def ask(ref: str, caller: str) -> None:
        method = duck_method(ref)
        if method is not None:  # a parameter's method (`?.scalar_transform`): the files that define it
            return defining(method)
        cid = graph.resolve_in(ref, caller)
        if cid is not None and graph.is_abstract(cid):  # (its overrides, in subclasses of files not read yet:
            defining(cid.partition("@")[0].rpartition(".")[2])  # EfficientZero's `dynamics`)
        if cid is not None and os.path.dirname(graph.owner[cid]) == os.path.dirname(caller):
            return
        if HELD in ref:
            if cid is None:  # (`self._network.extract_vector(x)` in a base class: the files of what
                # its subclasses hold there, `self._network = Net()`)
                method = ref.partition("#")[2].partition(".")[2]
                for held in held_by(graph, ref):
                    ask(f"{held}.{method}", caller)
            return
        parts = ref.split(".")
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            path = module_file(by_name.get(prefix, []), caller)
            if path is None and cid is None:  # `misc.MetricLogger`, `from .logger import *` in `misc`
                path = next((p for m in graph.star_exports.get(prefix, ())
                             for p in [module_file(by_name.get(m, []), caller)] if p is not None), None)
            if path is not None:
                if (cid is None or os.path.dirname(path) == os.path.dirname(caller)) and path not in out:
                    out.append(path)
                return

    # the classes one of whose methods steps (`FasterRCNNTrainer.train_step`)
    stepping = {fid.split("@", 1)[0].rsplit(".", 1)[0] for fid in graph.steps}
    for fid, f in graph.functions.items():
        per_step = fid in graph.every_step
        drives = fid in graph.drives  # (what it builds before its loop: the model `build_model(cfg)` returns)
        for call in f.get("calls", ()):
            if call[1] in ("train", "eval") or ((per_step or drives) and call[1] == "body"):
                ask(call[0], graph.owner[fid])
            elif len(call) > 2 and any(graph.class_alias.get(c, c) in stepping for c in call[2].values()):
                # it hands an object whose method steps (`fit_one_epoch(model, train_util, ...)`
                # with `train_util = FasterRCNNTrainer(...)`): its loop may call that step
                ask(call[0], graph.owner[fid])
        for ref in f.get("evaluated", ()):  # it hands a model in eval mode (`evaluate(model, data)` after
            ask(ref, graph.owner[fid])       # `model.eval()`): the callee's loop may run it with autograd on
        if per_step:  # what each branch of an `if`/`else` calls runs on every run too
            for group in f.get("either", ()):
                for ref in sorted(set.intersection(*(set(branch) for branch in group)) if group else ()):
                    ask(ref, graph.owner[fid])
    for path, (_, summary) in graph.files.items():
        for ref in summary.get("dataset_calls", ()):  # what a loader takes as its dataset: an array?
            ask(ref, path)
    return out


def _importing_steps(graph: ProjectGraph, done: Dict[str, FileResult], inputs: Dict[str, ProjectInput]) -> List[str]:
    """The deferred files (no word of a step in them) that import a project
    module one of whose functions steps or drives a loop of steps: a script
    whose loop calls `ppo_step` from `core.ppo` runs steps, though no word of
    one is in its own text, and only its full summary says where it calls.
    Also the files that took no part but define functions and import one: a
    factory (`make_agent(env)` returning a `SoftQ` or a `SAC`) whose summary
    says which objects it builds."""
    stepping = {m for fid in graph.steps | graph.drives
                for m in (inputs[graph.owner[fid]].names if graph.owner[fid] in inputs else ())}
    if not stepping:
        return []
    # and the packages that re-export one of their classes or functions (`import algo`, whose
    # `__init__` has `from .ppo import PPO`, then `algo.PPO(model).update(...)`)
    for path, (_, summary) in graph.files.items():
        if path in inputs and any(t.rpartition(".")[0] in stepping or t.rpartition(".")[0].rpartition(".")[0]
                                  in stepping for t in summary.get("exports", {}).values()):
            stepping.update(inputs[path].names)
    return sorted(
        p for p, r in done.items()
        if r.error is None and r.summary is not None and (r.deferred or r.summary.get("defines"))
        and any(m in stepping for m in r.summary.get("imports", ()))
    )


def _deferred_by_name(done: Dict[str, FileResult], inputs: Dict[str, ProjectInput],
                      without_layers: bool = False) -> Dict[str, List[str]]:
    """module name -> the files of that name whose summary was left for later
    (with `without_layers`: whose layers were not read either)."""
    out: Dict[str, List[str]] = {}
    for p, r in done.items():
        if r.deferred and r.error is None and not (without_layers and _no_layers_to_read(r.summary)):
            for n in inputs[p].names:
                out.setdefault(n, []).append(p)
    return out


def _no_layers_to_read(summary: Optional[dict]) -> bool:
    """Reading the file for its layers would tell nothing new: read already,
    or it builds no `nn.Module` layer (`partial_summary`: what it imports only)."""
    return summary is None or "layers" in summary or bool(summary.get("imports_only"))


def imported_models(graph: ProjectGraph, done: Dict[str, FileResult], inputs: Dict[str, ProjectInput]) -> List[str]:
    """The deferred files that the model files of a file with a training
    loop import (`ProjectGraph.model_files`: what it imports, a few imports
    deep, and the files that import it), and the deferred files that import
    it (where a subclass of its trainer may build the model): what their
    models are (the layers they build, and what they import) is asked of them."""
    deferred = _deferred_by_name(done, inputs, without_layers=True)
    if not deferred:
        return []
    out: List[str] = []
    seen: Set[str] = set()
    waiting = {p for paths in deferred.values() for p in paths}
    asked: Set[str] = set()  # model files already walked (many training files share them)
    for path, (_, summary) in graph.files.items():
        if not trains(summary):
            continue
        for p in graph.importers_of(path):  # a subclass of its trainer may build the model it trains
            if p in waiting and p not in seen:
                seen.add(p)
                out.append(p)
        for source in sorted(graph.model_files(path)):
            if source in asked:
                continue
            asked.add(source)
            for module in graph.program_files[source][1].get("imports", ()):
                for name in (module, module.rpartition(".")[0]):
                    found = deferred.get(name)
                    p = module_file(found, source) if found else None
                    if p is not None and p not in seen:
                        seen.add(p)
                        out.append(p)
    return out


def project_roots(paths: Sequence[str], settings: Sequence[Settings]) -> List[str]:
    """Where module names start: the config roots, their `src/` folders, and
    the folders named on the command line."""
    roots: List[str] = []
    for s in settings:
        for r in (s.root, os.path.join(s.root, "src")):
            if r not in roots and os.path.isdir(r):
                roots.append(r)
    for p in paths:
        d = os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".")
        if d not in roots:
            roots.append(d)
    return roots


# how a file read only for its summary is linted: no rule
CONTEXT_OPTIONS = LintOptions(codes=())


def without_suppression_judges(options: LintOptions) -> LintOptions:
    """`options` less the rules that judge suppressions (unused-noqa)."""
    judges = suppression_judges()
    codes = tuple(c for c in options.codes if c not in judges)
    return options if codes == tuple(options.codes) else dataclasses.replace(options, codes=codes)


def context_summaries(done: Dict[str, FileResult], inputs: Dict[str, ProjectInput], roots: List[str],
                      jobs: int, cache: Optional[Cache] = None, previous: Optional[List[str]] = None,
                      fresh: Optional[Set[str]] = None, overlays: Optional[Dict[str, str]] = None
                      ) -> Dict[str, FileResult]:
    """Summaries of the project files that the linted files import but that
    are not linted themselves (a file linted alone, as in pre-commit, still
    sees the helpers it calls), a few imports deep. Their findings are not
    reported. With `previous` (the context of the last run over the same
    linted files, from `cache`), those files are taken from the cache where
    unchanged, and only the imports of the `fresh` (re-linted) files and of
    context files read again are looked up. Without `previous`, each file
    is still taken from `cache` where it holds it as it is now.

    `overlays`: path -> text, the editor's buffers, read instead of the
    disk (and never taken from the cache)."""
    linted = {os.path.abspath(p) for p in done}
    out: Dict[str, FileResult] = {}
    none = CONTEXT_OPTIONS
    tops: Dict[str, str] = {}
    if previous is not None and cache is not None:
        again = []
        for path in previous:
            if path in linted or path in inputs:
                continue
            inputs[path] = ProjectInput(tuple(module_names(path, roots, tops)), is_package(path))
            hit = cache.get(path, none)
            if hit is not None:
                out[path] = hit
            else:
                again.append(path)
        for path, res in zip(again, lint_all([(p, none, False, inputs[p]) for p in again], jobs)):
            out[path] = res
        frontier = [done[p].summary for p in (fresh or ()) if done[p].summary]
        frontier += [out[p].summary for p in again if out[p].summary]
    else:
        frontier = [r.summary for r in done.values() if r.summary]
    overlays = overlays or {}
    files_of: Dict[str, List[str]] = {}  # many files import the same modules: each is looked up once
    # a module that a linted file is needs no look-up
    known = {n for inp in inputs.values() for n in inp.names}
    listings: Dict[str, Tuple[frozenset, frozenset]] = {}
    for _ in range(CONTEXT_DEPTH):
        wanted = []
        for summary in frontier:
            for module in summary.get("imports", ()):
                paths = files_of.get(module)
                if paths is None:
                    if module in known:
                        paths = files_of[module] = []
                    else:
                        paths = files_of[module] = _module_files(module, roots, listings)
                for path in paths:
                    ap = os.path.abspath(path)
                    if ap not in linted and path not in out and path not in inputs and path not in wanted:
                        wanted.append(path)
        if not wanted:
            break
        read = []
        for path in wanted:
            inputs[path] = ProjectInput(tuple(module_names(path, roots, tops)), is_package(path))
            known.update(inputs[path].names)
            hit = cache.get(path, none, inputs[path].names) if cache is not None and path not in overlays else None
            if hit is not None:
                out[path] = hit
            else:
                read.append(path)
        for path, res in zip(read, lint_all([(p, none, False, inputs[p], overlays.get(p)) for p in read], jobs)):
            out[path] = res
        frontier = [out[p].summary for p in wanted if out[p].summary]
    return out


def _module_files(module: str, roots: List[str],
                  listings: Optional[Dict[str, Tuple[frozenset, frozenset]]] = None) -> List[str]:
    """The files of the project that `module` (or its parent, for a member
    imported from it) can be: `<root>/a/b.py` or `<root>/a/b/__init__.py`.
    `listings`: folder -> the names of its files, read once per folder."""
    listings = listings if listings is not None else {}
    parts = module.split(".")
    out = []
    for r in roots:
        here = _listing(r, listings)[0]
        if parts[0] not in here and parts[0] + ".py" not in here:
            continue  # `torch.nn`, `numpy`: no such top-level name in this root
        for cut in (len(parts), len(parts) - 1):
            if cut <= 0:
                continue
            base = os.path.join(r, *parts[:cut])
            for folder, name in ((os.path.dirname(base), os.path.basename(base) + ".py"), (base, "__init__.py")):
                if name in _listing(folder, listings)[1]:
                    cand = os.path.join(folder, name)
                    out.append(os.path.relpath(cand) if not os.path.isabs(r) else cand)
                    break
            else:
                continue
            break
    return out


def _listing(folder: str, listings: Dict[str, Tuple[frozenset, frozenset]]) -> Tuple[frozenset, frozenset]:
    """(the names of everything in `folder`, the names of its files), read once."""
    found = listings.get(folder)
    if found is None:
        try:
            with os.scandir(folder) as it:
                entries = [(e.name, e.is_file()) for e in it]
        except OSError:
            entries = []
        found = listings[folder] = (frozenset(n for n, _ in entries), frozenset(n for n, f in entries if f))
    return found


def join_project(done: Dict[str, FileResult], context: Dict[str, FileResult], inputs: Dict[str, ProjectInput],
                 relint: Callable[[List[Tuple[str, ProjectInput]]], List[FileResult]]) -> Set[str]:
    """Join the summaries of the linted files (`done`) and of the files read
    for them (`context`) into the project's call graph, and read again,
    with `relint`, each linted file whose facts differ from those it was read
    with, or whose summary the graph asks for (`demanded`), until none does
    (PROJECT_ROUNDS at most). `done` is updated; returns the paths read again."""
    again: Set[str] = set()
    summarized: Set[str] = set()  # files whose summary the project asked for: read again, they keep it
    graph: Optional[ProjectGraph] = None
    for _ in range(PROJECT_ROUNDS):
        graph = ProjectGraph({
            p: (inputs[p].names, r.summary) for p, r in list(done.items()) + list(context.items())
            if r.summary is not None and p in inputs
        }, graph)
        redo = [
            (path, ProjectInput(inputs[path].names, inputs[path].package, summarize=True))
            for path in demanded(graph, done, inputs)
        ]
        asked = {path for path, _ in redo}
        summarized |= asked
        redo += [  # what the models a training loop imports are: their layers only (a file
            # read without facts, as before: its findings stand, and only its summary is read)
            (path, ProjectInput(inputs[path].names, inputs[path].package, layers=True,
                                summary_only=done[path].table is None))
            for path in imported_models(graph, done, inputs) if path not in asked
        ]
        # a project none of whose files can put a tensor on an accelerator computes on the CPU
        cpu_only = not any(r.accelerator for r in list(done.values()) + list(context.values()))
        for path, res in done.items():
            if res.summary is None or res.error is not None:
                continue
            if res.summary.get("partial"):
                # no loop or call of the file is read with facts: only what its program tells
                # it, the torch it pins and a default device set elsewhere (`TOLD_ALONE`; read
                # again with the layers it was asked for)
                told = {k: v for k, v in graph.program_facts(path).items() if k in TOLD_ALONE}
                had = {k: v for k, v in (res.table or {}).items() if k in TOLD_ALONE}
                if told != had:
                    redo.append((path, ProjectInput(inputs[path].names, inputs[path].package, told or None,
                                                    layers="layers" in res.summary)))
                continue
            table = graph.facts_for(path)
            if cpu_only:
                table["accelerator"] = False
            if table_key(table) != facts_key(res) and path not in asked:
                redo.append((path, ProjectInput(inputs[path].names, inputs[path].package, table,
                                                summarize=path in summarized)))
        if not redo:
            break
        for (path, inp), res in zip(redo, relint(redo)):
            if inp.summary_only and res.error is None:
                res = dataclasses.replace(res, findings=done[path].findings, source=done[path].source)
            done[path] = res
            again.add(path)
    return again


class ProjectLinter:
    """One text linted as a file of its project, as `gpulint check` lints
    it: the project files it imports are read for their summaries, and the
    text is linted with the facts the project's call graph gives it. With
    `extra` files (an editor's workspace), those are files of the project as
    the linted ones of a run are (read again while their facts change, so a
    fact that crosses several files settles as in `gpulint check .`), with
    no rule selected.

    Files read are kept in memory by path, mtime and size, with the facts
    they were read with, so a long-lived caller (the language server, a
    flake8 process) reads each once, and again only when it or its facts
    change; `overlays` (an editor's open buffers, path -> text) are read
    from their text instead. Nothing is written to disk."""

    def __init__(self) -> None:
        self.memory = Cache("", persist=False)

    def lint(self, text: str, path: str, options: LintOptions, roots: Sequence[str], tree=None,
             overlays: Optional[Dict[str, str]] = None, extra: Sequence[str] = ()) -> FileResult:
        """The result of `text` as the file `path`: its findings (and its
        error, as `lint_text` reports one)."""
        roots = list(roots)
        if not extra:
            # no workspace: the files that call into this one are unknown, so whether a
            # suppression comment is used cannot be told (unused-noqa is not judged)
            options = without_suppression_judges(options)
        inputs = {path: ProjectInput(tuple(module_names(path, roots)), is_package(path))}
        first = lint_text(text, path, options, False, inputs[path], tree=tree)
        if first.error is not None:
            return first
        others = {p: t for p, t in (overlays or {}).items() if os.path.abspath(p) != os.path.abspath(path)}

        def read(p: str, inp: ProjectInput) -> FileResult:
            if p == path:
                return lint_text(text, path, options, False, inp, tree=tree)
            return lint_job((p, CONTEXT_OPTIONS, False, inp, others.get(p)))

        done = self._join({path: first}, inputs, roots, others, [p for p in extra if p != path], read)
        return done[path]

    def read(self, paths: Sequence[str], roots: Sequence[str]) -> None:
        """Read `paths` into memory now, as `lint(..., extra=paths)` would:
        an editor's workspace, read in the background so that its first
        document need not wait for it."""
        self._join({}, {}, list(roots), {}, paths,
                   lambda p, inp: lint_job((p, CONTEXT_OPTIONS, False, inp, None)))

    def _join(self, done: Dict[str, FileResult], inputs: Dict[str, ProjectInput], roots: List[str],
              overlays: Dict[str, str], extra: Sequence[str],
              read: Callable[[str, ProjectInput], FileResult]) -> Dict[str, FileResult]:
        memory = self.memory
        fresh: Set[str] = set()
        for p in extra:
            inputs[p] = ProjectInput(tuple(module_names(p, roots)), is_package(p))
            hit = memory.get(p, CONTEXT_OPTIONS, inputs[p].names) if p not in overlays else None
            if hit is not None:
                done[p] = hit
            else:
                done[p] = read(p, inputs[p])
                fresh.add(p)
        context = context_summaries(done, inputs, roots, 1, memory, overlays=overlays)
        fresh |= join_project(done, context, inputs, lambda redo: [read(p, inp) for p, inp in redo])
        memory.put_missing({p: r for p, r in context.items() if p not in overlays}, CONTEXT_OPTIONS, inputs)
        for p in set(extra) & fresh - set(overlays):  # read again: kept with the facts they have now
            if done[p].error is None:
                memory.put(p, CONTEXT_OPTIONS, done[p], inputs[p].names)
        return done
