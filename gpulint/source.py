"""Source text with position conversions.

`ast` reports columns as UTF-8 byte offsets; users (and Ruff's JSON schema)
want 1-based character columns, and edits want absolute character offsets.
This module is the one place that converts between them.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import List, Optional, Tuple


class Source:
    __slots__ = ("text", "_starts", "_lines")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        # ast and tokenize count "\r\n", "\r" and "\n" as line ends.
        i = 0
        find = text.find
        while True:
            j = find("\n", i)
            if j == -1:
                break
            starts.append(j + 1)
            i = j + 1
        if "\r" in text:
            starts = _line_starts_with_cr(text)
        self._starts = starts
        self._lines: Optional[List[str]] = None

    @property
    def lines(self) -> List[str]:
        """Physical lines without their line endings."""
        if self._lines is None:
            out = []
            for k, s in enumerate(self._starts):
                e = self._starts[k + 1] if k + 1 < len(self._starts) else len(self.text)
                out.append(self.text[s:e].rstrip("\r\n"))
            self._lines = out
        return self._lines

    def line(self, row: int) -> str:
        lines = self.lines
        return lines[row - 1] if 0 < row <= len(lines) else ""

    def offset(self, row: int, byte_col: int) -> int:
        """Absolute character offset of an `ast` (1-based row, UTF-8 byte column)."""
        start = self._starts[row - 1] if row - 1 < len(self._starts) else len(self.text)
        line = self.text[start : start + byte_col + 1]
        if line.isascii():
            return start + byte_col
        # Non-ASCII: walk characters until byte_col bytes are consumed.
        consumed = 0
        k = start
        text = self.text
        while consumed < byte_col and k < len(text):
            consumed += len(text[k].encode("utf-8", "surrogatepass"))
            k += 1
        return k

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
