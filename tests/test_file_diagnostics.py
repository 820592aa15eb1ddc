"""No false green: a file that `gpulint check` could not check is a diagnostic
finding of its own in every output format, as Ruff reports one:
`invalid-syntax` (the Python text, or a notebook's JSON, does not parse; a
cell's syntax error is located in its cell), `io-error` (the file cannot be
found, read or decoded) and `internal-error` (a rule crashed, or the code is
nested too deeply to analyse). The run then exits 1, even when nothing else
could be linted (2 is for usage and configuration errors only), unless
`--exit-zero`; a run that finds no file at all warns and exits 0. The text
formats print the diagnostic on stdout and nothing on stderr; the machine
formats (and `-o FILE`) keep the one line `error: path: why` on stderr too.
The cache never makes a file that failed look clean."""

from __future__ import annotations

import json
import os

import pytest

from cli_helpers import (
    CLEAN, DP, TWO, UNCLOSED, UNCLOSED_ERROR, UNCLOSED_LINE, _syntax_error_of, codes, diagnostic_of, diagnostics,
    findings, invoke, write,
)
from gpulint.engine import lint as engine
from gpulint.rule import FILE_DIAGNOSTICS
from gpulint.registry import all_rules
from test_reporters import assert_valid, validator  # noqa: F401  (the official SARIF schema)

DP_MSG = all_rules()["GPU001"].message
MISSING = "no such file or directory"
# bad.py does not parse; missing.py is not there: (path, row, col, code, message) of each
SYN = diagnostics(UNCLOSED_LINE)[0]
GONE = ("missing.py", 1, 1, "io-error", MISSING)
GOOD_LINE = f"good.py:4:9: GPU001 {DP_MSG}"


def _project(tmp_path):
    write(tmp_path, "bad.py", UNCLOSED)
    write(tmp_path, "good.py", DP)
    return ["bad.py", "good.py", "missing.py"]


def _line(d):
    path, row, col, code, message = d
    return f"{path}:{row}:{col}: {code}: {message}"


def _gh(d):
    path, row, col, code, message = d
    props = f"title=gpulint ({code}),file={path},line={row},col={col},endLine={row},endColumn={col}"
    return f"::error {props}::{_line(d)}"


def _json_entry(tmp_path, d):
    path, row, col, code, message = d
    return {
        "cell": None, "code": code, "end_location": {"row": row, "column": col},
        "filename": os.path.join(os.path.realpath(tmp_path), path),  # cwd is the real path
        "fix": None, "location": {"row": row, "column": col},
        "message": message, "noqa_row": None, "url": None,
    }


def _sarif_result(d):
    path, row, col, code, message = d
    return {
        "ruleId": code,
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": row, "startColumn": col, "endLine": row, "endColumn": col},
        }}],
    }


STDERR = sorted([f"error: bad.py: {UNCLOSED_ERROR}", f"error: missing.py: {MISSING}"])


# ------------------------------------------------------------------ every output format
def test_codes_are_the_three_documented():
    assert FILE_DIAGNOSTICS == ("invalid-syntax", "io-error", "internal-error")
    assert not set(FILE_DIAGNOSTICS) & set(all_rules())


def test_text(tmp_path):
    args = _project(tmp_path)
    res = invoke(["check", TWO, *args], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        _line(SYN), GOOD_LINE, _line(GONE), "Found 1 problem.", "2 files could not be checked.",
    ]
    assert res.stderr == ""  # said once, in the report


def test_concise(tmp_path):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--output-format", "concise", *args], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [_line(SYN), GOOD_LINE, _line(GONE), "Found 1 problem."]
    assert res.stderr == ""


def test_json(tmp_path):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--output-format", "json", *args], tmp_path)
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert [d["code"] for d in doc] == ["invalid-syntax", "GPU001", "io-error"]
    assert doc[0] == _json_entry(tmp_path, SYN)
    assert doc[2] == _json_entry(tmp_path, GONE)
    assert set(doc[1]) == set(doc[0])  # the same schema as a rule's finding (Ruff's)
    assert sorted(res.stderr.splitlines()) == STDERR


