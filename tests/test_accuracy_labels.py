"""The labelled corpora of bench/accuracy.py: every CSV loads (pinned
packages or commits, known verdicts, no site labelled twice), and a GitHub
repository's tree is unpacked from its archive where the script expects it."""

from __future__ import annotations

import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _accuracy():
    spec = importlib.util.spec_from_file_location("accuracy_bench", ROOT / "bench" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("which", ["first", "second", "third", "fourth", "fifth", "sixth", "seventh"])
def test_every_label_file_loads(which, monkeypatch):
    acc = _accuracy()
    if which != "first":
        monkeypatch.setattr(acc, "PACKAGES", acc.CORPUS_SETS[which])
        monkeypatch.setattr(acc, "LABELS", ROOT / "bench" / f"labels-{which}")
    rows = acc.load_labels()
    assert rows, which
    assert {(r["package"], r["version"]) for r in rows} <= set(acc.PACKAGES)


@pytest.mark.parametrize("which", ["sixth", "seventh"])
def test_the_later_corpora_are_github_repositories_pinned_to_commits(which):
    acc = _accuracy()
    repos = acc.CORPUS_SETS[which]
    assert len(repos) >= 8
    for repo, commit in repos:
        assert "/" in repo and len(commit) == 40 and int(commit, 16) >= 0


def test_a_github_archive_is_unpacked_without_its_top_folder(tmp_path, monkeypatch):
    acc = _accuracy()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        data = b"for x in loader: pass\n"
        info = tarfile.TarInfo("repo-abc/train.py")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    buf.seek(0)
    monkeypatch.setattr(acc.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(buf.getvalue()))
    commit = "a" * 40
    dest = acc.fetch_github(tmp_path, "owner/repo", commit)
    assert dest == acc.github_dir(tmp_path, "owner/repo", commit)
    assert (dest / "train.py").read_text() == "for x in loader: pass\n"
    assert acc.fetch_github(tmp_path, "owner/repo", commit) == dest  # unpacked once


def test_no_repository_or_package_is_in_two_corpora():
    acc = _accuracy()
    names = [n for n, _ in acc.PACKAGES] + [n for group in acc.CORPUS_SETS.values() for n, _ in group]
    assert len(names) == len(set(names))
