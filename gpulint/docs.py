"""Rule documentation, rendered from the rule class itself: its docstring gives
What it does / Why is this bad? / Fix safety / References, and its first
example gives Example / Use instead, so docs cannot drift from the tests."""

from __future__ import annotations

from gpulint.rule import NONE, SAFE


def fix_label(cls) -> str:
    return {SAFE: "safe fix", "unsafe": "unsafe fix (needs --unsafe-fixes)", NONE: "no fix"}[cls.fix_safety]


def render_markdown(cls) -> str:
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
    out += ["## References", sec.get("References", ""), ""]
    return "\n".join(out).rstrip() + "\n"
