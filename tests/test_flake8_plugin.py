"""The flake8 plugin (gpulint/frontends/flake8_plugin.py): real `python -m flake8` runs
in a subprocess report what `gpulint check` reports, `# noqa` works the flake8
way, and a default-off rule runs only when flake8's selection names it.

flake8 finds the plugin through the `flake8.extension` entry points of the
installed distributions. So that these tests exercise the entry point that
pyproject.toml declares, whether or not gpulint is pip-installed (and from
which checkout), each run puts first on PYTHONPATH a `gpulint-*.dist-info`
whose entry_points.txt is generated from pyproject.toml, then this checkout.
flake8 keeps the first distribution of a name, so an installed gpulint's
metadata is shadowed rather than registered twice (a `[flake8:local-plugins]`
config would register the plugin a second time where gpulint is installed,
and flake8 then fails on the duplicate option).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from cli_helpers import invoke
from helpers import FIXTURES, ROOT, STEPPER
from gpulint import __version__
from gpulint.registry import all_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

flake8 = pytest.importorskip("flake8", minversion="6")

ENTRY_POINT = "gpulint.frontends.flake8_plugin:Plugin"
LINE_RE = re.compile(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$")

TRAIN = """\
import torch
from torch import nn
from torch.utils.data import DataLoader

model = nn.DataParallel(nn.Linear(4, 4)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(range(10), batch_size=2)
for x in loader:
    x = x.cuda(non_blocking=True)
    loss = model(x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(loss.item())
model.eval()
total = 0
with torch.no_grad():
    for x in loader:
        out = model(x.cuda())
        total += out.sum().item()
"""
# (row, code) of TRAIN's findings, all rules selected
TRAIN_ALL = [(5, "GPU001"), (7, "GPU202"), (9, "GPU201"), (14, "GPU101"), (20, "GPU104")]
TRAIN_DEFAULT = [f for f in TRAIN_ALL if f[1] != "GPU104"]


def pyproject_entry_points() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"].get("entry-points", {})


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory) -> Path:
    """A folder holding gpulint's metadata with the entry points pyproject.toml declares."""
    site = tmp_path_factory.mktemp("site")
    info = site / f"gpulint-{__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gpulint\nVersion: {__version__}\n", encoding="utf-8")
    lines = []
    for group, eps in pyproject_entry_points().items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return site


def flake8_run(site: Path, cwd: Path, *args: str, stdin: str = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, env=env, input=stdin,
        capture_output=True, text=True, timeout=300,
    )


def parsed(stdout: str) -> List[Tuple[str, int, int, str, str]]:
    out = []
    for line in stdout.splitlines():
        m = LINE_RE.match(line)
        assert m, f"not a finding line: {line!r}"
        out.append((m["path"], int(m["row"]), int(m["col"]), m["code"], m["msg"]))
    return sorted(out)


def rows(stdout: str) -> List[Tuple[int, str]]:
    return sorted((r, c) for _, r, _, c, _ in parsed(stdout))


def gpulint_check(cwd: Path, paths: List[str], *args: str) -> List[Tuple[str, int, int, str, str]]:
    res = invoke(["check", "--output-format", "concise", *args, *paths], cwd)
    assert res.exit_code in (0, 1), res.stdout + res.stderr
    lines = [l for l in res.stdout.splitlines() if LINE_RE.match(l)]
    # the plugin's message is gpulint's without the `[*]` fix marker
    return parsed("\n".join(l.replace(" [*] ", " ", 1) for l in lines))


@pytest.fixture
def train(tmp_path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


# ------------------------------------------------------------------ declaration
def test_entry_point_is_declared_in_pyproject():
    eps = pyproject_entry_points()
    assert eps.get("flake8.extension") == {"GPU": ENTRY_POINT}
    module, _, attr = ENTRY_POINT.partition(":")
    import importlib

    plugin = getattr(importlib.import_module(module), attr)
    assert plugin.__init__.__code__.co_varnames[1:4] == ("tree", "lines", "filename")
    with open(ROOT / "pyproject.toml", "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    assert any(re.match(r"^flake8\s*>=\s*6", dep) for dep in extras["test"])


def test_flake8_finds_the_plugin_through_the_entry_point(site_dir, tmp_path):
    res = flake8_run(site_dir, tmp_path, "--version")
    assert res.returncode == 0, res.stderr
    assert f"gpulint: {__version__}" in res.stdout


# ------------------------------------------------------------------ same findings
def test_findings_equal_gpulint_check_on_examples_and_fixtures(site_dir, tmp_path):
    files = sorted(str(p) for p in [*(ROOT / "examples").glob("*.py"), *FIXTURES.rglob("*.py")])
    assert len(files) > 20
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", *files)
    assert res.returncode == 1, res.stderr
    got = parsed(res.stdout)
    expected = _as_one_file_at_a_time(tmp_path, files, gpulint_check(tmp_path, files))
    assert len(expected) > 50
    assert got == expected
    # and with every rule selected: the default-off GPU104 by its exact code
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU,GPU104", *files)
    got = parsed(res.stdout)
    expected = _as_one_file_at_a_time(tmp_path, files, gpulint_check(tmp_path, files, "--extend-select", "GPU104"),
                                      "--extend-select", "GPU104")
    assert any(f[3] == "GPU104" for f in expected)
    assert got == expected


def _as_one_file_at_a_time(tmp_path, files, together, *args):
    """`gpulint check` of the files together, less what only a caller in another
    file shows (flake8 hands the plugin one file at a time, which sees the file and
    what it imports, not its callers: the README says so). The one fixture with
    such a finding is the multi-file project of `verify --trace`: its meter's
    `.item()` runs every step only through train.py's loop."""
    project = str(FIXTURES / "verify" / "trace")
    callees = [f for f in files if f.startswith(project + os.sep) and not f.endswith("train.py")]
    alone = {row for f in callees for row in gpulint_check(tmp_path, [f], *args)}
    dropped = [row for row in together if row[0] in callees and row not in alone]
    assert [(os.path.basename(r[0]), r[3]) for r in dropped] == [("meters.py", "GPU101")]
    return [row for row in together if row not in dropped]


def test_columns_are_gpulint_columns_on_non_ascii_lines(site_dir, tmp_path):
    # ast counts UTF-8 bytes; gpulint (and so the plugin) reports characters
    (tmp_path / "m.py").write_text(
        "import torch\nfrom torch import nn\n\nnamé = 'ß'; m = nn.DataParallel(nn.Linear(4, 4))\n", encoding="utf-8"
    )
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "m.py")
    assert [(r, c, code) for _, r, c, code, _ in parsed(res.stdout)] == [(4, 17, "GPU001")]
    assert parsed(res.stdout) == gpulint_check(tmp_path, ["m.py"])


def test_default_off_rule_needs_its_exact_code(site_dir, train):
    def run(*args):
        res = flake8_run(site_dir, train, "--isolated", *args, "train.py")
        assert res.returncode == 1, res.stderr
        return rows(res.stdout)

    assert run("--select", "GPU") == TRAIN_DEFAULT
    assert run("--select", "GPU1") == [(14, "GPU101")]  # a prefix never turns GPU104 on
    assert run("--select", "GPU104") == [(20, "GPU104")]
    assert run("--select", "GPU", "--extend-select", "GPU104") == TRAIN_ALL
    # flake8's default selection (everything) includes the default-on rules only
    assert [f for f in run() if f[1].startswith("GPU")] == TRAIN_DEFAULT


def test_extend_ignore(site_dir, train):
    res = flake8_run(site_dir, train, "--isolated", "--select", "GPU", "--extend-ignore", "GPU101", "train.py")
    assert rows(res.stdout) == [f for f in TRAIN_DEFAULT if f[1] != "GPU101"]
    res = flake8_run(site_dir, train, "--isolated", "--select", "GPU", "--extend-ignore", "GPU2", "train.py")
    assert rows(res.stdout) == [f for f in TRAIN_DEFAULT if not f[1].startswith("GPU2")]


# ------------------------------------------------------------------ noqa
NOQA = """\
import torch
from torch import nn

a = nn.DataParallel(nn.Linear(4, 4))  # noqa
b = nn.DataParallel(nn.Linear(4, 4))  # noqa: GPU001
c = nn.DataParallel(nn.Linear(4, 4))  # noqa: E501
d = nn.DataParallel(nn.Linear(4, 4))  # noqa: GPU0
e = nn.DataParallel(nn.Linear(4, 4))  # gpulint: ignore[data-parallel]
f = nn.DataParallel(  # noqa: GPU001
    nn.Linear(4, 4)
)
g = (  # noqa: GPU001
    nn.DataParallel(nn.Linear(4, 4))
)
h = nn.DataParallel(nn.Linear(4, 4))  # noqa: host-sync-in-loop
"""


def test_noqa_is_flake8s(site_dir, tmp_path):
    (tmp_path / "m.py").write_text(NOQA, encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "m.py")
    assert res.returncode == 1, res.stderr
    # flake8's rules: a blanket noqa, the exact code or a prefix (GPU0) on the
    # flagged line; not another code (E501), nor a comment on the first line
    # of a multi-line statement (13); `noqa: <rule name>` is a blanket noqa to flake8
    assert rows(res.stdout) == [(6, "GPU001"), (13, "GPU001")]
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "--disable-noqa", "m.py")
    # everything, gpulint's own ignore comment included
    assert rows(res.stdout) == [(r, "GPU001") for r in (4, 5, 6, 7, 8, 9, 13, 15)]
    # gpulint check, for contrast, applies its own (Ruff's) rules to the same file
    assert [(r, c) for _, r, _, c, _ in gpulint_check(tmp_path, ["m.py"])] == [(6, "GPU001"), (7, "GPU001"), (15, "GPU001")]


def test_skip_file_comment_and_flake8_noqa_file(site_dir, tmp_path):
    (tmp_path / "a.py").write_text("# gpulint: skip-file\n" + TRAIN, encoding="utf-8")
    (tmp_path / "b.py").write_text("# flake8: noqa\n" + TRAIN, encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "a.py", "b.py")
    assert res.returncode == 0 and res.stdout == "", res.stdout + res.stderr
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "--disable-noqa", "a.py")
    assert rows(res.stdout) == [(r + 1, c) for r, c in TRAIN_DEFAULT]


