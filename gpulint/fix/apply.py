"""Apply fixes to a fixpoint and check that the result still parses."""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, insort
from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional, Tuple, Union

from gpulint.edits import apply_edits
from gpulint.engine.lint import LintOptions, lint_source
from gpulint.rule import SAFE, UNSAFE, Edit, Finding

MAX_PASSES = 10
_LONE_LF = re.compile(r"(?<!\r)\n")


def newline_of(text: str) -> str:
    """The file's line ending, from its first line: "\r\n" or "\n"."""
    i = text.find("\n")
    if i > 0 and text[i - 1] == "\r":
        return "\r\n"
    return "\n"


def with_newline(content: str, newline: str) -> str:
    """A fix's text (written with "\n") in the file's own line ending."""
    return _LONE_LF.sub(newline, content) if newline != "\n" else content


class FixError(Exception):
    """A fix produced code that does not parse: a gpulint bug, reported, never written."""


@dataclass
class FixResult:
    text: str
    fixed: List[Finding] = field(default_factory=list)  # the findings whose fixes were applied
    remaining: List[Finding] = field(default_factory=list)
    held_back_unsafe: int = 0
    # findings that went away: one fix may resolve several (GPU401 rewrites an
    # import and all its calls as one edit), so this can exceed len(fixed)
    fixed_count: int = 0


def validate_code(
    text: str, path: str, code=None, flags: int = 0, prepare: Optional[Callable[[ast.Module], None]] = None
) -> Optional[str]:
    """Why `text` is not valid code, or None. `code`: what compile() gets
    instead of the text (a notebook's program, as an AST). Text in syntax
    newer than this Python's is compiled as the engine parses it: rewritten
    for this Python (gpulint/lowering/), `prepare` applied to its tree."""
    from gpulint.engine import lint as engine

    try:
        if engine.FORCE_LOWER_TO is not None and code is None:
            raise SyntaxError("lowering forced")
        compile(text if code is None else code, path or "<fixed>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        newer = _compile_lowered(text, path, flags, prepare) if code is None else False
        if newer is False:
            return f"compile(): {exc.msg} at line {exc.lineno}"
        if newer is not None:
            return newer
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"compile(): {exc}"
    try:
        import libcst

        libcst.parse_module(text)
    except Exception as exc:  # libcst raises its own ParserSyntaxError
        return f"libcst: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return None


def _compile_lowered(text: str, path: str, flags: int, prepare) -> Union[None, bool, str]:
    """Compile `text` rewritten for this Python: None when it compiles, why
    not, or False when it is not syntax of a newer Python (nothing to rewrite)."""
    from gpulint import lowering
    from gpulint.engine import lint as engine

    try:
        lowered = lowering.lower(text, engine.FORCE_LOWER_TO)
    except lowering.NotPython:
        return False
    except lowering.CannotLower as exc:
        return f"newer syntax that could not be rewritten for this Python: {exc}"
    if lowered == text and engine.FORCE_LOWER_TO is None:
        return False
    try:
        tree = ast.parse(lowered, path or "<fixed>")
        if prepare is not None:
            prepare(tree)
        compile(tree, path or "<fixed>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        return f"compile() of the text rewritten for this Python: {exc.msg} at line {exc.lineno}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"compile(): {exc}"
    return None


class _TakenSpans:
    """The spans of the fixes taken in one pass. A new span overlaps one of
    them when they share text, or one is an insertion strictly inside the
    other, or they start at the same offset. Sorted, so that a pass with
    thousands of fixes checks each against its neighbours, not all of them."""

    def __init__(self) -> None:
        self._spans: List[Tuple[int, int]] = []
        self._starts: set = set()
        self._longest = 0

    def overlaps(self, span: Tuple[int, int]) -> bool:
        s1, e1 = span
        if s1 in self._starts:
            return True
        spans = self._spans
        # a taken span that ends after s1 starts after s1 - longest; it must also start before e1
        i = bisect_left(spans, (e1, -1)) - 1
        while i >= 0 and spans[i][0] > s1 - self._longest - 1:
            s2, e2 = spans[i]
            if s1 < e2 and s2 < e1:
                return True
            i -= 1
        return False

    def add(self, span: Tuple[int, int]) -> None:
        insort(self._spans, span)
        self._starts.add(span[0])
        self._longest = max(self._longest, span[1] - span[0])


def fix_source(
    text: str,
    path: str,
    options: LintOptions,
    unsafe: bool = False,
    newline: str = "\n",
    lint: Optional[Callable[[str], List[Finding]]] = None,
    on_apply: Optional[Callable[[List[Edit]], None]] = None,
    validate: Callable[[str, str], Optional[str]] = validate_code,
) -> FixResult:
    """Apply the allowed fixes to a fixpoint. `lint` lints a version of the
    text (default: `lint_source`), `validate` says why a fixed text is not
    valid code; `on_apply` is told the edits of each pass once they are
    checked (a notebook follows its cells with it)."""
    if lint is None:
        lint = lambda t: lint_source(t, path, options)  # noqa: E731
    allowed = (SAFE, UNSAFE) if unsafe else (SAFE,)
    fixed: List[Finding] = []
    current = text
    initial: Optional[int] = None
    settled: Optional[List[Finding]] = None  # findings of `current` once nothing is left to fix
    for _ in range(MAX_PASSES):
        findings = lint(current)
        if initial is None:
            initial = len(findings)
        todo = [f for f in findings if f.fix is not None and f.fix.applicability in allowed]
        if not todo:
            settled = findings
            break
        edits = []
        taken = _TakenSpans()
        applied = []
        for f in todo:
            spans = [(e.start, e.end) for e in f.fix.edits]
            if any(taken.overlaps(a) for a in spans):
                continue  # overlaps a fix taken this pass; the next pass sees it again
            for a in spans:
                taken.add(a)
            if newline != "\n":
                edits.extend(replace(e, content=with_newline(e.content, newline)) for e in f.fix.edits)
            else:
                edits.extend(f.fix.edits)
            applied.append(f)
        new = apply_edits(current, edits)
        if new == current:
            break
        problem = validate(new, path)
        if problem is not None:
            codes = ",".join(sorted({f.code for f in applied}))
            raise FixError(f"fix by {codes} would produce invalid code ({problem}); file left unchanged")
        if on_apply is not None:
            on_apply(edits)
        current = new
        fixed.extend(applied)
    remaining = settled if settled is not None else lint(current)
    held = sum(1 for f in remaining if f.fix is not None and f.fix.applicability == UNSAFE and not unsafe)
    count = max(len(fixed), (initial or 0) - len(remaining)) if fixed else 0
    return FixResult(current, fixed, remaining, held, count)
