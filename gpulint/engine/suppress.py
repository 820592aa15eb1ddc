"""Suppression comments: `# noqa`, `# noqa: GPU101,GPU201`,
`# gpulint: ignore[GPU101, host-sync-in-loop]`, `# gpulint: skip-file`, and
at file level, on a line of its own, `# gpulint: noqa: GPU101` (one rule in
the whole file, as Ruff's `# ruff: noqa: E501`) or `# gpulint: noqa` (the
whole file, as `# ruff: noqa`).

Only real comments count (found with `tokenize`), so a string that contains
"# noqa" suppresses nothing.

Either kind can be left out: the flake8 plugin leaves `# noqa` to flake8,
which applies it itself (and ignores it under `--disable-noqa`).
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, FrozenSet, Optional

# A code (GPU101) or a rule name (host-sync-in-loop); as in flake8 and Ruff,
# text after the list ("# noqa: GPU101 timing only") is a comment, not codes,
# and `# noqa` followed by anything but a colon is a blanket noqa.
_CODE = r"(?:[A-Za-z]+[0-9]+|[a-z][a-z0-9]*(?:-[a-z0-9]+)+)"
NOQA_RE = re.compile(
    r"#\s*noqa(?![\w-])(?::\s*(?P<codes>" + _CODE + r"(?:\s*,\s*" + _CODE + r"|\s+" + _CODE + r"(?![\w-]))*))?",
    re.I,
)
IGNORE_RE = re.compile(r"#\s*gpulint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
SKIP_FILE_RE = re.compile(r"#\s*gpulint:\s*skip-file\b", re.I)
# file level, on a line of its own, as Ruff's `# ruff: noqa: E501`: `# gpulint: noqa: GPU101`
# (and `# gpulint: noqa` alone, as `# ruff: noqa`: the whole file)
FILE_NOQA_RE = re.compile(
    r"^\s*#\s*gpulint:\s*noqa(?![\w-])(?::\s*(?P<codes>" + _CODE + r"(?:\s*,\s*" + _CODE + r"|\s+" + _CODE
    + r"(?![\w-]))*))?", re.I,
)

ALL: FrozenSet[str] = frozenset({"*"})


def _comments(text: str, tokens_text: Optional[str] = None) -> Dict[int, str]:
    """{row: comment}. `tokens_text`: the file as the engine rewrote it for
    this Python (gpulint/lowering/: same lines and columns, its comments
    kept), which this Python's tokenize reads where it misreads the original
    (PEP 701 f-strings before 3.12)."""
    out: Dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(tokens_text or text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # fall back to a line scan: the file parsed, so this is an edge case
        for i, line in enumerate(text.splitlines(), 1):
            k = line.find("#")
            if k != -1:
                out[i] = line[k:]
    return out


class Suppressions:
    """The suppression comments of one file: `noqa` for `# noqa` comments,
    `directives` for `# gpulint: ignore[...]` and `# gpulint: skip-file`."""

    def __init__(
        self, text: str, noqa: bool = True, directives: bool = True, tokens_text: Optional[str] = None
    ) -> None:
        self.skip_file = False
        self.by_line: Dict[int, FrozenSet[str]] = {}
        self.file_codes: FrozenSet[str] = frozenset()  # `# gpulint: noqa: CODE` lines
        lowered = text.lower()
        if not ((noqa and "noqa" in lowered) or (directives and "gpulint:" in lowered)):
            return
        lines = text.splitlines()
        for row, comment in _comments(text, tokens_text).items():
            if directives and SKIP_FILE_RE.search(comment):
                self.skip_file = True
            if directives and "gpulint:" in comment.lower():
                own_line = 0 < row <= len(lines) and lines[row - 1].lstrip().startswith("#")
                m = FILE_NOQA_RE.match(comment) if own_line else None
                if m:
                    codes = _parse_codes(m.group("codes"))
                    if codes is ALL:
                        self.skip_file = True
                    else:
                        self.file_codes = self.file_codes | codes
                    continue
            codes = None
            m = NOQA_RE.search(comment) if noqa else None
            if m:
                codes = _parse_codes(m.group("codes"))
            m2 = IGNORE_RE.search(comment) if directives else None
            if m2:
                c2 = _parse_codes(m2.group("codes"))
                codes = c2 if codes is None else (ALL if ALL in (codes, c2) else codes | c2)
            if codes is not None:
                self.by_line[row] = codes

    def suppressed(self, code: str, name: str, rows) -> bool:
        if code in self.file_codes or name in self.file_codes:
            return True
        for row in rows:
            codes = self.by_line.get(row)
            if codes is None:
                continue
            if codes is ALL or "*" in codes or code in codes or name in codes:
                return True
        return False


def _parse_codes(raw: Optional[str]) -> FrozenSet[str]:
    if raw is None or not raw.strip():
        return ALL
    parts = [p.strip() for p in re.split(r"[,\s]+", raw) if p.strip()]
    return frozenset(p.upper() if re.match(r"^[A-Za-z]+\d+$", p) else p.lower() for p in parts)
