"""Rule documentation, rendered from the rule class itself: its docstring gives
What it does / Why is this bad? / Fix safety / References, and its first
example gives Example / Use instead, so docs cannot drift from the tests."""

from __future__ import annotations

import json
import os
from typing import Optional

from gpulint.harness.stats import fmt_mib, fmt_ms as _ms
from gpulint.rule import NONE, SAFE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what `gpulint bench --json` recorded on a real GPU (see docs/speedups.md)
SPEEDUPS_JSON = os.path.join(ROOT, "docs", "speedups.json")


def load_speedups(path: str = SPEEDUPS_JSON) -> Optional[dict]:
    """The recorded bench run, or None where there is none (an installed wheel)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None




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
    bp, gp = rec["bad"].get("peak_bytes"), rec["good"].get("peak_bytes")
    if bp and gp:
        text += f" Peak memory {bp / 2**20:,.0f} MiB -> {gp / 2**20:,.0f} MiB."
    if rec.get("note"):
        text += f" Workload: {rec['note']}"
    return text


def fix_label(cls) -> str:
    return {SAFE: "safe fix", "unsafe": "unsafe fix (needs --unsafe-fixes)", NONE: "no fix"}[cls.fix_safety]


def render_markdown(cls, speedups: Optional[dict] = None) -> str:
    sec = cls.doc_sections()
    out = [f"# {cls.name} ({cls.code})", ""]
    out.append(f"Default: {'on' if cls.default else 'off (turn it on with `--select ' + cls.code + '`)'}. Fix: {fix_label(cls)}.")
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
    rec = next((r for r in (speedups or {}).get("rules", []) if r.get("code") == cls.code), None)
    if rec is not None:
        out += ["## Measured", measured_text(rec, speedups["where"]), ""]
        multi = load_speedups(MULTIGPU_JSON) if cls.code == "GPU001" else None
        if multi is not None and multigpu_summary(multi):
            out += [multigpu_summary(multi), ""]
    out += ["## References", sec.get("References", ""), ""]
    return "\n".join(out).rstrip() + "\n"


def render_bench_table(report: dict) -> str:
    """The recorded `gpulint bench` run as a markdown table."""
    lines = [
        f"Measured on {report['where']}, {report['repetitions']} interleaved repetitions per side.",
        "",
        "| rule | bad ms/step [min-max] | good ms/step [min-max] | bad/good | peak memory bad -> good | verdict | check |",
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
            f"| [{r['code']}](rules/{r['code']}.md) {r['name']} | {_ms(b['median'])} [{_ms(b['min'])}-{_ms(b['max'])}] "
            f"| {_ms(g['median'])} [{_ms(g['min'])}-{_ms(g['max'])}] | {r['time_ratio']:.2f}x | {mem} "
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
        verdict = c["time_verdict"]
        speed = f"{c['speedup']:.2f}x" + ("" if verdict == "faster" else f" ({verdict})")
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
    ran = [r for r in report["rows"] if "skipped" not in r]
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


def render_index(rules) -> str:
    out = [
        "# gpulint rules",
        "",
        "Generated from the rule classes by `python -m gpulint.docs`; do not edit by hand.",
        "",
        "| code | name | default | fix | message |",
        "|---|---|---|---|---|",
    ]
    for code, cls in rules.items():
        message = cls.message.replace("|", "\\|")
        default = "on" if cls.default else "off"
        out.append(f"| [{code}]({code}.md) | {cls.name} | {default} | {cls.fix_safety} | {message} |")
    return "\n".join(out) + "\n"


def generated_pages() -> dict:
    """{relative path under docs/rules: text} for every rule page and the index."""
    from gpulint.rule import all_rules

    rules = all_rules()
    speedups = load_speedups()
    pages = {f"{code}.md": render_markdown(cls, speedups) for code, cls in rules.items()}
    pages["README.md"] = render_index(rules)
    return pages


def main() -> None:  # pragma: no cover - exercised by tests through generated_pages
    import os
    import sys

    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("docs", "rules")
    os.makedirs(out_dir, exist_ok=True)
    for name, text in generated_pages().items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    print(f"wrote {len(generated_pages())} pages to {out_dir}")
    page = speedups_page()
    if page is not None:
        with open(SPEEDUPS_PAGE, "w", encoding="utf-8") as fh:
            fh.write(page)
        print(f"updated {SPEEDUPS_PAGE}")


if __name__ == "__main__":
    main()
