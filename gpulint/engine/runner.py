"""Lint many files as one project: resolve settings per file, use the
cache (gpulint/engine/cache.py), fan out to worker processes when there is
enough work, and join the project's call graph to a fixpoint."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from gpulint.engine.cache import Cache, facts_key
from gpulint.engine.config import ConfigResolver, Settings, with_cli_overrides
from gpulint.engine.discovery import discover
from gpulint.engine.files import FileResult, lint_bytes
from gpulint.engine.lint import LintError, LintOptions, ProjectInput, collector_paused, decode_source
from gpulint.engine.unreached import drop_unreached, scope_of
from gpulint.engine.project import (
    CONTEXT_OPTIONS, ProjectLinter, context_summaries, join_project, lint_all, project_roots,
)
from gpulint.model.project.modules import is_package, module_names
from gpulint.registry import suppression_judges
from gpulint.rule import IO_ERROR, Finding, file_diagnostic

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
    key = (id(s), codes, s.preview_on)
    options = _OPTIONS.get(key)
    if options is None:  # one object per distinct set of options, not one per file
        unfixable, safe, unsafe = policy[1]
        options = _OPTIONS[key] = LintOptions(
            codes=codes, torch_version=s.torch_version, torch_newest=s.torch_newest, unfixable=unfixable, safe_fixes=safe,
            unsafe_fixes=unsafe, preview=s.preview_on,
        )
    return options


STDIN_NAME = "-"


def run_stdin(
    data: bytes,
    filename: Optional[str],
    resolver: ConfigResolver,
    select: Optional[Sequence[str]] = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    force_exclude: bool = False,
    preview: Optional[bool] = None,
) -> RunResult:
    """Lint text read from stdin as the file `filename` (its config, its
    per-file-ignores, its name in the report), as `ruff check --stdin-filename`.
    With `force_exclude`, a filename the config excludes lints nothing."""
    from gpulint.engine.discovery import force_excluded

    out = RunResult()
    name = filename or STDIN_NAME
    settings = resolver.for_path(filename or os.path.join(os.getcwd(), "stdin.py"))
    s = with_cli_overrides(settings, select, ignore, extend_select, preview)
    if filename and force_exclude and force_excluded(filename, s):
        return out
    options = out.options[name] = options_for(s, name)
    if filename and not filename.lower().endswith(".ipynb"):
        # a file of its project, as `gpulint check FILE` lints it: the files it imports are read
        try:
            text = decode_source(data, name)
        except LintError as exc:
            out.results.append(FileResult.failed(name, exc, IO_ERROR))
            return out
        with collector_paused():
            out.results.append(ProjectLinter().lint(text, name, options, project_roots([filename], [s])))
        drop_unreached(out.results, (), {name: text})
        return out
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
    preview: Optional[bool] = None,
) -> RunResult:
    out = RunResult()
    overridden: Dict[int, Settings] = {}

    def on_error(path: str, why: str) -> None:
        out.errors.append((path, why))

    todo: List[Tuple[str, LintOptions, Settings]] = []
    for path, settings in discover(list(paths), resolver, on_error, force_exclude=force_exclude):
        s = overridden.get(id(settings))
        if s is None:
            s = with_cli_overrides(settings, select, ignore, extend_select, preview)
            overridden[id(settings)] = s
        options = options_for(s, path)
        todo.append((path, options, s))
        out.options[path] = options

    companions = _whole_project(paths, todo, resolver)
    todo.extend((path, CONTEXT_OPTIONS, s) for path, s in companions)
    left_out = {path for path, _ in companions}  # read for the project, not reported

    caches: Dict[str, Cache] = {}
    pending: List[Tuple[str, LintOptions, Settings]] = []
    done: Dict[str, FileResult] = {}
    for path, options, s in todo:
        if use_cache and not keep_source:
            cache = caches.get(s.root)
            if cache is None:
                cache = caches[s.root] = Cache(s.root, cache_dir)
            hit = cache.get(path, options, summary=False)  # (read below, if the project is joined)
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
        out.results.extend(done[path] for path, _, _ in todo if path not in left_out)
        out.results.sort(key=lambda r: r.path)
        drop_unreached(out.results, paths)
        return out

    roots = project_roots(paths, [s for _, _, s in todo])
    roots_key = "\0".join(roots)
    tops: Dict[str, str] = {}
    inputs: Dict[str, ProjectInput] = {}
    for path, _, _ in todo:
        names = one_cache.names_for(path, roots_key) if one_cache is not None and path in done else None
        inputs[path] = ProjectInput(tuple(names if names is not None else module_names(path, roots, tops)),
                                    is_package(path))
    # no rule selected for any file (a plain check while every rule is in preview): the
    # files are parsed, for their syntax errors, and nothing is read for the project
    parse_only = not any(o.codes for _, o, _ in todo)
    if parse_only:
        inputs = {p: dataclasses.replace(inp, parse_only=True) for p, inp in inputs.items()}
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    args = [(p, o, keep_source, inputs[p]) for p, o, _ in pending]
    for (path, _, _), res in zip(pending, lint_all(args, jobs)):
        done[path] = res
    fresh = {path for path, _, _ in pending}

    # the project: join every file's summary, and read again the files whose facts changed
    previous = one_cache.previous_context(linted_key) if one_cache is not None else None
    context: Dict[str, FileResult] = {}
    if parse_only:
        joined = False
    elif previous is not None and one_cache.project_unchanged(linted_key) and all(
        _same_for_the_project(one_cache.entries.get(os.path.abspath(p)), one_cache.summary_of(p), done[p])
        for p in fresh
    ):
        # the re-read files say to the project what they said before (an edit inside a
        # function body, a comment) and were read with the facts they had: nothing to join
        joined = False
    else:
        joined = True
        for path, _, s in todo:  # the project is joined: the summaries of the files the cache held
            if path in done and path not in fresh:
                done[path].summary = caches[s.root].summary_of(path)
        context = context_summaries(done, inputs, roots, jobs, one_cache, previous, fresh)
        options_of = {path: options for path, options, _ in todo}
        fresh |= join_project(done, context, inputs, lambda redo: lint_all(
            [(p, options_of[p], keep_source, inp) for p, inp in redo], jobs))

    for path, options, s in todo:
        res = done[path]
        if path not in left_out:
            out.results.append(res)
        if use_cache and not keep_source and res.error is None and path in fresh:
            caches[s.root].put(path, options, res, inputs[path].names)
    if use_cache and not keep_source and one_cache is not None and joined:
        one_cache.put_missing(context, CONTEXT_OPTIONS, inputs)
        one_cache.put_project(linted_key, list(context), roots_key)
    for cache in caches.values():
        cache.save()
    out.results.sort(key=lambda r: r.path)
    drop_unreached(out.results, paths)
    return out


def _whole_project(paths: Sequence[str], todo: List[Tuple[str, LintOptions, Settings]],
                   resolver: ConfigResolver) -> List[Tuple[str, Settings]]:
    """The other files of the projects of the files linted with a rule that
    judges suppressions (unused-noqa): a finding, and so the use of a
    comment, can depend on any file of the project (a training loop in
    another file calls the helper every step), so each of them is read as
    a file of the project, with no rule, and not reported. A project is
    the git work tree around the file, else the outermost folder named on
    the command line that holds it, else the file's folder."""
    judges = suppression_judges()
    judged = [path for path, o, _ in todo if judges.intersection(o.codes)]
    if not judged:
        return []
    named_dirs = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    memo: Dict[str, Optional[str]] = {}
    scopes = sorted({scope_of(os.path.abspath(p), named_dirs, memo) or os.path.dirname(os.path.abspath(p))
                     for p in judged})
    linted = {os.path.realpath(p) for p, _, _ in todo}
    out: List[Tuple[str, Settings]] = []
    for path, s in discover(scopes, resolver, lambda _p, _w: None):
        if path.lower().endswith(".py") and os.path.realpath(path) not in linted:
            linted.add(os.path.realpath(path))
            out.append((path, s))
    return out


def _same_for_the_project(entry: Optional[dict], summary: Optional[dict], res: FileResult) -> bool:
    """`res`, a file read again, has the summary its cache entry had, and was
    read with the facts that entry was read with (a file read alone, with no
    facts from other files, when the project had none for it either)."""
    return (
        isinstance(entry, dict) and res.error is None and bool(entry.get("d")) == res.deferred
        and summary == res.summary and entry.get("t", "") == facts_key(res)
    )


