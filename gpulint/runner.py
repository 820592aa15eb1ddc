"""Lint many files: resolve settings per file, use the cache, fan out to
worker processes when there is enough work."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from gpulint import __version__
from gpulint.config import ConfigResolver, Settings, with_cli_overrides
from gpulint.discovery import discover
from gpulint.engine import LintOptions, collector_paused
from gpulint.files import FileResult, lint_bytes, lint_file
from gpulint.rule import IO_ERROR, Edit, Finding, Fix, file_diagnostic

PARALLEL_MIN_FILES = 24
CACHE_DIR = ".gpulint_cache"


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


# ------------------------------------------------------------------ cache
def finding_to_dict(f: Finding) -> dict:
    d = asdict(f)
    if f.fix is not None:
        d["fix"] = {
            "message": f.fix.message,
            "applicability": f.fix.applicability,
            "edits": [[e.start, e.end, e.content, list(e.location), list(e.end_location)] for e in f.fix.edits],
        }
    return d


def finding_from_dict(d: dict) -> Finding:
    d = dict(d)
    fx = d.pop("fix", None)
    fix = None
    if fx:
        fix = Fix(
            fx["message"],
            tuple(Edit(e[0], e[1], e[2], tuple(e[3]), tuple(e[4])) for e in fx["edits"]),
            fx["applicability"],
        )
    return Finding(fix=fix, **d)


_FINGERPRINT: Optional[str] = None


def _code_fingerprint() -> str:
    """Changes whenever gpulint's own code changes (an upgrade, or an edited
    checkout), so a cache never serves findings of other rules' code."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha1()
        pkg = os.path.dirname(os.path.abspath(__file__))
        for dirpath, dirnames, filenames in os.walk(pkg):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    p = os.path.join(dirpath, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    h.update(f"{os.path.relpath(p, pkg)}:{st.st_mtime_ns}:{st.st_size};".encode())
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


def cache_dir_for(root: str, cache_dir: Optional[str] = None) -> str:
    return cache_dir if cache_dir else os.path.join(root, CACHE_DIR)


class Cache:
    """One JSON file per project root and gpulint version: for each file its
    mtime, size, the key of the options it was linted with (gpulint version,
    a fingerprint of gpulint's code, the effective rules and fix policy) and
    its findings. Written atomically: concurrent runs never see a torn file,
    and the last writer wins."""

    def __init__(self, root: str, cache_dir: Optional[str] = None) -> None:
        self.dir = cache_dir_for(root, cache_dir)
        # a shared --cache-dir keeps projects apart by their root
        name = f"v{__version__}.json" if not cache_dir else (
            f"v{__version__}-{hashlib.sha1(os.path.abspath(root).encode()).hexdigest()[:12]}.json"
        )
        self.path = os.path.join(self.dir, name)
        self.entries: Dict[str, dict] = {}
        self.dirty = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            pass

    _keys: Dict[LintOptions, str] = {}

    @classmethod
    def options_key(cls, options: LintOptions) -> str:
        key = cls._keys.get(options)
        if key is None:  # asked for every file; most runs have one or two distinct options
            raw = json.dumps([__version__, _code_fingerprint(), asdict(options)], sort_keys=True)
            key = cls._keys[options] = hashlib.sha1(raw.encode()).hexdigest()[:16]
        return key

    def get(self, path: str, options: LintOptions) -> Optional[List[Finding]]:
        e = self.entries.get(os.path.abspath(path))
        if not e:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if e.get("m") != st.st_mtime_ns or e.get("s") != st.st_size or e.get("k") != self.options_key(options):
            return None
        try:
            findings = [finding_from_dict(d) for d in e["f"]]
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        for f in findings:
            f.path = path  # as this run names the file, not as the run that cached it did
        return findings

    def put(self, path: str, options: LintOptions, findings: List[Finding]) -> None:
        try:
            st = os.stat(path)
        except OSError:
            return
        self.entries[os.path.abspath(path)] = {
            "m": st.st_mtime_ns,
            "s": st.st_size,
            "k": self.options_key(options),
            "f": [finding_to_dict(f) for f in findings],
        }
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.dir, exist_ok=True)
            gi = os.path.join(self.dir, ".gitignore")
            if not os.path.exists(gi):
                with open(gi, "w") as fh:
                    fh.write("# Automatically created by gpulint.\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                # dumps, not dump: json.dump streams through the pure-Python encoder (10x slower here)
                fh.write(json.dumps(self.entries, separators=(",", ":")))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written is not an error


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
    path, options, keep_source = args
    with collector_paused():
        return lint_file(path, options, keep_source)


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
    from gpulint.discovery import force_excluded

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
    for path, options, s in todo:
        if use_cache and not keep_source:
            cache = caches.get(s.root)
            if cache is None:
                cache = caches[s.root] = Cache(s.root, cache_dir)
            hit = cache.get(path, options)
            if hit is not None:
                out.results.append(FileResult(path, hit))
                continue
        pending.append((path, options, s))

    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    args = [(p, o, keep_source) for p, o, _ in pending]
    if jobs > 1 and len(args) >= PARALLEL_MIN_FILES:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_lint_job, args, chunksize=max(1, len(args) // (jobs * 8))))
    else:
        results = [_lint_job(a) for a in args]

    for (path, options, s), res in zip(pending, results):
        out.results.append(res)
        if use_cache and not keep_source and res.error is None:
            caches[s.root].put(path, options, res.findings)
    for cache in caches.values():
        cache.save()
    out.results.sort(key=lambda r: r.path)
    return out
