"""Fixes in a notebook's code cells: applied to the joined program (as
gpulint/engine/notebook.py lints it), split back into the cells, and written
into the notebook's own JSON.

A fix that would edit a skipped IPython line, or one edit that would span two
cells (or edit a cell whose line breaks are lone CRs), is never offered (the
linter drops such fixes). The file is rewritten by replacing only the
`source` value of each changed cell, in the notebook's own JSON style (list
of lines or one string, indentation, ensure_ascii), so outputs, metadata,
execution counts, cell ids and every other byte of the file stay as they
were.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpulint.engine.lint import LintOptions
from gpulint.engine.notebook import CellLinter, Notebook, join_cells
from gpulint.engine.notebook_lines import json_elements, source_spans
from gpulint.fix.apply import FixError, fix_source, validate_code
from gpulint.rule import Finding


# ------------------------------------------------------------------ fixing
@dataclass
class NotebookFix:
    raw: str  # the notebook's new text
    cells: List[Tuple[int, str, str]]  # (cell number, old source, new source) of each changed cell
    fixed: List[Finding]
    remaining: List[Finding]
    held_back_unsafe: int
    fixed_count: int


def _validate_program(text: str, path: str) -> Optional[str]:
    """Why a fixed program is not valid code, as IPython compiles cells: each
    on its own (a `from __future__` import may open any cell) and with
    top-level `await`."""
    with warnings.catch_warnings():  # the user's `"\d"` is not gpulint's to warn about
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # which says why; or compiles it as rewritten for this Python, if it is a newer one's syntax
            return validate_code(text, path, flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, prepare=_drop_future_imports)
        _drop_future_imports(tree)
        return validate_code(text, path, code=tree, flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _drop_future_imports(tree: ast.Module) -> None:
    tree.body = [s for s in tree.body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]


def fix_notebook(book: Notebook, path: str, options: LintOptions, unsafe: bool) -> NotebookFix:
    if not book.lintable:
        return NotebookFix(book.raw, [], [], [], 0, 0)
    linter = CellLinter(book, path, options)
    original = [c.source for c in book.cells]
    result = fix_source(
        book.text, path, options, unsafe=unsafe, lint=linter.lint, on_apply=linter.shift, validate=_validate_program
    )
    fixed, remaining = linter.in_cells(result.fixed), linter.in_cells(result.remaining)
    if result.text == book.text:
        return NotebookFix(book.raw, [], fixed, remaining, result.held_back_unsafe, result.fixed_count)
    sources = split_cells(book, result.text)
    # the new cells, read as a notebook is read, must give the program that was checked
    # (as Python reads it: a cell that ends with a lone CR may keep it or get CR LF)
    if as_python_reads(join_cells(sources)[0]) != as_python_reads(result.text):
        raise FixError("the fixed cells do not read back as the fixed program; notebook left unchanged")
    new = {c.index: s for c, old, s in zip(book.cells, original, sources) if old != s}
    changed = [(c.number, old, s) for c, old, s in zip(book.cells, original, sources) if old != s]
    raw = write_sources(book, new)
    return NotebookFix(raw, changed, fixed, remaining, result.held_back_unsafe, result.fixed_count)


def as_python_reads(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_cells(book: Notebook, text: str) -> List[str]:
    """Each cell's new source out of the fixed program, its IPython lines put back."""
    out = []
    for c in book.cells:
        chunks = []
        pos = c.start
        for m in sorted(c.magics, key=lambda m: m.start):
            if not (c.start <= m.start and m.end <= c.end) or text[m.start: m.end] != m.placeholder:
                raise FixError(f"a fix moved an IPython line of cell {c.number}; notebook left unchanged")
            chunks.append(text[pos: m.start])
            chunks.append(m.original)
            pos = m.end
        chunks.append(text[pos: c.end])
        source = "".join(chunks)
        if not c.source.endswith("\n") and source.endswith("\n") and not source[:-1].endswith("\n"):
            # the line break the join adds (where the cell ends in a blank line, the
            # join adds none: the cell keeps its last line break)
            source = source[:-1]
        out.append(source)
    return out


# ------------------------------------------------------------------ writing
_ESCAPED_NON_ASCII_RE = re.compile(r"(?<!\\)(?:\\\\)*\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])")


def _line_indent(raw: str, offset: int) -> str:
    line_start = max(raw.rfind("\n", 0, offset), raw.rfind("\r", 0, offset)) + 1
    line = raw[line_start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _layout(raw: str) -> Tuple[str, str]:
    """(what follows a comma between members, the indentation step) of the
    file, for a list that was empty: nbformat writes ",\n" and one space."""
    m = re.search(r",([ \t\r\n]*)\"", raw)
    after_comma = m.group(1) if m else "\n"
    m = re.search(r"\{(?:\r\n|\n|\r)([ \t]+)\"", raw)
    return after_comma, m.group(1) if m else " "


def _ensure_ascii(raw: str) -> bool:
    """Whether the file writes non-ASCII characters as \\u escapes: only when it
    has such an escape and no raw non-ASCII character (nbformat writes them raw)."""
    return raw.isascii() and _ESCAPED_NON_ASCII_RE.search(raw) is not None


def _split_lines(text: str) -> List[str]:
    return [p for p in re.split(r"(?<=\n)", text) if p]


def _render_source(raw: str, span: Tuple[int, int], new: str, ensure_ascii: bool) -> str:
    start, end = span
    old = raw[start:end]
    if old.startswith('"'):
        return json.dumps(new, ensure_ascii=ensure_ascii)
    scan = json.JSONDecoder().scan_once
    elems = json_elements(raw, start, scan)
    if elems:
        first_ws = raw[start + 1: elems[0][0]]
        close_ws = raw[elems[-1][1]: end - 1]
        sep = raw[elems[0][1]: elems[1][0]] if len(elems) > 1 else "," + first_ws
    else:  # an empty list: lay the lines out as the file lays out its members
        after_comma, unit = _layout(raw)
        if "\n" in after_comma or "\r" in after_comma:
            newline = after_comma[: len(after_comma) - len(after_comma.lstrip("\r\n"))]
            indent = _line_indent(raw, start)
            first_ws, close_ws = newline + indent + unit, newline + indent
            sep = "," + first_ws
        else:
            first_ws = close_ws = ""
            sep = "," + after_comma
    lines = _split_lines(new)
    if not lines:
        return "[]"
    body = sep.join(json.dumps(line, ensure_ascii=ensure_ascii) for line in lines)
    return "[" + first_ws + body + close_ws + "]"


def write_sources(book: Notebook, new_sources: Dict[int, str]) -> str:
    """The notebook's text with these cells' sources (by cell index) replaced,
    every other byte kept."""
    if not new_sources:
        return book.raw
    raw = book.raw
    spans = source_spans(raw)
    ensure_ascii = _ensure_ascii(raw)
    out = []
    pos = 0
    for index in sorted(new_sources):
        span = spans[index]
        out.append(raw[pos: span[0]])
        out.append(_render_source(raw, span, new_sources[index], ensure_ascii))
        pos = span[1]
    out.append(raw[pos:])
    new_raw = "".join(out)
    # the result must read back as the same notebook with only these sources changed
    expected = copy.deepcopy(book.data)
    for index, text in new_sources.items():
        old = expected["cells"][index]["source"]
        expected["cells"][index]["source"] = text if isinstance(old, str) else _split_lines(text)
    try:
        again = json.loads(new_raw)
    except ValueError:
        again = None
    if again != expected:
        raise FixError("the rewritten notebook would not read back as the same notebook; left unchanged")
    return new_raw
