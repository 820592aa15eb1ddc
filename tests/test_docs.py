"""docs/rules/ is generated from the rules; it must not drift from them, and
everything that links to a rule's page (findings' `url`, SARIF's helpUri,
README.md and docs/) must point at a page that exists."""

import re
import shutil
from urllib.parse import urlparse

import pytest

from cli_helpers import DP, invoke, write
from helpers import ROOT, lint
from gpulint.frontends import docs
from gpulint.frontends.docs import SPEEDUPS_PAGE, generated_pages, speedups_page
from gpulint.rule import DOCS_URL
from gpulint.registry import all_rules

RULES_DIR = ROOT / "docs" / "rules"


def test_one_page_per_rule_named_after_it_and_an_index():
    expected = {f"{cls.name}.md" for cls in all_rules().values()} | {"index.md"}
    assert set(generated_pages()) == expected
    assert "host-sync-in-loop.md" in expected and "data-parallel.md" in expected


def test_rule_pages_are_up_to_date():
    stale = []
    for name, text in generated_pages().items():
        path = RULES_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    assert not stale, f"regenerate with `python3 -m gpulint.frontends.docs`: stale pages {stale}"
    # any other file there is stray: an old GPU101.md, a renamed rule's page
    extra = {p.name for p in RULES_DIR.iterdir()} - set(generated_pages())
    assert not extra, f"pages no rule generates (remove them, or run `python3 -m gpulint.frontends.docs`): {sorted(extra)}"


def test_index_lists_every_rule_with_its_page_and_measured_figure():
    index = (RULES_DIR / "index.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if line.startswith("| [GPU")]
    assert len(rows) == len(all_rules())
    for row, (code, cls) in zip(rows, all_rules().items()):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[0] == f"[{code}]({cls.name}.md)"
        assert cells[1] == f"[{cls.name}]({cls.name}.md)"
        assert cells[3] == ("preview" if cls.preview else "stable")
        assert cells[4] == ("on" if cls.default else "off")
        assert cells[5] == cls.fix_safety
    report = docs.load_speedups()
    assert report is not None
    verdicts = {r["code"]: r["verdict"] for r in report["rules"] if "verdict" in r}
    row101 = next(r for r in rows if r.startswith("| [GPU101]"))
    assert row101.rstrip(" |").endswith(verdicts["GPU101"])


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_explain_prints_the_page(tmp_path, code):
    cls = all_rules()[code]
    page = (RULES_DIR / f"{cls.name}.md").read_text(encoding="utf-8")
    for key in (code, code.lower(), cls.name):
        res = invoke(["explain", key], tmp_path)
        assert res.exit_code == 0
        assert res.stdout == page


def _repo_path(url: str) -> str:
    parsed = urlparse(url)
    assert parsed.scheme == "https"
    m = re.match(r"^/[^/]+/[^/]+/blob/[^/]+/(.+)$", parsed.path)
    assert m, url
    return m.group(1)


def test_finding_url_points_at_the_rules_page():
    (finding,) = lint(DP, codes=["GPU001"])
    assert _repo_path(finding.url) == "docs/rules/data-parallel.md"
    for code, cls in all_rules().items():
        rel = _repo_path(DOCS_URL.format(code=code, name=cls.name))
        assert (ROOT / rel).is_file(), rel
        assert rel == f"docs/rules/{cls.name}.md"


def test_json_and_sarif_link_the_page(tmp_path):
    import json

    write(tmp_path, "a.py", DP)
    res = invoke(["check", "a.py", "--select", "GPU001", "--output-format", "json"], tmp_path)
    (d,) = json.loads(res.stdout)
    assert _repo_path(d["url"]) == "docs/rules/data-parallel.md"
    res = invoke(["check", "a.py", "--select", "GPU001", "--output-format", "sarif"], tmp_path)
    rules = json.loads(res.stdout)["runs"][0]["tool"]["driver"]["rules"]
    for r in rules:
        assert _repo_path(r["helpUri"]) == f"docs/rules/{r['name']}.md"


LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_in_readme_and_docs_resolve():
    broken = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in LINK_RE.findall(md.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (md.parent / path).exists():
                broken.append(f"{md.relative_to(ROOT)}: {target}")
    assert not broken, broken
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/rules/index.md" in readme and "docs/rules/GPU" not in readme


def test_generator_prunes_stray_pages_and_check_reports(tmp_path, monkeypatch, capsys):
    """`python3 -m gpulint.frontends.docs` on a copy of docs/rules: --check names what is
    wrong and writes nothing; a plain run fixes it and removes old pages."""
    rules = tmp_path / "rules"
    shutil.copytree(RULES_DIR, rules)
    speedups = tmp_path / "speedups.md"
    shutil.copy(SPEEDUPS_PAGE, speedups)
    monkeypatch.setattr(docs, "RULES_DIR", str(rules))
    monkeypatch.setattr(docs, "SPEEDUPS_PAGE", str(speedups))
    assert docs.main(["--check"]) == 0
    (rules / "GPU101.md").write_text("# old page\n", encoding="utf-8")
    (rules / "data-parallel.md").write_text("# edited by hand\n", encoding="utf-8")
    (rules / "index.md").unlink()
    capsys.readouterr()
    assert docs.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert f"{rules / 'GPU101.md'}: no rule generates this page" in out
    assert f"{rules / 'data-parallel.md'}: out of date" in out
    assert f"{rules / 'index.md'}: missing" in out
    assert (rules / "GPU101.md").exists()  # --check writes nothing
    assert docs.main([]) == 0
    assert not (rules / "GPU101.md").exists()
    assert docs.main(["--check"]) == 0
    pages = generated_pages()
    assert {p.name for p in rules.iterdir()} == set(pages)
    assert (rules / "data-parallel.md").read_text(encoding="utf-8") == pages["data-parallel.md"]


def test_speedups_page_tables_are_up_to_date():
    page = speedups_page()
    assert page is not None, "docs/speedups.md is missing"
    with open(SPEEDUPS_PAGE, encoding="utf-8") as fh:
        assert fh.read() == page, "regenerate with `python3 -m gpulint.frontends.docs`"
    assert "<!-- bench:start -->" in page and "NVIDIA H200" in page
    assert "(rules/host-sync-in-loop.md)" in page