def test_sarif(tmp_path, validator):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--output-format", "sarif", *args], tmp_path)
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    [run] = doc["runs"]
    syn, dp, gone = run["results"]
    assert (dp["ruleId"], dp["level"]) == ("GPU001", "warning")
    assert syn == _sarif_result(SYN)
    assert gone == _sarif_result(GONE)
    [inv] = run["invocations"]
    assert inv["executionSuccessful"] is False
    assert sorted(n["message"]["text"] for n in inv["toolExecutionNotifications"]) == sorted(
        [f"bad.py: {UNCLOSED_ERROR}", f"missing.py: {MISSING}"])
    assert not {"invalid-syntax", "io-error", "internal-error"} & {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert sorted(res.stderr.splitlines()) == STDERR


def test_github(tmp_path):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--output-format", "github", *args], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        _gh(SYN),
        f"::error title=gpulint (GPU001),file=good.py,line=4,col=9,endLine=4,endColumn=41::{GOOD_LINE}",
        _gh(GONE),
    ]
    assert sorted(res.stderr.splitlines()) == STDERR


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_output_file_keeps_the_line_on_stderr(tmp_path, fmt):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--output-format", fmt, "-o", "report.out", *args], tmp_path)
    assert res.exit_code == 1
    assert res.stdout == ""
    assert sorted(res.stderr.splitlines()) == STDERR  # nothing on the terminal shows the report
    report = (tmp_path / "report.out").read_text()
    if fmt in ("text", "concise"):
        assert diagnostics(report) == [SYN, GONE]
    elif fmt == "json":
        assert [d["code"] for d in json.loads(report)] == ["invalid-syntax", "GPU001", "io-error"]
    elif fmt == "sarif":
        assert [r["ruleId"] for r in json.loads(report)["runs"][0]["results"]] == ["invalid-syntax", "GPU001", "io-error"]
    else:
        assert report.splitlines()[0] == _gh(SYN)


# ------------------------------------------------------------------ exit status
@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
@pytest.mark.parametrize("which", ["unparsable", "missing"])
def test_a_lone_bad_file_exits_1(tmp_path, validator, fmt, which):
    write(tmp_path, "bad.py", UNCLOSED)
    name, diag = ("bad.py", SYN) if which == "unparsable" else ("missing.py", GONE)
    res = invoke(["check", "--output-format", fmt, name], tmp_path)
    assert res.exit_code == 1, (res.stdout, res.stderr)  # nothing could be linted: not a usage error (2)
    if fmt == "text":
        assert res.stdout.splitlines() == [_line(diag), "1 file could not be checked."]
        assert res.stderr == ""
    elif fmt == "concise":
        assert res.stdout.splitlines() == [_line(diag)]
        assert res.stderr == ""
    else:
        assert res.stderr.splitlines() == [f"error: {name}: {UNCLOSED_ERROR if name == 'bad.py' else MISSING}"]
        if fmt == "json":
            assert json.loads(res.stdout) == [_json_entry(tmp_path, diag)]
        elif fmt == "sarif":
            doc = json.loads(res.stdout)
            assert_valid(validator, doc)
            assert doc["runs"][0]["results"] == [_sarif_result(diag)]
        else:
            assert res.stdout.splitlines() == [_gh(diag)]


