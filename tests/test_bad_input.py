"""Bad input (issue 7): every kind of file that cannot be linted is a
diagnostic finding of its own in every output format (`invalid-syntax`,
`io-error`, `internal-error`: one line on stdout in the text formats, an
entry in JSON and SARIF, an annotation in `github`; with the machine formats
also one line on stderr naming the file and why), the other files of the run
are still linted, `check` exits as README.md documents (1 whenever a file
could not be checked, even when nothing else could be linted; 2 for a usage
or configuration error only), and the JSON and SARIF reports stay valid.

Then security: `check` and `fix` never import or run the code they lint nor
a plugin named by a config in the linted tree, and file names and contents
cannot inject terminal control sequences (text) or workflow commands
(`github`)."""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote

import pytest

from cli_helpers import (
    CLEAN, DIAG_RE, DP, LINE_RE, TWO, ZG, _syntax_error_of, diagnostic_of, diagnostics, findings, invoke, write,
)
from gpulint.engine import discovery
from gpulint.engine import lint as engine
from gpulint.engine import runner
from gpulint.engine.config import KNOWN_KEYS
from gpulint.frontends.reporters.text import printable
from gpulint.registry import all_rules
from test_reporters import assert_valid, validator  # noqa: F401  (the official SARIF schema)

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = f"(Python {sys.version_info[0]}.{sys.version_info[1]} grammar)"
GOOD = ("good.py", 4, 9, "GPU001")  # what DP in good.py gives with TWO


def _reported(stdout):
    """(path, row, col, code) of every finding and diagnostic line, in the order printed."""
    out = []
    for line in stdout.splitlines():
        m = LINE_RE.match(line) or DIAG_RE.match(line)
        if m:
            out.append((m["path"], int(m["row"]), int(m["col"]), m["code"]))
    return out


def _gh_data(s):
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s):
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


def check_all_formats(tmp_path, validator, bad, exit_code=1, args=(), good=(GOOD,)):
    """`gpulint check` in the text, concise, json, sarif and github formats.
    `bad`: the (path, why, code) of every file that could not be checked: each
    is a diagnostic `code` in every format (at the syntax error, or at 1:1 with
    `why` as its message), and `error: path: why` on stderr with the machine
    formats only; `good`: the findings of the files that were linted."""
    diags = sorted(diagnostic_of(p, why, code) for p, why, code in bad)
    expected_err = sorted(f"error: {p}: {why}" for p, why, _ in bad)
    # every finding and diagnostic, in the order of the report (by path, then position)
    everything = sorted(list(good) + [d[:4] for d in diags])
    for fmt in ("text", "concise", "json", "sarif", "github"):
        res = invoke(["check", TWO, "--output-format", fmt, *args], tmp_path)
        assert res.exit_code == exit_code, (fmt, res.stdout, res.stderr)
        if fmt in ("text", "concise"):
            assert res.stderr == "", fmt  # the report on stdout says it, once
            assert findings(res.stdout) == list(good), fmt
            assert diagnostics(res.stdout) == diags, fmt
            assert _reported(res.stdout) == everything, fmt
            lines = res.stdout.splitlines()
            n = len(good)
            assert (f"Found {n} problem{'s' if n != 1 else ''}." in lines) is bool(good), fmt  # diagnostics not counted
            if fmt == "text":
                assert ("All checks passed!" in lines) is (not good and not bad)
                k = len(bad)
                assert (f"{k} file{'s' if k != 1 else ''} could not be checked." in lines) is bool(bad)
            continue
        assert sorted(res.stderr.splitlines()) == expected_err, fmt
        if fmt == "json":
            doc = json.loads(res.stdout)
            got = [(printable(os.path.relpath(d["filename"], tmp_path)), d["location"]["row"], d["location"]["column"],
                    d["code"]) for d in doc]
            assert got == everything
            got_diags = [(printable(os.path.relpath(d["filename"], tmp_path)), d["location"]["row"],
                          d["location"]["column"], d["code"], d["message"])
                         for d in doc if d["code"] in ("invalid-syntax", "io-error", "internal-error")]
            assert got_diags == diags
            for d in doc:
                if d["code"].startswith("GPU"):
                    continue
                assert (d["cell"], d["fix"], d["noqa_row"], d["url"]) == (None, None, None, None)
                assert d["end_location"] == d["location"]
        elif fmt == "sarif":
            doc = json.loads(res.stdout)
            assert_valid(validator, doc)
            [run] = doc["runs"]

            def uri(r):
                return printable(unquote(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                                         errors="surrogateescape"))

            got = [(uri(r), r["locations"][0]["physicalLocation"]["region"]["startLine"],
                    r["locations"][0]["physicalLocation"]["region"]["startColumn"], r["ruleId"])
                   for r in run["results"]]
            assert got == [(p.replace(os.sep, "/"), row, col, code) for p, row, col, code in everything]
            got_diags = [(uri(r), r["ruleId"], r["level"], "ruleIndex" in r, r["message"]["text"])
                         for r in run["results"] if not r["ruleId"].startswith("GPU")]
            assert got_diags == [(p.replace(os.sep, "/"), code, "error", False, m) for p, _, _, code, m in diags]
            [inv] = run["invocations"]
            assert inv["executionSuccessful"] is (not bad)
            notes = sorted(n["message"]["text"] for n in inv["toolExecutionNotifications"])
            assert notes == sorted(f"{p}: {why}" for p, why, _ in bad)
        else:
            lines = res.stdout.splitlines()
            assert len(lines) == len(bad) + len(good)
            assert all(line.startswith("::error title=gpulint (") for line in lines)
            for p, row, col, code, message in diags:
                props = f"title=gpulint ({code}),file={_gh_prop(p)},line={row},col={col},endLine={row},endColumn={col}"
                assert f"::error {props}::{_gh_data(f'{p}:{row}:{col}: {code}: {message}')}" in lines
    return res


