"""Source read from stdin (`gpulint check -`, `--stdin-filename`), as editors
and `ruff check --stdin-filename` use it: the same findings and fixes as for
the file, the file's config, and `fix --apply` never loses the input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from cli_helpers import DP, ZG, findings, write

from gpulint.frontends.cli import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "train_classifier.py"


def run(args, cwd: Path, data: bytes):
    env = {"NO_COLOR": "1", "GPULINT_NO_CACHE": "1", "FORCE_COLOR": None, "GPULINT_DEBUG": None}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(cli, [str(a) for a in args], input=data, env=env)
    finally:
        os.chdir(old)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res


def test_check_dash_reads_stdin(tmp_path):
    res = run(["check", "--select", "GPU001", "-"], tmp_path, DP.encode())
    assert res.exit_code == 1
    assert findings(res.stdout) == [("-", 4, 9, "GPU001")]
    js = run(["check", "--select", "GPU001", "--output-format", "json", "-"], tmp_path, DP.encode())
    assert [d["filename"] for d in json.loads(js.stdout)] == ["-"]
    clean = run(["check", "-"], tmp_path, b"import os\n")
    assert clean.exit_code == 0 and "All checks passed!" in clean.stdout


def test_stdin_filename_names_the_file_and_picks_its_config(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001", "GPU302"]\n'
                                      '[tool.gpulint.per-file-ignores]\n"tests/*" = ["GPU001"]\n')
    res = run(["check", "--stdin-filename", "src/train.py"], tmp_path, (DP + ZG.replace("import torch\n", "")).encode())
    assert [f[3] for f in findings(res.stdout)] == ["GPU001", "GPU302"]
    assert all(f[0] == "src/train.py" for f in findings(res.stdout))
    res = run(["check", "--stdin-filename", "tests/test_x.py", "-"], tmp_path, DP.encode())
    assert res.exit_code == 0, res.output  # per-file-ignores of tests/*
    js = run(["check", "--output-format", "json", "--stdin-filename", "src/a.py"], tmp_path, DP.encode())
    # absolute, as Ruff's JSON and as for files
    assert [d["filename"] for d in json.loads(js.stdout)] == [str(tmp_path / "src" / "a.py")]


def test_force_exclude_applies_to_the_stdin_filename(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nextend-exclude = ["legacy"]\n')
    res = run(["check", "--force-exclude", "--stdin-filename", "legacy/old.py"], tmp_path, DP.encode())
    assert res.exit_code == 0 and not findings(res.stdout)
    assert run(["check", "--stdin-filename", "legacy/old.py"], tmp_path, DP.encode()).exit_code == 1
    fixed = run(["fix", "--apply", "--force-exclude", "--stdin-filename", "legacy/old.py"], tmp_path, DP.encode())
    assert fixed.exit_code == 0 and fixed.stdout_bytes == DP.encode()


def test_fix_apply_prints_what_fix_apply_writes(tmp_path):
    """Byte for byte, also for CRLF, a PEP 263 coding line and a BOM."""
    base = EXAMPLE.read_text()
    variants = {
        "plain.py": base.encode(),
        "crlf.py": base.replace("\n", "\r\n").encode(),
        "latin.py": ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + base).encode("latin-1"),
        "bom.py": b"\xef\xbb\xbf" + base.encode(),
    }
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        res = run(["fix", "--apply", "--unsafe-fixes", "--stdin-filename", name], tmp_path, data)
        assert res.exit_code == 1, res.output  # findings without a fix remain
        assert "remaining" in res.stderr
        on_disk = run(["fix", "--apply", "--unsafe-fixes", name], tmp_path, b"")
        assert on_disk.exit_code == 1
        assert res.stdout_bytes == (tmp_path / name).read_bytes() != data, name


def test_fix_without_apply_prints_the_same_diff_as_for_the_file(tmp_path):
    (tmp_path / "train.py").write_bytes(EXAMPLE.read_bytes())
    from_file = run(["fix", "train.py"], tmp_path, b"")
    from_stdin = run(["fix", "--stdin-filename", "train.py"], tmp_path, EXAMPLE.read_bytes())
    assert from_stdin.exit_code == from_file.exit_code == 1
    assert from_stdin.stdout == from_file.stdout and from_stdin.stdout.startswith("--- a/train.py")
    diff = run(["check", "--diff", "--stdin-filename", "train.py"], tmp_path, EXAMPLE.read_bytes())
    assert diff.stdout == from_file.stdout


def test_fix_apply_gives_the_input_back_when_it_cannot_fix(tmp_path):
    bad = b"def f(:\n    pass\n"
    res = run(["fix", "--apply", "-"], tmp_path, bad)
    assert res.exit_code == 1 and res.stdout_bytes == bad
    assert "syntax error" in res.stderr
    nul = b"x = 1\x00\n"
    res = run(["fix", "--apply", "--stdin-filename", "a.py"], tmp_path, nul)
    assert res.exit_code == 1 and res.stdout_bytes == nul
    write(tmp_path, "pyproject.toml", "[tool.gpulint\n")
    res = run(["fix", "--apply", "--stdin-filename", "a.py"], tmp_path, DP.encode())
    assert res.exit_code == 2 and res.stdout_bytes == DP.encode()


def test_a_notebook_on_stdin(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": DP.splitlines(keepends=True)}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    res = run(["check", "--select", "GPU001", "--stdin-filename", "nb.ipynb"], tmp_path, json.dumps(nb).encode())
    assert res.exit_code == 1
    assert "nb.ipynb:cell 2:4:9: GPU001" in res.stdout


def test_usage_errors(tmp_path):
    write(tmp_path, "a.py", DP)
    for args in (["check", "-", "a.py"], ["check", "--stdin-filename", "x.py", "a.py"],
                 ["check", "--add-noqa", "-"], ["fix", "-", "a.py"]):
        res = run(args, tmp_path, DP.encode())
        assert res.exit_code == 2, (args, res.output)
    assert (tmp_path / "a.py").read_text() == DP


def test_too_large_input_is_one_clear_error(tmp_path, monkeypatch):
    from gpulint.engine import lint as engine

    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 16)
    res = run(["check", "-"], tmp_path, DP.encode())
    assert res.exit_code == 2 and "too large" in res.stderr


def test_real_pipe_in_a_subprocess(tmp_path):
    """Through a real pipe, not click's test runner."""
    env = dict(os.environ, GPULINT_NO_CACHE="1", NO_COLOR="1")
    res = subprocess.run([sys.executable, "-m", "gpulint", "fix", "--apply", "--stdin-filename", "t.py"],
                         input=EXAMPLE.read_bytes(), cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert res.returncode == 1
    assert b"from torch.amp import GradScaler, autocast" in res.stdout
    assert b"Fixed 6 problems" in res.stderr


def test_check_fix_on_stdin_prints_the_fixed_source(tmp_path):
    # as `ruff check --fix -`: what `gpulint fix --apply -` prints
    data = b"import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
    res = run(["check", "--select", "GPU401", "--fix", "-"], tmp_path, data)
    assert res.exit_code == 0
    assert res.stdout == run(["fix", "--select", "GPU401", "--apply", "-"], tmp_path, data).stdout
    assert 'torch.amp.autocast("cuda")' in res.stdout
