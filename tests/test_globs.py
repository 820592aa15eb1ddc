"""gpulint.engine.globs: gitignore-style patterns matched without regular expressions.

The matcher must say what pathspec's GitIgnoreSpec (which gpulint used
before) says, on random patterns and paths; must give the right answer on
patterns that made pathspec's regular expressions backtrack for minutes;
and indexes 100,000 patterns so a path is tested against the few that can
match it."""

from __future__ import annotations

import re
import warnings

import pathspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulint.engine.config import Settings
from gpulint.engine.globs import PatternSet, compile_pattern, split_path

# pieces of a pattern's segment: literals, wildcards, classes and escapes. The
# only negated classes are whole pieces ("[!a]"), so the reference below can
# keep pathspec's negated classes off "/" (see _reference)
SEGMENT_PIECES = list("ab.-*?[]\\ #") + ["**", "[!a]", "[!ab]", "[a-c]", "\\*", "*a", "[]a]", "\\!", "\\#"]
segment = st.lists(st.sampled_from(SEGMENT_PIECES), max_size=4).map("".join)
pattern = st.builds(
    lambda neg, lead, segs, trail: ("!" if neg else "") + ("/" if lead else "") + "/".join(segs) + ("/" if trail else ""),
    st.booleans(), st.booleans(), st.lists(segment, min_size=1, max_size=4), st.booleans(),
)
# path segments as a walk makes them: never empty, "." or ".."
name = st.lists(st.sampled_from(list("ab.-*[]!#\\ ^")), min_size=1, max_size=4).map("".join).filter(
    lambda s: s not in (".", "..")
)
path = st.builds(lambda segs, d: "/".join(segs) + ("/" if d else ""), st.lists(name, min_size=1, max_size=5),
                 st.booleans())


def _reference(lines):
    """pathspec's GitIgnoreSpec of the lines, or None where pathspec rejects
    them. Its one difference from git, which gpulint does not copy, is undone:
    a negated class (`[!a]`, regex `[^a]`) can match a "/" there, so `a[!a]`
    matched the folder `a/`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except Exception:
            return None
        for p in spec.patterns:
            if p.regex is not None:
                p.regex = re.compile(p.regex.pattern.replace("[^", "[^/"))
    return spec


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(st.lists(pattern, min_size=1, max_size=4), st.lists(path, min_size=1, max_size=6))
def test_agrees_with_pathspec(lines, paths):
    spec = _reference(lines)
    if spec is None:
        return
    mine = PatternSet(lines)
    for p in paths:
        assert mine.check(p) == spec.check_file(p).include, (lines, p)
        assert mine.match(p) == spec.match_file(p), (lines, p)


@FUZZ
@given(st.lists(pattern.map(lambda p: p.lstrip("!")), min_size=1, max_size=4),
       st.lists(st.lists(name, min_size=1, max_size=4), min_size=1, max_size=6))
def test_a_walk_finds_what_it_found_with_pathspec(lines, files):
    """A walk tests each entry itself (`match_entry`) and prunes excluded
    folders; without `!` patterns it keeps exactly the files it kept when it
    matched every entry's whole path with pathspec."""
    spec = _reference(lines)
    if spec is None:
        return
    mine = PatternSet(lines)
    for segs in files:
        entries = [("/".join(segs[:k]), k < len(segs)) for k in range(1, len(segs) + 1)]
        before = any(spec.match_file(p + ("/" if d else "")) for p, d in entries)
        assert any(mine.match_entry(p, d) for p, d in entries) == before, (lines, segs)


def test_a_walk_follows_git_where_a_folder_is_re_included():
    """`a/` ignores every folder named a, `!/a` re-includes the top one; git
    still ignores `a/a/` (the re-inclusion names only `a`), and so does the
    walk. pathspec, asked about the whole path `a/a/x.py`, let `!/a` carry
    down to it."""
    lines = ["a/", "!/a"]
    mine = PatternSet(lines)
    assert not mine.match_entry("a", True)
    assert mine.match_entry("a/a", True)
    assert not pathspec.GitIgnoreSpec.from_lines(lines).match_file("a/a/x.py")


@pytest.mark.parametrize("lines, path, expected", [
    (["build"], "build/", True), (["build"], "src/build/x.py", True), (["build"], "rebuild/", None),
    (["/top.py"], "top.py", True), (["/top.py"], "sub/top.py", None),
    (["docs/"], "docs", None), (["docs/"], "docs/", True), (["docs/"], "docs/conf.py", True),
    (["a/**/b"], "a/b", True), (["a/**/b"], "a/x/y/b", True), (["a/**/b"], "a/x/y/c", None),
    (["*.py", "!keep*"], "keep.py", False), (["*.py", "!keep*"], "x.py", True),
    (["[!a]c"], "bc", True), (["[!a]c"], "ac", None), (["[a-c]x"], "bx", True), (["[]a]"], "]", True),
    (["\\#x"], "#x", True), (["# comment"], "# comment", None), (["\\!x"], "!x", True),
    (["x\\ "], "x ", True), (["x  "], "x", True), ([""], "x", None), (["/"], "x", None),
    (["a[b"], "a[b", None),  # an unclosed class: git drops the pattern
    (["x\\"], "x", None),  # a trailing backslash: pathspec raises, git matches nothing
    (["[z-a]x", "[z-ab]y"], "by", True),  # a reversed range matches nothing; the rest of the class does
    (["a[!a]"], "a/", None),  # a class never matches "/" (pathspec's regex let `[^a]` match it)
])
def test_cases(lines, path, expected):
    assert PatternSet(lines).check(path) is expected


