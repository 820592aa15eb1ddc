"""`gpulint fix`: show the diff of every fix, or write them with --apply.

A file is only written when its fixed text parses (LibCST and `compile()`),
it has not changed on disk since it was read, and then atomically, in the
file's own encoding, BOM and line endings."""

from __future__ import annotations

import codecs
import difflib
import os
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple

from gpulint.engine.lint import LintError, LintOptions, decode_source, lint_source, text_encoding
from gpulint.fix.apply import FixError, fix_source, newline_of
from gpulint.fsutil import atomic_write_bytes
from gpulint.registry import suppression_judges
from gpulint.rule import Finding


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    fixed_findings: List[Finding]
    remaining: List[Finding]
    held_back_unsafe: int
    encoding: str
    bom: bool
    stat: Tuple[int, int]
    fixed_count: int = 0
    written: Optional[bool] = None  # None: not asked to write
    why_not: Optional[str] = None
    # a notebook: (cell number, old source, new source) of each changed cell, for the diff
    cells: Optional[List[Tuple[int, str, str]]] = None

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


@dataclass
class FixRun:
    files: List[FileFix] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)
    remaining: List[Finding] = field(default_factory=list)
    held_back_unsafe: int = 0

    @property
    def changed(self) -> List[FileFix]:
        return [f for f in self.files if f.changed]

    @property
    def fixed_count(self) -> int:
        """Fixes in files that changed (and, when writing, were written)."""
        return sum(f.fixed_count for f in self.changed if f.written is not False)


def read_with_encoding(path: str) -> Tuple[str, str, bool, Tuple[int, int]]:
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise LintError(exc.strerror or str(exc))
    text, encoding, bom = decode_with_encoding(data, path)
    return text, encoding, bom, (st.st_mtime_ns, st.st_size)


def decode_with_encoding(data: bytes, path: str) -> Tuple[str, str, bool]:
    """(text, the encoding to write it back in, whether it had a UTF-8 BOM)."""
    text = decode_source(data, path)
    return text, text_encoding(data), data.startswith(codecs.BOM_UTF8)


def encode_fixed(text: str, encoding: str, bom: bool) -> bytes:
    """Fixed text as bytes in the file's own encoding; LookupError or
    UnicodeEncodeError when it cannot be."""
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if bom else data


def fix_notebook_file(path: str, options: LintOptions, unsafe: bool) -> FileFix:
    from gpulint.engine.notebook import load
    from gpulint.fix.notebook import fix_notebook

    try:
        st = os.stat(path)
    except OSError as exc:
        raise LintError(exc.strerror or str(exc))
    book = load(path)
    nf = fix_notebook(book, path, options, unsafe)
    return FileFix(
        path, book.raw, nf.raw, nf.fixed, nf.remaining, nf.held_back_unsafe, "utf-8", book.bom,
        (st.st_mtime_ns, st.st_size), fixed_count=nf.fixed_count, cells=nf.cells,
    )


def _confirmed_only(text: str, path: str, options: LintOptions, confirmed: AbstractSet[tuple]):
    """`lint_source` of a version of the file, less the findings of a rule
    that judges suppressions (unused-noqa) that the run did not report for
    this very text (`confirmed`: their (row, col, message)). The file read
    alone knows nothing of the rest of its project, so it would call a
    comment unused that suppresses what only the project finds; and once
    another fix changed the text, the run's word no longer holds."""
    judges = suppression_judges().intersection(options.codes)

    def lint(t: str) -> List[Finding]:
        found = lint_source(t, path, options)
        if not judges:
            return found
        return [f for f in found if f.code not in judges or (t == text and (f.row, f.col, f.message) in confirmed)]

    return lint


def fix_file(path: str, options: LintOptions, unsafe: bool, confirmed: AbstractSet[tuple] = frozenset()) -> FileFix:
    """Fix one file; `confirmed`: the run's unused-noqa findings in it (`_confirmed_only`)."""
    if path.lower().endswith(".ipynb"):
        return fix_notebook_file(path, options, unsafe)  # (a notebook is linted alone by the run too)
    text, encoding, bom, stat = read_with_encoding(path)
    result = fix_source(text, path, options, unsafe=unsafe, newline=newline_of(text),
                        lint=_confirmed_only(text, path, options, confirmed))
    return FileFix(
        path, text, result.text, result.fixed, result.remaining, result.held_back_unsafe, encoding, bom, stat,
        fixed_count=result.fixed_count,
    )


