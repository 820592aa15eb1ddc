"""What `gpulint verify` does with one side of a comparison: copy the
script's folder, fix a copy (as `gpulint fix --apply` would), list the
findings, run a copy under `boot.py`, and read what the run reported.

`verify` (before and after), `verify --each` (each rule's fixes alone) and
`verify --trace` (one traced run) are built from these. Nothing here
imports torch: the child process does (`boot.py`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import click

from gpulint.harness.stats import Summary, scaled_steps

EXIT_OK, EXIT_ERROR = 0, 2
LOSS_RTOL = 1e-3
BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot.py")
TRACE_ENV = "GPULINT_TRACE"  # boot.py's own name for it (boot.py imports nothing of gpulint)

# copying the script's directory
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gpulint_cache", ".ipynb_checkpoints", "__pypackages__",
    "site-packages", ".eggs", ".direnv",
})
BIG_FILE = 1 << 20  # files this size or larger (other than .py) are linked, not copied
BIG_DIR = 500  # a directory with more entries than this and no .py file in it is linked (a data set)
STDERR_TAIL = 20


# ------------------------------------------------------------------ copying
def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def copy_tree(src: str, dst: str) -> List[str]:
    """Copy `src` into `dst`: every .py file, and other files under 1 MB;
    larger files and data-set-sized directories without Python files are
    symlinked to the original (so the script's relative data paths still
    work, read-only in spirit); VCS folders, virtual environments and caches
    are skipped. Returns the relative paths of the .py files copied."""
    copied: List[str] = []
    os.makedirs(dst, exist_ok=True)
    stack = [""]
    while stack:
        rel = stack.pop()
        here = os.path.join(src, rel)
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            rel_e = os.path.join(rel, e.name)
            target = os.path.join(dst, rel_e)
            try:
                if e.is_symlink():
                    real = os.path.realpath(e.path)
                    if os.path.exists(real):
                        os.symlink(real, target)
                    continue
                if e.is_dir():
                    if e.name in SKIP_DIRS or e.name.endswith(".egg-info") or _is_venv(e.path):
                        continue
                    names = os.listdir(e.path)
                    if len(names) > BIG_DIR and not any(n.endswith(".py") for n in names):
                        os.symlink(os.path.abspath(e.path), target)
                        continue
                    os.makedirs(target, exist_ok=True)
                    stack.append(rel_e)
                    continue
                if not e.is_file():
                    continue
                if e.name.endswith(".py"):
                    shutil.copy2(e.path, target)
                    copied.append(rel_e)
                elif e.stat().st_size >= BIG_FILE:
                    os.symlink(os.path.abspath(e.path), target)
                else:
                    shutil.copy2(e.path, target)
            except OSError:
                continue  # an unreadable entry: the script may not need it
    return sorted(copied)


# ------------------------------------------------------------------- fixing
def finding_dict(f, root: str) -> Dict[str, object]:
    path = f.path
    if os.path.isabs(path) or path.startswith(root):
        path = os.path.relpath(path, root)
    return {
        "code": f.code,
        "name": f.name,
        "path": path,
        "line": f.row,
        "col": f.col,
        "message": f.message,
        "fix": f.fix.applicability if f.fix is not None else None,
    }


@dataclass
class FixOutcome:
    fixed: List[Dict[str, object]] = field(default_factory=list)
    remaining: List[Dict[str, object]] = field(default_factory=list)
    fixed_count: int = 0
    held_back_unsafe: int = 0
    errors: List[Tuple[str, str]] = field(default_factory=list)
    files_changed: List[str] = field(default_factory=list)
    unsafe_applied: bool = False


def fix_copy(
    src: str, script: str, after: str, copied: Sequence[str], unsafe: bool,
    select: Optional[Sequence[str]] = None, ignore: Sequence[str] = (), config_path: Optional[str] = None,
    preview: Optional[bool] = None,
) -> FixOutcome:
    """Fix the copies in `after` as `gpulint fix --apply SRC SCRIPT` would fix
    the originals: the files are discovered and configured from the
    originals (their config, excludes, per-file-ignores, and their paths,
    which some rules look at), and the fixed text is written to the copy."""
    from gpulint.fix.files import FileFix, read_with_encoding, write_fixed
    from gpulint.fix.apply import FixError, fix_source, newline_of
    from gpulint.engine.lint import LintError
    from gpulint.rule import SAFE, UNSAFE

    out = FixOutcome()
    result, errors = _lint_originals(src, script, select, ignore, config_path, preview)
    out.errors.extend(errors)
    allowed = (SAFE, UNSAFE) if unsafe else (SAFE,)
    copied_set = set(copied)
    src_real = os.path.realpath(src)
    for res in result.results:
        if res.error:
            continue
        rel = os.path.relpath(os.path.realpath(res.path), src_real)
        fixable = any(f.fix is not None and f.fix.applicability in allowed for f in res.findings)
        if not fixable or rel not in copied_set:
            out.remaining.extend(finding_dict(f, src) for f in res.findings)
            out.held_back_unsafe += sum(
                1 for f in res.findings if f.fix is not None and f.fix.applicability == UNSAFE and not unsafe
            )
            continue
        copy_path = os.path.join(after, rel)
        options = result.options[res.path]
        try:
            text, encoding, bom, st = read_with_encoding(copy_path)
            fixed = fix_source(text, res.path, options, unsafe=unsafe, newline=newline_of(text))
        except (LintError, FixError) as exc:
            out.errors.append((rel, str(exc)))
            out.remaining.extend(finding_dict(f, src) for f in res.findings)
            continue
        ff = FileFix(copy_path, text, fixed.text, fixed.fixed, fixed.remaining, fixed.held_back_unsafe,
                     encoding, bom, st, fixed_count=fixed.fixed_count)
        if ff.changed:
            why = write_fixed(ff)
            if why is not None:
                out.errors.append((rel, why))
                out.remaining.extend(finding_dict(f, src) for f in res.findings)
                continue
            out.files_changed.append(rel)
            out.fixed.extend(finding_dict(f, src) for f in fixed.fixed)
            out.fixed_count += fixed.fixed_count
            out.unsafe_applied |= any(f.fix is not None and f.fix.applicability == UNSAFE for f in fixed.fixed)
        out.remaining.extend(finding_dict(f, src) for f in fixed.remaining)
        out.held_back_unsafe += fixed.held_back_unsafe
    key = lambda d: (d["path"], d["line"], d["col"], d["code"])  # noqa: E731
    out.fixed.sort(key=key)
    out.remaining.sort(key=key)
    return out


# ------------------------------------------------------------------ running
def tail(path: str, n: int = STDERR_TAIL) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[-n:]


def kill_group(proc: subprocess.Popen) -> None:
    """End the child's process group (DataLoader workers included)."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    else:  # pragma: no cover
        try:
            proc.kill()
        except OSError:
            pass


