"""docs/rules/ is generated from the rules; it must not drift from them."""

from helpers import ROOT
from gpulint.docs import SPEEDUPS_PAGE, generated_pages, speedups_page


def test_rule_pages_are_up_to_date():
    folder = ROOT / "docs" / "rules"
    stale = []
    for name, text in generated_pages().items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    assert not stale, f"regenerate with `python -m gpulint.docs`: stale pages {stale}"
    extra = {p.name for p in folder.glob("*.md")} - set(generated_pages())
    assert not extra, f"pages for rules that no longer exist: {sorted(extra)}"


def test_speedups_page_tables_are_up_to_date():
    page = speedups_page()
    assert page is not None, "docs/speedups.md is missing"
    with open(SPEEDUPS_PAGE, encoding="utf-8") as fh:
        assert fh.read() == page, "regenerate with `python -m gpulint.docs`"
    assert "<!-- bench:start -->" in page and "NVIDIA H200" in page
