"""A file to its findings: read it, decode it, and lint it as Python or as a
notebook, turning what goes wrong into the file's one-line error (reported
as a finding of its own: `invalid-syntax`, `io-error`, `internal-error`).

Above both the engine (Python text) and the notebook reader, which uses the
engine: the engine never reaches up to notebooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from gpulint.engine.lint import LintError, LintOptions, ProjectInput, decode_source, lint_module, read_bytes
from gpulint.rule import INTERNAL_ERROR, INVALID_SYNTAX, IO_ERROR, Finding, file_diagnostic


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None  # why the file could not be checked, one line
    source: Optional[str] = None  # kept only when asked (fix/diff)
    # what kind of failure `error` is, and where (a syntax error's position)
    error_code: str = IO_ERROR
    error_location: Optional[Tuple[int, int]] = None
    error_cell: Optional[int] = None
    error_detail: str = ""
    # for the project's call graph: the file's summary, and the facts table it was read with
    summary: Optional[dict] = None
    table: Optional[dict] = None
    facts_key: str = ""  # the table's key (`cache.table_key`), where only that is known (a cache hit)
    deferred: bool = False  # no summary yet: the project asks for it if per-step code calls into the file
    accelerator: bool = True  # the file may put tensors on an accelerator

    @property
    def diagnostic(self) -> Optional[Finding]:
        """The finding that reports `error` in every output format, or None."""
        if self.error is None:
            return None
        message = self.error
        if self.error_code == INVALID_SYNTAX and self.error_detail:
            message = f"SyntaxError: {self.error_detail}"
        return file_diagnostic(self.path, message, self.error_code, self.error_location, self.error_cell)

    @classmethod
    def failed(cls, path: str, exc: "LintError", code: str) -> "FileResult":
        return cls(path, error=str(exc), error_code=exc.code or code, error_location=exc.location,
                   error_cell=exc.cell, error_detail=exc.detail)


def lint_bytes(data: bytes, path: str, options: LintOptions, keep_source: bool = True,
               project: Optional[ProjectInput] = None) -> FileResult:
    """A file's contents, linted as the file at `path` (a notebook when `path`
    names one): what `lint_file` read, or what stdin gave. `project`: how the
    project's call graph sees the file (default: the file read alone)."""
    try:
        if path.lower().endswith(".ipynb"):
            from gpulint.engine.notebook import Notebook, lint_notebook  # only for notebooks: its import costs

            return FileResult(path, lint_notebook(Notebook.from_bytes(data), path, options))
        try:
            text = decode_source(data, path)
        except LintError as exc:
            return FileResult.failed(path, exc, IO_ERROR)
    except LintError as exc:  # the notebook's JSON does not parse
        return FileResult.failed(path, exc, INVALID_SYNTAX)
    except Exception as exc:  # a bug in a rule must not stop the run
        return _internal_error(path, exc)
    return lint_text(text, path, options, keep_source, project)


def lint_text(text: str, path: str, options: LintOptions, keep_source: bool = True,
              project: Optional[ProjectInput] = None, tree=None) -> FileResult:
    """Python text, linted as the file at `path` (`tree`: its `ast.parse`,
    where the caller has it)."""
    try:
        res = lint_module(text, path, options, tree, project)
    except LintError as exc:  # the text does not parse
        return FileResult.failed(path, exc, INVALID_SYNTAX)
    except Exception as exc:  # a bug in a rule must not stop the run
        return _internal_error(path, exc)
    return FileResult(path, res.findings, source=text if keep_source else None, summary=res.summary,
                      table=res.table, deferred=res.deferred, accelerator=res.accelerator)


def _internal_error(path: str, exc: Exception) -> FileResult:
    return FileResult(path, error=f"internal error: {type(exc).__name__}: {exc} (please report this)",
                      error_code=INTERNAL_ERROR)


def lint_file(path: str, options: LintOptions, keep_source: bool = False,
              project: Optional[ProjectInput] = None) -> FileResult:
    try:
        if path.lower().endswith(".ipynb"):
            from gpulint.engine.notebook import MAX_NOTEBOOK_BYTES

            data = read_bytes(path, MAX_NOTEBOOK_BYTES)
        else:
            data = read_bytes(path)
    except LintError as exc:
        return FileResult.failed(path, exc, IO_ERROR)
    return lint_bytes(data, path, options, keep_source, project)