def run_side(
    python: str, root: str, script_rel: str, args: Sequence[str], steps: int, warmup: int,
    env: Dict[str, str], timeout: float, tag: str,
) -> Dict[str, object]:
    """Run one copy under boot.py and return its results (plus how it ended)."""
    results = os.path.join(os.path.dirname(root), f"{tag}.results.json")
    out_log = os.path.join(os.path.dirname(root), f"{tag}.stdout.log")
    err_log = os.path.join(os.path.dirname(root), f"{tag}.stderr.log")
    for p in (results,):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [python, BOOT, results, str(steps), str(warmup), os.path.join(root, script_rel), *args]
    t0 = time.perf_counter()
    timed_out = False
    with open(out_log, "wb") as out_fh, open(err_log, "wb") as err_fh:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=out_fh, stderr=err_fh,
            start_new_session=(os.name == "posix"),
        )
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            rc = proc.wait()
        finally:
            kill_group(proc)  # whatever the script left running
    wall = time.perf_counter() - t0
    side: Dict[str, object]
    try:
        with open(results, encoding="utf-8") as fh:
            side = json.load(fh)
    except (OSError, ValueError):
        side = {"status": "timeout" if timed_out else "crashed", "steps_reached": None, "losses": []}
    if timed_out and side.get("status") != "done":
        side["status"] = "timeout"
    side["returncode"] = rc
    side["wall_s"] = wall
    side["stderr_tail"] = tail(err_log)
    return side


# ---------------------------------------------------------------- comparing
def compare_losses(before: Sequence[float], after: Sequence[float], unsafe_applied: bool,
                   rtol: float = LOSS_RTOL) -> Dict[str, object]:
    """Agree when every pair of captured losses is within `rtol` (relative
    to the larger magnitude); not comparable when none were captured or the
    counts differ."""
    out: Dict[str, object] = {"rtol": rtol, "n": min(len(before), len(after)), "max_rel_diff": None}
    if not before or not after:
        out["verdict"] = "not comparable"
        out["reason"] = "no loss captured (the script made no scalar backward() call before it was stopped)"
        return out
    if len(before) != len(after):
        out["verdict"] = "not comparable"
        out["reason"] = f"{len(before)} losses captured before, {len(after)} after"
        return out
    worst = 0.0
    for a, b in zip(before, after):
        if math.isnan(a) and math.isnan(b):
            continue
        if a == b:
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            worst = float("inf")
            continue
        worst = max(worst, abs(a - b) / max(abs(a), abs(b)))
    out["max_rel_diff"] = worst
    if worst <= rtol:
        out["verdict"] = "agree"
    else:
        out["verdict"] = "differ"
        out["reason"] = (
            "expected: unsafe fixes change numerics" if unsafe_applied
            else "safe fixes should keep the losses: please report this"
        )
    return out


