"""The pure helpers of bench/speed.py (the benchmark itself is run by hand)."""

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_speed", ROOT / "bench" / "speed.py")
speed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(speed)


def test_select_packages_keeps_the_fixed_order():
    assert speed.select_packages(None) == speed.PACKAGES
    assert [n for n, _ in speed.select_packages("transformers,accelerate")] == ["accelerate", "transformers"]
    assert [n for n, _ in speed.select_packages("2")] == ["accelerate", "timm"]
    with pytest.raises(ValueError):
        speed.select_packages("numpy")
    with pytest.raises(ValueError):
        speed.select_packages("7")


def test_parse_list():
    assert speed.parse_list("ruff, gpulint", speed.ALL_TOOLS, "tool") == ["gpulint", "ruff"]
    with pytest.raises(ValueError):
        speed.parse_list("flake8", speed.ALL_TOOLS, "tool")


def test_scaling_sets_are_cumulative():
    pk = speed.PACKAGES
    sets = speed.scaling_sets(pk)
    assert [len(s) for s in sets] == [1, 2, 4, 6]
    assert all(a == b[: len(a)] for a, b in zip(sets, sets[1:]))
    three = ("accelerate", "timm", "torchvision")
    assert speed.scaling_sets(pk[:3]) == [three[:1], three[:2], three]
    assert speed.scaling_sets(pk[:1]) == [("accelerate",)]


def test_count_findings_per_tool():
    assert speed.count_findings([
        "a/b.py:3:5: GPU101 `loss.item()` in a hot loop",
        "a/b.py:4:1: GPU203 [*] `torch.ones()` builds",
        "Found 2 problems.",
    ], "gpulint") == 2
    assert speed.count_findings(["x.py:1:1: D100 Missing docstring", "x.py:2:1: SyntaxError: bad"], "ruff") == 2
    assert speed.count_findings(["tt/a.py:2:5: TOR001 Use of removed function torch.solve",
                                 "Finished checking 1 files."], "torchfix") == 1
    assert speed.count_findings(["tt/a.py@5:7 CompareSingletonPrimitivesByIs: Comparisons to ...",
                                 "1 file checked"], "fixit") == 1


def test_count_lines():
    assert speed.count_lines(b"") == 0
    assert speed.count_lines(b"a\nb\n") == 2
    assert speed.count_lines(b"a\nb") == 2


def test_pick_changed_file_is_the_median_torch_file():
    files = [("a.py", 10, True), ("b.py", 500, True), ("c.py", 5000, False), ("d.py", 100, True)]
    assert speed.pick_changed_file(files) == "d.py"
    assert speed.pick_changed_file([("x.py", 3, False)]) == "x.py"


def test_replace_between_markers():
    doc = "# t\n\n<!-- speed:start -->\nold\n<!-- speed:end -->\ntail\n"
    out = speed.replace_between_markers(doc, "new table\n")
    assert out == "# t\n\n<!-- speed:start -->\nnew table\n<!-- speed:end -->\ntail\n"
    assert speed.replace_between_markers(out, "new table\n") == out
    with pytest.raises(ValueError):
        speed.replace_between_markers("no markers", "x")


def test_the_doc_has_the_markers():
    doc = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert speed.MARK_START in doc and speed.MARK_END in doc


def _row(tool, scenario, packages, wall, rss=100 * 2 ** 20, **kw):
    return dict(tool=tool, scenario=scenario, packages=list(packages), wall=wall, peak_rss=rss, **kw)


def test_check_targets():
    allp = ["accelerate", "timm"]
    res = {"packages": allp, "machine": {"cores": 2}, "jobs_speedup": 1.8, "rows": [
        _row("gpulint", "cold", allp, 10.0, cores_used=1.9),
        _row("ruff", "cold", allp, 12.0),
        _row("gpulint", "cold", ["accelerate"], 1.0),
        _row("torchfix", "cold", ["accelerate"], 6.0),
        _row("gpulint", "warm", allp, 0.5),
        _row("gpulint", "one file changed", allp, 0.6, file_time=0.2),
    ]}
    assert speed.check_targets(res) == []
    res["rows"][1]["wall"] = 9.0
    res["rows"][3]["wall"] = 4.0
    res["rows"][4]["wall"] = 1.5
    res["rows"][5]["wall"] = 0.8
    res["rows"][0]["peak_rss"] = 2 * 2 ** 30
    res["rows"][0]["cores_used"] = 1.0
    res["jobs_speedup"] = 1.2
    problems = speed.check_targets(res)
    assert len(problems) == 7, problems
    assert speed.check_targets({"rows": []}) == []


