"""File discovery: recurse into directories for the files the config's
`include` / `extend-include` name (default *.py, *.pyi and *.ipynb), skip the
usual vendored and generated folders, the config's `exclude` /
`extend-exclude`, and what `.gitignore` files ignore, as Ruff does.

Paths named on the command line are always linted: a named file, and
everything below a named folder except what the patterns exclude there.
Patterns are matched against each entry the walk finds (its name, and its
path from the config's root or the `.gitignore`'s folder), never against the
named folder or the folders above it, so `gpulint check build` lints
`build/a.py` (but not `build/.venv/x.py` or `build/sub/build/y.py`) even
though `build` is excluded by default, and a git-ignored folder named on the
command line is linted too, as in Ruff and git. `--force-exclude` applies the
excludes to the named paths and the folders above them as well."""

from __future__ import annotations

import errno
import os
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from gpulint.engine.config import DEFAULT_INCLUDE, ConfigResolver, Settings
from gpulint.engine.globs import PatternSet
from gpulint.fsutil import git_root

EXTENSIONS = (".py", ".pyi", ".ipynb")  # what DEFAULT_INCLUDE matches


class GitIgnore:
    """The .gitignore files (and .git/info/exclude) that apply to a path."""

    def __init__(self) -> None:
        self._specs: Dict[str, Optional[PatternSet]] = {}
        self._roots: Dict[str, Optional[str]] = {}

    def _repo_root(self, d: str) -> Optional[str]:
        return git_root(d, self._roots)

    def _spec(self, d: str) -> Optional[PatternSet]:
        if d not in self._specs:
            lines: List[str] = []
            for name in (".gitignore", os.path.join(".git", "info", "exclude")):
                p = os.path.join(d, name)
                try:
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        lines.extend(fh.read().splitlines())
                except OSError:
                    pass
            self._specs[d] = PatternSet(lines) if lines else None
        return self._specs[d]

    def ignored(self, path: str, is_dir: bool, abs_path: Optional[str] = None) -> bool:
        """Whether the rules ignore this entry of a walk. Only rules that match
        the entry itself count: the walk has already tested (and entered) the
        folders above it, or they were named on the command line."""
        path = abs_path or os.path.abspath(path)
        parent = os.path.dirname(path)
        root = self._repo_root(parent)
        if root is None:
            return False
        # directories from the repo root down to the path's parent; deeper files win
        dirs = []
        cur = parent
        while True:
            dirs.append(cur)
            if cur == root:
                break
            nxt = os.path.dirname(cur)
            if nxt == cur:
                break
            cur = nxt
        verdict = False
        for d in reversed(dirs):
            spec = self._spec(d)
            if spec is None:
                continue
            rel = os.path.relpath(path, d).replace(os.sep, "/")
            res = spec.check_entry(rel, is_dir)
            if res is not None:
                verdict = res
        return verdict


_ABS_ROOTS: Dict[str, str] = {}


def _excluded(path: str, settings: Settings, is_dir: Optional[bool] = None, abs_path: Optional[str] = None) -> bool:
    """Whether the config's exclude / extend-exclude patterns match the entry
    `path` itself (not a folder above it), by its name or by its path
    relative to the config's root. The walk passes what it already knows
    (whether it is a directory, its absolute path)."""
    patterns = settings.exclude_patterns
    if patterns is None:
        return False
    if is_dir is None:
        is_dir = os.path.isdir(path)
    if patterns.match_entry(os.path.basename(path), is_dir):
        return True
    rel = _rel_to_root(abs_path or os.path.abspath(path), settings)
    return rel is not None and patterns.match_entry(rel, is_dir)


def _rel_to_root(abs_path: str, settings: Settings) -> Optional[str]:
    """The path relative to the config's root, with "/", or None outside it."""
    root = _ABS_ROOTS.get(settings.root)
    if root is None:
        root = _ABS_ROOTS[settings.root] = os.path.abspath(settings.root)
    if abs_path.startswith(root) and abs_path[len(root): len(root) + 1] == os.sep:
        rel = abs_path[len(root) + 1:]
    elif abs_path == root or root == os.path.dirname(root):  # the root itself, or a root of "/"
        rel = os.path.relpath(abs_path, root)
    else:
        return None
    return rel.replace(os.sep, "/")


