"""`gpulint verify --each SCRIPT`: what each fix buys on the user's own
script, alone, and what all of them buy together.

A fix here is the fixes of one rule (every finding of that code that
`gpulint fix` would fix). The script's folder is copied once untouched
(`before`), once per rule with only that rule's fixes applied, and once with
all of them (when there are two or more rules). Each copy runs `--repeat`
times under `boot.py`, in turn (before, each rule, all), each round starting
one copy further on, so a drift of the machine touches every copy alike and
no copy always runs first. Each copy's speedup over
`before` comes with its bootstrap interval and verdict (`stats`), and its
first losses are compared with `before`'s. The summary says which fixes to
keep (faster), which buy nothing measurable, and which slow the script. A
rule whose fixes are all in files the script never imports (another
script beside it) is said to be not run, whatever its timing.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

import click

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
from gpulint.harness.stats import CONFIDENCE, FASTER, NO_GAIN, SLOWER, TOLERANCE, ratio_interval, time_verdict

SCHEMA = "gpulint-verify-each/1"
BEFORE, ALL = "before", "all"


def _variant_report(tag: str, runs: List[dict], before: List[dict], fixed: List[dict], unsafe: bool) -> dict:
    """One copy's figures against `before`'s."""
    out: Dict[str, object] = {"fix": tag, "fixed": fixed, "count": len(fixed), "metrics": side_metrics(runs)}
    b, a = timed_runs(before), timed_runs(runs)
    if b and a:
        interval = ratio_interval([step_ms(r) for r in b], [step_ms(r) for r in a])
        out["speedup"] = interval.ratio
        out["speedup_interval"] = interval.as_dict()
        out["time_verdict"] = time_verdict(interval)
    first_b = (before[0].get("losses") or []) if before else []
    first_a = (runs[0].get("losses") or []) if runs else []
    out["losses"] = compare_losses(first_b, first_a, unsafe)
    return out


NOT_RUN = "not run"  # a copy whose fixes are all in files the script never imported


def summary(variants: List[dict]) -> Dict[str, List[str]]:
    """The rules whose fixes to keep (faster alone), those that buy nothing
    measurable, those that slow the script, those whose fixes the script
    never runs (in files it does not import), and those not judged (fewer
    than three runs, or a run that failed)."""
    out: Dict[str, List[str]] = {"keep": [], "no_gain": [], "slower": [], "not_run": [], "not_judged": []}
    for v in variants:
        if v["fix"] == ALL:
            continue
        key = {FASTER: "keep", NO_GAIN: "no_gain", SLOWER: "slower", NOT_RUN: "not_run"}.get(
            v.get("time_verdict"), "not_judged")
        out[key].append(v["fix"])
    return out


def mark_not_run(variants: List[dict], before: List[dict]) -> None:
    """A copy whose fixes are all in files of the folder that no run of
    `before` imported runs the same code as `before`: whatever its timing
    says is noise, so its verdict is `NOT_RUN`."""
    if not before or any("imported" not in r for r in before):
        return  # (results of a boot.py that did not say)
    imported = {p for r in before for p in r["imported"]}
    for v in variants:
        fixed = v.get("fixed") or []
        if v["fix"] != ALL and fixed and not {str(f["path"]).replace(os.sep, "/") for f in fixed} & imported:
            v["time_verdict"] = NOT_RUN


def render_text(report: dict) -> str:
    lines = [f"gpulint verify --each {report['script']}: {report['warmup']} warm-up + {report['steps']} timed "
             f"optimizer steps per run, {report['repeat']} run{'s' if report['repeat'] != 1 else ''} per copy", ""]
    lab = " (CPU)" if report["device"] == "cpu" else ""
    rows = [("fix", "fixes", "ms/step" + lab, f"speedup [{CONFIDENCE:.0%} interval]", "verdict", "first losses")]
    before = report["before"]
    rows.append(("(none: before)", "-", _ms(before.get("ms_per_step")), "", "", ""))
    for v in report["variants"]:
        iv = v.get("speedup_interval")
        speed = f"{v['speedup']:.2f}x [{iv['low']:.2f}-{iv['high']:.2f}]" if v.get("speedup") and iv else "n/a"
        rows.append((v["fix"] if v["fix"] != ALL else "all together", str(v["count"]),
                     _ms(v["metrics"].get("ms_per_step")), speed, v.get("time_verdict") or "no verdict",
                     v["losses"]["verdict"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    s = report["summary"]
    lines.append("")
    lines.append(f"Keep: {', '.join(s['keep'])} (faster alone)." if s["keep"] else
                 "No fix is faster alone on this script.")
    if s["no_gain"]:
        lines.append("No measurable gain on this script: " + ", ".join(s["no_gain"]) + ".")
    if s["slower"]:
        lines.append("Slower on this script: " + ", ".join(s["slower"]) + ": leave these unfixed here.")
    if s["not_run"]:
        lines.append("Not run by this script (their fixes are in files it never imports): "
                     + ", ".join(s["not_run"]) + ".")
    if s["not_judged"]:
        lines.append("Not judged (fewer than three runs, or a run failed): " + ", ".join(s["not_judged"]) + ".")
    lines.append("")
    lines.append(f"note: faster or slower is said only when the {CONFIDENCE:.0%} interval of the speedup clears 1 "
                 f"by more than {TOLERANCE:.0%}; a fix measured alone may buy more or less next to the others.")
    if report["device"] == "cpu":
        lines.append("note: measured on the CPU: the figures say little about a GPU run.")
    lines.append(report["device_line"])
    return "\n".join(lines) + "\n"


def _ms(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def run_each(o: Dict[str, object], work: str) -> int:
    """`verify --each`, on the options `verify` parsed."""
    src, script_rel, script_abs = o["src"], o["script_rel"], o["script_abs"]
    steps, warmup, repeat, unsafe = o["steps"], o["warmup"], o["repeat"], o["unsafe_fixes"]
    click.echo(f"gpulint verify: copying {src} and fixing the copies ...", err=True)
    before_dir = os.path.join(work, BEFORE)
    copied = copy_tree(src, before_dir)
    all_dir = os.path.join(work, ALL)
    copy_tree(src, all_dir)
    fx_all = fix_copy(src, script_abs, all_dir, copied, unsafe, o["select_l"], o["ignore_l"], o["config_path"],
                      o["preview"])
    script = shown_path(script_abs)
    report: Dict[str, object] = {
        "schema": SCHEMA, "script": script, "args": list(o["args"]), "device": o["device"],
        "device_line": o["device_line"], "environment": o["info"], "steps": steps, "warmup": warmup,
        "repeat": repeat, "unsafe_fixes": unsafe, "errors": [list(e) for e in fx_all.errors],
    }
    for path, why in fx_all.errors:
        click.echo(f"error: {path}: {why}", err=True)
    if not fx_all.fixed:
        click.echo(f"Nothing to fix in {script} and the files beside it: nothing to compare.")
        report["status"] = "nothing to fix"
        write_json(o["json_path"], report)
        return EXIT_ERROR if fx_all.errors else EXIT_OK
    codes = sorted({str(f["code"]) for f in fx_all.fixed})
    copies = [(BEFORE, before_dir, [])]
    for code in codes:
        d = os.path.join(work, f"only-{code}")
        copy_tree(src, d)
        fx = fix_copy(src, script_abs, d, copied, unsafe, [code], o["ignore_l"], o["config_path"], o["preview"])
        copies.append((code, d, fx.fixed))
    if len(codes) > 1:
        copies.append((ALL, all_dir, fx_all.fixed))
    env = child_env(o["device"])
    runs: Dict[str, List[dict]] = {tag: [] for tag, _, _ in copies}
    failed = None
    for i in range(repeat):
        # each round starts one copy further on, so that no copy always runs first (after
        # the linting, or after the round before) or always last
        k = i % len(copies)
        for tag, root, _ in copies[k:] + copies[:k]:
            label = "with no fix" if tag == BEFORE else "with all the fixes" if tag == ALL else f"with {tag}'s fixes"
            click.echo(f"gpulint verify: run {i + 1}/{repeat}, {label} ...", err=True)
            run = run_side(o["python"], root, script_rel, o["args"], steps, warmup, env, o["timeout"], f"{tag}{i}")
            runs[tag].append(run)
            if run.get("status") != "done":
                failed = (tag, run)
                break
        if failed:
            break
    report["before"] = side_metrics(runs[BEFORE]) if runs[BEFORE] else {}
    report["variants"] = [_variant_report(tag, runs[tag], runs[BEFORE], fixed, unsafe)
                          for tag, _, fixed in copies[1:] if runs[tag]]
    mark_not_run(report["variants"], runs[BEFORE])
    report["summary"] = summary(report["variants"])
    report["runs"] = runs
    report["status"] = "error" if failed else "ok"
    click.echo(render_text(report), nl=False)
    write_json(o["json_path"], report)
    if failed:
        click.echo(f"error: {failed[0]} run: {why_failed(failed[1], steps, warmup)}", err=True)
        for line in failed[1].get("stderr_tail") or []:
            click.echo(f"  | {line}", err=True)
        return EXIT_ERROR
    return EXIT_ERROR if fx_all.errors else EXIT_OK
