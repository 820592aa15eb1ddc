"""`gpulint check --add-noqa`: suppress every current finding with a
`# noqa: CODE` comment, as `ruff check --add-noqa` does, so a project can
adopt gpulint (or a new rule) today and fail CI only on new findings.

Where the comment goes: on the finding's own line, or else on the first line
of its statement (both are lines a `# noqa` is read from). A line that ends
inside a string or with a backslash cannot take a comment; such a finding is
reported, not suppressed. An existing `# noqa: X` on the line gets the new
codes added to its list; any other comment is kept and the directive is put
after it.

A file is written only when the new text still parses and linting it again
leaves none of the findings it meant to suppress, and then as `gpulint fix
--apply` writes: atomically, in the file's own encoding, BOM and line endings,
and not if it changed on disk meanwhile. In a notebook, the comment goes on
the finding's line of its cell: the directives are added to the joined
program the cells are linted as, and the changed cells are written back into
the notebook's JSON as `gpulint fix` writes them."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from gpulint.engine.lint import LintError, LintOptions, lint_source, parse
from gpulint.registry import suppression_judges
from gpulint.fix.files import FileFix, read_with_encoding, write_fixed
from gpulint.rule import Finding
from gpulint.engine.suppress import NOQA_RE


_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")


@dataclass
class NoqaResult:
    text: str
    added: int  # findings newly suppressed
    unplaceable: List[Finding] = field(default_factory=list)  # no line could take a comment


def _comment_lines(text: str) -> Tuple[Set[int], Dict[int, Tuple[int, str]]]:
    """(rows whose end can take a comment, {row: (column, text) of its comment})."""
    ok: Set[int] = set()
    comments: Dict[int, Tuple[int, str]] = {}
    read = _tokens_text(text)
    lines = _LINE_RE.findall(text) if read is not text else None
    read_lines = _LINE_RE.findall(read) if read is not text else None
    for tok in tokenize.generate_tokens(io.StringIO(read).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL):
            ok.add(tok.start[0])
        elif tok.type == tokenize.COMMENT:
            row, col = tok.start
            if lines is not None:
                col = _same_column(lines[row - 1], read_lines[row - 1], col)
            ok.add(row)
            comments[row] = (col, tok.string)
    return ok, comments


def _tokens_text(text: str) -> str:
    """What tokenize reads: before 3.12 it misreads PEP 701 f-strings, so a
    file in syntax newer than this Python's is read as the engine parses it,
    rewritten for this Python (gpulint/lowering/: same lines and UTF-8
    columns, comments kept)."""
    if sys.version_info >= (3, 12):
        return text
    try:
        ast.parse(text)
        return text
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        tree = parse(text, "<add-noqa>")
    except LintError:
        return text
    return getattr(tree, "gpulint_lowered_text", text)


def _same_column(line: str, read_line: str, col: int) -> int:
    """The column in `line` of the character at `col` in its rewrite (which
    keeps UTF-8 offsets, not character ones)."""
    want = len(read_line[:col].encode("utf-8", "surrogatepass"))
    size = 0
    for i, ch in enumerate(line):
        if size >= want:
            return i
        size += len(ch.encode("utf-8", "surrogatepass"))
    return len(line)


def add_noqa(text: str, findings: Sequence[Finding]) -> NoqaResult:
    """The text with a `# noqa` directive for each finding."""
    try:
        ok, comments = _comment_lines(text)
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise LintError(f"cannot read its comments: {exc}")
    wanted: Dict[int, List[str]] = {}
    unplaceable: List[Finding] = []
    for f in findings:
        row = next((r for r in (f.row, f.noqa_row) if r in ok), None)
        if row is None:
            unplaceable.append(f)
            continue
        codes = wanted.setdefault(row, [])
        if f.code not in codes:
            codes.append(f.code)
    lines = _LINE_RE.findall(text)  # "\n"-ended lines, as tokenize counts them (not str.splitlines)
    for row, codes in wanted.items():
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        comment = comments.get(row)
        m = NOQA_RE.search(comment[1]) if comment else None
        if m is not None and m.group("codes"):
            at = comment[0] + m.end("codes")
            body = body[:at] + "".join(f", {c}" for c in codes) + body[at:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(codes)
        lines[row - 1] = body + ending
    added = len(findings) - len(unplaceable)
    return NoqaResult("".join(lines), added, unplaceable)


def add_noqa_notebook(book, path: str, options: LintOptions, reported: Sequence[Finding]) -> NoqaResult:
    """`add_noqa` in a notebook's cells (rows of `reported` are rows of their
    cell): the new notebook text, as `NoqaResult.text`. Each cell's comments
    are placed on the cell as the linter reads it (its IPython lines stood in
    for by `pass`, line for line), and only the lines that took one change in
    the cell's own source."""
    from gpulint.engine.notebook import Notebook, lint_notebook
    from gpulint.fix.notebook import write_sources

    cells = {c.number: c for c in book.cells}
    unplaceable = [f for f in reported if f.cell not in cells]
    new_sources: Dict[int, str] = {}
    added = 0
    for number, c in cells.items():
        mine = [f for f in reported if f.cell == number]
        if not mine:
            continue
        read = book.text[c.start:c.end]  # the cell as linted
        res = add_noqa(read, mine)
        unplaceable += res.unplaceable
        added += res.added
        old, new, source = _LINE_RE.findall(read), _LINE_RE.findall(res.text), _LINE_RE.findall(c.source)
        if not (len(old) == len(new) and len(source) in (len(old), len(old) - 1)):
            raise LintError(f"cell {number} does not read back line for line; not written")
        lines = []
        for i, (was, now) in enumerate(zip(old, new)):
            if i >= len(source):
                break
            if was == now:
                lines.append(source[i])
                continue
            if source[i].rstrip("\r\n") != was.rstrip("\r\n"):
                raise LintError(f"a comment would go on an IPython line of cell {number}; not written")
            body = now.rstrip("\r\n")
            lines.append(body + source[i][len(source[i].rstrip("\r\n")):])
        new_sources[c.index] = "".join(lines)
    changed = {c.index: new_sources[c.index] for c in book.cells if new_sources.get(c.index, c.source) != c.source}
    if not changed:
        return NoqaResult(book.raw, 0, unplaceable)
    raw = write_sources(book, changed)
    left = {(f.code, f.cell, f.row) for f in lint_notebook(Notebook.from_text(raw, book.bom), path, options)}
    if any((f.code, f.cell, f.row) in left for f in reported if f not in unplaceable):
        raise LintError("the added comments would not suppress every finding (please report this); not written")
    return NoqaResult(raw, added, unplaceable)


