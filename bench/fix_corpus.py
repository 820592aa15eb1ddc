"""Run `gpulint fix --apply --unsafe-fixes` over real PyTorch code and check
that it never breaks anything.

    python bench/fix_corpus.py [--out docs/fix-corpus.md] [PACKAGE==VERSION ...]

Each package's wheel is downloaded with `pip download --no-deps` (nothing is
installed, no code is run) and unpacked into a scratch copy, together with
this repo's examples/ and fixtures/. Then:

1. every .py file that compiles before the fix must still compile after it;
2. a second `gpulint fix --unsafe-fixes` must find nothing to change;
3. `gpulint check` afterwards must report no finding that has a fix.

The counts (files, fixes applied, fixes refused) are printed and written
to --out as a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PACKAGES = ["transformers==5.24.0", "timm==1.0.31", "lightning==2.6.6", "accelerate==1.15.0", "yolov5==7.0.14"]


def gpulint(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "gpulint", *args], cwd=cwd, capture_output=True, text=True,
        env=dict(os.environ, GPULINT_NO_CACHE="1", NO_COLOR="1"),
    )


def compiles(path: Path) -> bool:
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def findings(cwd) -> list:
    res = gpulint("check", "--no-cache", "--output-format", "json", ".", cwd=cwd)
    if res.returncode not in (0, 1):
        raise SystemExit(f"gpulint check failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout)


def main() -> None:
    # every rule on by default, preview ones too, as before the preview tier (an
    # older gpulint ignores the variable, so runs of old and new code compare)
    os.environ["GPULINT_PREVIEW"] = "1"
    ap = argparse.ArgumentParser()
    ap.add_argument("packages", nargs="*", default=DEFAULT_PACKAGES)
    ap.add_argument("--out", default=None)
    ap.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "gpulint-wheels"))
    args = ap.parse_args()

    os.makedirs(args.wheels, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpulint-fix-corpus-"))
    for spec in args.packages:
        name = re.split(r"[=<>]", spec)[0]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", args.wheels, spec], check=True
        )
        wheel = next(
            p for p in sorted(Path(args.wheels).glob("*.whl"))
            if p.name.lower().startswith(name.replace("-", "_").lower() + "-")
        )
        with zipfile.ZipFile(wheel) as z:
            z.extractall(work / name)
    for local in ("examples", "fixtures"):
        shutil.copytree(ROOT / local, work / local)

    files = sorted(work.rglob("*.py"))
    compiled_before = {p for p in files if compiles(p)}
    before = findings(work)
    fixable_before = Counter(f["code"] for f in before if f["fix"])

    res = gpulint("fix", "--apply", "--unsafe-fixes", "--no-cache", ".", cwd=work)
    summary = re.search(r"Fixed (\d+) problems? in (\d+) files?", res.stdout)
    fixed, fixed_files = (int(summary.group(1)), int(summary.group(2))) if summary else (0, 0)
    refused = [line for line in res.stderr.splitlines() if "invalid code" in line or "internal error" in line]
    other_errors = [line for line in res.stderr.splitlines() if line.startswith("error:") and line not in refused]

    broken = sorted(str(p.relative_to(work)) for p in compiled_before if not compiles(p))
    second = gpulint("fix", "--unsafe-fixes", "--no-cache", ".", cwd=work)
    after = findings(work)
    fixable_after = [f for f in after if f["fix"]]

    ok = not broken and second.returncode == 0 and not fixable_after and not refused
    report = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "packages": args.packages + ["examples/", "fixtures/"],
        "py_files": len(files),
        "compiled_before": len(compiled_before),
        "findings_before": len(before),
        "fixable_before": dict(sorted(fixable_before.items())),
        "fixes_applied": fixed,
        "files_changed": fixed_files,
        "fixes_refused": len(refused),
        "other_errors": len(other_errors),
        "broken_after_fix": broken,
        "second_run_changes": second.returncode != 0,
        "fixable_findings_after": len(fixable_after),
        "findings_after": len(after),
        "ok": ok,
    }
    print(json.dumps(report, indent=2))
    for line in refused + other_errors[:20]:
        print(line, file=sys.stderr)
    if args.out:
        rows = "\n".join(f"| {k} | {v} |" for k, v in report.items())
        Path(args.out).write_text(
            "# gpulint fix over real PyTorch code\n\n"
            "Produced by `python bench/fix_corpus.py --out docs/fix-corpus.md`: `gpulint fix --apply --unsafe-fixes`\n"
            "over unpacked wheels of the packages below plus this repo's examples and fixtures.\n\n"
            "| what | value |\n|---|---|\n" + rows + "\n"
        )
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
