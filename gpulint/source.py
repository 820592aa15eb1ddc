"""Source text with position conversions.

`ast` reports columns as UTF-8 byte offsets; users (and Ruff's JSON schema)
want 1-based character columns, and edits want absolute character offsets.
This module is the one place that converts between them.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from typing import List, Optional, Tuple


_WIDE = re.compile(r"[^\x00-\x7f]")  # a character of more than one UTF-8 byte


class Source:
    __slots__ = ("text", "_starts_", "_lines", "_wide", "_wide_key", "_wide_extra")

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts_: Optional[List[int]] = None  # the offsets where lines start (built when first needed)
        self._lines: Optional[List[str]] = None
        self._wide: Optional[List[int]] = None  # offsets of the non-ASCII characters (built when first needed)
        self._wide_key: List[int] = []
        self._wide_extra: List[int] = [0]

    @property
    def _starts(self) -> List[int]:
        """Where each line starts (a file with no finding never asks)."""
        starts = self._starts_
        if starts is None:
            text = self.text
            if "\r" in text:
                starts = _line_starts_with_cr(text)
            else:
                # ast and tokenize count "\r\n", "\r" and "\n" as line ends.
                starts = [0]
                i = 0
                find = text.find
                while True:
                    j = find("\n", i)
                    if j == -1:
                        break
                    starts.append(j + 1)
                    i = j + 1
            self._starts_ = starts
        return starts

    @property
    def lines(self) -> List[str]:
        """Physical lines without their line endings."""
        if self._lines is None:
            out = []
            starts = self._starts
            for k, s in enumerate(starts):
                e = starts[k + 1] if k + 1 < len(starts) else len(self.text)
                out.append(self.text[s:e].rstrip("\r\n"))
            self._lines = out
        return self._lines

    def line(self, row: int) -> str:
        lines = self.lines
        return lines[row - 1] if 0 < row <= len(lines) else ""

    def offset(self, row: int, byte_col: int) -> int:
        """Absolute character offset of an `ast` (1-based row, UTF-8 byte column).

        O(log n): a 10 MB line is never scanned from its start for each node."""
        start = self._starts[row - 1] if row - 1 < len(self._starts) else len(self.text)
        if self._wide is None:
            self._index_wide()
        wide, extra = self._wide, self._wide_extra
        lo = bisect_left(wide, start)  # type: ignore[arg-type]
        if lo == len(wide):  # type: ignore[arg-type]
            return start + byte_col  # only ASCII from here on
        # the first non-ASCII character whose last byte reaches byte_col
        j = bisect_left(self._wide_key, byte_col + start + extra[lo], lo)
        k = byte_col + start - (extra[j] - extra[lo])  # ASCII up to there
        if j == len(wide):  # type: ignore[arg-type]
            return min(k, len(self.text))
        return k if k <= wide[j] else wide[j] + 1  # type: ignore[index]

    def _index_wide(self) -> None:
        """Each non-ASCII character's offset, the extra UTF-8 bytes of those
        before it (`_wide_extra`, one longer), and the byte count (relative to
        offset 0, with the ASCII before it) at its end (`_wide_key`)."""
        wide: List[int] = []
        key: List[int] = []
        extra = [0]
        if not self.text.isascii():
            total = 0
            for m in _WIDE.finditer(self.text):
                c = ord(m.group())
                total += 1 if c < 0x800 else 2 if c < 0x10000 else 3  # a lone surrogate: 3 bytes
                p = m.start()
                wide.append(p)
                extra.append(total)
                key.append(p + 1 + total)
        self._wide, self._wide_key, self._wide_extra = wide, key, extra

    def position(self, offset: int) -> Tuple[int, int]:
        """(1-based row, 1-based character column) of an absolute offset."""
        row = bisect_right(self._starts, offset)
        return row, offset - self._starts[row - 1] + 1

    def node_span(self, node: ast.AST) -> Tuple[int, int]:
        """Absolute [start, end) character offsets of an ast node."""
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end_row = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None)
        end = self.offset(end_row, end_col) if end_col is not None else start
        return start, end

    def node_text(self, node: ast.AST) -> str:
        s, e = self.node_span(node)
        return self.text[s:e]


def _line_starts_with_cr(text: str) -> List[int]:
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        elif c == "\n":
            starts.append(i + 1)
        i += 1
    return starts
