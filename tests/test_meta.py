"""Every rule is complete: unique code and name, kebab-case name, module named
after it, all doc sections, examples, and a fixture folder with positives and
look-alike negatives."""

from __future__ import annotations

import re
import sys

import pytest

from helpers import FIXTURES, fixture_expectations
from gpulint.rule import DOC_SECTIONS, FIX_SAFETIES
from gpulint.registry import all_rules

RULES = list(all_rules().values())


def test_rules_exist():
    assert len(RULES) >= 2


def test_unique_names():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("cls", RULES, ids=[r.code for r in RULES])
def test_rule_metadata(cls):
    assert re.fullmatch(r"GPU\d{3}", cls.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cls.name)
    assert cls.__module__.rsplit(".", 1)[-1] == cls.name.replace("-", "_")
    assert cls.message and not cls.message.endswith(".")
    assert cls.fix_safety in FIX_SAFETIES
    assert cls.examples, "a rule needs at least one bad/good example"


@pytest.mark.parametrize("cls", RULES, ids=[r.code for r in RULES])
def test_rule_docs(cls):
    sections = cls.doc_sections()
    for name in DOC_SECTIONS:
        assert sections.get(name), f"{cls.code} docs lack a '## {name}' section"
    assert "http" in sections["References"]


@pytest.mark.parametrize("cls", RULES, ids=[r.code for r in RULES])
def test_rule_has_fixtures(cls):
    folder = FIXTURES / cls.code
    files = sorted(folder.glob("*.py"))
    assert files, f"fixtures/{cls.code}/ is missing"
    positives = sum(
        1 for p in files for _, c in fixture_expectations(p.read_text(encoding="utf-8")) if c == cls.code
    )
    assert positives >= 2, f"fixtures/{cls.code}/ needs at least two `# expect: {cls.code}` lines"
    negatives = [p for p in files if "negative" in p.stem or "lookalike" in p.stem or "ok" in p.stem]
    assert negatives, f"fixtures/{cls.code}/ needs a look-alike negatives file (name containing 'negative')"


def test_linting_never_imports_torch():
    import subprocess

    code = (
        "import sys; from gpulint.engine.lint import lint_source, LintOptions; from gpulint.registry import all_rules;"
        "lint_source(open('fixtures/GPU001/' + __import__('os').listdir('fixtures/GPU001')[0]).read(), 'x.py',"
        " LintOptions(tuple(all_rules())));"
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    from helpers import ROOT

    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT)
    assert r.returncode == 0, "linting imported torch"
