"""`gpulint verify`: the copy-and-fix step, the runner and its hooks (boot.py),
the loss comparison and the report, on the CPU with tiny workloads.

The runs on a GPU are recorded results (see the report of the change), not
tests: here torch is a CPU build, so the "no CUDA" path is tested for real.
Tests that run the harness need torch; without it they fail with a message
saying so, they are not skipped."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.harness import sides
from gpulint.harness.sides import compare_losses, copy_tree, fix_copy
from gpulint.harness.verify import verify

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "verify"
BOOT = ROOT / "gpulint" / "harness" / "boot.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _require_torch():
    if not HAS_TORCH:
        pytest.fail("these tests run the harness and need torch (CPU build): pip install torch")


# One thread per process: on a busy two-core CI machine, torch's default
# thread pool spins and makes a tiny CNN step 40x slower.
ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "GPULINT_NO_CACHE": "1", "NO_COLOR": "1"}


def _runner():
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def run_verify(args, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = _runner().invoke(verify, [str(a) for a in args], env=ENV)
    finally:
        os.chdir(old)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res


def copy_fixture(tmp_path: Path, name: str) -> Path:
    d = tmp_path / Path(name).stem
    d.mkdir()
    shutil.copy(FIXTURES / name, d / name)
    return d / name


def write_script(tmp_path: Path, body: str, name: str = "train.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body), encoding="utf-8")
    return p


# A minimal training script with one safe fix (GPU301: `total += loss`).
TINY = """\
import sys
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 8), torch.randn(64, 1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
total = 0.0
for step in range(steps):
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss
    {extra}
print("finished", float(total))
"""


# ------------------------------------------------------------- the fixtures
@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    _require_torch()
    tmp = tmp_path_factory.mktemp("lm")
    script = copy_fixture(tmp, "train_lm.py")
    out = tmp / "lm.json"
    res = run_verify(["--device", "cpu", "--steps", "4", "--warmup", "3", "--json", out, script.name,
                      "--", "--small"], script.parent)
    return res, json.loads(out.read_text())


def test_lm_safe_fixes_applied_and_measured(lm_run):
    res, data = lm_run
    assert res.exit_code == 0, res.output + res.stderr
    fixed = {f["code"] for f in data["fixes"]["fixed"]}
    assert fixed == {"GPU203", "GPU204", "GPU301"}
    assert all(f["fix"] == "safe" for f in data["fixes"]["fixed"])
    # the unsafe ones are held back and listed as not fixed
    assert {"GPU102", "GPU403"} <= {f["code"] for f in data["fixes"]["remaining"]}
    assert data["fixes"]["held_back_unsafe"] == 2
    for side in ("before", "after"):
        run = data["runs"][side][0]
        assert run["status"] == "done"
        assert run["steps_timed"] == 4 and run["steps_reached"] == 7
        assert run["seconds"] > 0 and len(run["host_step_ms"]) == 4
        assert len(run["losses"]) == 5 and run["backward_calls"] == 7
        assert run["sync_count"] is None and run["peak_memory_bytes"] is None  # CPU: n/a
        assert data[side]["ms_per_step"] > 0 and data[side]["syncs_per_step"] is None
    losses = data["comparison"]["losses"]
    assert losses["verdict"] == "agree" and losses["max_rel_diff"] <= 1e-3
    # the first losses are real values of a model learning from scratch
    assert all(4.0 < v < 6.0 for v in losses["before"])
    assert data["comparison"]["speedup"] == pytest.approx(
        data["before"]["ms_per_step"] / data["after"]["ms_per_step"])
    # three runs a side by default, alternating, and a verdict from the speedup's interval
    assert data["repeat"] == 3 and len(data["runs"]["before"]) == len(data["runs"]["after"]) == 3
    iv = data["comparison"]["speedup_interval"]
    assert iv["low"] <= data["comparison"]["speedup"] <= iv["high"]
    assert (iv["runs_before"], iv["runs_after"], iv["confidence"]) == (3, 3, 0.95)
    assert data["comparison"]["time_verdict"] in ("faster", "slower", "no measurable gain")
    progress = [line for line in res.stderr.splitlines() if line.startswith("gpulint verify: run ")]
    # alternating, and neither side always first: before, after; after, before; before, after
    assert progress == [f"gpulint verify: run {i}/3, {tag} the fixes ..." for i, tags in
                        ((1, ("before", "after")), (2, ("after", "before")), (3, ("before", "after"))) for tag in tags]


def test_lm_text_report(lm_run):
    res, data = lm_run
    out = res.output
    assert "Fixed 3 problems (safe fixes) in 1 file:" in out
    assert "train_lm.py:" in out and "GPU301 [safe]" in out
    for label in ("steps/s (CPU)", "ms/step (CPU)", "speedup (CPU)", "syncs/step", "peak memory"):
        assert label in out
    assert "agree (max rel diff" in out
    assert "95% interval]" in out and f"({data['comparison']['time_verdict']})" in out
    assert data["device_line"] in out and "CPU (" in data["device_line"] and "torch 2." in data["device_line"]
    assert "measured on the CPU" in out


def test_json_schema_fields(lm_run):
    _, data = lm_run
    assert data["schema"] == "gpulint-verify/1"
    for key in ("script", "args", "device", "device_line", "environment", "steps", "warmup", "repeat",
                "unsafe_fixes", "fixes", "runs", "before", "after", "comparison", "notes", "status"):
        assert key in data, key
    assert data["args"] == ["--small"] and data["device"] == "cpu" and data["status"] == "ok"
    assert data["environment"]["torch"].startswith("2.") and "date" in data["environment"]
    for f in data["fixes"]["fixed"] + data["fixes"]["remaining"]:
        assert set(f) == {"code", "name", "path", "line", "col", "message", "fix"}
        assert f["path"] == "train_lm.py" and f["line"] > 0


def test_classifier_with_dataloader_workers_and_unsafe_fixes(tmp_path):
    """The image classifier with two DataLoader workers, which must die with
    the process stopped after the timed steps; unsafe fixes included."""
    _require_torch()
    script = copy_fixture(tmp_path, "train_classifier.py")
    out = tmp_path / "cls.json"
    res = run_verify(["--device", "cpu", "--steps", "3", "--warmup", "2", "--unsafe-fixes", "--json", out,
                      "--timeout", "120", script.name, "--", "--small", "--workers", "2", "--batch-size", "16"],
                     script.parent)
    assert res.exit_code == 0, res.output + res.stderr
    data = json.loads(out.read_text())
    codes = sorted(f["code"] for f in data["fixes"]["fixed"])
    assert codes == ["GPU103", "GPU201", "GPU302", "GPU401", "GPU401"]
    assert data["fixes"]["unsafe_applied"] is True
    assert [f["code"] for f in data["fixes"]["remaining"]] == ["GPU101"]  # no automatic fix
    for side in ("before", "after"):
        run = data["runs"][side][0]
        assert run["status"] == "done" and run["steps_timed"] == 3 and run["steps_reached"] == 5
        # stopped long before the 512 / 16 = 32 steps of an epoch, and well inside the timeout
        assert run["wall_s"] < 100
    # zero_grad(set_to_none=True) and no empty_cache() keep the arithmetic: same losses
    assert data["comparison"]["losses"]["verdict"] == "agree"
    assert "[unsafe]" in res.output and "GPU302" in res.output


# -------------------------------------------------------------- the failures
def test_no_cuda_without_device_cpu_exits_2(tmp_path):
    _require_torch()
    script = write_script(tmp_path, TINY.format(extra="pass"))
    res = run_verify([script.name], tmp_path)
    assert res.exit_code == 2
    assert "no CUDA device" in res.stderr and "--device cpu" in res.stderr
    assert res.stdout == ""


def test_script_that_raises_exits_2_with_its_error(tmp_path):
    _require_torch()
    script = write_script(tmp_path, TINY.format(extra='if step == 2:\n        raise ValueError("bad batch shape")'))
    res = run_verify(["--device", "cpu", "--steps", "5", "--warmup", "2", script.name], tmp_path)
    assert res.exit_code == 2
    assert "the script failed after 3 optimizer steps: ValueError: bad batch shape" in res.stderr
    assert "| ValueError: bad batch shape" in res.stderr  # the last lines of its stderr


def test_script_that_ends_early_is_reported(tmp_path):
    _require_torch()
    script = write_script(tmp_path, TINY.format(extra="pass"))
    out = tmp_path / "early.json"
    res = run_verify(["--device", "cpu", "--steps", "10", "--warmup", "2", "--json", out, script.name, "--", "4"],
                     tmp_path)
    assert res.exit_code == 2
    assert "ended (the script returned) after 4 optimizer steps, before the 2 warm-up + 10 timed steps" in res.stderr
    data = json.loads(out.read_text())
    run = data["runs"]["before"][0]
    assert run["status"] == "ended" and run["steps_reached"] == 4 and run["steps_timed"] == 0
    assert len(run["losses"]) == 4  # what was reached is still recorded
    assert data["status"] == "error"


def test_timeout_kills_the_script(tmp_path):
    _require_torch()
    script = write_script(tmp_path, TINY.format(extra="import time; time.sleep(30)"))
    res = run_verify(["--device", "cpu", "--steps", "3", "--warmup", "1", "--timeout", "3", script.name], tmp_path)
    assert res.exit_code == 2
    assert "timed out after" in res.stderr


def test_nothing_to_fix_exits_0_without_running(tmp_path):
    _require_torch()
    script = write_script(
        tmp_path, TINY.format(extra="torch.cuda.synchronize()").replace("total += loss", "total += loss.item()"))
    out = tmp_path / "n.json"
    res = run_verify(["--device", "cpu", "--json", out, script.name], tmp_path)
    assert res.exit_code == 0, res.stderr
    # nothing ran: this script would fail on the CPU (torch.cuda.synchronize())
    assert res.stdout == (
        "Nothing to fix in train.py and the files beside it (2 findings not fixed; "
        "1 unsafe fix held back: add --unsafe-fixes): nothing to compare.\n"
    )
    data = json.loads(out.read_text())
    assert data["status"] == "nothing to fix" and "runs" not in data
    # (its small MLP gives GPU403 no evidence of matmul work)
    assert [f["code"] for f in data["fixes"]["remaining"]] == ["GPU101", "GPU102"]


def test_unknown_rule_code_is_a_usage_error(tmp_path):
    script = write_script(tmp_path, TINY.format(extra="pass"))
    res = run_verify(["--select", "GPU999", script.name], tmp_path)
    assert res.exit_code == 2 and "unknown rule code" in res.stderr


# ---------------------------------------------------------- copying, fixing
def test_copy_and_fix_never_touch_the_originals(tmp_path):
    src = tmp_path / "proj"
    (src / "models").mkdir(parents=True)
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref\n")
    (src / "data").mkdir()
    for i in range(sides.BIG_DIR + 1):
        (src / "data" / f"{i}.bin").write_bytes(b"x")
    (src / "weights.pt").write_bytes(b"\0" * sides.BIG_FILE)
    (src / "config.yaml").write_text("lr: 0.1\n")
    train = src / "train.py"
    train.write_text(TINY.format(extra="pass"))
    model = src / "models" / "block.py"
    model.write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        class Block(nn.Module):
            def forward(self, x: torch.Tensor):
                return x + torch.arange(x.size(-1))
        """))
    before = {p: p.read_bytes() for p in (train, model)}
    work = tmp_path / "work"
    copied = copy_tree(str(src), str(work / "after"))
    assert copied == ["models/block.py", "train.py"]
    assert not (work / "after" / ".git").exists()
    assert (work / "after" / "data").is_symlink() and (work / "after" / "weights.pt").is_symlink()
    assert (work / "after" / "config.yaml").read_text() == "lr: 0.1\n"
    fx = fix_copy(str(src), str(train), str(work / "after"), copied, unsafe=False)
    assert sorted((f["path"], f["code"]) for f in fx.fixed) == [("models/block.py", "GPU204"), ("train.py", "GPU301")]
    assert sorted(fx.files_changed) == ["models/block.py", "train.py"]
    assert "total += loss.detach()" in (work / "after" / "train.py").read_text()
    assert "device=x.device" in (work / "after" / "models" / "block.py").read_text()
    assert {p: p.read_bytes() for p in (train, model)} == before


