"""The rule framework: what a rule is, what it reports, and how rules are found.

A rule is one module under `gpulint/rules/` holding one `Rule` subclass. The
class carries everything about the rule: code, kebab-case name, message, fix
safety, whether it is on by default, its documentation (the class docstring,
Ruff's sections) and its bad/good `examples`. The examples are the tests
(lint(bad) flags, lint(good) is clean, fix(bad) == good), they render the
"Example" / "Use instead" sections of the docs, and the harness times them.

Rules are discovered by walking the `gpulint.rules` package; nothing is
registered by hand.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.engine import FileContext

SAFE = "safe"
UNSAFE = "unsafe"
NONE = "none"
FIX_SAFETIES = (SAFE, UNSAFE, NONE)

DOC_SECTIONS = ("What it does", "Why is this bad?", "Fix safety", "References")
DOCS_URL = "https://github.com/gpulint/gpulint/blob/main/docs/rules/{code}.md"


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (absolute character offsets) with `content`."""

    start: int
    end: int
    content: str
    # 1-based (row, column) of start and end; filled in by the engine
    location: Tuple[int, int] = (0, 0)
    end_location: Tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Fix:
    message: str
    edits: Tuple[Edit, ...]
    applicability: str  # SAFE or UNSAFE


@dataclass
class Finding:
    code: str
    name: str
    message: str
    path: str
    row: int
    col: int
    end_row: int
    end_col: int
    noqa_row: int
    fix: Optional[Fix] = None
    # in a notebook: the cell's number (1-based, every cell counted, as Ruff does);
    # row, end_row and noqa_row are then rows within the cell
    cell: Optional[int] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability == SAFE

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code, name=self.name)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.row, self.col, self.code)


@dataclass(frozen=True)
class Example:
    """A bad/good pair. `good` is exactly what `gpulint fix` makes of `bad`
    (with --unsafe-fixes for an unsafe fix); for a rule without a fix it is
    the documented "use instead"."""

    bad: str
    good: str
    title: str = ""
    # extra lint-only cases
    options: Dict[str, object] = field(default_factory=dict)

    @property
    def bad_code(self) -> str:
        return textwrap.dedent(self.bad).lstrip("\n")

    @property
    def good_code(self) -> str:
        return textwrap.dedent(self.good).lstrip("\n")


TIME = "time"
MEMORY = "memory"
BENCH_METRICS = (TIME, MEMORY)
CHECKS = ("allclose", "stats", "none")


@dataclass(frozen=True)
class Bench:
    """The rule's runtime workload for `gpulint bench`.

    The program `setup + bad` (and `setup + good`) is run in a fresh
    subprocess with two globals set: `DEVICE` (a string such as "cuda") and
    `SMALL` (True for a smoke test: tiny sizes). It must define
    `run(steps)`, which does `steps` whole steps (the loop is inside `run`, so
    the linter sees it) and returns the value of the last step (a tensor, a
    number, or a tuple/list/dict of them) for the correctness check. `good`
    is exactly what `gpulint fix --unsafe-fixes` makes of `bad` for a fixable
    rule (tested), otherwise the documented "use instead".
    """

    setup: str
    bad: str
    good: str
    # what decides the verdict: step time, or peak device memory
    metric: str = TIME
    # steps per timed repetition, and warm-up steps, at full size
    steps: int = 20
    warmup: int = 5
    # correctness: "allclose" (rtol/atol), "stats" (same shape and dtype, mean
    # and std within rtol: for fixes that change random streams or precision
    # by design), or "none" (the results are not comparable; `note` says why)
    check: str = "allclose"
    rtol: float = 1e-5
    atol: float = 1e-6
    # one line: what the workload is, and why the check is what it is
    note: str = ""

    @staticmethod
    def _code(text: str) -> str:
        return textwrap.dedent(text).strip("\n") + "\n"

    @property
    def bad_program(self) -> str:
        return self._code(self.setup) + "\n" + self._code(self.bad)

    @property
    def good_program(self) -> str:
        return self._code(self.setup) + "\n" + self._code(self.good)


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    message: ClassVar[str] = ""
    fix_safety: ClassVar[str] = NONE
    default: ClassVar[bool] = True
    # The file is only parsed for this rule when one of these substrings occurs in
    # it (a cheap pre-filter); an empty tuple means "always".
    needles: ClassVar[Tuple[str, ...]] = ()
    examples: ClassVar[Tuple[Example, ...]] = ()
    # the workload `gpulint bench` times (None: not benchmarked yet)
    bench: ClassVar[Optional[Bench]] = None

    # Subclasses implement visit_<AstNodeType>(self, node, ctx) and/or
    # begin_file(self, ctx) / end_file(self, ctx).

    def report(
        self,
        ctx: "FileContext",
        node: ast.AST,
        message: Optional[str] = None,
        fix: Optional[Fix] = None,
        **fmt: object,
    ) -> None:
        ctx.report(self, node, message if message is not None else self.message.format(**fmt), fix)

    def make_fix(self, message: str, edits, applicability: Optional[str] = None) -> Fix:
        return Fix(message, tuple(edits), applicability or self.fix_safety)

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_sections(cls) -> Dict[str, str]:
        """The docstring split at its `## Heading` lines."""
        out: Dict[str, str] = {}
        current = None
        buf: List[str] = []
        for line in cls.doc().splitlines():
            m = re.match(r"^##\s+(.*?)\s*$", line)
            if m:
                if current is not None:
                    out[current] = "\n".join(buf).strip()
                current, buf = m.group(1), []
            elif current is not None:
                buf.append(line)
        if current is not None:
            out[current] = "\n".join(buf).strip()
        return out


_REGISTRY: Optional[Dict[str, type]] = None


def all_rules() -> Dict[str, type]:
    """Every rule class, keyed by code, discovered from the gpulint.rules package."""
    global _REGISTRY
    if _REGISTRY is None:
        import gpulint.rules as pkg

        found: Dict[str, type] = {}
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for obj in vars(mod).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, Rule)
                    and obj is not Rule
                    and obj.__module__ == mod.__name__
                    and obj.code
                ):
                    if obj.code in found:
                        raise RuntimeError(f"duplicate rule code {obj.code}")
                    found[obj.code] = obj
        _REGISTRY = dict(sorted(found.items()))
    return _REGISTRY


def rule_by_code_or_name(key: str) -> Optional[type]:
    rules = all_rules()
    if key.upper() in rules:
        return rules[key.upper()]
    for r in rules.values():
        if r.name == key:
            return r
    return None
