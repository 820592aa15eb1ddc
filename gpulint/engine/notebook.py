"""Jupyter notebooks (`.ipynb`), linted as Ruff does (fixed by gpulint/fix/notebook.py).

The code cells are joined into one program, so a name imported in the first
cell is known in the fifth. IPython syntax (line magics `%time`, shell lines
`!pip install`, help `?obj` / `obj?`, autocall `/f x`, `x = !ls`, automagics
such as `pip install torch`) is not Python: each such line is replaced by a
`pass` of the same number of lines and the same indentation (IPython itself
turns it into one call), so line numbers stay right and blocks stay blocks. A cell whose first line is a cell magic (`%%bash`, `%%writefile`)
is not Python and is skipped whole, except the magics that run their cell as
Python (`%%time`, `%%capture`, ...), whose magic line alone is skipped.
Markdown and raw cells, and cells marked as another language, are ignored.

Positions are reported per cell: `nb.ipynb:cell 3:2:5`, where the cell number
is the cell's 1-based index among *all* cells of the notebook, markdown cells
included (Ruff's numbering: the cell you reach by counting cells down the
notebook), and the line is 1-based within the cell.

Fixes are applied to the joined program, then split back into the cells. A
fix that would edit a skipped IPython line, or one edit that would span two
cells (or edit a cell whose line breaks are lone CRs), is never offered. The file is rewritten by replacing only the `source`
value of each changed cell, in the notebook's own JSON style (list of lines
or one string, indentation, ensure_ascii), so outputs, metadata, execution
counts, cell ids and every other byte of the file stay as they were.

The notebook is parsed with the `json` module: nothing is executed or imported.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import json
import re
import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from gpulint.engine.lint import LintError, LintOptions, lint_source, parse, read_bytes
from gpulint.rule import IO_ERROR, Edit, Finding
from gpulint.source import Source

SUFFIX = ".ipynb"
# outputs (images, tables) make notebooks larger than source files for the same code
MAX_NOTEBOOK_BYTES = 256 * 1024 * 1024

# Cell magics that run the rest of their cell as Python (Ruff's list): the
# cell is linted, and names it defines are known to the cells after it.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})

# IPython's line magics: with automagic on, `pip install torch` or
# `matplotlib inline` runs `%pip` / `%matplotlib`. Such a line is skipped only
# when it is not Python on its own.
AUTOMAGICS = frozenset(
    "alias alias_magic autoawait autocall automagic bookmark cat cd clear code colors conda config cp debug "
    "dhist dirs doctest_mode ed edit env gui hist history killbgscripts ldir less lf lk ll load load_ext loadpy "
    "logoff logon logstart logstate logstop ls lsmagic lx macro magic mamba man matplotlib micromamba mkdir more "
    "mv notebook page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource "
    "pushd pwd pycat pylab quickref recall rehashx reload_ext rep rerun reset reset_selective rm rmdir run save "
    "sc set_env sx system tb time timeit unalias unload_ext who who_ls whos xdel xmode"
    # and those of extensions that notebooks load most (autoreload, tensorboard, profilers)
    " aimport autoreload lprun memit mprun tensorboard".split()
)

# `x = !ls`, `a, b = %sx cmd` (IPython's own pattern for the left-hand side)
_MAGIC_ASSIGN_RE = re.compile(r"^\s*[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!]")
# `%`, `!`, `?` start line magics, shell lines and help; `/`, `,`, `;` are autocall
_ESCAPES = ("%", "!", "?", "/", ",", ";")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


# ------------------------------------------------------------------ IPython lines
@dataclass
class _ScanState:
    """Where a line starts, as far as a new logical line is concerned."""

    quote: Optional[str] = None  # the open string's quote, if a string spans lines
    depth: int = 0  # open brackets
    continued: bool = False  # the previous line ended with a backslash

    @property
    def at_statement_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued


def _scan_line(line: str, st: _ScanState) -> int:
    """Advance `st` over one physical line; return where its code ends (its
    comment's offset, or its length without the line break)."""
    body = line.rstrip("\r\n")
    quote, depth = st.quote, st.depth
    i, n = 0, len(body)
    code_end = n
    backslash = False  # the line ends with a backslash (in a string or not)
    while i < n:
        c = body[i]
        if quote is not None:
            if c == "\\":
                backslash = i + 1 == n
                i += 2
                continue
            if body.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if c == "#":
            code_end = i
            break
        if c in "'\"":
            quote = c * 3 if body.startswith(c * 3, i) else c
            i += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "\\" and i + 1 == n:
            backslash = True
        i += 1
    if quote is not None and len(quote) == 1 and not backslash:
        quote = None  # an unterminated one-line string: the parser will say so
    st.quote, st.depth = quote, depth
    st.continued = backslash and quote is None
    return code_end


_FSTRING_RE = re.compile(r"(?<![\w])(?:[fF][rR]?|[rR][fF])['\"]")


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # a PEP 701 f-string, before 3.12: parsed as the engine parses it (rewritten for this Python)
        if sys.version_info < (3, 12) and _FSTRING_RE.search(code):
            try:
                parse(code, "<cell>")
            except LintError:
                return False
            return True
        return False
    return True


def _is_ipython_line(line: str, code_end: int, balanced: bool) -> bool:
    """Whether a line that starts a statement is IPython syntax, not Python.
    `code_end`: where its comment starts; `balanced`: it closes every bracket
    and string it opens."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    if stripped.startswith(_ESCAPES):
        return True
    if balanced and line[:code_end].rstrip().endswith("?"):  # `obj?`, `obj.attr??`: no `?` in Python code
        return True
    if _MAGIC_ASSIGN_RE.match(line):
        return True
    words = stripped.split()
    if balanced and words[0] in AUTOMAGICS and not _parses(stripped):
        # `pip install torch`, `cd ..`; an assignment that does not parse is a syntax error, not a magic
        return not re.match(r"^(?:=|[-+*/%&|^<>@]+=|//=|\*\*=|>>=|<<=)", words[1] if len(words) > 1 else "")
    return False


@dataclass
class Magic:
    """IPython lines, replaced by a placeholder in the joined program."""

    start: int  # offset of the placeholder in the joined program
    placeholder: str  # what stands in for them: `pass` and a line break for each
    original: str  # the lines as they are in the cell

    @property
    def end(self) -> int:
        return self.start + len(self.placeholder)


@dataclass
class CodeCell:
    """A Python code cell and where it lies in the joined program."""

    index: int  # 0-based index among all cells
    source: str  # the cell's source as in the notebook
    start: int = 0  # [start, end): the cell's offsets in the joined program
    end: int = 0
    magics: List[Magic] = field(default_factory=list)

    @property
    def number(self) -> int:
        """The cell number users see: 1-based, every cell counted (as Ruff does)."""
        return self.index + 1

    @property
    def lone_cr(self) -> bool:
        """Whether the cell breaks lines with a lone CR (old Mac style, which no
        Jupyter writes): a fix could join such a line break with the next
        cell's, so none is offered in it."""
        return "\r" in self.source and re.search(r"\r(?!\n)", self.source) is not None


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _lines(source: str) -> List[str]:
    """The cell's lines with their line breaks, split as Python splits them
    (str.splitlines would also split at form feeds and U+2028)."""
    return _LINE_RE.findall(source)


def _cell_magic(source: str) -> Optional[str]:
    """The cell magic on the cell's first non-blank line (`%%bash` -> "bash"), if any."""
    for line in _lines(source):
        s = line.strip()
        if not s:
            continue
        if s.startswith("%%"):
            word = s[2:].split(None, 1)
            return word[0] if word else ""
        return None
    return None


def python_cell_text(source: str) -> Tuple[str, List[Tuple[int, str, str]]]:
    """The cell as Python: (text, [(offset, placeholder, original), ...]).
    Each IPython line is replaced by a placeholder that keeps its line breaks;
    every other line is kept as it is."""
    lines = _lines(source)
    out: List[str] = []
    magics: List[Tuple[int, str, str]] = []
    st = _ScanState()
    pos = 0
    seen_code = False
    i = 0
    while i < len(lines):
        line = lines[i]
        block: List[str] = []
        if st.at_statement_start and line.strip():
            if not seen_code and line.lstrip().startswith("%%"):
                block = [line]  # a cell magic that runs the cell as Python: its line alone
            else:
                probe = _ScanState()
                code_end = _scan_line(line, probe)
                if _is_ipython_line(line.rstrip("\r\n"), code_end, probe.depth == 0 and probe.quote is None):
                    block = [line]
                    # an IPython line goes on after a trailing backslash, as in IPython
                    while block[-1].rstrip("\r\n").endswith("\\") and i + len(block) < len(lines):
                        block.append(lines[i + len(block)])
        if line.strip():
            seen_code = True
        if block:
            first = block[0]
            indent = first[: len(first) - len(first.lstrip(" \t"))]
            # IPython runs the lines as one call: `pass` (at their indentation, so a block
            # stays a block), then a line break for each (never an empty line: after a
            # lone CR it would make CR LF, one line break instead of two)
            placeholder = indent + "pass" + "\n" * sum(1 for b in block if b.endswith(("\n", "\r")))
            magics.append((pos, placeholder, "".join(block)))
            out.append(placeholder)
            pos += len(placeholder)
            i += len(block)
            st = _ScanState()
            continue
        _scan_line(line, st)
        out.append(line)
        pos += len(line)
        i += 1
    return "".join(out), magics


def join_cells(sources: Sequence[str]) -> Tuple[str, List[Tuple[int, int, List[Magic]]]]:
    """The program of these cell sources: (text, [(start, end, magics) per cell])."""
    parts: List[str] = []
    layout = []
    pos = 0
    for source in sources:
        text, magics = python_cell_text(source)
        if text and not text.endswith("\n"):
            # every cell ends its last line, so the next one starts a line (after a lone
            # CR too: the next cell's first line break must not join it into one CRLF)
            text += "\n"
        layout.append((pos, pos + len(text), [Magic(pos + off, ph, orig) for off, ph, orig in magics]))
        parts.append(text)
        pos += len(text)
    return "".join(parts), layout


# ------------------------------------------------------------------ loading
class NotebookError(LintError):
    """A file that cannot be read as a notebook (one line)."""


def _source_text(value, number: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise NotebookError(f"not a valid notebook: the source of cell {number} is not text")


def _is_python_notebook(meta) -> bool:
    if not isinstance(meta, dict):
        return True
    info = meta.get("language_info")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"].lower() == "python"
    kernel = meta.get("kernelspec")
    if isinstance(kernel, dict) and isinstance(kernel.get("language"), str):
        return kernel["language"].lower() == "python"
    return True


def _cell_language(cell: dict) -> Optional[str]:
    """The language VS Code records for a cell of a mixed-language notebook."""
    meta = cell.get("metadata")
    vscode = meta.get("vscode") if isinstance(meta, dict) else None
    lang = vscode.get("languageId") if isinstance(vscode, dict) else None
    return lang if isinstance(lang, str) else None


@dataclass
class Notebook:
    raw: str  # the file's text
    data: dict  # its JSON
    bom: bool
    cells: List[CodeCell]  # the Python code cells, in order
    python: bool = True  # False for a notebook in another language: nothing to lint
    text: str = ""  # the joined program

    @classmethod
    def from_bytes(cls, data: bytes) -> "Notebook":
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            raw = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise NotebookError(f"not a valid notebook: cannot decode as UTF-8: {exc.reason} at line {line}",
                                code=IO_ERROR)
        return cls.from_text(raw, bom)

    @classmethod
    def from_text(cls, raw: str, bom: bool = False) -> "Notebook":
        if not raw.strip():
            # an empty file is an empty notebook (editors create them so), as in Ruff
            return cls(raw, {}, bom, [], python=False)
        try:
            nb = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
        except (ValueError, RecursionError) as exc:
            raise NotebookError(f"not a valid notebook: invalid JSON: {exc}")
        if not isinstance(nb, dict):
            raise NotebookError("not a Jupyter notebook: the JSON is not an object")
        version = nb.get("nbformat")
        if "worksheets" in nb or (type(version) is int and version < 4):
            raise NotebookError(
                f"nbformat {version if type(version) is int else 3} notebooks are not supported: "
                "convert it with `jupyter nbconvert --to notebook --nbformat 4`"
            )
        if version is not None and version != 4:
            raise NotebookError(f"not a notebook this version reads: nbformat {version!r} (4 is supported)")
        cells = nb.get("cells")
        if not isinstance(cells, list):
            raise NotebookError("not a Jupyter notebook: no 'cells' list")
        code: List[CodeCell] = []
        for i, cell in enumerate(cells):
            if not isinstance(cell, dict):
                raise NotebookError(f"not a valid notebook: cell {i + 1} is not a JSON object")
            if cell.get("cell_type") != "code":
                continue  # markdown and raw cells
            if "source" not in cell:
                raise NotebookError(f"not a valid notebook: cell {i + 1} has no 'source'")
            source = _source_text(cell["source"], i + 1)
            lang = _cell_language(cell)
            if lang is not None and lang.lower() != "python":
                continue
            magic = _cell_magic(source)
            if magic is not None and magic not in PYTHON_CELL_MAGICS:
                continue  # `%%bash`, `%%writefile`, `%%javascript`...: the cell is not Python
            code.append(CodeCell(i, source))
        book = cls(raw, nb, bom, code, python=_is_python_notebook(nb.get("metadata")))
        book.text = book.layout([c.source for c in code])
        return book

    def layout(self, sources: Sequence[str]) -> str:
        """Join these sources (one per Python cell) and record where each cell lies."""
        text, layout = join_cells(sources)
        for cell, (start, end, magics) in zip(self.cells, layout):
            cell.start, cell.end, cell.magics = start, end, magics
        return text

    @property
    def lintable(self) -> bool:
        return self.python and bool(self.text.strip())


def load(path: str) -> Notebook:
    return Notebook.from_bytes(read_bytes(path, MAX_NOTEBOOK_BYTES))


# ------------------------------------------------------------------ positions
class CellMap:
    """Positions in the joined program -> (cell number, row in the cell, column)."""

    def __init__(self, cells: Sequence[CodeCell], text: str) -> None:
        self.cells = list(cells)
        self.starts = [c.start for c in self.cells]
        self.source = Source(text)
        self.rows = [self.source.position(s)[0] for s in self.starts]  # each cell's first row

    def cell_at(self, offset: int) -> int:
        """The cell holding `offset` (an index into self.cells): an offset on a
        boundary belongs to the cell that starts there."""
        return max(0, bisect_right(self.starts, offset) - 1)

    def cell_of_row(self, row: int) -> int:
        return max(0, bisect_right(self.rows, row) - 1)

    def in_cell(self, row: int, k: Optional[int] = None) -> Tuple[int, int]:
        """(cell number, row in that cell) of a row of the program."""
        if k is None:
            k = self.cell_of_row(row)
        return self.cells[k].number, row - self.rows[k] + 1

    def translate(self, f: Finding) -> Finding:
        k = self.cell_of_row(f.row)
        base = self.rows[k] - 1
        fix = f.fix
        if fix is not None:
            edits = []
            for e in fix.edits:
                # each edit relative to its own cell (a fix may edit an import in another cell)
                ek = self.cell_at(e.start)
                r1, c1 = self.source.position(e.start)
                r2, c2 = self.source.position(e.end)
                eb = self.rows[ek] - 1
                edits.append(dataclasses.replace(e, location=(r1 - eb, c1), end_location=(r2 - eb, c2)))
            fix = dataclasses.replace(fix, edits=tuple(edits))
        return dataclasses.replace(
            f, cell=self.cells[k].number, row=f.row - base, end_row=f.end_row - base,
            noqa_row=f.noqa_row - base, fix=fix,
        )


def _check_cells(tree: ast.Module, cmap: CellMap) -> None:
    """Each statement must start and end in one cell: IPython runs each cell on
    its own, so a bracket or a block left open at the end of a cell is a
    syntax error there, even when the next cell would close it."""
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        last = getattr(stmt, "end_lineno", None) or stmt.lineno
        k = cmap.cell_of_row(first)
        if cmap.cell_of_row(last) != k:
            number, row = cmap.in_cell(first, k)
            detail = "the statement goes on past the end of its cell"
            raise LintError(f"syntax error at cell {number}:{row}:1: {detail}", (row, 1), detail, cell=number)


def _syntax_error(exc: LintError, cmap: CellMap) -> LintError:
    """The engine's syntax error, its position given in the cell."""
    loc = getattr(exc, "location", None)
    if loc is None:
        return exc
    row, col = loc
    number, cell_row = cmap.in_cell(row)
    return LintError(f"syntax error at cell {number}:{cell_row}:{col}: {exc.detail}", (cell_row, col), exc.detail,
                     cell=number)


def _touches(e: Edit, magic: Magic) -> bool:
    if e.start == e.end:  # an insertion
        if e.start == magic.start:
            # just before the IPython line: fine when it brings its own line break
            return bool(e.content) and not e.content.endswith(("\n", "\r"))
        return magic.start < e.start < magic.end
    return e.start < magic.end and e.end > magic.start


def _safe_fix(f: Finding, cells: Sequence[CodeCell]) -> Finding:
    """`f` without its fix when an edit of it would touch an IPython line, span
    two cells or edit a cell with lone-CR line breaks."""
    if f.fix is None:
        return f
    starts = [c.start for c in cells]
    for e in f.fix.edits:
        cell = cells[max(0, bisect_right(starts, e.start) - 1)]
        if e.end > cell.end or cell.lone_cr or any(_touches(e, m) for c in cells for m in c.magics):
            return dataclasses.replace(f, fix=None)
    return f


class CellLinter:
    """Lints one notebook's joined program, and follows its cells and IPython
    lines while fixes change it (the fix layer's gpulint/fix/notebook.py
    calls shift() after each pass)."""

    def __init__(self, book: Notebook, path: str, options: LintOptions) -> None:
        self.book = book
        self.path = path
        self.options = options
        self.translated: Dict[int, Tuple[Finding, Finding]] = {}  # id -> (finding, in cell positions)

    def lint(self, text: str) -> List[Finding]:
        cmap = CellMap(self.book.cells, text)
        try:
            tree = parse(text, self.path)
        except LintError as exc:
            raise _syntax_error(exc, cmap)
        _check_cells(tree, cmap)
        findings = [_safe_fix(f, self.book.cells) for f in lint_source(text, self.path, self.options, tree=tree)]
        for f in findings:
            self.translated[id(f)] = (f, cmap.translate(f))
        return findings

    def in_cells(self, findings: Sequence[Finding]) -> List[Finding]:
        return [self.translated[id(f)][1] for f in findings]

    def shift(self, edits: Sequence[Edit]) -> None:
        """Move the cells and IPython lines past the edits of one fix pass.

        An insertion exactly at a cell boundary that ends with a line break
        (whole lines, such as a statement added after the imports) ends the
        cell before the boundary; one that does not is the start of the next
        cell's first line. One just before an IPython line goes before it."""

        def moved(p: int, takes: Callable[[Edit], bool]) -> int:
            d = 0
            for e in edits:
                if e.end < p or (e.end == p and e.start < p) or (e.start == e.end == p and takes(e)):
                    d += len(e.content) - (e.end - e.start)
            return p + d

        def whole_lines(e: Edit) -> bool:
            return e.content.endswith(("\n", "\r"))

        cells = self.book.cells
        for k, c in enumerate(cells):
            for m in c.magics:
                m.start = moved(m.start, lambda e: True)
            if k:  # the first cell starts the program, whatever is inserted there
                c.start = moved(c.start, whole_lines)
            c.end = moved(c.end, (lambda e: True) if k == len(cells) - 1 else whole_lines)


def lint_notebook(book: Notebook, path: str, options: LintOptions) -> List[Finding]:
    if not book.lintable:
        return []
    linter = CellLinter(book, path, options)
    return linter.in_cells(linter.lint(book.text))
