"""GitHub Actions workflow commands: one `::error` annotation per finding."""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

from gpulint.engine.notebook_lines import file_line, source_lines
from gpulint.frontends.reporters.text import printable
from gpulint.rule import Finding


_SURROGATE = re.compile("[\ud800-\udfff]")


def _esc_data(s: str) -> str:
    # GitHub's escaping; a byte of a file name that is not UTF-8 is written `\xNN`, as in text output
    s = _SURROGATE.sub(lambda m: printable(m.group()), s)
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _esc_prop(s: str) -> str:
    return _esc_data(s).replace(":", "%3A").replace(",", "%2C")


def _notebook_lines(path: str, cache: Dict[str, Dict[int, List[int]]]) -> Dict[int, List[int]]:
    """The .ipynb lines of each cell's source lines (read once per notebook)."""
    found = cache.get(path)
    if found is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                found = source_lines(fh.read())
        except OSError:
            found = {}
        cache[path] = found
    return found


def render(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    lines = []  # a file that could not be checked is one of the findings (`invalid-syntax`, `io-error`)
    notebooks: Dict[str, Dict[int, List[int]]] = {}
    for f in findings:
        props = f"title={_esc_prop(f'gpulint ({f.code})')},file={_esc_prop(f.path)}"
        where = f"{f.path}:{f.row}:{f.col}"
        if f.cell is None:
            props += f",line={f.row},col={f.col},endLine={f.end_row},endColumn={f.end_col}"
        else:
            # a notebook's rows are rows of a cell: the annotation goes on the line of the
            # .ipynb that holds that row of the cell's source (no column: the JSON's differ)
            where = f"{f.path}:cell {f.cell}:{f.row}:{f.col}"
            table = _notebook_lines(f.path, notebooks)
            line = file_line(table, f.cell, f.row)
            if line is not None:
                end = file_line(table, f.cell, f.end_row) or line
                props += f",line={line},endLine={max(end, line)}"
        code = f"{f.code}:" if f.is_diagnostic else f.code
        lines.append(f"::error {props}::{_esc_data(f'{where}: {code} {f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
