"""Rule documentation, rendered from the rule class itself: its docstring gives
What it does / Why is this bad? / Fix safety / References, and its first
example gives Example / Use instead, so docs cannot drift from the tests."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Optional

from gpulint.harness.stats import fmt_mib, fmt_ms as _ms
from gpulint.rule import NONE, SAFE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
# the generated pages: one per rule, named after the rule (as Ruff's are), and the index
RULES_DIR = os.path.join(ROOT, "docs", "rules")
INDEX_PAGE = "index.md"
REGENERATE = "python3 -m gpulint.frontends.docs"
# what `gpulint bench --json` recorded on a real GPU (see docs/speedups.md)
SPEEDUPS_JSON = os.path.join(ROOT, "docs", "speedups.json")
# each rule's precision at first sight on unseen code: the evidence behind its
# status (`python3 bench/first_sight.py --write docs/first-sight.json`)
FIRST_SIGHT_JSON = os.path.join(ROOT, "docs", "first-sight.json")


def page_name(cls) -> str:
    """The rule's page under docs/rules: its kebab-case name, e.g. host-sync-in-loop.md."""
    return f"{cls.name}.md"


def load_speedups(path: str = SPEEDUPS_JSON) -> Optional[dict]:
    """The recorded bench run, or None where there is none (an installed wheel)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None




@lru_cache(maxsize=None)
def load_first_sight(path: str = FIRST_SIGHT_JSON) -> Optional[dict]:
    """The per-rule first-sight evidence, or None where there is none (an
    installed wheel). Read once: every rule's page asks (SARIF renders all)."""
    return load_speedups(path)


def status_text(cls, evidence: Optional[dict]) -> str:
    """The rule's status and the figures behind it."""
    e = (evidence or {}).get("rules", {}).get(cls.code)
    if e and e["judged"]:
        pinned = f"; {e['pinned_out']} more were in projects pinned to a torch without the fix" if e["pinned_out"] else ""
        figures = (f"right {e['right']} times in {e['judged']} findings judged at first sight "
                   f"({100 * e['right'] / e['judged']:.1f}%), over {len(e['corpora'])} "
                   f"{'corpora' if len(e['corpora']) != 1 else 'corpus'} of code it had never seen{pinned}")
    elif evidence is None:  # an installed wheel has no docs/
        figures = "its figures are in docs/first-sight.json of the source repository"
    else:
        figures = "no finding of it has been judged at first sight on unseen code yet"
    if not cls.preview:
        return f"Status: stable: {figures}."
    runs = (f"runs with `--preview`, or `--select {cls.code}`" if cls.default
            else f"off by default even with `--preview`: runs with `--select {cls.code}`")
    return (f"Status: preview ({runs}): {figures}. Stable needs 95% "
            "over 30 or more findings from two or more corpora ([accuracy.md](../accuracy.md)).")


def measured_text(rec: dict, where: str) -> str:
    """One paragraph: what the harness measured for this rule, and where."""
    if "error" in rec:
        return f"Not measured: the workload failed on {where} ({rec['error'].splitlines()[0]})."
    b, g = rec["bad"]["seconds_per_step"], rec["good"]["seconds_per_step"]
    text = (
        f"On {where}, `gpulint bench {rec['code']}`: bad {_ms(b['median'])} ms per step "
        f"[{_ms(b['min'])}-{_ms(b['max'])}], good {_ms(g['median'])} ms [{_ms(g['min'])}-{_ms(g['max'])}] "
        f"(medians and min-max of {rec['repetitions']} interleaved repetitions of {rec['steps_per_repetition']} "
        f"steps): **{rec['verdict']}**."
    )
    iv = rec.get("time_interval")
    if iv:
        text += (f" The ratio, {rec['time_ratio']:.2f}x, has a {iv['confidence']:.0%} bootstrap interval of "
                 f"{iv['low']:.2f}-{iv['high']:.2f}x.")
    bp, gp = rec["bad"].get("peak_bytes"), rec["good"].get("peak_bytes")
    if bp and gp:
        text += f" Peak memory {bp / 2**20:,.0f} MiB -> {gp / 2**20:,.0f} MiB."
    if rec.get("note"):
        text += f" Workload: {rec['note']}"
    return text


