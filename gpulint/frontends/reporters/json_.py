"""JSON in Ruff's `--output-format json` schema, so tools that read Ruff's JSON read ours."""

from __future__ import annotations

import json
import os
from typing import Sequence, Tuple

from gpulint.rule import Finding


def _loc(pos) -> dict:
    return {"column": pos[1], "row": pos[0]}


def finding_dict(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability,
            "edits": [
                {"content": e.content, "end_location": _loc(e.end_location), "location": _loc(e.location)}
                for e in f.fix.edits
            ],
            "message": f.fix.message,
        }
    return {
        "cell": f.cell,  # a notebook's cell (rows are then within the cell), as in Ruff
        "code": f.code,
        "end_location": _loc((f.end_row, f.end_col)),
        "filename": f.path if f.path == "-" else os.path.abspath(f.path),  # "-": stdin without a name
        "fix": fix,
        "location": _loc((f.row, f.col)),
        "message": f.message,
        "noqa_row": None if f.is_diagnostic else f.noqa_row,  # no comment suppresses a file that failed
        "url": f.url,
    }


def render(findings: Sequence[Finding], errors: Sequence[Tuple[str, str]], ctx) -> str:
    return json.dumps([finding_dict(f) for f in findings], indent=2) + "\n"
