"""Test files are skipped once, in the engine, for every rule that says
nothing about them (`Rule.skips_test_files`); the other rules still read them."""

from __future__ import annotations

import textwrap

from gpulint.registry import all_rules

from helpers import lint

CODE = textwrap.dedent("""
    import torch


    def test_training_step(model, loader, optimizer):
        scaler = torch.cuda.amp.GradScaler()
        for x in loader:
            loss = model(x.cuda())
            loss.backward()
            optimizer.step()
            print(loss.item())
""")


def test_a_test_file_is_skipped_for_the_rules_that_skip_them():
    assert {f.code for f in lint(CODE, path="train.py")} >= {"GPU101", "GPU401"}
    in_tests = {f.code for f in lint(CODE, path="tests/test_train.py")}
    assert "GPU101" not in in_tests  # a test's per-step read costs nothing that matters
    assert "GPU401" in in_tests  # a deprecated API is deprecated in a test too


def test_the_rules_that_skip_test_files_say_so():
    skipping = {code for code, rule in all_rules().items() if rule.skips_test_files}
    assert {"GPU101", "GPU104", "GPU202", "GPU203", "GPU204", "GPU301", "GPU403", "GPU405"} <= skipping
    assert "GPU401" not in skipping
