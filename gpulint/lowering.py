"""Parsing code written for a newer Python than the one running gpulint.

Used only after `ast.parse` has raised SyntaxError. LibCST parses the text;
guided by its node positions, what this Python's grammar lacks (PEP 695 and
696 type parameters and `type`, PEP 701 f-strings, `except*`, `match`) is
rewritten in place into older syntax of the same size, so every line and
UTF-8 column stays where it was; `ast.parse` reads the result, and the
rewritten statements are put back as the nodes a native parse gives (on a
Python without `ast.Match`, `ast.TypeAlias`: stand-ins with their fields).
docs/newer-syntax.md lists each rewrite and what is lost.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
import warnings
from typing import Dict, List, Optional, Tuple

import libcst as cst

RUNNING = sys.version_info[:2]


class NotPython(Exception):
    """Not for the rewriting: LibCST cannot parse the text (it is no Python's
    syntax), it has nothing newer than this Python's, or it is too large or
    too deeply nested to give LibCST."""


class CannotLower(Exception):
    """Valid for a newer Python, but not expressible for this one; the message
    says what (and `location`, where known)."""

    def __init__(self, message: str, location: Optional[Tuple[int, int]] = None) -> None:
        super().__init__(message)
        self.location = location


# ---------------------------------------------------------------- stand-in nodes
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


def _make(kind: type, pos: Tuple[int, int, int, int], **fields) -> ast.AST:
    node = kind(**fields)
    node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = pos
    return node


# ---------------------------------------------------------------- entry points
def parse(text: str, path: str = "<unknown>", target: Optional[Tuple[int, int]] = None) -> ast.Module:
    """The module's tree as a native parse by a Python new enough would give
    it (see the module docstring for what differs). `target`: the grammar to
    lower to (default: this Python's; tests lower further to compare). The
    lowered text is kept as `tree.gpulint_lowered_text`, for tokenize."""
    low = _Lowering(text, target or RUNNING)
    lowered = low.run()
    if not low.features and target is None:
        raise NotPython("nothing in it is newer syntax")
    tree = _parse_lowered(lowered, path, low)
    low.reshape(tree)
    tree.gpulint_lowered_text = lowered  # type: ignore[attr-defined]
    return tree


def lower(text: str, target: Optional[Tuple[int, int]] = None) -> str:
    """The text rewritten for this Python's grammar (same lines and columns);
    raises NotPython or CannotLower."""
    low = _Lowering(text, target or RUNNING)
    return low.run()


def _parse_lowered(lowered: str, path: str, low: "_Lowering") -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(lowered, filename=path, type_comments=False)
    except SyntaxError as exc:
        loc = (exc.lineno, exc.offset or 0) if exc.lineno else None
        raise CannotLower(f"{exc.msg or 'invalid syntax'} ({low.describe()})", loc)


# ---------------------------------------------------------------- the rewriting
_BREAKS = "\r\n"
# ASCII stand-ins inside a placeholder f-string's text
_PLACEHOLDER_CHAR = {"{": "(", "}": ")", "\\": "/", "'": "`", '"': "`"}


class _Whole(Exception):
    """The outermost f-string cannot keep its expressions."""


class _Bad(Exception):
    """This nested string literal cannot be written inside its f-string as it is."""


class _Lowering:
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
        from bisect import bisect_right

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
        from bisect import bisect_right

        row = bisect_right(self.starts, i)
        return row, i - self.starts[row - 1] + 1

    def blank(self, a: int, b: int) -> None:
        """Spaces over [a, b), line breaks kept and each line before one
        continued with a backslash (the region is no longer in brackets)."""
        text = self.text
        for i in range(a, b):
            if text[i] not in _BREAKS:
                self.put(i, " ")
        for i in range(a, b):
            c = text[i]
            if c == "\n" and i > 0 and text[i - 1] == "\r":
                continue
            if c in _BREAKS:
                j = i - 1
                if j < a or text[j] in _BREAKS:
                    raise CannotLower(f"an empty line inside a {self.features[-1]}", self.where(i))
                self.put(j, "\\")

    def placeholder_zero(self, a: int, b: int) -> None:
        """A `0` somewhere in the blanked [a, b): the test of an `if` header."""
        text = self.text
        for i in range(a, b):
            if text[i] in _BREAKS:
                continue
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt in _BREAKS and nxt:
                continue
            self.put(i, "0")
            return
        raise CannotLower(f"no room for a test in a {self.features[-1]}", self.where(a))

    # -- driver
    def run(self) -> str:
        why = _too_deep(self.text)
        if why:
            raise NotPython(why)
        try:
            module = cst.parse_module(self.text)
            self.spans = node_spans(module, self.text)
        except Exception as exc:  # libcst's ParserSyntaxError, or a recursion limit
            raise NotPython(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        self.starts = _line_starts(self.text)
        self.buf = list(self.text)
        found = _Collector(module)
        if self.target < (3, 12):
            for fs in found.fstrings:
                self.lower_fstring(fs)
        if self.target < (3, 10):
            # subjects and pattern values are read before their headers are blanked
            for m in found.matches:
                self.plan_match(m)
        for node in found.type_params:
            self.lower_type_params(node)
        if self.target < (3, 12):
            for node in found.aliases:
                self.lower_alias(node)
        if self.target < (3, 11):
            for node in found.try_stars:
                self.lower_try_star(node)
        if self.target < (3, 10):
            for m in found.matches:
                self.lower_match(m)
        return "".join(self.buf)

    # -- PEP 695 / 696
    def lower_type_params(self, node) -> None:
        tps = node.type_parameters
        if self.target < (3, 12):
            self.features.append("type parameter list")
            a, b = self.span(tps, outer=False)
            self.blank(a, b)
            return
        if self.target < (3, 13):
            for tp in tps.params:
                if tp.default is None:
                    continue
                self.features.append("type parameter default")
                a = self.span(tp.param, outer=False)[1]
                b = self.span(tp.default)[1]
                for i in range(a, b):
                    if self.text[i] not in _BREAKS:
                        self.put(i, " ")

    def lower_alias(self, node) -> None:
        self.features.append("type statement")
        a, b = self.span(node, outer=False)
        if self.text[a:a + 4] != "type":
            raise CannotLower("a type statement that does not start with `type`", self.where(a))
        for i, c in enumerate("(_):"):
            self.put(a + i, c)
        self.keys[self.rowcol(a)] = ("alias", (a, b))

    # -- except*
    def lower_try_star(self, node) -> None:
        self.features.append("except*")
        a = self.span(node, outer=False)[0]
        self.keys[self.rowcol(a)] = ("try*",)
        text = self.text
        for h in node.handlers:
            i = self.span(h, outer=False)[0] + len("except")
            while i < len(text) and text[i] != "*":
                if text[i] not in " \t\f\\\r\n":
                    raise CannotLower("an except* without its star", self.where(i))
                i += 1
            self.put(i, " ")

    # -- match
    def plan_match(self, m) -> None:
        """Read the subject and the pattern values, as this Python parses them."""
        a, b = self.span(m.subject)
        subject = self.fragment(a, b)
        if isinstance(m.subject, cst.Tuple) and not m.subject.lpar and isinstance(subject, ast.Tuple):
            # an open tuple: its span is its elements' (a native parse has no parentheses to include)
            subject.lineno, subject.col_offset = self.rowcol(a)
            subject.end_lineno, subject.end_col_offset = self.rowcol(b)
        cases = [self.pattern(c.pattern) for c in m.cases]
        m_key = self.rowcol(self.span(m, outer=False)[0])
        self.keys[m_key] = ("match", m, subject, cases)

    def lower_match(self, m) -> None:
        self.features.append("match statement")
        start = self.span(m, outer=False)[0]
        for i, c in enumerate("if   "):
            self.put(start + i, c)
        sa, sb = self.span(m.subject)
        self.blank(start + 5, sb)
        self.placeholder_zero(start + 5, sb)
        for case in m.cases:
            self.features.append("case clause")
            cstart = self.span(case, outer=False)[0]
            for i, c in enumerate("if  "):
                self.put(cstart + i, c)
            pa, pb = self.span(case.pattern)
            if case.guard is None:
                self.blank(cstart + 4, pb)
                self.placeholder_zero(cstart + 4, pb)
            else:
                ga = self.span(case.guard)[0]
                self.blank(cstart + 4, ga)

    def fragment(self, a: int, b: int) -> ast.expr:
        """The expression at [a, b) of the (partly lowered) text, parsed on its
        own, with the positions it has in the file."""
        src = "(" + "".join(self.buf[a:b]) + ")"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expr = ast.parse(src, mode="eval").body
        except SyntaxError as exc:
            raise CannotLower(f"{exc.msg} in a match statement's expression", self.where(a))
        row, col = self.rowcol(a)
        shift_line, shift_col = row - 1, col - 1
        for n in ast.walk(expr):
            if not hasattr(n, "lineno"):
                continue
            if n.lineno == 1:
                n.col_offset += shift_col
            if n.end_lineno == 1:
                n.end_col_offset += shift_col
            n.lineno += shift_line
            n.end_lineno += shift_line
        return expr

    def pattern(self, p) -> ast.AST:
        """The `ast` pattern of a LibCST one."""
        a, b = self.span(p, outer=False)
        if isinstance(p, cst.MatchValue):
            value = self.fragment(*self.span(p.value))
            return _make(MatchValue, _pos_of(value), value=value)
        if isinstance(p, cst.MatchSingleton):
            value = {"None": None, "True": True, "False": False}[p.value.value]
            return _make(MatchSingleton, self.astpos(*self.span(p.value, outer=False)), value=value)
        if isinstance(p, cst.MatchAs):
            if p.pattern is None:
                name = None if p.name is None else p.name.value
                if p.name is not None:
                    a, b = self.span(p.name, outer=False)
                return _make(MatchAs, self.astpos(a, b), pattern=None, name=name)
            inner = self.pattern(p.pattern)
            a = self.span(p.pattern)[0]
            b = self.span(p.name, outer=False)[1]
            return _make(MatchAs, self.astpos(a, b), pattern=inner, name=p.name.value)
        if isinstance(p, cst.MatchOr):
            pats = [self.pattern(e.pattern) for e in p.patterns]
            a = self.span(p.patterns[0].pattern)[0]
            b = self.span(p.patterns[-1].pattern)[1]
            return _make(MatchOr, self.astpos(a, b), patterns=pats)
        if isinstance(p, (cst.MatchList, cst.MatchTuple)):
            pats = [self._element(e) for e in p.patterns]
            if isinstance(p, cst.MatchTuple) and p.lpar:
                a = self.spans[p.lpar[-1]][0]
                b = self.spans[p.rpar[0]][1]
            elif isinstance(p, cst.MatchTuple):  # an open sequence: to its last comma
                first = p.patterns[0]
                a = self.span(first if isinstance(first, cst.MatchStar) else first.value)[0]
                b = self._element_end(p.patterns[-1])
            return _make(MatchSequence, self.astpos(a, b), patterns=pats)
        if isinstance(p, cst.MatchMapping):
            keys, pats = [], []
            for e in p.elements:
                ka, kb = self.span(e.key)
                keys.append(self.fragment(ka, kb))
                pats.append(self.pattern(e.pattern))
            rest = p.rest.value if p.rest is not None else None
            return _make(MatchMapping, self.astpos(a, b), keys=keys, patterns=pats, rest=rest)
        if isinstance(p, cst.MatchClass):
            ca, cb = self.span(p.cls)
            cls = self.fragment(ca, cb)
            pats = [self.pattern(e.value) for e in p.patterns]
            attrs = [k.key.value for k in p.kwds]
            kpats = [self.pattern(k.pattern) for k in p.kwds]
            return _make(MatchClass, self.astpos(a, b), cls=cls, patterns=pats, kwd_attrs=attrs, kwd_patterns=kpats)
        raise CannotLower(f"an unknown pattern ({type(p).__name__})", self.where(a))

    def _element(self, e) -> ast.AST:
        if isinstance(e, cst.MatchStar):
            a = self.span(e, outer=False)[0]
            b = self._star_end(e)
            return _make(MatchStar, self.astpos(a, b), name=None if e.name is None else e.name.value)
        return self.pattern(e.value)

    def _star_end(self, e) -> int:
        if e.name is not None:
            return self.span(e.name, outer=False)[1]
        i = self.span(e, outer=False)[0] + 1  # `*`, then space, then `_`
        while self.text[i] != "_":
            i += 1
        return i + 1

    def _element_end(self, e) -> int:
        """Where a native parse ends an open sequence: after its trailing comma if it has one."""
        end = self._star_end(e) if isinstance(e, cst.MatchStar) else self.span(e.value)[1]
        text, i = self.text, end
        while i < len(text) and text[i] in " \t\f\\\r\n":  # spaces, and backslash continuations
            i += 1
        return i + 1 if i < len(text) and text[i] == "," else end

    # -- PEP 701
    def lower_fstring(self, fs) -> None:
        edits: Dict[int, str] = {}
        try:
            self._fs_parts(fs, fs.quote, frozenset(), frozenset(), False, False, edits)
        except (_Whole, _Bad):
            edits = self._fs_placeholder(fs)
        if not edits:
            return
        self.features.append("f-string")
        if RUNNING < (3, 12) and not self._fs_parses(fs, edits):
            edits = self._fs_placeholder(fs)
        for i, s in edits.items():
            self.put(i, s)

    def _fs_parses(self, fs, edits: Dict[int, str]) -> bool:
        a, b = self.span(fs, outer=False)
        src = "".join(edits.get(i, self.buf[i]) for i in range(a, b))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse("(" + src + ")", mode="eval")
        except (SyntaxError, ValueError):
            return False
        return True

    def _fs_parts(self, fs, quote: str, fc, ft, single: bool, nested: bool, edits: Dict[int, str]) -> None:
        """Check and rewrite the parts of `fs` (written with `quote`), itself
        inside expression parts that forbid the quote characters `fc`, the
        triple quotes `ft` and (`single`) line breaks."""
        inner_fc = fc | {quote[0]} if len(quote) == 1 else fc
        inner_ft = ft | {quote[0]} if len(quote) == 3 else ft
        inner_single = single or len(quote) == 1
        for part in fs.parts:
            self._fs_part(part, (fc, ft, single, nested), (inner_fc, inner_ft, inner_single), edits)

    def _fs_part(self, part, outer, inner, edits: Dict[int, str]) -> None:
        fc, ft, single, nested = outer
        if isinstance(part, cst.FormattedStringText):
            if nested and not _literal_ok(part.value, fc, ft, single):
                raise _Bad()
            return
        # a replacement field: `{` expression [=] [!conversion] [:format spec] `}`
        a, b = self.span(part, outer=False)
        end = b - 1
        if part.format_spec:
            end = self.span(part.format_spec[0], outer=False)[0] - 1
        literals = _strings(part.expression)
        spans = sorted((self.span(lit, outer=False), lit) for lit in literals)
        text = self.text
        i, k = a + 1, 0
        while i < end:
            if k < len(spans) and i == spans[k][0][0]:
                i = spans[k][0][1]
                k += 1
                continue
            c = text[i]
            if c == "\\":
                raise _Whole()
            if c == "#":  # a comment (PEP 701): blanked to the end of its line
                while i < end and text[i] not in _BREAKS:
                    edits[i] = " "
                    i += 1
                continue
            if c in _BREAKS and inner[2]:
                raise _Whole()
            i += 1
        for (la, lb), lit in spans:
            self._nested_literal(lit, la, lb, inner, edits)
        for p in part.format_spec or ():
            if isinstance(p, cst.FormattedStringExpression) and p.format_spec and any(
                isinstance(q, cst.FormattedStringExpression) for q in p.format_spec
            ):
                raise _Whole()  # `{x:{y:{z}}}`: before 3.12, "expressions nested too deeply"
            self._fs_part(p, outer, inner, edits)

    def _nested_literal(self, lit, a: int, b: int, ctx, edits: Dict[int, str]) -> None:
        fc, ft, single = ctx
        mine: Dict[int, str] = {}
        try:
            parts = _concatenated(lit)
            for p in parts:
                self._requote(p, fc, ft, single, mine)
        except _Bad:
            if any(self.text[i] in _BREAKS for i in range(a, b)):
                raise _Whole()
            mine = {i: "_" for i in range(a, b)}  # a name of the same size
        edits.update(mine)

    def _requote(self, s, fc, ft, single: bool, edits: Dict[int, str]) -> None:
        a, b = self.span(s, outer=False)
        if isinstance(s, cst.SimpleString):
            prefix, quote = s.prefix, s.quote
            content = s.value[len(prefix) + len(quote): len(s.value) - len(quote)]
            if not _literal_ok(content, fc, ft, single):
                raise _Bad()
            chosen = _choose_quote(quote, content, fc, ft)
            self._set_quote(a, b, len(prefix), quote, chosen, edits)
            return
        if isinstance(s, cst.FormattedString):
            prefix, quote = s.prefix, s.quote
            content = "".join(_fstring_texts(s))
            if not _literal_ok(content, fc, ft, single):
                raise _Bad()
            chosen = _choose_quote(quote, content, fc, ft)
            self._set_quote(a, b, len(prefix), quote, chosen, edits)
            self._fs_parts(s, chosen, fc, ft, single, True, edits)
            return
        raise _Bad()  # a t-string, or something else this cannot re-quote

    def _set_quote(self, a: int, b: int, plen: int, quote: str, chosen: str, edits: Dict[int, str]) -> None:
        if chosen == quote:
            return
        n = len(quote)
        for j in range(n):
            edits[a + plen + j] = chosen[j]
            edits[b - n + j] = chosen[j]

    def _fs_placeholder(self, fs) -> Dict[int, str]:
        """A plain f-string of the same size and lines in place of `fs`."""
        a, b = self.span(fs, outer=False)
        q = fs.quote
        lo, hi = a + len(fs.prefix) + len(q), b - len(q)
        text = self.text
        edits: Dict[int, str] = {}
        for i in range(lo, hi):
            c = text[i]
            if c in _BREAKS:
                if len(q) == 1 and not (c == "\n" and i > 0 and text[i - 1] == "\r"):
                    j = i - 1
                    if j < lo or text[j] in _BREAKS:
                        raise CannotLower("an f-string with an empty line in a replacement field", self.where(i))
                    edits[j] = "\\"
                continue
            if c in _PLACEHOLDER_CHAR:
                edits[i] = _PLACEHOLDER_CHAR[c]
        self.features.append("f-string")
        return edits

    # -- putting the native nodes back
    def reshape(self, tree: ast.Module) -> None:
        if self.keys:
            _Reshaper(self).block_of(tree, "body")


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


def _too_deep(text: str) -> Optional[str]:
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


def _line_starts(text: str) -> List[int]:
    """Offsets of the lines' starts; "\r\n", "\r" and "\n" end lines, as for `ast` and LibCST."""
    return [0] + [m.end() for m in _BREAK_RE.finditer(text)]


_BREAK_RE = re.compile(r"\r\n?|\n")


def _pos_of(node: ast.AST) -> Tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _literal_ok(content: str, fc, ft, single: bool) -> bool:
    """Whether a string's text may stand inside a pre-3.12 f-string's expression."""
    if "\\" in content:
        return False
    if single and ("\n" in content or "\r" in content):
        return False
    if any(c in content for c in fc):
        return False
    return not any(c * 3 in content for c in ft)


def _choose_quote(quote: str, content: str, fc, ft) -> str:
    other = quote.replace('"', "\0").replace("'", '"').replace("\0", "'")
    for cand in (quote, other):
        ch = cand[0]
        if ch in fc or (len(cand) == 3 and ch in ft):
            continue
        if ch in content and cand != quote:
            continue
        if len(cand) == 3 and content.endswith(ch):
            continue
        return cand
    raise _Bad()


_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _children(node) -> list:
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


_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString) + (
    (cst.TemplatedString,) if hasattr(cst, "TemplatedString") else ()
)


