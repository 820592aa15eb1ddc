"""The rewriting's buffer and positions."""

from __future__ import annotations

from bisect import bisect_right
from typing import Dict, List, Tuple

from gpulint.lowering.errors import CannotLower

BREAKS = "\r\n"


class Buffer:
    """The text being rewritten: one entry per character, replaced only by
    ASCII of the same UTF-8 size, and the positions of its CST nodes."""

    def __init__(self, text: str, target: Tuple[int, int]) -> None:
        self.text = text
        self.target = target
        self.features: List[str] = []
        self.keys: Dict[Tuple[int, int], tuple] = {}  # (row, byte col) of a rewritten statement -> what it was

    def describe(self) -> str:
        seen = []
        for f in self.features:
            if f not in seen:
                seen.append(f)
        return "after rewriting: " + ", ".join(seen) if seen else "nothing to rewrite"

    # -- positions
    def span(self, node, outer: bool = True) -> Tuple[int, int]:
        """[start, end) character offsets of a CST node; `outer`: with its parentheses."""
        a, b = self.spans[node]
        if outer:
            lpar = getattr(node, "lpar", ()) or ()
            rpar = getattr(node, "rpar", ()) or ()
            if lpar and lpar[0] in self.spans:
                a = min(a, self.spans[lpar[0]][0])
            if rpar and rpar[-1] in self.spans:
                b = max(b, self.spans[rpar[-1]][1])
        return a, b

    def rowcol(self, offset: int) -> Tuple[int, int]:
        """(1-based row, UTF-8 byte column) of a character offset, as `ast` counts."""
        row = bisect_right(self.starts, offset)
        start = self.starts[row - 1]
        return row, len(self.text[start:offset].encode("utf-8", "surrogatepass"))

    def astpos(self, a: int, b: int) -> Tuple[int, int, int, int]:
        return self.rowcol(a) + self.rowcol(b)

    # -- the buffer: one entry per character, replaced only by ASCII of the same UTF-8 size
    def put(self, i: int, s: str) -> None:
        """Character `i` becomes the ASCII `s`, padded to the original's UTF-8 size
        (a name stays one name, a line's last backslash stays last)."""
        ch = self.text[i]
        if ch.isascii():
            self.buf[i] = s
            return
        extra = len(ch.encode("utf-8", "surrogatepass")) - 1
        if s == "_":
            self.buf[i] = "_" * (extra + 1)
        elif s == "\\":
            self.buf[i] = " " * extra + s
        else:
            self.buf[i] = s + " " * extra

    def where(self, i: int) -> Tuple[int, int]:
        """(1-based row, 1-based character column) of offset `i`, for messages."""
        row = bisect_right(self.starts, i)
        return row, i - self.starts[row - 1] + 1

    def blank(self, a: int, b: int) -> None:
        """Spaces over [a, b), line breaks kept and each line before one
        continued with a backslash (the region is no longer in brackets)."""
        text = self.text
        for i in range(a, b):
            if text[i] not in BREAKS:
                self.put(i, " ")
        for i in range(a, b):
            c = text[i]
            if c == "\n" and i > 0 and text[i - 1] == "\r":
                continue
            if c in BREAKS:
                j = i - 1
                if j < a or text[j] in BREAKS:
                    raise CannotLower(f"an empty line inside a {self.features[-1]}", self.where(i))
                self.put(j, "\\")

    def placeholder_zero(self, a: int, b: int) -> None:
        """A `0` somewhere in the blanked [a, b): the test of an `if` header."""
        text = self.text
        for i in range(a, b):
            if text[i] in BREAKS:
                continue
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt in BREAKS and nxt:
                continue
            self.put(i, "0")
            return
        raise CannotLower(f"no room for a test in a {self.features[-1]}", self.where(a))
