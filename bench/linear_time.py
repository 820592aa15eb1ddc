"""Time bounds for inputs that used to make gpulint super-linear (issue 17).

    python bench/linear_time.py                  # every case at three sizes; exit 1 on a missed bound
    python bench/linear_time.py --quick          # smaller sizes (a smoke run, about a minute)
    python bench/linear_time.py --cases glob-stars,pfi-100k
    python bench/linear_time.py --write-doc      # record the results in docs/linear-time.md
    python bench/linear_time.py --pythonpath /tmp/old --timeout 120   # measure another checkout

Each case writes its input under a temporary folder and runs
`python -m gpulint check` (or `fix --apply`) on it in a fresh process, at
two or three sizes, and checks the answer (the exit status and the number
of findings) before it trusts the time. It prints the wall time per size and
the growth from one size to the next: the time ratio divided by the size
ratio, after subtracting the start-up time of an empty run (1.0 is linear,
2.0 for a doubling is quadratic). A case fails when its largest size takes
longer than its bound or when a growth exceeds MAX_GROWTH. Differences below
FLAT_S (start-up noise) are not judged.

The cases:
  glob-stars   per-file-ignores globs of 100 to 2,000 `*` (and the same + "x.py", which no file
               matches: pathspec's regex for 10 `*` and a name of 33 characters took 9 s)
  glob-star-a  `*a*a*a...*b` per-file-ignores against a 4,000-character path
  pfi-100k     50 files, up to 100,000 per-file-ignores patterns (paths, `dir/**`, `*.gen.py`), cold
  pfi-100k-warm  the same, the second run served from the cache
  exclude-100k 50 files, up to 100,000 extend-exclude patterns
  line-stmts   one line of `a=1;` repeated (up to 10 MB, 2.5 million statements)
  line-list    one line `x = [1, 1, ...]` (up to 10 MB)
  line-string  one line with a string literal (up to 10 MB)
  line-reads   `for b in loader: loss.item(); loss.item(); ...` on one line (up to 10 MB)
  line-rules   a training loop on one line whose body repeats a step that trips
               GPU101 and GPU203 (up to 4 MB, 34,000 findings)
  lines-1m     up to 1,000,000 short lines
  lines-rules  the training loop of line-rules, one statement per line (up to 4 MB)
  fix-line     `gpulint fix --apply` on the line-rules file (up to 1 MB, 8,600 fixes)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "linear-time.md"
MAX_GROWTH = 1.6  # time ratio / size ratio between two sizes
FLAT_S = 0.3  # time above start-up below which growth is not judged

DP = "import torch\nfrom torch import nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n"
HEADER = (
    "import torch\nfrom torch import nn\n"
    "model = nn.DataParallel(nn.Linear(4, 4))\nopt = torch.optim.SGD(model.parameters())\n"
)
STEP = "out = model(x.cuda()); loss = crit(out, y); loss.backward(); opt.step(); v = loss.item(); t = torch.ones(3).cuda(); "
MB = 1_000_000


class Case:
    """One input shape: `build(folder, size)` writes it and returns the command
    line (after `python -m gpulint`), the exit status and number of findings
    expected (None: not checked)."""

    def __init__(self, name: str, unit: str, sizes: Sequence[int], quick: Sequence[int], bound_s: float,
                 build: Callable[[Path, int], Tuple[List[str], int, Optional[int]]], warm: bool = False) -> None:
        self.name, self.unit, self.sizes, self.quick, self.bound_s = name, unit, sizes, quick, bound_s
        self.build, self.warm = build, warm


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _fifty_files(d: Path) -> None:
    """50 files with a GPU001 finding each: 25 `pkgN/mod.py` and 25 `srcN/mJ.genK.py`."""
    for j in range(50):
        if j % 2:
            _write(d / f"pkg{j * 3}" / "mod.py", DP)
        else:
            _write(d / f"src{j}" / f"m{j}.gen{j * 3 + 2}.py", DP)


def _mixed(i: int) -> str:
    return (f"pkg{i}/mod.py", f"dir{i}/**", f"*.gen{i}.py")[i % 3]


def build_glob_stars(d: Path, n: int):
    # `*` x n matches every file; `*` x n + "x.py" none of them (a failed match is what backtracked)
    _write(d / "pyproject.toml", f'[tool.gpulint.per-file-ignores]\n"{"*" * n}" = ["GPU101"]\n'
                                 f'"{"*" * n}x.py" = ["GPU001"]\n')
    _fifty_files(d)
    return ["check", "--no-cache", "--select", "GPU001,GPU101", "."], 1, 50


def build_glob_star_a(d: Path, n: int):
    glob = "*a" * n + "*b"
    _write(d / "pyproject.toml", f'[tool.gpulint.per-file-ignores]\n"{glob}" = ["GPU001"]\n')
    deep = Path(*["a" * 200] * 19)  # a path of 3,800 characters, none of them "b"
    _write(d / deep / "x.py", DP)
    return ["check", "--no-cache", "--select", "GPU001", "."], 1, 1


def build_pfi(d: Path, n: int):
    # pattern i%3==0 ignores GPU101 for pkg{i}/mod.py, i%3==2 ignores GPU001 for *.gen{i}.py
    lines = ["[tool.gpulint.per-file-ignores]"]
    for i in range(n):
        lines.append(f'"{_mixed(i)}" = ["{("GPU101", "GPU2", "GPU001")[i % 3]}"]')
    _write(d / "pyproject.toml", "\n".join(lines) + "\n")
    _fifty_files(d)
    return ["check", "--select", "GPU001", "--cache-dir", str(d / ".cache"), "."], 1, 25


def build_excludes(d: Path, n: int):
    _write(d / "pyproject.toml", "[tool.gpulint]\nextend-exclude = [\n" + "".join(f'"{_mixed(i)}",\n' for i in range(n))
           + "]\n")
    _fifty_files(d)  # the *.gen{i}.py files are excluded, the pkg{i}/mod.py ones (i = 3j, all < n) too
    return ["check", "--no-cache", "--select", "GPU001", "."], 0, 0


def _one_line(d: Path, text: str, select: str = "ALL"):
    _write(d / "one.py", text)
    return ["check", "--no-cache", "--select", select, "one.py"]


def build_line_stmts(d: Path, n: int):
    return _one_line(d, "a=1;" * (n // 4) + "\n"), 0, 0


def build_line_list(d: Path, n: int):
    return _one_line(d, "x = [" + ", ".join(["1"] * (n // 3)) + "]\n"), 0, 0


def build_line_string(d: Path, n: int):
    return _one_line(d, 'x = "' + "a" * n + '"\n'), 0, 0


def build_line_reads(d: Path, n: int):
    return _one_line(d, "import torch\nfor b in loader: " + "loss.item();" * (n // 12) + "\n"), 0, 0


def _reps(n: int) -> int:
    return max(1, n // len(STEP))


def build_line_rules(d: Path, n: int):
    return _one_line(d, HEADER + "for x, y in loader: " + STEP * _reps(n) + "\n", "GPU101,GPU203"), 1, 2 * _reps(n)


def build_lines(d: Path, n: int):
    _write(d / "many.py", "a = 1\n" * n)
    return ["check", "--no-cache", "--select", "ALL", "many.py"], 0, 0


def build_lines_rules(d: Path, n: int):
    stmts = [s.strip() for s in STEP.split(";") if s.strip()]
    body = "".join(f"    {s}\n" for s in stmts)
    _write(d / "many.py", HEADER + "for x, y in loader:\n" + body * _reps(n))
    return ["check", "--no-cache", "--select", "GPU101,GPU203", "many.py"], 1, 2 * _reps(n)


def build_fix_line(d: Path, n: int):
    _write(d / "one.py", HEADER + "for x, y in loader: " + STEP * _reps(n) + "\n")
    return ["fix", "--apply", "--no-cache", "--select", "GPU203", "one.py"], 0, None


CASES = [
    Case("glob-stars", "stars", (100, 1000, 2000), (100, 2000), 10, build_glob_stars),
    Case("glob-star-a", "`*a` pairs", (100, 1000, 2000), (100, 1000), 10, build_glob_star_a),
    Case("pfi-100k", "patterns", (25_000, 50_000, 100_000), (10_000, 40_000), 30, build_pfi),
    Case("pfi-100k-warm", "patterns", (25_000, 50_000, 100_000), (10_000, 40_000), 30, build_pfi, warm=True),
    Case("exclude-100k", "patterns", (25_000, 50_000, 100_000), (10_000, 40_000), 30, build_excludes),
    Case("line-stmts", "bytes", (int(2.5 * MB), 5 * MB, 10 * MB), (MB, 2 * MB), 120, build_line_stmts),
    Case("line-list", "bytes", (int(2.5 * MB), 5 * MB, 10 * MB), (MB, 2 * MB), 90, build_line_list),
    Case("line-string", "bytes", (int(2.5 * MB), 5 * MB, 10 * MB), (MB, 2 * MB), 20, build_line_string),
    Case("line-reads", "bytes", (int(2.5 * MB), 5 * MB, 10 * MB), (MB, 2 * MB), 120, build_line_reads),
    Case("line-rules", "bytes", (MB, 2 * MB, 4 * MB), (250_000, 500_000), 120, build_line_rules),
    Case("lines-1m", "lines", (250_000, 500_000, 1_000_000), (100_000, 200_000), 90, build_lines),
    Case("lines-rules", "bytes", (MB, 2 * MB, 4 * MB), (250_000, 500_000), 120, build_lines_rules),
    Case("fix-line", "bytes", (250_000, 500_000, MB), (100_000, 200_000), 150, build_fix_line),
]


def _run(args: List[str], cwd: Path, env: Dict[str, str], timeout: float) -> Tuple[float, Optional[int], str]:
    """(wall seconds, exit status or None on a timeout, stdout)."""
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "gpulint", *args, "--output-format", "concise"] if args[0] == "check"
                           else [sys.executable, "-m", "gpulint", *args],
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t, None, ""
    return time.perf_counter() - t, p.returncode, p.stdout


def _findings(stdout: str) -> int:
    return sum(1 for line in stdout.splitlines() if ": GPU" in line)


def measure(case: Case, sizes: Sequence[int], env: Dict[str, str], base: float, timeout: float) -> dict:
    rows = []
    ok = True
    notes = []
    for n in sizes:
        d = Path(tempfile.mkdtemp(prefix=f"gpulint-lt-{case.name}-"))
        try:
            args, want_rc, want_n = case.build(d, n)
            if case.warm:
                _run(args, d, env, timeout)  # fills the cache
            secs, rc, out = _run(args, d, env, timeout)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        got_n = _findings(out)
        if rc is None:
            notes.append(f"{n:,}: no result after {timeout:.0f} s")
            ok = False
        elif rc != want_rc or (want_n is not None and got_n != want_n):
            notes.append(f"{n:,}: wrong answer (exit {rc}, {got_n} findings; expected exit {want_rc}, {want_n})")
            ok = False
        rows.append({"size": n, "secs": secs, "timeout": rc is None})
        print(f"  {case.name:14} {n:>12,} {case.unit:10} {secs:8.2f} s" + ("  (timed out)" if rc is None else ""),
              flush=True)
        if rc is None:
            break
    growths = []
    for a, b in zip(rows, rows[1:]):
        ta, tb = a["secs"] - base, b["secs"] - base
        if b["timeout"] or tb < FLAT_S:
            growths.append(None)
            continue
        g = (tb / max(ta, FLAT_S / 2)) / (b["size"] / a["size"])
        growths.append(g)
        if g > MAX_GROWTH:
            ok = False
            notes.append(f"grows {g:.2f}x faster than the input from {a['size']:,} to {b['size']:,}")
    if rows and not rows[-1]["timeout"] and rows[-1]["secs"] > case.bound_s:
        ok = False
        notes.append(f"{rows[-1]['secs']:.1f} s is over the bound of {case.bound_s:.0f} s")
    return {"case": case.name, "unit": case.unit, "rows": rows, "growth": growths, "ok": ok, "notes": notes,
            "bound": case.bound_s}


def _table(results: List[dict]) -> str:
    out = ["| case | size | wall | growth vs. input | bound | ok |", "|---|---:|---:|---:|---:|---|"]
    for r in results:
        verdict = "yes" if r["ok"] else "NO: " + "; ".join(r["notes"])
        for i, row in enumerate(r["rows"]):
            g = r["growth"][i - 1] if i > 0 else None
            cells = [
                r["case"] if i == 0 else "",
                f"{row['size']:,} {r['unit']}",
                "timed out" if row["timeout"] else f"{row['secs']:.2f} s",
                "" if g is None else f"{g:.2f}",
                f"{r['bound']:.0f} s" if i == 0 else "",
                verdict if i == 0 else "",
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def write_doc(results: List[dict], base: float, command: str, path: Path) -> None:
    begin, end = "<!-- results: begin -->", "<!-- results: end -->"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    block = (f"{begin}\nMeasured {datetime.date.today().isoformat()} on {cores} cores, Python "
             f"{platform.python_version()} ({platform.system()}), with `{command}`. Start-up (an empty run): "
             f"{base:.2f} s, subtracted before the growth is computed.\n\n{_table(results)}\n{end}")
    text = path.read_text(encoding="utf-8") if path.exists() else f"# Linear time\n\n{begin}\n{end}\n"
    if begin not in text:
        text = text.rstrip("\n") + f"\n\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    path.write_text(head + block + rest.split(end, 1)[1], encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="two smaller sizes per case")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a run is stopped (default 300)")
    ap.add_argument("--pythonpath", help="measure the gpulint package found here instead of this checkout")
    ap.add_argument("--write-doc", action="store_true", help=f"record the results in {DOC.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    wanted = set(args.cases.split(",")) if args.cases else None
    unknown = (wanted or set()) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    env = dict(os.environ)
    for k in ("GPULINT_NO_CACHE", "GPULINT_CACHE_DIR", "NO_COLOR", "FORCE_COLOR"):
        env.pop(k, None)
    env["PYTHONPATH"] = args.pythonpath or str(ROOT)
    with tempfile.TemporaryDirectory(prefix="gpulint-lt-base-") as d:
        _write(Path(d) / "a.py", "x = 1\n")
        base = min(_run(["check", "--no-cache", "a.py"], Path(d), env, 60)[0] for _ in range(3))
    print(f"start-up: {base:.2f} s")
    results = []
    for case in CASES:
        if wanted and case.name not in wanted:
            continue
        results.append(measure(case, case.quick if args.quick else case.sizes, env, base, args.timeout))
    print()
    print(_table(results))
    failed = [r["case"] for r in results if not r["ok"]]
    if args.write_doc:
        command = "python bench/linear_time.py" + (" --quick" if args.quick else "") + (
            f" --cases {args.cases}" if args.cases else "")
        write_doc(results, base, command, DOC)
    if failed:
        print(f"\nmissed: {', '.join(failed)}")
        return 1
    print("\nevery case within its bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
