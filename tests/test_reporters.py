"""Output formats: SARIF validated against the official SARIF 2.1.0 schema
(tests/data/sarif-schema-2.1.0.json, the OASIS errata01 schema from
oasis-tcs/sarif-spec Schemata/), plus the text / JSON / github reporters on
hand-made findings (safe fixes, escaping)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import jsonschema
import pytest

from cli_helpers import CLEAN, DP, TWO, UNCLOSED_ERROR, UNCLOSED_LINE, ZG, diagnostics, invoke, write
from gpulint import __version__
from gpulint.frontends.reporters import ReportContext, get_reporter
from gpulint.frontends.reporters import sarif
from gpulint.rule import SAFE, UNSAFE, Edit, Finding, Fix, file_diagnostic
from gpulint.registry import all_rules

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    # the official schema, not a stand-in
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert len(schema["definitions"]) == 52
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft4Validator
    cls.check_schema(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def assert_valid(validator, doc):
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def _absolute_uri(uri):
    u = urlparse(uri)
    assert u.scheme and (u.netloc or u.path), uri
    assert " " not in uri


def test_validator_is_not_vacuous(validator):
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "gpulint"}}, "results": []}]}
    assert_valid(validator, good)
    for mutate in (
        lambda d: d.pop("version"),
        lambda d: d["runs"][0]["tool"]["driver"].pop("name"),
        lambda d: d["runs"][0]["results"].append({"ruleId": "GPU001"}),  # no message
        lambda d: d["runs"][0].update(columnKind="bytes"),
        lambda d: d["runs"][0]["results"].append(
            {"message": {"text": "x"}, "locations": [{"physicalLocation": {"region": {"startLine": 0}}}]}
        ),
    ):
        bad = copy.deepcopy(good)
        mutate(bad)
        assert list(validator.iter_errors(bad)), bad


def test_sarif_from_the_cli_is_valid_and_complete(tmp_path, validator):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "sub dir/b.py", ZG)
    write(tmp_path, "bad.py", "x = (\n")
    res = invoke(["check", TWO, "--output-format", "sarif"], tmp_path)
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [f"error: bad.py: {UNCLOSED_ERROR}"]
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    assert doc["version"] == "2.1.0"
    [run] = doc["runs"]

    driver = run["tool"]["driver"]
    assert driver["name"] == "gpulint" and driver["version"] == __version__
    _absolute_uri(driver["informationUri"])
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(all_rules())  # every rule, selected or not
    for r, cls in zip(rules, all_rules().values()):
        assert r["name"] == cls.name
        assert r["shortDescription"]["text"] == cls.message
        assert r["fullDescription"]["text"] == cls.doc_sections()["What it does"]
        assert "## Why is this bad?" in r["help"]["markdown"] and "## Fix safety" in r["help"]["markdown"]
        _absolute_uri(r["helpUri"])
        assert r["defaultConfiguration"] == {"enabled": cls.default and not cls.preview, "level": "warning"}
        assert r["properties"]["status"] == ("preview" if cls.preview else "stable")

    assert run["columnKind"] == "unicodeCodePoints"
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.endswith("/") and Path(unquote(urlparse(base).path)).resolve() == tmp_path.resolve()

    results = run["results"]
    # by path: a.py, bad.py, "sub dir/b.py"; the file that does not parse is a result of its own
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("GPU001", "warning"), ("invalid-syntax", "error"), ("GPU302", "warning")]
    dp, syn, zg = results
    for r in (dp, zg):
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"] == all_rules()[r["ruleId"]].message
    [(_, row, col, _, message)] = diagnostics(UNCLOSED_LINE)
    assert syn == {  # no rule in the driver has its id: no ruleIndex, no fixes
        "ruleId": "invalid-syntax",
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "bad.py", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": row, "startColumn": col, "endLine": row, "endColumn": col},
        }}],
    }
    assert "invalid-syntax" not in [r["id"] for r in rules]
    loc = dp["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "a.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 4, "startColumn": 9, "endLine": 4, "endColumn": 41}
    assert "fixes" not in dp

    zloc = zg["locations"][0]["physicalLocation"]
    assert zloc["artifactLocation"] == {"uri": "sub%20dir/b.py", "uriBaseId": "%SRCROOT%"}
    assert zloc["region"] == {"startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 37}
    [fix] = zg["fixes"]
    assert fix["description"]["text"] == "Set `set_to_none=True`"
    assert fix["properties"]["applicability"] == "unsafe"
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"] == zloc["artifactLocation"]
    [rep] = change["replacements"]
    assert rep == {
        "deletedRegion": {"startLine": 4, "startColumn": 31, "endLine": 4, "endColumn": 36},
        "insertedContent": {"text": "True"},
    }
    # applying the replacement gives the fixed line
    line = (tmp_path / "sub dir" / "b.py").read_text().splitlines()[3]
    r = rep["deletedRegion"]
    fixed = line[: r["startColumn"] - 1] + rep["insertedContent"]["text"] + line[r["endColumn"] - 1 :]
    assert fixed == "    opt.zero_grad(set_to_none=True)"

    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"] == f"bad.py: {UNCLOSED_ERROR}"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}


def test_sarif_clean_run(tmp_path, validator):
    write(tmp_path, "a.py", CLEAN)
    res = invoke(["check", "--output-format", "sarif"], tmp_path)
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    [run] = doc["runs"]
    assert run["results"] == []
    assert run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_sarif_when_nothing_could_be_linted(tmp_path, validator):
    res = invoke(["check", "--output-format", "sarif", "missing.py"], tmp_path)
    assert res.exit_code == 1  # a file that could not be checked; 2 is for usage errors
    assert res.stderr.splitlines() == ["error: missing.py: no such file or directory"]
    doc = json.loads(res.stdout)
    assert_valid(validator, doc)
    [run] = doc["runs"]
    [result] = run["results"]
    assert result == {
        "ruleId": "io-error",
        "level": "error",
        "message": {"text": "no such file or directory"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "missing.py", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1},
        }}],
    }
    [inv] = run["invocations"]
    assert inv["executionSuccessful"] is False
    [note] = inv["toolExecutionNotifications"]
    assert note["message"]["text"] == "missing.py: no such file or directory"


def test_sarif_file_outside_the_current_directory_is_a_file_uri(tmp_path, validator):
    write(tmp_path, "outside/a.py", DP)
    (tmp_path / "here").mkdir()
    res = invoke(["check", TWO, "--output-format", "sarif", "-o", "out.sarif", "../outside/a.py"], tmp_path / "here")
    assert res.exit_code == 1 and res.stdout == ""
    doc = json.loads((tmp_path / "here" / "out.sarif").read_text())
    assert_valid(validator, doc)
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert "uriBaseId" not in art
    assert art["uri"].startswith("file:///")
    assert Path(unquote(urlparse(art["uri"]).path)) == (tmp_path / "outside" / "a.py").absolute()


def test_sarif_safe_fix_with_insertion_and_non_ascii(tmp_path, validator):
    f = Finding(
        "GPU001", "data-parallel", "mess\u00e4ge", str(tmp_path / "\u00fcber.py"), 2, 3, 2, 10, 2,
        Fix("Insert it", (Edit(5, 5, "x=1, ", (2, 7), (2, 7)), Edit(9, 12, "", (3, 1), (3, 4))), SAFE),
    )
    doc = sarif.build([f], [], root=str(tmp_path))
    assert_valid(validator, doc)
    [res] = doc["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "%C3%BCber.py"
    reps = res["fixes"][0]["artifactChanges"][0]["replacements"]
    assert reps[0]["deletedRegion"] == {"startLine": 2, "startColumn": 7, "endLine": 2, "endColumn": 7}
    assert reps[1]["insertedContent"] == {"text": ""}
    assert res["fixes"][0]["properties"]["applicability"] == "safe"


# ------------------------------------------------------------------ text / json / github on hand-made findings
def _finding(fix_safety=SAFE, path="pkg/train.py", message="bad thing"):
    fix = Fix("Do the thing", (Edit(0, 5, "new", (1, 1), (1, 6)),), fix_safety) if fix_safety else None
    return Finding("GPU302", "zero-grad-not-set-to-none", message, path, 1, 1, 1, 6, 1, fix)


def test_text_marks_safe_fixes():
    out = get_reporter("text")([_finding(SAFE), _finding(UNSAFE), _finding(None)], [], ReportContext())
    lines = out.splitlines()
    assert lines[0] == "pkg/train.py:1:1: GPU302 [*] bad thing"
    assert lines[1] == "pkg/train.py:1:1: GPU302 bad thing"
    assert lines[3] == "Found 3 problems (1 fixable with `gpulint fix --apply`)."
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in lines[4]


def test_text_colour_only_when_asked():
    plain = get_reporter("text")([_finding()], [], ReportContext(color=False))
    coloured = get_reporter("text")([_finding()], [], ReportContext(color=True))
    assert "\x1b[" not in plain and "\x1b[" in coloured
    import click

    assert click.unstyle(coloured) == plain


def test_json_fix_shape():
    [d] = json.loads(get_reporter("json")([_finding(SAFE)], [], ReportContext()))
    assert d["fix"] == {
        "applicability": "safe",
        "edits": [{"content": "new", "end_location": {"column": 6, "row": 1}, "location": {"column": 1, "row": 1}}],
        "message": "Do the thing",
    }
    assert d["filename"] == os.path.abspath("pkg/train.py")


def test_github_escaping():
    f = _finding(None, path="we,ird:name.py", message="100% bad\nreally")
    # a file that could not be checked is a diagnostic finding; `errors` adds no annotation of its own
    diag = file_diagnostic("x,y.py", "50% broken\r\nreally", "io-error")
    out = get_reporter("github")([diag, f], [("x,y.py", "50% broken\r\nreally")], ReportContext())
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0] == (
        "::error title=gpulint (io-error),file=x%2Cy.py,line=1,col=1,endLine=1,endColumn=1"
        "::x,y.py:1:1: io-error: 50%25 broken%0D%0Areally"
    )
    assert lines[1] == (
        "::error title=gpulint (GPU302),file=we%2Cird%3Aname.py,line=1,col=1,endLine=1,endColumn=6"
        "::we,ird:name.py:1:1: GPU302 100%25 bad%0Areally"
    )


def test_every_reporter_handles_nothing():
    for name in ("text", "concise", "json", "sarif", "github"):
        out = get_reporter(name)([], [], ReportContext())
        assert isinstance(out, str)
    with pytest.raises(KeyError):
        get_reporter("xml")
