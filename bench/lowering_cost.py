"""What a file in syntax newer than the running Python's costs to parse.

    python bench/lowering_cost.py                 # the repo's fixtures and torch's nn/optim sources
    python bench/lowering_cost.py PATH... --repeat 5 --json out.json

gpulint parses a file with `ast.parse`; only when that raises SyntaxError
does it parse the file with LibCST and rewrite it for this Python
(gpulint/lowering.py). For every file this times, each the fastest of
`--repeat` runs, in one process:

  native    gpulint.engine.lint.parse of the file as it is (`ast.parse`)
  fallback  gpulint.engine.lint.parse of the file with PEP 695 syntax added (every
            `def f(` written `def f[T](`, and a `type` statement at the end),
            which this Python cannot parse: the failed `ast.parse`, the
            LibCST parse, the rewriting, `ast.parse` of the result and the
            tree put back (on Python 3.12+, which parses PEP 695, the
            rewriting is forced as for 3.11)
  libcst    of which: `libcst.parse_module`
  lint      gpulint.engine.lint.lint_source, every rule on by default, of the
            file as it is and of the rewritten one, for scale

and prints ms per 1,000 lines and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpulint.engine import lint as engine  # noqa: E402
from gpulint.engine.config import LATEST_TORCH  # noqa: E402
from gpulint.engine.lint import LintOptions, lint_source  # noqa: E402
from gpulint.registry import all_rules  # noqa: E402

_DEF_RE = re.compile(r"^(\s*)(async\s+)?def\s+(\w+)\s*\(", re.M)


def default_paths():
    paths = sorted((ROOT / "fixtures").glob("*/*.py"))
    try:
        import torch

        base = Path(torch.__file__).parent
        for sub in ("nn/modules", "optim"):
            paths += sorted((base / sub).glob("*.py"))
    except ImportError:
        pass
    return paths


def newer(text: str) -> str:
    """The text with PEP 695 syntax: same code, generic functions."""
    text = _DEF_RE.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}def {m.group(3)}[T](", text)
    return text + ("" if text.endswith("\n") else "\n") + "type _GpulintBench = int\n"


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import libcst

    files = []
    for p in args.paths or default_paths():
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    opts = LintOptions(codes=tuple(c for c, r in all_rules().items() if r.default), torch_version=LATEST_TORCH)
    force = sys.version_info >= (3, 12)
    totals = dict(lines=0, files=0, native=0.0, fallback=0.0, libcst=0.0, lint_native=0.0, lint_fallback=0.0)
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            engine.parse(text, str(path))
        except engine.LintError:
            continue  # not valid here to begin with
        new = newer(text)
        engine.FORCE_LOWER_TO = (3, 11) if force else None
        try:
            engine.parse(new, str(path))
            fallback = best(lambda: engine.parse(new, str(path)), args.repeat)
            lint_fallback = best(lambda: lint_source(new, path.name, opts), args.repeat)
        except engine.LintError as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
            continue
        finally:
            engine.FORCE_LOWER_TO = None
        totals["fallback"] += fallback
        totals["lint_fallback"] += lint_fallback
        totals["native"] += best(lambda: engine.parse(text, str(path)), args.repeat)
        totals["libcst"] += best(lambda: libcst.parse_module(new), args.repeat)
        totals["lint_native"] += best(lambda: lint_source(text, path.name, opts), args.repeat)
        totals["lines"] += text.count("\n") + 1
        totals["files"] += 1
    k = 1000.0 / max(1, totals["lines"])
    per = {name: totals[name] * 1000 * k for name in ("native", "fallback", "libcst", "lint_native", "lint_fallback")}
    result = {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "libcst": _version("libcst"),
        "files": totals["files"],
        "lines": totals["lines"],
        "ms_per_1000_lines": {n: round(v, 2) for n, v in per.items()},
        "fallback_over_native_parse": round(per["fallback"] / per["native"], 1),
        "libcst_share_of_fallback": round(per["libcst"] / per["fallback"], 2),
        "lint_fallback_over_lint_native": round(per["lint_fallback"] / per["lint_native"], 2),
        "forced": force,
    }
    print(f"Python {result['python']}, {result['cores']} cores, libcst {result['libcst']}: "
          f"{result['files']} files, {result['lines']:,} lines (best of {args.repeat})")
    print("| | ms per 1,000 lines |\n|---|---|")
    for name, label in [("native", "parse, native (`ast.parse`)"), ("fallback", "parse, fallback (LibCST + rewrite + `ast.parse`)"),
                        ("libcst", "  of which `libcst.parse_module`"), ("lint_native", "lint, native"),
                        ("lint_fallback", "lint, fallback")]:
        print(f"| {label} | {per[name]:.1f} |")
    print(f"fallback parse / native parse: {result['fallback_over_native_parse']}x; "
          f"fallback lint / native lint: {result['lint_fallback_over_lint_native']}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
