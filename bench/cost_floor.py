"""How close can a Python linter get to Ruff on a cold run? The cost of each
part of gpulint's cold run, and how many lines a pre-filter could let it skip.

    python bench/cost_floor.py                      # the six packages of bench/speed.py
    python bench/cost_floor.py --packages accelerate --json floor.json
    python bench/cost_floor.py --ruff-s 6.9 --write-doc --json docs/cost-floor.json

One process, one core, the same corpus as bench/speed.py (fetched the same
way). For every file, in this order and each timed on its own:

  read      gpulint.engine.lint.read_source (read, detect the encoding, decode)
  parse     gpulint.engine.lint.parse (CPython's `ast.parse`)
  index     gpulint.model.index.walk.index_tree (the pre-order list and parents)
  lint      gpulint.engine.lint.lint_source with the tree already parsed: the index
            again, the shared analysis, the walk and every rule on by default

Then, from the parsed tree, which lines a pre-filter could skip without
parsing them, at three grains:

  file        the engine's own test: no rule on by default has a needle in
              the file (its `needles`, as used today)
  definition  the same needles, asked of each top-level `def` / `class`
              (decorators included) on its own: a definition none of them
              names is skipped; everything else in the file (imports,
              module-level code) is kept
  method      as `definition`, but a class is split into its methods (its
              header and the rest of its body are kept)

and a fourth, `method, strong`, that asks each method for a stronger
condition than the needles: for GPU101 a loop *and* a training-step word
*and* a host read; for GPU203/GPU204 a factory call as well as `.to(` /
`forward`. These are close to the weakest text test a finding of those rules
needs, and they are not sound (the rules also read other definitions: a
class's `__init__`, the functions that call a function from a loop, module
settings that turn TF32 or AMP on), so `method, strong` is a bound: no sound
pre-filter of this kind skips more.

The floor of a cold run on N cores that parses and analyses only the kept
lines is (read + kept x (parse + lint)) / N, and with no analysis at all
(read + kept x parse) / N. Compare them with Ruff's cold run measured by
bench/speed.py on the same machine (--ruff-s, or run here with --run-ruff).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from speed import CACHE_DIR, DOC, fetch, machine, replace_between_markers, select_packages  # noqa: E402

from gpulint.model.index.walk import index_tree  # noqa: E402
from gpulint.engine.lint import LintError, LintOptions, collector_paused, lint_source, parse, read_source  # noqa: E402
from gpulint.registry import all_rules  # noqa: E402

MARK_START, MARK_END = "<!-- floor:start -->", "<!-- floor:end -->"
_FACTORIES = ("zeros", "ones", "arange", "empty", "full", "rand", "tensor(", "Tensor(", "eye(", "linspace")
_HOST_READS = (".item(", ".cpu(", ".numpy(", ".tolist(", "float(", "int(", "bool(", "print(", "str(", "repr(",
               "max(", "min(", "assert", " if ", "%")
_STEP_WORDS = ("backward", ".step(", "oader", "model", "net(")


def _has(text: str, needles: Sequence[str]) -> bool:
    return any(n in text for n in needles)


def strong_tests(codes: Sequence[str], needles: Dict[str, Tuple[str, ...]]) -> Dict[str, Callable[[str], bool]]:
    """Per rule: a text test no weaker than what a finding of it needs in the
    definition itself (the needles, except where a stronger test is written)."""
    out: Dict[str, Callable[[str], bool]] = {}
    for code in codes:
        ns = needles[code]
        out[code] = (lambda t, ns=ns: not ns or _has(t, ns))
    if "GPU101" in out:
        out["GPU101"] = lambda t: (("for " in t or "while " in t) and _has(t, _STEP_WORDS) and _has(t, _HOST_READS))
    if "GPU203" in out:
        out["GPU203"] = lambda t: _has(t, _FACTORIES) and (".cuda(" in t or ".to(" in t)
    if "GPU204" in out:
        out["GPU204"] = lambda t: "forward" in t and _has(t, _FACTORIES)
    return out


def _span(node: ast.AST) -> Tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, node.end_lineno or node.lineno


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def units(tree: ast.Module, split_classes: bool) -> List[Tuple[int, int]]:
    """(first, last) lines of each unit a pre-filter could skip."""
    out = []
    for stmt in tree.body:
        if not isinstance(stmt, _DEFS):
            continue
        if split_classes and isinstance(stmt, ast.ClassDef):
            out.extend(_span(s) for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
        else:
            out.append(_span(stmt))
    return out


def skipped_lines(lines: List[str], spans: List[Tuple[int, int]], keep: Callable[[str], bool]) -> int:
    n = 0
    for a, b in spans:
        if not keep("\n".join(lines[a - 1:b])):
            n += b - a + 1
    return n


def study(files: Sequence[str], codes: Tuple[str, ...]) -> dict:
    rules = [r for c, r in all_rules().items() if c in codes]
    needles = {r.code: tuple(r.needles) for r in rules}
    wanted_any = lambda t: any(not ns or _has(t, ns) for ns in needles.values())  # noqa: E731
    strong = strong_tests(codes, needles)
    strong_any = lambda t: any(test(t) for test in strong.values())  # noqa: E731
    options = LintOptions(codes=codes)
    t = {"read": 0.0, "parse": 0.0, "index": 0.0, "lint": 0.0}
    lines_total = 0
    skip = {"file": 0, "definition": 0, "method": 0, "method, strong": 0}
    errors = findings = 0
    clock = time.perf_counter
    for path in files:
        with collector_paused():  # as the CLI lints each file
            t0 = clock()
            try:
                text = read_source(path)
                t1 = clock()
                tree = parse(text, path)
            except LintError:
                errors += 1
                continue
            t2 = clock()
            index_tree(tree)
            t3 = clock()
            findings += len(lint_source(text, path, options, tree=tree))
            t4 = clock()
        t["read"] += t1 - t0
        t["parse"] += t2 - t1
        t["index"] += t3 - t2
        t["lint"] += t4 - t3
        lines = text.split("\n")
        n = len(lines)
        lines_total += n
        if not wanted_any(text):
            skip["file"] += n
            skip["definition"] += n
            skip["method"] += n
            skip["method, strong"] += n
            continue
        skip["definition"] += skipped_lines(lines, units(tree, False), wanted_any)
        methods = units(tree, True)
        skip["method"] += skipped_lines(lines, methods, wanted_any)
        skip["method, strong"] += skipped_lines(lines, methods, strong_any)
    return {"files": len(files), "lines": lines_total, "parse_errors": errors, "findings": findings,
            "core_s": t, "kept": {k: 1 - v / lines_total for k, v in skip.items()}}


def floors(res: dict, cores: int) -> Dict[str, dict]:
    t = res["core_s"]
    out = {"none (today's engine)": {"kept": 1.0}}
    out.update({k: {"kept": v} for k, v in res["kept"].items()})
    for row in out.values():
        k = row["kept"]
        row["floor_s"] = (t["read"] + k * (t["parse"] + t["lint"])) / cores
        row["parse_only_floor_s"] = (t["read"] + k * t["parse"]) / cores
    return out


def ruff_seconds(dirs: Sequence[str], ruff: str, reps: int) -> float:
    cmd = [ruff, "check", "--isolated", "--no-cache", "--select", "ALL", "--exit-zero", "-q",
           "--output-format", "concise", *dirs]
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - t0)
    return sorted(runs)[len(runs) // 2]


def render(res: dict, table: Dict[str, dict], ruff_s: Optional[float], cores: int) -> str:
    t = res["core_s"]
    total = sum(t.values())
    out = [f"{res['files']:,} files, {res['lines']:,} lines; one process, one core; {res['findings']:,} findings",
           "",
           "| part | core-seconds | share | us per line |",
           "|---|---|---|---|"]
    for k in ("read", "parse", "index", "lint"):
        out.append(f"| {k} | {t[k]:.1f} | {t[k] / total:.0%} | {t[k] / res['lines'] * 1e6:.1f} |")
    ruff_col = f" | against Ruff ({ruff_s:.1f} s)" if ruff_s else ""
    out += ["", "(`index` is timed on its own and again inside `lint`, so `lint` is the whole engine after the parse.)",
            "", f"| pre-filter grain | lines kept | floor on {cores} cores: parse and lint the kept lines "
                f"| floor with no analysis at all{ruff_col} |",
            "|---|---|---|---|" + ("---|" if ruff_s else "")]
    for name, row in table.items():
        line = f"| {name} | {row['kept']:.0%} | {row['floor_s']:.1f} s | {row['parse_only_floor_s']:.1f} s"
        if ruff_s:
            line += f" | {row['floor_s'] / ruff_s:.1f}x"
        out.append(line + " |")
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "gpulint-speed-corpus"))
    ap.add_argument("--packages", default=None, help="as bench/speed.py: names, or N for the first N")
    ap.add_argument("--cores", type=int, default=2, help="cores the floors are computed for (default 2)")
    ap.add_argument("--ruff-s", type=float, default=None, help="Ruff's cold wall time on this corpus, from speed.py")
    ap.add_argument("--run-ruff", action="store_true", help="time Ruff here (median of 3) instead")
    ap.add_argument("--ruff", default=shutil.which("ruff") or "ruff")
    ap.add_argument("--json", default=None)
    ap.add_argument("--write-doc", action="store_true", help=f"write the tables into {DOC.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    packages = select_packages(args.packages)
    sources = fetch(Path(args.corpus), packages)
    files = sorted(str(p) for src in sources.values() for p in src.rglob("*.py") if CACHE_DIR not in p.parts)
    codes = tuple(sorted(c for c, r in all_rules().items() if r.default))
    ruff_s = args.ruff_s
    if args.run_ruff:
        ruff_s = ruff_seconds([str(s) for s in sources.values()], args.ruff, 3)
    res = study(files, codes)
    table = floors(res, args.cores)
    info = machine()
    text = render(res, table, ruff_s, args.cores)
    print(text)
    if args.write_doc:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() or "unknown"
        where = (f"Measured {info['date']} on {info['cpu']}, Python {info['python']}, gpulint commit {commit}; "
                 f"{', '.join(f'{n} {v}' for n, v in packages)}.")
        DOC.write_text(replace_between_markers(DOC.read_text(), where + "\n\n" + text, MARK_START, MARK_END))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"machine": info, "packages": packages, "cores": args.cores, "ruff_s": ruff_s, "study": res,
             "floors": table}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