def timed_runs(runs: List[Dict[str, object]]) -> List[Dict[str, object]]:
    """The runs that reached the end of their timed window."""
    return [r for r in runs if r.get("status") == "done" and r.get("seconds")]


def step_ms(run: Dict[str, object]) -> List[float]:
    """A run's per-step times in ms: the host's time at each step, scaled to
    the window's synchronized total (`stats.scaled_steps`)."""
    return scaled_steps([float(t) for t in run.get("host_step_ms") or ()], float(run["seconds"]) * 1e3,
                        int(run["steps_timed"]))


def side_metrics(runs: List[Dict[str, object]]) -> Dict[str, object]:
    ok = timed_runs(runs)
    m: Dict[str, object] = {"runs": len(runs), "ok_runs": len(ok)}
    if ok:
        ms = [float(r["seconds"]) * 1e3 / int(r["steps_timed"]) for r in ok]
        s = Summary.of(ms)
        # the mean over runs, as the speedup's own estimate (`stats.ratio_interval`) takes it
        m["ms_per_step"] = sum(ms) / len(ms)
        m["ms_per_step_spread"] = s.as_dict()
        m["steps_per_s"] = 1e3 / m["ms_per_step"] if m["ms_per_step"] > 0 else None
    first = runs[0]
    n_sync = first.get("sync_steps") or 0
    m["syncs_per_step"] = (first["sync_count"] / n_sync) if first.get("sync_count") is not None and n_sync else None
    peaks = [r.get("peak_memory_bytes") for r in ok if r.get("peak_memory_bytes") is not None]
    m["peak_memory_bytes"] = max(peaks) if peaks else None
    m["optimizers"] = first.get("optimizers")
    return m


def why_failed(side: Dict[str, object], steps: int, warmup: int) -> str:
    status = side.get("status")
    reached = side.get("steps_reached")
    if status == "timeout":
        return f"timed out after {side.get('wall_s', 0):.0f} s ({reached if reached is not None else '?'} optimizer steps reached)"
    if status == "crashed":
        return f"the process died (exit status {side.get('returncode')}) before it could report"
    if status == "error":
        return f"the script failed after {reached} optimizer steps: {side.get('error')}"
    if status == "ended":
        how = side.get("ended") or "the script ended"
        return (f"the script ended ({how}) after {reached} optimizer steps, before the {warmup} warm-up + "
                f"{steps} timed steps: lower --steps/--warmup or let it run longer")
    return f"no timing ({status})"


def child_env(device: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def list_findings(src: str, script: str, select: Optional[Sequence[str]] = None, ignore: Sequence[str] = (),
                  config_path: Optional[str] = None, preview: Optional[bool] = None
                  ) -> Tuple[List[Dict[str, object]], List[Tuple[str, str]]]:
    """The findings of SCRIPT and the files beside it, as `gpulint check SRC
    SCRIPT` finds them (paths relative to SRC), and the files that could not
    be checked."""
    result, errors = _lint_originals(src, script, select, ignore, config_path, preview)
    found = [finding_dict(f, src) for res in result.results if not res.error for f in res.findings]
    found.sort(key=lambda d: (d["path"], d["line"], d["col"], d["code"]))
    return found, errors


def _lint_originals(src: str, script: str, select: Optional[Sequence[str]], ignore: Sequence[str],
                    config_path: Optional[str], preview: Optional[bool]):
    """`gpulint check SRC SCRIPT` over the originals, under the user's config
    (its excludes, per-file-ignores and the files' own paths): the run's
    result, and the files it could not check (paths relative to SRC)."""
    from gpulint.engine.config import ConfigResolver
    from gpulint.engine.runner import run

    result = run([script, src], ConfigResolver(config_path), select=select or None, ignore=list(ignore), jobs=1,
                 use_cache=False, preview=preview)
    errors = [(os.path.relpath(p, src) if os.path.isabs(p) else p, why) for p, why in result.all_errors]
    return result, errors


def shown_path(path: str) -> str:
    """`path` as a report names it: relative to the working folder when under it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def write_json(path: Optional[str], report: Dict[str, object]) -> None:
    if not path:
        return
    from gpulint.fsutil import write_output

    try:
        write_output(path, (json.dumps(report, indent=2, default=str) + "\n").encode("utf-8"))
    except OSError as exc:
        click.echo(f"gpulint verify: error: {path}: cannot write the JSON report: {exc.strerror or exc}", err=True)
