"""`gpulint fix`: diff by default, --apply writes, unsafe fixes need --unsafe-fixes."""

from __future__ import annotations

from click.testing import CliRunner

from gpulint.frontends.cli import cli

SAFE_AND_UNSAFE = """\
import torch


def step(optimizer):
    scaler = torch.cuda.amp.GradScaler()
    optimizer.zero_grad(set_to_none=False)
    return scaler
"""


def _run(args, cwd):
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_fix_shows_a_diff_and_writes_nothing(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SAFE_AND_UNSAFE)
    res = _run(["fix", "--no-cache", "--select", "GPU401,GPU302", "train.py"], tmp_path)
    assert res.exit_code == 1
    assert '+    scaler = torch.amp.GradScaler("cuda")' in res.output
    assert "set_to_none=True" not in res.output  # unsafe: held back
    assert "1 unsafe fix held back" in res.output
    assert p.read_text() == SAFE_AND_UNSAFE


def test_fix_apply_writes_safe_fixes_and_lists_the_rest(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SAFE_AND_UNSAFE)
    res = _run(["fix", "--apply", "--no-cache", "--select", "GPU401,GPU302", "train.py"], tmp_path)
    text = p.read_text()
    assert 'torch.amp.GradScaler("cuda")' in text
    assert "set_to_none=False" in text
    assert "train.py:6:5: GPU302" in res.output
    assert "Fixed 1 problem in 1 file (1 remaining)." in res.output
    assert res.exit_code == 1


def test_fix_apply_with_unsafe_fixes(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SAFE_AND_UNSAFE)
    res = _run(["fix", "--apply", "--unsafe-fixes", "--no-cache", "--select", "GPU302", "train.py"], tmp_path)
    assert "set_to_none=True" in p.read_text()
    assert res.exit_code == 0, res.output


def test_fix_nothing_to_fix_exits_zero(tmp_path):
    (tmp_path / "ok.py").write_text("import os\n")
    res = _run(["fix", "--no-cache", "ok.py"], tmp_path)
    assert res.exit_code == 0
    assert "Nothing to fix." in res.output


def test_fix_keeps_crlf_and_bom(tmp_path):
    p = tmp_path / "w.py"
    src = "import torch\r\nscaler = torch.cuda.amp.GradScaler()\r\n"
    p.write_bytes(b"\xef\xbb\xbf" + src.encode())
    res = _run(["fix", "--apply", "--no-cache", "--select", "GPU401", "w.py"], tmp_path)
    assert res.exit_code == 0, res.output
    assert p.read_bytes() == b"\xef\xbb\xbf" + src.replace(
        "torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")'
    ).encode()