def test_a_directory_of_only_bad_files_exits_1(tmp_path):
    write(tmp_path, "bad.py", UNCLOSED)
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        _line(SYN), "nul.py:1:1: io-error: source contains NUL bytes", "2 files could not be checked."]
    assert res.stderr == ""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_exit_zero(tmp_path, fmt):
    args = _project(tmp_path)
    res = invoke(["check", TWO, "--exit-zero", "--output-format", fmt, *args], tmp_path)
    assert res.exit_code == 0
    if fmt == "text":  # still reported, only the status changes
        assert diagnostics(res.stdout) == [SYN, GONE]
        assert codes(res.stdout) == ["GPU001"]
        assert "All checks passed!" not in res.stdout
    else:
        assert [d["code"] for d in json.loads(res.stdout)] == ["invalid-syntax", "GPU001", "io-error"]
    res = invoke(["check", "--exit-zero", "bad.py"], tmp_path)  # a lone bad file too
    assert res.exit_code == 0 and diagnostics(res.stdout) == [SYN]


def test_usage_and_config_errors_still_exit_2(tmp_path):
    write(tmp_path, "bad.py", UNCLOSED)
    res = invoke(["check", "--select", "GPU999", "bad.py"], tmp_path)
    assert res.exit_code == 2 and res.stdout == ""
    # the diagnostic codes are not rule selectors
    res = invoke(["check", "--ignore", "invalid-syntax", "bad.py"], tmp_path)
    assert res.exit_code == 2 and res.stdout == ""
    assert "unknown rule code or prefix 'invalid-syntax'" in res.stderr
    write(tmp_path, "pyproject.toml", "[tool.gpulint\n")
    res = invoke(["check", "bad.py"], tmp_path)
    assert res.exit_code == 2 and res.stdout == ""


def test_noqa_does_not_hide_a_file_that_does_not_parse(tmp_path):
    write(tmp_path, "bad.py", "x = (  # noqa\n")
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1
    [(path, row, col, code, _)] = diagnostics(res.stdout)
    assert (path, code) == ("bad.py", "invalid-syntax")
    assert (row, col) == diagnostic_of("bad.py", _syntax_error_of("x = (  # noqa\n"), "invalid-syntax")[1:3]


# ------------------------------------------------------------------ the three codes
def test_internal_errors(tmp_path, monkeypatch):
    write(tmp_path, "deep.py", DP)
    write(tmp_path, "good.py", CLEAN)

    def too_deep(*a, **kw):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(engine, "_walk", too_deep)
    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        "deep.py:1:1: internal-error: code is nested too deeply to analyse", "1 file could not be checked."]
    assert res.stderr == ""
    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    [d] = json.loads(res.stdout)
    assert (d["code"], d["message"], d["url"]) == ("internal-error", "code is nested too deeply to analyse", None)


def test_undecodable_and_unknown_coding_are_io_errors(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "kl.py").write_bytes(b"# -*- coding: klingon -*-\nx = '\xff'\n")
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1
    assert diagnostics(res.stdout) == [
        ("kl.py", 1, 1, "io-error", "unknown encoding in coding line: 'klingon', and the file is not UTF-8"),
        ("latin.py", 1, 1, "io-error", "cannot decode as utf-8: invalid start byte at line 1 (byte 5)"),
    ]


def test_stdin_that_does_not_parse(tmp_path):
    from click.testing import CliRunner

    from gpulint.frontends.cli import cli

    env = {"NO_COLOR": "1", "GPULINT_NO_CACHE": "1", "FORCE_COLOR": None, "GPULINT_DEBUG": None}
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = CliRunner().invoke(cli, ["check", "-"], input=b"def f(:\n", env=env)
        named = CliRunner().invoke(cli, ["check", "--stdin-filename", "src/a.py"], input=b"def f(:\n", env=env)
    finally:
        os.chdir(old)
    why = _syntax_error_of("def f(:\n")
    assert res.exit_code == 1 and named.exit_code == 1
    assert diagnostics(res.stdout) == [diagnostic_of("-", why, "invalid-syntax")]
    assert diagnostics(named.stdout) == [diagnostic_of("src/a.py", why, "invalid-syntax")]


