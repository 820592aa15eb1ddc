"""Ruff-like text output: `path:line:col: CODE [*] message`."""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, List, Optional, Sequence

import click

from gpulint.rule import SAFE, UNSAFE, Finding
from gpulint.registry import all_rules


# C0 and C1 controls, DEL, and lone surrogates (undecodable bytes of a file name)
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape_char(m: "re.Match[str]") -> str:
    o = ord(m.group())
    if 0xDC80 <= o <= 0xDCFF:  # os.fsdecode's stand-in for the byte o - 0xDC00
        o -= 0xDC00
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"


def printable(s: str) -> str:
    """`s` with every control character escaped (ESC as `\\x1b`, CR as `\\x0d`): a file's
    name or contents must not drive the terminal nor break the one-line format."""
    return s if s.isprintable() else _UNPRINTABLE.sub(_escape_char, s)


def _style(text: str, color: bool, **kw) -> str:
    return click.style(text, **kw) if color else text


def finding_line(f: Finding, color: bool, unsafe_fixes: bool = False) -> str:
    sep = _style(":", color, fg="cyan")
    cell = f"cell {f.cell}{sep}" if f.cell is not None else ""  # a notebook: `nb.ipynb:cell 3:2:5:`
    loc = _style(printable(f.path), color, bold=True) + sep + cell + f"{f.row}" + sep + f"{f.col}" + sep
    code = _style(f.code, color, fg="red", bold=True)
    if f.is_diagnostic:  # `bad.py:3:5: invalid-syntax: SyntaxError: ...`, as Ruff writes it
        code += ":"
    shown = f.fix is not None and (f.fix.applicability == SAFE or unsafe_fixes)
    mark = " " + _style("[*]", color, fg="cyan") if shown else ""
    return f"{loc} {code}{mark} {printable(f.message)}"


def error_line(path: str, why: str, color: bool) -> str:
    return _style("error", color, fg="red", bold=True) + f": {printable(path)}: {printable(why)}"


def summary(findings: Sequence[Finding], errors, ctx) -> List[str]:
    """The closing lines. Files that could not be checked are counted apart
    from the problems found: they are listed as findings of their own."""
    lines = []
    n_err = len(errors) or ctx.errors_count or sum(1 for f in findings if f.is_diagnostic)
    findings = [f for f in findings if not f.is_diagnostic]
    n = len(findings)
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == SAFE)
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == UNSAFE)
    if ctx.unsafe_fixes:
        safe, unsafe = safe + unsafe, 0
    if ctx.fixed:  # `check --fix`, as Ruff says it: "Found 3 errors (2 fixed, 1 remaining)."
        total = n + ctx.fixed
        lines.append(f"Found {total} problem{'s' if total != 1 else ''} ({ctx.fixed} fixed, {n} remaining).")
    if n:
        word = "problem" if n == 1 else "problems"
        how = "gpulint fix --apply --unsafe-fixes" if ctx.unsafe_fixes else "gpulint fix --apply"
        tail = f" ({safe} fixable with `{how}`)." if safe else "."
        if not ctx.fixed:
            lines.append(f"Found {n} {word}{tail}")
        elif safe:
            lines.append(f"({safe} more fixable with `{how}`.)")
        if unsafe and ctx.unsafe_hint:
            hidden = f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option"
            lines.append(f"No fixes available ({hidden})." if not safe else f"({hidden}.)")
    elif not n_err and not ctx.fixed:
        lines.append("All checks passed!" if ctx.rules_selected else "Nothing checked: no rule is selected.")
    if n_err:
        lines.append(f"{n_err} file{'s' if n_err != 1 else ''} could not be checked.")
    return lines


def statistics(findings: Sequence[Finding]) -> List[str]:
    rows = statistics_rows(findings)
    width = max((len(str(r["count"])) for r in rows), default=1)
    out = []
    for r in rows:
        mark = "[*]" if r["fixable"] else "[ ]"
        name = r["name"] if r["name"] != r["code"] else ""  # a file diagnostic's code is its name
        out.append(f"{r['count']:>{width}}\t{r['code']}\t{mark} {name}".rstrip())
    return out


def statistics_rows(findings: Sequence[Finding]) -> List[dict]:
    """Per rule, most found first: code, name, count and whether any is fixable (Ruff's JSON statistics)."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fixable)
    rules = all_rules()
    return [{"code": code, "name": rules[code].name if code in rules else code, "count": n,
             "fixable": bool(fixable[code])}
            for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def render_statistics_json(findings, errors, ctx) -> str:
    import json

    return json.dumps(statistics_rows(findings), indent=2) + "\n"


def _render(findings, errors, ctx, snippets: bool) -> str:
    lines: List[str] = []
    for path, why in errors:
        lines.append(error_line(path, why, ctx.color))
    if ctx.statistics:
        lines.extend(statistics(findings))
    else:
        sources: Dict[str, Optional[List[str]]] = {}
        for f in findings:
            lines.append(finding_line(f, ctx.color, ctx.unsafe_fixes))
            if snippets:
                lines.extend(snippet(f, _source_lines(f.path, sources), ctx.color))
    if not ctx.quiet:
        lines.extend(summary(findings, errors, ctx))
    return "\n".join(lines) + ("\n" if lines else "")


def _source_lines(path: str, cache: Dict[str, Optional[List[str]]]) -> Optional[List[str]]:
    """The file's lines, read once (None: not readable, or not a file)."""
    if path not in cache:
        try:
            from gpulint.engine.lint import read_source

            cache[path] = read_source(path).splitlines()
        except Exception:  # the report still lists the finding, without its lines
            cache[path] = None
    return cache[path]


def snippet(f: Finding, lines: Optional[List[str]], color: bool, context: int = 1) -> List[str]:
    """The finding's lines with one line around them, as Ruff's `full`
    format shows them, its span underlined. None for a notebook's cell rows
    (not lines of the file) or a file that cannot be read."""
    if f.cell is not None or lines is None or f.is_diagnostic or not 1 <= f.row <= len(lines):
        return []
    last = min(max(f.end_row, f.row), f.row + 2, len(lines))
    first, end = max(1, f.row - context), min(len(lines), last + context)
    width = len(str(end))
    bar = _style("|", color, fg="blue")
    out = [f"{' ' * width} {bar}"]
    for n in range(first, end + 1):
        out.append(f"{_style(str(n).rjust(width), color, fg='blue')} {bar} {printable(lines[n - 1])}".rstrip())
        if n == f.row:
            text = lines[n - 1]
            stop = f.end_col if f.end_row == f.row and f.end_col > f.col else len(text) + 1
            marks = "^" * max(1, stop - f.col)
            out.append(f"{' ' * width} {bar} {' ' * (f.col - 1)}{_style(marks, color, fg='red', bold=True)}")
    out.append(f"{' ' * width} {bar}")
    return out


def render_text(findings, errors, ctx) -> str:
    return _render(findings, errors, ctx, snippets=False)


def render_full(findings, errors, ctx) -> str:
    """`text` with each finding's source lines (`--output-format full`)."""
    return _render(findings, errors, ctx, snippets=True)


def render_concise(findings, errors, ctx) -> str:
    lines = [error_line(p, w, ctx.color) for p, w in errors]
    if ctx.statistics:
        lines.extend(statistics(findings))
    else:
        lines.extend(finding_line(f, ctx.color, ctx.unsafe_fixes) for f in findings)
    n = sum(1 for f in findings if not f.is_diagnostic)
    if n and not ctx.quiet:
        lines.append(f"Found {n} problem{'s' if n != 1 else ''}.")
    return "\n".join(lines) + ("\n" if lines else "")
