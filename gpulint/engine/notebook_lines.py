"""Where things are in a notebook's own JSON text: the span of each cell's
`source` value (which the fix layer rewrites in place) and the line of the
`.ipynb` that holds each line of each cell's source (which annotations that
name a line of the file, GitHub's `::error line=`, point at).

The JSON decoder's own scanner reads each value; only the path to
`cells[i].source` is walked, so look-alike keys in metadata or outputs are
never taken.
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Tuple

_WS_RE = re.compile(r"[ \t\n\r]*")


def _ws(s: str, i: int) -> int:
    return _WS_RE.match(s, i).end()


def json_members(raw: str, i: int, scan) -> List[Tuple[str, int, int]]:
    """(key, value start, value end) of each member of the object at raw[i]."""
    out = []
    assert raw[i] == "{"
    i = _ws(raw, i + 1)
    if raw[i] == "}":
        return out
    while True:
        key, i = json.decoder.scanstring(raw, i + 1)
        i = _ws(raw, i)
        assert raw[i] == ":"
        start = _ws(raw, i + 1)
        _, end = scan(raw, start)
        out.append((key, start, end))
        i = _ws(raw, end)
        if raw[i] == "}":
            return out
        assert raw[i] == ","
        i = _ws(raw, i + 1)


def json_elements(raw: str, i: int, scan) -> List[Tuple[int, int]]:
    """(start, end) of each element of the array at raw[i]."""
    out = []
    assert raw[i] == "["
    i = _ws(raw, i + 1)
    if raw[i] == "]":
        return out
    while True:
        _, end = scan(raw, i)
        out.append((i, end))
        i = _ws(raw, end)
        if raw[i] == "]":
            return out
        assert raw[i] == ","
        i = _ws(raw, i + 1)


def source_spans(raw: str) -> Dict[int, Tuple[int, int]]:
    """Where each cell's `source` value lies in the notebook's text, by cell index."""
    scan = json.JSONDecoder().scan_once
    spans: Dict[int, Tuple[int, int]] = {}
    top = _ws(raw, 0)
    cells = [m for m in json_members(raw, top, scan) if m[0] == "cells"]
    if not cells:
        return spans
    for index, (start, _) in enumerate(json_elements(raw, cells[-1][1], scan)):
        for key, vs, ve in json_members(raw, start, scan):
            if key == "source":
                spans[index] = (vs, ve)
    return spans


def source_lines(raw: str) -> Dict[int, List[int]]:
    """cell index (0-based, every cell counted) -> the file line of each line
    of its source (a source given as one string: its one line, for every
    row). Empty when the text is not the JSON it should be."""
    raw = raw.lstrip("\ufeff")
    try:
        spans = source_spans(raw)
    except (AssertionError, IndexError, ValueError, StopIteration, RecursionError):
        return {}
    scan = json.JSONDecoder().scan_once
    out: Dict[int, List[int]] = {}
    for cell, (start, end) in spans.items():
        try:
            pieces = json_elements(raw, start, scan) if raw[start] == "[" else [(start, end)]
        except (AssertionError, IndexError, ValueError, StopIteration):
            continue
        rows: List[int] = []
        line = raw.count("\n", 0, start) + 1
        at = start
        for a, b in pieces:
            line += raw.count("\n", at, a)
            at = a
            try:
                text = json.loads(raw[a:b])
            except ValueError:
                text = ""
            breaks = text.count("\n") - (1 if text.endswith("\n") else 0) if isinstance(text, str) else 0
            rows.extend([line] * (breaks + 1))
        out[cell] = rows
    return out


def file_line(raw_lines: Dict[int, List[int]], cell_number: int, row: int) -> Optional[int]:
    """The `.ipynb` line of row `row` (1-based) of the cell numbered `cell_number` (1-based)."""
    rows = raw_lines.get(cell_number - 1)
    if not rows or row < 1:
        return None
    return rows[min(row, len(rows)) - 1]