def test_summarise():
    runs = [dict(wall=w, peak_rss=r, max_single_rss=r, cpu=2 * w, findings=7)
            for w, r in ((3.0, 10), (1.0, 30), (2.0, 20))]
    s = speed.summarise(runs)
    got = (s["reps"], s["wall"], s["wall_min"], s["wall_max"], s["peak_rss"], s["findings"])
    assert got == (3, 2.0, 1.0, 3.0, 30, 7)
    assert s["cores_used"] == pytest.approx(2.0)


def test_unpack_keeps_only_py_files_inside_dest(tmp_path):
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("pkg/__init__.py", "x = 1\n")
        z.writestr("pkg/data.json", "{}")
        z.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
        z.writestr("../evil.py", "boom\n")
    dest = tmp_path / "out"
    speed._unpack_py(whl, dest)
    found = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert found == [os.path.join("pkg", "__init__.py")]
    assert not (tmp_path / "evil.py").exists()


def test_measure_counts_findings_and_time(tmp_path):
    script = "print('a.py:1:1: TOR001 x'); print('noise')"
    r = speed.measure([sys.executable, "-c", script], tmp_path, dict(os.environ), "torchfix")
    assert r["findings"] == 1 and r["wall"] > 0 and r["max_single_rss"] > 0
    with pytest.raises(RuntimeError):
        speed.measure([sys.executable, "-c", "raise SystemExit(3)"], tmp_path, dict(os.environ), "ruff")


def test_help_runs():
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "speed.py"), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--subset" in res.stdout


_fspec = importlib.util.spec_from_file_location("bench_cost_floor", ROOT / "bench" / "cost_floor.py")
floor = importlib.util.module_from_spec(_fspec)
_fspec.loader.exec_module(floor)


def test_cost_floor_units_and_skipped_lines():
    import ast

    text = (
        "import torch\n"             # 1: kept (not a definition)
        "@decorator\n"                # 2-4: a function, decorator included
        "def helper(x):\n"
        "    return x + 1\n"
        "class Net(torch.nn.Module):\n"  # 5
        "    scale = 2\n"             # 6: the class body outside methods
        "    def forward(self, x):\n"  # 7-8
        "        return x.cuda()\n"
        "    def extra(self):\n"      # 9-10
        "        return 1\n"
    )
    tree = ast.parse(text)
    assert floor.units(tree, False) == [(2, 4), (5, 10)]
    assert floor.units(tree, True) == [(2, 4), (7, 8), (9, 10)]
    lines = text.split("\n")
    wants_cuda = lambda t: ".cuda(" in t  # noqa: E731
    assert floor.skipped_lines(lines, floor.units(tree, False), wants_cuda) == 3  # helper only
    assert floor.skipped_lines(lines, floor.units(tree, True), wants_cuda) == 5  # helper and extra


def test_cost_floor_strong_tests_are_no_weaker_than_needed():
    needles = {"GPU101": ("for", "while"), "GPU203": (".cuda(", ".to("), "GPU204": ("forward",),
               "GPU102": ("synchronize",)}
    tests = floor.strong_tests(tuple(needles), needles)
    assert tests["GPU102"]("torch.cuda.synchronize()") and not tests["GPU102"]("x = 1")
    step = "for b in loader:\n    loss = model(b)\n    loss.backward()\n    total += loss.item()\n"
    assert tests["GPU101"](step)
    assert not tests["GPU101"]("for i in range(3):\n    x = i\n")  # no step, no read
    assert tests["GPU203"]("torch.zeros(3).cuda()") and not tests["GPU203"]("x.cuda()")
    assert tests["GPU204"]("def forward(self):\n    return torch.arange(3)\n")
    assert not tests["GPU204"]("def forward(self, x):\n    return x\n")


def test_cost_floor_floors_scale_with_kept_lines():
    res = {"core_s": {"read": 1.0, "parse": 10.0, "index": 3.0, "lint": 6.0},
           "kept": {"file": 1.0, "method": 0.5}}
    table = floor.floors(res, cores=2)
    assert table["none (today's engine)"]["floor_s"] == (1.0 + 16.0) / 2
    assert table["method"]["floor_s"] == (1.0 + 0.5 * 16.0) / 2
    assert table["method"]["parse_only_floor_s"] == (1.0 + 0.5 * 10.0) / 2
    text = floor.render({"files": 2, "lines": 100, "findings": 0, **res}, table, 5.0, 2)
    assert "| method | 50% | 4.5 s | 3.0 s | 0.9x |" in text


def test_the_one_file_changed_script_runs():
    """The one-file-changed scenario times one file with the script below in a
    fresh interpreter; it imports gpulint's own names, so a rename breaks it
    (it once imported a private name that had been renamed)."""
    path = ROOT / "examples" / "train_classifier.py"
    res = subprocess.run([sys.executable, "-c", speed.FILE_TIME_SCRIPT, str(path)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    seconds = float(res.stdout.strip())
    assert 0 < seconds < 60
