"""`gpulint check --add-noqa`: every finding gets a `# noqa: CODE` that
suppresses it, nothing else in the file changes, and a line that cannot take
a comment is reported instead of broken."""

from __future__ import annotations

import json
import re
import shutil

from cli_helpers import DP, ZG, findings, invoke, write
from helpers import FIXTURES, lint

from gpulint.fix.noqa import add_noqa
from gpulint.engine.suppress import Suppressions

# a training step; rows 1-6
STEP = """\
import torch

for images, labels in loader:
    loss = criterion(model(images.cuda()), labels.cuda())
    loss.backward()
    optimizer.step()
"""
SYNC = STEP + "    total += loss.item(){tail}\n"


def _noqa(text: str, codes=None):
    found = lint(text, codes=codes)
    assert found, "the snippet must have findings"
    res = add_noqa(text, found)
    assert lint(res.text, codes=codes) == [f for f in found if f in res.unplaceable]
    return res, found


def test_appends_a_directive_to_the_flagged_line():
    res, found = _noqa(SYNC.format(tail=""), codes=["GPU101"])
    assert res.added == 1 and not res.unplaceable
    assert res.text.splitlines()[6] == "    total += loss.item()  # noqa: GPU101"
    assert res.text.splitlines()[:6] == SYNC.format(tail="").splitlines()[:6]


def test_keeps_an_existing_comment_and_extends_an_existing_noqa():
    res, _ = _noqa(SYNC.format(tail="  # running sum"), codes=["GPU101"])
    assert res.text.splitlines()[6] == "    total += loss.item()  # running sum  # noqa: GPU101"
    res, _ = _noqa(SYNC.format(tail="  # noqa: E501 long line"), codes=["GPU101"])
    assert res.text.splitlines()[6] == "    total += loss.item()  # noqa: E501, GPU101 long line"
    sup = Suppressions(res.text)
    assert sup.by_line[7] == frozenset({"E501", "GPU101"})


def test_several_codes_on_one_line_share_one_comment():
    text = "import torch\nfrom torch import nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4)).cuda()\n"
    found = lint(text)
    assert len({f.code for f in found if f.row == 4}) >= 1
    res = add_noqa(text, found + [f.__class__(**{**f.__dict__, "code": "GPU999"}) for f in found[:1]])
    line = res.text.splitlines()[3]
    assert line.count("# noqa") == 1
    assert re.search(r"# noqa: GPU\d+(, GPU\d+)+$", line)


def test_a_finding_inside_a_multiline_string_goes_on_its_statement():
    # the read is on the line of a triple-quoted string's end, which can take a comment;
    # a read on a line inside the string's own lines falls back to the statement's first line
    text = (
        STEP
        + "    log(f'''step\n"
        "{loss.item()}''', 1)\n"
    )
    res, found = _noqa(text, codes=["GPU101"])
    assert [f.row for f in found] == [8]
    assert not res.unplaceable
    assert res.text.splitlines()[7].endswith("# noqa: GPU101")


def test_a_line_ending_in_a_backslash_or_inside_a_string_is_reported_not_broken():
    text = (
        STEP
        + "    x = '''%s''' % \\\n"
        "        loss.item()\n"
    )
    found = lint(text, codes=["GPU101"])
    assert [f.row for f in found] == [8]
    res = add_noqa(text, found)
    # row 8 ends the statement and takes the comment; the statement's first line (7) could not
    assert res.text.splitlines()[7].endswith("loss.item()  # noqa: GPU101")
    assert lint(res.text, codes=["GPU101"]) == []
    # a finding whose own line and statement line both end in a backslash cannot be placed
    f = found[0].__class__(**{**found[0].__dict__, "row": 7, "noqa_row": 7})
    res = add_noqa(text, [f])
    assert res.unplaceable == [f] and res.text == text


def test_line_endings_and_odd_line_separators_are_kept():
    text = SYNC.format(tail="").replace("\n", "\r\n").replace("import torch", "import torch  # \x0c form feed")
    res, _ = _noqa(text, codes=["GPU101"])
    assert res.text.count("\r\n") == text.count("\r\n") and "\n" not in res.text.replace("\r\n", "")
    assert "total += loss.item()  # noqa: GPU101\r\n" in res.text


