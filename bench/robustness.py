"""Scale test: `gpulint check` and `gpulint fix --apply` over tens of thousands of real files.

    python bench/robustness.py               # fetch, copy, check, fix twice, print the table
    python bench/robustness.py --write-doc   # also write the results into docs/robustness.md
    python bench/robustness.py --keep        # keep the temporary copy (its path is printed)

The corpus is the complete .py sources of the torch wheel itself plus
transformers, timm and lightning (PACKAGES). They are fetched with
`pip download --no-deps` and only their .py files are unpacked, under --corpus
(default $TMPDIR/gpulint-corpus, where bench/accuracy.py keeps its packages,
which are reused), by bench/speed.py's fetch. Nothing is installed, no code
from them is run, and nothing is copied into this repo.

The .py files are copied to a temporary directory, and on that copy:

  1. every file is parsed with the running Python (`compile()`); the files that
     do not parse are counted and left out of the "still parses" check below
  2. `gpulint check --no-cache --select ALL --output-format json`: files,
     findings, and the files it could not lint, by kind of error
  3. `gpulint fix --apply --unsafe-fixes --select ALL --no-cache`: every file
     it changed must still compile, and no temporary file may be left behind
  4. the same fix command again: it must change no file, byte for byte

A crash is a line with "internal error" or "Traceback" in any run's output, or
an exit status other than 0 or 1. The script exits 1 when there is a crash, a
fixed file that no longer compiles, a leftover temporary file, or a change made
by the second fix run.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "robustness.md"
MARK_START, MARK_END = "<!-- scale:start -->", "<!-- scale:end -->"

PACKAGES = [
    ("torch", "2.13.0"),
    ("transformers", "5.24.0"),
    ("timm", "1.0.31"),
    ("lightning", "2.6.6"),
]


def _load_speed():
    spec = importlib.util.spec_from_file_location("bench_speed", ROOT / "bench" / "speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ pure helpers (tested)
def error_kind(why: str) -> str:
    """'syntax error at 3:5: invalid syntax' -> 'syntax error'."""
    head = why.split(":", 1)[0].strip()
    head = re.sub(r" at \d+(:\d+)?$", "", head)
    head = re.sub(r"\d+", "N", head)
    return head or why


def parse_error_lines(stderr: str) -> List[Tuple[str, str]]:
    """(path, why) for each `error: PATH: WHY` line of gpulint's stderr."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("error: "):
            rest = line[len("error: "):]
            # the path is a file under the copy: it ends in .py (or names a directory)
            m = re.match(r"(.+?\.pyi?|.+?): (.*)$", rest)
            if m:
                out.append((m.group(1), m.group(2)))
            else:
                out.append((rest, ""))
    return out


def crash_lines(text: str) -> List[str]:
    return [ln for ln in text.splitlines() if "internal error" in ln or "Traceback" in ln]


def compiles(data: bytes, path: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, UnicodeDecodeError, MemoryError, RecursionError):
            return False
    return True


def replace_between_markers(doc: str, text: str, start: str = MARK_START, end: str = MARK_END) -> str:
    if start not in doc or end not in doc:
        raise ValueError(f"markers {start} / {end} not found")
    return doc[: doc.index(start) + len(start)] + "\n" + text.rstrip("\n") + "\n" + doc[doc.index(end):]


# ------------------------------------------------------------------ the run
def copy_sources(sources: Dict[str, Path], work: Path) -> Dict[str, List[str]]:
    """Copy every .py file; {package dir name: [paths relative to work]}."""
    files = {}
    for name, src in sources.items():
        top = src.name  # <name>-<version>
        rels = []
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                s = Path(dirpath) / fn
                if s.is_symlink() or not s.is_file():
                    continue
                rel = Path(top) / s.relative_to(src)
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(s, work / rel)
                rels.append(str(rel))
        files[top] = rels
    return files


def snapshot(work: Path, rels: List[str]) -> Dict[str, str]:
    return {r: hashlib.sha256((work / r).read_bytes()).hexdigest() for r in rels}


def gpulint(args: List[str], cwd: Path) -> Tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, GPULINT_NO_CACHE="1", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "gpulint"] + args, cwd=cwd, capture_output=True, text=True,
                         env=env, errors="replace")
    return res, time.perf_counter() - t0


def package_of(rel: str) -> str:
    return Path(rel).parts[0]


def linted_files(work: Path, tops: List[str]) -> List[str]:
    """The files gpulint's own discovery picks (its default excludes apply)."""
    sys.path.insert(0, str(ROOT))
    from gpulint.engine.config import ConfigResolver
    from gpulint.engine.discovery import discover

    old = os.getcwd()
    os.chdir(work)
    try:
        return [os.path.normpath(p) for p, _ in discover(tops, ConfigResolver(None), lambda p, w: None)]
    finally:
        os.chdir(old)