# ------------------------------------------------------------------ torch version, stdin, errors
ZERO_GRAD = "import torch\n\ndef step(opt):\n    opt.zero_grad()\n"


def test_torch_version_from_gpulint_config_and_option(site_dir, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "pyproject.toml").write_text('[tool.gpulint]\ntorch-version = "1.13"\n', encoding="utf-8")
    (tmp_path / "old" / "z.py").write_text(ZERO_GRAD, encoding="utf-8")
    (tmp_path / "z.py").write_text(ZERO_GRAD, encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "z.py", "old/z.py")
    # bare zero_grad() is flagged only for torch < 2.0, where set_to_none defaulted to False
    assert [(Path(p), r, c) for p, r, _, c, _ in parsed(res.stdout)] == [(Path("old/z.py"), 4, "GPU302")]
    assert parsed(res.stdout) == gpulint_check(tmp_path, ["z.py", "old/z.py"])
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "--gpulint-torch-version", "1.12", "z.py")
    assert rows(res.stdout) == [(4, "GPU302")]
    (tmp_path / "setup.cfg").write_text("[flake8]\ngpulint-torch-version = 1.12\n", encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--select", "GPU", "z.py")
    assert rows(res.stdout) == [(4, "GPU302")]
    res = flake8_run(site_dir, tmp_path, "--isolated", "--gpulint-torch-version", "latest", "z.py")
    assert res.returncode == 2
    assert "--gpulint-torch-version: not a version: 'latest'" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_gpulint_config_is_one_line_and_the_run_goes_on(site_dir, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pyproject.toml").write_text('[tool.gpulint]\ntorch-verison = "1.13"\n', encoding="utf-8")
    (tmp_path / "bad" / "m.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "m.py").write_text(TRAIN, encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "bad/m.py", "m.py")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    found = parsed(res.stdout)
    bad = [f for f in found if "bad" in f[0]]
    assert len(bad) == 1 and bad[0][1:4] == (1, 1, "GPU000")
    assert "unknown key 'torch-verison'" in bad[0][4] and "did you mean 'torch-version'" in bad[0][4]
    assert sorted((r, c) for p, r, _, c, _ in found if "bad" not in p) == TRAIN_DEFAULT


def test_stdin(site_dir, tmp_path):
    res = flake8_run(site_dir, tmp_path, "--isolated", "--select", "GPU", "-", stdin=TRAIN)
    assert res.returncode == 1, res.stderr
    assert rows(res.stdout) == TRAIN_DEFAULT


def test_syntax_error_is_flake8s(site_dir, tmp_path):
    (tmp_path / "broken.py").write_text("x = (\n", encoding="utf-8")
    res = flake8_run(site_dir, tmp_path, "--isolated", "broken.py")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert [c for _, _, _, c, _ in parsed(res.stdout)] == ["E999"]


# ------------------------------------------------------------------ in-process
def _plugin_results(source: str, filename: str, options=None):
    from gpulint.frontends.flake8_plugin import Plugin

    Plugin.parse_options(options)
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    return list(Plugin(tree, source.splitlines(keepends=True), filename).run())


def test_plugin_uses_the_lines_and_tree_it_is_given(tmp_path):
    # the file does not exist: everything comes from flake8's lines and tree
    missing = str(tmp_path / "not_there.py")
    results = _plugin_results(TRAIN, missing)
    assert [(r, text.split()[0]) for r, _, text, _ in results] == TRAIN_DEFAULT
    assert all(isinstance(c, int) and c >= 0 for _, c, _, _ in results)


def test_plugin_reports_an_analysis_failure_as_gpu000(monkeypatch, tmp_path):
    import gpulint.frontends.flake8_plugin as plugin

    from gpulint.engine import files

    def boom(*a, **k):
        raise RuntimeError("rule bug")

    monkeypatch.setattr(files, "lint_module", boom)  # a bug in the engine or a rule
    (result,) = _plugin_results(TRAIN, str(tmp_path / "m.py"))
    assert result[:2] == (1, 0)
    assert result[2] == "GPU000 gpulint internal error: RuntimeError: rule bug (please report this)"
    monkeypatch.setattr(plugin.ProjectLinter, "lint", boom)  # and one outside it
    (result,) = _plugin_results(TRAIN, str(tmp_path / "m.py"))
    assert result[2] == "GPU000 gpulint internal error: RuntimeError: rule bug (please report this)"


def test_importing_gpulint_imports_neither_flake8_nor_the_plugin():
    code = (
        "import sys, gpulint, gpulint.frontends.cli, gpulint.engine.lint, gpulint.engine.runner\n"
        "assert 'flake8' not in sys.modules and 'gpulint.frontends.flake8_plugin' not in sys.modules, sorted(sys.modules)\n"
        "import gpulint.frontends.flake8_plugin\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('flake8', 'torch'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout == "ok\n", res.stderr


def test_every_rule_is_reachable_through_flake8():
    # default-on rules always run; each default-off rule by its exact code
    from gpulint.frontends.flake8_plugin import Plugin

    class Opts:
        select = ["GPU"]
        extend_select = [c for c, r in all_rules().items() if not r.default]
        disable_noqa = False
        gpulint_torch_version = None

    Plugin.parse_options(Opts)
    assert set(Plugin._default_on + Plugin._explicit) == set(all_rules())
    Plugin.parse_options(None)
    assert set(Plugin._default_on) == {c for c, r in all_rules().items() if r.default}
    assert Plugin._explicit == ()


def test_readme_example_is_what_flake8_prints(site_dir):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"```console\n\$ flake8 (?P<args>[^\n]+)\n(?P<out>.*?)```", readme, re.S)
    assert m, "README.md: no flake8 example"
    res = flake8_run(site_dir, ROOT, "--isolated", *m["args"].split())
    assert res.returncode == 1, res.stderr
    assert res.stdout == m["out"]


# ------------------------------------------------------------------ the project
def test_each_file_is_linted_with_the_project_files_it_imports(site_dir, tmp_path):
    """flake8 hands the plugin one file at a time: the helper it imports is
    read for its summary, so the loop whose step is in that helper trains
    (GPU101, as `gpulint check train.py` says), not an evaluation loop."""
    for name, text in STEPPER.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    proc = flake8_run(site_dir, tmp_path, "--select", "GPU101,GPU104", "train.py")
    assert rows(proc.stdout) == [(11, "GPU101")], proc.stdout + proc.stderr
    assert [(r, c) for _, r, _, c, _ in gpulint_check(tmp_path, ["train.py"], "--select", "GPU101,GPU104")] == [
        (11, "GPU101")]
    # the helper without its step: nothing trains there, and GPU101 has nothing to say
    (tmp_path / "helpers.py").write_text("class Stepper:\n    def __call__(self, loss, opt):\n        pass\n")
    proc = flake8_run(site_dir, tmp_path, "--select", "GPU101", "train.py")
    assert rows(proc.stdout) == [], proc.stdout + proc.stderr