def _included(name: str, abs_dir: str, settings: Settings) -> bool:
    """Whether a file the walk found is one to lint (`include` / `extend-include`,
    matched against its name or its path relative to the config's root)."""
    if not settings.extend_include and settings.include == DEFAULT_INCLUDE:
        return name.endswith(EXTENSIONS)
    patterns = settings.include_patterns
    if patterns.match(name):
        return True
    rel = _rel_to_root(os.path.join(abs_dir, name), settings)
    return rel is not None and patterns.match(rel)


def force_excluded(path: str, settings: Settings) -> bool:
    """Whether an explicitly named path, or a folder above it below its
    config's root, is excluded by the config (`--force-exclude`). The root
    itself is not tested: a project checked out in a folder named `build`
    is still linted."""
    cur = os.path.abspath(path)
    root = os.path.abspath(settings.root)
    while cur != root:
        if _excluded(cur, settings):
            return True
        parent = os.path.dirname(cur)
        if parent == cur or not _is_under(parent, root):
            return False
        cur = parent
    return False


def _is_under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _dangling(path: str) -> str:
    """Why a symbolic link that does not resolve cannot be linted."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
    return "broken symbolic link"


def discover(
    paths: List[str],
    resolver: ConfigResolver,
    on_error: Callable[[str, str], None],
    respect_gitignore: bool = True,
    force_exclude: bool = False,
) -> Iterator[Tuple[str, Settings]]:
    """Yield (file, settings) for every file to lint. `on_error(path, why)` is
    called for a path that does not exist or cannot be listed. Explicit file
    paths are always linted, unless `force_exclude` applies the config's
    `exclude` / `extend-exclude` to them too (for pre-commit, which names
    every file)."""
    gitignore = GitIgnore()
    seen = set()
    for root in paths:
        if not os.path.lexists(root):
            on_error(root, "no such file or directory")
            continue
        if os.path.islink(root) and not os.path.exists(root):
            on_error(root, _dangling(root))
            continue
        if not os.path.isdir(root):
            # explicit files are always linted
            key = os.path.realpath(root)
            if key not in seen:
                settings = resolver.for_path(root)
                if force_exclude and force_excluded(root, settings):
                    continue
                seen.add(key)
                yield os.path.normpath(root), settings
            continue
        if force_exclude and force_excluded(root, resolver.for_path(root)):
            continue
        yield from _walk_dir(root, resolver, gitignore, on_error, seen, respect_gitignore)


def _walk_dir(root, resolver, gitignore, on_error, seen, respect_gitignore):
    visited_dirs = set()
    # (the directory as the user named it, the same directory as an absolute path, its real
    # path where known: a subdirectory that is no link is its parent's real path and its name)
    stack = [(root, os.path.abspath(root), None)]
    while stack:
        d, abs_d, real = stack.pop()
        if real is None:
            try:
                real = os.path.realpath(d)
            except OSError:
                real = d
        if real in visited_dirs:
            continue  # symlink loop
        visited_dirs.add(real)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            on_error(os.path.normpath(d), f"cannot list directory: {exc.strerror or exc}")
            continue
        settings = resolver.for_path(d)
        subdirs = []
        for entry in entries:
            path = entry.path
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                abs_path = os.path.join(abs_d, entry.name)
                if _excluded(path, resolver.for_path(path), True, abs_path):
                    continue
                if respect_gitignore and gitignore.ignored(path, True, abs_path):
                    continue
                subdirs.append((path, abs_path, None if entry.is_symlink() else os.path.join(real, entry.name)))
                continue
            if not _included(entry.name, abs_d, settings):
                continue
            abs_path = os.path.join(abs_d, entry.name)
            if entry.is_symlink() and not os.path.exists(path):
                on_error(os.path.normpath(path), _dangling(path))
                continue
            if _excluded(path, settings, False, abs_path):
                continue
            if respect_gitignore and gitignore.ignored(path, False, abs_path):
                continue
            # the directory's real path is known: only a link needs resolving
            key = os.path.realpath(path) if entry.is_symlink() else os.path.join(real, entry.name)
            if key in seen:
                continue
            seen.add(key)
            yield os.path.normpath(path), settings
        stack.extend(reversed(subdirs))
