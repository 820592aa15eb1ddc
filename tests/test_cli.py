"""The `gpulint` command line: exit codes, file errors, rule selection,
output options, colour, and the output formats' shapes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from cli_helpers import (
    CLEAN, DP, TWO, UNCLOSED_ERROR, UNCLOSED_LINE, ZG, codes, diagnostics, findings, invoke, run_subprocess, write,
)
from gpulint.engine import lint as engine
from gpulint.registry import all_rules

DP_MSG = all_rules()["GPU001"].message


# ------------------------------------------------------------------ exit codes
def test_clean_project_exits_0(tmp_path):
    write(tmp_path, "train.py", CLEAN)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 0
    assert res.stdout == "All checks passed!\n"
    assert res.stderr == ""


def test_findings_exit_1_in_ruff_text_format(tmp_path):
    write(tmp_path, "train.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert lines[0] == f"train.py:4:9: GPU001 {DP_MSG}"
    assert lines[1] == "Found 1 problem."
    assert res.stderr == ""


def test_default_path_is_the_current_directory_and_paths_are_normalised(tmp_path):
    write(tmp_path, "pkg/train.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert findings(res.stdout) == [(os.path.join("pkg", "train.py"), 4, 9, "GPU001")]
    res2 = invoke(["check", TWO, "./pkg/../pkg/train.py"], tmp_path)
    assert findings(res2.stdout) == findings(res.stdout)


def test_unsafe_fix_is_not_marked_fixable(tmp_path):
    write(tmp_path, "train.py", ZG)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    assert f"train.py:4:5: GPU302 {all_rules()['GPU302'].message}" in res.stdout
    assert "[*]" not in res.stdout  # only safe fixes get the marker
    assert "--unsafe-fixes" in res.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (["check", "--no-such-option"], "No such option"),
        (["check", "--select", "GPU999"], "unknown rule code or prefix 'GPU999'"),
        (["check", "--ignore", "XYZ1"], "unknown rule code or prefix 'XYZ1'"),
        (["check", "--extend-select", "not-a-rule"], "unknown rule code or prefix 'not-a-rule'"),
        (["check", "--output-format", "xml"], "xml"),
        (["check", "-j", "0"], "0"),
        (["nosuchcommand"], "No such command"),
        (["explain", "GPU999"], "unknown rule 'GPU999'"),
    ],
)
def test_usage_errors_exit_2(tmp_path, args, needle):
    write(tmp_path, "train.py", DP)
    res = invoke(args, tmp_path)
    assert res.exit_code == 2
    assert needle in res.stderr
    assert res.stdout == ""


def test_unparseable_file_is_one_line_and_others_are_still_linted(tmp_path):
    write(tmp_path, "bad.py", "def f(:\n    pass\n")
    write(tmp_path, "good.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    v = sys.version_info
    # one diagnostic line on stdout, in the report (as Ruff), and nothing on stderr
    assert res.stdout.splitlines() == [
        f"bad.py:1:7: invalid-syntax: SyntaxError: invalid syntax (Python {v[0]}.{v[1]} grammar)",
        f"good.py:4:9: GPU001 {DP_MSG}",
        "Found 1 problem.",
        "1 file could not be checked.",
    ]
    assert res.stderr == ""
    assert findings(res.stdout) == [("good.py", 4, 9, "GPU001")]


def test_unparseable_file_without_any_rule_needle_is_still_reported(tmp_path):
    # the cheap pre-filter skips rules, never the syntax check
    write(tmp_path, "bad.py", "x = (\n")
    write(tmp_path, "good.py", CLEAN)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1  # something was linted, something failed
    assert res.stdout.splitlines() == [UNCLOSED_LINE, "1 file could not be checked."]
    assert res.stderr == ""
    assert "All checks passed!" not in res.stdout


def test_undecodable_file(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    write(tmp_path, "good.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    assert res.stderr == ""
    assert diagnostics(res.stdout) == [
        ("latin.py", 1, 1, "io-error", "cannot decode as utf-8: invalid start byte at line 1 (byte 5)")
    ]
    assert codes(res.stdout) == ["GPU001"]


def test_file_with_nul_bytes(tmp_path):
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1  # nothing could be linted: a file that could not be checked, not a usage error
    assert res.stdout.splitlines() == ["nul.py:1:1: io-error: source contains NUL bytes", "1 file could not be checked."]
    assert res.stderr == ""


def test_only_unlintable_files_exit_1(tmp_path):
    write(tmp_path, "bad.py", "x = (\n")
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1  # was 2; 2 is for usage and configuration errors only
    assert res.stdout.splitlines() == [UNCLOSED_LINE, "1 file could not be checked."]
    assert res.stderr == ""


def test_missing_path(tmp_path):
    write(tmp_path, "good.py", DP)
    res = invoke(["check", TWO, "missing.py"], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == ["missing.py:1:1: io-error: no such file or directory", "1 file could not be checked."]
    assert res.stderr == ""
    res = invoke(["check", TWO, "missing.py", "good.py"], tmp_path)
    assert res.exit_code == 1
    assert codes(res.stdout) == ["GPU001"]
    assert diagnostics(res.stdout) == [("missing.py", 1, 1, "io-error", "no such file or directory")]
    assert res.stderr == ""


def test_broken_symlink_named_explicitly(tmp_path):
    os.symlink(tmp_path / "gone.py", tmp_path / "link.py")
    write(tmp_path, "good.py", CLEAN)
    res = invoke(["check", "link.py", "good.py"], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == ["link.py:1:1: io-error: broken symbolic link", "1 file could not be checked."]
    assert res.stderr == ""


def test_a_crashing_rule_is_a_file_error_not_a_traceback(tmp_path, monkeypatch):
    cls = all_rules()["GPU001"]

    def boom(self, node, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(cls, "visit_Call", boom)
    monkeypatch.setattr(engine, "_RULE_CACHE", {})
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    assert res.stderr == ""
    assert diagnostics(res.stdout) == [
        ("a.py", 1, 1, "internal-error", "internal error: RuntimeError: boom (please report this)")
    ]
    assert codes(res.stdout) == ["GPU302"]
    assert res.stdout.splitlines()[-1] == "1 file could not be checked."
    # the JSON report has it too
    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    assert res.exit_code == 1
    assert [(os.path.basename(d["filename"]), d["code"], d["message"]) for d in json.loads(res.stdout)] == [
        ("a.py", "internal-error", "internal error: RuntimeError: boom (please report this)"),
        ("b.py", "GPU302", all_rules()["GPU302"].message),
    ]
    assert res.stderr.splitlines() == ["error: a.py: internal error: RuntimeError: boom (please report this)"]


def test_exit_zero(tmp_path):
    write(tmp_path, "train.py", DP)
    res = invoke(["check", TWO, "--exit-zero"], tmp_path)
    assert res.exit_code == 0
    assert codes(res.stdout) == ["GPU001"]


# ------------------------------------------------------------------ selection
@pytest.fixture
def both(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    return tmp_path


def _selected(root, *args):
    res = invoke(["check", *args], root)
    assert res.exit_code in (0, 1), res.stderr
    return sorted(set(c for c in codes(res.stdout) if c in ("GPU001", "GPU302")))


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], ["GPU001", "GPU302"]),  # both are on by default
        (["--select", "GPU001"], ["GPU001"]),
        (["--select", "gpu302"], ["GPU302"]),  # codes are case-insensitive
        (["--select", "GPU3"], ["GPU302"]),  # a prefix
        (["--select", "GPU0"], ["GPU001"]),
        (["--select", "data-parallel"], ["GPU001"]),  # a name
        (["--select", "zero-grad-not-set-to-none"], ["GPU302"]),
        (["--select", "ALL"], ["GPU001", "GPU302"]),
        (["--select", "GPU001,GPU302"], ["GPU001", "GPU302"]),  # comma-separated
        (["--select", "GPU001", "--select", "GPU302"], ["GPU001", "GPU302"]),  # repeated
        (["--ignore", "GPU001"], ["GPU302"]),
        (["--ignore", "data-parallel"], ["GPU302"]),
        (["--select", "ALL", "--ignore", "GPU3"], ["GPU001"]),
        (["--select", "GPU001", "--extend-select", "GPU302"], ["GPU001", "GPU302"]),
        # Ruff's specificity rule: the more specific selector wins ...
        (["--select", "GPU302", "--ignore", "GPU3"], ["GPU302"]),
        (["--select", "GPU3", "--ignore", "GPU302"], []),
        (["--select", "GPU0", "--ignore", "GPU"], ["GPU001"]),
        (["--select", "ALL", "--ignore", "GPU"], []),
        (["--select", "GPU", "--ignore", "ALL"], ["GPU001", "GPU302"]),
        # ... and at equal specificity the ignore wins
        (["--select", "GPU001", "--ignore", "GPU001"], []),
        (["--select", "GPU3", "--ignore", "GPU3"], []),
    ],
)
def test_select_ignore_extend_select(both, args, expected):
    assert _selected(both, *args) == expected


def test_cli_selection_is_a_layer_over_the_config(both):
    write(both, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU0"]\nignore = ["GPU001"]\n')
    assert _selected(both) == []
    # the command line's --select replaces the config's selection (Ruff's layers)
    assert _selected(both, "--select", "GPU001") == ["GPU001"]
    # --extend-select and --ignore adjust it
    assert _selected(both, "--extend-select", "GPU302") == ["GPU302"]
    write(both, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001", "GPU302"]\n')
    assert _selected(both, "--ignore", "GPU3") == ["GPU001"]
    assert _selected(both, "--ignore", "GPU3", "--extend-select", "GPU302") == ["GPU001", "GPU302"]


# ------------------------------------------------------------------ options
def test_statistics(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", DP + ZG.replace("import torch\n", ""))
    res = invoke(["check", TWO, "--statistics"], tmp_path)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert lines[0] == "2\tGPU001\t[ ] data-parallel"
    assert lines[1] == "1\tGPU302\t[ ] zero-grad-not-set-to-none"
    assert lines[2] == "Found 3 problems."
    assert not findings(res.stdout)  # counts instead of the list



def test_statistics_in_every_format(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", DP + ZG.replace("import torch\n", ""))
    res = invoke(["check", TWO, "--statistics", "--output-format", "json"], tmp_path)
    assert res.exit_code == 1
    assert json.loads(res.stdout) == [  # Ruff's JSON statistics
        {"code": "GPU001", "name": "data-parallel", "count": 2, "fixable": False},
        {"code": "GPU302", "name": "zero-grad-not-set-to-none", "count": 1, "fixable": False},
    ]
    for fmt in ("concise", "sarif", "github"):  # the table, as Ruff prints it for the other formats
        res = invoke(["check", TWO, "--statistics", "--output-format", fmt], tmp_path)
        assert res.exit_code == 1 and res.stdout.splitlines()[:2] == [
            "2\tGPU001\t[ ] data-parallel", "1\tGPU302\t[ ] zero-grad-not-set-to-none"], fmt


def test_quiet(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO, "--quiet"], tmp_path)
    assert res.exit_code == 1
    assert res.stdout == f"a.py:4:9: GPU001 {DP_MSG}\n"
    write(tmp_path, "a.py", CLEAN)
    res = invoke(["check", "-q"], tmp_path)
    assert res.exit_code == 0
    assert res.stdout == ""


def test_output_file(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO, "--output-format", "json", "-o", "report.json"], tmp_path)
    assert res.exit_code == 1
    assert res.stdout == ""
    data = json.loads((tmp_path / "report.json").read_text())
    assert [d["code"] for d in data] == ["GPU001"]
    res = invoke(["check", TWO, "--output-file", "report.txt"], tmp_path)
    assert (tmp_path / "report.txt").read_text().startswith(f"a.py:4:9: GPU001 {DP_MSG}\n")
    assert "\x1b[" not in (tmp_path / "report.txt").read_text()


def test_output_file_that_cannot_be_written(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO, "-o", "no/such/dir/report.txt"], tmp_path)
    assert res.exit_code == 2
    [line] = res.stderr.splitlines()
    assert line.startswith("gpulint: error: no/such/dir/report.txt: cannot write the report")


def test_no_colour_when_not_a_tty(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert "\x1b[" not in res.stdout + res.stderr


def _run_on_tty(args, cwd, env_extra=None):
    """Run gpulint with stdout on a pseudo-terminal; return what it printed."""
    env = dict(os.environ)
    for k in ("NO_COLOR", "FORCE_COLOR"):
        env.pop(k, None)
    env["GPULINT_NO_CACHE"] = "1"
    env.update(env_extra or {})
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpulint", *args], cwd=cwd, env=env, stdout=slave, stderr=subprocess.PIPE
        )
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=60)
    return proc.returncode, b"".join(chunks).decode()


def test_colour_only_on_a_tty_and_never_with_no_color(tmp_path):
    write(tmp_path, "a.py", DP)
    rc, out = _run_on_tty(["check", TWO], tmp_path)
    assert rc == 1
    assert "\x1b[" in out and "GPU001" in out
    rc, out = _run_on_tty(["check", TWO, "--no-color"], tmp_path)
    assert rc == 1 and "GPU001" in out and "\x1b[" not in out
    rc, out = _run_on_tty(["check", TWO], tmp_path, {"NO_COLOR": "1"})
    assert rc == 1 and "GPU001" in out and "\x1b[" not in out


def test_python_dash_m_and_version(tmp_path):
    write(tmp_path, "a.py", DP)
    proc = run_subprocess(["check", TWO, "a.py"], tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"a.py:4:9: GPU001 {DP_MSG}\n")
    proc = run_subprocess(["--version"], tmp_path)
    assert proc.returncode == 0
    from gpulint import __version__

    assert __version__ in proc.stdout


def test_check_never_imports_torch(tmp_path):
    # a `torch` that explodes on import, first on the path
    write(tmp_path, "fake/torch/__init__.py", "raise SystemExit('torch was imported')\n")
    write(tmp_path, "proj/a.py", DP)
    proc = run_subprocess(["check", TWO, "proj"], tmp_path, env={"PYTHONPATH": str(tmp_path / "fake")})
    assert proc.returncode == 1, proc.stderr
    assert "torch was imported" not in proc.stderr
    assert "GPU001" in proc.stdout


# ------------------------------------------------------------------ formats
RUFF_KEYS = {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}


def test_json_follows_ruffs_schema(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert isinstance(data, list) and len(data) == 2
    for d in data:
        assert set(d) == RUFF_KEYS
        assert d["cell"] is None
        assert set(d["location"]) == {"row", "column"} == set(d["end_location"])
        assert os.path.isabs(d["filename"])
        assert d["url"].startswith("https://")
    dp, zg = data
    assert dp["code"] == "GPU001" and dp["fix"] is None and dp["message"] == DP_MSG
    assert dp["filename"] == str((tmp_path / "a.py").resolve()) or dp["filename"] == str(tmp_path / "a.py")
    assert dp["location"] == {"row": 4, "column": 9}
    assert dp["end_location"] == {"row": 4, "column": 41}
    assert dp["noqa_row"] == 4
    assert zg["code"] == "GPU302"
    assert zg["location"] == {"row": 4, "column": 5}
    assert zg["fix"] == {
        "applicability": "unsafe",
        "edits": [{"content": "True", "end_location": {"row": 4, "column": 36}, "location": {"row": 4, "column": 31}}],
        "message": "Set `set_to_none=True`",
    }
    # the edit replaces exactly `False`
    line = (tmp_path / "b.py").read_text().splitlines()[3]
    assert line[31 - 1 : 36 - 1] == "False"


def test_json_when_clean_and_when_a_file_fails(tmp_path):
    write(tmp_path, "a.py", CLEAN)
    res = invoke(["check", "--output-format", "json"], tmp_path)
    assert res.exit_code == 0
    assert json.loads(res.stdout) == []
    write(tmp_path, "bad.py", "x = (\n")
    res = invoke(["check", "--output-format", "json"], tmp_path)
    assert res.exit_code == 1
    [path, row, col, code, message] = diagnostics(UNCLOSED_LINE)[0]
    assert json.loads(res.stdout) == [{  # stdout stays valid JSON, and the file is in it
        "cell": None,
        "code": "invalid-syntax",
        "end_location": {"row": row, "column": col},
        "filename": os.path.join(os.path.realpath(tmp_path), "bad.py"),  # cwd is the real path
        "fix": None,
        "location": {"row": row, "column": col},
        "message": message,
        "noqa_row": None,
        "url": None,
    }]
    assert res.stderr.splitlines() == [f"error: bad.py: {UNCLOSED_ERROR}"]  # and one line on stderr, as before


def test_github_annotations(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "bad.py", "x = (\n")
    res = invoke(["check", TWO, "--output-format", "github"], tmp_path)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    [path, row, col, code, message] = diagnostics(UNCLOSED_LINE)[0]
    assert lines == [
        f"::error title=gpulint (GPU001),file=a.py,line=4,col=9,endLine=4,endColumn=41::a.py:4:9: GPU001 {DP_MSG}",
        f"::error title=gpulint (invalid-syntax),file=bad.py,line={row},col={col},endLine={row},endColumn={col}"
        f"::{UNCLOSED_LINE}",
    ]
    assert res.stderr.splitlines() == [f"error: bad.py: {UNCLOSED_ERROR}"]


def test_concise(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO, "--output-format", "concise"], tmp_path)
    assert res.stdout.splitlines() == [f"a.py:4:9: GPU001 {DP_MSG}", "Found 1 problem."]


def test_output_format_from_config_and_cli_overrides_it(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\noutput-format = "json"\n')
    res = invoke(["check", TWO], tmp_path)
    assert [d["code"] for d in json.loads(res.stdout)] == ["GPU001"]
    res = invoke(["check", TWO, "--output-format", "text"], tmp_path)
    assert codes(res.stdout) == ["GPU001"]


# ------------------------------------------------------------------ rules / explain
def test_rules_lists_every_rule(tmp_path):
    res = invoke(["rules"], tmp_path)
    assert res.exit_code == 0
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines()[1:]}
    assert set(rows) == set(all_rules())
    assert rows["GPU001"] == ["GPU001", "data-parallel", "preview", "on", "none"]
    assert rows["GPU302"] == ["GPU302", "zero-grad-not-set-to-none", "preview", "on", "unsafe"]
    status = "preview" if all_rules()["GPU401"].preview else "stable"
    assert rows["GPU401"] == ["GPU401", "deprecated-cuda-amp", status, "on", "safe"]
    data = json.loads(invoke(["rules", "--output-format", "json"], tmp_path).stdout)
    assert {d["code"] for d in data} == set(all_rules())


@pytest.mark.parametrize("key", ["GPU001", "gpu001", "data-parallel"])
def test_explain(tmp_path, key):
    res = invoke(["explain", key], tmp_path)
    assert res.exit_code == 0
    assert res.stdout.startswith("# data-parallel (GPU001)\n")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References"):
        assert heading in res.stdout


def test_ci_output_formats_json_lines_junit_gitlab(tmp_path):
    import xml.etree.ElementTree as ET

    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", DP + ZG.replace("import torch\n", ""))
    write(tmp_path, "broken.py", "def f(:\n")
    as_json = json.loads(invoke(["check", TWO, "--output-format", "json"], tmp_path).stdout)
    assert {f["code"] for f in as_json} == {"GPU001", "GPU302", "invalid-syntax"}
    res = invoke(["check", TWO, "--output-format", "json-lines"], tmp_path)
    assert res.exit_code == 1
    assert [json.loads(line) for line in res.stdout.splitlines()] == as_json

    res = invoke(["check", TWO, "--output-format", "junit"], tmp_path)
    root = ET.fromstring(res.stdout)
    assert root.tag == "testsuites" and root.get("failures") == str(len(as_json))
    cases = [(s.get("name"), c.get("name"), c.get("line")) for s in root for c in s]
    [zg] = [f for f in as_json if f["code"] == "GPU302"]
    assert ("b.py", "gpulint.GPU302", str(zg["location"]["row"])) in cases
    assert all(c.find("failure") is not None for s in root for c in s)
    assert {s.get("name") for s in root} == {"a.py", "b.py", "broken.py"}

    first = json.loads(invoke(["check", TWO, "--output-format", "gitlab"], tmp_path).stdout)
    again = json.loads(invoke(["check", TWO, "--output-format", "gitlab"], tmp_path).stdout)
    assert first == again  # fingerprints are stable across runs
    assert len({r["fingerprint"] for r in first}) == len(first) == len(as_json)
    assert {r["location"]["path"] for r in first} == {"a.py", "b.py", "broken.py"}
    assert all(r["severity"] == "major" and r["location"]["lines"]["begin"] >= 1 for r in first)
    # a clean run is a passing suite, and an empty code-quality report
    clean = tmp_path / "clean"
    write(clean, "ok.py", "x = 1\n")
    root = ET.fromstring(invoke(["check", TWO, "--output-format", "junit"], clean).stdout)
    assert root.get("failures") == "0" and len(list(root.iter("testcase"))) == 1
    assert json.loads(invoke(["check", TWO, "--output-format", "gitlab"], clean).stdout) == []


def test_full_output_shows_the_source_lines(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", TWO, "--output-format", "full"], tmp_path)
    assert res.exit_code == 1
    [f] = json.loads(invoke(["check", TWO, "--output-format", "json"], tmp_path).stdout)
    row, col, end = f["location"]["row"], f["location"]["column"], f["end_location"]["column"]
    lines = res.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{row} | "))
    assert lines[at] == f"{row} | " + DP.splitlines()[row - 1]
    assert lines[at + 1] == "  | " + " " * (col - 1) + "^" * (end - col)
    assert lines[0].startswith(f"a.py:{row}:{col}: GPU001") and lines[-1] == "Found 1 problem."


# ------------------------------------------------------------------ check --fix
AMP_STEP = """\
import torch
from torch import nn

