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

import os
import shutil
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

import click

from gpulint.harness import each as each_mod
from gpulint.harness import probe as probe_mod
from gpulint.harness import trace as trace_mod
from gpulint.harness.sides import (
    EXIT_ERROR,
    EXIT_OK,
    child_env,
    compare_losses,
    copy_tree,
    fix_copy,
    run_side,
    shown_path,
    side_metrics,
    step_ms,
    timed_runs,
    why_failed,
    write_json,
)
from gpulint.harness.stats import CONFIDENCE, TOLERANCE, ratio_interval, time_verdict

SCHEMA = "gpulint-verify/1"


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
              help="Runs per side, alternating (before, after; after, before; ...). The verdict needs 3 or more: it comes from a "
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
@click.option("--each", is_flag=True,
              help="Measure each rule's fixes alone against the original, and all of them together, and say "
                   "which to keep.")
def verify(script, args, steps, warmup, device, unsafe_fixes, select, ignore, config_path, json_path, timeout,
           repeat, python, keep_temp, preview=None, trace=False, plot_path=None, each=False) -> None:
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

    With --each, each rule's fixes are measured alone against the
    original, and all of them together: the table gives each one's speedup
    with its interval, and the summary says which fixes to keep.
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
    if trace and each:
        _fail("--trace and --each are two different runs: choose one")
    o["plot_path"] = plot_path
    work = tempfile.mkdtemp(prefix="gpulint-verify-")
    try:
        code = trace_mod.run_trace(o, work) if trace else each_mod.run_each(o, work) if each else _verify(o, work)
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
        "script": shown_path(script_abs),
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
        write_json(o["json_path"], report)
        return EXIT_ERROR if fx.errors else EXIT_OK

    env = child_env(device)
    runs: Dict[str, List[Dict[str, object]]] = {"before": [], "after": []}
    for r in range(repeat):
        # before, after; after, before; ...: neither side always runs first
        sides = (("before", before_dir), ("after", after_dir))
        for tag, root in (sides if r % 2 == 0 else sides[::-1]):
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
    b_m = side_metrics(runs["before"]) if runs["before"] else {}
    a_m = side_metrics(runs["after"]) if runs["after"] else {}
    report["before"], report["after"] = b_m, a_m
    comp: Dict[str, object] = {}
    if b_m.get("ms_per_step") and a_m.get("ms_per_step"):
        interval = ratio_interval([step_ms(r) for r in timed_runs(runs["before"])],
                                  [step_ms(r) for r in timed_runs(runs["after"])])
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
            click.echo(f"error: {tag} run: {why_failed(r, steps, warmup)}", err=True)
            tail = r.get("stderr_tail") or []
            if tail and r.get("status") in ("error", "crashed", "timeout"):
                click.echo("last lines of its stderr:", err=True)
                for line in tail:
                    click.echo(f"  | {line}", err=True)
        write_json(o["json_path"], report)
        return EXIT_ERROR
    report["status"] = "ok"
    click.echo(render_text(report), nl=False)
    write_json(o["json_path"], report)
    return EXIT_OK


if __name__ == "__main__":  # `python -m gpulint.harness.verify`, as `gpulint verify`
    verify(prog_name="gpulint verify")
