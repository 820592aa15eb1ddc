"""Rule documentation, rendered from the rule class itself: its docstring gives
What it does / Why is this bad? / Fix safety / References, and its first
example gives Example / Use instead, so docs cannot drift from the tests."""

from __future__ import annotations

import json
import os
from typing import Optional

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


def _ms(x: float) -> str:
    v = x * 1e3
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


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
    out += ["## References", sec.get("References", ""), ""]
    return "\n".join(out).rstrip() + "\n"


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


if __name__ == "__main__":
    main()