@dataclass
class NoqaRun:
    added: int = 0
    files: int = 0
    unplaceable: List[Finding] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)


def _remaining(text: str, path: str, options: LintOptions, meant: Sequence[Finding]) -> List[Finding]:
    """Which of `meant` the new text still reports."""
    try:
        after = lint_source(text, path, options)
    except LintError as exc:
        raise LintError(f"the added comments would break the file ({exc}; please report this); not written")
    keys = {(f.code, f.row) for f in meant}
    return [f for f in after if (f.code, f.row) in keys]


def run_add_noqa(
    todo: Sequence[Tuple[str, LintOptions, List[Finding]]], write_roots: Optional[Sequence[str]] = None
) -> NoqaRun:
    out = NoqaRun()
    judges = suppression_judges()
    for path, options, reported in todo:
        # an unused suppression is fixed by removing it, not by another comment
        reported = [f for f in reported if f.code not in judges]
        if path.lower().endswith(".ipynb"):
            _add_noqa_notebook_file(path, options, reported, write_roots, out)
            continue
        try:
            text, encoding, bom, stat = read_with_encoding(path)
            # lint again from the text that will be edited: the findings of the
            # run may come from a cache, or from a file that changed since
            findings = lint_source(text, path, options)
            # only what the run reported: the file alone knows nothing of the
            # project (code that nothing reaches, facts from other files)
            wanted = {(f.code, f.row) for f in reported}
            findings = [f for f in findings if (f.code, f.row) in wanted]
            # and what only the project finds (a helper another file runs every step):
            # the run's own findings, which the file alone cannot find again
            found = {(f.code, f.row) for f in findings}
            findings += [f for f in reported if (f.code, f.row) not in found]
            if not findings:
                continue
            res = add_noqa(text, findings)
            placed = [f for f in findings if f not in res.unplaceable]
            if res.text != text:
                left = _remaining(res.text, path, options, placed)
                if left:
                    raise LintError(f"the added comments would not suppress {left[0].code} at line {left[0].row}"
                                    " (please report this); not written")
                _write(FileFix(path, text, res.text, [], [], 0, encoding, bom, stat), res, write_roots, out)
            out.unplaceable.extend(res.unplaceable)
        except LintError as exc:
            out.errors.append((path, str(exc)))
        except Exception as exc:  # a bug here must not stop the run
            out.errors.append((path, f"internal error while adding noqa: {type(exc).__name__}: {exc} (please report this)"))
    return out


def _write(ff: FileFix, res: NoqaResult, write_roots: Optional[Sequence[str]], out: NoqaRun) -> None:
    """Write the commented file as `gpulint fix --apply` writes (LintError: why not), and count it."""
    why = write_fixed(ff, write_roots)
    if why is not None:
        raise LintError(why)
    out.files += 1
    out.added += res.added


def _add_noqa_notebook_file(path: str, options: LintOptions, reported: Sequence[Finding],
                            write_roots: Optional[Sequence[str]], out: NoqaRun) -> None:
    import os

    from gpulint.engine.notebook import NotebookError, load

    try:
        st = os.stat(path)
        book = load(path)
        res = add_noqa_notebook(book, path, options, reported)
        if res.text != book.raw:
            ff = FileFix(path, book.raw, res.text, [], [], 0, "utf-8", book.bom, (st.st_mtime_ns, st.st_size))
            _write(ff, res, write_roots, out)
        out.unplaceable.extend(res.unplaceable)
    except (LintError, NotebookError) as exc:
        out.errors.append((path, str(exc)))
    except OSError as exc:
        out.errors.append((path, exc.strerror or str(exc)))
    except Exception as exc:  # a bug here must not stop the run
        out.errors.append((path, f"internal error while adding noqa: {type(exc).__name__}: {exc} (please report this)"))
