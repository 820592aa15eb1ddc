"""Suppression comments: `# noqa`, `# noqa: GPU101,GPU201`,
`# gpulint: ignore[GPU101, host-sync-in-loop]`, `# gpulint: skip-file`, and
at file level, on a line of its own, `# gpulint: noqa: GPU101` (one rule in
the whole file, as Ruff's `# ruff: noqa: E501`) or `# gpulint: noqa` (the
whole file, as `# ruff: noqa`).

Only real comments count (found with `tokenize`), so a string that contains
"# noqa" suppresses nothing.

Either kind can be left out: the flake8 plugin leaves `# noqa` to flake8,
which applies it itself (and ignores it under `--disable-noqa`).

Each comment that names codes is kept as a `Directive`, and `suppressed`
records which of its codes dropped a finding, so that `unused` can tell
the unused-noqa rule which codes suppressed nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from gpulint.rule import UnusedCodes

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


def _comments(text: str, tokens_text: Optional[str] = None) -> Dict[int, Tuple[int, str]]:
    """{row: (0-based column, comment)}. `tokens_text`: the file as the engine rewrote it for
    this Python (gpulint/lowering/: same lines and columns, its comments
    kept), which this Python's tokenize reads where it misreads the original
    (PEP 701 f-strings before 3.12)."""
    out: Dict[int, Tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(tokens_text or text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # fall back to a line scan: the file parsed, so this is an edge case
        for i, line in enumerate(text.splitlines(), 1):
            k = line.find("#")
            if k != -1:
                out[i] = (k, line[k:])
    return out


class Directive:
    """One suppression comment that names codes: `# noqa: A, B` or `#
    gpulint: ignore[A, B]` on a line (`row`), or `# gpulint: noqa: A` on a
    line of its own (`file_level`, for the whole file). `col`: the 0-based
    column of its comment; `span`, `codes_span`: where the directive and its
    list of codes lie in the comment; `written`: the codes as written."""

    __slots__ = ("row", "col", "comment", "span", "codes_span", "written", "file_level")

    def __init__(self, row: int, col: int, comment: str, match: "re.Match", file_level: bool) -> None:
        self.row, self.col, self.comment, self.file_level = row, col, comment, file_level
        self.span = match.span()
        self.codes_span = match.span("codes")
        self.written = tuple(p for p in re.split(r"[,\s]+", match.group("codes")) if p)


class Suppressions:
    """The suppression comments of one file: `noqa` for `# noqa` comments,
    `directives` for `# gpulint: ignore[...]` and `# gpulint: skip-file`."""

    def __init__(
        self, text: str, noqa: bool = True, directives: bool = True, tokens_text: Optional[str] = None
    ) -> None:
        self.skip_file = False
        self.by_line: Dict[int, FrozenSet[str]] = {}
        self.file_codes: FrozenSet[str] = frozenset()  # `# gpulint: noqa: CODE` lines
        self.named: List[Directive] = []  # the comments that name codes, in order
        self._used: Set[Tuple[int, str]] = set()  # (row, 0 at file level; code or name) that dropped a finding
        lowered = text.lower()
        if not ((noqa and "noqa" in lowered) or (directives and "gpulint:" in lowered)):
            return
        lines = text.splitlines()
        for row, (col, comment) in _comments(text, tokens_text).items():
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
                        self.named.append(Directive(row, col, comment, m, True))
                    continue
            codes = None
            m = NOQA_RE.search(comment) if noqa else None
            if m:
                codes = _parse_codes(m.group("codes"))
                if codes is not ALL:
                    self.named.append(Directive(row, col, comment, m, False))
            m2 = IGNORE_RE.search(comment) if directives else None
            if m2:
                c2 = _parse_codes(m2.group("codes"))
                if c2 is not ALL:
                    self.named.append(Directive(row, col, comment, m2, False))
                codes = c2 if codes is None else (ALL if ALL in (codes, c2) else codes | c2)
            if codes is not None:
                self.by_line[row] = codes

    def suppressed(self, code: str, name: str, rows) -> bool:
        """Whether a finding of rule `code` (`name`) on `rows` is suppressed;
        each code or name that suppresses it is recorded as used."""
        hit = False
        for where, codes in [(0, self.file_codes)] + [(r, self.by_line[r]) for r in rows if r in self.by_line]:
            if codes is ALL or "*" in codes:
                hit = True
                continue
            for key in (code, name):
                if key in codes:
                    self._used.add((where, key))
                    hit = True
        return hit

    def unused(self, judged) -> List[UnusedCodes]:
        """The comments' codes that suppressed nothing, among `judged(code)`
        (the codes and names of the rules selected for the file), one record
        per comment that has any."""
        out: List[UnusedCodes] = []
        for d in self.named:
            where = 0 if d.file_level else d.row
            unused = tuple(w for w in d.written if judged(_norm(w)) and (where, _norm(w)) not in self._used)
            if unused:
                out.append(UnusedCodes(d.row, d.col, d.comment, d.span, d.codes_span, d.written, unused,
                                       d.file_level))
        return out


def _norm(code: str) -> str:
    return code.upper() if re.match(r"^[A-Za-z]+\d+$", code) else code.lower()


def _parse_codes(raw: Optional[str]) -> FrozenSet[str]:
    if raw is None or not raw.strip():
        return ALL
    return frozenset(_norm(p.strip()) for p in re.split(r"[,\s]+", raw) if p.strip())
