"""Where a notebook cell's lines are in the `.ipynb` file itself: the line of
the JSON string that holds each line of each cell's source. Annotations that
name a line of the file (GitHub's `::error line=`) point there.

One linear scan over the JSON text that follows the path to
`cells[i].source[j]`, without building the document again.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

_WS = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"[^,\]\}\s]+")


class _Scan:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        # cell index -> the file line of each source string (in order)
        self.lines: Dict[int, List[int]] = {}
        self.texts: Dict[int, List[str]] = {}

    def _skip(self) -> None:
        m = _WS.match(self.text, self.pos)
        self.line += self.text.count("\n", self.pos, m.end())
        self.pos = m.end()

    def _advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def value(self, path: tuple) -> None:
        """Read one JSON value at `pos`; `path` is where it is in the document."""
        self._skip()
        c = self.text[self.pos]
        if c == "{":
            self._advance(self.pos + 1)
            while True:
                self._skip()
                if self.text[self.pos] == "}":
                    self._advance(self.pos + 1)
                    return
                m = _STRING.match(self.text, self.pos)
                key = m.group()[1:-1]
                self._advance(m.end())
                self._skip()
                self._advance(self.pos + 1)  # the colon
                self.value(path + (key,))
                self._skip()
                if self.text[self.pos] == ",":
                    self._advance(self.pos + 1)
        elif c == "[":
            self._advance(self.pos + 1)
            i = 0
            while True:
                self._skip()
                if self.text[self.pos] == "]":
                    self._advance(self.pos + 1)
                    return
                self.value(path + (i,))
                i += 1
                self._skip()
                if self.text[self.pos] == ",":
                    self._advance(self.pos + 1)
        elif c == '"':
            m = _STRING.match(self.text, self.pos)
            if len(path) >= 3 and path[0] == "cells" and path[2] == "source":
                self.lines.setdefault(path[1], []).append(self.line)
                self.texts.setdefault(path[1], []).append(m.group())
            self._advance(m.end())
        else:
            m = _SCALAR.match(self.text, self.pos)
            self._advance(m.end())


def source_lines(raw: str) -> Dict[int, List[int]]:
    """cell index (0-based, every cell counted) -> the file line of each line
    of its source (a source given as one string: its one line, for every
    row). Empty when the text is not the JSON it should be."""
    scan = _Scan(raw.lstrip("\ufeff"))
    try:
        scan.value(())
    except (IndexError, AttributeError, RecursionError):
        return {}
    out: Dict[int, List[int]] = {}
    for cell, lines in scan.lines.items():
        rows: List[int] = []
        for line, token in zip(lines, scan.texts[cell]):
            # a string holds one line of the cell, or several (a source given as one string)
            breaks = token.count("\\n") - (1 if token.endswith('\\n"') else 0)
            rows.extend([line] * (breaks + 1))
        out[cell] = rows
    return out


def file_line(raw_lines: Dict[int, List[int]], cell_number: int, row: int) -> Optional[int]:
    """The `.ipynb` line of row `row` (1-based) of the cell numbered `cell_number` (1-based)."""
    rows = raw_lines.get(cell_number - 1)
    if not rows or row < 1:
        return None
    return rows[min(row, len(rows)) - 1]