def fix_label(cls) -> str:
    return {SAFE: "safe fix", "unsafe": "unsafe fix (needs --unsafe-fixes)", NONE: "no fix"}[cls.fix_safety]


def render_markdown(cls, speedups: Optional[dict] = None, first_sight: Optional[dict] = None) -> str:
    sec = cls.doc_sections()
    out = [f"# {cls.name} ({cls.code})", ""]
    out.append(status_text(cls, first_sight if first_sight is not None else load_first_sight()))
    out.append("")
    tier = " with `--preview`" if cls.preview else ""
    out.append(f"Default: {'on' + tier if cls.default else 'off (turn it on with `--select ' + cls.code + '`)'}."
               f" Fix: {fix_label(cls)}.")
    out.append("")
    out += ["## What it does", sec.get("What it does", ""), ""]
    out += ["## Why is this bad?", sec.get("Why is this bad?", ""), ""]
    for name in sec:
        if name not in ("What it does", "Why is this bad?", "Fix safety", "References", "Example", "Use instead"):
            out += [f"## {name}", sec[name], ""]
    if cls.examples:
        ex = cls.examples[0]
        out += ["## Example", "```python", ex.bad_code.rstrip(), "```", ""]
        out += ["## Use instead", "```python", ex.good_code.rstrip(), "```", ""]
    out += ["## Fix safety", sec.get("Fix safety", ""), ""]
    rec = _record(cls, speedups)
    if rec is not None:
        out += ["## Measured", measured_text(rec, rec.get("where", speedups["where"])), ""]
        multi = load_speedups(MULTIGPU_JSON) if cls.code == "GPU001" else None
        if multi is not None and multigpu_summary(multi):
            out += [multigpu_summary(multi), ""]
    out += ["## References", sec.get("References", ""), ""]
    return "\n".join(out).rstrip() + "\n"


def _interval(rec: dict) -> str:
    """` [low-high]` of a record's ratio (none in records made before the bootstrap verdicts)."""
    iv = rec.get("time_interval")
    return f" [{iv['low']:.2f}-{iv['high']:.2f}]" if iv else ""


def render_bench_table(report: dict) -> str:
    """The recorded `gpulint bench` run as a markdown table."""
    alone = [r for r in report["rules"] if r.get("where", report["where"]) != report["where"]]
    lines = [
        f"Measured on {report['where']}, {report['repetitions']} interleaved repetitions per side"
        + "".join(f"; {r['code']} re-recorded alone (`gpulint bench {r['code']}`) on {r['where']}" for r in alone)
        + ".",
        "",
        "| rule | bad ms/step [min-max] | good ms/step [min-max] | bad/good [95% interval] | peak memory bad -> good "
        "| verdict | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rules"]:
        if "error" in r:
            lines.append(f"| {r['code']} {r['name']} | | | | | failed: {r['error'].splitlines()[0]} | |")
            continue
        b, g = r["bad"]["seconds_per_step"], r["good"]["seconds_per_step"]
        bp, gp = r["bad"].get("peak_bytes"), r["good"].get("peak_bytes")
        mem = f"{bp / 2**20:,.0f} -> {gp / 2**20:,.0f} MiB" if bp and gp else "n/a"
        chk = r["check"]
        check = "not compared" if chk["kind"] == "none" else f"{chk['kind']} rtol={chk['rtol']:g}: {'ok' if chk.get('ok') else 'FAILED'}"
        lines.append(
            f"| [{r['code']}](rules/{r['name']}.md) {r['name']} | {_ms(b['median'])} [{_ms(b['min'])}-{_ms(b['max'])}] "
            f"| {_ms(g['median'])} [{_ms(g['min'])}-{_ms(g['max'])}] | {r['time_ratio']:.2f}x{_interval(r)} | {mem} "
            f"| **{r['verdict']}** | {check} |"
        )
    return "\n".join(lines) + "\n"