# ------------------------------------------------------------------ encodings and line endings
def test_invalid_utf8(tmp_path, validator):
    (tmp_path / "bad.py").write_bytes(b"import torch\nx = '\xff'\n")
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("bad.py", "cannot decode as utf-8: invalid start byte at line 2 (byte 18)", "io-error")])


@pytest.mark.parametrize(
    "data, why",
    [
        (b"# -*- coding: klingon -*-\nx = '\xff'\n", "unknown encoding in coding line: 'klingon', and the file is not UTF-8"),
        (b"# coding: ascii\nx = '\xc3\xa9'\n",
         "cannot decode as ascii: ordinal not in range(128) at line 2 (byte 21)"),
        # a codec that is not a text encoding was an internal error (LookupError) before
        (b"# coding: rot13\nx = 1\n", "coding line names 'rot13', which is not a text encoding"),
        (b"#!/usr/bin/env python\n# vim: set fileencoding=base64 :\nx = 1\n",
         "coding line names 'base64', which is not a text encoding"),
    ],
    ids=["unknown", "wrong-for-the-bytes", "rot13", "base64"],
)
def test_wrong_pep263_coding_line(tmp_path, validator, data, why):
    (tmp_path / "bad.py").write_bytes(data)
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("bad.py", why, "io-error")])


def test_unknown_codec_over_utf8_text_reads_it_as_utf8(tmp_path, validator):
    """A codec that a package installs to rewrite UTF-8 source for older
    Pythons (`# -*- coding: future_fstrings -*-`): the text is read as UTF-8."""
    (tmp_path / "fstr.py").write_bytes(b"# -*- coding: future_fstrings -*-\n" + DP.encode())
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [], good=[("fstr.py", 5, 9, "GPU001"), GOOD])


def test_coding_line_that_fits_the_bytes_is_used(tmp_path, validator):
    (tmp_path / "latin.py").write_bytes(b"# coding: latin-1\n" + DP.encode().replace(b"import torch", b"import torch  # \xe9t\xe9"))
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [], good=[("good.py", 4, 9, "GPU001"), ("latin.py", 5, 9, "GPU001")])


