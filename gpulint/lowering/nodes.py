"""`ast` nodes a native parse gives for newer syntax: the real classes where
this Python has them, else stand-ins with their fields."""

from __future__ import annotations

import ast
from typing import Tuple


def _node_class(name: str, base: type, fields: Tuple[str, ...]) -> type:
    """`ast.<name>` where this Python has it, else a class with its fields."""
    cls = getattr(ast, name, None)
    if cls is not None:
        return cls
    attrs = ("lineno", "col_offset", "end_lineno", "end_col_offset") if base is not ast.AST else ()
    return type(name, (base,), {"_fields": fields, "_attributes": attrs, "__module__": __name__})


_pattern = getattr(ast, "pattern", None) or type("pattern", (ast.AST,), {"_fields": (), "__module__": __name__})
Match = _node_class("Match", ast.stmt, ("subject", "cases"))
match_case = _node_class("match_case", ast.AST, ("pattern", "guard", "body"))
MatchValue = _node_class("MatchValue", _pattern, ("value",))
MatchSingleton = _node_class("MatchSingleton", _pattern, ("value",))
MatchSequence = _node_class("MatchSequence", _pattern, ("patterns",))
MatchMapping = _node_class("MatchMapping", _pattern, ("keys", "patterns", "rest"))
MatchClass = _node_class("MatchClass", _pattern, ("cls", "patterns", "kwd_attrs", "kwd_patterns"))
MatchStar = _node_class("MatchStar", _pattern, ("name",))
MatchAs = _node_class("MatchAs", _pattern, ("pattern", "name"))
MatchOr = _node_class("MatchOr", _pattern, ("patterns",))
TypeAlias = _node_class("TypeAlias", ast.stmt, ("name", "type_params", "value"))


def make(kind: type, pos: Tuple[int, int, int, int], **fields) -> ast.AST:
    node = kind(**fields)
    node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = pos
    return node


def pos_of(node: ast.AST) -> Tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
