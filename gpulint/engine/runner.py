"""Lint many files as one project: resolve settings per file, use the
cache (gpulint/engine/cache.py), fan out to worker processes when there is
enough work, and join the project's call graph to a fixpoint."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from gpulint.engine.cache import Cache, facts_key, table_key
from gpulint.engine.config import ConfigResolver, Settings, with_cli_overrides
from gpulint.engine.discovery import discover
from gpulint.engine.lint import LintOptions, ProjectInput, collector_paused
from gpulint.engine.files import FileResult, lint_bytes, lint_file
from gpulint.model.project.graph import ProjectGraph
from gpulint.model.project.modules import is_package, module_names
from gpulint.rule import IO_ERROR, Finding, file_diagnostic

PARALLEL_MIN_FILES = 24
# the project's call graph is joined this many times at most (each round
# re-reads only the files whose facts changed); real projects settle in two
PROJECT_ROUNDS = 4
# how far imports are followed out of the linted files for their summaries
CONTEXT_DEPTH = 3


@dataclass
class RunResult:
    results: List[FileResult] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, why), files never linted
    options: Dict[str, LintOptions] = field(default_factory=dict)  # the options each file was linted with

    @property
    def findings(self) -> List[Finding]:
        out = [f for r in self.results for f in r.findings]
        out.sort(key=Finding.sort_key)
        return out

    @property
    def all_errors(self) -> List[Tuple[str, str]]:
        return self.errors + [(r.path, r.error) for r in self.results if r.error]

    @property
    def linted_count(self) -> int:
        return sum(1 for r in self.results if not r.error)

    @property
    def diagnostics(self) -> List[Finding]:
        """One finding per file that could not be checked (`invalid-syntax`,
        `io-error`, `internal-error`): reported in every output format, so a
        run with such a file never looks clean."""
        out = [file_diagnostic(path, why, IO_ERROR) for path, why in self.errors]
        out.extend(r.diagnostic for r in self.results if r.error)
        return out

    @property
    def nothing_found(self) -> bool:
        """No file to lint was found under the paths given (and none failed)."""
        return not self.results and not self.errors


_POLICY: Dict[int, tuple] = {}


_OPTIONS: Dict[tuple, LintOptions] = {}


def options_for(s: Settings, path: str) -> LintOptions:
    policy = _POLICY.get(id(s))
    if policy is None:
        policy = _POLICY[id(s)] = (s, s.fix_policy())
    codes = s.codes_for(path)
    key = (id(s), codes)
    options = _OPTIONS.get(key)
    if options is None:  # one object per distinct set of options, not one per file
        unfixable, safe, unsafe = policy[1]
        options = _OPTIONS[key] = LintOptions(
            codes=codes, torch_version=s.torch_version, unfixable=unfixable, safe_fixes=safe, unsafe_fixes=unsafe,
        )
    return options


def _lint_job(args) -> FileResult:
    path, options, keep_source, project = args
    with collector_paused():
        return lint_file(path, options, keep_source, project)


def _lint_all(args: list, jobs: int) -> List[FileResult]:
    if jobs > 1 and len(args) >= PARALLEL_MIN_FILES:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(_lint_job, args, chunksize=max(1, len(args) // (jobs * 8))))
    return [_lint_job(a) for a in args]


STDIN_NAME = "-"


def run_stdin(
    data: bytes,
    filename: Optional[str],
    resolver: ConfigResolver,
    select: Optional[Sequence[str]] = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    force_exclude: bool = False,
) -> RunResult:
    """Lint text read from stdin as the file `filename` (its config, its
    per-file-ignores, its name in the report), as `ruff check --stdin-filename`.
    With `force_exclude`, a filename the config excludes lints nothing."""
    from gpulint.engine.discovery import force_excluded

    out = RunResult()
    name = filename or STDIN_NAME
    settings = resolver.for_path(filename or os.path.join(os.getcwd(), "stdin.py"))
    s = with_cli_overrides(settings, select, ignore, extend_select)
    if filename and force_exclude and force_excluded(filename, s):
        return out
    options = out.options[name] = options_for(s, name)
    with collector_paused():
        out.results.append(lint_bytes(data, name, options))
    return out


def run(
    paths: Sequence[str],
    resolver: ConfigResolver,
    select: Optional[Sequence[str]] = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    jobs: Optional[int] = None,
    use_cache: bool = True,
    keep_source: bool = False,
    cache_dir: Optional[str] = None,
    force_exclude: bool = False,
) -> RunResult:
    out = RunResult()
    overridden: Dict[int, Settings] = {}

    def on_error(path: str, why: str) -> None:
        out.errors.append((path, why))

    todo: List[Tuple[str, LintOptions, Settings]] = []
    for path, settings in discover(list(paths), resolver, on_error, force_exclude=force_exclude):
        s = overridden.get(id(settings))
        if s is None:
            s = with_cli_overrides(settings, select, ignore, extend_select)
            overridden[id(settings)] = s
        options = options_for(s, path)
        todo.append((path, options, s))
        out.options[path] = options

    caches: Dict[str, Cache] = {}
    pending: List[Tuple[str, LintOptions, Settings]] = []
    done: Dict[str, FileResult] = {}
    for path, options, s in todo:
        if use_cache and not keep_source:
            cache = caches.get(s.root)
            if cache is None:
                cache = caches[s.root] = Cache(s.root, cache_dir)
            hit = cache.get(path, options)
            if hit is not None:
                done[path] = hit
                continue
        pending.append((path, options, s))

    # the linted files of this run, as one project (with the options each is linted with)
    linted_key = hashlib.sha1(
        "\n".join(sorted(f"{os.path.abspath(p)}\0{Cache.options_key(o)}" for p, o, _ in todo)).encode(
            "utf-8", "surrogateescape"  # a file name that is not UTF-8
        )
    ).hexdigest()
    one_cache = next(iter(caches.values())) if len(caches) == 1 else None  # the project's, when it has one root
    if not pending and one_cache is not None and one_cache.project_unchanged(linted_key):
        # every file a cache hit, and nothing the project read changed: its facts stand
        out.results.extend(done[path] for path, _, _ in todo)
        out.results.sort(key=lambda r: r.path)
        return out

    roots = _project_roots(paths, [s for _, _, s in todo])
    roots_key = "\0".join(roots)
    tops: Dict[str, str] = {}
    inputs: Dict[str, ProjectInput] = {}
    for path, _, _ in todo:
        names = one_cache.names_for(path, roots_key) if one_cache is not None and path in done else None
        inputs[path] = ProjectInput(tuple(names if names is not None else module_names(path, roots, tops)),
                                    is_package(path))
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    args = [(p, o, keep_source, inputs[p]) for p, o, _ in pending]
    for (path, _, _), res in zip(pending, _lint_all(args, jobs)):
        done[path] = res
    fresh = {path for path, _, _ in pending}

    # the project: join every file's summary, and read again the files whose facts changed
    settings_of = {path: (options, s) for path, options, s in todo}
    previous = one_cache.previous_context(linted_key) if one_cache is not None else None
    if previous is not None and one_cache.project_unchanged(linted_key) and all(
        _same_for_the_project(one_cache.entries.get(os.path.abspath(p)), done[p]) for p in fresh
    ):
        # the re-read files say to the project what they said before (an edit inside a
        # function body, a comment) and were read with the facts they had: nothing to join
        rounds = 0
        context: Dict[str, FileResult] = {}
    else:
        rounds = PROJECT_ROUNDS
        context = _context_summaries(done, inputs, roots, settings_of, jobs, one_cache, previous, fresh)
    for _ in range(rounds):
        graph = ProjectGraph({
            p: (inputs[p].names, r.summary) for p, r in list(done.items()) + list(context.items())
            if r.summary is not None and p in inputs
        })
        redo = [
            (path, ProjectInput(inputs[path].names, inputs[path].package, summarize=True))
            for path in _demanded(graph, done, inputs)
        ]
        # a project none of whose files can put a tensor on an accelerator computes on the CPU
        cpu_only = not any(r.accelerator for r in list(done.values()) + list(context.values()))
        for path, res in done.items():
            if res.summary is None or res.error is not None:
                continue
            table = graph.facts_for(path)
            if cpu_only:
                table["accelerator"] = False
            if table_key(table) != facts_key(res):
                redo.append((path, ProjectInput(inputs[path].names, inputs[path].package, table)))
        if not redo:
            break
        args = [(p, settings_of[p][0], keep_source, inp) for p, inp in redo]
        for (path, _), res in zip(redo, _lint_all(args, jobs)):
            done[path] = res
            fresh.add(path)

    for path, options, s in todo:
        res = done[path]
        out.results.append(res)
        if use_cache and not keep_source and res.error is None and path in fresh:
            caches[s.root].put(path, options, res, inputs[path].names)
    if use_cache and not keep_source and one_cache is not None and rounds:
        for path, res in context.items():
            if res.error is None and not one_cache.is_cached(path, CONTEXT_OPTIONS):
                one_cache.put(path, CONTEXT_OPTIONS, res, inputs[path].names)
        one_cache.put_project(linted_key, list(context), roots_key)
    for cache in caches.values():
        cache.save()
    out.results.sort(key=lambda r: r.path)
    return out


def _same_for_the_project(entry: Optional[dict], res: FileResult) -> bool:
    """`res`, a file read again, has the summary its cache entry had, and was
    read with the facts that entry was read with (a file read alone, with no
    facts from other files, when the project had none for it either)."""
    return (
        isinstance(entry, dict) and res.error is None and bool(entry.get("d")) == res.deferred
        and entry.get("y") == res.summary and entry.get("t", "") == facts_key(res)
    )


def _demanded(graph: ProjectGraph, done: Dict[str, FileResult], inputs: Dict[str, ProjectInput]) -> List[str]:
    """The files whose summaries were deferred (nothing in them starts a
    step) but that per-step code calls into: a call in the every-step part of
    a hot loop, or on every run of a function that runs every step, whose
    callee the graph cannot find yet."""
    by_name = {n: p for p, r in done.items() if r.deferred and r.error is None for n in inputs[p].names}
    if not by_name:
        return []
    out: List[str] = []
    for fid, f in graph.functions.items():
        per_step = fid in graph.every_step
        for call in f.get("calls", ()):
            ref, where = call[0], call[1]
            if where not in ("train", "eval") and not (per_step and where == "body"):
                continue
            if graph.resolve(ref) is not None:
                continue
            parts = ref.split(".")
            for i in range(len(parts) - 1, 0, -1):
                path = by_name.get(".".join(parts[:i]))
                if path is not None:
                    if path not in out:
                        out.append(path)
                    break
    return out


def _project_roots(paths: Sequence[str], settings: Sequence[Settings]) -> List[str]:
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


def _context_summaries(done: Dict[str, FileResult], inputs: Dict[str, ProjectInput], roots: List[str],
                       settings_of: Dict[str, tuple], jobs: int, cache: Optional[Cache] = None,
                       previous: Optional[List[str]] = None, fresh: Optional[Set[str]] = None) -> Dict[str, FileResult]:
    """Summaries of the project files that the linted files import but that
    are not linted themselves (a file linted alone, as in pre-commit, still
    sees the helpers it calls), a few imports deep. Their findings are not
    reported. With `previous` (the context of the last run over the same
    linted files, from `cache`), those files are taken from the cache where
    unchanged, and only the imports of the `fresh` (re-linted) files and of
    context files read again are looked up."""
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
        for path, res in zip(again, _lint_all([(p, none, False, inputs[p]) for p in again], jobs)):
            out[path] = res
        frontier = [done[p].summary for p in (fresh or ()) if done[p].summary]
        frontier += [out[p].summary for p in again if out[p].summary]
    else:
        frontier = [r.summary for r in done.values() if r.summary]
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
        for path in wanted:
            inputs[path] = ProjectInput(tuple(module_names(path, roots, tops)), is_package(path))
            known.update(inputs[path].names)
        results = _lint_all([(p, none, False, inputs[p]) for p in wanted], jobs)
        frontier = []
        for path, res in zip(wanted, results):
            out[path] = res
            if res.summary:
                frontier.append(res.summary)
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