def fix_bytes(data: bytes, path: str, options: LintOptions, unsafe: bool) -> Tuple[FileFix, bytes]:
    """Fix contents given as bytes (stdin) as the file `path`: the FileFix and
    the fixed contents as bytes, in their own encoding and BOM. Raises
    LintError / FixError as fix_file does."""
    if path.lower().endswith(".ipynb"):
        from gpulint.engine.notebook import Notebook
        from gpulint.fix.notebook import fix_notebook

        book = Notebook.from_bytes(data)
        nf = fix_notebook(book, path, options, unsafe)
        ff = FileFix(path, book.raw, nf.raw, nf.fixed, nf.remaining, nf.held_back_unsafe, "utf-8", book.bom, (0, 0),
                     fixed_count=nf.fixed_count, cells=nf.cells)
    else:
        text, encoding, bom = decode_with_encoding(data, path)
        # (stdin is one file: what the rest of its project suppresses is unknown)
        result = fix_source(text, path, options, unsafe=unsafe, newline=newline_of(text),
                            lint=_confirmed_only(text, path, options, frozenset()))
        ff = FileFix(path, text, result.text, result.fixed, result.remaining, result.held_back_unsafe, encoding, bom,
                     (0, 0), fixed_count=result.fixed_count)
    if not ff.changed:
        return ff, data
    try:
        return ff, encode_fixed(ff.fixed, ff.encoding, ff.bom)
    except (UnicodeEncodeError, LookupError) as exc:
        raise FixError(f"fixed text cannot be encoded as {ff.encoding}: {exc}")


def _diff(a: str, b: str, name: str) -> str:
    out = []
    for line in difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}"
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def unified_diff(ff: FileFix) -> str:
    if ff.cells is not None:  # a notebook: one diff per changed cell, as Ruff shows them
        return "".join(_diff(old, new, f"{ff.path}:cell {number}") for number, old, new in ff.cells)
    return _diff(ff.original, ff.fixed, ff.path)


def _under(path: str, roots: Sequence[str]) -> bool:
    for root in roots:
        r = os.path.realpath(root)
        if path == r or path.startswith(r.rstrip(os.sep) + os.sep):
            return True
    return False


def write_target(path: str, roots: Optional[Sequence[str]]) -> Tuple[Optional[str], Optional[str]]:
    """(real file to write, None) or (None, why not). A symlink is written
    through to its target only when the target lies under the given paths."""
    real = os.path.realpath(path)
    if real == os.path.abspath(path) or roots is None:
        return real, None
    if _under(real, roots):
        return real, None
    return None, f"not written: it links to {real}, outside the paths given"


def write_fixed(ff: FileFix, roots: Optional[Sequence[str]] = None) -> Optional[str]:
    """Write one fixed file; return why not, or None."""
    target, why = write_target(ff.path, roots)
    if target is None:
        return why
    try:
        st = os.stat(target)
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    if (st.st_mtime_ns, st.st_size) != ff.stat:
        return "not written: the file changed on disk while gpulint was fixing it"
    # the write replaces the file, which a read-only file in a writable folder would
    # not stop: refuse as an in-place write would (root may write any file, as always)
    if not os.access(target, os.W_OK):
        return "not written: the file is read-only"
    try:
        data = encode_fixed(ff.fixed, ff.encoding, ff.bom)
    except (UnicodeEncodeError, LookupError) as exc:
        return f"not written: fixed text cannot be encoded as {ff.encoding}: {exc}"
    try:
        atomic_write_bytes(target, data)
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    return None


def run_fix(
    todo: Sequence[Tuple[str, LintOptions]],
    unsafe: bool,
    write_roots: Optional[Sequence[str]] = None,
    apply: bool = False,
    confirmed: Optional[Dict[str, AbstractSet[tuple]]] = None,
) -> FixRun:
    """Fix each file; with `apply`, write each one as soon as it is fixed (so a
    run that is killed has written whole files only, never a batch half-way).
    `confirmed`: per file, the run's unused-noqa findings (`_confirmed_only`)."""
    run = FixRun()
    for path, options in todo:
        try:
            ff = fix_file(path, options, unsafe, (confirmed or {}).get(path, frozenset()))
        except (LintError, FixError) as exc:
            run.errors.append((path, str(exc)))
            continue
        except Exception as exc:  # a bug in a fix must not stop the run
            run.errors.append((path, f"internal error while fixing: {type(exc).__name__}: {exc} (please report this)"))
            continue
        if apply and ff.changed:
            ff.why_not = write_fixed(ff, write_roots)
            ff.written = ff.why_not is None
            if ff.why_not is not None:
                run.errors.append((path, ff.why_not))
                # nothing was written: its findings all remain
                ff.remaining = ff.fixed_findings + ff.remaining
        run.files.append(ff)
        run.remaining.extend(ff.remaining)
        run.held_back_unsafe += ff.held_back_unsafe
    run.remaining.sort(key=Finding.sort_key)
    return run
