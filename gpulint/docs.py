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
    pages = {f"{code}.md": render_markdown(cls) for code, cls in rules.items()}
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
