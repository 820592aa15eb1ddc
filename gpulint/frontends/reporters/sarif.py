"""SARIF 2.1.0 (checked against the official OASIS schema in the tests).

One run: the driver lists every rule (id, name, descriptions, help from the
rule's documentation, helpUri, default configuration); each finding is a
result with its rule index, location and, when it has one, its fix as
artifact changes. Files that could not be read or parsed become
results of their own (`invalid-syntax`, `io-error`, `internal-error`, at
level error, with no rule in the driver) and also toolExecutionNotifications
of the invocation, which is then not successful: code scanning shows them,
and the log stays valid and complete when some files fail.

A finding in a notebook is located at the `.ipynb` file without a region
(its rows are rows of a cell, not lines of the file): its message starts
with `cell N:row:col:` and its properties carry the cell, row and column.

Paths under the current directory are relative URIs against the
`%SRCROOT%` base (what GitHub code scanning expects); others are absolute
`file://` URIs. Columns are Unicode code points (`columnKind`), 1-based,
and an end column is the column just past the region, as in SARIF.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple
from urllib.parse import quote

from gpulint import __version__
from gpulint.frontends.reporters.text import printable
from gpulint.rule import DOCS_URL, Finding
from gpulint.registry import all_rules

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/gpulint/gpulint"
SRCROOT = "%SRCROOT%"
LEVEL = "warning"  # every rule flags wasted GPU time or memory, not a crash


def _artifact_location(path: str, root: str) -> dict:
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, root) if _under(absolute, root) else None
    if rel is not None:
        # percent-encode the name's bytes: a name that is not valid UTF-8 still makes a valid URI
        return {"uri": quote(os.fsencode(Path(rel).as_posix()), safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives on Windows
        return False


def _region(row: int, col: int, end_row: int, end_col: int) -> dict:
    return {
        "startLine": max(1, row),
        "startColumn": max(1, col),
        "endLine": max(1, end_row),
        "endColumn": max(1, end_col),
    }


def _descriptor(cls) -> dict:
    from gpulint.frontends.docs import render_markdown

    sections = cls.doc_sections()
    what = sections.get("What it does", "").strip() or cls.message
    markdown = render_markdown(cls)
    return {
        "id": cls.code,
        "name": cls.name,
        "shortDescription": {"text": cls.message},
        "fullDescription": {"text": what, "markdown": what},
        "help": {"text": markdown, "markdown": markdown},
        "helpUri": DOCS_URL.format(code=cls.code, name=cls.name),
        "defaultConfiguration": {"enabled": bool(cls.default and not cls.preview), "level": LEVEL},
        "properties": {"tags": ["pytorch", "performance"], "fixSafety": cls.fix_safety,
                       "status": "preview" if cls.preview else "stable"},
    }


def _result(f: Finding, rule_index: Dict[str, int], root: str) -> dict:
    location = _artifact_location(f.path, root)
    physical: dict = {"artifactLocation": location}
    if f.cell is None:
        physical["region"] = _region(f.row, f.col, f.end_row, f.end_col)
        text = f.message
    else:
        # a notebook: rows are within a cell, not lines of the .ipynb file, so the
        # location is the file and the message and properties say where in it
        text = f"cell {f.cell}:{f.row}:{f.col}: {f.message}"
    result = {
        "ruleId": f.code,
        "level": "error" if f.is_diagnostic else LEVEL,
        "message": {"text": text},
        "locations": [{"physicalLocation": physical}],
    }
    if f.cell is not None:
        result["properties"] = {
            "cell": f.cell, "cellLine": f.row, "cellColumn": f.col, "cellEndLine": f.end_row, "cellEndColumn": f.end_col,
        }
    if f.code in rule_index:
        result["ruleIndex"] = rule_index[f.code]
    if f.fix is not None and f.fix.edits and f.cell is None:  # a notebook's edits have no region in the file
        result["fixes"] = [
            {
                "description": {"text": f.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": dict(location),
                        "replacements": [
                            {
                                "deletedRegion": _region(
                                    e.location[0], e.location[1], e.end_location[0], e.end_location[1]
                                ),
                                "insertedContent": {"text": e.content},
                            }
                            for e in f.fix.edits
                        ],
                    }
                ],
                "properties": {"applicability": f.fix.applicability},
            }
        ]
    return result


def _notification(path: str, why: str, root: str) -> dict:
    return {
        "level": "error",
        "message": {"text": f"{printable(path)}: {printable(why)}"},  # as on stderr: valid Unicode, no controls
        "locations": [{"physicalLocation": {"artifactLocation": _artifact_location(path, root)}}],
    }


def build(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], root: Optional[str] = None) -> dict:
    """The SARIF log as a dict."""
    root = os.path.abspath(root or os.getcwd())
    rules = all_rules()
    rule_index = {code: i for i, code in enumerate(rules)}
    invocation: dict = {
        "executionSuccessful": not errors,
        "toolExecutionNotifications": [_notification(p, why, root) for p, why in errors],
    }
    run = {
        "tool": {
            "driver": {
                "name": "gpulint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_descriptor(cls) for cls in rules.values()],
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, rule_index, root) for f in findings],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    return json.dumps(build(findings, errors), indent=2) + "\n"