def test_utf8_bom(tmp_path, validator):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + DP.encode())
    write(tmp_path, "good.py", DP)
    # the BOM is not a character of the first line: positions as without it
    check_all_formats(tmp_path, validator, [], good=[("bom.py", 4, 9, "GPU001"), GOOD])


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_crlf_and_lone_cr_line_endings(tmp_path, validator, newline):
    (tmp_path / "ends.py").write_bytes(DP.replace("\n", newline).encode())
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [], good=[("ends.py", 4, 9, "GPU001"), GOOD])


def test_nul_bytes(tmp_path, validator):
    (tmp_path / "nul.py").write_bytes(b"import torch\nx = 1\x00\n")
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("nul.py", "source contains NUL bytes", "io-error")])


# ------------------------------------------------------------------ syntax
def test_python2_syntax(tmp_path, validator):
    src = "import torch\nprint 'loss', loss\n"
    why = _syntax_error_of(src)
    assert why.startswith("syntax error at 2:1: ") and why.endswith(GRAMMAR)
    write(tmp_path, "py2.py", src)
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("py2.py", why, "invalid-syntax")])


# one construct per Python release that introduced it. gpulint rewrites those up to 3.13 for an
# older Python (gpulint/lowering/, tests/test_new_syntax.py); the test uses the first newer one it cannot
NEWER_SYNTAX = [
    ((3, 10), "match command:\n    case 'go':\n        pass\n"),
    ((3, 11), "try:\n    pass\nexcept* ValueError:\n    pass\n"),
    ((3, 12), "type Vector = list[float]\n"),
    ((3, 13), "def first[T = int](xs: list[T]) -> T:\n    return xs[0]\n"),
    ((3, 14), "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n"),
]


REWRITTEN_UP_TO = (3, 13)


def test_syntax_of_a_newer_python(tmp_path, validator):
    from gpulint.engine.lint import parse

    for version, src in NEWER_SYNTAX:
        if version <= REWRITTEN_UP_TO:
            parse(src, "x.py")  # linted on every Python
    newer = [(v, src) for v, src in NEWER_SYNTAX if v > max(sys.version_info[:2], REWRITTEN_UP_TO)]
    if not newer:  # pragma: no cover
        pytest.fail(f"add a construct of the Python after {sys.version_info[:2]} to NEWER_SYNTAX")
    version, src = newer[0]
    why = _syntax_error_of(src)
    # the message says which grammar was used: the hint that the code is for a newer Python
    assert why.startswith("syntax error at ") and why.endswith(GRAMMAR)
    write(tmp_path, "new.py", src)
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("new.py", why, "invalid-syntax")])


def test_empty_file(tmp_path, validator):
    (tmp_path / "empty.py").write_bytes(b"")
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [])
    res = invoke(["check", "empty.py"], tmp_path)
    assert (res.exit_code, res.stdout, res.stderr) == (0, "All checks passed!\n", "")


def test_20_mb_generated_file(tmp_path, validator):
    # the shape of a generated module: a serialized descriptor and a data table
    rnd = random.Random(0)
    blob = "".join("\\x%02x" % rnd.randrange(256) for _ in range(5 * 1024 * 1024))
    rows = ",\n".join(f"    ({i}, 'tok{i}', {i}.5)" for i in range(30000))
    src = (f"# Generated by the protocol buffer compiler.  DO NOT EDIT!\n{DP}\n"
           f"DESCRIPTOR = b'{blob}'\n\nTABLE = [\n{rows}\n]\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n")
    (tmp_path / "gen_pb2.py").write_text(src)
    assert (tmp_path / "gen_pb2.py").stat().st_size >= 20 * 1024 * 1024
    last = src.count("\n")
    write(tmp_path, "good.py", DP)
    res = invoke(["check", TWO, "--output-format", "json"], tmp_path)
    assert res.exit_code == 1 and res.stderr == ""
    got = [(os.path.basename(d["filename"]), d["location"]["row"]) for d in json.loads(res.stdout)]
    assert got == [("gen_pb2.py", 5), ("gen_pb2.py", last), ("good.py", 4)]


