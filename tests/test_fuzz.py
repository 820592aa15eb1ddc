"""Property tests over the whole rule set (every rule selected, unsafe fixes too).

For any module that parses:
1. linting never raises;
2. the fixed text parses (`ast.parse`, `compile()`); no fix is refused as invalid;
3. fixing is idempotent: fixing the fixed text changes nothing;
4. a fix leaves every statement it does not edit as it was: same AST, same
   place (same offset once the edits before it are accounted for), same
   enclosing blocks (checked pass by pass, for safe fixes and for all fixes).

Sources come from hypothesmith (generated from Python's grammar and from
LibCST's node types: odd syntax the rules must survive) and from
`fuzz_strategies.training_code()` (composed PyTorch training-loop fragments that
make the rules' fix paths fire).

Sizes: the default run (`python3 -m pytest`, CI) runs a few hundred examples per
property, reproducibly (derandomized). The fuzz job runs thousands, randomly:

    python3 -m pytest -m fuzz tests/test_fuzz.py                  # 2000 per property
    GPULINT_FUZZ_EXAMPLES=10000 python3 -m pytest -m fuzz tests/test_fuzz.py

Every failure is a gpulint bug: fix it and add the shrunk input to
tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import ast
import contextlib
import os
import warnings
from typing import Dict, List, Tuple

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz_strategies import training_code
from helpers import options
from gpulint.edits import apply_edits
from gpulint.engine.lint import lint_source
from gpulint.fix.apply import newline_of
import gpulint.fix.apply
from gpulint.fix.apply import fix_source
from gpulint.rule import SAFE, UNSAFE
from gpulint.source import Source

PATH = "fuzz.py"
OPTS = options()  # every rule, the default default targeted torch version
FUZZ_EXAMPLES = int(os.environ.get("GPULINT_FUZZ_EXAMPLES", "2000"))

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _ci(n: int):
    """A few hundred examples in the default run: the same ones every time."""
    return settings(max_examples=n, derandomize=True, database=None, **_COMMON)


def _fuzz(n: int = FUZZ_EXAMPLES):
    return settings(max_examples=n, **_COMMON)


# ------------------------------------------------------------------ checks
def _parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
            compile(text, PATH, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def check_lint(text: str) -> None:
    lint_source(text, PATH, OPTS)  # must not raise


@contextlib.contextmanager
def _recorded_passes():
    """Record each pass of the real fix loop: (text before, its edits, text after)."""
    passes = []

    def recording(text, edits):
        new = apply_edits(text, edits)
        passes.append((text, list(edits), new))
        return new

    saved = gpulint.fix.apply.apply_edits
    gpulint.fix.apply.apply_edits = recording
    try:
        yield passes
    finally:
        gpulint.fix.apply.apply_edits = saved


def check_fix(text: str) -> None:
    """(2) the fixed text parses, (3) fixing it again changes nothing, (4) each
    pass leaves the statements it does not edit alone: with safe fixes only,
    then with unsafe fixes too."""
    nl = newline_of(text)  # as `gpulint fix` does
    for unsafe in (False, True):
        with _recorded_passes() as passes:
            first = fix_source(text, PATH, OPTS, unsafe=unsafe, newline=nl)  # a FixError is a bug
        assert _parses(first.text), f"fixed text does not parse (unsafe={unsafe}):\n{first.text}"
        for old, edits, new in passes:
            if new != old:
                check_untouched_statements(old, new, [(e.start, e.end, len(e.content)) for e in edits])
        second = fix_source(first.text, PATH, OPTS, unsafe=unsafe, newline=nl)
        assert second.text == first.text, (
            f"fixing the fixed text changed it again (unsafe={unsafe}):\n--- first\n{first.text}\n--- second\n{second.text}"
        )
        allowed = (SAFE, UNSAFE) if unsafe else (SAFE,)
        assert not [f for f in first.remaining if f.fix is not None and f.fix.applicability in allowed], (
            f"a fixable finding survived the fixpoint (unsafe={unsafe}):\n{first.text}"
        )


def _statements(tree: ast.AST, src: Source) -> List[Tuple[ast.stmt, Tuple[int, int], int, tuple]]:
    """Every statement: (node, span with decorators, own start offset, enclosing chain)."""
    out = []

    def walk(node, chain):
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for child in items:
                if not isinstance(child, ast.AST):
                    continue
                if isinstance(child, ast.stmt):
                    start, end = src.node_span(child)
                    full_start = min([start] + [src.node_span(d)[0] for d in getattr(child, "decorator_list", [])])
                    out.append((child, (full_start, end), start, chain))
                walk(child, chain + ((type(child).__name__, field),) if isinstance(child, (ast.stmt, ast.excepthandler)) else chain)

    walk(tree, ())
    return out


def check_untouched_statements(old: str, new: str, spans: List[Tuple[int, int, int]]) -> None:
    """Statements that no edit touches keep their AST and their enclosing blocks.

    `spans` holds (start, end, length of the new content) of the pass's edits,
    in the coordinates of `old`."""
    old_src, new_src = Source(old), Source(new)
    by_start: Dict[Tuple[int, str], tuple] = {}
    for node, _, start, chain in _statements(ast.parse(new), new_src):
        by_start[(start, type(node).__name__)] = (node, chain)
    for node, (a, b), start, chain in _statements(ast.parse(old), old_src):
        if any(s <= b and e >= a for s, e, _ in spans):
            continue  # an edit is inside, or right at an end of, this statement
        delta = sum(n - (e - s) for s, e, n in spans if e < a)
        found = by_start.get((start + delta, type(node).__name__))
        assert found is not None, f"statement at line {node.lineno} is gone or moved:\n{old_src.node_text(node)}\n--- new\n{new}"
        new_node, new_chain = found
        assert ast.dump(new_node) == ast.dump(node), f"statement at line {node.lineno} changed:\n{new}"
        assert new_chain == chain, f"statement at line {node.lineno} changed blocks: {chain} -> {new_chain}\n{new}"


def check_all(text: str) -> None:
    check_lint(text)
    check_fix(text)


# --------------------------------------------------------------- strategies
def _parseable(strategy):
    return strategy.filter(_parses)


FRAGMENTS = _parseable(training_code())
GRAMMAR = _parseable(hypothesmith.from_grammar())
NODES = _parseable(hypothesmith.from_node())


def _make(check, strategy, n_ci: int, name: str):
    """The property twice: CI-sized (default run) and fuzz-sized (-m fuzz)."""

    def body(text):
        check(text)

    ci = _ci(n_ci)(given(strategy)(body))
    fuzz = pytest.mark.fuzz(_fuzz()(given(strategy)(body)))
    ci.__name__, fuzz.__name__ = f"test_{name}", f"test_fuzz_{name}"
    return ci, fuzz


# the training-loop fragments make the rules fire: (1) alone on many examples,
# (2)-(4) on fewer (each fixes the text several times)
test_lint_never_raises_on_fragments, test_fuzz_lint_never_raises_on_fragments = _make(
    check_lint, FRAGMENTS, 300, "lint_never_raises_on_fragments"
)
test_fix_properties_on_fragments, test_fuzz_fix_properties_on_fragments = _make(
    check_fix, FRAGMENTS, 200, "fix_properties_on_fragments"
)
# generated Python (slow to generate, rarely triggers a rule): all four properties
test_all_properties_on_grammar_source, test_fuzz_all_properties_on_grammar_source = _make(
    check_all, GRAMMAR, 60, "all_properties_on_grammar_source"
)
# LibCST-node-generated modules take about half a second each: the fuzz job only
test_fuzz_all_properties_on_libcst_nodes = pytest.mark.fuzz(_fuzz(max(1, FUZZ_EXAMPLES // 10))(given(NODES)(check_all)))


def test_fragment_strategy_makes_the_fixes_fire():
    """Guard against a strategy that silently stops exercising the fix paths:
    over a fixed sample, every rule with a fix gets a fixable finding, and
    every rule's check runs on at least one fragment it flags."""
    seen = set()
    fixable = set()

    @_ci(150)
    @given(FRAGMENTS)
    def sample(text):
        for f in lint_source(text, PATH, OPTS):
            seen.add(f.code)
            if f.fix is not None:
                fixable.add(f.code)

    sample()
    from gpulint.registry import all_rules

    with_fix = {c for c, r in all_rules().items() if r.fix_safety != "none"}
    missing = with_fix - fixable
    assert not missing, f"the fragments never trigger the fix of {sorted(missing)}: extend fuzz_strategies.SIMPLE"
    assert len(seen) >= 12, sorted(seen)
