"""GPU900 unused-noqa: a suppression comment whose codes suppress nothing,
judged against the whole project, fixed only where the run reported it."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from cli_helpers import findings, invoke, write
from helpers import fix, lint
from gpulint.frontends.cli import cli
from gpulint.rule import UnusedCodes
from gpulint.rules.unused_noqa import removal
from gpulint.source import Source

HELPER = """\
import torch


def log_step(loss):
    print(loss.item())  # noqa: GPU101


def other(x):
    return x + 1  # noqa: GPU101
"""
TRAIN = """\
import torch
from helper import log_step


def main(model, loader, opt):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = model(x).sub(y).pow(2).mean()
        log_step(loss)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main(None, [], None)
"""
SEL = "--select=GPU101,GPU900"


def _project(tmp_path, with_caller=True):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "helper.py", HELPER)
    if with_caller:
        write(tmp_path, "train.py", TRAIN)


def test_a_comment_used_only_through_another_file_is_not_called_unused(tmp_path):
    # the sync in log_step is a finding only because train.py's loop calls it every step;
    # pre-commit names helper.py alone, and the run still reads train.py for it
    _project(tmp_path)
    res = invoke(["check", SEL, "helper.py"], tmp_path)
    assert [(f[1], f[3]) for f in findings(res.stdout)] == [(9, "GPU900")], res.stdout
    # and what the comment suppresses is real: without it the project reports it
    (tmp_path / "helper.py").write_text(HELPER.replace("  # noqa: GPU101", "", 1))
    res = invoke(["check", SEL, "helper.py"], tmp_path)
    assert [(f[1], f[3]) for f in findings(res.stdout)] == [(5, "GPU101"), (9, "GPU900")], res.stdout


def test_without_the_caller_both_comments_are_unused(tmp_path):
    _project(tmp_path, with_caller=False)
    res = invoke(["check", SEL, "helper.py"], tmp_path)
    assert [(f[1], f[3]) for f in findings(res.stdout)] == [(5, "GPU900"), (9, "GPU900")], res.stdout


@pytest.mark.parametrize("how", [["fix", "--apply"], ["check", "--fix"]])
def test_the_fix_removes_only_what_the_project_calls_unused(tmp_path, how):
    _project(tmp_path)
    invoke([*how, SEL, "helper.py"], tmp_path)
    assert (tmp_path / "helper.py").read_text() == HELPER.replace("x + 1  # noqa: GPU101", "x + 1")
    assert invoke(["check", SEL, "helper.py"], tmp_path).exit_code == 0


def test_the_project_files_read_for_it_are_not_reported(tmp_path):
    _project(tmp_path)
    write(tmp_path, "other.py", "x = 1  # noqa: GPU101\n")
    res = invoke(["check", SEL, "--output-format", "json", "helper.py"], tmp_path)
    assert {d["filename"].rsplit("/", 1)[-1] for d in json.loads(res.stdout)} == {"helper.py"}


def test_code_nothing_reaches_keeps_its_unused_comment_reported(tmp_path):
    # `other` is called by nothing: its findings are dropped, not the comment's
    _project(tmp_path)
    res = invoke(["check", SEL, "."], tmp_path)
    assert (9, "GPU900") in [(f[1], f[3]) for f in findings(res.stdout)]


def test_a_comment_on_the_first_line_of_a_statement_is_used_by_a_finding_below():
    # (not a fixture: flake8, which applies `# noqa` itself, reads it on the finding's own line)
    text = (
        "import torch\n\n\ndef train(model, loader, opt):\n    for x, y in loader:\n"
        "        x, y = x.cuda(), y.cuda()\n        loss = model(x).sub(y).pow(2).mean()\n"
        "        loss.backward()\n        opt.step()\n"
        "        print(  # noqa: GPU101\n            'loss',\n            loss.item(),\n        )\n"
    )
    assert lint(text, codes=["GPU101", "GPU900"]) == []
    assert [(f.row, f.code) for f in lint(text.replace("  # noqa: GPU101", ""), codes=["GPU101", "GPU900"])] == [
        (12, "GPU101")]


def test_only_the_codes_of_selected_rules_are_judged():
    text = "import torch\nx = 1  # noqa: GPU101\ny = 2  # noqa: GPU302\n"
    assert [(f.row, f.code) for f in lint(text, codes=["GPU900"])] == []
    assert [(f.row, f.code) for f in lint(text, codes=["GPU900", "GPU302"])] == [(3, "GPU900")]


def test_names_file_level_comments_and_mixed_lists():
    text = (
        "# gpulint: noqa: zero-grad-not-set-to-none, GPU101\n"
        "import torch\n"
        "x = 1  # gpulint: ignore[GPU101, GPU302]\n"
    )
    got = [(f.row, f.message) for f in lint(text, codes=["GPU900", "GPU101", "GPU302"])]
    assert got == [
        (1, "Unused suppression: zero-grad-not-set-to-none, GPU101 reports nothing here"),
        (3, "Unused suppression: GPU101, GPU302 reports nothing here"),
    ]
    assert fix(text, codes=["GPU900", "GPU101", "GPU302"]) == "import torch\nx = 1\n"


def test_a_comment_naming_the_rule_keeps_its_codes():
    text = "import torch\nx = 1  # noqa: GPU101, GPU900\ny = 1  # noqa: GPU101  # noqa? no: gpulint: ignore[unused-noqa]\n"
    assert [f.row for f in lint(text, codes=["GPU900", "GPU101"])] == [3]


@pytest.mark.parametrize(
    "line,fixed",
    [
        ("x = 1  # noqa: GPU101\n", "x = 1\n"),
        ("x = 1  # noqa: GPU101  # why\n", "x = 1  # why\n"),
        ("x = 1  # noqa: GPU101 timing only\n", "x = 1  # timing only\n"),
        ("x = 1  # type: ignore  # noqa: GPU101\n", "x = 1  # type: ignore\n"),
        ("x = 1  # noqa: E501, GPU101\n", "x = 1  # noqa: E501\n"),
        ("x = 1  # noqa:GPU302,E501,GPU101\n", "x = 1  # noqa:E501\n"),
        ("x = 1  # gpulint: ignore[GPU101]\n", "x = 1\n"),
        ("# gpulint: noqa: GPU101\nx = 1\n", "x = 1\n"),
        ("x = 1\r\n# gpulint: noqa: GPU101\r\ny = 2\r\n", "x = 1\r\ny = 2\r\n"),
    ],
)
def test_fix(line, fixed):
    text = "import torch\n" + line
    got = fix(text, codes=["GPU900", "GPU101", "GPU302"])
    assert got == "import torch\n" + fixed


def test_removal_of_a_comment_line_of_its_own():
    text = "a = 1\n    # noqa: GPU101\nb = 2\n"
    u = UnusedCodes(2, 4, "# noqa: GPU101", (0, 14), (8, 14), ("GPU101",), ("GPU101",), False)
    e = removal(Source(text), 10, u)
    assert text[:e.start] + e.content + text[e.end:] == "a = 1\nb = 2\n"


def test_stdin_which_sees_one_file_does_not_judge(tmp_path):
    _project(tmp_path, with_caller=False)
    res = CliRunner().invoke(cli, ["check", SEL, "--stdin-filename", str(tmp_path / "helper.py")],
                             input=HELPER.encode(), env={"GPULINT_NO_CACHE": "1", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    fixed = CliRunner().invoke(cli, ["fix", "--apply", SEL, "--stdin-filename", str(tmp_path / "helper.py")],
                               input=HELPER.encode(), env={"GPULINT_NO_CACHE": "1", "NO_COLOR": "1"})
    assert fixed.stdout == HELPER


def test_add_noqa_adds_no_comment_for_an_unused_comment(tmp_path):
    _project(tmp_path, with_caller=False)
    invoke(["check", SEL, "--add-noqa", "helper.py"], tmp_path)
    assert (tmp_path / "helper.py").read_text() == HELPER


def test_off_by_default_and_not_benchmarked(tmp_path):
    _project(tmp_path, with_caller=False)
    assert invoke(["check", "--preview", "helper.py"], tmp_path).exit_code == 0


def test_with_the_cache_an_edit_of_the_caller_is_seen(tmp_path):
    # the caller is read for the project only, and cached as such: its edit still counts
    _project(tmp_path)
    for _ in range(2):
        res = invoke(["check", SEL, "helper.py"], tmp_path, cache=True)
        assert [(f[1], f[3]) for f in findings(res.stdout)] == [(9, "GPU900")], res.stdout
    train = tmp_path / "train.py"
    train.write_text(train.read_text().replace("        log_step(loss)\n", "        pass\n"))
    res = invoke(["check", SEL, "helper.py"], tmp_path, cache=True)
    assert [(f[1], f[3]) for f in findings(res.stdout)] == [(5, "GPU900"), (9, "GPU900")], res.stdout
