"""The compare logic and the baseline file of bench/same_findings.py, on small
synthetic records (the script itself lints real packages and is run by hand)."""

import copy
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_same_findings", ROOT / "bench" / "same_findings.py")
sf = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sf  # its dataclasses look their module up there
_spec.loader.exec_module(sf)


def record(path="pkg/train.py", row=3, col=5, code="GPU101", message="`loss.item()` in a hot loop", fix=None):
    return {
        "cell": None, "code": code, "filename": path, "fix": fix, "message": message, "noqa_row": row,
        "location": {"row": row, "column": col}, "end_location": {"row": row, "column": col + 11},
        "url": "https://example.invalid/rule",
    }


FIX = {"applicability": "safe", "message": "use x", "edits": [
    {"content": "x", "location": {"row": 3, "column": 5}, "end_location": {"row": 3, "column": 9}}]}


def base():
    return copy.deepcopy({
        "first/pkg-1.0": [record(), record(row=9, code="GPU203", fix=FIX)],
        "repo/fixtures": [record(path="GPU101/a.py", row=1, col=1, code="invalid-syntax", message="bad")],
    })


def test_identical_runs_have_no_difference_whatever_the_order():
    new = {k: list(reversed(copy.deepcopy(v))) for k, v in base().items()}
    diffs = sf.compare(base(), new)
    assert diffs == []
    assert sf.exit_status(diffs) == 0
    assert sf.digest(base()["first/pkg-1.0"]) == sf.digest(new["first/pkg-1.0"])


def test_one_differing_column_is_one_changed_finding():
    new = base()
    new["first/pkg-1.0"][0]["location"]["column"] = 6
    diffs = sf.compare(base(), new)
    assert [(d.corpus, d.kind, d.code) for d in diffs] == [("first/pkg-1.0", "changed", "GPU101")]
    assert sf.changed_fields(diffs[0].base, diffs[0].new) == [("location.column", 5, 6)]
    assert sf.exit_status(diffs) == 1
    text = sf.render(diffs, source=lambda corpus, path, row: [f"> {row}| loss.item()"])
    assert "first/pkg-1.0" in text and "GPU101" in text
    assert "location.column: 5 -> 6" in text and "> 3| loss.item()" in text
    assert sf.digest(base()["first/pkg-1.0"]) != sf.digest(new["first/pkg-1.0"])


def test_fix_edits_errors_and_counts_are_compared():
    new = base()
    new["first/pkg-1.0"][1]["fix"]["applicability"] = "unsafe"
    new["first/pkg-1.0"][1]["fix"]["edits"][0]["content"] = "y"
    new["repo/fixtures"] = []  # the file that could not be checked now is
    new["first/pkg-1.0"].append(record())  # the same finding twice
    diffs = sf.compare(base(), new)
    kinds = sorted((d.kind, d.code) for d in diffs)
    assert kinds == [("changed", "GPU203"), ("missing", "invalid-syntax"), ("new", "GPU101")]
    changed = next(d for d in diffs if d.kind == "changed")
    assert sf.changed_fields(changed.base, changed.new) == [
        ("fix.applicability", "safe", "unsafe"), ("fix.edits[0].content", "x", "y")]


def test_a_whole_corpus_or_rule_on_one_side_only_is_a_difference():
    new = base()
    del new["repo/fixtures"]
    new["speed/pkg-1.0"] = []
    assert sorted(d.kind for d in sf.compare(base(), new)) == ["corpus-missing", "corpus-new"]
    assert [d.kind for d in sf.compare_codes(["GPU101", "GPU203"], ["GPU101"])] == ["codes"]
    assert sf.compare_codes(["GPU101"], ["GPU101"]) == []


def test_render_shows_the_first_limit_grouped_by_corpus_and_code():
    b = {"c": [record(row=r) for r in range(1, 61)]}
    n = {"c": [record(row=r, message="other") for r in range(1, 61)]}
    text = sf.render(sf.compare(b, n), limit=50)
    assert text.startswith("DIFFERENT: 60 difference(s) in 1 corpus(es)")
    assert "c: GPU101 x60" in text and "... and 10 more" in text
    assert text.count("--- c  GPU101") == 1


def test_normalize_makes_paths_relative_to_the_root(tmp_path):
    root = str(tmp_path / "pkg")
    r = record(path=str(tmp_path / "pkg" / "sub" / "m.py"), code="io-error", message=f"cannot read {root}/sub/m.py")
    out = sf.normalize(r, root)
    assert out["filename"] == "sub/m.py"
    assert out["message"] == "cannot read <root>/sub/m.py"


def test_baseline_file_round_trips(tmp_path):
    results = {name: sf.CorpusResult(name, 2, "0" * 64, recs) for name, recs in base().items()}
    header = {"gpulint": {"commit": "abc", "rev": "HEAD", "dirty": False}, "codes": ["GPU101", "GPU203"]}
    for name in ("b.jsonl", "b.jsonl.gz"):
        path = str(tmp_path / name)
        sf.write_baseline(path, sf.Baseline(header, results))
        back = sf.read_baseline(path)
        assert back.header["gpulint"]["commit"] == "abc"
        assert sf.compare(back.findings, base()) == []
        assert back.corpora["first/pkg-1.0"].files == 2
    assert (tmp_path / "b.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"


def test_select_corpora_takes_corpus_package_and_set_names():
    corpora = [sf.Corpus("first/timm-1", "first", "timm", "1"), sf.Corpus("speed/timm-1", "speed", "timm", "1"),
               sf.Corpus("second/peft-2", "second", "peft", "2"), sf.Corpus("repo/fixtures", "repo", "fixtures")]
    assert [c.name for c in sf.select_corpora(corpora, "timm")] == ["first/timm-1", "speed/timm-1"]
    assert [c.name for c in sf.select_corpora(corpora, "second,repo")] == ["second/peft-2", "repo/fixtures"]
    assert [c.name for c in sf.select_corpora(corpora, "speed/timm-1")] == ["speed/timm-1"]
    assert len(sf.select_corpora(corpora, None)) == 4
