"""gpulint fix never breaks code and never loses data."""

from __future__ import annotations

import difflib
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from helpers import FIXTURES, ROOT, fixture_torch_version, options
from gpulint.cli import cli
from gpulint.engine import lint_source
from gpulint.fixes import fix_source

FIXTURE_FILES = sorted(FIXTURES.rglob("*.py"))


def _invoke(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(old)


# ------------------------------------------------------------ never break code
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_fix_is_idempotent_parses_and_touches_only_its_edits(path):
    text = path.read_text(encoding="utf-8")
    opts = options(torch_version=fixture_torch_version(text))
    first = fix_source(text, str(path), opts, unsafe=True)
    compile(first.text, str(path), "exec")
    # a second run changes nothing
    second = fix_source(first.text, str(path), opts, unsafe=True)
    assert second.text == first.text
    assert not second.fixed
    # no fixed finding is reported again
    fixed_codes_lines = {(f.code, f.row) for f in first.fixed}
    assert not [f for f in first.remaining if f.fix is not None], "a fixable finding survived the fixpoint"
    # every line outside the fixed findings' edits is byte-for-byte the same
    if first.fixed:
        touched = set()
        for f in first.fixed:
            for e in f.fix.edits:
                touched.update(range(e.location[0], e.end_location[0] + 1))
        old_lines = text.splitlines(keepends=True)
        new_lines = first.text.splitlines(keepends=True)
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False).get_opcodes():
            if tag != "equal":
                changed = set(range(i1 + 1, i2 + 1)) or {i1, i1 + 1}
                assert changed & touched, f"lines {i1 + 1}-{i2} changed outside any fix edit"
    assert fixed_codes_lines is not None


def test_a_fix_that_would_break_code_is_refused_and_reported(tmp_path, monkeypatch):
    import gpulint.rules.zero_grad_not_set_to_none as gpu302
    from gpulint.rule import Edit

    def broken(source, node, text):
        s, e = source.node_span(node)
        return Edit(s, e, "True((")

    monkeypatch.setattr(gpu302, "replace_node", broken)
    p = tmp_path / "train.py"
    original = "def step(opt):\n    opt.zero_grad(set_to_none=False)\n"
    p.write_text(original)
    res = _invoke(["fix", "--apply", "--unsafe-fixes", "--no-cache", "--select", "GPU302", "train.py"], tmp_path)
    assert p.read_text() == original
    assert res.exit_code == 1
    assert "train.py" in res.output and "GPU302" in res.output and "invalid code" in res.output
    assert "Traceback" not in res.output


# ------------------------------------------------------------ config control
def test_unfixable_and_fixable_keys(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nunfixable = ["GPU401"]\n')
    p = tmp_path / "a.py"
    src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    p.write_text(src)
    res = _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    assert p.read_text() == src
    assert "a.py:2:10: GPU401" in res.output
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nfixable = ["GPU3"]\n')
    res = _invoke(["check", "--no-cache", "a.py"], tmp_path)
    assert "GPU401 [*]" not in res.output and "GPU401" in res.output


def test_extend_safe_and_unsafe_fixes(tmp_path):
    p = tmp_path / "a.py"
    src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n\ndef f(opt):\n    opt.zero_grad(set_to_none=False)\n"
    p.write_text(src)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gpulint]\nextend-safe-fixes = ["GPU302"]\nextend-unsafe-fixes = ["GPU401"]\n'
    )
    res = _invoke(["check", "--no-cache", "a.py"], tmp_path)
    assert "GPU302 [*]" in res.output
    assert "GPU401 [*]" not in res.output
    _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    text = p.read_text()
    assert "set_to_none=True" in text and "torch.cuda.amp.GradScaler()" in text


