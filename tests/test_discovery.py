"""File discovery (*.py / *.pyi / *.ipynb, vendored folders, .gitignore, explicit
paths) and the cache."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cli_helpers import CLEAN, DP, TWO, UNCLOSED_LINE, findings, invoke, write
from gpulint.engine import project, runner
from gpulint.engine.config import ConfigResolver
from gpulint.engine.discovery import discover


def linted_paths(root, *args):
    res = invoke(["check", TWO, *args], root)
    assert res.exit_code in (0, 1), res.stderr
    return sorted({p.replace(os.sep, "/") for p, *_ in findings(res.stdout)})


def git_init(root):
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_py_pyi_and_notebooks_only(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "stubs/b.pyi", DP)
    write(tmp_path, "c.txt", DP)
    write(tmp_path, "d.pyc", DP)
    write(tmp_path, "e.py.bak", DP)
    write(tmp_path, "g.ipynb.bak", DP)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": DP}
    write(tmp_path, "nb/f.ipynb", json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}))
    assert linted_paths(tmp_path) == ["a.py", "nb/f.ipynb", "stubs/b.pyi"]


@pytest.mark.parametrize(
    "folder", [".git", ".venv", "venv", "build", "dist", "site-packages", "__pycache__", "node_modules", ".tox"]
)
def test_vendored_and_generated_folders_are_skipped(tmp_path, folder):
    write(tmp_path, f"{folder}/x.py", DP)
    write(tmp_path, f"src/{folder}/y.py", DP)  # at any depth
    write(tmp_path, "src/main.py", DP)
    assert linted_paths(tmp_path) == ["src/main.py"]
    # explicitly named files are always linted
    assert linted_paths(tmp_path, f"{folder}/x.py") == [f"{folder}/x.py"]


def test_gitignore(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "generated/\n*_pb2.py\n/rootonly.py\n")
    write(tmp_path, "generated/a.py", DP)
    write(tmp_path, "api_pb2.py", DP)
    write(tmp_path, "pkg/api_pb2.py", DP)
    write(tmp_path, "rootonly.py", DP)
    write(tmp_path, "pkg/rootonly.py", DP)  # anchored pattern: only the top-level one
    write(tmp_path, "main.py", DP)
    assert linted_paths(tmp_path) == ["main.py", "pkg/rootonly.py"]
    # explicit paths are linted even when ignored
    assert linted_paths(tmp_path, "api_pb2.py", "generated/a.py") == ["api_pb2.py", "generated/a.py"]


def test_nested_gitignore_and_negation(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "*_gen.py\n!keep_gen.py\n")
    write(tmp_path, "a_gen.py", DP)
    write(tmp_path, "keep_gen.py", DP)
    write(tmp_path, "sub/.gitignore", "local.py\n!b_gen.py\n")
    write(tmp_path, "sub/local.py", DP)
    write(tmp_path, "sub/b_gen.py", DP)  # re-included by the deeper file
    write(tmp_path, "sub/c_gen.py", DP)
    write(tmp_path, "local.py", DP)  # the nested file's pattern does not reach up
    assert linted_paths(tmp_path) == ["keep_gen.py", "local.py", "sub/b_gen.py"]


def test_a_named_directory_is_linted_even_when_its_name_is_excluded(tmp_path):
    """Patterns are matched against what the walk finds below a named path,
    never because of the named path itself or a folder above it (Ruff's
    behaviour): `build` is excluded by default, yet `gpulint check build`
    lints it; what lies below it is still excluded."""
    for rel in ("build/a.py", "build/.venv/x.py", "build/sub/build/y.py", "build/sub/b.py", "src/main.py"):
        write(tmp_path, rel, DP)
    assert linted_paths(tmp_path) == ["src/main.py"]
    assert linted_paths(tmp_path, "build") == ["build/a.py", "build/sub/b.py"]
    assert linted_paths(tmp_path, "build/sub") == ["build/sub/b.py"]  # a folder below an excluded one
    assert linted_paths(tmp_path / "build") == ["a.py", "sub/b.py"]  # run from inside it
    # --force-exclude keeps excluding a named path and what lies below it
    res = invoke(["check", TWO, "--force-exclude", "build", "build/sub", "src"], tmp_path)
    assert sorted({p for p, *_ in findings(res.stdout)}) == ["src/main.py"]


def test_a_named_directory_and_config_patterns(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nextend-exclude = ["third_party/", "vendor/gen/**", "*_pb2.py"]\n')
    for rel in ("third_party/a.py", "third_party/deep/b.py", "third_party/x_pb2.py", "vendor/gen/c.py",
                "vendor/gen/sub/d.py", "vendor/e.py"):
        write(tmp_path, rel, DP)
    assert linted_paths(tmp_path) == ["vendor/e.py"]
    assert linted_paths(tmp_path, "third_party") == ["third_party/a.py", "third_party/deep/b.py"]
    # `vendor/gen/**` names what is below vendor/gen: those entries are excluded, as in Ruff
    assert linted_paths(tmp_path, "vendor/gen") == []
    assert linted_paths(tmp_path, "vendor") == ["vendor/e.py"]


def test_a_named_git_ignored_directory_is_linted(tmp_path):
    """As Ruff (and git, for a path it is given): `.gitignore` rules apply to
    what the walk finds below a named folder, not to the folder itself."""
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "generated/\n*_pb2.py\nout\n")
    for rel in ("generated/a.py", "generated/api_pb2.py", "generated/out/b.py", "generated/sub/c.py", "main.py"):
        write(tmp_path, rel, DP)
    assert linted_paths(tmp_path) == ["main.py"]
    assert linted_paths(tmp_path, "generated") == ["generated/a.py", "generated/sub/c.py"]
    assert linted_paths(tmp_path, "generated/sub") == ["generated/sub/c.py"]
    assert linted_paths(tmp_path, "generated/out") == ["generated/out/b.py"]  # below an ignored folder


def test_git_info_exclude(tmp_path):
    git_init(tmp_path)
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n")
    write(tmp_path, "scratch.py", DP)
    write(tmp_path, "main.py", DP)
    assert linted_paths(tmp_path) == ["main.py"]


def test_gitignore_of_a_nested_project_run_from_inside(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "out/\n")
    write(tmp_path, "proj/out/x.py", DP)
    write(tmp_path, "proj/y.py", DP)
    assert linted_paths(tmp_path / "proj") == ["y.py"]


def test_duplicates_and_symlink_loops(tmp_path):
    write(tmp_path, "pkg/a.py", DP)
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    res = invoke(["check", TWO, ".", "pkg", "pkg/a.py"], tmp_path)
    assert [p.replace(os.sep, "/") for p, *_ in findings(res.stdout)] == ["pkg/a.py"]


def test_discover_api_yields_settings(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"]\n')
    write(tmp_path, "a.py", CLEAN)
    errors = []
    got = list(discover([str(tmp_path)], ConfigResolver(cwd=str(tmp_path)), lambda p, w: errors.append((p, w))))
    assert [os.path.basename(p) for p, _ in got] == ["a.py"]
    assert got[0][1].select == ("GPU001",)
    assert errors == []


# ------------------------------------------------------------------ cache
@pytest.fixture
def counting(monkeypatch):
    """Count the files the runner actually lints (not served from the cache)."""
    linted = []
    real = project.lint_file

    def spy(path, options, keep_source=False, project=None):
        linted.append(os.path.basename(path))
        return real(path, options, keep_source, project)

    monkeypatch.setattr(project, "lint_file", spy)
    return linted


def test_cache_second_run_and_changed_file(tmp_path, counting):
    write(tmp_path, "pyproject.toml", "[tool.gpulint]\n")
    a = write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", CLEAN)
    first = invoke(["check", TWO], tmp_path, cache=True)
    assert sorted(counting) == ["a.py", "b.py"]
    assert (tmp_path / ".gpulint_cache").is_dir()
    assert (tmp_path / ".gpulint_cache" / ".gitignore").read_text().strip().endswith("*")

    counting.clear()
    second = invoke(["check", TWO], tmp_path, cache=True)
    assert counting == []  # everything came from the cache
    assert second.stdout == first.stdout and second.exit_code == 1

    # a changed file is linted again, the other is not
    a.write_text(CLEAN + "\n# edited\n")
    third = invoke(["check", TWO], tmp_path, cache=True)
    assert counting == ["a.py"]
    assert third.exit_code == 0 and findings(third.stdout) == []

    # a different selection is a different cache key
    counting.clear()
    invoke(["check", "--select", "GPU001"], tmp_path, cache=True)
    assert sorted(counting) == ["a.py", "b.py"]


def test_a_warm_run_reads_no_summary_and_a_join_reads_them(tmp_path, counting, monkeypatch):
    """Summaries are most of the cache's bytes: on disk each is JSON text inside
    the cache's JSON, and a run whose files and project are all unchanged never
    decodes one; a run that joins the project reads them as they were."""
    from gpulint.engine import cache as cache_module

    write(tmp_path, "pyproject.toml", "[tool.gpulint]\n")
    write(tmp_path, "helpers.py", "import torch\n\n\ndef step(model, x, opt):\n    model(x).sum().backward()\n    opt.step()\n")
    train = write(tmp_path, "train.py", "from helpers import step\n\n\ndef train(model, loader, opt):\n"
                  "    for x in loader:\n        step(model, x.cuda(), opt)\n")
    first = invoke(["check", "--preview", "."], tmp_path, cache=True)
    stored = json.loads(next((tmp_path / ".gpulint_cache").glob("v*.json")).read_text())
    entry = next(e for k, e in stored.items() if k.endswith("helpers.py"))
    assert isinstance(entry["y"], str) and "step" in json.loads(entry["y"])["functions"].__repr__()

    decoded = []
    real = cache_module.Cache.summary_of

    def spy(self, path):
        decoded.append(os.path.basename(path))
        return real(self, path)

    monkeypatch.setattr(cache_module.Cache, "summary_of", spy)
    counting.clear()
    second = invoke(["check", "--preview", "."], tmp_path, cache=True)
    assert counting == [] and decoded == [] and second.stdout == first.stdout

    train.write_text(train.read_text() + "\n\ndef more(loader):\n    return [x for x in loader]\n")
    third = invoke(["check", "--preview", "."], tmp_path, cache=True)
    assert counting[0] == "train.py" and "helpers.py" in decoded  # (the join may read files again)
    assert third.stdout == invoke(["check", "--preview", "--no-cache", "."], tmp_path).stdout


def test_a_few_changed_entries_are_written_beside_the_whole_cache(tmp_path, counting, monkeypatch):
    from gpulint.engine import cache as cache_module

    write(tmp_path, "pyproject.toml", "[tool.gpulint]\n")
    a = write(tmp_path, "a.py", DP)
    for name in "bcd":
        write(tmp_path, f"{name}.py", CLEAN)
    invoke(["check", TWO], tmp_path, cache=True)
    [whole] = (tmp_path / ".gpulint_cache").glob("v*.json")
    before = whole.read_text()
    delta = whole.with_name(whole.name + ".delta")
    assert not delta.exists()
    # one changed file: only its entry is written, beside the whole cache
    a.write_text(CLEAN + "\n# edited\n")
    invoke(["check", TWO], tmp_path, cache=True)
    assert whole.read_text() == before
    assert str(a.resolve()) in json.loads(delta.read_text())
    counting.clear()
    res = invoke(["check", TWO], tmp_path, cache=True)
    assert counting == [] and res.exit_code == 0  # the entry beside is read back: a hit
    # past the share of entries kept beside, the whole cache is written again, and the file beside goes
    monkeypatch.setattr(cache_module, "DELTA_MIN", 0)
    monkeypatch.setattr(cache_module, "DELTA_SHARE", 0.1)
    a.write_text(DP)
    res = invoke(["check", TWO], tmp_path, cache=True)
    assert res.exit_code == 1 and not delta.exists()
    assert str(a.resolve()) in json.loads(whole.read_text())
    counting.clear()
    assert invoke(["check", TWO], tmp_path, cache=True).exit_code == 1 and counting == []


def test_no_cache(tmp_path, counting):
    write(tmp_path, "a.py", DP)
    invoke(["check", TWO, "--no-cache"], tmp_path, cache=True)
    invoke(["check", TWO, "--no-cache"], tmp_path, cache=True)
    assert counting == ["a.py", "a.py"]
    assert not (tmp_path / ".gpulint_cache").exists()


def test_files_that_fail_are_not_cached(tmp_path, counting):
    write(tmp_path, "bad.py", "x = (\n")
    for _ in range(2):
        res = invoke(["check"], tmp_path, cache=True)
        assert res.exit_code == 1 and res.stdout.startswith("bad.py:") and " invalid-syntax: " in res.stdout
    assert counting == ["bad.py", "bad.py"]


def test_cached_findings_carry_this_runs_path(tmp_path, counting):
    write(tmp_path, "proj/pyproject.toml", "[tool.gpulint]\n")
    write(tmp_path, "proj/a.py", DP)
    res = invoke(["check", TWO, "proj/a.py"], tmp_path, cache=True)
    assert [p.replace(os.sep, "/") for p, *_ in findings(res.stdout)] == ["proj/a.py"]
    counting.clear()
    res = invoke(["check", TWO, "a.py"], tmp_path / "proj", cache=True)
    assert counting == []  # served from the cache ...
    assert [p for p, *_ in findings(res.stdout)] == ["a.py"]  # ... under the name this run used


def test_corrupt_cache_is_ignored(tmp_path, counting):
    write(tmp_path, "a.py", DP)
    invoke(["check", TWO], tmp_path, cache=True)
    [cache_file] = [p for p in (tmp_path / ".gpulint_cache").iterdir() if p.suffix == ".json"]
    cache_file.write_text("{not json")
    res = invoke(["check", TWO], tmp_path, cache=True)
    assert res.exit_code == 1 and len(findings(res.stdout)) == 1
    data = json.loads(cache_file.read_text())  # rewritten
    key = str((tmp_path / "a.py").resolve())
    assert any(k == key or os.path.realpath(k) == key for k in data)
    # an entry of the wrong shape
    for k in data:
        data[k]["f"] = [{"nonsense": 1}]
    cache_file.write_text(json.dumps(data))
    res = invoke(["check", TWO], tmp_path, cache=True)
    assert res.exit_code == 1 and len(findings(res.stdout)) == 1


def test_parallel_workers_give_the_same_result(tmp_path):
    for i in range(project.PARALLEL_MIN_FILES + 6):
        write(tmp_path, f"m{i:02d}.py", DP if i % 3 == 0 else CLEAN)
    write(tmp_path, "zz_bad.py", "x = (\n")
    serial = invoke(["check", TWO, "-j", "1"], tmp_path)
    parallel = invoke(["check", TWO, "-j", "4"], tmp_path)
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout
    assert serial.stderr == parallel.stderr == ""
    assert UNCLOSED_LINE.replace("bad.py", "zz_bad.py") in serial.stdout.splitlines()
    assert len(findings(serial.stdout)) == 10


def test_pattern_matcher_agrees_with_pathspec():
    """The exclude patterns are matched by gpulint.engine.globs, which must say what
    pathspec's GitIgnoreSpec says, negations included (random patterns and
    paths: tests/test_globs.py)."""
    import pathspec

    from gpulint.engine.config import DEFAULT_EXCLUDE
    from gpulint.engine.globs import PatternSet

    paths = [
        ".git/", "venv/", "build/", "src/build/", "pkg/__pycache__/", "dist/x.py", "node_modules/",
        "a/x/y/b", "top.py", "sub/top.py", "xzy", "ac", "bc", "keep", "keep/", "src/gen/m.py", "m_pb2.py",
        "docs/", "docs/conf.py", "train.py", "models/resnet.py", ".venv/", "site-packages/torch/",
        "build", "rebuild/", "build2/", "a/build", "a/build/b.py", "a.b/", "axb/", "a-b", ".git",
        ".gitx/", "x.git/", "venv.py", "sub/venv/x.py",
    ]
    for patterns in (DEFAULT_EXCLUDE, ("a.b", "a-b", ".git"), ("build",), ("src/gen/*.py", "*_pb2.py", "docs/"),
                     ("a/**/b", "/top.py", "x?y", "[ab]c", "# a comment", ""), ("*.py", "!keep*", "keep/")):
        spec, mine = pathspec.GitIgnoreSpec.from_lines(patterns), PatternSet(patterns)
        assert [p for p in paths if spec.check_file(p).include != mine.check(p)] == [], patterns


def test_cache_dir_option_and_environment(tmp_path, counting):
    write(tmp_path, "proj/pyproject.toml", "[tool.gpulint]\n")
    write(tmp_path, "proj/a.py", DP)
    shared = tmp_path / "shared-cache"
    first = invoke(["check", TWO, "--cache-dir", shared], tmp_path / "proj", cache=True)
    assert not (tmp_path / "proj" / ".gpulint_cache").exists()
    [entry] = [p for p in shared.iterdir() if p.suffix == ".json"]
    assert entry.name.startswith("v")  # named for the project root, so projects can share the folder
    counting.clear()
    second = invoke(["check", TWO], tmp_path / "proj", env={"GPULINT_CACHE_DIR": str(shared)}, cache=True)
    assert counting == [] and second.stdout == first.stdout


def test_clean_removes_the_cache(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.gpulint]\n")
    write(tmp_path, "a.py", DP)
    invoke(["check", TWO], tmp_path, cache=True)
    invoke(["check", TWO, "--cache-dir", tmp_path / "elsewhere"], tmp_path, cache=True)
    assert (tmp_path / ".gpulint_cache").is_dir() and (tmp_path / "elsewhere").is_dir()
    res = invoke(["clean", "--cache-dir", tmp_path / "elsewhere"], tmp_path)
    assert res.exit_code == 0 and res.stdout.count("Removed") == 2
    assert not (tmp_path / ".gpulint_cache").exists() and not (tmp_path / "elsewhere").exists()
    res = invoke(["clean"], tmp_path)
    assert res.exit_code == 0 and "No cache" in res.stdout


def test_findings_are_the_same_cold_warm_parallel_and_without_prefilter(tmp_path, monkeypatch):
    """The speed levers never change a result: the fixtures (hundreds of
    findings, every rule) linted cold, from a warm cache, with 1 or 2 workers,
    and with the text pre-filter switched off give identical reports."""
    import shutil

    from helpers import FIXTURES

    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    args = ["check", "--select", "ALL", "--output-format", "json", "fixtures"]
    cold = invoke(args + ["-j", "2", "--no-cache"], tmp_path)
    assert len(json.loads(cold.stdout)) > 100
    cold1 = invoke(args + ["-j", "1", "--no-cache"], tmp_path)
    fill = invoke(args + ["-j", "2"], tmp_path, cache=True)
    warm = invoke(args + ["-j", "2"], tmp_path, cache=True)
    assert (tmp_path / ".gpulint_cache").is_dir()
    from gpulint.engine import lint as engine

    monkeypatch.setattr(engine, "_wanted", lambda rule, text: True)
    unfiltered = invoke(args + ["-j", "1", "--no-cache"], tmp_path)
    for res in (cold1, fill, warm, unfiltered):
        assert res.exit_code == cold.exit_code == 1
        assert res.stdout == cold.stdout


def test_cycle_collector_is_paused_per_file_and_restored(tmp_path, monkeypatch):
    """The collector is off while a file is linted (it would re-scan the live
    tree for nothing) and back on after, also when the file fails; a caller
    that turned it off itself keeps it off."""
    import gc
    import textwrap

    from gpulint.engine import lint as engine
    from gpulint.engine import files
    from gpulint.engine import project
    from gpulint.registry import all_rules

    seen = []

    def fake_lint_file(path, options, keep_source=False, project=None):
        seen.append(gc.isenabled())
        if path == "boom":
            raise RuntimeError("boom")
        return files.FileResult(path, [])

    monkeypatch.setattr(project, "lint_file", fake_lint_file)
    assert gc.isenabled()
    project.lint_job(("a.py", None, False, None))
    with pytest.raises(RuntimeError):
        project.lint_job(("boom", None, False, None))
    assert seen == [False, False]
    assert gc.isenabled()
    gc.disable()
    try:
        project.lint_job(("b.py", None, False, None))
        assert not gc.isenabled()
    finally:
        gc.enable()
    # and the real engine leaves no garbage cycle uncollected for long:
    # linting many files keeps the collector's youngest generation small
    f = tmp_path / "t.py"
    f.write_text(textwrap.dedent(all_rules()["GPU101"].examples[0].bad))
    opts = engine.LintOptions(codes=("GPU101",))
    for _ in range(200):
        with engine.collector_paused():
            assert not gc.isenabled()
            assert [x.code for x in files.lint_file(str(f), opts).findings] == ["GPU101"]
    assert gc.isenabled()
    assert gc.get_count()[0] < 5000