def run(corpus: Path, keep: bool, jobs: Optional[int]) -> dict:
    speed = _load_speed()
    sources = speed.fetch(corpus, PACKAGES)
    work = Path(tempfile.mkdtemp(prefix="gpulint-robustness-"))
    res: dict = {"packages": [f"{n} {v}" for n, v in PACKAGES], "work": str(work)}
    try:
        files = copy_sources(sources, work)
        tops = list(files)
        every = [r for t in tops for r in files[t]]
        lines = {t: 0 for t in tops}
        not_parsing = set()
        t0 = time.perf_counter()
        for r in every:
            data = (work / r).read_bytes()
            lines[package_of(r)] += data.count(b"\n")
            if not compiles(data, r):
                not_parsing.add(r)
        res["parse_seconds"] = time.perf_counter() - t0
        linted = set(linted_files(work, tops))
        jobs_args = ["-j", str(jobs)] if jobs else []

        # 2. check
        out_json = work.parent / (work.name + "-findings.json")
        chk, chk_s = gpulint(["check", "--no-cache", "--select", "ALL", "--output-format", "json",
                              "-o", str(out_json)] + jobs_args + tops, work)
        findings = json.loads(out_json.read_text()) if out_json.exists() else None
        out_json.unlink(missing_ok=True)
        chk_errors = parse_error_lines(chk.stderr)
        # 3. fix
        before = snapshot(work, every)
        fix_args = ["fix", "--apply", "--unsafe-fixes", "--select", "ALL", "--no-cache"] + jobs_args + tops
        fx, fx_s = gpulint(fix_args, work)
        after = snapshot(work, every)
        changed = sorted(r for r in every if before[r] != after[r])
        broken = [r for r in changed if r not in not_parsing and not compiles((work / r).read_bytes(), r)]
        changed_unparsable = [r for r in changed if r in not_parsing]
        leftovers = sorted(str(p.relative_to(work)) for p in work.rglob(".gpulint-*"))
        m = re.search(r"Fixed (\d+) problems? in (\d+) files? \((\d+) remaining\)", fx.stdout)
        fixed_n, fixed_files, remaining = (int(x) for x in m.groups()) if m else (None, None, None)
        fx_errors = parse_error_lines(fx.stderr)
        # 4. fix again
        fx2, fx2_s = gpulint(fix_args, work)
        again = snapshot(work, every)
        changed2 = sorted(r for r in every if after[r] != again[r])
        m2 = re.search(r"Fixed (\d+) problems? in (\d+) files?", fx2.stdout)

        per = {}
        for t in tops:
            per[t] = {
                "files": len(files[t]),
                "lines": lines[t],
                "linted": sum(1 for r in linted if package_of(r) == t),
                "not_parsing": sum(1 for r in not_parsing if package_of(r) == t),
                "findings": sum(1 for f in findings or [] if package_of(os.path.relpath(f["filename"], work)) == t),
                "check_errors": sum(1 for p, _ in chk_errors if package_of(p) == t),
                "changed": sum(1 for r in changed if package_of(r) == t),
                "broken": sum(1 for r in broken if package_of(r) == t),
                "changed2": sum(1 for r in changed2 if package_of(r) == t),
            }
        crashes = {
            "check": crash_lines(chk.stdout + chk.stderr) if findings is not None else ["no JSON report"],
            "fix": crash_lines(fx.stdout + fx.stderr),
            "fix again": crash_lines(fx2.stdout + fx2.stderr),
        }
        for name, p in (("check", chk), ("fix", fx), ("fix again", fx2)):
            if p.returncode not in (0, 1):
                crashes[name].append(f"exit status {p.returncode}")
        res.update(
            per=per, seconds={"check": chk_s, "fix": fx_s, "fix again": fx2_s},
            check_error_kinds=dict(Counter(error_kind(w) for _, w in chk_errors).most_common()),
            fix_error_kinds=dict(Counter(error_kind(w) for _, w in fx_errors).most_common()),
            codes=dict(Counter(f["code"] for f in findings or []).most_common()),
            fixed=fixed_n, fixed_files=fixed_files, remaining=remaining,
            fixed_again=(int(m2.group(1)), int(m2.group(2))) if m2 else None,
            crashes=crashes, broken=broken, changed_unparsable=changed_unparsable, leftovers=leftovers,
            changed2=changed2, exit={"check": chk.returncode, "fix": fx.returncode, "fix again": fx2.returncode},
            not_parsing_examples=sorted(not_parsing)[:5],
        )
    finally:
        if keep:
            print(f"copy kept at {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return res


def problems(res: dict) -> List[str]:
    out = []
    for step, lines in res["crashes"].items():
        out += [f"{step}: crash: {ln}" for ln in lines[:5]]
    out += [f"fixed file no longer compiles: {r}" for r in res["broken"]]
    out += [f"temporary file left behind: {r}" for r in res["leftovers"]]
    out += [f"second fix run changed {r}" for r in res["changed2"]]
    if res["fixed"] is None:
        out.append("fix printed no summary line")
    return out


# ------------------------------------------------------------------ report
def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        m = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores ({cpu}), {platform.system()} {platform.release()}, Python {platform.python_version()}"


def gpulint_version() -> str:
    sys.path.insert(0, str(ROOT))
    import gpulint

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "gpulint"], capture_output=True,
                           text=True).stdout.strip()
    return f"{getattr(gpulint, '__version__', '?')} (commit {commit}{', gpulint/ modified' if dirty else ''})"


