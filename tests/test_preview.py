"""The preview tier, as in Ruff: stable rules run by default and under ALL;
preview rules need --preview (or `preview = true`), or their exact code."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulint.engine.config import ConfigError, Settings, resolve_selection, settings_from_table
from gpulint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
RULES = all_rules()
STABLE = [c for c, r in RULES.items() if not r.preview]
PREVIEW = [c for c, r in RULES.items() if r.preview]

# GPU001 (preview, on by default) and GPU401 (stable) on one file
SOURCE = """\
import torch

model = torch.nn.DataParallel(torch.nn.Linear(2, 2)).cuda()
scaler = torch.cuda.amp.GradScaler()
"""


@pytest.fixture(autouse=True)
def no_preview_env(monkeypatch):
    """The suite turns preview on (conftest.py); these tests start without it."""
    monkeypatch.delenv("GPULINT_PREVIEW", raising=False)


def test_the_environment_variable_turns_preview_on(monkeypatch):
    s = Settings(root=".")
    assert not s.preview_on
    monkeypatch.setenv("GPULINT_PREVIEW", "1")
    assert s.preview_on
    assert not Settings(root=".", cli_preview=False).preview_on  # --no-preview wins
    monkeypatch.setenv("GPULINT_PREVIEW", "false")
    assert not Settings(root=".", preview=True).preview_on  # as the command line's flag would


def gpulint(args, cwd, preview_env=None):
    env = dict(os.environ, GPULINT_NO_CACHE="1")
    env.pop("GPULINT_PREVIEW", None)
    if preview_env is not None:
        env["GPULINT_PREVIEW"] = preview_env
    p = subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, env=env, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def codes_in(out):
    return sorted({tok for line in out.splitlines() for tok in line.split()[1:2] if tok.startswith("GPU")})


def test_there_are_preview_rules_and_every_rule_has_a_status():
    """Stable rules may be none: a rule is stable only on the evidence
    (the next test), and none has it while the first-sight figures say so."""
    assert PREVIEW
    assert set(STABLE) | set(PREVIEW) == set(RULES) and not set(STABLE) & set(PREVIEW)


def test_a_plain_check_without_stable_rules_says_nothing_was_checked(tmp_path, monkeypatch):
    """With no stable rule on by default, a plain check is no pass: it says
    why nothing ran and what to add, and never prints "All checks passed!"."""
    from gpulint.engine import config

    monkeypatch.setattr(config, "resolve_selection", lambda *a, **k: ())
    monkeypatch.setattr(Settings, "enabled_codes", lambda self: ())
    warnings = Settings(root=".").selection_warnings()
    assert any("no rule is stable yet" in w and "--preview" in w for w in warnings)
    assert "no rule is selected: nothing is checked" in warnings
    from gpulint.frontends.reporters import ReportContext
    from gpulint.frontends.reporters.text import summary

    assert summary([], [], ReportContext(rules_selected=False)) == ["Nothing checked: no rule is selected."]
    assert summary([], [], ReportContext()) == ["All checks passed!"]


def test_every_stable_rule_meets_the_first_sight_bar():
    """A rule is stable only with the evidence: >= 95% right at first sight,
    over >= 30 judged findings from >= 2 corpora (bench/first_sight.py)."""
    ev = json.loads((ROOT / "docs" / "first-sight.json").read_text())
    bar = ev["bar"]
    assert bar == {"precision": 0.95, "judged": 30, "corpora": 2}
    for code in STABLE:
        e = ev["rules"].get(code)
        assert e is not None, f"{code} is stable with no first-sight evidence"
        assert e["judged"] >= bar["judged"], code
        assert len(e["corpora"]) >= bar["corpora"], code
        assert e["right"] >= bar["precision"] * e["judged"], code
    # the recorded verdicts add up
    for code, e in ev["rules"].items():
        assert sum(j for _, j in e["per_corpus"].values()) == e["judged"], code
        assert sum(r for r, _ in e["per_corpus"].values()) == e["right"], code


def test_default_selection_is_the_stable_rules_on_by_default():
    plain = resolve_selection(None, (), ())
    assert set(plain) == {c for c in STABLE if RULES[c].default}
    with_preview = resolve_selection(None, (), (), preview=True)
    assert set(with_preview) == {c for c, r in RULES.items() if r.default}


def test_all_means_every_stable_rule_and_with_preview_every_rule():
    assert set(resolve_selection(("ALL",), (), ())) == set(STABLE)
    assert set(resolve_selection(("ALL",), (), (), preview=True)) == set(RULES)


def test_an_exact_code_selects_a_preview_rule_without_preview():
    code = PREVIEW[0]
    assert resolve_selection((code,), (), ()) == (code,)
    assert resolve_selection(None, (code,), ()) == tuple(c for c in RULES if c == code or c in
                                                          resolve_selection(None, (), ()))


def test_a_prefix_of_preview_rules_warns_without_preview():
    s = Settings(root=".", cli_select=("GPU1",))
    assert s.enabled_codes() == ()
    warnings = s.selection_warnings()
    assert any("`GPU1` has no effect because preview is not enabled" in w for w in warnings)
    assert any("no rule is selected" in w for w in warnings)
    on = Settings(root=".", cli_select=("GPU1",), cli_preview=True)
    assert on.selection_warnings() == ()
    assert set(on.enabled_codes()) == {c for c in RULES if c.startswith("GPU1")}


def test_config_preview_key():
    s = settings_from_table({"preview": True}, "/p/gpulint.toml")
    assert s.preview_on
    assert {c for c, r in RULES.items() if r.default} == set(s.enabled_codes())
    with pytest.raises(ConfigError, match="'preview' must be a boolean"):
        settings_from_table({"preview": "yes"}, "/p/gpulint.toml")


def test_command_line_default_preview_flag_env_and_config(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    by_default = [c for c in ("GPU001", "GPU401") if c in STABLE]  # none while no rule is stable
    rc, out, err = gpulint(["check", "a.py"], tmp_path)
    assert rc == (1 if by_default else 0) and codes_in(out) == by_default
    if not by_default:
        assert "Nothing checked: no rule is selected." in out and "All checks passed!" not in out
        assert "no rule is stable yet" in err
    rc, out, _ = gpulint(["check", "--preview", "a.py"], tmp_path)
    assert codes_in(out) == ["GPU001", "GPU401"]
    rc, out, _ = gpulint(["check", "a.py"], tmp_path, preview_env="1")
    assert codes_in(out) == ["GPU001", "GPU401"]
    rc, out, _ = gpulint(["check", "--select", "GPU001", "a.py"], tmp_path)
    assert codes_in(out) == ["GPU001"]
    rc, out, err = gpulint(["check", "--select", "GPU0", "a.py"], tmp_path)
    assert rc == 0 and codes_in(out) == []
    assert "selection `GPU0` has no effect because preview is not enabled" in err
    assert len(err.strip().splitlines()) == 2  # that line, and "no rule is selected"
    (tmp_path / "gpulint.toml").write_text("preview = true\n")
    rc, out, _ = gpulint(["check", "a.py"], tmp_path)
    assert codes_in(out) == ["GPU001", "GPU401"]
    rc, out, _ = gpulint(["check", "--no-preview", "a.py"], tmp_path)
    assert codes_in(out) == by_default
    rc, out, _ = gpulint(["check", "--show-settings", "a.py"], tmp_path)
    assert "preview = true" in out


def test_fix_honours_preview(tmp_path):
    (tmp_path / "a.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    rc, out, err = gpulint(["fix", "a.py"], tmp_path)
    assert ("torch.amp.autocast" in out) is ("GPU401" in STABLE)  # a stable rule's fix is offered by default
    rc, out, err = gpulint(["fix", "--preview", "a.py"], tmp_path)
    assert "torch.amp.autocast" in out


def test_rules_command_shows_status(tmp_path):
    rc, out, _ = gpulint(["rules", "--output-format", "json"], tmp_path)
    rows = {r["code"]: r for r in json.loads(out)}
    assert {c: r["status"] for c, r in rows.items()} == {c: "preview" if RULES[c].preview else "stable"
                                                         for c in RULES}
    rc, out, _ = gpulint(["rules"], tmp_path)
    assert "status" in out.splitlines()[0]
    for code in RULES:
        line = next(line for line in out.splitlines() if line.startswith(code))
        assert (" stable " in line) is (code in STABLE) and (" preview " in line) is (code in PREVIEW)


def test_rule_pages_show_status_and_figures():
    from gpulint.frontends.docs import render_markdown

    for code, cls in RULES.items():
        page = render_markdown(cls)
        assert ("Status: stable" if not cls.preview else "Status: preview") in page, code


def test_with_no_rule_selected_files_are_only_parsed(tmp_path, monkeypatch):
    """A run that selects no rule (a plain check while every rule is in
    preview) reads nothing for the project: each file is parsed, so that a
    syntax error is still reported, and none is modelled or summarized."""
    from gpulint.engine import runner
    from gpulint.engine.config import ConfigResolver
    from gpulint.model.project import facts

    (tmp_path / "train.py").write_text(SOURCE + "for x in loader:\n    loss = model(x)\n    loss.backward()\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    built = []
    monkeypatch.setattr(facts, "FileModel", lambda *a, **k: built.append(a[2]) or pytest.fail("modelled"))
    out = runner.run([str(tmp_path)], ConfigResolver(cwd=str(tmp_path)), use_cache=False, jobs=1)
    by_name = {Path(r.path).name: r for r in out.results}
    assert set(by_name) == {"train.py", "broken.py"}
    assert by_name["broken.py"].error is not None and "syntax error" in str(by_name["broken.py"].error)
    assert by_name["train.py"].error is None and not by_name["train.py"].findings
    assert by_name["train.py"].summary is None and built == []
