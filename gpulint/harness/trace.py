"""`gpulint verify --trace SCRIPT`: which lines of the user's own script
cost time at run time, next to what `gpulint check` says of them.

The script runs once, on a copy, under `boot.py` as `verify` runs it (the
same step counting and the same stop). Over the timed steps, `boot.Tracer`
records, per line of the user's files (the innermost frame of the stack in
the script's folder):

- host-device syncs: sync debug mode's warnings, and explicit
  `torch.cuda.synchronize()`, `Event.synchronize()` and
  `Stream.synchronize()` calls, with the host time of the call that synced
  (which includes its wait for the device);
- copies to the device of host data: `.to()`, `.cuda()`, `.copy_()`,
  `torch.tensor(..., device=)` and friends from a CPU tensor, Python or NumPy
  data: bytes, whether the source was pageable memory, host time;
- the time spent waiting for the next batch of a DataLoader;
- which lines of the static findings ran at all.

This module joins those rows with the findings (`build_report`): a row on
the statement of a finding is `confirmed`, a row elsewhere is `runtime
only`, a finding no traced step ran is `not reached`, and one in a file of
the folder that the script never imported is `not imported`. It renders the
table, the JSON (schema `gpulint-trace/1`, docs/verify-trace.schema.json)
and a plot. It never imports torch.

`run_trace` is the command (`verify --trace`), on the options `verify` parsed.
"""

from __future__ import annotations

import ast
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

import click

from gpulint.harness.sides import (
    EXIT_ERROR,
    EXIT_OK,
    TRACE_ENV,
    child_env,
    copy_tree,
    list_findings,
    run_side,
    shown_path,
    why_failed,
    write_json,
)

SCHEMA = "gpulint-trace/1"
CONFIRMED, RUNTIME_ONLY, NOT_REACHED, NO_EVENT = "confirmed", "runtime only", "not reached", "ran, no event"
NOT_IMPORTED = "not imported"  # a finding in a file of the folder that this script never loads
KINDS = ("sync", "copy", "data")

LIMITS = (
    "Sync debug mode does not see every sync: collectives (NCCL) and copies "
    "with non_blocking=True from pageable memory wait without a warning.",
    "Times are host times under tracing, which slows the host: they rank the "
    "lines; `gpulint verify` without --trace measures what a fix buys.",
    "A copy is seen where a torch function or Tensor method makes it from "
    "Python code; copies inside C++ (a DataLoader's pin_memory thread) are not.",
)


