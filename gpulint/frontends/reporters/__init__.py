"""Output formats. Each reporter is `render(findings, errors, ctx) -> str`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, Tuple

from gpulint.rule import Finding


@dataclass
class ReportContext:
    color: bool = False
    statistics: bool = False
    linted: int = 0
    unsafe_hint: bool = True
    quiet: bool = False
    unsafe_fixes: bool = False  # count unsafe fixes as applicable ([*], summary)
    errors_count: int = 0  # files that could not be checked (reported on stderr)
    rules_selected: bool = True  # False: no rule ran, so a clean run is no pass
    fixed: int = 0  # `check --fix`: findings fixed before this report (which lists what is left)


def get_reporter(name: str, statistics: bool = False
                 ) -> Callable[[Sequence[Finding], Sequence[Tuple[str, str]], ReportContext], str]:
    """The reporter of format `name`; with `statistics`, the counts per rule
    in that format, as Ruff gives them: a JSON array for `json` (and
    `json-lines`), the text table for every other format."""
    if statistics and name != "concise":
        from gpulint.frontends.reporters import text

        return text.render_statistics_json if name in ("json", "json-lines") else text.render_text
    if name in ("text", "concise", "full"):
        from gpulint.frontends.reporters import text

        return {"text": text.render_text, "full": text.render_full, "concise": text.render_concise}[name]
    if name == "json":
        from gpulint.frontends.reporters import json_ as j

        return j.render
    if name == "sarif":
        from gpulint.frontends.reporters import sarif

        return sarif.render
    if name in ("json-lines", "junit", "gitlab"):
        from gpulint.frontends.reporters import ci

        return {"json-lines": ci.render_json_lines, "junit": ci.render_junit, "gitlab": ci.render_gitlab}[name]
    if name == "github":
        from gpulint.frontends.reporters import github

        return github.render
    raise KeyError(name)