# --------------------------------------------------------------- slow for regexes
def test_a_glob_of_2000_stars():
    """pathspec made `*` * 2000 a regular expression that backtracked for
    minutes (100 stars: 38 s); it is one star, matching every name."""
    stars = PatternSet(["*" * 2000])
    assert stars.match("src/deep/path/train.py")
    assert stars.match("x")
    assert not PatternSet(["*" * 2000 + "b"]).match("a" * 5000)
    assert PatternSet(["a" + "*" * 2000 + "b"]).match("a" + "x" * 5000 + "b")


def test_star_a_star_a_patterns_against_long_names():
    glob = "*a" * 500 + "*b"
    long_name = "a" * 20000
    assert not PatternSet([glob]).match(long_name)
    assert not PatternSet([glob]).match("/".join(["a" * 200] * 100))
    assert PatternSet([glob]).match(long_name + "b")
    assert PatternSet(["/".join(["*a*a*a*b"] * 20)]).match("/".join(["xaxaxaxb"] * 20))


def test_many_double_stars_against_a_deep_path():
    deep = "/".join(["a"] * 5000)
    assert not PatternSet(["/".join(["a", "**"] * 200) + "/b"]).match(deep)
    assert PatternSet(["/".join(["a", "**"] * 200) + "/b"]).match(deep + "/b")
    assert PatternSet(["**/" * 300 + "b"]).match(deep + "/b")


def _mixed_patterns(n):
    out = []
    for i in range(n):
        out.append((f"pkg{i}/mod.py", f"dir{i}/**", f"*.gen{i}.py", f"test_{i}_*", f"[ab]{i}/*.py")[i % 5])
    return out


def test_100000_patterns_give_the_answers_of_each_pattern_alone():
    lines = _mixed_patterns(100_000)
    index = PatternSet(lines)
    samples = ["pkg0/mod.py", "pkg5/mod.py", "pkg6/mod.py", "dir1/x/y.py", "dir2/x.py", "m.gen2.py", "a/m.gen7.py",
               "test_3_x.py", "b4/z.py", "c4/z.py", "sub/pkg0/mod.py", "nothing.py", "dir1", "dir1/"]
    subset = [i for i in range(0, 100_000) if i < 50 or i % 9973 == 0]  # the ones the samples can hit, and others
    for p in samples:
        want = [i for i in subset if compile_pattern(lines[i]).priority(split_path(p))]
        got = [i for i in index.matching(p) if i in set(subset)]
        assert got == want, p
    assert index.matching("pkg5/mod.py") == [5]
    assert index.matching("dir1/x/y.py") == [1]
    assert index.matching("sub/m.gen2.py") == [2]
    assert index.matching("b4/z.py") == [4] and index.matching("c4/z.py") == []


def test_per_file_ignores_with_100000_patterns():
    table = tuple((p, ("GPU001",) if i % 2 else ("GPU101",)) for i, p in enumerate(_mixed_patterns(100_000)))
    s = Settings(root="/proj", per_file_ignores=table, select=("GPU001", "GPU101"))
    assert s.codes_for("/proj/pkg0/mod.py") == ("GPU001",)  # pattern 0 ignores GPU101
    assert s.codes_for("/proj/dir1/a/b.py") == ("GPU101",)  # pattern 1 ignores GPU001
    assert s.codes_for("/proj/x/m.gen2.py") == ("GPU001",)  # by name, at any depth
    assert s.codes_for("/proj/other.py") == ("GPU001", "GPU101")
    assert s.per_file_ignore_patterns is s.per_file_ignore_patterns  # compiled once per Settings


def test_per_file_ignores_glob_of_2000_stars_in_a_run(tmp_path):
    from cli_helpers import DP, findings, invoke, write

    write(tmp_path, "pyproject.toml", f'[tool.gpulint.per-file-ignores]\n"{"*" * 2000}" = ["GPU001"]\n'
                                      f'"{"*a" * 300}*b" = ["GPU302"]\n')
    write(tmp_path, "a" * 100 + ".py", DP)
    res = invoke(["check", "--select", "GPU001,GPU302", "."], tmp_path)
    assert findings(res.stdout) == [] and res.exit_code == 0


def test_100000_excludes_in_a_walk(tmp_path):
    from cli_helpers import DP, findings, invoke, write

    lines = _mixed_patterns(100_000)
    write(tmp_path, "pyproject.toml", "[tool.gpulint]\nextend-exclude = [\n" + "".join(f'  "{p}",\n' for p in lines) + "]\n")
    for rel in ("pkg0/mod.py", "pkg1/mod.py", "dir1/x.py", "src/m.gen2.py", "src/m.gen3.py", "test_3_a.py", "a4/b.py"):
        write(tmp_path, rel, DP)
    res = invoke(["check", "--select", "GPU001", "."], tmp_path)
    assert sorted(p.replace("\\", "/") for p, *_ in findings(res.stdout)) == ["pkg1/mod.py", "src/m.gen3.py"]
