"""The pure helpers of bench/robustness.py (the scale run itself is run by hand: it takes minutes)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_robustness", ROOT / "bench" / "robustness.py")
rob = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rob)


def test_error_kind_drops_positions_and_details():
    assert rob.error_kind("syntax error at 3:5: invalid syntax") == "syntax error"
    assert rob.error_kind("cannot decode as utf-8: invalid start byte at byte 12") == "cannot decode as utf-N"
    assert rob.error_kind("internal error: KeyError: 'x' (please report this)") == "internal error"
    assert rob.error_kind("expression is nested too deeply to parse") == "expression is nested too deeply to parse"


def test_parse_error_lines_splits_path_and_reason():
    err = ("error: torch-2.13.0/a b.py: syntax error at 1:2: x: y\n"
           "Found 3 problems.\n"
           "error: timm/x.py: not written: the file is read-only\n")
    assert rob.parse_error_lines(err) == [
        ("torch-2.13.0/a b.py", "syntax error at 1:2: x: y"),
        ("timm/x.py", "not written: the file is read-only"),
    ]


def test_crash_lines():
    text = "a.py:1:1: GPU101 ok\nerror: b.py: internal error: KeyError\nTraceback (most recent call last):\n"
    assert rob.crash_lines(text) == ["error: b.py: internal error: KeyError", "Traceback (most recent call last):"]
    assert rob.crash_lines("error: c.py: syntax error at 1:1: bad\n") == []


def test_compiles_uses_the_running_python_and_the_coding_line():
    assert rob.compiles(b"x = 1\n", "a.py")
    assert not rob.compiles(b"print 'hi'\n", "a.py")
    assert not rob.compiles(b"def f():\n    nonlocal x\n", "a.py")  # compile(), not only ast.parse
    assert rob.compiles("# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n".encode("latin-1"), "a.py")
    assert not rob.compiles(b"s = '\xff'\n", "a.py")


def test_replace_between_markers():
    doc = "a\n<!-- scale:start -->\nold\n<!-- scale:end -->\nb\n"
    assert rob.replace_between_markers(doc, "new\n") == "a\n<!-- scale:start -->\nnew\n<!-- scale:end -->\nb\n"
    with pytest.raises(ValueError):
        rob.replace_between_markers("no markers", "x")


def test_doc_has_the_markers():
    doc = (ROOT / "docs" / "robustness.md").read_text(encoding="utf-8")
    assert rob.MARK_START in doc and rob.MARK_END in doc


def test_copy_sources_copies_only_python_files(tmp_path):
    src = tmp_path / "pkg-1.0"
    (src / "sub").mkdir(parents=True)
    (src / "a.py").write_text("x = 1\n")
    (src / "sub" / "b.py").write_text("y = 2\n")
    (src / "c.so").write_bytes(b"\x7fELF")
    (src / "link.py").symlink_to(src / "a.py")
    work = tmp_path / "work"
    work.mkdir()
    files = rob.copy_sources({"pkg": src}, work)
    assert files == {"pkg-1.0": ["pkg-1.0/a.py", "pkg-1.0/sub/b.py"]}
    assert (work / "pkg-1.0" / "sub" / "b.py").read_text() == "y = 2\n"
    assert not (work / "pkg-1.0" / "c.so").exists()
