"""`gpulint verify SCRIPT [-- ARGS...]`: the user's own training script,
before and after `gpulint fix`, measured side by side.

1. The script's directory is copied twice into a temporary directory
   (`before/` untouched, `after/` fixed with gpulint's own fix machinery,
   under the user's configuration, as `gpulint fix --apply` would). The
   user's files are never written.
2. Each copy runs in a fresh process under `boot.py` (the only code here that
   imports torch), which times STEPS optimizer steps after WARMUP ones, counts
   host-device syncs, records peak GPU memory and keeps the first losses,
   then stops the script.
3. The report: steps/s, ms/step, speedup, syncs/step, peak memory, whether
   the first losses agree, and the findings that were fixed.

Losses agree when every pair of the first captured losses is within a
relative difference of `LOSS_RTOL` (1e-3): seeds are fixed, and safe fixes
keep the computation, so the only differences left are those of
non-deterministic GPU kernels (atomics in some backward passes). A loss is
the value `backward()` was called on: with a `GradScaler`, the scaled loss.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import click

from gpulint.harness import probe as probe_mod
from gpulint.harness.stats import CONFIDENCE, TOLERANCE, Summary, ratio_interval, scaled_steps, time_verdict

EXIT_OK, EXIT_ERROR = 0, 2
LOSS_RTOL = 1e-3
BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot.py")
SCHEMA = "gpulint-verify/1"
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
def _finding_dict(f, root: str) -> Dict[str, object]:
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
    from gpulint.engine.config import ConfigResolver
    from gpulint.fix.files import FileFix, read_with_encoding, write_fixed
    from gpulint.fix.apply import FixError, fix_source, newline_of
    from gpulint.engine.lint import LintError
    from gpulint.rule import SAFE, UNSAFE
    from gpulint.engine.runner import run

    out = FixOutcome()
    resolver = ConfigResolver(config_path)
    result = run([script, src], resolver, select=select or None, ignore=list(ignore), jobs=1, use_cache=False,
                 preview=preview)
    out.errors.extend((os.path.relpath(p, src) if os.path.isabs(p) else p, why) for p, why in result.all_errors)
    allowed = (SAFE, UNSAFE) if unsafe else (SAFE,)
    copied_set = set(copied)
    src_real = os.path.realpath(src)
    for res in result.results:
        if res.error:
            continue
        rel = os.path.relpath(os.path.realpath(res.path), src_real)
        fixable = any(f.fix is not None and f.fix.applicability in allowed for f in res.findings)
        if not fixable or rel not in copied_set:
            out.remaining.extend(_finding_dict(f, src) for f in res.findings)
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
            out.remaining.extend(_finding_dict(f, src) for f in res.findings)
            continue
        ff = FileFix(copy_path, text, fixed.text, fixed.fixed, fixed.remaining, fixed.held_back_unsafe,
                     encoding, bom, st, fixed_count=fixed.fixed_count)
        if ff.changed:
            why = write_fixed(ff)
            if why is not None:
                out.errors.append((rel, why))
                out.remaining.extend(_finding_dict(f, src) for f in res.findings)
                continue
            out.files_changed.append(rel)
            out.fixed.extend(_finding_dict(f, src) for f in fixed.fixed)
            out.fixed_count += fixed.fixed_count
            out.unsafe_applied |= any(f.fix is not None and f.fix.applicability == UNSAFE for f in fixed.fixed)
        out.remaining.extend(_finding_dict(f, src) for f in fixed.remaining)
        out.held_back_unsafe += fixed.held_back_unsafe
    key = lambda d: (d["path"], d["line"], d["col"], d["code"])  # noqa: E731
    out.fixed.sort(key=key)
    out.remaining.sort(key=key)
    return out


# ------------------------------------------------------------------ running
def _tail(path: str, n: int = STDERR_TAIL) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[-n:]


def _kill_group(proc: subprocess.Popen) -> None:
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
            _kill_group(proc)
            rc = proc.wait()
        finally:
            _kill_group(proc)  # whatever the script left running
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
    side["stderr_tail"] = _tail(err_log)
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


def _timed(runs: List[Dict[str, object]]) -> List[Dict[str, object]]:
    """The runs that reached the end of their timed window."""
    return [r for r in runs if r.get("status") == "done" and r.get("seconds")]


def step_ms(run: Dict[str, object]) -> List[float]:
    """A run's per-step times in ms: the host's time at each step, scaled to
    the window's synchronized total (`stats.scaled_steps`)."""
    return scaled_steps([float(t) for t in run.get("host_step_ms") or ()], float(run["seconds"]) * 1e3,
                        int(run["steps_timed"]))