class _Collector:
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
            stack.extend(reversed(_children(node)))


_KINDS = {
    cst.FormattedString: "f", cst.Match: "match", cst.TryStar: "try*", cst.TypeAlias: "alias",
    cst.FunctionDef: "def", cst.ClassDef: "def",
}


def _strings(expr) -> list:
    """The outermost string literals (a concatenation as one) in an expression."""
    out: list = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, _STRINGS):
            out.append(node)
            continue
        stack.extend(reversed(_children(node)))
    return out


def _concatenated(node) -> list:
    if isinstance(node, cst.ConcatenatedString):
        return _concatenated(node.left) + _concatenated(node.right)
    return [node]


def _fstring_texts(fs) -> List[str]:
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

    starts = _line_starts(text)
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


class _Reshaper:
    def __init__(self, low: _Lowering) -> None:
        self.low = low
        self.keys = low.keys

    def block_of(self, node: ast.AST, field: str) -> None:
        stmts = getattr(node, field, None)
        if not isinstance(stmts, list):
            return
        setattr(node, field, [self.stmt(s) for s in stmts])

    def stmt(self, s: ast.stmt) -> ast.stmt:
        for f in ("body", "orelse", "finalbody"):
            self.block_of(s, f)
        for h in getattr(s, "handlers", ()) or ():
            self.block_of(h, "body")
        for c in getattr(s, "cases", ()) or ():
            self.block_of(c, "body")
        key = self.keys.get((s.lineno, s.col_offset))
        if key is None:
            return s
        kind = key[0]
        if kind == "try*" and isinstance(s, ast.Try):
            if hasattr(ast, "TryStar"):
                return ast.copy_location(
                    ast.TryStar(body=s.body, handlers=s.handlers, orelse=s.orelse, finalbody=s.finalbody), s
                )
            return s
        if kind == "alias" and isinstance(s, ast.AnnAssign):
            name = s.annotation
            if not isinstance(name, ast.Name):
                raise CannotLower("a type statement whose name did not read back", (s.lineno, s.col_offset + 1))
            name.ctx = ast.Store()
            node = TypeAlias(name=name, type_params=[], value=s.value)
            return ast.copy_location(node, s)
        if kind == "match" and isinstance(s, ast.If):
            _, m, subject, patterns = key
            cases = []
            if len(s.body) != len(patterns) or not all(isinstance(c, ast.If) for c in s.body):
                raise CannotLower("a match statement whose cases did not read back", (s.lineno, s.col_offset + 1))
            for c, lcase, pat in zip(s.body, m.cases, patterns):
                guard = c.test if lcase.guard is not None else None
                cases.append(match_case(pattern=pat, guard=guard, body=c.body))
            node = Match(subject=subject, cases=cases)
            return ast.copy_location(node, s)
        raise CannotLower("a rewritten statement did not read back", (s.lineno, s.col_offset + 1))
