"""Drop the findings that sit in code nothing in the project reaches.

After every file is linted, each finding in a definition is checked against
the whole project it belongs to (`gpulint.model.project.reach`): a class
that nothing builds and a function that nothing calls never run, so what
they would cost is no finding. The project is the git work tree around the
file, or else the folder named on the command line that holds it. Each of
its files is read once per run, only when a finding needs it.

A module file beside a package of its own name (`a/policy.py` and
`a/policy/__init__.py`) is dead as a whole, in any project: every import
finds the package first. Not where the file has a `__main__` block, or
where a file of the project names it (`python a/policy.py`).

What is not checked, so that a finding is never dropped on a guess:

- an installable package, in the project or any folder of it above the
  file (a `pyproject.toml` with a `[project]` or Poetry table, a `setup.cfg`
  with `[metadata]`, a `PKG-INFO` or `.dist-info`, or a package around the
  file that sets `__version__`): its users call what it never calls itself.
  Measured on the labelled corpora, this keeps every true positive of the
  PyPI libraries;
- a file linted alone outside a git work tree (from stdin, the text read
  stands for the file's);
- notebooks;
- a project of more than `MAX_FILES` files or `MAX_BYTES` of text.

The editor server and the flake8 plugin, which ask for one file at a time,
keep a `Projects`: each project's text is read once and kept until
`forget()` (the server forgets when a file is saved, created or deleted),
and a file is parsed again only when its text changed.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from gpulint.engine.files import FileResult
from gpulint.fsutil import git_root
from gpulint.model.project.modules import is_package
from gpulint.model.project.reach import PythonFile, Reach
from gpulint.registry import suppression_judges
from gpulint.rule import Finding

MAX_FILES = 10_000
MAX_BYTES = 64 * 1024 * 1024
MAX_TEXT_FILE = 1024 * 1024
# files that can name code: configs, scripts, docs (anything else is data)
TEXT_SUFFIXES = frozenset({
    ".py", ".pyi", ".ipynb", ".yaml", ".yml", ".json", ".jsonnet", ".toml", ".cfg", ".ini", ".conf", ".gin",
    ".sh", ".bash", ".zsh", ".txt", ".md", ".rst", ".mk", ".slurm", ".sbatch", ".bat", ".ps1",
})
# documentation files: where prose mentions a file rather than runs it
_PROSE = (".md", ".rst", ".txt")
_PYTHON = re.compile(r"\bpython[0-9.]*[ \t]")
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv", "site-packages", ".tox", ".eggs",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gpulint_cache"})


def scope_of(path: str, named_dirs: Sequence[str], memo: Optional[Dict[str, Optional[str]]] = None) -> Optional[str]:
    """The project a file belongs to: its git work tree, else the outermost
    folder named on the command line that holds it."""
    root = git_root(os.path.dirname(path), memo)
    if root is not None:
        return root
    holding = [d for d in named_dirs if path.startswith(d.rstrip(os.sep) + os.sep)]
    return min(holding, key=len) if holding else None


_SETS_VERSION = re.compile(r"^[ \t]*(?:__version__\s*[:=]|from\s+\S+\s+import\s+[^#\n]*\b__version__\b)", re.M)


def _installable(d: str) -> bool:
    """`d` is the root of a distribution, or a package that sets its version.
    A `setup.py` alone is not enough: research code ships one to build its
    CUDA extensions (`lib/setup.py` of faster-rcnn.pytorch)."""
    if os.path.exists(os.path.join(d, "PKG-INFO")):
        return True
    for name, marks in (("pyproject.toml", ("[project]", "[tool.poetry]")), ("setup.cfg", ("[metadata]",)),
                        ("__init__.py", ())):
        try:
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                text = f.read(MAX_TEXT_FILE)
        except OSError:
            continue
        if any(m in text for m in marks) or (name == "__init__.py" and _SETS_VERSION.search(text)):
            return True
    try:
        return any(e.endswith((".dist-info", ".egg-info")) for e in os.listdir(d))
    except OSError:
        return False


def _walk(root: str) -> Iterator[str]:
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")
                   and not os.path.exists(os.path.join(d, x, "pyvenv.cfg"))]
        for f in files:
            ext = os.path.splitext(f)[1].lower()
            if ext in TEXT_SUFFIXES or not ext:
                yield os.path.join(d, f)


def _module_stem(path: str) -> str:
    base = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if base == "__init__" else base


class Project:
    """The text of one project's files, read once, and what reaches what in it."""

    def __init__(self, root: str, overlays: Optional[Dict[str, str]] = None,
                 texts: Optional[Dict[str, str]] = None,
                 parsed: Optional[Dict[str, Tuple[str, Optional[PythonFile]]]] = None) -> None:
        """`texts`: the project's files as read before (copied, not changed);
        `parsed`: path -> (text, its parse), kept across projects by `Projects`."""
        self.root = root
        self.texts: Optional[Dict[str, str]] = dict(texts) if texts is not None else self._read(root)
        if self.texts is not None:
            for path, text in (overlays or {}).items():
                if path.startswith(root.rstrip(os.sep) + os.sep):
                    self.texts[path] = text  # a buffer not saved yet, or stdin
        self._parsed: Dict[str, Tuple[str, Optional[PythonFile]]] = parsed if parsed is not None else {}
        self._holding: Dict[str, List[Tuple[str, str]]] = {}  # word -> the files that hold it
        self._modules: Optional[Set[Tuple[str, ...]]] = None
        self.reach = Reach(self._files_with, self._parse, self._module_exists)

    @staticmethod
    def _read(root: str) -> Optional[Dict[str, str]]:
        texts: Dict[str, str] = {}
        total = 0
        for path in _walk(root):
            try:
                if not os.path.isfile(path):
                    continue
                size = os.path.getsize(path)
                if size > MAX_TEXT_FILE:
                    continue
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if b"\0" in data[:4096]:
                continue  # binary
            total += len(data)
            if len(texts) >= MAX_FILES or total > MAX_BYTES:
                return None
            texts[path] = data.decode("utf-8", "replace")
        return texts

    def _files_with(self, word: str) -> List[Tuple[str, str]]:
        """The files whose text holds `word`, scanned once per word: a class's
        name is asked for its uses and for its subclasses, once per method."""
        if word not in self._holding:
            self._holding[word] = list(self._scan(word))
        return self._holding[word]

    def _scan(self, word: str) -> Iterator[Tuple[str, str]]:
        assert self.texts is not None
        pattern: Optional[re.Pattern] = None
        for path, text in self.texts.items():
            if word not in text:
                continue
            if path.endswith((".py", ".pyi")):
                yield "py", path
                continue
            if pattern is None:
                pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])")
            if pattern.search(text):
                yield "text", path

    def _parse(self, path: str) -> Optional[PythonFile]:
        text = self.texts.get(path) if self.texts is not None else None
        if text is None:
            return None
        kept = self._parsed.get(path)
        if kept is not None and (kept[0] is text or kept[0] == text):
            return kept[1]
        pf: Optional[PythonFile] = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pf = PythonFile(ast.parse(text), _module_stem(path), self._module_parts(path), is_package(path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pf = None
        self._parsed[path] = (text, pf)
        return pf

    def _module_exists(self, parts: Tuple[str, ...]) -> bool:
        """A Python file of the project is the module (or package) `parts`."""
        if self._modules is None:
            self._modules = {self._module_parts(p) for p in (self.texts or ()) if p.endswith(".py")}
        return parts in self._modules

    def _module_parts(self, path: str) -> Tuple[str, ...]:
        """`path` below the project's root as module parts (the folder's, for
        `__init__.py`): `a/b/c.py` is ("a", "b", "c")."""
        parts = os.path.relpath(path, self.root).split(os.sep)
        return tuple(parts[:-1]) + (() if is_package(path) else (os.path.splitext(parts[-1])[0],))

    def shadowed(self, path: str) -> bool:
        """`path` (beside a package of its own name, `_beside_its_package`)
        never runs: every `import a.policy` finds the package `a/policy/`
        first, it has no `__main__` block, and no file of the project names
        it to run it (`python a/policy.py` in a script, a README)."""
        assert self.texts is not None
        text = self.texts.get(path)
        if text is None or "__main__" in text:
            return False
        name = os.path.basename(path)
        named = re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(name) + r"(?![A-Za-z0-9_])")
        for p, t in self.texts.items():
            if p == path or name not in t:
                continue
            if not p.endswith(_PROSE):
                if named.search(t):
                    return False
                continue
            # prose names a file to show it (a link to it on GitHub), not to run it: there
            # only a command line counts, `python` before the name on its line
            for line in t.splitlines():
                runs = _PYTHON.search(line) if name in line else None
                if runs is not None and any(m.start() > runs.start() for m in named.finditer(line)):
                    return False
        return True

    def dead(self, path: str, line: int, col: int = 0) -> bool:
        pf = self._parse(path)
        return pf is not None and self.reach.dead(pf, line, col)


def _beside_its_package(path: str) -> bool:
    """`a/policy.py` beside a regular package `a/policy/` (with an
    `__init__.py`): Python imports the package, never the file (RL4LMs's
    stale `text_generation/policy.py` beside `text_generation/policy/`)."""
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    return ext == ".py" and stem != "__init__" and os.path.isfile(os.path.join(folder, stem, "__init__.py"))


def _in_package(path: str, root: str, seen: Dict[str, bool]) -> bool:
    """An installable package holds `path`, at `root` or in a folder below it."""
    d = os.path.dirname(path)
    while True:
        if d not in seen:
            seen[d] = _installable(d)
        if seen[d]:
            return True
        if d == root or len(d) <= len(root):
            return False
        d = os.path.dirname(d)


class Projects:
    """Projects by root, each read once: one run of `check`, or the life of
    the editor server or a flake8 process (until `forget`)."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep  # keep each project's text for later questions (server, flake8)
        self._texts: Dict[str, Optional[Dict[str, str]]] = {}
        self._parsed: Dict[str, Tuple[str, Optional[PythonFile]]] = {}
        self._projects: Dict[str, Optional[Project]] = {}
        self.installable: Dict[str, bool] = {}
        self.git_roots: Dict[str, Optional[str]] = {}

    def forget(self) -> None:
        """Files changed on disk: read every project again when next asked."""
        self._texts.clear()
        self._projects.clear()
        self.installable.clear()
        self.git_roots.clear()

    def get(self, root: str, overlays: Dict[str, str]) -> Optional[Project]:
        if not self.keep:
            if root not in self._projects:
                project = Project(root, overlays)
                self._projects[root] = project if project.texts is not None else None
            return self._projects[root]
        if root not in self._texts:
            self._texts[root] = Project._read(root)
        texts = self._texts[root]
        if texts is None:
            return None
        # fresh per question: the overlays (the buffers being edited) change between them
        return Project(root, overlays, texts=texts, parsed=self._parsed)


def keep_reached(path: str, findings: List[Finding], named_dirs: Sequence[str], overlays: Dict[str, str],
                 projects: Projects) -> List[Finding]:
    """`findings` of the file at `path` less those in definitions nothing reaches.
    `named_dirs`: absolute folders named on the command line (the project is
    the outermost that holds the file when no git work tree does);
    `overlays`: absolute path -> the text to read instead of the disk copy."""
    if not findings or path.endswith(".ipynb"):
        return findings
    path = os.path.abspath(path)
    root = scope_of(path, named_dirs, projects.git_roots)
    if root is None:
        return findings
    if _beside_its_package(path):
        project = projects.get(root, overlays)
        if project is not None and project.shadowed(path):
            return [f for f in findings if f.is_diagnostic]
    if _in_package(path, root, projects.installable):
        return findings
    project = projects.get(root, overlays)
    if project is None or path not in project.texts:
        return findings
    return [f for f in findings if f.is_diagnostic or _about_comments(f) or not project.dead(path, f.row, f.col)]


def _about_comments(f: Finding) -> bool:
    """A finding about a comment (unused-noqa), which is unused whether or not its code runs."""
    return f.code in suppression_judges()


def drop_unreached(results: List[FileResult], named: Sequence[str],
                   overlays: Optional[Dict[str, str]] = None) -> None:
    """Remove from `results` the findings in definitions nothing reaches.
    `named`: the paths named on the command line; `overlays`: texts to read
    instead of a file's bytes on disk (path -> text)."""
    named_dirs = [os.path.abspath(p) for p in named if os.path.isdir(p)]
    overlays = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
    projects = Projects()
    for res in results:
        kept = keep_reached(res.path, res.findings, named_dirs, overlays, projects)
        if len(kept) != len(res.findings):
            res.findings = kept