def test_fix_copy_follows_the_users_config(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "pyproject.toml").write_text('[tool.gpulint]\nignore = ["GPU301"]\n')
    train = src / "train.py"
    train.write_text(TINY.format(extra="pass"))
    copied = copy_tree(str(src), str(tmp_path / "after"))
    fx = fix_copy(str(src), str(train), str(tmp_path / "after"), copied, unsafe=False)
    assert fx.fixed == [] and fx.remaining == []
    fx = fix_copy(str(src), str(train), str(tmp_path / "after"), copied, unsafe=False, select=["GPU301"])
    assert [f["code"] for f in fx.fixed] == ["GPU301"]


# -------------------------------------------------------------- comparison
def test_compare_losses():
    assert compare_losses([2.0, 1.5], [2.0, 1.5], False)["verdict"] == "agree"
    close = compare_losses([2.0, 1.5], [2.0, 1.5009], False)
    assert close["verdict"] == "agree" and close["max_rel_diff"] == pytest.approx(0.0009 / 1.5009)
    far = compare_losses([2.0, 1.5], [2.0, 1.52], False)
    assert far["verdict"] == "differ" and "please report" in far["reason"]
    tf32 = compare_losses([2.0, 1.5], [2.0, 1.52], True)
    assert tf32["verdict"] == "differ" and tf32["reason"] == "expected: unsafe fixes change numerics"
    assert compare_losses([], [1.0], False)["verdict"] == "not comparable"
    counts = compare_losses([1.0, 2.0], [1.0], False)
    assert counts["verdict"] == "not comparable" and "2 losses captured before, 1 after" in counts["reason"]
    assert compare_losses([float("nan")], [1.0], False)["verdict"] == "differ"