@pytest.mark.parametrize(
    "expr, why",
    [
        ("(" * 5000 + "1" + ")" * 5000, "syntax error at 1:205: too many nested parentheses " + GRAMMAR),
        ("-" * 100000 + "1", "expression is nested too deeply to parse"),
        ("+".join(["a"] * 200000), "expression is nested too deeply to parse"),
        ("torch.zeros(1)" + ".cuda()" * 20000, "expression is nested too deeply to parse"),
        ("lambda: " * 20000 + "0", "expression is nested too deeply to parse"),
    ],
    ids=["parentheses", "unary", "binary-chain", "attribute-chain", "lambdas"],
)
def test_expression_nested_thousands_deep(tmp_path, validator, expr, why):
    write(tmp_path, "deep.py", f"x = {expr}\n")
    write(tmp_path, "good.py", DP)
    if why.startswith("syntax error"):
        why = _syntax_error_of(f"x = {expr}\n")  # the parser's wording differs between Pythons
    # the parser gives up: the file is reported as one that does not parse
    check_all_formats(tmp_path, validator, [("deep.py", why, "invalid-syntax")])


def test_deep_but_parseable_expression_is_linted_and_fixed(tmp_path):
    # as deep as the parser goes on every supported Python: the rules and the fix (LibCST) must cope
    deep = "\nx = torch.zeros(1)" + ".cuda()" * 700 + "\ny = -" + "-" * 900 + "1\n"
    write(tmp_path, "deep.py", ZG + deep)  # GPU302's unsafe fix makes LibCST parse the whole file
    write(tmp_path, "good.py", DP)
    res = invoke(["check", "--select", "ALL"], tmp_path)
    assert res.stderr == "" and res.exit_code == 1
    assert ("deep.py", 4, 5, "GPU302") in findings(res.stdout)
    res = invoke(["fix", "--apply", "--unsafe-fixes", "--select", "ALL"], tmp_path)
    assert "error" not in res.stderr, res.stderr
    fixed = (tmp_path / "deep.py").read_text()
    assert fixed == ZG.replace("set_to_none=False", "set_to_none=True") + deep
    compile(fixed, "deep.py", "exec")


# ------------------------------------------------------------------ the file system
def test_directory_named_like_a_python_file(tmp_path, validator):
    write(tmp_path, "x.py/inner.py", DP)
    write(tmp_path, "good.py", DP)
    inner = (os.path.join("x.py", "inner.py"), 4, 9, "GPU001")
    check_all_formats(tmp_path, validator, [], good=[GOOD, inner])
    res = invoke(["check", TWO, "x.py"], tmp_path)  # named: walked as the directory it is
    assert res.exit_code == 1 and res.stderr == "" and findings(res.stdout) == [inner]


def _deny(monkeypatch, path):
    """Make `path` unreadable. chmod 000 is enough unless we run as root (as
    in containers), where the read is refused the way the kernel would."""
    os.chmod(path, 0)
    if os.geteuid() != 0:
        return
    real_open = open

    def guarded_open(file, *a, **kw):
        if os.path.abspath(file) == os.path.abspath(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(engine, "open", guarded_open, raising=False)


def test_unreadable_file(tmp_path, validator, monkeypatch):
    write(tmp_path, "secret.py", DP)
    write(tmp_path, "good.py", DP)
    _deny(monkeypatch, tmp_path / "secret.py")
    try:
        check_all_formats(tmp_path, validator, [("secret.py", "cannot read: Permission denied", "io-error")])
    finally:
        os.chmod(tmp_path / "secret.py", 0o644)


def test_unreadable_directory(tmp_path, validator, monkeypatch):
    write(tmp_path, "locked/a.py", DP)
    write(tmp_path, "good.py", DP)
    os.chmod(tmp_path / "locked", 0)
    if os.geteuid() == 0:
        real_scandir = os.scandir

        def guarded_scandir(p="."):
            if os.path.realpath(p) == os.path.realpath(tmp_path / "locked"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), p)
            return real_scandir(p)

        monkeypatch.setattr(discovery.os, "scandir", guarded_scandir)
    try:
        check_all_formats(tmp_path, validator, [("locked", "cannot list directory: Permission denied", "io-error")])
    finally:
        os.chmod(tmp_path / "locked", 0o755)


