"""gpulint fix never breaks code and never loses data."""

from __future__ import annotations

import ast
import difflib
import errno
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from click.testing import CliRunner

from helpers import FIXTURES, ROOT, fixture_torch_version, options
from gpulint.frontends.cli import cli
from gpulint.engine.lint import lint_source
from gpulint.fix.apply import fix_source

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


def test_unknown_codec_over_utf8_is_fixed_and_written_back_as_utf8(tmp_path):
    """A coding line naming a codec Python does not know (`future_fstrings`):
    the file is read as UTF-8, so the fix is written back as UTF-8, the
    coding line kept."""
    p = tmp_path / "fstr.py"
    src = '# -*- coding: future_fstrings -*-\n# caf\xe9\nimport torch\nscaler = torch.cuda.amp.GradScaler()\n'
    p.write_bytes(src.encode("utf-8"))
    res = _invoke(["fix", "--apply", "--no-cache", "fstr.py"], tmp_path)
    assert res.exit_code == 0, res.output
    assert p.read_bytes() == src.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")').encode("utf-8")


def test_coding_comment_after_code_is_not_the_write_back_encoding(tmp_path):
    """A coding comment on line 2 after a line of code is no PEP 263 line:
    the text was read as UTF-8, so the fix writes it back as UTF-8 (before,
    the fix layer read the comment for itself and wrote latin-1)."""
    p = tmp_path / "late.py"
    src = "import torch\n# coding: latin-1\n# caf\xe9\nscaler = torch.cuda.amp.GradScaler()\n"
    p.write_bytes(src.encode("utf-8"))
    res = _invoke(["fix", "--apply", "--no-cache", "late.py"], tmp_path)
    assert res.exit_code == 0, res.output
    assert p.read_bytes() == src.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")').encode("utf-8")


def test_file_mode_is_kept(tmp_path):
    p = tmp_path / "a.py"
    p.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    os.chmod(p, 0o751)
    _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    assert "torch.amp.GradScaler" in p.read_text()
    assert (os.stat(p).st_mode & 0o777) == 0o751


def test_file_changed_on_disk_is_not_overwritten(tmp_path, monkeypatch):
    import gpulint.fix.files as fc

    p = tmp_path / "a.py"
    p.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    real_fix_file = fc.fix_file

    def fix_then_edit(path, opts, unsafe, *rest):
        ff = real_fix_file(path, opts, unsafe, *rest)
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


_BODY = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n" + "# padding line to make the file bigger\n" * 400
_FIXED = _BODY.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")')
OLD, NEW = _BODY, _FIXED  # kept for other tests' use
# (old bytes, new bytes): LF, CRLF, a UTF-8 BOM, and a latin-1 coding line, so that
# "byte for byte" also covers line endings, the BOM and the encoding
VARIANTS = [
    (_BODY.encode(), _FIXED.encode()),
    (_BODY.replace("\n", "\r\n").encode(), _FIXED.replace("\n", "\r\n").encode()),
    (b"\xef\xbb\xbf" + _BODY.encode(), b"\xef\xbb\xbf" + _FIXED.encode()),
    (("# -*- coding: latin-1 -*-\n# caf\xe9\n" + _BODY).encode("latin-1"),
     ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + _FIXED).encode("latin-1")),
]
_ENV = dict(os.environ, GPULINT_NO_CACHE="1", NO_COLOR="1")
_ENV.pop("GPULINT_CACHE_DIR", None)


def _make_tree(root, n):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"m{i:03d}.py").write_bytes(VARIANTS[i % len(VARIANTS)][0])


def _leftovers(root):
    return sorted(p.name for p in root.rglob(".gpulint-*"))