def test_verify_module_does_not_import_torch():
    code = "import sys, gpulint.harness.verify; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ------------------------------------------------------------- boot's hooks
def _boot():
    spec = importlib.util.spec_from_file_location("gpulint_verify_boot", BOOT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Done(Exception):
    pass


def test_boot_counts_steps_and_keeps_losses_without_reading_them(tmp_path):
    _require_torch()
    import torch
    from torch.overrides import TorchFunctionMode

    boot = _boot()
    rec = boot.Recorder(torch, str(tmp_path / "r.json"), steps=3, warmup=2, cuda=False)

    def done():
        raise _Done

    rec.on_done = done
    reads = []

    class NoReads(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__float__):
                reads.append((func.__name__, rec.written))
            return func(*args, **(kwargs or {}))

    original_backward = torch.autograd.backward
    uninstall = boot.install(torch, rec)
    assert torch.autograd.backward is not original_backward
    try:
        model = torch.nn.Linear(4, 1)
        gen = torch.optim.SGD(model.parameters(), lr=0.1)
        disc = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(16, 4)
        expected = []
        with pytest.raises(_Done), NoReads():
            for _ in range(10):
                loss = model(x).pow(2).mean()
                expected.append(loss.detach().clone())
                loss.backward()
                gen.step()  # two optimizers per iteration, as in a GAN: each step counts
                disc.step()
        # no loss was read during the steps; the three kept are read once the window closed
        assert reads == [("item", True)] * 3
    finally:
        uninstall()
    assert torch.autograd.backward is original_backward  # uninstalled
    assert rec.steps_done == 5 and len(rec.losses) == 3  # 5 steps = 3 iterations (the third ends the window)
    assert all(isinstance(t, torch.Tensor) for t in rec.losses) and rec.loss_values is not None
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["status"] == "done" and data["steps_timed"] == 3 and data["optimizers"] == 2
    assert data["losses"] == [float(t) for t in expected[:3]]
    assert data["seconds"] > 0 and len(data["host_step_ms"]) == 3


def test_boot_sync_counter_counts_sync_warnings_and_passes_others():
    boot = _boot()
    counter = boot.SyncCounter()
    shown = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the script silenced warnings before counting started
        warnings.showwarning = lambda *a, **k: shown.append(str(a[0]))
        counter.start()
        for _ in range(3):  # the same line three times: "always" keeps them all
            warnings.warn("called a synchronizing CUDA operation", UserWarning)
        synchronize = counter.counted_synchronize(lambda: "synced")
        assert synchronize() == "synced"
        counter.stop()
        warnings.warn("called a synchronizing CUDA operation", UserWarning)  # off: not counted
        synchronize()
        warnings.simplefilter("always")
        warnings.warn("an ordinary warning", UserWarning)  # other warnings still reach showwarning
    assert (counter.implicit, counter.explicit, counter.count) == (3, 1, 4)
    # counted warnings are swallowed, "ignore" still held after stop(), others pass
    assert shown == ["an ordinary warning"]


def test_boot_stops_the_script_after_the_window(tmp_path):
    """The child process: steps W + N, then os._exit(0) with results written,
    so the rest of the script never runs."""
    _require_torch()
    script = write_script(tmp_path, TINY.format(extra="pass"))
    results = tmp_path / "r.json"
    env = dict(os.environ, **ENV)
    proc = subprocess.run([sys.executable, str(BOOT), str(results), "4", "2", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "finished" not in proc.stdout
    data = json.loads(results.read_text())
    assert data["status"] == "done" and data["steps_reached"] == 6 and data["steps_timed"] == 4
    assert len(data["losses"]) == 5 and data["error"] is None


# ------------------------------------------------------------- --each
def test_each_measures_every_rules_fixes_alone_and_together(tmp_path):
    _require_torch()
    script = copy_fixture(tmp_path, "train_lm.py")
    # another script beside it, which train_lm.py never imports, with a fix of its own
    (script.parent / "export.py").write_text("import torch\n\nscaler = torch.cuda.amp.GradScaler()\n")
    out = tmp_path / "each.json"
    res = run_verify(["--each", "--device", "cpu", "--steps", "3", "--warmup", "2", "--repeat", "3",
                      "--json", out, script.name, "--", "--small"], script.parent)
    assert res.exit_code == 0, res.output + res.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == "gpulint-verify-each/1" and data["status"] == "ok"
    tags = [v["fix"] for v in data["variants"]]
    assert tags == ["GPU203", "GPU204", "GPU301", "GPU401", "all"]
    for v in data["variants"]:
        codes = {f["code"] for f in v["fixed"]}
        assert codes == ({"GPU203", "GPU204", "GPU301", "GPU401"} if v["fix"] == "all" else {v["fix"]})
        assert len(data["runs"][v["fix"]]) == 3 and v["losses"]["verdict"] == "agree"
        iv = v["speedup_interval"]
        assert iv["low"] <= v["speedup"] <= iv["high"]
        assert v["time_verdict"] == "not run" if v["fix"] == "GPU401" else v["time_verdict"] in (
            "faster", "slower", "no measurable gain")
    # every rule lands in exactly one list of the summary; the fix the script never runs is said so
    s = data["summary"]
    assert s["not_run"] == ["GPU401"] and "Not run by this script" in res.output
    assert sorted(s["keep"] + s["no_gain"] + s["slower"] + s["not_run"] + s["not_judged"]) == [
        "GPU203", "GPU204", "GPU301", "GPU401"]
    assert data["runs"]["before"][0]["imported"] == ["train_lm.py"]
    # the copies run in turn, round after round
    progress = [line for line in res.stderr.splitlines() if line.startswith("gpulint verify: run ")]
    assert progress[:6] == ["gpulint verify: run 1/3, with no fix ...", "gpulint verify: run 1/3, with GPU203's fixes ...",
                            "gpulint verify: run 1/3, with GPU204's fixes ...",
                            "gpulint verify: run 1/3, with GPU301's fixes ...",
                            "gpulint verify: run 1/3, with GPU401's fixes ...",
                            "gpulint verify: run 1/3, with all the fixes ..."] and len(progress) == 18
    # each round starts one copy further on: no copy always runs first
    assert progress[6] == "gpulint verify: run 2/3, with GPU203's fixes ..." and progress[11] == (
        "gpulint verify: run 2/3, with no fix ...")
    assert progress[12] == "gpulint verify: run 3/3, with GPU204's fixes ..."
    assert "all together" in res.output
    keep = s["keep"]
    assert (f"Keep: {', '.join(keep)} (faster alone)." if keep else "No fix is faster alone on this script.") in res.output


def test_each_summary_says_which_fixes_slow_the_script():
    from gpulint.harness import each

    variants = [{"fix": "GPU201", "time_verdict": "faster"}, {"fix": "GPU405", "time_verdict": "slower"},
                {"fix": "GPU203", "time_verdict": "no measurable gain"}, {"fix": "GPU204", "time_verdict": None},
                {"fix": "all", "time_verdict": "faster"}]
    assert each.summary(variants) == {"keep": ["GPU201"], "no_gain": ["GPU203"], "slower": ["GPU405"],
                                      "not_run": [], "not_judged": ["GPU204"]}
    # a rule whose fixes are all in a file no run of before imported is not run, whatever its timing
    variants[0]["fixed"] = [{"path": "export.py"}]
    variants[1]["fixed"] = [{"path": "train.py"}, {"path": "export.py"}]
    each.mark_not_run(variants, [{"imported": ["train.py"]}, {"imported": ["train.py", "model.py"]}])
    assert each.summary(variants)["not_run"] == ["GPU201"] and each.summary(variants)["slower"] == ["GPU405"]


def test_trace_and_each_are_exclusive_and_plot_needs_trace(tmp_path):
    _require_torch()
    script = copy_fixture(tmp_path, "train_lm.py")
    res = run_verify(["--each", "--trace", "--device", "cpu", script.name], script.parent)
    assert res.exit_code == 2 and "choose one" in res.stderr
    res = run_verify(["--plot", "x.png", "--device", "cpu", script.name], script.parent)
    assert res.exit_code == 2 and "add --trace" in res.stderr


def test_the_readmes_harness_commands_name_real_scripts_and_real_options(monkeypatch):
    """The README's verify commands, from a clone: each script exists, needs
    nothing but torch, and click accepts every option (the runs themselves
    are the tests above, on the same scripts)."""
    monkeypatch.chdir(ROOT)  # the commands run from a clone's root
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Measuring what a fix buys"):]
    block = section[section.index("```console"):section.index("```", section.index("```console") + 3)]
    commands = [line.split("#")[0].split() for line in block.splitlines() if line.startswith("gpulint verify")]
    assert [c[2:-1] for c in commands] == [["--preview"], ["--each", "--preview"], ["--trace", "--preview"]]
    for cmd in commands:
        script = ROOT / cmd[-1]
        assert script.is_file(), cmd
        imports = {line.split()[1].split(".")[0] for line in script.read_text().splitlines()
                   if line.startswith(("import ", "from "))}
        assert imports <= {"argparse", "math", "torch", "meters", "model", "time"}, imports
        ctx = verify.make_context("verify", cmd[2:] + ["--device", "cpu", "--", "--small"])
        assert ctx.params["script"] == cmd[-1]
