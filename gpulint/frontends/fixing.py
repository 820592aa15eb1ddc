"""What `gpulint fix` and `gpulint check --fix` share: fix the files of a run
(show the diff, or write), and say what is left.

`check --fix`, `--fix-only`, `--unsafe-fixes` and `--show-fixes` behave as
Ruff's: the fixes are written, and the findings left are reported in the
chosen format; `gpulint fix` shows or writes the same fixes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

from gpulint.fix.files import FixRun, run_fix
from gpulint.registry import all_rules, suppression_judges
from gpulint.rule import SAFE, UNSAFE, Finding


@dataclass
class Fixing:
    run: FixRun
    remaining: List[Finding] = field(default_factory=list)  # findings left, in every file of the run
    held: int = 0  # unsafe fixes held back
    errors: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def fixed_count(self) -> int:
        return self.run.fixed_count

    def fixed_findings(self) -> List[Finding]:
        """The findings fixed, in the files that changed (and were written, when writing)."""
        return [f for ff in self.run.changed if ff.written is not False for f in ff.fixed_findings]


def fix_run(result, roots: Sequence[str], unsafe: bool, apply: bool) -> Fixing:
    """Fix the files of `result` (a runner result) that have a fix allowed:
    safe fixes, and unsafe ones with `unsafe`; write them with `apply`."""
    allowed = (SAFE, UNSAFE) if unsafe else (SAFE,)
    fixable_paths = sorted({f.path for f in result.findings if f.fix is not None and f.fix.applicability in allowed})
    todo = [(p, result.options[p]) for p in fixable_paths if p in result.options]
    judges = suppression_judges()
    confirmed: dict = {}
    for f in result.findings:
        if f.code in judges:
            confirmed.setdefault(f.path, set()).add((f.row, f.col, f.message))
    fr = run_fix(todo, unsafe=unsafe, write_roots=list(roots) or ["."], apply=apply, confirmed=confirmed)
    # findings in files that needed no fixing stay as they are
    touched = set(fixable_paths)
    untouched = [f for f in result.findings if f.path not in touched]
    remaining = sorted(untouched + fr.remaining, key=lambda f: f.sort_key())
    held = sum(1 for f in untouched if f.fix is not None and f.fix.applicability == UNSAFE and not unsafe)
    return Fixing(fr, remaining, held + fr.held_back_unsafe, list(result.all_errors) + fr.errors)


def fixes_shown(fixing: Fixing) -> List[str]:
    """What `--show-fixes` prints, as Ruff does: the fixes applied, per file and rule."""
    found = fixing.fixed_findings()
    if not found:
        return []
    rules = all_rules()
    lines = [f"Fixed {len(found)} problem{'s' if len(found) != 1 else ''}:"]
    by_path: dict = {}
    for f in found:
        by_path.setdefault(f.path, Counter())[f.code] += 1
    for path in sorted(by_path):
        lines.append(f"- {path}:")
        for code, n in sorted(by_path[path].items()):
            name = rules[code].name if code in rules else code
            lines.append(f"    {n} × {code} ({name})")
    return lines
