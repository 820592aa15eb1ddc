"""The pre-commit hooks, for real: `pre-commit try-repo` against a snapshot
of this checkout (its tracked and untracked-but-not-ignored files, so the
test sees the working tree), and real `git commit`s / `pre-commit run`s
through a config that points at the same snapshot. pre-commit pip-installs
gpulint into its own virtualenv (dependencies from PyPI): try-repo does that
in a throwaway store on every call, so only two cases use it; the others
share one store (PRE_COMMIT_HOME) and install once.

pre-commit is a test dependency (`pip install -e .[test]`); when it is
missing these tests fail, they are not skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import CLEAN, DP

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"


def _pre_commit_cmd():
    exe = shutil.which("pre-commit")
    if exe:
        return [exe]
    probe = subprocess.run([sys.executable, "-m", "pre_commit", "--version"], capture_output=True, text=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "pre_commit"]
    pytest.fail("pre-commit is not installed: `pip install pre-commit` (it is in the `test` extra)", pytrace=False)


def _git_env(home: Path) -> dict:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="gpulint tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="gpulint tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),  # no user-level git config or hooks (HOME stays: pip's cache)
        PRE_COMMIT_HOME=str(home / "pre-commit-store"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PRE_COMMIT_COLOR="never",
        GPULINT_NO_CACHE="1",
    )
    for k in ("NO_COLOR", "FORCE_COLOR", "PRE_COMMIT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(k, None)
    return env


def _git(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    cmd = _pre_commit_cmd()
    base = tmp_path_factory.mktemp("precommit")
    home = base / "home"
    home.mkdir()
    env = _git_env(home)

    # A committed snapshot of this checkout, so try-repo and `rev:` see exactly the working tree.
    hook_repo = base / "gpulint-snapshot"
    hook_repo.mkdir()
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            dst = hook_repo / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    assert (hook_repo / ".pre-commit-hooks.yaml").is_file() and (hook_repo / "pyproject.toml").is_file()
    _git(hook_repo, env, "init", "-q")
    _git(hook_repo, env, "add", "-A")
    _git(hook_repo, env, "commit", "-q", "-m", "snapshot")
    rev = _git(hook_repo, env, "rev-parse", "HEAD").stdout.strip()
    state = {"cmd": cmd, "env": env, "base": base, "hook_repo": hook_repo, "rev": rev}

    # try-repo installs into a throwaway store on every call (~15 s each): start both
    # now, in the background, while the other tests use the shared store.
    state["try_finding"] = _Background(
        _try_repo_cmd(state), _work_repo(state, "with-finding", {"train.py": DP, "README.md": "# project\n"}), env
    )
    state["try_no_python"] = _Background(
        _try_repo_cmd(state),
        _work_repo(state, "no-python", {"README.md": "# docs only\n", "data/config.yaml": "a: 1\n"}),
        env,
    )
    yield state
    for key in ("try_finding", "try_no_python"):
        state[key].result()  # never leave a process behind


class _Background:
    def __init__(self, cmd, cwd, env):
        self._proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._done = None

    def result(self):
        """(returncode, output) once the process has finished."""
        if self._done is None:
            try:
                out, _ = self._proc.communicate(timeout=900)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                out, _ = self._proc.communicate()
            self._done = (self._proc.returncode, out)
        return self._done


def _work_repo(setup, name: str, files: dict) -> Path:
    repo = setup["base"] / name
    repo.mkdir()
    _git(repo, setup["env"], "init", "-q")
    for rel, text in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if files:
        _git(repo, setup["env"], "add", "-A")
    return repo


def _try_repo_cmd(setup, hook: str = "gpulint") -> list:
    return [*setup["cmd"], "try-repo", str(setup["hook_repo"]), hook, "--ref", setup["rev"], "--all-files"]


def test_manifest_is_valid_and_declares_both_hooks(setup):
    res = subprocess.run([*setup["cmd"], "validate-manifest", str(MANIFEST)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    import yaml  # pre-commit depends on PyYAML

    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    assert set(hooks) == {"gpulint", "gpulint-fix"}
    assert hooks["gpulint"]["entry"].split()[:2] == ["gpulint", "check"]
    assert hooks["gpulint-fix"]["entry"].split()[:3] == ["gpulint", "fix", "--apply"]
    for h in hooks.values():
        assert h["language"] == "python"
        assert h["types_or"] == ["python", "pyi", "jupyter"]  # as Ruff's hooks: notebooks too
        assert h["require_serial"] is True


def _config(setup, hook: str = "gpulint") -> str:
    return (
        "repos:\n"
        f"  - repo: {setup['hook_repo']}\n"
        f"    rev: {setup['rev']}\n"
        "    hooks:\n"
        f"      - id: {hook}\n"
    )


def _run(setup, repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*setup["cmd"], "run", "--all-files"], cwd=repo, env=setup["env"], capture_output=True, text=True, timeout=900
    )


def test_real_commits_through_the_installed_hook(setup):
    env = setup["env"]
    repo = _work_repo(setup, "committing", {".pre-commit-config.yaml": _config(setup), "README.md": "# hi\n"})
    subprocess.run([*setup["cmd"], "install"], cwd=repo, env=env, check=True, capture_output=True)

    # a commit with no Python files passes
    ok = subprocess.run(["git", "commit", "-m", "docs"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    # a commit of a Python file with a finding is stopped
    (repo / "train.py").write_text(DP)
    _git(repo, env, "add", "train.py")
    bad = subprocess.run(["git", "commit", "-m", "dp"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, out
    assert "train.py:4:9: GPU001" in out
    assert _git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "1"

    # fixed (here: suppressed), it goes through
    (repo / "train.py").write_text(DP.replace("nn.Linear(4, 4))", "nn.Linear(4, 4))  # noqa: GPU001"))
    _git(repo, env, "add", "train.py")
    good = subprocess.run(["git", "commit", "-m", "dp"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert _git(repo, env, "rev-list", "--count", "HEAD").stdout.strip() == "2"


def test_run_passes_on_clean_python_and_stub_files(setup):
    repo = _work_repo(
        setup,
        "clean",
        {".pre-commit-config.yaml": _config(setup), "app.py": CLEAN, "stubs/app.pyi": "def f() -> int: ...\n"},
    )
    res = _run(setup, repo)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "Passed" in out


def test_run_fails_on_a_finding_in_a_stub_file(setup):
    repo = _work_repo(
        setup, "stub-finding", {".pre-commit-config.yaml": _config(setup), "lib.pyi": DP}
    )
    res = _run(setup, repo)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "lib.pyi:4:9: GPU001" in out


def test_run_fails_on_a_finding_in_a_notebook(setup):
    import json

    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Training\n"]},
            {"cell_type": "code", "execution_count": None, "id": "model", "metadata": {}, "outputs": [],
             "source": DP.splitlines(keepends=True)},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    repo = _work_repo(
        setup, "notebook-finding",
        {".pre-commit-config.yaml": _config(setup), "train.ipynb": json.dumps(nb, indent=1) + "\n", "ok.py": CLEAN},
    )
    res = _run(setup, repo)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "train.ipynb:cell 2:4:9: GPU001" in out


def test_hook_respects_config_exclude(setup):
    repo = _work_repo(
        setup,
        "excluding",
        {
            ".pre-commit-config.yaml": _config(setup),
            "pyproject.toml": '[tool.gpulint]\nextend-exclude = ["vendored"]\n',
            "vendored/dp.py": DP,
            "ok.py": CLEAN,
        },
    )
    res = _run(setup, repo)
    assert res.returncode == 0, res.stdout + res.stderr


AMP = """\
import torch