def _side_metrics(runs: List[Dict[str, object]]) -> Dict[str, object]:
    ok = _timed(runs)
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


# --------------------------------------------------------------- rendering
def _mem(n: Optional[float]) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _num(x: Optional[float], fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def _why_failed(side: Dict[str, object], steps: int, warmup: int) -> str:
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


def render_text(report: Dict[str, object]) -> str:
    cpu = report["device"] == "cpu"
    lab = " (CPU)" if cpu else ""
    lines: List[str] = []
    steps, warmup = report["steps"], report["warmup"]
    lines.append(f"gpulint verify {report['script']}: {warmup} warm-up + {steps} timed optimizer steps per run"
                 f"{', ' + str(report['repeat']) + ' runs per side' if report['repeat'] > 1 else ''}")
    fixes = report["fixes"]
    kind = "safe and unsafe fixes" if report["unsafe_fixes"] else "safe fixes"
    lines.append(f"Fixed {fixes['count']} problem{'s' if fixes['count'] != 1 else ''} ({kind}) "
                 f"in {len(fixes['files_changed'])} file{'s' if len(fixes['files_changed']) != 1 else ''}:")
    for f in fixes["fixed"]:
        lines.append(f"  {f['path']}:{f['line']}:{f['col']}: {f['code']} [{f['fix']}] {f['message']}")
    if fixes["remaining"]:
        lines.append(f"Not fixed ({len(fixes['remaining'])}):")
        for f in fixes["remaining"]:
            lines.append(f"  {f['path']}:{f['line']}:{f['col']}: {f['code']} {f['message']}")
    if fixes["held_back_unsafe"]:
        n = fixes["held_back_unsafe"]
        lines.append(f"({n} unsafe fix{'es' if n != 1 else ''} held back; add --unsafe-fixes to include them.)")
    for path, why in fixes["errors"]:
        lines.append(f"error: {path}: {why}")
    lines.append("")
    b, a, c = report["before"], report["after"], report["comparison"]
    rows: List[Tuple[str, str, str]] = []
    rows.append(("steps/s" + lab, _num(b.get("steps_per_s"), ".2f"), _num(a.get("steps_per_s"), ".2f")))
    rows.append(("ms/step" + lab, _num(b.get("ms_per_step"), ".2f"), _num(a.get("ms_per_step"), ".2f")))
    sp = c.get("speedup")
    iv = c.get("speedup_interval")
    verdict = ""
    if sp is not None:
        verdict = f" [{iv['low']:.2f}-{iv['high']:.2f}, {iv['confidence']:.0%} interval]" if iv else ""
        verdict += f" ({c['time_verdict']})" if c.get("time_verdict") else " (one run per side: no verdict)"
    rows.append(("speedup" + lab, "", (_num(sp, ".2f") + "x" if sp is not None else "n/a") + verdict))
    if cpu:
        rows.append(("syncs/step", "n/a (CPU)", "n/a (CPU)"))
        rows.append(("peak memory", "n/a (CPU)", "n/a (CPU)"))
    else:
        rows.append(("syncs/step", _num(b.get("syncs_per_step"), ".1f"), _num(a.get("syncs_per_step"), ".1f")))
        rows.append(("peak memory", _mem(b.get("peak_memory_bytes")), _mem(a.get("peak_memory_bytes"))))
    losses = c["losses"]
    lv = losses["verdict"]
    if losses.get("max_rel_diff") is not None:
        lv += f" (max rel diff {losses['max_rel_diff']:.1e}, rtol {losses['rtol']:g})"
    if losses.get("reason"):
        lv += f": {losses['reason']}"
    rows.append((f"first {losses['n']} losses" + lab, "", lv))
    w0 = max(len(r[0]) for r in rows + [("metric", "", "")])
    w1 = max(len(r[1]) for r in rows + [("", "before", "")])
    lines.append(f"{'metric':<{w0}}  {'before':>{w1}}  after")
    for name, bv, av in rows:
        lines.append(f"{name:<{w0}}  {bv:>{w1}}  {av}")
    lines.append("")
    for note in report["notes"]:
        lines.append(f"note: {note}")
    lines.append(report["device_line"])
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ command
_PROBED: Dict[str, Dict[str, object]] = {}


def _probe(python: str) -> Dict[str, object]:
    """What the interpreter's torch sees, asked once per process."""
    if python not in _PROBED:
        _PROBED[python] = probe_mod.probe(python)
    return dict(_PROBED[python])


def _env(device: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _fail(msg: str) -> None:
    click.echo(f"gpulint verify: error: {msg}", err=True)
    sys.exit(EXIT_ERROR)


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--steps", type=click.IntRange(min=1), default=50, show_default=True,
              help="Optimizer steps timed per run.")
@click.option("--warmup", type=click.IntRange(min=1), default=5, show_default=True,
              help="Optimizer steps before the timed ones (syncs are counted over steps 2..WARMUP).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cuda: require a GPU. cpu: hide GPUs from the script (CUDA_VISIBLE_DEVICES=''); figures are labelled CPU.")
@click.option("--unsafe-fixes", is_flag=True, help="Apply unsafe fixes too (see each rule's Fix safety).")
@click.option("--select", multiple=True, metavar="CODES", help="Rules to fix (codes, prefixes or ALL); replaces the config's select.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules not to fix.")
@click.option("--config", "config_path", type=click.Path(), default=None, help="Use this config file for every file.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Also write every figure, finding and run detail to this JSON file.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Wall-clock limit in seconds for each run of the script.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs per side, alternating before/after. The verdict needs 2 or more: it comes from a "
                   f"{CONFIDENCE:.0%} bootstrap interval of the speedup over runs and steps.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="Interpreter that runs the script (default: the one running gpulint).")
@click.option("--keep-temp", is_flag=True, help="Keep the temporary copies and logs, and print where they are.")
@click.option("--preview/--no-preview", default=None,
              help="Fix what the preview rules find too (as `gpulint fix --preview`).")
@click.option("--trace", is_flag=True,
              help="Instead of measuring fixes: run the script once and show, per line of your files, the syncs, "
                   "copies to the device and DataLoader waits of the timed steps, next to the findings.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="With --trace: also draw the costliest lines to this image (needs matplotlib).")
def verify(script, args, steps, warmup, device, unsafe_fixes, select, ignore, config_path, json_path, timeout,
           repeat, python, keep_temp, preview=None, trace=False, plot_path=None) -> None:
    """Measure SCRIPT before and after `gpulint fix`: steps/s, syncs/step,
    peak GPU memory, and whether the first losses agree.

    The script's directory is copied twice to a temporary directory; one
    copy is fixed. Both run the same way (`python SCRIPT ARGS...`, seeds
    fixed) until WARMUP + STEPS optimizer steps, and are then stopped. Your
    files are never changed. Pass the script's own arguments after `--`:

        gpulint verify train.py --steps 30 -- --batch-size 64 --epochs 1

    A step is one `optimizer.step()` call: a script that steps several
    optimizers per iteration (a GAN) counts each.

    With --trace, nothing is fixed: the script runs once and the report
    lists, per line of your files, what its timed steps cost at run time,
    marked `confirmed` (a finding's line), `runtime only` (no finding), and
    the findings that never ran (`not reached`).
    """
    from gpulint.engine.console import split_codes, validate_codes

    select_l, ignore_l = split_codes(select), split_codes(ignore)
    validate_codes("--select", select_l)
    validate_codes("--ignore", ignore_l)
    python = python or sys.executable
    try:
        info = _probe(python)
        probe_mod.require_device(info, device)
    except probe_mod.HarnessUnavailable as exc:
        _fail(str(exc))
    device_line = probe_mod.describe(info, device)

    script_abs = os.path.abspath(script)
    src = os.path.dirname(script_abs)
    script_rel = os.path.basename(script_abs)
    o = dict(
        src=src, script_rel=script_rel, script_abs=script_abs, args=list(args), steps=steps, warmup=warmup,
        device=device, repeat=repeat, unsafe_fixes=unsafe_fixes, select_l=select_l, ignore_l=ignore_l,
        config_path=config_path, json_path=json_path, timeout=timeout, python=python, info=info, preview=preview,
        device_line=device_line,
    )
    if plot_path and not trace:
        _fail("--plot draws the lines of a trace: add --trace")
    o["plot_path"] = plot_path
    work = tempfile.mkdtemp(prefix="gpulint-verify-")
    try:
        code = _trace(o, work) if trace else _verify(o, work)
    finally:
        if keep_temp:
            click.echo(f"kept: {work}", err=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


def _verify(o: Dict[str, object], work: str) -> int:
    src, script_rel, script_abs = o["src"], o["script_rel"], o["script_abs"]
    steps, warmup, device, repeat = o["steps"], o["warmup"], o["device"], o["repeat"]
    before_dir = os.path.join(work, "before")
    after_dir = os.path.join(work, "after")
    click.echo(f"gpulint verify: copying {src} and fixing one copy ...", err=True)
    copied = copy_tree(src, before_dir)
    copy_tree(src, after_dir)
    fx = fix_copy(src, script_abs, after_dir, copied, o["unsafe_fixes"], o["select_l"], o["ignore_l"],
                  o["config_path"], o["preview"])
    fixes = {
        "count": fx.fixed_count, "fixed": fx.fixed, "remaining": fx.remaining, "files_changed": fx.files_changed,
        "held_back_unsafe": fx.held_back_unsafe, "errors": [list(e) for e in fx.errors],
        "unsafe_applied": fx.unsafe_applied,
    }
    report: Dict[str, object] = {
        "schema": SCHEMA,
        "script": os.path.relpath(script_abs) if not os.path.relpath(script_abs).startswith("..") else script_abs,
        "args": list(o["args"]),
        "device": device,
        "device_line": o["device_line"],
        "environment": o["info"],
        "steps": steps,
        "warmup": warmup,
        "repeat": repeat,
        "unsafe_fixes": o["unsafe_fixes"],
        "fixes": fixes,
        "notes": [],
    }
    if not fx.fixed:
        for path, why in fx.errors:
            click.echo(f"error: {path}: {why}", err=True)
        n = len(fx.remaining)
        extra = f" ({n} finding{'s' if n != 1 else ''} not fixed" if n else ""
        if n and fx.held_back_unsafe:
            extra += f"; {fx.held_back_unsafe} unsafe fix{'es' if fx.held_back_unsafe != 1 else ''} held back: add --unsafe-fixes"
        extra += ")" if n else ""
        click.echo(f"Nothing to fix in {report['script']} and the files beside it{extra}: nothing to compare.")
        report["status"] = "nothing to fix"
        _write_json(o["json_path"], report)
        return EXIT_ERROR if fx.errors else EXIT_OK

    env = _env(device)
    runs: Dict[str, List[Dict[str, object]]] = {"before": [], "after": []}
    for _ in range(repeat):
        for tag, root in (("before", before_dir), ("after", after_dir)):
            i = len(runs[tag])
            click.echo(f"gpulint verify: run {i + 1}/{repeat}, {tag} the fixes ...", err=True)
            runs[tag].append(run_side(o["python"], root, script_rel, o["args"], steps, warmup, env,
                                      o["timeout"], f"{tag}{i}"))
            if runs[tag][-1].get("status") != "done":
                break
        if any(r.get("status") != "done" for side in runs.values() for r in side):
            break
    report["runs"] = runs
    failed = [(tag, r) for tag, side in runs.items() for r in side if r.get("status") != "done"]
    b_m = _side_metrics(runs["before"]) if runs["before"] else {}
    a_m = _side_metrics(runs["after"]) if runs["after"] else {}
    report["before"], report["after"] = b_m, a_m
    comp: Dict[str, object] = {}
    if b_m.get("ms_per_step") and a_m.get("ms_per_step"):
        interval = ratio_interval([step_ms(r) for r in _timed(runs["before"])],
                                  [step_ms(r) for r in _timed(runs["after"])])
        comp["speedup"] = interval.ratio
        comp["speedup_interval"] = interval.as_dict()
        comp["time_verdict"] = time_verdict(interval)
    first_b = runs["before"][0].get("losses") or [] if runs["before"] else []
    first_a = runs["after"][0].get("losses") or [] if runs["after"] else []
    comp["losses"] = compare_losses(first_b, first_a, fx.unsafe_applied)
    comp["losses"]["before"], comp["losses"]["after"] = list(first_b), list(first_a)
    report["comparison"] = comp
    opts = max(int(b_m.get("optimizers") or 0), int(a_m.get("optimizers") or 0))
    if opts > 1:
        report["notes"].append(
            f"{opts} optimizers stepped: every optimizer.step() counts as a step (a GAN's iteration counts {opts})."
        )
    if device == "cpu":
        report["notes"].append("measured on the CPU: the figures say little about a GPU run.")
    if repeat == 1:
        report["notes"].append("one run per side: the speedup includes run-to-run noise, so no verdict is given "
                               "(use --repeat 3 or more).")
    elif comp.get("time_verdict"):
        report["notes"].append(
            f"faster or slower is said only when the {CONFIDENCE:.0%} interval of the speedup (a bootstrap over "
            f"runs, and over steps within each run) clears 1 by more than {TOLERANCE:.0%}.")

    if failed:
        report["status"] = "error"
        click.echo(render_text(report), nl=False)
        for tag, r in failed:
            click.echo(f"error: {tag} run: {_why_failed(r, steps, warmup)}", err=True)
            tail = r.get("stderr_tail") or []
            if tail and r.get("status") in ("error", "crashed", "timeout"):
                click.echo("last lines of its stderr:", err=True)
                for line in tail:
                    click.echo(f"  | {line}", err=True)
        _write_json(o["json_path"], report)
        return EXIT_ERROR
    report["status"] = "ok"
    click.echo(render_text(report), nl=False)
    _write_json(o["json_path"], report)
    return EXIT_OK


def list_findings(src: str, script: str, select: Optional[Sequence[str]] = None, ignore: Sequence[str] = (),
                  config_path: Optional[str] = None, preview: Optional[bool] = None
                  ) -> Tuple[List[Dict[str, object]], List[Tuple[str, str]]]:
    """The findings of SCRIPT and the files beside it, as `gpulint check SRC
    SCRIPT` finds them (paths relative to SRC), and the files that could not
    be checked."""
    from gpulint.engine.config import ConfigResolver
    from gpulint.engine.runner import run

    result = run([script, src], ConfigResolver(config_path), select=select or None, ignore=list(ignore), jobs=1,
                 use_cache=False, preview=preview)
    errors = [(os.path.relpath(p, src) if os.path.isabs(p) else p, why) for p, why in result.all_errors]
    found = [_finding_dict(f, src) for res in result.results if not res.error for f in res.findings]
    found.sort(key=lambda d: (d["path"], d["line"], d["col"], d["code"]))
    return found, errors


def _trace(o: Dict[str, object], work: str) -> int:
    """`verify --trace`: one traced run of a copy of the script's folder."""
    from gpulint.harness import trace as trace_mod

    src, script_rel = o["src"], o["script_rel"]
    steps, warmup = o["steps"], o["warmup"]
    root = os.path.join(work, "traced")
    click.echo(f"gpulint verify: copying {src} and listing its findings ...", err=True)
    copy_tree(src, root)
    findings, errors = list_findings(src, o["script_abs"], o["select_l"], o["ignore_l"], o["config_path"], o["preview"])
    for path, why in errors:
        click.echo(f"error: {path}: {why}", err=True)
    findings = [f for f in findings if not str(f["path"]).startswith("..")]
    watch, spans = trace_mod.watch_spec(src, findings)
    spec_path = os.path.join(work, "trace-spec.json")
    with open(spec_path, "w", encoding="utf-8") as fh:
        json.dump({"root": root, "watch": watch}, fh)
    env = _env(o["device"])
    env[TRACE_ENV] = spec_path
    click.echo(f"gpulint verify: tracing {warmup} warm-up + {steps} steps ...", err=True)
    side = run_side(o["python"], root, script_rel, o["args"], steps, warmup, env, o["timeout"], "traced")
    trace = side.get("trace") or {}
    traced = max(int(side.get("steps_reached") or 0) - warmup, 0) if side.get("status") != "done" else steps
    report = trace_mod.build_report(trace, findings, spans, traced)
    script = os.path.relpath(o["script_abs"]) if not os.path.relpath(o["script_abs"]).startswith("..") else o["script_abs"]
    report.update(script=script, args=list(o["args"]), device=o["device"], device_line=o["device_line"],
                  environment=o["info"], warmup=warmup, steps_requested=steps, run=side,
                  status="ok" if side.get("status") == "done" else "error")
    if o["device"] == "cpu":
        report["limits"].insert(0, "Run on the CPU: there are no device syncs or copies to see, only data waits.")
    click.echo(trace_mod.render_text(report, script, warmup, o["device_line"]), nl=False)
    _write_json(o["json_path"], report)
    code = EXIT_OK
    if side.get("status") != "done":
        click.echo(f"error: traced run: {_why_failed(side, steps, warmup)}", err=True)
        for line in side.get("stderr_tail") or []:
            click.echo(f"  | {line}", err=True)
        code = EXIT_ERROR
    if o.get("plot_path") and report["rows"]:
        try:
            trace_mod.plot(report, o["plot_path"])
        except ImportError:
            click.echo("gpulint verify: --plot needs matplotlib: pip install 'gpulint[harness]'", err=True)
            code = EXIT_ERROR
    return EXIT_ERROR if errors else code


def _write_json(path: Optional[str], report: Dict[str, object]) -> None:
    if not path:
        return
    from gpulint.fsutil import write_output

    try:
        write_output(path, (json.dumps(report, indent=2, default=str) + "\n").encode("utf-8"))
    except OSError as exc:
        click.echo(f"gpulint verify: error: {path}: cannot write the JSON report: {exc.strerror or exc}", err=True)


if __name__ == "__main__":  # `python -m gpulint.harness.verify`, as `gpulint verify`
    verify(prog_name="gpulint verify")
