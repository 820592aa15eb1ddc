"""Helpers that turn an intended change into minimal text edits over exact
node ranges (Ruff's model): everything outside the edited range stays
byte-for-byte, comments and formatting included. The fix machinery re-parses
the result (LibCST and `compile()`) before anything is written."""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence

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
    if not ends:
        return None
    return _past_wrapping_parens(source.text, max(ends), source.node_span(call)[1] - 1)


def _past_wrapping_parens(text: str, pos: int, close: int) -> int:
    """The end of the last argument including redundant parentheses around
    it: `torch.zeros((n))` ends after `(n)`, not after `n`. Between the last
    argument and the call's own `)` at `close` there is only space, comments,
    a trailing comma and such parentheses."""
    end = i = pos
    while i < close:
        c = text[i]
        if c == ")":
            i += 1
            end = i
        elif c in " \t\r\n\f\\":
            i += 1
        elif c == "#":
            nl = text.find("\n", i, close)
            i = close if nl == -1 else nl
        else:
            break  # a trailing comma: the call's own parenthesis comes next
    return end


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


def _statement_list(parent: ast.AST, stmt: ast.stmt) -> Optional[List[ast.stmt]]:
    for _, value in ast.iter_fields(parent):
        if isinstance(value, list) and any(v is stmt for v in value):
            return value
    return None


def _line_start(source: Source, row: int) -> int:
    return source.offset(row, 0) if row >= 1 else 0


def _line_content_end(text: str, line_end: int, floor: int) -> int:
    """The offset where a line's content ends, before its line break."""
    k = line_end
    while k > floor and text[k - 1] in "\r\n":
        k -= 1
    return k


def _only_semicolon_or_comment(rest: str) -> bool:
    rest = rest.strip()
    while rest.startswith(";"):
        rest = rest[1:].lstrip()
    return rest == "" or rest.startswith("#")


def remove_statement(source: Source, stmt: ast.stmt, ancestors: Sequence[ast.AST]) -> List[Edit]:
    """Edits that delete `stmt` and keep its block valid.

    `ancestors` runs from the module down to the statement's parent. A
    statement on its own line goes with its whole line (line break and
    trailing comment included); one joined to others on its line with `;`
    goes with its `;`; the only statement of a block becomes `pass`.
    Everything else is left byte-for-byte.

    When every other statement of the block is a bare call that another fix
    might delete in the same pass, a zero-width edit at the block's first line
    makes such removals overlap, so the fix loop applies one per pass and the
    last one left becomes `pass` instead of leaving an empty block."""
    text = source.text
    parent = ancestors[-1] if ancestors else None
    body = _statement_list(parent, stmt) if parent is not None else None
    start, end = source.node_span(stmt)
    end_row = getattr(stmt, "end_lineno", None) or stmt.lineno
    line_end = _line_start(source, end_row + 1)
    eol = _line_content_end(text, line_end, end)
    own_line = text[_line_start(source, stmt.lineno) : start].strip() == "" and _only_semicolon_or_comment(
        text[end:eol]
    )
    if body is None or len(body) == 1:
        return [Edit(start, eol if own_line else end, "pass")]
    removal = _removal(source, body, stmt, start, end, end_row, own_line, line_end)
    others = [s for s in body if s is not stmt]
    if all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in others):
        anchor = _line_start(source, body[0].lineno)
        if removal.start != anchor:
            return [Edit(anchor, anchor, ""), removal]
    return [removal]


def _removal(source: Source, body, stmt, start: int, end: int, end_row: int, own_line: bool, line_end: int) -> Edit:
    text = source.text
    idx = next(i for i, s in enumerate(body) if s is stmt)
    prev = body[idx - 1] if idx > 0 else None
    nxt = body[idx + 1] if idx + 1 < len(body) else None
    if prev is not None and (getattr(prev, "end_lineno", None) or prev.lineno) == stmt.lineno:
        prev_end = source.node_span(prev)[1]
        if ";" in text[prev_end:start]:
            return Edit(prev_end, end, "")  # `a; stmt` or `a; stmt; b`: drop "; stmt"
    if nxt is not None and nxt.lineno == end_row:
        nxt_start = source.node_span(nxt)[0]
        if ";" in text[end:nxt_start]:
            return Edit(start, nxt_start, "")  # `stmt; b`: drop "stmt; "
    if own_line:
        return Edit(_line_start(source, stmt.lineno), line_end, "")
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