# ------------------------------------------------------------------ the CLI
def test_cli_suppresses_every_fixture_finding_and_changes_nothing_else(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    # (GPU900's own fixtures are comments that suppress nothing: add-noqa leaves them as they are)
    before = {p: p.read_text(encoding="utf-8") for p in (tmp_path / "fixtures").rglob("*.py")}
    first = invoke(["check", "--select", "ALL", "--ignore", "GPU900", "--output-format", "json", "fixtures"], tmp_path)
    n = len(json.loads(first.stdout))
    assert n > 100
    res = invoke(["check", "--select", "ALL", "--ignore", "GPU900", "--add-noqa", "fixtures"], tmp_path)
    assert res.exit_code == 0, res.output
    assert re.search(rf"Added noqa comments for {n} findings in \d+ files\.", res.stdout)
    after = invoke(["check", "--select", "ALL", "--ignore", "GPU900", "fixtures"], tmp_path)
    assert after.exit_code == 0 and "All checks passed!" in after.stdout
    for path, old in before.items():
        new = path.read_text(encoding="utf-8")
        old_lines, new_lines = old.splitlines(), new.splitlines()
        assert len(old_lines) == len(new_lines), path
        for a, b in zip(old_lines, new_lines):
            assert a == b or (b.startswith(a.rstrip()) and "# noqa" in b[len(a.rstrip()):]) or (
                "# noqa:" in a and re.sub(r", GPU\d+", "", b) == a
            ), (path, a, b)
    again = invoke(["check", "--select", "ALL", "--ignore", "GPU900", "--add-noqa", "fixtures"], tmp_path)
    assert again.exit_code == 0 and "for 0 findings in 0 files" in again.stdout


def test_cli_keeps_the_encoding_and_bom(tmp_path):
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + DP
    (tmp_path / "latin.py").write_bytes(latin.encode("latin-1"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + DP.encode())
    res = invoke(["check", "--select", "GPU001", "--add-noqa", "."], tmp_path)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "latin.py").read_bytes().decode("latin-1").endswith(
        "model = nn.DataParallel(nn.Linear(4, 4))  # noqa: GPU001\n")
    assert (tmp_path / "bom.py").read_bytes().startswith(b"\xef\xbb\xbfimport torch")
    assert invoke(["check", "--select", "GPU001", "."], tmp_path).exit_code == 0


def test_cli_reports_what_it_could_not_do_and_exits_1(tmp_path):
    write(tmp_path, "ok.py", ZG)
    write(tmp_path, "broken.py", "def f(:\n")
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": DP.splitlines(keepends=True)}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    res = invoke(["check", "--select", "GPU001,GPU302", "--add-noqa", "."], tmp_path)
    assert res.exit_code == 1
    assert "broken.py" in res.stderr and "syntax error" in res.stderr
    # the notebook's finding is commented in its cell too (tests/test_notebooks.py has the details)
    assert "Added noqa comments for 2 findings in 2 files." in res.stdout
    assert "# noqa: GPU302" in (tmp_path / "ok.py").read_text()
    assert "# noqa: GPU001" in "".join(json.loads((tmp_path / "nb.ipynb").read_text())["cells"][0]["source"])


def test_cli_add_noqa_and_diff_do_not_mix(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", "--add-noqa", "--diff", "."], tmp_path)
    assert res.exit_code == 2 and "cannot be used together" in res.output
    assert findings(invoke(["check", "--select", "GPU001", "."], tmp_path).stdout)


def test_cli_does_not_write_through_a_symlink_outside_the_paths(tmp_path):
    """As `gpulint fix --apply`: a link found in a folder given is not written
    through to a file outside the paths given."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = write(outside, "real.py", DP)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "link.py").symlink_to(target)
    res = invoke(["check", "--select", "GPU001", "--add-noqa", "proj"], tmp_path)
    assert res.exit_code == 1 and "outside the paths given" in res.stderr
    assert target.read_text() == DP


def test_a_finding_on_a_line_inside_a_string_falls_back_to_its_statement_line():
    text = (
        STEP
        + "    msg = (\n"
        "        f'''a\n"
        "{loss.item()}\n"
        "b'''\n"
        "    )\n"
    )
    res, found = _noqa(text, codes=["GPU101"])
    assert [(f.row, f.noqa_row) for f in found] == [(9, 7)]
    assert res.text.splitlines()[6] == "    msg = (  # noqa: GPU101"
    assert res.text.splitlines()[8] == "{loss.item()}"


def test_cli_suppresses_a_finding_only_the_project_finds(tmp_path):
    # `value.item()` runs every step only through the loop in train.py: linted alone,
    # meters.py has no finding, so the run's own finding is what takes the comment
    shutil.copytree(FIXTURES / "verify" / "trace", tmp_path / "proj")
    first = invoke(["check", "--select", "ALL", "--output-format", "json", "proj"], tmp_path)
    cross = [f for f in json.loads(first.stdout) if f["filename"].endswith("meters.py")]
    assert [(f["code"], f["location"]["row"]) for f in cross] == [("GPU101", 12)]
    res = invoke(["check", "--select", "ALL", "--add-noqa", "proj"], tmp_path)
    assert res.exit_code == 0, res.output
    assert "Added noqa comments for 4 findings in 3 files." in res.stdout
    assert "self.total += value.item()  # noqa: GPU101" in (tmp_path / "proj" / "meters.py").read_text()
    after = invoke(["check", "--select", "ALL", "proj"], tmp_path)
    assert after.exit_code == 0 and "All checks passed!" in after.stdout
