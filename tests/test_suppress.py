"""Suppression comments: `# noqa`, `# noqa: CODES`, `# gpulint: ignore[...]`
(codes or names), on the flagged line or the first line of a multi-line
statement, and `# gpulint: skip-file`. Only real comments count."""

from __future__ import annotations

import json

import pytest

from cli_helpers import TWO, codes, invoke, write
from helpers import lint
from gpulint.engine.suppress import Suppressions

HEAD = "import torch\nfrom torch import nn\n\n"


def found(body: str):
    return sorted((f.code, f.row) for f in lint(HEAD + body, codes=["GPU001", "GPU302"]))


def test_unsuppressed_baseline():
    assert found("m = nn.DataParallel(net)\nopt.zero_grad(set_to_none=False)\n") == [("GPU001", 4), ("GPU302", 5)]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "# NOQA",
        "#noqa",
        "# noqa: GPU001",
        "# noqa:GPU001",
        "# noqa: gpu001",
        "# noqa: GPU302,GPU001",
        "# noqa: GPU302, GPU001",
        "# noqa: GPU001 DataParallel is fine for this one-off script",
        "# noqa - legacy code",
        "# noqa: data-parallel",
        "# gpulint: ignore[GPU001]",
        "# gpulint: ignore[data-parallel]",
        "# gpulint: ignore[GPU302, data-parallel]",
        "# gpulint:ignore[GPU001]",
        "# type: ignore  # noqa: GPU001",
        "# gpulint: ignore[GPU001]  # and a note",
    ],
)
def test_comment_suppresses_gpu001(comment):
    assert found(f"m = nn.DataParallel(net)  {comment}\n") == []


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: GPU302",
        "# noqa: GPU0",  # prefixes do not suppress (as in Ruff)
        "# noqa: GPU0011",
        "# gpulint: ignore[GPU302]",
        "# gpulint: ignore[zero-grad-not-set-to-none]",
        "# noqanot",
        "# a note about noqa",
    ],
)
def test_comment_does_not_suppress_gpu001(comment):
    assert found(f"m = nn.DataParallel(net)  {comment}\n") == [("GPU001", 4)]


def test_two_codes_on_one_line():
    body = "opt.zero_grad(set_to_none=False); m = nn.DataParallel(net)  # noqa: GPU001,GPU302\n"
    assert found(body) == []
    body = "opt.zero_grad(set_to_none=False); m = nn.DataParallel(net)  # noqa: GPU001\n"
    assert found(body) == [("GPU302", 4)]


def test_first_line_of_a_multi_line_statement():
    body = (
        "model = wrap(  # noqa: GPU001\n"
        "    nn.Linear(4, 4),\n"
        "    nn.DataParallel(net),\n"
        ")\n"
    )
    assert found(body) == []
    assert found(body.replace("  # noqa: GPU001", "")) == [("GPU001", 6)]


def test_flagged_line_inside_a_multi_line_statement():
    body = (
        "model = wrap(\n"
        "    nn.DataParallel(net),  # gpulint: ignore[data-parallel]\n"
        ")\n"
    )
    assert found(body) == []


def test_comment_on_another_line_of_the_statement_does_not_suppress():
    body = (
        "model = wrap(\n"
        "    nn.DataParallel(net),\n"
        ")  # noqa: GPU001\n"
    )
    assert found(body) == [("GPU001", 5)]
    # nor does a comment on the line above
    assert found("# noqa: GPU001\nm = nn.DataParallel(net)\n") == [("GPU001", 5)]


def test_first_line_of_a_compound_statement_header():
    body = (
        "for step in range(\n"
        "    len(nn.DataParallel(net).module)\n"
        "):  \n"
        "    pass\n"
    )
    assert found(body) == [("GPU001", 5)]
    assert found(body.replace("for step in range(", "for step in range(  # noqa")) == []


def test_noqa_inside_a_string_does_not_suppress():
    assert found('m = nn.DataParallel(net, "# noqa")\n') == [("GPU001", 4)]
    body = 'm = nn.DataParallel(\n    net,\n    doc="""\n# noqa\n""",\n)\n'
    assert found(body) == [("GPU001", 4)]
    assert found('m = nn.DataParallel(net); s = "# gpulint: ignore[GPU001]"\n') == [("GPU001", 4)]


