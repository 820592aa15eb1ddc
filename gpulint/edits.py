"""Helpers that turn an intended change into minimal text edits over exact
node ranges (Ruff's model): everything outside the edited range stays
byte-for-byte, comments and formatting included. The fix machinery re-parses
the result (LibCST and `compile()`) before anything is written."""

from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.rule import Edit
from gpulint.source import Source


def replace_node(source: Source, node: ast.AST, text: str) -> Edit:
    start, end = source.node_span(node)
    return Edit(start, end, text)


def insert_at(offset: int, text: str) -> Edit:
    return Edit(offset, offset, text)


def delete_range(start: int, end: int) -> Edit:
    return Edit(start, end, "")


def _last_arg_end(source: Source, call: ast.Call) -> Optional[int]:
    ends = [source.node_span(a)[1] for a in call.args]
    ends += [source.node_span(k)[1] for k in call.keywords]
    return max(ends) if ends else None


def _keyword_span(source: Source, kw: ast.keyword):
    # ast.keyword has positions since 3.9
    return source.node_span(kw)


def add_keyword(source: Source, call: ast.Call, keyword_text: str) -> Edit:
    """Add `name=value` as the last argument of `call`, keeping a trailing comma
    and the one-argument-per-line layout of a multi-line call."""
    call_start, call_end = source.node_span(call)
    last_end = _last_arg_end(source, call)
    if last_end is None:
        # `f()` / `f(\n)`: insert just before the closing parenthesis
        close = source.text.rfind(")", call_start, call_end)
        return Edit(close, close, keyword_text)
    last_nodes = list(call.args) + list(call.keywords)
    last = max(last_nodes, key=lambda n: source.node_span(n)[1])
    last_start = source.node_span(last)[0]
    row, col = source.position(last_start)
    call_row, _ = source.position(call_start)
    line = source.line(row)
    prefix = line[: col - 1]
    if isinstance(last, ast.Starred):
        prefix = line[: max(0, col - 1)]
    if row != call_row and prefix.strip() == "":
        return Edit(last_end, last_end, f",\n{prefix}{keyword_text}")
    return Edit(last_end, last_end, f", {keyword_text}")


def find_keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def set_keyword(source: Source, call: ast.Call, name: str, value_text: str) -> Edit:
    """Set `name=value_text`: replace the value of an existing keyword or add one."""
    kw = find_keyword(call, name)
    if kw is not None:
        return replace_node(source, kw.value, value_text)
    return add_keyword(source, call, f"{name}={value_text}")


def remove_argument(source: Source, call: ast.Call, arg: ast.AST) -> Edit:
    """Remove one argument (positional or keyword) with its separating comma."""
    nodes = list(call.args) + list(call.keywords)
    nodes.sort(key=lambda n: source.node_span(n)[0])
    idx = next(i for i, n in enumerate(nodes) if n is arg)
    start, end = source.node_span(arg)
    text = source.text
    if idx + 1 < len(nodes):
        nxt = source.node_span(nodes[idx + 1])[0]
        return Edit(start, nxt, "")
    if idx > 0:
        prev_end = source.node_span(nodes[idx - 1])[1]
        return Edit(prev_end, end, "")
    # the only argument: remove it and a trailing comma
    k = end
    while k < len(text) and text[k] in " \t":
        k += 1
    if k < len(text) and text[k] == ",":
        end = k + 1
    return Edit(start, end, "")


def statement_indent(source: Source, stmt: ast.stmt) -> str:
    line = source.line(stmt.lineno)
    return line[: len(line) - len(line.lstrip())]


def apply_edits(text: str, edits: List[Edit]) -> str:
    """Apply non-overlapping edits (sorted here); overlapping ones raise ValueError."""
    out = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos : e.start])
        out.append(e.content)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)