def test_broken_symlink_found_while_walking(tmp_path, validator):
    os.symlink(tmp_path / "gone.py", tmp_path / "link.py")
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("link.py", "broken symbolic link", "io-error")])


def test_symlink_loops(tmp_path, validator):
    os.symlink("b.py", tmp_path / "a.py")
    os.symlink("a.py", tmp_path / "b.py")
    write(tmp_path, "pkg/good.py", DP)
    os.symlink("..", tmp_path / "pkg" / "up")  # a directory loop: walked once, no error
    good = [(os.path.join("pkg", "good.py"), 4, 9, "GPU001")]
    check_all_formats(tmp_path, validator, [("a.py", "symbolic link loop", "io-error"),
                                            ("b.py", "symbolic link loop", "io-error")], good=good)
    res = invoke(["check", TWO, "a.py", os.path.join("pkg", "good.py")], tmp_path)
    assert res.exit_code == 1 and res.stderr == ""
    assert diagnostics(res.stdout) == [("a.py", 1, 1, "io-error", "symbolic link loop")]
    assert findings(res.stdout) == good


def test_file_deleted_while_the_run_is_going(tmp_path, validator, monkeypatch):
    real_discover = runner.discover

    def discover_then_delete(*a, **kw):
        yield from real_discover(*a, **kw)
        if (tmp_path / "doomed.py").exists():  # found, then gone before it is read
            (tmp_path / "doomed.py").unlink()

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    write(tmp_path, "good.py", DP)
    # one format at a time, the file written again before each run
    for fmt in ("text", "json", "sarif", "github"):
        write(tmp_path, "doomed.py", DP)
        res = invoke(["check", TWO, "--output-format", fmt], tmp_path)
        assert res.exit_code == 1
        why = "no such file (removed during the run?)"
        if fmt == "text":
            assert res.stderr == ""
            assert diagnostics(res.stdout) == [("doomed.py", 1, 1, "io-error", why)]
            assert findings(res.stdout) == [GOOD]
            continue
        assert res.stderr.splitlines() == [f"error: doomed.py: {why}"]
        if fmt in ("json", "sarif"):
            doc = json.loads(res.stdout)
            if fmt == "sarif":
                assert_valid(validator, doc)
                got = [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["message"]["text"])
                       for r in doc["runs"][0]["results"]]
                assert got == [("io-error", "doomed.py", why), ("GPU001", "good.py", all_rules()["GPU001"].message)]
            else:
                got = [(os.path.basename(d["filename"]), d["code"], d["message"]) for d in doc]
                assert got == [("doomed.py", "io-error", why), ("good.py", "GPU001", all_rules()["GPU001"].message)]
        else:
            assert res.stdout.splitlines()[0] == (
                "::error title=gpulint (io-error),file=doomed.py,line=1,col=1,endLine=1,endColumn=1"
                f"::doomed.py:1:1: io-error: {why}")


def test_path_that_does_not_exist(tmp_path, validator):
    write(tmp_path, "good.py", DP)
    check_all_formats(tmp_path, validator, [("missing.py", "no such file or directory", "io-error")],
                      args=["missing.py", "good.py"])
    res = invoke(["check", TWO, "--output-format", "sarif", "missing.py"], tmp_path)
    assert res.exit_code == 1  # nothing could be linted: a file that could not be checked, not a usage error
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    [result] = doc["runs"][0]["results"]
    assert (result["ruleId"], result["level"], result["message"]["text"]) == ("io-error", "error", "no such file or directory")
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is False


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_a_python_file_is_not_read(tmp_path):
    # reading a FIFO blocks until a writer comes: the run would hang
    os.mkfifo(tmp_path / "pipe.py")
    write(tmp_path, "good.py", DP)
    res = _gpulint(["check", TWO], tmp_path)  # a hang is a TimeoutExpired
    assert res.returncode == 1
    assert res.stderr == ""
    assert diagnostics(res.stdout) == [("pipe.py", 1, 1, "io-error", "not a regular file")]
    assert findings(res.stdout) == [GOOD]


