"""PEP 701 f-strings, rewritten for a Python before 3.12: nested quotes
re-quoted, comments blanked, or, where that cannot be done, a plain f-string
of the same size and lines in the expression's place."""

from __future__ import annotations

import ast
import warnings
from typing import Dict

import libcst as cst

from gpulint.lowering.buffer import BREAKS, Buffer
from gpulint.lowering.cst_nodes import concatenated, fstring_texts, strings
from gpulint.lowering.errors import RUNNING, CannotLower

# ASCII stand-ins inside a placeholder f-string's text
PLACEHOLDER_CHAR = {"{": "(", "}": ")", "\\": "/", "'": "`", '"': "`"}



class Whole(Exception):
    """The outermost f-string cannot keep its expressions."""


class Bad(Exception):
    """This nested string literal cannot be written inside its f-string as it is."""



def lower_fstring(low: Buffer, fs) -> None:
    edits: Dict[int, str] = {}
    try:
        fs_parts(low, fs, fs.quote, frozenset(), frozenset(), False, False, edits)
    except (Whole, Bad):
        edits = fs_placeholder(low, fs)
    if not edits:
        return
    low.features.append("f-string")
    if RUNNING < (3, 12) and not fs_parses(low, fs, edits):
        edits = fs_placeholder(low, fs)
    for i, s in edits.items():
        low.put(i, s)

def fs_parses(low: Buffer, fs, edits: Dict[int, str]) -> bool:
    a, b = low.span(fs, outer=False)
    src = "".join(edits.get(i, low.buf[i]) for i in range(a, b))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse("(" + src + ")", mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True

def fs_parts(low: Buffer, fs, quote: str, fc, ft, single: bool, nested: bool, edits: Dict[int, str]) -> None:
    """Check and rewrite the parts of `fs` (written with `quote`), itself
    inside expression parts that forbid the quote characters `fc`, the
    triple quotes `ft` and (`single`) line breaks."""
    inner_fc = fc | {quote[0]} if len(quote) == 1 else fc
    inner_ft = ft | {quote[0]} if len(quote) == 3 else ft
    inner_single = single or len(quote) == 1
    for part in fs.parts:
        fs_part(low, part, (fc, ft, single, nested), (inner_fc, inner_ft, inner_single), edits)

def fs_part(low: Buffer, part, outer, inner, edits: Dict[int, str]) -> None:
    fc, ft, single, nested = outer
    if isinstance(part, cst.FormattedStringText):
        if nested and not literal_ok(part.value, fc, ft, single):
            raise Bad()
        return
    # a replacement field: `{` expression [=] [!conversion] [:format spec] `}`
    a, b = low.span(part, outer=False)
    end = b - 1
    if part.format_spec:
        end = low.span(part.format_spec[0], outer=False)[0] - 1
    literals = strings(part.expression)
    spans = sorted((low.span(lit, outer=False), lit) for lit in literals)
    text = low.text
    i, k = a + 1, 0
    while i < end:
        if k < len(spans) and i == spans[k][0][0]:
            i = spans[k][0][1]
            k += 1
            continue
        c = text[i]
        if c == "\\":
            raise Whole()
        if c == "#":  # a comment (PEP 701): blanked to the end of its line
            while i < end and text[i] not in BREAKS:
                edits[i] = " "
                i += 1
            continue
        if c in BREAKS and inner[2]:
            raise Whole()
        i += 1
    for (la, lb), lit in spans:
        nested_literal(low, lit, la, lb, inner, edits)
    for p in part.format_spec or ():
        if isinstance(p, cst.FormattedStringExpression) and p.format_spec and any(
            isinstance(q, cst.FormattedStringExpression) for q in p.format_spec
        ):
            raise Whole()  # `{x:{y:{z}}}`: before 3.12, "expressions nested too deeply"
        fs_part(low, p, outer, inner, edits)

def nested_literal(low: Buffer, lit, a: int, b: int, ctx, edits: Dict[int, str]) -> None:
    fc, ft, single = ctx
    mine: Dict[int, str] = {}
    try:
        parts = concatenated(lit)
        for p in parts:
            requote(low, p, fc, ft, single, mine)
    except Bad:
        if any(low.text[i] in BREAKS for i in range(a, b)):
            raise Whole()
        mine = {i: "_" for i in range(a, b)}  # a name of the same size
    edits.update(mine)

def requote(low: Buffer, s, fc, ft, single: bool, edits: Dict[int, str]) -> None:
    a, b = low.span(s, outer=False)
    if isinstance(s, cst.SimpleString):
        prefix, quote = s.prefix, s.quote
        content = s.value[len(prefix) + len(quote): len(s.value) - len(quote)]
        if not literal_ok(content, fc, ft, single):
            raise Bad()
        chosen = choose_quote(quote, content, fc, ft)
        set_quote(low, a, b, len(prefix), quote, chosen, edits)
        return
    if isinstance(s, cst.FormattedString):
        prefix, quote = s.prefix, s.quote
        content = "".join(fstring_texts(s))
        if not literal_ok(content, fc, ft, single):
            raise Bad()
        chosen = choose_quote(quote, content, fc, ft)
        set_quote(low, a, b, len(prefix), quote, chosen, edits)
        fs_parts(low, s, chosen, fc, ft, single, True, edits)
        return
    raise Bad()  # a t-string, or something else this cannot re-quote

def set_quote(low: Buffer, a: int, b: int, plen: int, quote: str, chosen: str, edits: Dict[int, str]) -> None:
    if chosen == quote:
        return
    n = len(quote)
    for j in range(n):
        edits[a + plen + j] = chosen[j]
        edits[b - n + j] = chosen[j]

def fs_placeholder(low: Buffer, fs) -> Dict[int, str]:
    """A plain f-string of the same size and lines in place of `fs`."""
    a, b = low.span(fs, outer=False)
    q = fs.quote
    lo, hi = a + len(fs.prefix) + len(q), b - len(q)
    text = low.text
    edits: Dict[int, str] = {}
    for i in range(lo, hi):
        c = text[i]
        if c in BREAKS:
            if len(q) == 1 and not (c == "\n" and i > 0 and text[i - 1] == "\r"):
                j = i - 1
                if j < lo or text[j] in BREAKS:
                    raise CannotLower("an f-string with an empty line in a replacement field", low.where(i))
                edits[j] = "\\"
            continue
        if c in PLACEHOLDER_CHAR:
            edits[i] = PLACEHOLDER_CHAR[c]
    low.features.append("f-string")
    return edits


def literal_ok(content: str, fc, ft, single: bool) -> bool:
    """Whether a string's text may stand inside a pre-3.12 f-string's expression."""
    if "\\" in content:
        return False
    if single and ("\n" in content or "\r" in content):
        return False
    if any(c in content for c in fc):
        return False
    return not any(c * 3 in content for c in ft)


def choose_quote(quote: str, content: str, fc, ft) -> str:
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
    raise Bad()
