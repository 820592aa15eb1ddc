"""`gpulint fix`: show the diff of every fix, or write them with --apply.

A file is only written when its fixed text parses (LibCST and `compile()`),
it has not changed on disk since it was read, and then atomically, in the
file's own encoding, BOM and line endings."""

from __future__ import annotations

import codecs
import difflib
import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from gpulint.engine import LintError, LintOptions, decode_source
from gpulint.fixes import FixError, fix_source
from gpulint.fsutil import atomic_write_bytes
from gpulint.rule import Finding


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    fixed_findings: List[Finding]
    remaining: List[Finding]
    held_back_unsafe: int
    encoding: str
    bom: bool
    stat: Tuple[int, int]


@dataclass
class FixRun:
    files: List[FileFix] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)
    remaining: List[Finding] = field(default_factory=list)
    held_back_unsafe: int = 0

    @property
    def changed(self) -> List[FileFix]:
        return [f for f in self.files if f.fixed != f.original]

    @property
    def fixed_count(self) -> int:
        return sum(len(f.fixed_findings) for f in self.changed)


def read_with_encoding(path: str) -> Tuple[str, str, bool, Tuple[int, int]]:
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise LintError(exc.strerror or str(exc))
    bom = data.startswith(codecs.BOM_UTF8)
    text = decode_source(data, path)
    encoding = "utf-8"
    if not bom:
        from gpulint.engine import CODING_RE

        for line in data.split(b"\n", 2)[:2]:
            m = CODING_RE.match(line)
            if m:
                encoding = m.group(1).decode("ascii", "replace")
                break
    return text, encoding, bom, (st.st_mtime_ns, st.st_size)


def _newline_of(text: str) -> str:
    i = text.find("\n")
    if i > 0 and text[i - 1] == "\r":
        return "\r\n"
    return "\n"


def fix_file(path: str, options: LintOptions, unsafe: bool) -> FileFix:
    text, encoding, bom, stat = read_with_encoding(path)
    result = fix_source(text, path, options, unsafe=unsafe, newline=_newline_of(text))
    return FileFix(
        path, text, result.text, result.fixed, result.remaining, result.held_back_unsafe, encoding, bom, stat
    )


def unified_diff(ff: FileFix) -> str:
    a = ff.original.splitlines(keepends=True)
    b = ff.fixed.splitlines(keepends=True)
    out = []
    for line in difflib.unified_diff(a, b, fromfile=f"a/{ff.path}", tofile=f"b/{ff.path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def write_fixed(ff: FileFix) -> Optional[str]:
    """Write one fixed file; return why not, or None."""
    try:
        st = os.stat(ff.path)
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    if (st.st_mtime_ns, st.st_size) != ff.stat:
        return "not written: the file changed on disk while gpulint was fixing it"
    try:
        data = ff.fixed.encode(ff.encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        return f"not written: fixed text cannot be encoded as {ff.encoding}: {exc}"
    if ff.bom:
        data = codecs.BOM_UTF8 + data
    try:
        atomic_write_bytes(ff.path, data)
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    return None


def run_fix(todo: Sequence[Tuple[str, LintOptions]], unsafe: bool) -> FixRun:
    run = FixRun()
    for path, options in todo:
        try:
            ff = fix_file(path, options, unsafe)
        except LintError as exc:
            run.errors.append((path, str(exc)))
            continue
        except FixError as exc:
            run.errors.append((path, str(exc)))
            continue
        except Exception as exc:  # a bug in a fix must not stop the run
            run.errors.append((path, f"internal error while fixing: {type(exc).__name__}: {exc} (please report this)"))
            continue
        run.files.append(ff)
        run.remaining.extend(ff.remaining)
        run.held_back_unsafe += ff.held_back_unsafe
    run.remaining.sort(key=Finding.sort_key)
    return run
