"""Helpers for the CLI / framework tests: small projects in tmp_path, the CLI
run in-process (click's CliRunner) or as a real subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from click.testing import CliRunner

from gpulint.frontends.cli import cli

# Snippets for the two model rules. GPU001 flags line 4 col 9; GPU302 line 4 col 5.
DP = """\
import torch
from torch import nn

model = nn.DataParallel(nn.Linear(4, 4))
"""
ZG = """\
import torch

def step(opt):
    opt.zero_grad(set_to_none=False)
"""
CLEAN = "import os\n\nprint(os.getcwd())\n"
TWO = "--select=GPU001,GPU302"

# a notebook's findings read `nb.ipynb:cell 3:2:5: CODE`
LINE_RE = re.compile(r"^(?P<path>.+?):(?:cell (?P<cell>\d+):)?(?P<row>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


def write(root: Path, rel: str, text: str = DP) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def _runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def invoke(args: Iterable[str], cwd: Path, env: Optional[Dict[str, Optional[str]]] = None, cache: bool = False):
    """Run `gpulint ARGS` in-process in `cwd`. An exception other than the
    exit is re-raised, so a traceback can never pass as output."""
    full_env: Dict[str, Optional[str]] = {"NO_COLOR": None, "FORCE_COLOR": None, "GPULINT_DEBUG": None}
    full_env["GPULINT_NO_CACHE"] = None if cache else "1"
    full_env.update(env or {})
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = _runner().invoke(cli, [str(a) for a in args], env=full_env)
    finally:
        os.chdir(old)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    assert "Traceback" not in res.stdout + res.stderr
    return res


def findings(stdout: str) -> List[Tuple[str, int, int, str]]:
    """(path, row, col, code) of every finding line of text output."""
    out = []
    for line in stdout.splitlines():
        m = LINE_RE.match(line)
        if m:
            out.append((m["path"], int(m["row"]), int(m["col"]), m["code"]))
    return out


def codes(stdout: str) -> List[str]:
    return sorted(c for _, _, _, c in findings(stdout))


# A file that could not be checked is a diagnostic line of its own (as Ruff writes
# it): `bad.py:1:7: invalid-syntax: SyntaxError: ...`, `gone.py:1:1: io-error: ...`.
# LINE_RE above never matches one, so findings() and codes() list rule findings only.
FILE_CODES = ("invalid-syntax", "io-error", "internal-error")
DIAG_RE = re.compile(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>invalid-syntax|io-error|internal-error): "
                     r"(?P<message>.*)$")


def diagnostics(stdout: str) -> List[Tuple[str, int, int, str, str]]:
    """(path, row, col, code, message) of every diagnostic line of text output.
    A notebook's is located in its cell: the path is then `nb.ipynb:cell 3`."""
    out = []
    for line in stdout.splitlines():
        m = DIAG_RE.match(line)
        if m:
            out.append((m["path"], int(m["row"]), int(m["col"]), m["code"], m["message"]))
    return out


_SYNTAX_ERROR_RE = re.compile(r"^syntax error at (?P<cell>cell \d+:)?(?P<row>\d+):(?P<col>\d+): (?P<detail>.*)$")


def diagnostic_of(path: str, why: str, code: str) -> Tuple[str, int, int, str, str]:
    """The diagnostic (as diagnostics() gives it) of a file whose one-line
    error (`error: PATH: WHY` on stderr) is `why`: a syntax error is located
    where the parser says and reads `SyntaxError: <the parser's message>`;
    any other failure is at 1:1 and its message is `why` itself."""
    m = _SYNTAX_ERROR_RE.match(why)
    if code == "invalid-syntax" and m:
        where = f"{path}:{m['cell'][:-1]}" if m["cell"] else path
        return (where, int(m["row"]), int(m["col"]), code, f"SyntaxError: {m['detail']}")
    assert not m, f"a syntax error is an invalid-syntax diagnostic, not {code}: {why}"
    return (path, 1, 1, code, why)


def diagnostic_line(path: str, why: str, code: str) -> str:
    """The line `gpulint check` prints on stdout for that file."""
    where, row, col, code, message = diagnostic_of(path, why, code)
    return f"{where}:{row}:{col}: {code}: {message}"


def run_subprocess(args: Iterable[str], cwd: Path, env: Optional[Dict[str, str]] = None, **kw):
    """`python -m gpulint ARGS` as a real process."""
    e = dict(os.environ)
    for k in ("NO_COLOR", "FORCE_COLOR", "GPULINT_DEBUG"):
        e.pop(k, None)
    e["GPULINT_NO_CACHE"] = "1"
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gpulint", *[str(a) for a in args]],
        cwd=cwd, env=e, capture_output=True, text=True, timeout=120, **kw
    )


def _syntax_error_of(source: str) -> str:
    """What gpulint says of `source`'s syntax error on this Python (the parser's
    wording and column changed between 3.9 and 3.10)."""
    from gpulint.engine.lint import LintError, parse

    try:
        parse(source, "x.py")
    except LintError as exc:
        return str(exc)
    raise AssertionError("source parsed")


# "x = (\n": the unclosed parenthesis the CLI tests use
UNCLOSED = "x = (\n"
UNCLOSED_ERROR = _syntax_error_of(UNCLOSED)
# and its diagnostic in bad.py: `bad.py:1:5: invalid-syntax: SyntaxError: '(' was never closed (...)` on 3.11
UNCLOSED_LINE = diagnostic_line("bad.py", UNCLOSED_ERROR, "invalid-syntax")