@pytest.mark.skipif(sys.platform != "linux", reason="other file systems refuse names that are not UTF-8")
def test_file_name_that_is_not_utf8(tmp_path, validator):
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_text("x = (\n")
    write(tmp_path, "good.py", DP)
    # was an internal error (UnicodeEncodeError) in SARIF; the text shows the raw byte escaped
    check_all_formats(tmp_path, validator, [("caf\\xe9.py", _syntax_error_of("x = (\n"), "invalid-syntax")])
    res = invoke(["check", TWO, "--output-format", "sarif"], tmp_path)
    [run] = json.loads(res.stdout)["runs"]
    [note] = run["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "caf%E9.py"
    [result] = [r for r in run["results"] if r["ruleId"] == "invalid-syntax"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "caf%E9.py"


# ------------------------------------------------------------------ configuration and options
@pytest.mark.parametrize(
    "name, text, why",
    [
        ("pyproject.toml", "[tool.gpulint\nselect = 1\n", "invalid TOML"),
        ("pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"\n', "invalid TOML"),
        ("gpulint.toml", "colour = true\n", "unknown key 'colour'"),
        ("gpulint.toml", 'select = ["GPU999"]\n', "'select': unknown rule code or prefix 'GPU999'"),
        ("pyproject.toml", '[tool.gpulint.per-file-ignores]\n"a.py" = ["GPU7"]\n', "unknown rule code or prefix 'GPU7'"),
        # these were internal errors (AttributeError) before
        ("gpulint.toml", "[tool]\ngpulint = 3\n", "[tool.gpulint] must be a table"),
        ("gpulint.toml", "tool = 1\n", "unknown key 'tool'"),
    ],
    ids=["invalid-toml-header", "invalid-toml-value", "unknown-key", "unknown-code", "unknown-code-per-file",
         "tool-gpulint-not-a-table", "tool-not-a-table"],
)
def test_bad_config(tmp_path, name, text, why):
    write(tmp_path, name, text)
    write(tmp_path, "good.py", DP)
    for fmt in ("text", "json", "sarif", "github"):
        res = invoke(["check", "--output-format", fmt], tmp_path)
        assert res.exit_code == 2
        [line] = res.stderr.splitlines()
        assert line.startswith(f"gpulint: error: {tmp_path / name}: ") and why in line, line
        assert res.stdout == ""  # no report at all rather than a half one


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_on_the_command_line(tmp_path, option):
    write(tmp_path, "good.py", DP)
    for fmt in ("text", "json", "sarif"):
        res = invoke(["check", "--output-format", fmt, option, "GPU001,GPU999"], tmp_path)
        assert res.exit_code == 2
        assert f"Error: {option}: unknown rule code or prefix 'GPU999' (see `gpulint rules`)" in res.stderr.splitlines()
        assert res.stdout == ""


def test_many_bad_files_at_once_in_parallel(tmp_path, validator):
    # every kind together, over the worker pool: the reports stay valid and every good file is linted
    bad = {
        "enc.py": (b"x = '\xff'\n", "cannot decode as utf-8: invalid start byte at line 1 (byte 5)", "io-error"),
        "nul.py": (b"\x00", "source contains NUL bytes", "io-error"),
        "syn.py": (b"x = (\n", _syntax_error_of("x = (\n"), "invalid-syntax"),
        "deep.py": (b"x = " + b"-" * 100000 + b"1\n", "expression is nested too deeply to parse", "invalid-syntax"),
        "cod.py": (b"# coding: zlib\n", "coding line names 'zlib', which is not a text encoding", "io-error"),
    }
    for name, (data, _, _) in bad.items():
        (tmp_path / name).write_bytes(data)
    good = []
    for i in range(30):
        write(tmp_path, f"ok{i:02d}.py", DP)
        good.append((f"ok{i:02d}.py", 4, 9, "GPU001"))
    check_all_formats(tmp_path, validator, [(n, why, code) for n, (_, why, code) in bad.items()], args=["-j", "2"],
                      good=good)


# ------------------------------------------------------------------ security: nothing in the linted tree runs
MARKER_CODE = """\
import os as _os
open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "RAN-" + __name__.replace(".", "-")), "w").close()
"""


def _booby_trapped_tree(root: Path) -> None:
    """A project whose every module, if imported or run, leaves a RAN-* file."""
    train = textwrap.dedent(all_rules()["GPU302"].examples[0].bad)
    for name in ("train.py", "__init__.py", "conftest.py", "setup.py", "sitecustomize.py", "torch.py",
                 "click.py", "libcst.py", "pathspec.py", "evil_plugin.py", "pkg/__init__.py", "pkg/__main__.py"):
        body = train if name == "train.py" else ""
        write(root, name, MARKER_CODE + body)
    # what `eval` of an annotation or a default would run
    write(root, "annotated.py", MARKER_CODE + 'x: "open(\'RAN-eval\', \'w\')" = 1\ny = __import__("os").system("touch RAN-system")\n')


def _gpulint(args, cwd):
    """gpulint as its console script runs it: the linted tree is not on sys.path."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPULINT_NO_CACHE="1")
    code = "import sys; sys.path.pop(0); from gpulint.frontends.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_check_and_fix_never_import_or_run_the_linted_code(tmp_path):
    _booby_trapped_tree(tmp_path)
    before = (tmp_path / "train.py").read_text()
    for args in (["check", "--select", "ALL"], ["check", "--select", "ALL", "--output-format", "sarif"],
                 ["check", "--select", "ALL", "-j", "2", "--no-cache"], ["check", "--diff", "--unsafe-fixes"],
                 ["fix", "--unsafe-fixes", "--select", "ALL"], ["fix", "--apply", "--unsafe-fixes", "--select", "ALL"]):
        res = _gpulint(args, tmp_path)
        assert "Traceback" not in res.stderr and res.returncode in (0, 1), (args, res.stderr)
        assert sorted(p.name for p in tmp_path.rglob("RAN-*")) == [], args
    # and the run was not vacuous: it linted and fixed train.py, and a marker does appear when the code runs
    assert (tmp_path / "train.py").read_text() != before
    subprocess.run([sys.executable, "-c", "import conftest"], cwd=tmp_path, check=True)
    assert (tmp_path / "RAN-conftest").exists()


def test_config_known_keys_load_nothing():
    # no key names code to load; adding one (plugins, rule paths) needs this test and a security review
    assert set(KNOWN_KEYS) == {
        "select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "torch-version",
        "output-format", "fixable", "unfixable", "extend-safe-fixes", "extend-unsafe-fixes",
        "include", "extend-include",  # file globs for discovery, like exclude
        "preview",  # a boolean: which built-in rules run
        "extend",  # another config file, read as TOML data (never run); a cycle is an error
        "extend-per-file-ignores",  # codes, like per-file-ignores
    }


@pytest.mark.parametrize("key", ["plugins", "extend-plugins", "load-plugins", "rules-path", "extensions"])
def test_config_naming_a_plugin_is_an_error_not_an_import(tmp_path, key):
    _booby_trapped_tree(tmp_path)
    write(tmp_path, "pyproject.toml", f'[tool.gpulint]\n{key} = ["evil_plugin"]\n')
    for args in (["check"], ["fix", "--apply"]):
        res = _gpulint(args, tmp_path)
        assert res.returncode == 2
        [line] = res.stderr.splitlines()
        assert line.startswith(f"gpulint: error: {tmp_path / 'pyproject.toml'}: [tool.gpulint] unknown key '{key}'")
        assert list(tmp_path.rglob("RAN-*")) == []


# ------------------------------------------------------------------ security: output injection
ESC_NAME = "e\x1b[2Jvil\r.py"  # clears the screen, then overwrites the line


def _flagged_with(expr_suffix: str) -> str:
    """GPU101's example with the synced expression carrying `expr_suffix` (its message quotes the expression)."""
    bad = textwrap.dedent(all_rules()["GPU101"].examples[0].bad)
    assert "loss.item()" in bad
    return bad.replace("loss.item()", f'loss["{expr_suffix}"].item()')


def test_text_output_escapes_control_characters_from_names_and_contents(tmp_path):
    write(tmp_path, ESC_NAME, _flagged_with("\x1b[2J\x1b]0;pwned\x07\x9b31m"))
    write(tmp_path, "b\x1b[31mad\n.py", "x = (\n")
    for args in (["check", "--select", "GPU101"], ["check", "--select", "GPU101", "--output-format", "concise"],
                 ["fix", "--apply", "--select", "GPU101"]):
        res = invoke(args, tmp_path)
        out = res.stdout + res.stderr
        assert res.exit_code == 1
        for ch in "\x1b\x07\x9b\r":
            assert ch not in out, (args, out)
        assert "e\\x1b[2Jvil\\x0d.py:" in res.stdout
        assert '`loss["\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m"].item()`' in res.stdout
        if args[0] == "check":  # the file that does not parse is a diagnostic line of the report
            assert res.stderr == ""
            [(path, _, _, code, _)] = diagnostics(res.stdout)
            assert (path, code) == ("b\\x1b[31mad\\x0a.py", "invalid-syntax")  # still one line
        else:  # `fix` says it on stderr
            assert "error: b\\x1b[31mad\\x0a.py: syntax error" in res.stderr
            assert len([ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]) == 1  # still one line
    # colour is still ours to add
    res = invoke(["check", "--select", "GPU101"], tmp_path, env={"FORCE_COLOR": "1"})
    assert "\x1b[1m" in res.stdout and "\x1b[2J" not in res.stdout


def test_config_error_message_is_escaped(tmp_path):
    write(tmp_path, "d\x1b[2J/gpulint.toml", '"sel\\u001b[31mect" = 1\n')  # a TOML key holding ESC
    write(tmp_path, "d\x1b[2J/a.py", CLEAN)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 2
    assert "\x1b" not in res.stderr and "d\\x1b[2J" in res.stderr and "sel\\x1b[31mect" in res.stderr


def _unescape_data(s):
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_prop(s):
    return _unescape_data(s.replace("%3A", ":").replace("%2C", ","))


def test_github_format_cannot_inject_workflow_commands(tmp_path):
    # a name and a message carrying `::`, `%`, `,`, CR and LF: what a new command would need
    name = "a::b%0A,c\r\n::warning file=x::gotcha.py"
    write(tmp_path, name, _flagged_with("%0A::set-output name=x::1\\n"))
    write(tmp_path, "x%2Cy::z.py", "x = (\n")
    res = invoke(["check", "--select", "GPU101", "--output-format", "github"], tmp_path)
    assert res.exit_code == 1
    lines = res.stdout.split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    assert len(lines) == 2 and "\r" not in res.stdout  # one annotation per finding or diagnostic, nothing else
    parsed = []
    for line in lines:
        assert line.startswith("::error ")
        props, data = line[len("::error "):].split("::", 1)  # the first `::` ends the properties
        kv = dict(p.split("=", 1) for p in props.split(","))  # `,` and `=`-free values: nothing smuggled in
        parsed.append(({k: _unescape_prop(v) for k, v in kv.items()}, _unescape_data(data)))
    (f_props, f_data), (err_props, err_data) = parsed  # by path: "a::b..." before "x%2Cy..."
    where, row, col, code, message = diagnostic_of("x%2Cy::z.py", _syntax_error_of("x = (" + chr(10)), "invalid-syntax")
    assert err_props == {"title": "gpulint (invalid-syntax)", "file": "x%2Cy::z.py", "line": str(row), "col": str(col),
                         "endLine": str(row), "endColumn": str(col)}
    assert err_data == f"x%2Cy::z.py:{row}:{col}: invalid-syntax: {message}"
    assert f_props["file"] == name and f_props["title"] == "gpulint (GPU101)"
    assert f_data.startswith(f"{name}:") and '`loss["%0A::set-output name=x::1\\n"].item()`' in f_data


def test_readme_says_verify_runs_the_users_script():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Measuring what a fix buys", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split())
    assert "`gpulint verify` runs your script" in flat
    assert "`gpulint bench` runs only gpulint's own workloads" in flat