def render_verify_table(reports: dict) -> str:
    """{name: recorded `gpulint verify --json` report} as a markdown table."""
    lines = [
        "| script | fixes | ms/step before -> after | speedup | syncs/step before -> after | peak memory before -> after | first losses |",
        "|---|---|---|---|---|---|---|",
    ]

    for name, rep in sorted(reports.items()):
        b, a, c = rep["before"], rep["after"], rep["comparison"]
        # the script's own fixes: the others in its folder are fixed too, but not run
        own = [f for f in rep["fixes"]["fixed"] if f["path"] == rep["script"]]
        kinds = "safe and unsafe" if rep.get("unsafe_fixes") else "safe"
        codes = ", ".join(sorted({f["code"] for f in own}))
        verdict = c.get("time_verdict")
        iv = c.get("speedup_interval")
        speed = f"{c['speedup']:.2f}x" + (f" [{iv['low']:.2f}-{iv['high']:.2f}]" if iv else "")
        speed += "" if verdict == "faster" else f" ({verdict or 'one run: no verdict'})"
        losses = c["losses"]
        agree = losses["verdict"] + (f" (max rel diff {losses['max_rel_diff']:.1e})" if losses.get("max_rel_diff") is not None else "")
        lines.append(
            f"| `{rep['script']}` {' '.join(rep.get('args') or [])} | {len(own)} {kinds} ({codes}) "
            f"| {b['ms_per_step']:.1f} -> {a['ms_per_step']:.1f} | {speed} "
            f"| {b['syncs_per_step']:g} -> {a['syncs_per_step']:g} | {fmt_mib(b['peak_memory_bytes'])} -> {fmt_mib(a['peak_memory_bytes'])} "
            f"| {agree} |"
        )
    return "\n".join(lines) + "\n"


SPEEDUPS_PAGE = os.path.join(ROOT, "docs", "speedups.md")
# what `gpulint bench --gpus ... --json` recorded (GPU001's multi-GPU study)
MULTIGPU_JSON = os.path.join(ROOT, "docs", "multigpu.json")


def render_multigpu(report: dict) -> str:
    from gpulint.harness.multigpu import render_table

    return f"Measured on {report['where']}, {report.get('visible_gpus', '?')} GPUs visible.\n\n" + render_table(report)


def multigpu_summary(report: dict) -> str:
    """One paragraph for GPU001's page: the measured DDP gain and scaling efficiency."""
    ran = [r for r in report["rows"] if "skipped" not in r and r["gpus"] > 1]  # one GPU is no data parallelism
    if not ran:
        return ""
    parts = [
        f"{r['gpus']} GPUs: DDP {r['ddp_over_dp']:.2f}x DataParallel's throughput, scaling efficiency "
        f"{r['scaling_efficiency_ddp']:.0%} (DDP) against {r['scaling_efficiency_dp']:.0%} (DataParallel)"
        for r in ran
    ]
    skipped = [str(r["gpus"]) for r in report["rows"] if "skipped" in r]
    text = (f"On several GPUs (`gpulint bench --gpus`, {report['where']}, global batch {report['global_batch']}): "
            + "; ".join(parts) + ".")
    if skipped:
        text += f" Not run for {', '.join(skipped)} GPUs: not lent."
    return text + " See docs/speedups.md."
VERIFY_DIR = os.path.join(ROOT, "docs", "verify")


def _between(doc: str, name: str, text: str) -> str:
    start, end = f"<!-- {name}:start -->\n", f"<!-- {name}:end -->"
    if start not in doc or end not in doc:
        return doc
    return doc[: doc.index(start) + len(start)] + text + doc[doc.index(end):]


def speedups_page() -> Optional[str]:
    """docs/speedups.md with its generated tables brought up to date, or None."""
    try:
        with open(SPEEDUPS_PAGE, encoding="utf-8") as fh:
            doc = fh.read()
    except OSError:
        return None
    report = load_speedups()
    if report is not None:
        doc = _between(doc, "bench", render_bench_table(report))
    verify = {}
    if os.path.isdir(VERIFY_DIR):
        for name in sorted(os.listdir(VERIFY_DIR)):
            if name.endswith(".json"):
                rep = load_speedups(os.path.join(VERIFY_DIR, name))
                if rep is not None:
                    verify[name[:-5]] = rep
    if verify:
        doc = _between(doc, "verify", render_verify_table(verify))
    multi = load_speedups(MULTIGPU_JSON)
    if multi is not None:
        doc = _between(doc, "multigpu", render_multigpu(multi))
    return doc


def _record(cls, speedups: Optional[dict]) -> Optional[dict]:
    return next((r for r in (speedups or {}).get("rules", []) if r.get("code") == cls.code), None)