def test_unknown_code_in_fix_keys_is_a_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nunfixable = ["GPU999"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    res = _invoke(["fix", "a.py"], tmp_path)
    assert res.exit_code == 2
    assert "unfixable" in res.output and "GPU999" in res.output


def test_check_diff_shows_the_fix_diff(tmp_path):
    p = tmp_path / "a.py"
    src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    p.write_text(src)
    res = _invoke(["check", "--diff", "--no-cache", "a.py"], tmp_path)
    assert res.exit_code == 1
    assert '+scaler = torch.amp.GradScaler("cuda")' in res.output
    assert p.read_text() == src


def test_json_and_sarif_carry_fix_edits(tmp_path):
    import json

    (tmp_path / "a.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    res = _invoke(["check", "--no-cache", "--output-format", "json", "a.py"], tmp_path)
    [item] = json.loads(res.output)
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"] and all("content" in e for e in item["fix"]["edits"])
    res = _invoke(["check", "--no-cache", "--output-format", "sarif", "a.py"], tmp_path)
    sarif = json.loads(res.output)
    [result] = sarif["runs"][0]["results"]
    assert result["fixes"][0]["artifactChanges"][0]["replacements"]


# ------------------------------------------------------------ never lose data
def test_coding_line_and_missing_final_newline_are_kept(tmp_path):
    p = tmp_path / "latin.py"
    src = "# -*- coding: latin-1 -*-\n# caf\xe9\nimport torch\nscaler = torch.cuda.amp.GradScaler()"
    p.write_bytes(src.encode("latin-1"))
    res = _invoke(["fix", "--apply", "--no-cache", "latin.py"], tmp_path)
    assert res.exit_code == 0, res.output
    assert p.read_bytes() == src.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")').encode(
        "latin-1"
    )


def test_file_mode_is_kept(tmp_path):
    p = tmp_path / "a.py"
    p.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    os.chmod(p, 0o751)
    _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    assert "torch.amp.GradScaler" in p.read_text()
    assert (os.stat(p).st_mode & 0o777) == 0o751


def test_file_changed_on_disk_is_not_overwritten(tmp_path, monkeypatch):
    import gpulint.fix_cmd as fc

    p = tmp_path / "a.py"
    p.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    real_fix_file = fc.fix_file

    def fix_then_edit(path, opts, unsafe):
        ff = real_fix_file(path, opts, unsafe)
        with open(path, "a") as fh:  # an editor saves while gpulint works
            fh.write("# edited meanwhile\n")
        return ff

    monkeypatch.setattr(fc, "fix_file", fix_then_edit)
    res = _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    assert p.read_text().endswith("# edited meanwhile\n")
    assert "torch.cuda.amp.GradScaler()" in p.read_text()
    assert "changed on disk" in res.output
    assert res.exit_code == 1


def test_linted_only_files_are_not_written(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("import os\n")
    finding_no_fix = tmp_path / "dp.py"
    finding_no_fix.write_text("import torch\nm = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n")
    before = {p: os.stat(p).st_mtime_ns for p in (clean, finding_no_fix)}
    time.sleep(0.01)
    _invoke(["fix", "--apply", "--no-cache", "."], tmp_path)
    assert {p: os.stat(p).st_mtime_ns for p in (clean, finding_no_fix)} == before


def test_symlink_inside_the_given_paths_is_written_through(tmp_path):
    real = tmp_path / "src" / "real.py"
    real.parent.mkdir()
    real.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    link = tmp_path / "src" / "link.py"
    link.symlink_to(real)
    _invoke(["fix", "--apply", "--no-cache", "src/link.py", "src/real.py"], tmp_path)
    assert link.is_symlink()
    assert 'torch.amp.GradScaler("cuda")' in real.read_text()


def test_symlink_to_a_file_outside_the_given_paths_is_not_written(tmp_path):
    outside = tmp_path / "outside.py"
    src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    outside.write_text(src)
    (tmp_path / "proj").mkdir()
    link = tmp_path / "proj" / "link.py"
    link.symlink_to(outside)
    res = _invoke(["fix", "--apply", "--no-cache", "proj"], tmp_path)
    assert outside.read_text() == src
    assert link.is_symlink()
    assert "outside the paths given" in res.output
    assert res.exit_code == 1


OLD = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n" + "# padding line to make the file bigger\n" * 400
NEW = OLD.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")')


def test_sigkill_mid_run_leaves_every_file_old_or_new(tmp_path):
    """Kill a real `gpulint fix --apply` at random moments: each file is either
    its old or its new content, byte for byte."""
    rng = random.Random(1234)
    env = dict(os.environ, GPULINT_NO_CACHE="1")
    n_files = 300
    kills = 0
    mixed = 0
    for round_ in range(6):
        work = tmp_path / f"round{round_}"
        work.mkdir()
        for i in range(n_files):
            (work / f"m{i:03d}.py").write_text(OLD)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpulint", "fix", "--apply", "--no-cache", "-j", "1", str(work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
        )
        delay = rng.uniform(0.3, 2.5)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        states = {"old": 0, "new": 0}
        for i in range(n_files):
            data = (work / f"m{i:03d}.py").read_text()
            assert data in (OLD, NEW), f"round {round_}: m{i:03d}.py is neither old nor new"
            states["old" if data == OLD else "new"] += 1
        mixed += bool(states["old"] and states["new"])
        assert time.monotonic() - t0 < 120
    assert kills >= 3, "the process finished before it could be killed: make the run longer"
    assert mixed >= 1, "no kill landed while files were being written: the test proves nothing"