scaler = torch.cuda.amp.GradScaler()  # old spelling
"""


def test_fix_hook_rewrites_the_file_then_passes(setup):
    repo = _work_repo(setup, "fixing", {".pre-commit-config.yaml": _config(setup, "gpulint-fix"), "train.py": AMP})
    first = _run(setup, repo)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in out
    assert (repo / "train.py").read_text() == AMP.replace(
        "torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")'
    )
    second = _run(setup, repo)
    assert second.returncode == 0, second.stdout + second.stderr


# last: by now the background try-repo runs have had the time they need
def test_try_repo_fails_on_a_finding(setup):
    rc, out = setup["try_finding"].result()
    assert rc == 1, out
    assert "train.py:4:9: GPU001" in out
    assert "Traceback" not in out


def test_try_repo_with_no_python_files_passes(setup):
    rc, out = setup["try_no_python"].result()
    assert rc == 0, out
    assert "(no files to check)" in out and "Skipped" in out


# ------------------------------------------------------------ the README's snippet
README = ROOT / "README.md"


def _readme_snippet() -> dict:
    """The `.pre-commit-config.yaml` the README's pre-commit section shows."""
    import re

    import yaml

    section = README.read_text(encoding="utf-8").split("## pre-commit", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "the README's pre-commit section has no yaml block"
    return yaml.safe_load(block.group(1))


def _git_root(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_readme_snippet_rev_resolves_in_this_repository():
    """The README's `rev` is a full commit id of this repository whose hooks are
    the ones documented (the manifest's entries now): a user who copies the
    snippet gets what it says."""
    import yaml

    [repo] = _readme_snippet()["repos"]
    rev = str(repo["rev"])
    assert len(rev) == 40 and all(c in "0123456789abcdef" for c in rev), f"rev {rev!r} is not a full commit id"
    shallow = _git_root("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    found = _git_root("cat-file", "-e", f"{rev}^{{commit}}")
    assert found.returncode == 0, (
        f"the README's rev {rev} is not a commit of this repository"
        + (" (this clone is shallow: fetch the history with `git fetch --unshallow`)" if shallow else "")
    )
    manifest_then = _git_root("show", f"{rev}:.pre-commit-hooks.yaml")
    assert manifest_then.returncode == 0, manifest_then.stderr
    then = {h["id"]: h for h in yaml.safe_load(manifest_then.stdout)}
    now = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    ids = [h["id"] for h in repo["hooks"]]
    assert ids == ["gpulint-fix", "gpulint"]  # the fixer first: `gpulint` then reports what is left
    for hook_id in ids:
        assert then[hook_id]["entry"] == now[hook_id]["entry"], f"{hook_id} changed since {rev}: update the README's rev"


def test_readme_snippet_runs_and_prints_each_finding_once(setup):
    """The README's config, pointed at this repository (a local clone works as
    `repo:`), at the README's rev: the fix hook rewrites what it can and
    lists nothing, the check hook lists what is left, once."""
    snippet = _readme_snippet()
    snippet["repos"][0]["repo"] = str(ROOT)
    import yaml

    files = {".pre-commit-config.yaml": yaml.safe_dump(snippet), "train.py": AMP + DP.replace("import torch\n", "")}
    repo = _work_repo(setup, "readme-snippet", files)
    first = _run(setup, repo)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "files were modified by this hook" in out
    assert 'torch.amp.GradScaler("cuda")' in (repo / "train.py").read_text()
    assert out.count("train.py:6:9: GPU001") == 1, out  # once, from `gpulint`, not again from `gpulint-fix`
    assert "GPU401" not in out  # fixed, so reported by nobody
    second = _run(setup, repo)
    out = second.stdout + second.stderr
    assert second.returncode == 1, out
    assert out.count("train.py:6:9: GPU001") == 1, out
    assert "files were modified by this hook" not in out