def test_skip_file_anywhere():
    assert found("m = nn.DataParallel(net)\n\n# gpulint: skip-file\n") == []
    assert found("# gpulint: skip-file\nm = nn.DataParallel(net)\nopt.zero_grad(set_to_none=False)\n") == []
    assert found("x = 1  # GPULINT: SKIP-FILE\nm = nn.DataParallel(net)\n") == []


def test_file_level_noqa_per_rule_as_in_ruff():
    body = "m = nn.DataParallel(net)\nopt.zero_grad(set_to_none=False)\n"
    assert found("# gpulint: noqa: GPU001\n" + body) == [("GPU302", 6)]
    assert found(body + "\n# gpulint: noqa: zero-grad-not-set-to-none, GPU001\n") == []
    assert found("# GPULINT: NOQA: gpu302\n" + body) == [("GPU001", 5)]
    assert found("# gpulint: noqa\n" + body) == []  # the whole file, as `# ruff: noqa`
    # on a line of its own only: after code it is no file-level comment (nor a line noqa)
    assert found("x = 1  # gpulint: noqa: GPU001\n" + body) == [("GPU001", 5), ("GPU302", 6)]
    # in a string it is no comment at all
    assert found('s = """\n# gpulint: noqa: GPU001\n"""\n' + body) == [("GPU001", 7), ("GPU302", 8)]


def test_skip_file_inside_a_string_does_not_skip():
    assert found('s = "# gpulint: skip-file"\nm = nn.DataParallel(net)\n') == [("GPU001", 5)]


def test_suppressions_parser_directly():
    s = Suppressions("a = 1  # noqa: GPU001 , GPU302\nb = 2  # gpulint: ignore[host-sync-in-loop]\nc = 3\n")
    assert s.by_line[1] == frozenset({"GPU001", "GPU302"})
    assert s.by_line[2] == frozenset({"host-sync-in-loop"})
    assert 3 not in s.by_line
    assert s.suppressed("GPU302", "zero-grad-not-set-to-none", {1})
    assert s.suppressed("GPU101", "host-sync-in-loop", {2})
    assert not s.suppressed("GPU101", "host-sync-in-loop", {1, 3})


def test_suppression_through_the_cli_and_noqa_row_in_json(tmp_path):
    write(
        tmp_path,
        "a.py",
        HEAD
        + "model = wrap(\n    nn.DataParallel(net),\n)\n"
        + "other = nn.DataParallel(net)  # noqa: GPU001\n",
    )
    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    data = json.loads(res.stdout)
    assert [(d["code"], d["location"]["row"], d["noqa_row"]) for d in data] == [("GPU001", 5, 4)]
    write(tmp_path, "a.py", HEAD + "model = nn.DataParallel(net)  # noqa\n")
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 0 and codes(res.stdout) == []


def test_each_kind_of_comment_can_be_left_out():
    """The flake8 plugin lints with `noqa=False` (flake8 applies `# noqa`
    itself), and with neither kind under flake8's --disable-noqa."""
    import dataclasses

    from gpulint.engine.lint import lint_source
    from helpers import options

    text = HEAD + (
        "a = nn.DataParallel(net)  # noqa: GPU001\n"
        "b = nn.DataParallel(net)  # gpulint: ignore[GPU001]\n"
        "c = nn.DataParallel(net)  # noqa\n"
        "d = nn.DataParallel(net)  # gpulint: ignore[GPU001]  # noqa: GPU001\n"
    )
    base = options(["GPU001"])

    def rows(**kw):
        return [f.row for f in lint_source(text, "m.py", dataclasses.replace(base, **kw))]

    assert rows() == []
    assert rows(noqa=False) == [4, 6]
    assert rows(gpulint_comments=False) == [5]
    assert rows(noqa=False, gpulint_comments=False) == [4, 5, 6, 7]
    skip = "# gpulint: skip-file\n" + text
    assert [f.row for f in lint_source(skip, "m.py", dataclasses.replace(base, noqa=False))] == []
    # skip-file is one of gpulint's comments: off, only `b` (now row 6) is left, the rest have a noqa
    assert [f.row for f in lint_source(skip, "m.py", dataclasses.replace(base, gpulint_comments=False))] == [6]
    s = Suppressions(text, noqa=False)
    assert set(s.by_line) == {5, 7}
    assert Suppressions(text, noqa=False, directives=False).by_line == {}
