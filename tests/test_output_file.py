"""`-o PATH` writes to what the user named, as a shell redirect would: a
regular file is replaced atomically, a symbolic link keeps being a link
(its target is replaced), and a device, a FIFO or `/dev/stdout` is written
through, never replaced. A path that cannot be written is one line and
exit 2. Also `bench --json` and `verify --json`, which share the writer."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from cli_helpers import DP, TWO, invoke, write
from gpulint.fsutil import write_output

REPORT_LINE = "train.py:4:9: GPU001"


@pytest.fixture
def project(tmp_path):
    write(tmp_path, "train.py", DP)
    return tmp_path


def test_a_regular_file_is_replaced_atomically_and_keeps_its_mode(project):
    out = project / "report.txt"
    out.write_text("old report, much longer than the new one\n" * 100)
    os.chmod(out, 0o640)
    before = os.stat(out)
    res = invoke(["check", TWO, "-o", "report.txt"], project)
    assert res.exit_code == 1
    assert res.stdout == "" and res.stderr == ""
    after = os.stat(out)
    assert after.st_ino != before.st_ino  # a new file renamed over the old one
    assert stat.S_IMODE(after.st_mode) == 0o640
    text = out.read_text()
    assert text.startswith(REPORT_LINE) and "old report" not in text
    assert not [p for p in os.listdir(project) if p.endswith(".tmp")]  # no temporary file left behind


def test_a_new_file_gets_the_mode_a_redirect_would_give(project):
    old = os.umask(0o022)
    try:
        res = invoke(["check", TWO, "-o", "new.txt"], project)
    finally:
        os.umask(old)
    assert res.exit_code == 1
    assert stat.S_IMODE(os.stat(project / "new.txt").st_mode) == 0o644
    assert (project / "new.txt").read_text().startswith(REPORT_LINE)


def test_a_symlink_stays_a_link_and_its_target_is_replaced(project):
    (project / "reports").mkdir()
    target = project / "reports" / "latest.txt"
    target.write_text("old\n")
    os.symlink("reports/latest.txt", project / "link.txt")
    res = invoke(["check", TWO, "-o", "link.txt"], project)
    assert res.exit_code == 1
    assert os.path.islink(project / "link.txt")
    assert os.readlink(project / "link.txt") == "reports/latest.txt"
    assert target.read_text().startswith(REPORT_LINE)


def test_a_dangling_symlink_creates_its_target_as_a_redirect_does(project):
    os.symlink("made.txt", project / "link.txt")
    res = invoke(["check", TWO, "-o", "link.txt"], project)
    assert res.exit_code == 1
    assert os.path.islink(project / "link.txt")
    assert (project / "made.txt").read_text().startswith(REPORT_LINE)


def test_a_fifo_is_written_through_to_its_reader(project):
    fifo = project / "pipe"
    os.mkfifo(fifo)
    got = []

    def read():
        with open(fifo, encoding="utf-8") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read)
    reader.start()
    res = invoke(["check", TWO, "-o", "pipe"], project)
    reader.join(timeout=60)
    assert not reader.is_alive()
    assert res.exit_code == 1, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not a file holding the report
    assert got and got[0].startswith(REPORT_LINE)


def _device(tmp_path, name, minor):
    """A character device node in tmp_path (1, minor is /dev/null or /dev/full):
    never the machine's own, so a broken writer cannot replace a real device."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    path = tmp_path / name
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return path


def test_a_device_is_written_through_not_replaced(project):
    null = _device(project, "null", 3)
    res = invoke(["check", TWO, "-o", str(null)], project)
    assert res.exit_code == 1
    assert res.stderr == ""
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


def test_a_full_device_is_one_line_and_exit_2(project):
    full = _device(project, "full", 7)
    res = invoke(["check", TWO, "-o", str(full)], project)
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [f"gpulint: error: {full}: cannot write the report: No space left on device"]
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_dev_stdout_goes_to_the_process_stdout(project):
    res = subprocess.run(
        [sys.executable, "-m", "gpulint", "check", TWO, "-o", "/dev/stdout", "train.py"],
        cwd=project, capture_output=True, text=True, timeout=120, env={**os.environ, "GPULINT_NO_CACHE": "1"},
    )
    assert res.returncode == 1, res.stderr
    assert res.stdout.startswith(REPORT_LINE)


def test_dev_stdout_redirected_to_a_file_writes_that_file(project):
    """`gpulint check -o /dev/stdout > out.txt`: the shell's file gets the report."""
    with open(project / "out.txt", "w") as fh:
        res = subprocess.run(
            [sys.executable, "-m", "gpulint", "check", TWO, "-o", "/dev/stdout", "train.py"],
            cwd=project, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**os.environ, "GPULINT_NO_CACHE": "1"},
        )
    assert res.returncode == 1, res.stderr
    assert (project / "out.txt").read_text().startswith(REPORT_LINE)


@pytest.mark.parametrize("target, why", [
    ("no/such/dir/report.txt", "No such file or directory"),
    ("train.py/report.txt", "Not a directory"),  # a parent that is a file: refused even to root
])
def test_a_path_that_cannot_be_written_is_one_line_and_exit_2(project, target, why):
    res = invoke(["check", TWO, "-o", target], project)
    assert res.exit_code == 2
    [line] = res.stderr.splitlines()
    assert line.startswith(f"gpulint: error: {target}: cannot write the report: ") and why in line
    assert res.stdout == ""


def test_a_directory_is_refused(project):
    (project / "out").mkdir()
    res = invoke(["check", TWO, "-o", "out"], project)
    assert res.exit_code == 2
    assert "out" in res.stderr and "directory" in res.stderr
    assert os.path.isdir(project / "out")


def test_write_output_refuses_a_directory_reached_through_a_link(tmp_path):
    (tmp_path / "d").mkdir()
    os.symlink("d", tmp_path / "link")
    with pytest.raises(IsADirectoryError):
        write_output(str(tmp_path / "link"), b"x")
    assert os.path.islink(tmp_path / "link")