def measured_figure(cls, speedups: Optional[dict]) -> str:
    """The recorded verdict in a few words ("1.66x faster"), for the index."""
    rec = _record(cls, speedups)
    if rec is None:
        return "not measured"
    if "error" in rec:
        return "workload failed"
    return rec["verdict"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_index(rules, speedups: Optional[dict] = None) -> str:
    out = [
        "# gpulint rules",
        "",
        f"Generated from the rule classes by `{REGENERATE}`; do not edit by hand.",
        "`gpulint explain CODE` (or the rule's name) prints the same page.",
        "",
        "Summary: the finding's message (`{...}` is filled in from the flagged code).",
        "Status: a stable rule runs by default; a preview rule runs with `--preview` (or its exact code),"
        " until it is right at first sight on unseen code (95% over 30 findings from two corpora).",
        "Default: rules that are off are turned on by their exact code or name (`--select GPU104`).",
        "Fix safety: `safe` fixes are applied by `gpulint fix --apply`; `unsafe` ones also need `--unsafe-fixes`.",
        "Measured: the verdict of `gpulint bench` on the rule's own workload, bad against good",
        "([speedups.md](../speedups.md) has the figures and the machine).",
        "",
        "| code | name | summary | status | default | fix safety | measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for code, cls in rules.items():
        default = "on" if cls.default else "off"
        link = f"[{cls.name}]({page_name(cls)})"
        status = "preview" if cls.preview else "stable"
        out.append(
            f"| [{code}]({page_name(cls)}) | {link} | {_cell(cls.message)} | {status} | {default} | {cls.fix_safety} "
            f"| {_cell(measured_figure(cls, speedups))} |"
        )
    return "\n".join(out) + "\n"


def generated_pages() -> dict:
    """{file name under docs/rules: text} for every rule page and the index."""
    from gpulint.registry import all_rules

    rules = all_rules()
    speedups = load_speedups()
    first_sight = load_first_sight()
    pages = {page_name(cls): render_markdown(cls, speedups, first_sight) for cls in rules.values()}
    pages[INDEX_PAGE] = render_index(rules, speedups)
    return pages


def main(argv=None) -> int:
    """Write docs/rules/ (or the folder given) and the tables of docs/speedups.md.

    Markdown pages in docs/rules/ that no rule generates (a renamed or removed
    rule's old page) are deleted. With --check nothing is written: the exit
    status is 1 when a page is stale, missing or stray."""
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m gpulint.frontends.docs", description=main.__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=RULES_DIR, help="where the rule pages go (default: docs/rules)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    args = parser.parse_args(argv)
    out_dir = args.out_dir
    pages = generated_pages()
    # only the rules folder itself is pruned: a folder given by hand may hold other pages
    prune = os.path.abspath(out_dir) == os.path.abspath(RULES_DIR)
    stray = sorted(n for n in os.listdir(out_dir) if n.endswith(".md") and n not in pages) if prune and os.path.isdir(out_dir) else []
    stale = []
    for name, text in pages.items():
        try:
            with open(os.path.join(out_dir, name), encoding="utf-8") as fh:
                current = fh.read()
        except OSError:
            current = None
        if current != text:
            stale.append(name)
    page = speedups_page()
    speedups_stale = page is not None and prune and _read(SPEEDUPS_PAGE) != page
    if args.check:
        problems = [(os.path.join(out_dir, n), "out of date" if os.path.exists(os.path.join(out_dir, n)) else "missing")
                    for n in stale]
        problems += [(os.path.join(out_dir, n), "no rule generates this page") for n in stray]
        if speedups_stale:
            problems.append((SPEEDUPS_PAGE, "tables out of date"))
        for path, why in problems:
            print(f"{path}: {why}")
        if problems:
            print(f"regenerate with `{REGENERATE}`")
        return 1 if problems else 0
    os.makedirs(out_dir, exist_ok=True)
    for name in stale:
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(pages[name])
    for name in stray:
        os.remove(os.path.join(out_dir, name))
    print(f"{len(pages)} pages in {out_dir}: {len(stale)} written, {len(stray)} stray removed")
    if speedups_stale:
        with open(SPEEDUPS_PAGE, "w", encoding="utf-8") as fh:
            fh.write(page)
        print(f"updated {SPEEDUPS_PAGE}")
    return 0


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
