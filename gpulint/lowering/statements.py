"""The rewriting: LibCST's nodes of newer syntax, rewritten in place in the
buffer (type parameters and `type`, `except*`, `match`; f-strings in
`fstrings`), and the native nodes put back into the tree `ast` reads."""

from __future__ import annotations

import ast
import warnings

import libcst as cst

from gpulint.lowering.buffer import BREAKS, Buffer
from gpulint.lowering.cst_nodes import Collector, line_starts, node_spans, too_deep
from gpulint.lowering.errors import CannotLower, NotPython
from gpulint.lowering.fstrings import lower_fstring
from gpulint.lowering.nodes import (
    Match,
    MatchAs,
    MatchClass,
    MatchMapping,
    MatchOr,
    MatchSequence,
    MatchSingleton,
    MatchStar,
    MatchValue,
    TypeAlias,
    make,
    match_case,
    pos_of,
)


class Lowering(Buffer):
    """One text's rewriting for the grammar of `target`."""

    # -- driver
    def run(self) -> str:
        why = too_deep(self.text)
        if why:
            raise NotPython(why)
        try:
            module = cst.parse_module(self.text)
            self.spans = node_spans(module, self.text)
        except Exception as exc:  # libcst's ParserSyntaxError, or a recursion limit
            raise NotPython(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        self.starts = line_starts(self.text)
        self.buf = list(self.text)
        found = Collector(module)
        if self.target < (3, 12):
            for fs in found.fstrings:
                lower_fstring(self, fs)
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
                    if self.text[i] not in BREAKS:
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
            return make(MatchValue, pos_of(value), value=value)
        if isinstance(p, cst.MatchSingleton):
            value = {"None": None, "True": True, "False": False}[p.value.value]
            return make(MatchSingleton, self.astpos(*self.span(p.value, outer=False)), value=value)
        if isinstance(p, cst.MatchAs):
            if p.pattern is None:
                name = None if p.name is None else p.name.value
                if p.name is not None:
                    a, b = self.span(p.name, outer=False)
                return make(MatchAs, self.astpos(a, b), pattern=None, name=name)
            inner = self.pattern(p.pattern)
            a = self.span(p.pattern)[0]
            b = self.span(p.name, outer=False)[1]
            return make(MatchAs, self.astpos(a, b), pattern=inner, name=p.name.value)
        if isinstance(p, cst.MatchOr):
            pats = [self.pattern(e.pattern) for e in p.patterns]
            a = self.span(p.patterns[0].pattern)[0]
            b = self.span(p.patterns[-1].pattern)[1]
            return make(MatchOr, self.astpos(a, b), patterns=pats)
        if isinstance(p, (cst.MatchList, cst.MatchTuple)):
            pats = [self._element(e) for e in p.patterns]
            if isinstance(p, cst.MatchTuple) and p.lpar:
                a = self.spans[p.lpar[-1]][0]
                b = self.spans[p.rpar[0]][1]
            elif isinstance(p, cst.MatchTuple):  # an open sequence: to its last comma
                first = p.patterns[0]
                a = self.span(first if isinstance(first, cst.MatchStar) else first.value)[0]
                b = self._element_end(p.patterns[-1])
            return make(MatchSequence, self.astpos(a, b), patterns=pats)
        if isinstance(p, cst.MatchMapping):
            keys, pats = [], []
            for e in p.elements:
                ka, kb = self.span(e.key)
                keys.append(self.fragment(ka, kb))
                pats.append(self.pattern(e.pattern))
            rest = p.rest.value if p.rest is not None else None
            return make(MatchMapping, self.astpos(a, b), keys=keys, patterns=pats, rest=rest)
        if isinstance(p, cst.MatchClass):
            ca, cb = self.span(p.cls)
            cls = self.fragment(ca, cb)
            pats = [self.pattern(e.value) for e in p.patterns]
            attrs = [k.key.value for k in p.kwds]
            kpats = [self.pattern(k.pattern) for k in p.kwds]
            return make(MatchClass, self.astpos(a, b), cls=cls, patterns=pats, kwd_attrs=attrs, kwd_patterns=kpats)
        raise CannotLower(f"an unknown pattern ({type(p).__name__})", self.where(a))

    def _element(self, e) -> ast.AST:
        if isinstance(e, cst.MatchStar):
            a = self.span(e, outer=False)[0]
            b = self._star_end(e)
            return make(MatchStar, self.astpos(a, b), name=None if e.name is None else e.name.value)
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

    # -- putting the native nodes back
    def reshape(self, tree: ast.Module) -> None:
        if self.keys:
            Reshaper(self).block_of(tree, "body")


class Reshaper:
    def __init__(self, low: "Lowering") -> None:
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