def statement_lines(text: str, lines: Sequence[int]) -> Dict[int, Tuple[int, int]]:
    """line -> (first, last) line of the statement at that line: a simple
    statement whole, a compound one's header only (`for x in loader:`, an
    `if` test). A line on no statement is its own range."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {ln: (ln, ln) for ln in lines}
    spans: List[Tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            last = node.end_lineno or node.lineno
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                last = max(node.lineno, body[0].lineno - 1)
                decorators = getattr(node, "decorator_list", ())
                if decorators:
                    last = node.lineno
            spans.append((node.lineno, last))
    out = {}
    for ln in lines:
        best = None
        for lo, hi in spans:
            if lo <= ln <= hi and (best is None or hi - lo < best[1] - best[0]):
                best = (lo, hi)
        out[ln] = best or (ln, ln)
    return out


def _assigned_names(stmt: ast.stmt) -> List[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, (ast.AnnAssign, ast.AugAssign)) else []
    out = []
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                out.append(n.id)
    return out


def uses_of_values(text: str, lines: Sequence[int]) -> Dict[int, List[Tuple[int, int]]]:
    """line -> the (first, last) lines of the later simple statements of the
    same block that read a name the statement at that line assigns, up to
    the name's next assignment: where the value a finding's statement makes
    is used (`mask = torch.ones(T, T)` is flagged, and the copy that costs
    is `mask.to(x.device)` on the next line)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    wanted = set(lines)
    out: Dict[int, List[Tuple[int, int]]] = {}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if not isinstance(stmt, ast.stmt) or not (
                    set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)) & wanted):
                continue
            names = set(_assigned_names(stmt))
            uses: List[Tuple[int, int]] = []
            for later in body[i + 1:]:
                if not names:
                    break
                if not isinstance(later, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)):
                    break  # (a compound statement: its body is another block)
                reads = {n.id for n in ast.walk(later) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                if reads & names:
                    uses.append((later.lineno, later.end_lineno or later.lineno))
                names -= set(_assigned_names(later))
            for ln in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                if ln in wanted and uses:
                    out[ln] = uses
    return out


Spans = Dict[Tuple[str, int], Tuple[int, int]]
Uses = Dict[Tuple[str, int], List[Tuple[int, int]]]


def watch_spec(root: str, findings: Sequence[dict]) -> Tuple[Dict[str, List[int]], Spans, Uses]:
    """(relative path -> the lines to watch, (path, finding line) -> its
    statement's lines, (path, finding line) -> the statements that use the
    value it makes, `uses_of_values`), for the findings in files under `root`."""
    by_path: Dict[str, set] = {}
    for f in findings:
        by_path.setdefault(f["path"], set()).add(int(f["line"]))
    watch: Dict[str, List[int]] = {}
    spans: Spans = {}
    uses: Uses = {}
    for path, lines in by_path.items():
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        for ln, span in statement_lines(text, sorted(lines)).items():
            spans[(path, ln)] = span
        for ln, later in uses_of_values(text, sorted(lines)).items():
            uses[(path, ln)] = later
        watch[path] = sorted({n for (p, _), (lo, hi) in spans.items() if p == path for n in range(lo, hi + 1)})
    return watch, spans, uses


def build_report(trace: dict, findings: Sequence[dict], spans: Spans, steps: int, uses: Optional[Uses] = None) -> dict:
    """The rows of the trace, one per line, joined with the findings: on a
    finding's statement, or else on a statement that uses the value the
    finding's statement makes (`uses`; the row then says `via` which line)."""
    per_line: Dict[Tuple[str, int], dict] = {}
    for r in trace.get("rows", ()):
        key = (r["path"], int(r["line"]))
        row = per_line.setdefault(key, {"path": key[0], "line": key[1], "syncs": 0, "sync_s": 0.0, "copies": 0,
                                        "copy_bytes": 0, "pageable_copies": 0, "copy_s": 0.0, "batches": 0,
                                        "data_s": 0.0})
        if r["kind"] == "sync":
            row["syncs"] += r["count"]
            row["sync_s"] += r["seconds"]
        elif r["kind"] == "copy":
            row["copies"] += r["count"]
            row["copy_bytes"] += r["bytes"]
            row["pageable_copies"] += r["pageable"]
            row["copy_s"] += r["seconds"]
        elif r["kind"] == "data":
            row["batches"] += r["count"]
            row["data_s"] += r["seconds"]
    reached = {(p, int(ln)) for p, ln in trace.get("reached", ())}
    n = max(int(steps), 1)
    rows = []
    matched = set()
    for key, row in per_line.items():
        codes = []
        for i, f in enumerate(findings):
            lo, hi = spans.get((f["path"], int(f["line"])), (int(f["line"]), int(f["line"])))
            if f["path"] == key[0] and lo <= key[1] <= hi:
                codes.append(f["code"])
                matched.add(i)
        via = []
        if not codes:
            for i, f in enumerate(findings):
                if f["path"] == key[0] and any(lo <= key[1] <= hi for lo, hi in (uses or {}).get(
                        (f["path"], int(f["line"])), ())):
                    codes.append(f["code"])
                    via.append(int(f["line"]))
                    matched.add(i)
        seconds = row["sync_s"] + row["copy_s"] + row["data_s"]
        row.update(
            ms_per_step=seconds * 1e3 / n, syncs_per_step=row["syncs"] / n, copy_bytes_per_step=row["copy_bytes"] / n,
            mark=CONFIRMED if codes else RUNTIME_ONLY, codes=sorted(set(codes)),
        )
        if via:
            row["via"] = sorted(set(via))
        rows.append(row)
    rows.sort(key=lambda r: (-r["ms_per_step"], -r["syncs_per_step"], r["path"], r["line"]))
    imported = trace.get("imported")  # (a trace from before it was recorded has none)
    unmatched = []
    for i, f in enumerate(findings):
        if i in matched:
            continue
        lo, hi = spans.get((f["path"], int(f["line"])), (int(f["line"]), int(f["line"])))
        ran = any((f["path"], ln) in reached for ln in range(lo, hi + 1))
        mark = NO_EVENT if ran else NOT_REACHED if imported is None or f["path"] in imported else NOT_IMPORTED
        unmatched.append(dict(f, mark=mark))
    return {"schema": SCHEMA, "steps": steps, "rows": rows, "findings": unmatched, "limits": list(LIMITS)}


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def describe(row: dict, steps: int) -> str:
    """What happened on the line, per step."""
    n = max(steps, 1)
    parts = []
    if row["syncs"]:
        parts.append(f"{row['syncs'] / n:.3g} sync{'s' if row['syncs'] != n else ''}/step"
                     + (f", {row['sync_s'] * 1e3 / n:.3g} ms" if row["sync_s"] else ""))
    if row["copies"]:
        src = "pageable" if row["pageable_copies"] == row["copies"] else (
            "pinned" if not row["pageable_copies"] else "pageable and pinned")
        parts.append(f"{row['copies'] / n:.3g} cop{'ies' if row['copies'] != n else 'y'}/step to the device, "
                     f"{_bytes(row['copy_bytes'] / n)} from {src} memory, {row['copy_s'] * 1e3 / n:.3g} ms")
    if row["batches"]:
        parts.append(f"waiting for data {row['data_s'] * 1e3 / n:.3g} ms")
    return "; ".join(parts)


def render_text(report: dict, script: str, warmup: int, device_line: str) -> str:
    steps = report["steps"]
    lines = [f"gpulint verify --trace {script}: {warmup} warm-up + {steps} traced optimizer steps", ""]
    rows = report["rows"]
    if rows:
        table = [("ms/step", "where", "what", "mark")]
        for r in rows:
            mark = r["mark"] + (" " + ", ".join(r["codes"]) if r["codes"] else "") + (
                f" (its value, made on line {', '.join(map(str, r['via']))})" if r.get("via") else "")
            table.append((f"{r['ms_per_step']:.3g}", f"{r['path']}:{r['line']}", describe(r, steps), mark))
        widths = [max(len(t[i]) for t in table) for i in range(3)]
        for t in table:
            lines.append(f"{t[0]:>{widths[0]}}  {t[1]:<{widths[1]}}  {t[2]:<{widths[2]}}  {t[3]}".rstrip())
    else:
        lines.append("No sync, copy to the device or DataLoader wait was seen on a line of your files.")
    for mark, title in ((NOT_REACHED, "Findings no traced step ran (not reached)"),
                        (NO_EVENT, "Findings that ran with no sync, copy or data wait on their line")):
        found = [f for f in report["findings"] if f["mark"] == mark]
        if found:
            lines.append("")
            lines.append(f"{title}:")
            for f in found:
                lines.append(f"  {f['path']}:{f['line']}:{f['col']}: {f['code']} {f['message']}")
    elsewhere: Dict[str, int] = {}
    for f in report["findings"]:
        if f["mark"] == NOT_IMPORTED:
            elsewhere[f["path"]] = elsewhere.get(f["path"], 0) + 1
    if elsewhere:
        lines.append("")
        lines.append(f"Findings in files of the folder that the script never imported ({sum(elsewhere.values())}): "
                     + ", ".join(f"{p} ({n})" for p, n in sorted(elsewhere.items())))
    lines.append("")
    for note in report["limits"]:
        lines.append(f"note: {note}")
    lines.append(device_line)
    return "\n".join(lines) + "\n"


def plot(report: dict, path: str, top: int = 20) -> None:
    """A bar per line (the costliest `top`), ms per step, coloured by mark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"][:top]
    fig, ax = plt.subplots(figsize=(9, 0.4 * max(len(rows), 1) + 1.6))
    y = list(range(len(rows)))[::-1]
    colours = ["tab:red" if r["mark"] == CONFIRMED else "tab:orange" for r in rows]
    ax.barh(y, [r["ms_per_step"] for r in rows], color=colours)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r['path']}:{r['line']}" + (f" {', '.join(r['codes'])}" if r["codes"] else "")
                        for r in rows], fontsize=8)
    ax.set_xlabel("host ms per step under tracing (red: confirmed finding, orange: runtime only)")
    ax.set_title(f"gpulint verify --trace: {report['steps']} steps", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_trace(o: Dict[str, object], work: str) -> int:
    """`verify --trace`: one traced run of a copy of the script's folder."""
    src, script_rel = o["src"], o["script_rel"]
    steps, warmup = o["steps"], o["warmup"]
    root = os.path.join(work, "traced")
    click.echo(f"gpulint verify: copying {src} and listing its findings ...", err=True)
    copy_tree(src, root)
    findings, errors = list_findings(src, o["script_abs"], o["select_l"], o["ignore_l"], o["config_path"], o["preview"])
    for path, why in errors:
        click.echo(f"error: {path}: {why}", err=True)
    findings = [f for f in findings if not str(f["path"]).startswith("..")]
    watch, spans, uses = watch_spec(src, findings)
    spec_path = os.path.join(work, "trace-spec.json")
    with open(spec_path, "w", encoding="utf-8") as fh:
        json.dump({"root": root, "watch": watch}, fh)
    env = child_env(o["device"])
    env[TRACE_ENV] = spec_path
    click.echo(f"gpulint verify: tracing {warmup} warm-up + {steps} steps ...", err=True)
    side = run_side(o["python"], root, script_rel, o["args"], steps, warmup, env, o["timeout"], "traced")
    trace = side.get("trace") or {}
    traced = max(int(side.get("steps_reached") or 0) - warmup, 0) if side.get("status") != "done" else steps
    report = build_report(trace, findings, spans, traced, uses)
    script = shown_path(o["script_abs"])
    report.update(script=script, args=list(o["args"]), device=o["device"], device_line=o["device_line"],
                  environment=o["info"], warmup=warmup, steps_requested=steps, run=side,
                  status="ok" if side.get("status") == "done" else "error")
    if o["device"] == "cpu":
        report["limits"].insert(0, "Run on the CPU: there are no device syncs or copies to see, only data waits.")
    click.echo(render_text(report, script, warmup, o["device_line"]), nl=False)
    write_json(o["json_path"], report)
    code = EXIT_OK
    if side.get("status") != "done":
        click.echo(f"error: traced run: {why_failed(side, steps, warmup)}", err=True)
        for line in side.get("stderr_tail") or []:
            click.echo(f"  | {line}", err=True)
        code = EXIT_ERROR
    if o.get("plot_path") and report["rows"]:
        try:
            plot(report, o["plot_path"])
        except ImportError:
            click.echo("gpulint verify: --plot needs matplotlib: pip install 'gpulint[harness]'", err=True)
            code = EXIT_ERROR
    return EXIT_ERROR if errors else code
