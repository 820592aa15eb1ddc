"""Reports for CI systems, in the shapes Ruff writes them: `json-lines` (one
Ruff JSON object per line), `junit` (JUnit XML: a test suite per file, a
failing test case per finding), and `gitlab` (GitLab's Code Quality report).
A file that could not be checked is one of the findings (`invalid-syntax`,
`io-error`), so it fails the report too."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Dict, List, Sequence, Tuple
from xml.sax.saxutils import quoteattr, escape

from gpulint.frontends.reporters.json_ import finding_dict
from gpulint.rule import Finding


def render_json_lines(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    return "".join(json.dumps(finding_dict(f)) + "\n" for f in findings)


def _where(f: Finding) -> str:
    return f"cell {f.cell}, line {f.row}, col {f.col}" if f.cell is not None else f"line {f.row}, col {f.col}"


def render_junit(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    by_file: Dict[str, List[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    n = len(findings)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="gpulint" tests="{max(n, 1)}" failures="{n}" errors="0">']
    if not findings:
        out.append('    <testsuite name="gpulint" tests="1" failures="0" errors="0">')
        out.append('        <testcase name="gpulint" classname="gpulint"/>')
        out.append("    </testsuite>")
    for path, found in by_file.items():
        out.append(f'    <testsuite name={quoteattr(path)} tests="{len(found)}" failures="{len(found)}" errors="0">')
        for f in found:
            out.append(f'        <testcase name={quoteattr("gpulint." + f.code)} classname={quoteattr(path)} '
                       f'line="{f.row}" column="{f.col}">')
            out.append(f'            <failure message={quoteattr(f.message)}>'
                       f'{escape(_where(f) + ", " + f.message)}</failure>')
            out.append("        </testcase>")
        out.append("    </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _project_path(path: str) -> str:
    """The path from the project's root, as GitLab shows it: `CI_PROJECT_DIR` or the working folder."""
    root = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(path), root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def render_gitlab(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    seen: Counter = Counter()
    out = []
    for f in findings:
        path = _project_path(f.path)
        key = (f.code, path, f.message)
        seen[key] += 1  # the same finding twice in a file: two fingerprints, stable across runs
        digest = hashlib.sha256("\0".join([*key, str(seen[key])]).encode("utf-8", "surrogatepass")).hexdigest()
        begin, end = (f.row, max(f.end_row, f.row)) if f.cell is None else (1, 1)
        description = f"{f.code}: {f.message}" if f.cell is None else f"{f.code}: cell {f.cell}:{f.row}:{f.col}: {f.message}"
        out.append({
            "check_name": f.code,
            "description": description,
            "fingerprint": digest[:32],
            "severity": "major",
            "location": {"path": path, "lines": {"begin": begin, "end": end}},
        })
    return json.dumps(out, indent=2) + "\n"
