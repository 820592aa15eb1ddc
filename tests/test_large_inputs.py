"""Very long lines and very many statements (issue 17): the answers. How the
time grows with size is measured by `python bench/linear_time.py`
(docs/linear-time.md), not here; these are the same shapes, small enough for
the test run, and check that each gives the right findings and fixes."""

from __future__ import annotations

import json
import re
import sys

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from cli_helpers import invoke, write
from gpulint.source import Source
from helpers import lint

HEADER = (
    "import torch\nfrom torch import nn\n"
    "model = nn.DataParallel(nn.Linear(4, 4))\nopt = torch.optim.SGD(model.parameters())\n"
)
BODY = "out = model(x.cuda()); loss = crit(out, y); loss.backward(); opt.step(); v = loss.item(); t = torch.ones(3).cuda(); "


def _offset_by_walking(text: str, row: int, byte_col: int) -> int:
    """Source.offset as it was: walk the row's characters, counting UTF-8 bytes."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]  # as ast counts line ends
    start = starts[row - 1] if row - 1 < len(starts) else len(text)
    if text[start: start + byte_col + 1].isascii():
        return start + byte_col
    consumed, k = 0, start
    while consumed < byte_col and k < len(text):
        consumed += len(text[k].encode("utf-8", "surrogatepass"))
        k += 1
    return k


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", "\n", "\r\n", "\r", "é", "中", "😀", "\ud800"]), max_size=40).map("".join),
       st.lists(st.tuples(st.integers(1, 12), st.integers(0, 50)), min_size=1, max_size=10))
def test_offsets_are_those_of_walking_the_line(text, points):
    src = Source(text)
    for row, col in points:
        assert src.offset(row, col) == _offset_by_walking(text, row, col), (text, row, col)


def _json(res):
    return [(d["code"], d["location"]["row"], d["location"]["column"]) for d in json.loads(res.stdout)]


def test_a_training_loop_on_one_line(tmp_path):
    """Thousands of statements on one line, in a loop body: every `.item()` and
    every `torch.ones(3).cuda()` is found, at its own column."""
    reps = 1000
    line = "for x, y in loader: " + BODY * reps
    write(tmp_path, "one.py", HEADER + line + "\n")
    res = invoke(["check", "--select", "GPU101,GPU203", "--output-format", "json", "one.py"], tmp_path)
    row = HEADER.count("\n") + 1
    want = []
    for needle, code, shift in (("v = loss.item()", "GPU101", len("v = ")), ("torch.ones(3)", "GPU203", 0)):
        at = line.find(needle)
        while at != -1:
            want.append((code, row, at + shift + 1))
            at = line.find(needle, at + 1)
    assert sorted(_json(res)) == sorted(want) and len(want) == 2 * reps


def test_the_same_loop_one_statement_per_line(tmp_path):
    reps = 1000
    stmts = [s.strip() for s in BODY.split(";") if s.strip()]
    write(tmp_path, "many.py", HEADER + "for x, y in loader:\n" + "".join(f"    {s}\n" for _ in range(reps) for s in stmts))
    res = invoke(["check", "--select", "GPU101,GPU203", "--output-format", "json", "many.py"], tmp_path)
    got = _json(res)
    assert sum(1 for c, *_ in got if c == "GPU101") == reps
    assert sum(1 for c, *_ in got if c == "GPU203") == reps


def test_fixing_a_long_line(tmp_path):
    """Thousands of fixes on one line are applied in one pass."""
    reps = 1000
    write(tmp_path, "one.py", HEADER + "for x, y in loader: " + BODY * reps + "\n")
    res = invoke(["fix", "--apply", "--select", "GPU203", "one.py"], tmp_path)
    assert res.exit_code == 0, res.stderr
    fixed = (tmp_path / "one.py").read_text()
    assert fixed.count("torch.ones(3).cuda()") == 0
    assert fixed.count("torch.ones(3, device=") == reps


def test_long_lines_of_other_shapes(tmp_path):
    write(tmp_path, "lst.py", "x = [" + ", ".join(["1"] * 200_000) + "]\n")
    write(tmp_path, "s.py", 'x = "' + "a" * 2_000_000 + '"\n')
    write(tmp_path, "stmts.py", "a=1;" * 100_000 + "\n")
    write(tmp_path, "reads.py", "import torch\nfor b in loader: " + "loss.item();" * 50_000 + "\n")
    res = invoke(["check", "--select", "ALL", "--output-format", "json", "."], tmp_path)
    assert res.exit_code == 0 and json.loads(res.stdout) == []


def _python_calls(text: str) -> int:
    """Python function calls made linting `text`: a count of work that does not
    depend on how fast or busy the machine is."""
    count = [0]

    def profile(frame, event, arg):
        if event == "call":
            count[0] += 1

    sys.setprofile(profile)
    try:
        lint(text, codes=["GPU101", "GPU203"])
    finally:
        sys.setprofile(None)
    return count[0]


@pytest.mark.parametrize("shape", ["one line", "one statement per line"])
def test_work_grows_linearly_with_the_loop(shape):
    """Twice the training loop costs about twice the work, not four times: a
    rule asking the whole loop again for each read in it made the linter
    quadratic on long loops (255 s for a 250 KB loop) and a timing test would
    not have caught it reliably. Counting calls does, on any machine."""
    stmts = [s.strip() for s in BODY.split(";") if s.strip()]

    def text(reps: int) -> str:
        if shape == "one line":
            return HEADER + "for x, y in loader: " + BODY * reps + "\n"
        return HEADER + "for x, y in loader:\n" + "".join(f"    {s}\n" for _ in range(reps) for s in stmts)

    small, large = _python_calls(text(150)), _python_calls(text(300))
    assert large / small < 2.3, (small, large)
