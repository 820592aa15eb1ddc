"""What the rewriting reads from LibCST: which texts it must not be given,
the nodes to lower, and every node's character span."""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst


# LibCST's parser recurses without a limit: thousands of nested brackets or
# chained operators crash the process (a segfault) or take seconds to minutes;
# a very large file takes LibCST many seconds and gigabytes.
# CPython refuses more than 200 nested brackets; real code never chains
# hundreds of prefix operators, lambdas, calls or attributes on one line.
_MAX_BRACKETS = 200
_MAX_CHARS = 4_000_000  # some 100,000 lines: LibCST parses about 15,000 a second
_CHAINS = [
    re.compile(r"(?:[-+~]\s*){300,}"),
    re.compile(r"(?:\bnot\s+){300,}"),
    re.compile(r"(?:\blambda\s*:\s*){300,}"),
    re.compile(r"(?:\bawait\s+){300,}"),
    re.compile(r"(?:\.\s*[A-Za-z_]\w*\s*(?:\(\s*\))?\s*){300,}"),
    re.compile(r"(?:\w+\s*(?:\*\*|//|<<|>>|[-+*/%|&^@])\s*){1000,}"),
]
_BRACKET_RE = re.compile(r"[()\[\]{}]")


def too_deep(text: str) -> Optional[str]:
    """Why LibCST must not be given `text`, or None."""
    if len(text) > _MAX_CHARS:
        return f"larger than {_MAX_CHARS // 1_000_000} million characters"
    depth = 0
    for m in _BRACKET_RE.finditer(text):
        if m.group() in "([{":
            depth += 1
            if depth > _MAX_BRACKETS:
                return f"more than {_MAX_BRACKETS} nested brackets"
        elif depth:
            depth -= 1
    long_lines = "\n".join(line for line in text.splitlines() if len(line) >= 300)  # where a chain can be
    for chain in _CHAINS if long_lines else ():
        if chain.search(long_lines):
            return "an expression chained too deeply to rewrite"
    return None


def line_starts(text: str) -> List[int]:
    """Offsets of the lines' starts; "\r\n", "\r" and "\n" end lines, as for `ast` and LibCST."""
    return [0] + [m.end() for m in _BREAK_RE.finditer(text)]


_BREAK_RE = re.compile(r"\r\n?|\n")


_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def children(node) -> list:
    """A CST node's child nodes, in source order (a walk over its fields:
    several times faster than LibCST's visitors, which rebuild every node)."""
    cls = node.__class__
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = _CHILD_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(node))
    out = []
    is_node = _IS_NODE
    for name in fields:
        v = getattr(node, name)
        t = v.__class__
        if t is list or t is tuple:
            for x in v:
                k = is_node.get(x.__class__)
                if k is None:
                    k = is_node[x.__class__] = isinstance(x, cst.CSTNode)
                if k:
                    out.append(x)
        else:
            k = is_node.get(t)
            if k is None:
                k = is_node[t] = isinstance(v, cst.CSTNode)
            if k:
                out.append(v)
    return out


_IS_NODE: Dict[type, bool] = {}


STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString) + (
    (cst.TemplatedString,) if hasattr(cst, "TemplatedString") else ()
)


class Collector:
    """The nodes to lower, in source order: outermost f-strings, match
    statements, definitions with type parameters, type aliases, try/except*."""

    def __init__(self, module) -> None:
        self.fstrings: list = []
        self.matches: list = []
        self.type_params: list = []
        self.aliases: list = []
        self.try_stars: list = []
        stack = [module]
        kinds = _KINDS
        while stack:
            node = stack.pop()
            kind = kinds.get(node.__class__)
            if kind is not None:
                if kind == "f":
                    self.fstrings.append(node)
                    continue
                if kind == "match":
                    self.matches.append(node)
                elif kind == "try*":
                    self.try_stars.append(node)
                else:
                    if getattr(node, "type_parameters", None) is not None:
                        self.type_params.append(node)
                    if kind == "alias":
                        self.aliases.append(node)
            stack.extend(reversed(children(node)))


_KINDS = {
    cst.FormattedString: "f", cst.Match: "match", cst.TryStar: "try*", cst.TypeAlias: "alias",
    cst.FunctionDef: "def", cst.ClassDef: "def",
}


def strings(expr) -> list:
    """The outermost string literals (a concatenation as one) in an expression."""
    out: list = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, STRINGS):
            out.append(node)
            continue
        stack.extend(reversed(children(node)))
    return out


def concatenated(node) -> list:
    if isinstance(node, cst.ConcatenatedString):
        return concatenated(node.left) + concatenated(node.right)
    return [node]


def fstring_texts(fs) -> List[str]:
    out = []
    for p in fs.parts:
        if isinstance(p, cst.FormattedStringText):
            out.append(p.value)
        elif p.format_spec:
            out.extend(q.value for q in p.format_spec if isinstance(q, cst.FormattedStringText))
    return out


# ---------------------------------------------------------------- node positions
def node_spans(module, text: str) -> Dict[object, Tuple[int, int]]:
    """{CST node: [start, end) character offsets}, the ranges of LibCST's
    PositionProvider. Computed by one code generation that counts
    characters (a sixth of the provider's time, which tracks lines and
    columns); through the provider if LibCST's internals have changed."""
    try:
        state = _SpanState(module)
        module._codegen(state)
        if state.offset == len(text) and not state.stack:
            return state.spans
    except Exception:  # pragma: no cover - a LibCST whose code generation works otherwise
        pass
    from libcst.metadata import MetadataWrapper, PositionProvider

    starts = line_starts(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {
        node: (starts[r.start.line - 1] + r.start.column, starts[r.end.line - 1] + r.end.column)
        for node, r in positions.items()
    }


class _Recorder:
    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc) -> bool:
        spans = self.state.spans
        start = spans[self.start_node][0] if self.start_node is not None else self.start
        end = spans[self.end_node][1] if self.end_node is not None else self.state.offset
        spans[self.node] = (start, end)
        return False


try:
    from libcst._nodes.internal import CodegenState as _CodegenState
except ImportError:  # pragma: no cover - node_spans then uses the provider
    _CodegenState = object  # type: ignore[assignment,misc]


class _SpanState(_CodegenState):  # type: ignore[misc,valid-type]
    """LibCST's code generation, counting the characters it writes."""

    def __init__(self, module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: Dict[object, Tuple[int, int]] = {}
        self.stack: List[int] = []

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for t in self.indent_tokens:
            self.offset += len(t)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.offset -= len(self.tokens.pop())

    def before_codegen(self, node) -> None:
        self.stack.append(self.offset)

    def after_codegen(self, node) -> None:
        start = self.stack.pop()
        if node not in self.spans:  # a node without a syntactic position of its own: with its whitespace
            self.spans[node] = (start, self.offset)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Recorder:
        return _Recorder(self, node, start_node, end_node)
