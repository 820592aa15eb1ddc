"""Configuration: [tool.gpulint] / gpulint.toml, the closest config per file,
--config, per-file-ignores, exclude, torch-version, output-format, and
errors that name the file and the key (exit 2)."""

from __future__ import annotations

import os
import sys

import pytest

from cli_helpers import DP, TWO, ZG, codes, findings, invoke, run_subprocess, write
from gpulint.engine import config as cfg

BARE_ZERO_GRAD = """\
import torch

def step(opt):
    opt.zero_grad()
"""


def test_pyproject_tool_gpulint(tmp_path):
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n\n[tool.gpulint]\nselect = ["GPU302"]\n')
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    assert codes(invoke(["check"], tmp_path).stdout) == ["GPU302"]


def test_gpulint_toml_top_level_and_table(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    write(tmp_path, "gpulint.toml", 'ignore = ["GPU302"]\n')
    assert "GPU302" not in codes(invoke(["check"], tmp_path).stdout)
    assert "GPU001" in codes(invoke(["check"], tmp_path).stdout)
    write(tmp_path, "gpulint.toml", '[tool.gpulint]\nignore = ["GPU001"]\n')
    found = codes(invoke(["check"], tmp_path).stdout)
    assert "GPU001" not in found and "GPU302" in found


def test_gpulint_toml_wins_over_pyproject_in_the_same_folder(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "b.py", ZG)
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"]\n')
    write(tmp_path, "gpulint.toml", 'select = ["GPU302"]\n')
    assert codes(invoke(["check"], tmp_path).stdout) == ["GPU302"]


def test_closest_config_per_file_in_nested_projects(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"]\n')
    write(tmp_path, "top.py", DP + ZG.replace("import torch\n", ""))
    write(tmp_path, "sub/pyproject.toml", '[tool.gpulint]\nselect = ["GPU302"]\n')
    write(tmp_path, "sub/inner.py", DP + ZG.replace("import torch\n", ""))
    # a pyproject.toml without [tool.gpulint] does not count: the search goes on upward
    write(tmp_path, "sub/plain/pyproject.toml", '[project]\nname = "plain"\n')
    write(tmp_path, "sub/plain/deep.py", DP + ZG.replace("import torch\n", ""))
    res = invoke(["check"], tmp_path)
    got = sorted((p, c) for p, _, _, c in findings(res.stdout))
    assert got == [
        (os.path.join("sub", "inner.py"), "GPU302"),
        (os.path.join("sub", "plain", "deep.py"), "GPU302"),
        ("top.py", "GPU001"),
    ]
    # the same when a nested file is named explicitly, or linted from inside the project
    res = invoke(["check", "sub/inner.py"], tmp_path)
    assert codes(res.stdout) == ["GPU302"]
    res = invoke(["check", "../top.py", "inner.py"], tmp_path / "sub")
    assert sorted((p, c) for p, _, _, c in findings(res.stdout)) == [
        (os.path.join("..", "top.py"), "GPU001"),
        ("inner.py", "GPU302"),
    ]


def test_config_option_overrides_every_file(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"]\n')
    write(tmp_path, "sub/pyproject.toml", '[tool.gpulint]\nselect = ["GPU001"]\n')
    write(tmp_path, "sub/inner.py", DP + ZG.replace("import torch\n", ""))
    write(tmp_path, "top.py", DP + ZG.replace("import torch\n", ""))
    write(tmp_path, "elsewhere/only302.toml", 'select = ["GPU302"]\n')
    res = invoke(["check", "--config", "elsewhere/only302.toml"], tmp_path)
    assert codes(res.stdout) == ["GPU302", "GPU302"]


def test_config_option_missing_file(tmp_path):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", "--config", "nope.toml"], tmp_path)
    assert res.exit_code == 2
    assert res.stderr.splitlines() == ["gpulint: error: nope.toml: config file not found"]


def test_per_file_ignores(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.gpulint]\n[tool.gpulint.per-file-ignores]\n"tools/*" = ["GPU001"]\n'
        '"legacy.py" = ["ALL"]\n"scripts/**/*.py" = ["GPU3", "data-parallel"]\n',
    )
    body = DP + ZG.replace("import torch\n", "")
    for rel in ("tools/a.py", "legacy.py", "scripts/x/run.py", "main.py"):
        write(tmp_path, rel, body)
    res = invoke(["check", TWO], tmp_path)
    got = sorted((p, c) for p, _, _, c in findings(res.stdout))
    assert got == [
        ("main.py", "GPU001"),
        ("main.py", "GPU302"),
        (os.path.join("tools", "a.py"), "GPU302"),
    ]


def test_per_file_ignores_with_a_negated_pattern(tmp_path):
    # as in Ruff: "!src/**" ignores its codes in every file outside src/
    write(tmp_path, "pyproject.toml",
          '[tool.gpulint]\n[tool.gpulint.per-file-ignores]\n"!src/**" = ["GPU001"]\n"!*.py" = ["GPU302"]\n')
    body = DP + ZG.replace("import torch\n", "")
    for rel in ("src/model.py", "scripts/run.py", "main.py"):
        write(tmp_path, rel, body)
    res = invoke(["check", TWO], tmp_path)
    got = sorted((p, c) for p, _, _, c in findings(res.stdout))
    assert got == [
        ("main.py", "GPU302"),
        (os.path.join("scripts", "run.py"), "GPU302"),
        (os.path.join("src", "model.py"), "GPU001"),
        (os.path.join("src", "model.py"), "GPU302"),
    ]


def test_exclude_and_extend_exclude(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nextend-exclude = ["generated", "*_pb2.py"]\n')
    write(tmp_path, "generated/model.py", DP)
    write(tmp_path, "proto_pb2.py", DP)
    write(tmp_path, "build/lib/copy.py", DP)  # still excluded: extend-exclude keeps the defaults
    write(tmp_path, "main.py", DP)
    res = invoke(["check", TWO], tmp_path)
    assert [p for p, *_ in findings(res.stdout)] == ["main.py"]
    # an explicitly named file is always linted ...
    res = invoke(["check", TWO, "generated/model.py", "proto_pb2.py"], tmp_path)
    assert len(findings(res.stdout)) == 2
    # ... unless --force-exclude (what the pre-commit hook passes)
    res = invoke(["check", TWO, "--force-exclude", "generated/model.py", "proto_pb2.py", "main.py"], tmp_path)
    assert [p for p, *_ in findings(res.stdout)] == ["main.py"]

    # `exclude` replaces the default list (as in Ruff); `build` is linted again
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\nexclude = ["generated"]\n')
    res = invoke(["check", TWO], tmp_path)
    assert sorted(p for p, *_ in findings(res.stdout)) == sorted(
        [os.path.join("build", "lib", "copy.py"), "main.py", "proto_pb2.py"]
    )


@pytest.mark.parametrize("version, flagged", [("1.13", True), ("1.13.1", True), ("2.0", False), ("2.4.1", False)])
def test_torch_version_in_config(tmp_path, version, flagged):
    write(tmp_path, "pyproject.toml", f'[tool.gpulint]\ntorch-version = "{version}"\n')
    write(tmp_path, "a.py", BARE_ZERO_GRAD)
    res = invoke(["check", "--select", "GPU302"], tmp_path)
    assert codes(res.stdout) == (["GPU302"] if flagged else [])


def test_torch_version_default_reads_installed_metadata_without_importing(tmp_path):
    site = tmp_path / "site"
    write(site, "torch-1.13.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 1.13.1\n")
    write(site, "torch-1.13.1.dist-info/RECORD", "")
    write(site, "torch/__init__.py", "raise SystemExit('torch was imported')\n")
    write(tmp_path, "proj/a.py", BARE_ZERO_GRAD)
    proc = run_subprocess(["check", "--select", "GPU302", "a.py"], tmp_path / "proj", env={"PYTHONPATH": str(site)})
    assert "torch was imported" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert "a.py:4:5: GPU302" in proc.stdout
    # with a config that sets it, the config wins
    write(tmp_path, "proj/gpulint.toml", 'torch-version = "2.1"\n')
    proc = run_subprocess(["check", "--select", "GPU302", "a.py"], tmp_path / "proj", env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_torch_version_default_without_torch_is_the_newest(monkeypatch, tmp_path):
    empty, site, broken = tmp_path / "empty", tmp_path / "site", tmp_path / "broken"
    for d in (empty, site, broken):
        d.mkdir()
    (site / "torch-2.5.1+cu121.dist-info").mkdir()
    (site / "torchvision-0.20.1.dist-info").mkdir()  # another package's metadata is not torch's
    (broken / "torch-garbage.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(empty), str(tmp_path / "missing")])
    assert cfg.installed_torch_version() == cfg.LATEST_TORCH
    monkeypatch.setattr(sys, "path", [str(empty), str(site)])
    assert cfg.installed_torch_version() == (2, 5, 1)
    monkeypatch.setattr(sys, "path", [str(broken)])
    assert cfg.installed_torch_version() == cfg.LATEST_TORCH


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("pyproject.toml", '[tool.gpulint]\nselct = ["GPU001"]\n',
         "pyproject.toml: [tool.gpulint] unknown key 'selct' (did you mean 'select'?)"),
        ("gpulint.toml", 'colour = true\n', "gpulint.toml: unknown key 'colour'"),
        ("pyproject.toml", '[tool.gpulint]\nselect = ["GPU999"]\n',
         "pyproject.toml: [tool.gpulint] 'select': unknown rule code or prefix 'GPU999'"),
        ("gpulint.toml", 'ignore = ["nonsense-name"]\n', "gpulint.toml: 'ignore': unknown rule code or prefix 'nonsense-name'"),
        ("gpulint.toml", 'extend-select = ["XX"]\n', "gpulint.toml: 'extend-select': unknown rule code or prefix 'XX'"),
        ("gpulint.toml", '[per-file-ignores]\n"tests/*" = ["GPU777"]\n',
         "gpulint.toml: 'per-file-ignores.\"tests/*\"': unknown rule code or prefix 'GPU777'"),
        ("gpulint.toml", 'select = "GPU001"\n', "gpulint.toml: 'select' must be a list"),
        ("gpulint.toml", 'torch-version = "latest"\n', "gpulint.toml: 'torch-version': not a version: 'latest'"),
        ("gpulint.toml", 'output-format = "xml"\n', "gpulint.toml: 'output-format': unknown format 'xml'"),
        ("pyproject.toml", '[tool.gpulint\nselect = 1\n', "pyproject.toml: invalid TOML"),
        ("gpulint.toml", 'select = ["GPU001"\n', "gpulint.toml: invalid TOML"),
        ("gpulint.toml", 'exclude = ["!src/**"]\n',
         "gpulint.toml: 'exclude': negated patterns such as '!src/**' are not supported here"),
        ("pyproject.toml", '[tool.gpulint]\nextend-include = ["*.pyw", "!x.pyw"]\n',
         "pyproject.toml: [tool.gpulint] 'extend-include': negated patterns such as '!x.pyw' are not supported here"),
    ],
)
def test_config_errors_name_the_file_and_key_and_exit_2(tmp_path, name, text, expected):
    write(tmp_path, name, text)
    write(tmp_path, "a.py", DP)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 2
    [line] = res.stderr.splitlines()
    assert line.startswith("gpulint: error: ")
    assert str(tmp_path / name) in line or f" {name}:" in line
    assert expected.split(": ", 1)[1] in line, line
    assert res.stdout == ""


def test_error_in_a_nested_config_found_while_walking(tmp_path):
    write(tmp_path, "a.py", DP)
    write(tmp_path, "sub/gpulint.toml", "nonsense = 1\n")
    write(tmp_path, "sub/b.py", DP)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 2
    assert "sub" in res.stderr and "unknown key 'nonsense'" in res.stderr


def test_broken_config_with_only_a_missing_path(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.gpulint\n")
    res = invoke(["check", "missing.py"], tmp_path)
    assert res.exit_code == 2
    assert "invalid TOML" in res.stderr


# ------------------------------------------------------------------ selection unit tests
@pytest.fixture
def fake_rules(monkeypatch):
    meta = {
        # (name, on by default, stable)
        "GPU101": ("host-sync", True, True),
        "GPU102": ("sync-in-loop", True, True),
        "GPU201": ("pin-memory", True, True),
        "GPU299": ("experimental", False, False),  # a preview rule, off by default
    }
    monkeypatch.setattr(cfg, "_rule_meta", lambda: meta)
    return meta


def sel(select=None, extend=(), ignore=(), cli=None):
    return list(cfg.resolve_selection(select, extend, ignore, cli=cli))


def test_selection_defaults_and_off_by_default_rules(fake_rules):
    assert sel() == ["GPU101", "GPU102", "GPU201"]
    assert sel(select=["ALL"]) == ["GPU101", "GPU102", "GPU201"]  # ALL does not turn on an off rule
    assert sel(select=["GPU2"]) == ["GPU201"]  # nor does a prefix
    assert sel(select=["GPU299"]) == ["GPU299"]  # its exact code does
    assert sel(extend=["experimental"]) == ["GPU101", "GPU102", "GPU201", "GPU299"]  # or its name


def test_selection_specificity(fake_rules):
    assert sel(select=["GPU1"], ignore=["GPU102"]) == ["GPU101"]
    assert sel(select=["GPU102"], ignore=["GPU1"]) == ["GPU102"]
    assert sel(select=["GPU10"], ignore=["GPU1"]) == ["GPU101", "GPU102"]
    assert sel(select=["GPU1"], ignore=["GPU1"]) == []
    assert sel(select=["ALL"], ignore=["GPU"]) == []
    assert sel(select=["GPU"], ignore=["ALL"]) == ["GPU101", "GPU102", "GPU201"]


def test_selection_layers(fake_rules):
    # config select GPU1 ignoring GPU101; the command line's --select resets
    assert sel(select=["GPU1"], ignore=["GPU101"], cli=(["GPU101"], (), ())) == ["GPU101"]
    # the command line's --ignore / --extend-select adjust the config's set
    assert sel(select=["GPU1"], cli=(None, (), ["GPU102"])) == ["GPU101"]
    assert sel(select=["GPU1"], cli=(None, ["GPU201"], ())) == ["GPU101", "GPU102", "GPU201"]
    assert sel(ignore=["GPU2"], cli=(None, ["GPU201"], ())) == ["GPU101", "GPU102", "GPU201"]


def test_force_exclude_does_not_exclude_the_project_root_itself(tmp_path):
    proj = tmp_path / "build"  # a project that happens to live in a folder named like a default exclude
    write(proj, "pyproject.toml", "[tool.gpulint]\n")
    write(proj, "a.py", DP)
    write(proj, "dist/b.py", DP)
    res = invoke(["check", TWO, "--force-exclude", "a.py", "dist/b.py", "."], proj)
    assert [p for p, *_ in findings(res.stdout)] == ["a.py"]


# ------------------------------------------------------------------ the command line's config
def test_command_line_keys_are_a_layer_over_every_config(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\n[tool.gpulint.per-file-ignores]\n"tools/*" = ["GPU001"]\n')
    body = DP + ZG.replace("import torch\n", "")
    for rel in ("tools/a.py", "legacy/b.py", "main.py"):
        write(tmp_path, rel, body)

    def got(*args):
        res = invoke(["check", TWO, *args], tmp_path)
        assert res.exit_code in (0, 1), res.stderr
        return sorted((p, c) for p, _, _, c in findings(res.stdout))

    base = got()
    assert (os.path.join("tools", "a.py"), "GPU001") not in base and ("main.py", "GPU001") in base
    # --extend-exclude adds to the config's
    assert not any(p.startswith("legacy") for p, _ in got("--extend-exclude", "legacy/"))
    # --per-file-ignores replaces the config's table; --extend-per-file-ignores adds to it
    replaced = got("--per-file-ignores", "main.py:GPU001,GPU302")
    assert (os.path.join("tools", "a.py"), "GPU001") in replaced and not any(p == "main.py" for p, _ in replaced)
    extended = got("--extend-per-file-ignores", "main.py:GPU302")
    assert ("main.py", "GPU302") not in extended and (os.path.join("tools", "a.py"), "GPU001") not in extended
    # --config KEY = VALUE, over the config
    inline = got("--config", 'per-file-ignores = {"main.py" = ["GPU001"]}', "--config", 'extend-exclude = ["tools"]')
    assert inline == [(os.path.join("legacy", "b.py"), "GPU001"), (os.path.join("legacy", "b.py"), "GPU302"),
                      ("main.py", "GPU302")]


@pytest.mark.parametrize("args, expected", [
    (["--config", "ignore = [GPU001"], "--config"),
    (["--config", 'exclude = ["!x"]'], "the command line: 'exclude': negated patterns"),
    (["--config", 'colour = true'], "the command line: unknown key 'colour'"),
    (["--per-file-ignores", "main.py"], "expected PATTERN:CODES"),
])
def test_command_line_config_errors_are_one_line_and_exit_2(tmp_path, args, expected):
    write(tmp_path, "a.py", DP)
    res = invoke(["check", *args], tmp_path)
    assert res.exit_code == 2 and expected in res.stderr, res.stderr


def test_extend_builds_on_another_config_as_ruff_does(tmp_path):
    write(tmp_path, "pyproject.toml",
          '[tool.gpulint]\nextend-exclude = ["old/"]\n[tool.gpulint.per-file-ignores]\n"scripts/*" = ["GPU001"]\n')
    # a nested project: its own config replaces the root's, unless it extends it
    write(tmp_path, "svc/pyproject.toml",
          '[tool.gpulint]\nextend = "../pyproject.toml"\nextend-exclude = ["gen/"]\n')
    body = DP + ZG.replace("import torch\n", "")
    for rel in ("svc/old/a.py", "svc/gen/b.py", "svc/scripts/c.py", "svc/main.py"):
        write(tmp_path, rel, body)
    res = invoke(["check", TWO, "svc"], tmp_path)
    got = sorted((p, c) for p, _, _, c in findings(res.stdout))
    main, script = os.path.join("svc", "main.py"), os.path.join("svc", "scripts", "c.py")
    # old/ excluded by the extended config, gen/ by its own, and scripts/* keeps the extended per-file-ignores
    assert got == [(main, "GPU001"), (main, "GPU302"), (script, "GPU302")]
    lines = invoke(["check", "--show-settings", "svc/main.py"], tmp_path).stdout
    assert "extend-exclude = ['old/', 'gen/']" in lines


@pytest.mark.parametrize("text, expected", [
    ('extend = "gpulint.toml"\n', "'extend' makes a cycle"),
    ('extend = "missing.toml"\n', "'extend': no such config file"),
    ('extend = 3\n', "'extend' must be a str"),
])
def test_extend_errors(tmp_path, text, expected):
    write(tmp_path, "gpulint.toml", text)
    write(tmp_path, "a.py", DP)
    res = invoke(["check"], tmp_path)
    assert res.exit_code == 2 and expected in res.stderr, res.stderr
