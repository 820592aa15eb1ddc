"""What `gpulint server` computes, with no LSP library in sight: the lint of
an in-memory document (with the CLI's config resolution and engine), the
conversion between character offsets and LSP positions, and the text changes
behind each code action. `gpulint.frontends.server.protocol` turns these into LSP
messages with pygls.

Positions: the engine reports 1-based rows and 1-based character (code
point) columns. LSP wants 0-based lines and columns counted in the
negotiated encoding's code units (UTF-16 unless the client offers another),
with "\\n", "\\r\\n" and "\\r" as line ends, as gpulint's own `Source`.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from gpulint.engine.config import CONFIG_FILES, ConfigError, ConfigResolver, Settings
from gpulint.engine.discovery import discover, force_excluded
from gpulint.engine.lint import MAX_FILE_BYTES, LintError, LintOptions, collector_paused, parse
from gpulint.engine.project import ProjectLinter, project_roots
from gpulint.fix.apply import FixError, fix_source, newline_of, with_newline
from gpulint.edits import apply_edits
from gpulint.rule import INVALID_SYNTAX, SAFE, Edit, Finding, file_diagnostic
from gpulint.engine.runner import options_for
from gpulint.engine.suppress import NOQA_RE, Suppressions
from gpulint.engine.unreached import Projects, keep_reached

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
_LINE_END = re.compile(r"\r\n|\r|\n")


def code_units(s: str, encoding: str = UTF16) -> int:
    """The length of `s` in the encoding's code units."""
    if encoding == UTF32 or s.isascii():
        return len(s)
    if encoding == UTF8:
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class LineIndex:
    """Offsets <-> (0-based line, column in code units) for one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(text)]

    def content_end(self, line: int) -> int:
        """Offset where the line's content ends (before its line break)."""
        if line + 1 < len(self.starts):
            end = self.starts[line + 1]
            if end - 2 >= self.starts[line] and self.text.startswith("\r\n", end - 2):
                return end - 2
            return end - 1
        return len(self.text)

    def offset_of_rowcol(self, row: int, col: int) -> int:
        """Offset of a finding's 1-based (row, character column), clamped to the text."""
        line = min(max(row - 1, 0), len(self.starts) - 1)
        start = self.starts[line]
        return min(start + max(col - 1, 0), self.content_end(line))

    def position(self, offset: int, encoding: str = UTF16) -> Tuple[int, int]:
        offset = min(max(offset, 0), len(self.text))
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # the last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo, code_units(self.text[self.starts[lo] : offset], encoding)

    def offset(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Offset of an LSP position; past the end of a line means its end (as LSP says)."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start, end = self.starts[line], self.content_end(line)
        content = self.text[start:end]
        if encoding == UTF32 or content.isascii():
            return start + min(max(character, 0), len(content))
        used = 0
        for k, ch in enumerate(content):
            n = code_units(ch, encoding)
            if used + n > character:
                return start + k
            used += n
        return end


@dataclass(frozen=True)
class TextChange:
    """Replace text[start:end] with new_text (character offsets)."""

    start: int
    end: int
    new_text: str


@dataclass
class LintedDocument:
    text: str
    path: str
    index: LineIndex
    findings: List[Finding] = field(default_factory=list)
    options: Optional[LintOptions] = None
    # text -> findings, as the document was linted (in its project): fix-all re-lints with it
    lint: Optional[Callable[[str], List[Finding]]] = field(default=None, repr=False)
    # why the document has no diagnostics (excluded, syntax error, config error...)
    skipped: Optional[str] = None
    config_error: Optional[str] = None
    # computed on the first code action request that needs them, once per text
    _fix_all: Optional[Tuple[Optional[List[TextChange]]]] = field(default=None, repr=False)
    _rows: Optional[Dict[int, Optional[Tuple[int, str]]]] = field(default=None, repr=False)

    def span(self, f: Finding) -> Tuple[int, int]:
        return self.index.offset_of_rowcol(f.row, f.col), self.index.offset_of_rowcol(f.end_row, f.end_col)


class DocumentLinter:
    """Lints in-memory documents with the settings the CLI would use for their
    paths. The config files seen are watched (stat) on every lint: an edited
    pyproject.toml takes effect on the next keystroke, with no restart.

    A document is linted as a file of its project, the workspace (`cwd`):
    every Python file the config includes there is read for its summary
    (once, then again only when it changes on disk; an open document's
    buffer instead of its disk copy), so the document gets the facts that
    `gpulint check .` in the workspace would give it (a helper called every
    step from a training loop in another file, the class every caller
    passes). A document outside the workspace, or a workspace of more than
    WORKSPACE_MAX_FILES files, sees the project files it imports (a few
    imports deep), as `gpulint check FILE` does."""

    WORKSPACE_MAX_FILES = 5000

    def __init__(self, cwd: Optional[str] = None, config: Optional[str] = None, workspace: bool = False) -> None:
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.config = config
        self._resolver: Optional[ConfigResolver] = None
        self._stats: Dict[str, Optional[Tuple[int, int, int]]] = {}
        self.project = ProjectLinter()
        self.workspace = workspace  # `cwd` is the editor's workspace folder
        self._files: Optional[List[str]] = None  # the workspace's Python files, found once
        # the workspace's files have been read for their summaries (`read_workspace`); until
        # then a document sees the files it imports, so its first diagnostics need not wait
        self.workspace_read = False
        # the projects' text, for the findings in code that nothing reaches (read once, until a save)
        self.reach = Projects(keep=True)

    def workspace_files(self) -> List[str]:
        """The Python files `gpulint check .` would lint in the workspace
        (found once; again after `forget_files`)."""
        if self._files is None:
            found: List[str] = []
            if self.workspace:
                try:
                    resolver = ConfigResolver(self.config, cwd=self.cwd)
                    for path, _ in discover([self.cwd], resolver, lambda p, why: None):
                        if path.endswith((".py", ".pyi")):
                            found.append(os.path.abspath(path))
                        if len(found) > self.WORKSPACE_MAX_FILES:
                            found = []
                            break
                except (ConfigError, OSError):
                    found = []
            self._files = found
        return self._files

    def workspace_roots(self) -> List[str]:
        """Where module names start in the workspace, as for `gpulint check .` run there."""
        return project_roots([self.cwd], [self.settings_for(os.path.join(self.cwd, "__init__.py"))])

    def read_workspace(self) -> None:
        """Read every workspace file for its summary (the language server
        does it in a background thread after `initialize`)."""
        try:
            files = self.workspace_files()
            if files:
                self.project.read(files, self.workspace_roots())
        except ConfigError:
            return
        self.workspace_read = True

    def forget_files(self) -> None:
        """A file was saved, created, deleted or renamed: find the workspace's
        files again, and read the project's text again when next needed."""
        self._files = None
        self.reach.forget()

    @staticmethod
    def _stat(path: str) -> Optional[Tuple[int, int, int]]:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _watched_for(self, path: str) -> List[str]:
        if self.config is not None:
            return [os.path.abspath(self.config)]
        out = []
        d = os.path.dirname(os.path.abspath(path))
        while True:
            out.extend(os.path.join(d, name) for name in CONFIG_FILES)
            parent = os.path.dirname(d)
            if parent == d:
                return out
            d = parent

    def settings_for(self, path: str) -> Settings:
        changed = False
        for p in self._watched_for(path):
            st = self._stat(p)
            if p in self._stats and self._stats[p] != st:
                changed = True
            self._stats[p] = st
        if changed or self._resolver is None:
            self._resolver = None
            self._resolver = ConfigResolver(self.config, cwd=self.cwd)
        return self._resolver.for_path(path)

    def lint(self, text: str, path: str, on_disk: bool = True,
             overlays: Optional[Dict[str, str]] = None) -> LintedDocument:
        """Lint `text` as the file at `path` would be linted (the disk copy is
        never read). `on_disk` False: an unsaved buffer, named by a path in
        the workspace for its config; never excluded. `overlays`: the other
        open documents (path -> text), read instead of their disk copies."""
        doc = LintedDocument(text, path, LineIndex(text))
        try:
            settings = self.settings_for(path)
        except ConfigError as exc:
            doc.skipped = doc.config_error = str(exc)
            return doc
        if on_disk and force_excluded(path, settings):
            doc.skipped = "excluded by the config's exclude / extend-exclude"
            return doc
        if len(text) > MAX_FILE_BYTES:
            doc.skipped = f"too large to lint ({len(text) // (1024 * 1024)} MB)"
            return doc
        doc.options = options_for(settings, path)
        doc.lint = self.in_project(path, settings, overlays)
        try:
            res = doc.lint(text)
        except LintError as exc:
            doc.skipped = str(exc)
            if exc.location is not None:  # a syntax error: shown where it is, as `check` reports it
                message = f"SyntaxError: {exc.detail}" if exc.detail else str(exc)
                doc.findings = [file_diagnostic(path, message, INVALID_SYNTAX, exc.location)]
            return doc
        except Exception as exc:  # a bug in gpulint must not take the server down
            doc.skipped = f"internal error: {type(exc).__name__}: {exc} (please report this)"
            return doc
        doc.findings = res
        return doc

    def lint_notebook(self, cells: Sequence[Tuple[bool, str]], path: str) -> Dict[int, LintedDocument]:
        """A notebook's cells, `(is code, text)` in order, linted as `gpulint
        check` lints the `.ipynb` (cells joined, IPython lines skipped): each
        cell's index -> its document, with its findings' rows in the cell."""
        from gpulint.engine.notebook import Notebook, NotebookError, lint_notebook

        docs = {i: LintedDocument(text, path, LineIndex(text)) for i, (_, text) in enumerate(cells)}
        try:
            settings = self.settings_for(path)
        except ConfigError as exc:
            for doc in docs.values():
                doc.skipped = doc.config_error = str(exc)
            return docs
        book = {"cells": [{"cell_type": "code" if code else "markdown", "metadata": {}, "source": text,
                           **({"outputs": [], "execution_count": None} if code else {})} for code, text in cells],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
        try:
            import json

            found = lint_notebook(Notebook.from_text(json.dumps(book)), path, options_for(settings, path))
        except (LintError, NotebookError) as exc:
            if exc.location is not None and exc.cell is not None and exc.cell - 1 in docs:
                message = f"SyntaxError: {exc.detail}" if exc.detail else str(exc)
                docs[exc.cell - 1].findings = [file_diagnostic(path, message, INVALID_SYNTAX, exc.location, exc.cell)]
            for doc in docs.values():
                doc.skipped = str(exc)
            return docs
        for f in found:
            if f.cell is not None and f.cell - 1 in docs:
                docs[f.cell - 1].findings.append(f)
        return docs

    def in_project(self, path: str, settings: Settings, overlays: Optional[Dict[str, str]] = None):
        """text -> its findings as the file `path` of the workspace's project
        (raises LintError where the text does not parse): what the document
        is linted with, and what its fix-all re-lints with after each pass."""
        files = self.workspace_files() if self.workspace_read else []
        if files and os.path.abspath(path) in set(files):  # the workspace's project, as `gpulint check .`
            extra, roots, named = files, self.workspace_roots(), [self.cwd]
        else:  # the files it imports, as `gpulint check FILE`
            extra, roots, named = [], project_roots([path], [settings]), []
        options = options_for(settings, path)

        def lint(text: str) -> List[Finding]:
            with collector_paused():
                res = self.project.lint(text, path, options, roots, overlays=overlays, extra=extra)
            if res.error is not None:
                if res.error_code == INVALID_SYNTAX:
                    raise LintError(res.error, res.error_location, res.error_detail)
                raise RuntimeError(res.error)
            texts = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
            texts[os.path.abspath(path)] = text
            return keep_reached(path, res.findings, named, texts, self.reach)

        return lint


# ------------------------------------------------------------------ code actions
def fix_changes(doc: LintedDocument, f: Finding) -> List[TextChange]:
    """The finding's fix as text changes, in the document's line endings."""
    if f.fix is None:
        return []
    newline = newline_of(doc.text)
    out = []
    for e in sorted(f.fix.edits, key=lambda e: (e.start, e.end)):
        if e.start == e.end and not e.content:
            continue  # a zero-width anchor the fix loop uses; nothing to apply
        content = with_newline(e.content, newline)
        out.append(TextChange(e.start, e.end, content))
    return out


def apply_changes(text: str, changes: Sequence[TextChange]) -> str:
    """Apply non-overlapping changes, as the engine applies a fix's edits."""
    return apply_edits(text, [Edit(c.start, c.end, c.new_text) for c in changes])


def diff_changes(old: str, new: str) -> List[TextChange]:
    """Line-level changes that turn `old` into `new` (what an editor keeps
    markers and folds across better than one whole-text replacement)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    offsets = [0]
    for line in a:
        offsets.append(offsets[-1] + len(line))
    changes = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changes.append(TextChange(offsets[i1], offsets[i2], "".join(b[j1:j2])))
    return changes


def fix_all_changes(doc: LintedDocument) -> Optional[List[TextChange]]:
    """Every safe fix, to a fixpoint, exactly as `gpulint fix` makes them;
    None when there is nothing to fix (or the fix would not parse)."""
    if doc._fix_all is None:
        doc._fix_all = (_fix_all(doc),)
    return doc._fix_all[0]


def _fix_all(doc: LintedDocument) -> Optional[List[TextChange]]:
    if doc.options is None or not any(f.fix is not None and f.fix.applicability == SAFE for f in doc.findings):
        return None
    try:
        result = fix_source(doc.text, doc.path, doc.options, unsafe=False, newline=newline_of(doc.text), lint=doc.lint)
    except (FixError, LintError):
        return None
    if result.text == doc.text:
        return None
    return diff_changes(doc.text, result.text)


def _commentable_rows(text: str) -> Dict[int, Optional[Tuple[int, str]]]:
    """Rows whose end may take a comment (a NEWLINE or NL token ends them:
    not inside a string, not before a backslash continuation), each with its
    comment's (column, text) if it has one."""
    rows: Dict[int, Optional[Tuple[int, str]]] = {}
    comments: Dict[int, Tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
            elif tok.type in (tokenize.NEWLINE, tokenize.NL):
                rows[tok.start[0]] = None
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {}
    for row in rows:
        rows[row] = comments.get(row)
    return rows


def noqa_change(doc: LintedDocument, f: Finding) -> Optional[TextChange]:
    """Add `# noqa: CODE` to the finding's line (or its statement's first
    line), merged into a `# noqa: ...` already there. Offered only when the
    result still parses and really suppresses the finding."""
    if doc._rows is None:
        doc._rows = _commentable_rows(doc.text)
    rows = doc._rows
    for row in dict.fromkeys((f.row, f.noqa_row)):
        if row not in rows:
            continue
        line = row - 1
        start, end = doc.index.starts[line], doc.index.content_end(line)
        comment = rows[row]
        change = None
        if comment is not None:
            col, text = comment
            m = NOQA_RE.search(text)
            if m and m.group("codes"):
                at = start + col + m.end("codes")
                change = TextChange(at, at, f", {f.code}")
            elif not m:
                change = TextChange(end, end, f"  # noqa: {f.code}")
        else:
            content = doc.text[start:end]
            stripped = start + len(content.rstrip(" \t\f"))
            change = TextChange(stripped, end, f"  # noqa: {f.code}")
        if change is None:
            continue
        new = apply_changes(doc.text, [change])
        if not Suppressions(new).suppressed(f.code, f.name, {f.row, f.noqa_row}):
            continue
        try:
            parse(new, doc.path)
        except LintError:
            continue
        return change
    return None


def ranges_overlap(a: Tuple[int, int], b: Tuple[int, int]) -> bool:
    """Closed ranges: a cursor at either end of a finding touches it."""
    return a[0] <= b[1] and b[0] <= a[1]


__all__ = [
    "UTF8", "UTF16", "UTF32", "code_units", "LineIndex", "TextChange", "LintedDocument", "DocumentLinter",
    "fix_changes", "apply_changes", "diff_changes", "fix_all_changes", "noqa_change", "ranges_overlap",
]