model = nn.DataParallel(nn.Linear(4, 4))


def step(opt):
    opt.zero_grad(set_to_none=False)
    with torch.cuda.amp.autocast():
        pass
"""
SEL = "--select=GPU001,GPU302,GPU401"


def test_check_fix_writes_safe_fixes_and_reports_what_is_left(tmp_path):
    write(tmp_path, "a.py", AMP_STEP)
    res = invoke(["check", SEL, "--fix", "--show-fixes"], tmp_path)
    assert res.exit_code == 1  # GPU001 and GPU302 (an unsafe fix) are left
    text = (tmp_path / "a.py").read_text()
    assert 'torch.amp.autocast("cuda")' in text and "set_to_none=False" in text
    assert sorted(c for _, _, _, c in findings(res.stdout)) == ["GPU001", "GPU302"]
    assert "Found 3 problems (1 fixed, 2 remaining)." in res.stdout
    assert "Fixed 1 problem:\n- a.py:\n    1 × GPU401 (deprecated-cuda-amp)" in res.stdout
    # the same as `gpulint fix --apply`, which shares the code: nothing left to fix
    again = invoke(["fix", SEL, "--apply"], tmp_path)
    assert "Fixed 0 problems" in again.stdout


def test_check_fix_with_unsafe_fixes_and_json_output(tmp_path):
    write(tmp_path, "a.py", AMP_STEP)
    res = invoke(["check", SEL, "--fix", "--unsafe-fixes", "--output-format", "json"], tmp_path)
    assert res.exit_code == 1
    assert [f["code"] for f in json.loads(res.stdout)] == ["GPU001"]  # only what no fix covers
    assert "set_to_none=False" not in (tmp_path / "a.py").read_text()


def test_check_fix_only_reports_nothing_else_and_passes(tmp_path):
    write(tmp_path, "a.py", AMP_STEP)
    res = invoke(["check", SEL, "--fix-only"], tmp_path)
    assert res.exit_code == 0 and res.stdout == "Fixed 1 problem.\n"
    assert 'torch.amp.autocast("cuda")' in (tmp_path / "a.py").read_text()
    clean = invoke(["check", "--select=GPU401", "--fix"], tmp_path)
    assert clean.exit_code == 0 and "All checks passed!" in clean.stdout


def test_check_fix_refuses_diff_and_add_noqa(tmp_path):
    write(tmp_path, "a.py", AMP_STEP)
    for other in ("--diff", "--add-noqa"):
        bad = invoke(["check", SEL, "--fix", other, "."], tmp_path)
        assert bad.exit_code == 2 and "cannot be used together" in bad.stderr
    assert "set_to_none=False" in (tmp_path / "a.py").read_text()  # nothing was written


# ------------------------------------------------------------------ inspecting
def test_show_files_lists_what_a_run_lints(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nextend-exclude = ["legacy/"]\n')
    for rel in ("a.py", "pkg/b.py", "legacy/c.py", "build/d.py", "notes.txt"):
        write(tmp_path, rel, DP)
    res = invoke(["check", "--show-files"], tmp_path)
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [str(tmp_path / "a.py"), str(tmp_path / "pkg" / "b.py")]
    linted = {f["filename"] for f in json.loads(invoke(["check", "--select", "GPU001", "--output-format", "json"],
                                                       tmp_path).stdout)}
    assert linted == set(res.stdout.splitlines())  # the same files a run lints
    missing = invoke(["check", "--show-files", "nope", "a.py"], tmp_path)
    assert missing.exit_code == 2 and "nope: no such file or directory" in missing.stderr
    assert missing.stdout.splitlines() == [str(tmp_path / "a.py")]


def test_show_settings_says_where_each_setting_came_from(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nextend-exclude = ["legacy/"]\nignore = ["GPU103"]\n')
    write(tmp_path, "a.py", DP)
    lines = invoke(["check", "--show-settings", "--ignore", "GPU302", "a.py"], tmp_path).stdout.splitlines()

    def source(key):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{key} = "))
        return lines[at + 1].strip()

    config = str(tmp_path / "pyproject.toml")
    assert source("extend-exclude") == f"# from {config}"
    assert source("ignore") == f"# from {config}, then the command line (--ignore GPU302)"
    assert source("exclude") == "# the default" and source("unfixable") == "# the default"


def test_watch_lints_again_on_each_change(tmp_path, monkeypatch):
    import watchfiles

    write(tmp_path, "a.py", DP)
    seen = {}

    def fake_watch(*paths, **kw):  # the operating system's notifications, two batches of them
        seen["paths"], seen["filter"] = paths, kw["watch_filter"]
        write(tmp_path, "a.py", DP + ZG.replace("import torch\n", ""))  # a new finding
        yield {(watchfiles.Change.modified, str(tmp_path / "a.py"))}
        (tmp_path / "a.py").write_text("x = 1\n")
        yield {(watchfiles.Change.modified, str(tmp_path / "a.py"))}

    monkeypatch.setattr(watchfiles, "watch", fake_watch)
    res = invoke(["check", TWO, "--watch"], tmp_path)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.startswith("Starting gpulint in watch mode...\n")
    runs = out.split("File change detected (a.py): linting again.")
    assert len(runs) == 3
    assert [sorted(c for _, _, _, c in findings(r)) for r in runs] == [["GPU001"], ["GPU001", "GPU302"], []]
    assert "All checks passed!" in runs[2]
    # only sources and configs wake it, never the cache's own writes
    assert seen["paths"] == (".",) and seen["filter"](None, str(tmp_path / "b.py"))
    assert not seen["filter"](None, str(tmp_path / ".gpulint_cache" / "x.py"))
    assert not seen["filter"](None, str(tmp_path / "image.png"))
    bad = invoke(["check", TWO, "--watch", "--add-noqa"], tmp_path)
    assert bad.exit_code == 2 and "--watch cannot be used with --add-noqa" in bad.stderr
