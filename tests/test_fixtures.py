"""fixtures/<CODE>/*.py: real-looking files with `# expect: CODE` on each line
that must be flagged. Every rule runs on every fixture (so a look-alike for
one rule is also a precision test for all the others), and the findings must
equal the expectations exactly."""

from __future__ import annotations

import pytest

from helpers import FIXTURES, fixture_expectations, fixture_torch_version, lint

FILES = sorted(p for p in FIXTURES.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture(path):
    text = path.read_text(encoding="utf-8")
    expected = fixture_expectations(text)
    findings = lint(text, path=str(path.relative_to(FIXTURES)), torch_version=fixture_torch_version(text))
    got = {(f.row, f.code) for f in findings}
    missing = sorted(expected - got)
    extra = sorted(got - expected)
    msgs = {(f.row, f.code): f.message for f in findings}
    assert not missing and not extra, (
        f"\nmissed (expected but not reported): {missing}"
        f"\nfalse positives (reported, not expected): {[(r, c, msgs[(r, c)]) for r, c in extra]}"
    )
