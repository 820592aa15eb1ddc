"""gpulint.edits.remove_statement: delete one statement, keep the block valid,
leave every other byte alone."""

from __future__ import annotations

import ast

import pytest

from gpulint.model.file import FileModel
from gpulint.edits import apply_edits, remove_statement
from gpulint.source import Source


def remove(text: str, marker: str = "target()") -> str:
    """Remove every statement `marker` (one edit set per statement, applied together)."""
    tree = ast.parse(text)
    fa = FileModel(tree, text)
    source = Source(text)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and ast.unparse(node) == marker:
            edits.extend(e for e in remove_statement(source, node, fa.index.ancestors(node)) if e.start != e.end or e.content)
    out = apply_edits(text, edits)
    compile(out, "<removed>", "exec")
    return out


@pytest.mark.parametrize(
    "before,after",
    [
        # own line, with its comment and line break
        ("a = 1\ntarget()  # gone\nb = 2\n", "a = 1\nb = 2\n"),
        # indented, in a block with other statements
        ("for x in y:\n    a(x)\n    target()\n    b(x)\n", "for x in y:\n    a(x)\n    b(x)\n"),
        # the only statement of a block becomes `pass` (its comment goes too)
        ("if c:\n    target()  # why\nelse:\n    d()\n", "if c:\n    pass\nelse:\n    d()\n"),
        ("for x in y:\n    target()\n", "for x in y:\n    pass\n"),
        ("try:\n    a()\nexcept E:\n    target()\n", "try:\n    a()\nexcept E:\n    pass\n"),
        # on the header line
        ("if c: target()\nd()\n", "if c: pass\nd()\n"),
        ("if c: target()  # keep\n", "if c: pass  # keep\n"),
        # joined with `;`
        ("a(); target(); b()\n", "a(); b()\n"),
        ("target(); b()\n", "b()\n"),
        ("a(); target()\n", "a()\n"),
        ("a(); target()  # c\n", "a()  # c\n"),
        ("if c: a(); target()\n", "if c: a()\n"),
        # trailing semicolon
        ("a()\ntarget();\nb()\n", "a()\nb()\n"),
        # CRLF and CR line endings are kept
        ("a()\r\ntarget()\r\nb()\r\n", "a()\r\nb()\r\n"),
        ("a()\rtarget()\rb()\r", "a()\rb()\r"),
        # the last line without a line break
        ("a()\ntarget()", "a()\n"),
        # blank lines and comments around are untouched
        ("a()\n\n# note\ntarget()\n\n# more\nb()\n", "a()\n\n# note\n\n# more\nb()\n"),
        # non-ASCII text before and on the line
        ("s = 'é'\ntarget()  # café\nb = 'ü'\n", "s = 'é'\nb = 'ü'\n"),
    ],
)
def test_remove_statement(before, after):
    assert remove(before) == after


def test_remove_multiline_statement():
    assert remove("a()\ntarget(\n    1,\n)  # c\nb()\n", marker="target(1)") == "a()\nb()\n"


def test_two_removals_that_would_empty_a_block_overlap():
    """Edits for two bare-call statements of the same block share a zero-width
    anchor, so a fix loop applies one of them per pass (never an empty block)."""
    text = "while True:\n    target()\n    target()\n"
    tree = ast.parse(text)
    fa = FileModel(tree, text)
    source = Source(text)
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.Expr)]
    spans = [[(e.start, e.end) for e in remove_statement(source, s, fa.index.ancestors(s))] for s in stmts]
    line_start = text.index("    target()")
    # the first removal starts at the block's first line; the second carries a
    # zero-width edit there: the fix loop treats edits starting at one offset as overlapping
    assert spans[0] == [(line_start, text.index("    target()", line_start + 1))]
    assert spans[1][0] == (line_start, line_start)
    assert len(spans[1]) == 2


def test_no_anchor_when_other_statements_stay():
    text = "for x in y:\n    z = x\n    target()\n"
    tree = ast.parse(text)
    fa = FileModel(tree, text)
    stmt = next(n for n in ast.walk(tree) if isinstance(n, ast.Expr))
    edits = remove_statement(Source(text), stmt, fa.index.ancestors(stmt))
    assert len(edits) == 1
    assert apply_edits(text, edits) == "for x in y:\n    z = x\n"
