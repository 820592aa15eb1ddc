"""Minimal inputs of the bugs the fuzz tests (tests/test_fuzz.py) found: each
is checked for every property there (lint, the fix parses, is idempotent and
leaves the statements it does not edit alone), plus the exact expected fix."""

from __future__ import annotations

import pytest

from helpers import fix
from test_fuzz import check_all

CASES = {
    # GPU202 on a call without arguments joined its two keywords without a comma
    "dataloader_without_arguments": (
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader()\n"
        "for x in loader:\n"
        "    x = x.cuda()\n",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(num_workers=4, persistent_workers=True)\n"
        "for x in loader:\n"
        "    x = x.cuda()\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fuzz_regression(name):
    text, expected = CASES[name]
    check_all(text)
    assert fix(text, unsafe=True) == expected
