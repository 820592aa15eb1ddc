"""The examples are the tests: each rule's bad example is flagged, its good
example is clean, and for a fixable rule fix(bad) == good exactly."""

from __future__ import annotations

import pytest

from helpers import codes_of, fix
from gpulint.engine.config import LATEST_TORCH
from gpulint.rule import NONE
from gpulint.registry import all_rules

CASES = [
    pytest.param(cls, i, ex, id=f"{code}-{i}")
    for code, cls in all_rules().items()
    for i, ex in enumerate(cls.examples)
]


def _tv(ex):
    return tuple(ex.options.get("torch_version", LATEST_TORCH))


def _codes(cls, ex):
    # `with_codes`: rules selected beside it (unused-noqa judges only the codes of selected rules)
    return [cls.code, *ex.options.get("with_codes", ())]


@pytest.mark.parametrize("cls,i,ex", CASES)
def test_bad_example_is_flagged(cls, i, ex):
    found = codes_of(ex.bad_code, codes=_codes(cls, ex), torch_version=_tv(ex))
    assert cls.code in found, f"{cls.code} example {i}: bad code not flagged"


@pytest.mark.parametrize("cls,i,ex", CASES)
def test_good_example_is_clean(cls, i, ex):
    found = codes_of(ex.good_code, codes=_codes(cls, ex), torch_version=_tv(ex))
    assert cls.code not in found, f"{cls.code} example {i}: good code flagged"


@pytest.mark.parametrize("cls,i,ex", [c for c in CASES if c.values[0].fix_safety != NONE])
def test_fix_of_bad_is_good(cls, i, ex):
    fixed = fix(ex.bad_code, codes=_codes(cls, ex), unsafe=True, torch_version=_tv(ex))
    assert fixed == ex.good_code


@pytest.mark.parametrize("cls,i,ex", [c for c in CASES if c.values[0].fix_safety == "unsafe"])
def test_unsafe_fix_needs_opt_in(cls, i, ex):
    assert fix(ex.bad_code, codes=_codes(cls, ex), unsafe=False, torch_version=_tv(ex)) == ex.bad_code
