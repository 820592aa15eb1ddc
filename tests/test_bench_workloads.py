"""Every rule's bench workload is honest: the linter flags the rule in the
bad program (in its bad part) and not in the good one, the good program is
exactly what `gpulint fix --unsafe-fixes` makes of the bad one for a fixable
rule, and both sides run (tiny, on the CPU) and compute the same result
under the rule's documented check."""

from __future__ import annotations

import pytest

from gpulint.harness import bench as B
from gpulint.rule import BENCH_METRICS, CHECKS, NONE
from gpulint.registry import all_rules

from helpers import fix, lint

RULES = [r for r in all_rules().values() if r.bench is not None]
IDS = [r.code for r in RULES]


def test_every_rule_has_a_workload():
    # (but the rules about gpulint's own comments: unused-noqa costs the GPU nothing)
    assert [c for c, r in all_rules().items() if r.bench is None and not r.judges_suppressions] == []


def test_the_rules_about_comments_are_not_benchmarked():
    judges = [r for r in all_rules().values() if r.judges_suppressions]
    assert judges and all(r.bench is None for r in judges)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_workload_is_well_formed(rule):
    b = rule.bench
    assert b.metric in BENCH_METRICS and b.check in CHECKS
    assert b.steps >= 1 and b.warmup >= 1
    assert b.note.strip(), "say what the workload is and why its check is what it is"
    for program in (b.bad_program, b.good_program):
        compile(program, rule.code, "exec")
        assert "def run(" in program


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_bad_is_flagged_and_good_is_not(rule):
    b = rule.bench
    setup_lines = len(b._code(b.setup).splitlines()) + 1
    found = [f for f in lint(b.bad_program) if f.code == rule.code]
    assert found, f"{rule.code} does not flag its own bad workload"
    assert any(f.row > setup_lines for f in found), "the finding must be in the bad part, not the shared setup"
    assert [f for f in lint(b.good_program) if f.code == rule.code] == []


@pytest.mark.parametrize("rule", [r for r in RULES if r.fix_safety != NONE],
                         ids=[r.code for r in RULES if r.fix_safety != NONE])
def test_good_is_what_the_fix_makes_of_bad(rule):
    assert fix(rule.bench.bad_program, codes=[rule.code], unsafe=True) == rule.bench.good_program


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_both_sides_run_and_agree(rule):
    rec = B.measure(rule, "cpu", small=True, reps=2)
    assert rec["check"]["ok"], rec["check"]["detail"]
    assert rec["bad"]["seconds_per_step"]["n"] == 2
