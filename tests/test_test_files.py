"""Test files are skipped once, in the engine, for every rule that says
nothing about them (`Rule.skips_test_files`); the other rules still read them."""

from __future__ import annotations

import textwrap

from gpulint.model.index.tree import is_test_path
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
    assert "GPU401" not in in_tests  # nor does a deprecation warning in a test: its own run shows it


def test_every_rule_skips_test_files():
    """Labelled at first sight, no finding in a test was right, for any rule
    (a test runs each case once; a deprecation warns in the test's own run).
    But unused-noqa, which is about comments: one in a test that suppresses
    nothing is as unused as anywhere."""
    rules = all_rules()
    assert {code for code, rule in rules.items() if rule.skips_test_files} == {
        code for code, rule in rules.items() if not rule.judges_suppressions}
    assert not any(r.skips_test_files for r in rules.values() if r.judges_suppressions)


def test_an_unused_comment_in_a_test_file_is_reported():
    text = "import torch\n\n\ndef test_x():\n    x = 1  # noqa: GPU101\n"
    assert [(f.row, f.code) for f in lint(text, path="tests/test_x.py", codes=["GPU101", "GPU900"])] == [
        (5, "GPU900")]


def test_a_script_named_like_a_test_is_a_test_only_with_a_test_framework():
    """Research code names its evaluation scripts `test_net.py` and its tools
    `split_train_test.py`: by its name alone such a file is a test only when
    it uses pytest or unittest. Under `tests/`, every file is; under `test/`,
    every file but a program of its own (a `__main__` block or a command
    line) that uses no test framework and defines no test function: Uformer
    keeps its evaluation scripts in `test/`."""
    script = CODE.replace("def test_training_step", "def evaluate")
    assert is_test_path("test_net.py") and not is_test_path("test_net.py", script)
    assert not is_test_path("tools/split_train_test.py", "import random\n")
    assert is_test_path("test_net.py", "import pytest\n" + script)
    assert is_test_path("pkg/test_model.py", "import unittest\nclass T(unittest.TestCase): pass\n")
    assert is_test_path("tests/helpers.py", "") and is_test_path("test/run.py", "") and is_test_path("conftest.py", "")
    assert "GPU101" in {f.code for f in lint(script, path="test_net.py")}  # an evaluation script is read
    program = script + "\n\nif __name__ == \"__main__\":\n    evaluate(None, [], None)\n"
    assert not is_test_path("test/test_sidd.py", program) and not is_test_path("test/eval.py", program)
    assert is_test_path("tests/eval.py", program)  # a library's test scripts (open_clip's `tests/util_test.py`)
    assert not is_test_path("test/test_sidd.py", "import argparse\nparser = argparse.ArgumentParser()\n")
    assert is_test_path("test/test_sidd.py", program + "\ndef test_eval():\n    pass\n")  # pytest collects it
    assert is_test_path("test/test_sidd.py", "import pytest\n" + program)
    assert is_test_path("test_utils/scripts/test_script.py", program)  # a test suite's own scripts