def test_sigkill_mid_run_leaves_every_file_old_or_new(tmp_path):
    """Kill a real `gpulint fix --apply` with SIGKILL, repeatedly, over 300
    files: each file is either its old or its new content, byte for byte.
    Even rounds kill at a random moment of the whole run (start-up and linting
    included); odd rounds wait until a randomly chosen file has been written and
    kill right then, so that kills land in the write phase however fast or busy
    the machine is. The moments are seeded, so a failure can be replayed.
    A kill between creating the temporary file and renaming it over the
    original may leave one `.gpulint-*.tmp` file next to it (the original is
    intact; nothing can clean up after SIGKILL): such a file is never linted,
    and a later run finishes the job."""
    rng = random.Random(1234)
    n_files = 300
    rounds = 6
    kills = 0
    mixed = 0
    for round_ in range(rounds):
        work = tmp_path / f"round{round_}"
        _make_tree(work, n_files)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpulint", "fix", "--apply", "--no-cache", "-j", "1", str(work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_ENV, cwd=ROOT,
        )
        if round_ % 2 == 0:
            delay = rng.uniform(0.2, 2.5)
        else:
            k = rng.randrange(0, 250)
            watched = work / f"m{k:03d}.py"
            old_k = VARIANTS[k % len(VARIANTS)][0]
            while proc.poll() is None and watched.read_bytes() == old_k and time.monotonic() - t0 < 90:
                time.sleep(0.001)
            delay = rng.uniform(0, 0.01)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        states = {"old": 0, "new": 0}
        for i in range(n_files):
            old, new = VARIANTS[i % len(VARIANTS)]
            data = (work / f"m{i:03d}.py").read_bytes()
            assert data in (old, new), f"round {round_}: m{i:03d}.py is neither old nor new"
            states["old" if data == old else "new"] += 1
        mixed += bool(states["old"] and states["new"])
        # nothing else appeared but, at most, the temporary file being written when killed
        others = sorted(p.name for p in work.iterdir() if not p.name.endswith(".py"))
        assert len(others) <= 1 and all(n.startswith(".gpulint-") and n.endswith(".tmp") for n in others), others
        assert time.monotonic() - t0 < 120
    assert kills >= rounds // 2, "the process finished before it could be killed: make the run longer"
    assert mixed >= rounds // 2, "kills did not land while files were being written: the test proves less than it says"
    # a later run over a killed tree finishes the job and ignores a leftover temporary file
    work = tmp_path / f"round{rounds - 1}"
    res = subprocess.run([sys.executable, "-m", "gpulint", "fix", "--apply", "--no-cache", str(work)],
                         capture_output=True, text=True, env=_ENV, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    for i in range(n_files):
        assert (work / f"m{i:03d}.py").read_bytes() == VARIANTS[i % len(VARIANTS)][1]


def test_two_fix_runs_at_once_leave_every_file_fixed_and_valid(tmp_path):
    """Two `fix --apply` processes over the same tree at the same time, sharing
    one cache folder: every file ends up whole, parses, and is the fixed content
    (whichever run wrote it first; the other sees the file changed on disk and
    leaves it, or writes the same bytes). Neither run crashes."""
    n_files = 120
    contested = 0  # files one run found already written by the other: proof that the runs overlapped
    round_ = 0
    while round_ < 2 or (not contested and round_ < 5):
        work = tmp_path / f"round{round_}"
        _make_tree(work, n_files)
        cache = tmp_path / f"cache{round_}"
        env = dict(_ENV)
        env.pop("GPULINT_NO_CACHE")
        cmd = [sys.executable, "-m", "gpulint", "fix", "--apply", "--cache-dir", str(cache), "-j", "1", str(work)]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
                 for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode in (0, 1), out + err
            assert "Traceback" not in out + err and "internal error" not in out + err, out + err
            # the only complaint allowed is the other run having written a file first
            for line in err.splitlines():
                if line.startswith("error:"):
                    assert "changed on disk" in line, line
        contested += sum(err.count("changed on disk") for _, err in outs)
        for i in range(n_files):
            old, new = VARIANTS[i % len(VARIANTS)]
            data = (work / f"m{i:03d}.py").read_bytes()
            assert data in (old, new), f"m{i:03d}.py is neither old nor new"
            ast.parse(data)
            assert data == new, f"m{i:03d}.py was left unfixed by both runs"
        assert _leftovers(work) == []
        round_ += 1
    assert contested, "the two runs never wrote the same file at the same time: the test proves less than it says"


# ------------------------------------------------------------ read-only files and folders, failed writes
SRC = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
FIXED_SRC = 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'


def _permission_bits_ignored(tmp_path) -> bool:
    """True for root (or CAP_DAC_OVERRIDE): a 0444 file can still be opened for writing."""
    probe = tmp_path / ".probe"
    probe.write_text("")
    os.chmod(probe, 0o444)
    try:
        with open(probe, "a"):
            return True
    except PermissionError:
        return False
    finally:
        os.chmod(probe, 0o644)
        probe.unlink()


def _error_lines(output, name):
    return [ln for ln in output.splitlines() if ln.startswith("error:") and name in ln]


def test_read_only_file_is_reported_and_left_alone(tmp_path, monkeypatch):
    """A read-only file is not replaced (the atomic rename would bypass its
    permission bits): one error line naming it; the other files are fixed.
    Root ignores permission bits, so when the tests run as root (checked by
    trying to open a 0444 file for writing) the file's read-only state is simulated by a monkeypatched `os.access` that denies
    W_OK for that one file (in-process); otherwise the file is really chmod 0444."""
    ro, rw = tmp_path / "ro.py", tmp_path / "rw.py"
    ro.write_text(SRC)
    rw.write_text(SRC)
    if _permission_bits_ignored(tmp_path):
        real_access = os.access

        def access(path, mode, *a, **kw):
            if mode & os.W_OK and os.path.realpath(path) == os.path.realpath(ro):
                return False
            return real_access(path, mode, *a, **kw)

        monkeypatch.setattr(os, "access", access)
    else:
        os.chmod(ro, 0o444)
    try:
        res = _invoke(["fix", "--apply", "--no-cache", "."], tmp_path)
    finally:
        os.chmod(ro, 0o644)
    assert ro.read_text() == SRC
    assert rw.read_text() == FIXED_SRC
    [line] = _error_lines(res.output, "ro.py")
    assert line == "error: ro.py: not written: the file is read-only"
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert _leftovers(tmp_path) == []


def test_read_only_directory_is_reported_and_left_alone(tmp_path, monkeypatch):
    """A file in a read-only folder cannot be replaced: one error line naming the
    file and the folder, nothing left behind, the run goes on. As root (which
    ignores permission bits; checked as above) creating the temporary file is made to fail as it
    would (EACCES) by a monkeypatched `tempfile.mkstemp`, in-process; otherwise
    the folder is really chmod 0555."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.py").write_text(SRC)
    (tmp_path / "b.py").write_text(SRC)
    if _permission_bits_ignored(tmp_path):
        real_mkstemp = tempfile.mkstemp

        def mkstemp(*a, dir=None, **kw):
            if dir is not None and os.path.realpath(dir) == os.path.realpath(locked):
                raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, ".gpulint-x.tmp"))
            return real_mkstemp(*a, dir=dir, **kw)

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    else:
        os.chmod(locked, 0o555)
    try:
        res = _invoke(["fix", "--apply", "--no-cache", "."], tmp_path)
    finally:
        os.chmod(locked, 0o755)
    assert (locked / "a.py").read_text() == SRC
    assert (tmp_path / "b.py").read_text() == FIXED_SRC
    [line] = _error_lines(res.output, "a.py")
    assert line == (f"error: {os.path.join('locked', 'a.py')}: not written: cannot create a temporary file in "
                    f"{os.path.realpath(locked)}: Permission denied")
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fail_at", ["write", "fsync", "chmod", "replace"])
def test_a_write_that_fails_half_way_leaves_the_file_whole_and_no_temp_file(tmp_path, monkeypatch, fail_at):
    """Disk full while writing, or the rename refused (an immutable file, a
    folder made read-only meanwhile): simulated in-process, for root and
    non-root alike, by making that one call raise. The original stays byte for
    byte, the temporary file is removed, and one error line names the file."""
    import gpulint.fsutil as fsutil

    p = tmp_path / "a.py"
    p.write_bytes(SRC.replace("\n", "\r\n").encode())
    os.chmod(p, 0o640)
    err = {"write": OSError(errno.ENOSPC, "No space left on device"),
           "fsync": OSError(errno.EIO, "Input/output error"),
           "chmod": PermissionError(errno.EPERM, "Operation not permitted"),
           "replace": PermissionError(errno.EACCES, "Permission denied")}[fail_at]
    if fail_at == "write":
        real_fdopen = os.fdopen

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            def write(self, data):
                self.fh.write(data[: len(data) // 2])  # half of it lands, then the disk is full
                self.fh.flush()
                raise err

            def __getattr__(self, name):
                return getattr(self.fh, name)

        monkeypatch.setattr(fsutil.os, "fdopen", lambda *a, **kw: Full(real_fdopen(*a, **kw)))
    else:
        real = getattr(os, fail_at)

        def failing(target, *a, **kw):
            # fsync gets the temporary file's descriptor; chmod and replace its name
            if fail_at == "fsync" or os.path.basename(str(target)).startswith(".gpulint-"):
                raise err
            return real(target, *a, **kw)

        monkeypatch.setattr(fsutil.os, fail_at, failing)
    res = _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
    assert p.read_bytes() == SRC.replace("\n", "\r\n").encode()
    assert (os.stat(p).st_mode & 0o777) == 0o640
    assert _leftovers(tmp_path) == []
    [line] = _error_lines(res.output, "a.py")
    assert line == f"error: a.py: not written: {err.strerror}"
    assert res.exit_code == 1
    assert "Traceback" not in res.output


def test_owner_and_group_are_kept_or_the_file_is_not_written(tmp_path):
    """Root fixing a user's file must not leave it owned by root. As root, a
    file owned by uid/gid 65534 keeps them through a real `fix --apply`. As
    any other user (who cannot give a file to someone else: tried first), the
    refusal is checked directly: a file whose owner cannot be kept is not
    replaced, with a message that says why."""
    import gpulint.fsutil as fsutil

    p = tmp_path / "a.py"
    p.write_text(SRC)
    try:
        os.chown(p, 65534, 65534)  # root (CAP_CHOWN) only
        can_chown = True
    except (PermissionError, AttributeError):
        can_chown = False
    if can_chown:
        res = _invoke(["fix", "--apply", "--no-cache", "a.py"], tmp_path)
        assert res.exit_code == 0, res.output
        assert p.read_text() == FIXED_SRC
        st = os.stat(p)
        assert (st.st_uid, st.st_gid) == (65534, 65534)
    else:
        tmp = tmp_path / ".gpulint-x.tmp"
        tmp.write_text(FIXED_SRC)
        fake = os.stat_result(tuple(os.stat(p))[:4] + (os.getuid() + 1,) + tuple(os.stat(p))[5:])
        with pytest.raises(OSError, match=r"cannot keep the file's owner \(uid \d+\)"):
            fsutil._keep_owner(str(tmp), fake)
    assert _leftovers(tmp_path) in ([], [".gpulint-x.tmp"])