# ------------------------------------------------------------------ notebooks
def _notebook(*sources):
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
              "source": src.splitlines(keepends=True)} for i, src in enumerate(sources, 1)]
    cells.insert(0, {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": ["# title"]})
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def test_notebook_cell_syntax_error_is_located_in_its_cell(tmp_path, validator):
    # cell 1 is markdown; the error is on row 2, column 5 of cell 3
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch", "x = 1\nif x\n    pass"))
    write(tmp_path, "good.py", DP)
    res = invoke(["fix", "--apply"], tmp_path)  # `fix` names the error on stderr, as before
    [line] = [ln for ln in res.stderr.splitlines() if "nb.ipynb" in ln]
    assert line.startswith("error: nb.ipynb: syntax error at cell 3:2:5: ")
    why = line[len("error: nb.ipynb: "):]
    where, row, col, code, message = diagnostic_of("nb.ipynb", why, "invalid-syntax")
    assert (where, row, col, code) == ("nb.ipynb:cell 3", 2, 5, "invalid-syntax") and message.startswith("SyntaxError: ")

    res = invoke(["check", TWO], tmp_path)
    assert res.exit_code == 1 and res.stderr == ""
    assert res.stdout.splitlines() == [  # by path: good.py first
        "good.py:4:9: GPU001 " + DP_MSG, f"nb.ipynb:cell 3:2:5: invalid-syntax: {message}",
        "Found 1 problem.", "1 file could not be checked.",
    ]
    assert diagnostics(res.stdout) == [("nb.ipynb:cell 3", 2, 5, "invalid-syntax", message)]

    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    [d] = [d for d in json.loads(res.stdout) if d["filename"].endswith("nb.ipynb")]
    assert (d["code"], d["cell"], d["location"], d["end_location"], d["message"]) == (
        "invalid-syntax", 3, {"row": 2, "column": 5}, {"row": 2, "column": 5}, message)

    res = invoke(["check", TWO, "--output-format", "sarif"], tmp_path)
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    [r] = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "invalid-syntax"]
    assert "region" not in r["locations"][0]["physicalLocation"]  # rows of a cell are not lines of the file
    assert r["message"]["text"] == f"cell 3:2:5: {message}"
    assert (r["properties"]["cell"], r["properties"]["cellLine"], r["properties"]["cellColumn"]) == (3, 2, 5)

    res = invoke(["check", TWO, "--output-format", "github"], tmp_path)
    [gh] = [ln for ln in res.stdout.splitlines() if "file=nb.ipynb" in ln]
    # (the annotation names the .ipynb line that holds the cell's row: this notebook is one line of JSON)
    assert (tmp_path / "nb.ipynb").read_text().count("\n") <= 1
    assert gh == (f"::error title=gpulint (invalid-syntax),file=nb.ipynb,line=1,endLine=1::"
                  f"nb.ipynb:cell 3:2:5: invalid-syntax: {message}")


def test_notebook_that_is_not_json(tmp_path):
    (tmp_path / "nb.ipynb").write_text('{"cells": [')
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 1 and res.stderr == ""
    [(path, row, col, code, message)] = diagnostics(res.stdout)
    assert (path, row, col, code) == ("nb.ipynb", 1, 1, "invalid-syntax")
    assert message.startswith("not a valid notebook: invalid JSON at line 1 column 12: ")


# ------------------------------------------------------------------ nothing to lint
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_empty_directory_warns_and_exits_0(tmp_path, fmt):
    (tmp_path / "empty").mkdir()
    write(tmp_path, "empty/notes.txt", "not python\n")
    res = invoke(["check", "--output-format", fmt, "empty"], tmp_path)
    assert res.exit_code == 0
    assert res.stderr.splitlines() == ["gpulint: warning: No Python files found under the given path(s)"]
    if fmt == "json":
        assert json.loads(res.stdout) == []
    else:
        assert diagnostics(res.stdout) == [] and findings(res.stdout) == []


def test_fix_on_an_empty_directory_warns_too(tmp_path):
    (tmp_path / "empty").mkdir()
    for args in (["fix", "empty"], ["fix", "--apply", "empty"]):
        res = invoke(args, tmp_path)
        assert res.exit_code == 0
        assert "gpulint: warning: No Python files found under the given path(s)" in res.stderr.splitlines()


def test_a_project_with_files_does_not_warn(tmp_path):
    write(tmp_path, "a.py", CLEAN)
    res = invoke(["check"], tmp_path)
    assert (res.exit_code, res.stdout, res.stderr) == (0, "All checks passed!\n", "")
    write(tmp_path, "bad.py", UNCLOSED)  # a file that failed was found: no warning either
    res = invoke(["check", "bad.py"], tmp_path)
    assert res.exit_code == 1 and res.stderr == ""


# ------------------------------------------------------------------ statistics
def test_statistics_lists_the_diagnostic_codes(tmp_path):
    args = _project(tmp_path)
    write(tmp_path, "more.py", DP)
    res = invoke(["check", TWO, "--statistics", *args, "more.py"], tmp_path)
    assert res.exit_code == 1
    rows = [ln.split("\t") for ln in res.stdout.splitlines() if "\t" in ln]
    assert [(n, code) for n, code, *_ in rows] == [("2", "GPU001"), ("1", "invalid-syntax"), ("1", "io-error")]
    assert rows[0][2] == "[ ] data-parallel"
    assert [r[2].strip() for r in rows[1:]] == ["[ ]", "[ ]"]  # no fix, no rule name
    assert not diagnostics(res.stdout) and not findings(res.stdout)  # counts instead of the list
    assert res.stdout.splitlines()[-2:] == ["Found 2 problems.", "2 files could not be checked."]


# ------------------------------------------------------------------ the cache
CACHE_ENV = {"GPULINT_CACHE_DIR": None}


def test_the_cache_never_makes_a_bad_file_look_clean(tmp_path):
    _project(tmp_path)
    runs = [invoke(["check", TWO], tmp_path, env=CACHE_ENV, cache=True) for _ in range(2)]
    assert list((tmp_path / ".gpulint_cache").glob("v*.json"))  # the cache is on, and was written
    for res in runs:
        assert res.exit_code == 1
        assert res.stdout.splitlines() == [_line(SYN), GOOD_LINE, "Found 1 problem.", "1 file could not be checked."]
        assert res.stderr == ""
    for fmt in ("json", "sarif"):  # a third and fourth run, from the cache, in machine formats
        res = invoke(["check", TWO, "--output-format", fmt], tmp_path, env=CACHE_ENV, cache=True)
        assert res.exit_code == 1 and res.stderr.splitlines() == [f"error: bad.py: {UNCLOSED_ERROR}"]
        doc = json.loads(res.stdout)
        got = [d["code"] for d in doc] if fmt == "json" else [r["ruleId"] for r in doc["runs"][0]["results"]]
        assert got == ["invalid-syntax", "GPU001"]


def test_a_cached_clean_file_that_breaks_or_goes_is_reported(tmp_path):
    write(tmp_path, "a.py", CLEAN)
    write(tmp_path, "b.py", CLEAN)
    res = invoke(["check", "a.py", "b.py"], tmp_path, env=CACHE_ENV, cache=True)
    assert (res.exit_code, res.stdout) == (0, "All checks passed!\n")
    # a.py now does not parse (a different size and mtime), b.py is gone
    st = os.stat(tmp_path / "a.py")
    write(tmp_path, "a.py", UNCLOSED)
    os.utime(tmp_path / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    (tmp_path / "b.py").unlink()
    for _ in range(2):
        res = invoke(["check", "a.py", "b.py"], tmp_path, env=CACHE_ENV, cache=True)
        assert res.exit_code == 1
        assert diagnostics(res.stdout) == [
            diagnostic_of("a.py", UNCLOSED_ERROR, "invalid-syntax"), ("b.py", 1, 1, "io-error", MISSING)]
        assert "All checks passed!" not in res.stdout