def render(res: dict) -> str:
    per = res["per"]
    cols = ["files", "lines", "linted", "not_parsing", "findings", "check_errors", "changed", "broken", "changed2"]
    head = ["package", ".py files", "lines", "linted", "do not parse¹", "findings", "check errors",
            "changed by fix", "changed, no longer parse", "changed by 2nd fix"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tot = {c: sum(p[c] for p in per.values()) for c in cols}
    for name, p in list(per.items()) + [("**total**", tot)]:
        rows.append("| " + " | ".join([name] + [f"{p[c]:,}" for c in cols]) + " |")
    n_crash = sum(len(v) for v in res["crashes"].values())
    s = res["seconds"]
    out = [
        f"Recorded {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')} on {machine()}; "
        f"gpulint {gpulint_version()}; corpus: {', '.join(res['packages'])}.",
        "",
        *rows,
        "",
        "¹ do not compile with the running Python (`compile()`); gpulint reports each one as an error (it lints",
        "what the running Python parses), and they are left out of the \"fixed files still parse\" check"
        + (f": {', '.join(f'`{r}`' for r in res['not_parsing_examples'])}"
           + (" and more" if sum(p["not_parsing"] for p in per.values()) > 5 else "") + "."
           if res["not_parsing_examples"] else "."),
        "",
        f"- crashes (`internal error`, `Traceback`, exit status other than 0/1): **{n_crash}**",
        f"- `check` errors by kind: {_kinds(res['check_error_kinds'])}",
        f"- `fix --apply`: {res['fixed']:,} fixes written to {res['fixed_files']:,} files "
        f"({res['remaining']:,} findings remaining); fix errors by kind: {_kinds(res['fix_error_kinds'])}"
        if res["fixed"] is not None else "- `fix --apply`: no summary line",
        f"- fixed files that no longer compile: **{len(res['broken'])}**; "
        f"files that did not compile before and were changed: {len(res['changed_unparsable'])}; "
        f"temporary files left behind: {len(res['leftovers'])}",
        f"- second `fix --apply`: changed **{len(res['changed2'])}** files"
        + (f" (it reported {res['fixed_again'][0]} fixes in {res['fixed_again'][1]} files)" if res["fixed_again"]
           else ""),
        f"- findings by rule: {', '.join(f'{c} {n:,}' for c, n in res['codes'].items()) or 'none'}",
        f"- wall time: check {s['check']:.0f} s, fix {s['fix']:.0f} s, second fix {s['fix again']:.0f} s",
    ]
    return "\n".join(out) + "\n"


def _kinds(kinds: dict) -> str:
    return ", ".join(f"{k} {n:,}" for k, n in kinds.items()) or "none"


def main() -> None:
    # every rule on by default, preview ones too, as before the preview tier (an
    # older gpulint ignores the variable, so runs of old and new code compare)
    os.environ["GPULINT_PREVIEW"] = "1"
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "gpulint-corpus"))
    ap.add_argument("-j", "--jobs", type=int, default=None, help="passed to gpulint (default: its own)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    ap.add_argument("--write-doc", action="store_true", help="write the results into docs/robustness.md")
    args = ap.parse_args()
    res = run(Path(args.corpus), args.keep, args.jobs)
    text = render(res)
    print(text)
    bad = problems(res)
    for p in bad:
        print("problem:", p, file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    if args.write_doc:
        DOC.write_text(replace_between_markers(DOC.read_text(encoding="utf-8"), text), encoding="utf-8")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
