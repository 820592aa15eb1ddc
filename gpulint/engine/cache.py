"""The cache of a run's results: per file its findings and summary, keyed on
the file (mtime and size), the options it was linted with and the project
facts it was read with; and the project of the last run (which files it read
for their summaries), so that a warm run re-reads nothing and one changed
file re-reads it and the files whose facts depend on it (docs/architecture.md)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from typing import Dict, List, Optional, Sequence

from gpulint import __version__
from gpulint.engine.files import FileResult
from gpulint.engine.lint import LintOptions, ProjectInput
from gpulint.model.project.tables import digest, is_empty
from gpulint.rule import Edit, Finding, Fix

CACHE_DIR = ".gpulint_cache"


def table_key(table: Optional[dict]) -> str:
    """What a file's findings depend on beyond its own text: the digest of
    the project facts it was read with ("" for none)."""
    return "" if table is None or is_empty(table) else digest(table)


def facts_key(res: FileResult) -> str:
    """The key of the facts a result was read with."""
    return table_key(res.table) if res.table is not None else res.facts_key


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
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gpulint/, not engine/
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


# the changed entries are kept beside the whole cache while they are at most
# this share of it (or DELTA_MIN entries)
DELTA_SHARE = 0.05
DELTA_MIN = 64


class Cache:
    """One JSON file per project root and gpulint version: for each file its
    mtime, size, the key of the options it was linted with (gpulint version,
    a fingerprint of gpulint's code, the effective rules and fix policy) and
    its findings. Written atomically: concurrent runs never see a torn file,
    and the last writer wins."""

    def __init__(self, root: str, cache_dir: Optional[str] = None, persist: bool = True) -> None:
        """`persist` False: a cache in memory only, never read from or saved to disk."""
        self.persist = persist
        self.dir = cache_dir_for(root, cache_dir)
        # a shared --cache-dir keeps projects apart by their root
        name = f"v{__version__}.json" if not cache_dir else (
            f"v{__version__}-{hashlib.sha1(os.path.abspath(root).encode()).hexdigest()[:12]}.json"
        )
        self.path = os.path.join(self.dir, name)
        # the entries changed since the whole cache was last written, kept beside it
        # (`save`): a run that re-lints a few files writes those, not every entry
        self.delta_path = self.path + ".delta"
        self.entries: Dict[str, dict] = {}
        self.dirty = False
        self.names: Dict[str, List[str]] = {}  # path -> its module names, as cached (see `names_for`)
        self.delta: Dict[str, dict] = {}  # what the file beside holds, and this run's changes
        self.whole = False  # the whole cache was read from disk
        self._read_summaries: Dict[str, tuple] = {}  # path -> (its summary's text, the summary): `summary_of`
        if not persist:
            return
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                self.entries = data
                self.whole = True
        except (OSError, ValueError):
            pass
        if self.whole:
            try:
                with open(self.delta_path, encoding="utf-8") as fh:
                    delta = json.load(fh)
                if isinstance(delta, dict):
                    self.entries.update(delta)
                    self.delta = delta
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

    def is_cached(self, path: str, options: LintOptions) -> bool:
        """The cache holds the result of `path` as it is now, with these options."""
        e = self.entries.get(os.path.abspath(path))
        if not e or e.get("k") != self.options_key(options):
            return False
        try:
            st = os.stat(path)
        except OSError:
            return False
        return e.get("m") == st.st_mtime_ns and e.get("s") == st.st_size

    def get(self, path: str, options: LintOptions, names: Optional[Sequence[str]] = None,
            summary: bool = True) -> Optional[FileResult]:
        """The cached result of `path` (its findings, summary and the key of
        the facts it was read with), if the file and options are unchanged;
        with `names`, only if it was also read as the module of these names
        (a summary depends on them). With `summary` False, the result's
        summary is left out (None) until `summary_of` reads it: a run whose
        files and project are all unchanged needs none of them."""
        e = self.entries.get(os.path.abspath(path))
        if not e or (names is not None and e.get("n") != list(names)):
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
        if "n" in e:
            self.names[path] = e["n"]
        return FileResult(path, findings, summary=self.summary_of(path) if summary else None,
                          facts_key=e.get("t", ""), deferred=bool(e.get("d")), accelerator=e.get("a", True))

    def summary_of(self, path: str) -> Optional[dict]:
        """The summary cached for `path` (None where it has none). On disk each
        is kept as JSON text inside the cache's JSON, read only when asked: the
        summaries are most of the cache's bytes, and a warm run reads none."""
        key = os.path.abspath(path)
        e = self.entries.get(key)
        y = e.get("y") if isinstance(e, dict) else None
        if isinstance(y, str):
            read = self._read_summaries.get(key)
            if read is None or read[0] is not y:  # (an entry put again holds other text)
                try:
                    read = self._read_summaries[key] = (y, json.loads(y))
                except ValueError:
                    return None
            y = read[1]
        return y if isinstance(y, dict) else None

    def put(self, path: str, options: LintOptions, res: FileResult, names: Sequence[str] = ()) -> None:
        try:
            st = os.stat(path)
        except OSError:
            return
        key = os.path.abspath(path)
        self.entries[key] = self.delta[key] = {
            "n": list(names),
            "m": st.st_mtime_ns,
            "s": st.st_size,
            "k": self.options_key(options),
            "f": [finding_to_dict(f) for f in res.findings],
            # (as text on disk: `summary_of`)
            "y": json.dumps(res.summary, separators=(",", ":")) if self.persist and res.summary is not None
            else res.summary,
            "t": facts_key(res),
            "d": res.deferred,
            "a": res.accelerator,
        }
        self.dirty = True

    def put_missing(self, results: Dict[str, FileResult], options: LintOptions, inputs: Dict[str, ProjectInput]) -> None:
        """Put each result that the cache does not hold as its file is now
        (a file that could not be read is never cached)."""
        for path, res in results.items():
            if res.error is None and not self.is_cached(path, options):
                self.put(path, options, res, inputs[path].names)

    # the entry that records the last run's project (not a path: paths are absolute)
    PROJECT_KEY = " project"

    def names_for(self, path: str, roots_key: str) -> Optional[List[str]]:
        """The module names cached for `path`, if they were found under the same roots."""
        e = self.entries.get(self.PROJECT_KEY)
        if not isinstance(e, dict) or e.get("roots") != roots_key:
            return None
        return self.names.get(path)

    def previous_context(self, linted: str) -> Optional[List[str]]:
        """The files the last run over the same linted files read for their
        summaries only, or None."""
        e = self.entries.get(self.PROJECT_KEY)
        if not isinstance(e, dict) or e.get("files") != linted:
            return None
        return [c[0] for c in e.get("context", ())]

    def project_unchanged(self, linted: str) -> bool:
        """The last run read the same linted files as one project, and none of
        the files it read only for their summaries (context) has changed:
        with every linted file a cache hit, the project's facts are the same."""
        e = self.entries.get(self.PROJECT_KEY)
        if not isinstance(e, dict) or e.get("files") != linted:
            return False
        for path, mtime, size in e.get("context", ()):
            try:
                st = os.stat(path)
            except OSError:
                return False
            if st.st_mtime_ns != mtime or st.st_size != size:
                return False
        return True

    def put_project(self, linted: str, context: Sequence[str], roots_key: str = "") -> None:
        stats = []
        for path in context:
            try:
                st = os.stat(path)
            except OSError:
                continue
            stats.append([os.path.abspath(path), st.st_mtime_ns, st.st_size])
        entry = {"files": linted, "context": sorted(stats), "roots": roots_key}
        if self.entries.get(self.PROJECT_KEY) != entry:
            self.entries[self.PROJECT_KEY] = self.delta[self.PROJECT_KEY] = entry
            self.dirty = True

    def save(self) -> None:
        if not self.dirty or not self.persist:
            return
        try:
            os.makedirs(self.dir, exist_ok=True)
            gi = os.path.join(self.dir, ".gitignore")
            if not os.path.exists(gi):
                with open(gi, "w") as fh:
                    fh.write("# Automatically created by gpulint.\n*\n")
            # a few changed entries go to the file beside the whole cache (rewriting 5,000
            # entries for one changed file took longer than linting it); past DELTA_SHARE
            # of the entries, the whole cache is written again and the file beside removed
            small = self.whole and len(self.delta) <= max(DELTA_MIN, len(self.entries) * DELTA_SHARE)
            self._write(self.delta_path if small else self.path, self.delta if small else self.entries)
            if not small:
                try:
                    os.remove(self.delta_path)
                except OSError:
                    pass
        except OSError:
            pass  # a cache that cannot be written is not an error

    def _write(self, path: str, data: dict) -> None:
        """`data` as JSON to `path`, atomically."""
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # dumps, not dump: json.dump streams through the pure-Python encoder (10x slower here)
            fh.write(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, path)
