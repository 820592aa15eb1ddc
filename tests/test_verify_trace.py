"""`gpulint verify --trace`: the tracer in the child (`boot.Tracer`), the join
with the findings (`harness.trace`), and the command end to end on the CPU.

A CPU build of torch has no syncs and no CUDA copies, so the tracer's sync
path is driven by sync debug mode's own warning text, and its copy path by
copies to the `meta` device; the DataLoader wait, the lines reached and the
marks are real. The runs on a GPU are recorded in docs/verify-trace.md."""

from __future__ import annotations

import importlib.util
import json
import shutil
import textwrap
import warnings
from pathlib import Path

import pytest

from gpulint.harness import trace as T

ROOT = Path(__file__).resolve().parent.parent
BOOT = ROOT / "gpulint" / "harness" / "boot.py"
SCHEMA = ROOT / "docs" / "verify-trace.schema.json"


def _boot():
    spec = importlib.util.spec_from_file_location("gpulint_trace_boot", BOOT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _torch():
    if importlib.util.find_spec("torch") is None:
        pytest.fail("these tests run the tracer and need torch (CPU build): pip install torch")
    import torch

    return torch


# ------------------------------------------------------------ the join
def _finding(path, line, code="GPU101", col=5):
    return {"code": code, "name": "x", "path": path, "line": line, "col": col, "message": "m", "fix": None}


def test_statement_lines_cover_a_statement_and_a_header_only():
    text = textwrap.dedent("""\
        total = (a +
                 b.item())
        for x in loader:
            y = x
        if (t.sum()
                > 0):
            pass
        """)
    spans = T.statement_lines(text, [2, 3, 5, 4])
    assert spans[2] == (1, 2)  # the statement spans two lines
    assert spans[3] == (3, 3)  # a loop's header, not its body
    assert spans[5] == (5, 6) and spans[4] == (4, 4)


def test_build_report_marks_each_row_and_each_finding():
    findings = [
        _finding("train.py", 10),                   # a sync on its line: confirmed
        _finding("utils/meter.py", 4, "GPU101"),    # in another file, on the second line of its statement
        _finding("train.py", 20, "GPU203"),         # ran, but no event on its line
        _finding("train.py", 30, "GPU102"),         # never ran
    ]
    spans = {("train.py", 10): (10, 10), ("utils/meter.py", 4): (3, 4), ("train.py", 20): (20, 20),
             ("train.py", 30): (30, 30)}
    trace = {"rows": [
        {"path": "train.py", "line": 10, "kind": "sync", "count": 8, "seconds": 0.008, "bytes": 0, "pageable": 0},
        {"path": "utils/meter.py", "line": 3, "kind": "sync", "count": 4, "seconds": 0.02, "bytes": 0, "pageable": 0},
        {"path": "train.py", "line": 12, "kind": "copy", "count": 4, "seconds": 0.004, "bytes": 4096, "pageable": 4},
        {"path": "train.py", "line": 8, "kind": "data", "count": 4, "seconds": 0.04, "bytes": 0, "pageable": 0},
    ], "reached": [["train.py", 20], ["train.py", 10]]}
    report = T.build_report(trace, findings, spans, steps=4)
    rows = {(r["path"], r["line"]): r for r in report["rows"]}
    assert rows[("train.py", 10)]["mark"] == T.CONFIRMED and rows[("train.py", 10)]["codes"] == ["GPU101"]
    assert rows[("train.py", 10)]["syncs_per_step"] == 2 and rows[("train.py", 10)]["ms_per_step"] == pytest.approx(2.0)
    assert rows[("utils/meter.py", 3)]["mark"] == T.CONFIRMED  # the statement of line 4 starts on line 3
    assert rows[("train.py", 12)]["mark"] == T.RUNTIME_ONLY and rows[("train.py", 12)]["copy_bytes_per_step"] == 1024
    assert rows[("train.py", 8)]["mark"] == T.RUNTIME_ONLY
    # costliest first: the data wait (10 ms/step), the meter's sync (5), the loop's sync (2), the copy (1)
    assert [(r["path"], r["line"]) for r in report["rows"]] == [
        ("train.py", 8), ("utils/meter.py", 3), ("train.py", 10), ("train.py", 12)]
    marks = {(f["path"], f["line"]): f["mark"] for f in report["findings"]}
    assert marks == {("train.py", 20): T.NO_EVENT, ("train.py", 30): T.NOT_REACHED}
    text = T.render_text(dict(report, script="train.py"), "train.py", 2, "cpu line")
    assert "train.py:10" in text and "confirmed GPU101" in text and "runtime only" in text
    assert "1.0 KiB from pageable memory" in text
    assert "(not reached):\n  train.py:30:5: GPU102" in text
    # with the files the script imported known, a finding in one it never loaded is `not imported`
    other = [_finding("other_script.py", 5, "GPU101"), _finding("other_script.py", 9, "GPU203")]
    report = T.build_report(dict(trace, imported=["train.py", "utils/meter.py"]), findings + other, spans, steps=4)
    marks = {(f["path"], f["line"]): f["mark"] for f in report["findings"]}
    assert marks == {("train.py", 20): T.NO_EVENT, ("train.py", 30): T.NOT_REACHED,
                     ("other_script.py", 5): T.NOT_IMPORTED, ("other_script.py", 9): T.NOT_IMPORTED}
    text = T.render_text(dict(report, script="train.py"), "train.py", 2, "cpu line")
    assert "never imported (2): other_script.py (2)" in text and "other_script.py:5" not in text


def test_a_cost_where_a_finding_s_value_is_used_confirms_it():
    # GPU204 flags the CPU-built mask; the copy that syncs is on the next line
    text = textwrap.dedent("""\
        def forward(self, x):
            T = x.size(1)
            mask = torch.ones(T, T).tril()
            other = 1
            att = x.masked_fill(~mask.to(x.device), 0.0)
            mask = None
            y = mask.to(x.device)
            for i in range(2):
                z = mask
            return att
        """)
    assert T.uses_of_values(text, [3]) == {3: [(5, 5)]}  # not after its next assignment
    findings = [_finding("model.py", 3, "GPU204")]
    trace = {"rows": [{"path": "model.py", "line": 5, "kind": "sync", "count": 12, "seconds": 0.012, "bytes": 0,
                       "pageable": 0}], "reached": [["model.py", 3]], "imported": ["model.py"]}
    report = T.build_report(trace, findings, {("model.py", 3): (3, 3)}, 2, {("model.py", 3): [(5, 5)]})
    row = report["rows"][0]
    assert (row["mark"], row["codes"], row["via"]) == (T.CONFIRMED, ["GPU204"], [3]) and report["findings"] == []
    assert "confirmed GPU204 (its value, made on line 3)" in T.render_text(dict(report), "m.py", 2, "cpu")
    # without the uses, the row is the runtime's alone and the finding ran with no event
    report = T.build_report(trace, findings, {("model.py", 3): (3, 3)}, 2)
    assert report["rows"][0]["mark"] == T.RUNTIME_ONLY and report["findings"][0]["mark"] == T.NO_EVENT


# ------------------------------------------------------------ the tracer
def _user_module(root: Path, name: str, body: str):
    """Code compiled under `root`, as the user's file `name` would be."""
    path = root / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    env: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), env)
    return env


def _syncing_op():
    """What sync debug mode says of an op that synced (torch emits it as the op returns)."""
    warnings.warn("called a synchronizing CUDA operation", UserWarning)


def test_tracer_records_syncs_copies_and_data_waits_by_line(tmp_path):
    torch = _torch()
    boot = _boot()
    code = _user_module(tmp_path, "steps.py", """\
        import warnings
        import torch

        def host_read(call, op):
            return call(op, (), {})  # a torch call that syncs, as the tracer's mode runs it

        def step(x, loader_it):
            batch = next(loader_it)
            moved = x.to("meta")
            moved = torch.tensor([1.0, 2.0], device="meta")
            return batch, moved

        def blocking_copy(call, op, x):
            return call(op, (x,), {})  # a copy of pageable memory that syncs, as the tracer's mode runs it

        def wait(stream_sync, event_sync):
            stream_sync(None)
            event_sync(None)
        """)
    tracer = boot.Tracer(torch, {"root": str(tmp_path), "watch": {"steps.py": [8, 9, 12]}}, cuda=False)

    def to(x):  # what a blocking copy of pageable host memory does: it syncs, and puts the data on the device
        _syncing_op()
        return torch.empty_like(x, device="meta")

    counter = boot.SyncCounter()
    loader = torch.utils.data.DataLoader(torch.arange(8.0), batch_size=2)
    with warnings.catch_warnings():
        tracer.start(counter)
        counter.on_sync = tracer.on_sync  # on the CPU the tracer leaves sync counting off: drive it by hand
        counter.start()
        try:
            it = iter(loader)
            for _ in range(2):
                code["step"](torch.zeros(4, 4), it)
                code["host_read"](tracer.call, _syncing_op)
                code["blocking_copy"](tracer.call, to, torch.zeros(4, 4))
                # Stream.synchronize warns under sync debug mode, Event.synchronize does not: one sync each
                code["wait"](tracer.explicit_sync(lambda obj: _syncing_op()), tracer.explicit_sync(lambda obj: None))
        finally:
            counter.stop()
            tracer.stop()
    out = tracer.results(2)
    rows = {(r["path"], r["line"], r["kind"]): r for r in out["rows"]}
    assert rows[("steps.py", 5, "sync")]["count"] == 2 and rows[("steps.py", 5, "sync")]["seconds"] > 0
    copy = rows[("steps.py", 9, "copy")]
    assert (copy["count"], copy["bytes"], copy["pageable"]) == (2, 2 * 64, 2)
    made = rows[("steps.py", 10, "copy")]  # Python data put on a device: 2 floats a call
    assert (made["count"], made["bytes"]) == (2, 2 * 8)
    assert rows[("steps.py", 8, "data")]["count"] == 2
    # a copy that synced is both, and its time is the copy's alone (counted once per step)
    both_copy, both_sync = rows[("steps.py", 14, "copy")], rows[("steps.py", 14, "sync")]
    assert (both_copy["count"], both_copy["bytes"], both_sync["count"]) == (2, 2 * 64, 2)
    assert both_copy["seconds"] > 0 and both_sync["seconds"] == 0
    assert rows[("steps.py", 17, "sync")]["count"] == 2 and rows[("steps.py", 18, "sync")]["count"] == 2
    assert ["steps.py", 8] in out["reached"] and ["steps.py", 9] in out["reached"]
    assert ["steps.py", 12] not in out["reached"]  # not a line that runs
    # everything is undone: no mode left on, the loader's __next__ restored, no trace function
    from torch.utils.data import dataloader

    assert dataloader._BaseDataLoaderIter.__next__.__name__ == "__next__"
    assert torch.overrides._get_current_function_mode() is None
    import sys

    assert sys.gettrace() is None


# ------------------------------------------------------------ end to end
FOLDER = ROOT / "fixtures" / "verify" / "trace"  # a loop in train.py, a meter and a model beside it


def test_verify_trace_end_to_end_on_the_cpu(tmp_path):
    _torch()
    from click.testing import CliRunner

    from gpulint.harness.verify import verify

    folder = tmp_path / "proj"
    shutil.copytree(FOLDER, folder)
    # another script beside it, which train.py never imports
    (folder / "export.py").write_text("import torch\n\nfor i in range(10):\n    torch.cuda.empty_cache()\n")
    out, plot = tmp_path / "trace.json", tmp_path / "trace.png"
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        runner = CliRunner()
    env = {"OMP_NUM_THREADS": "1", "GPULINT_NO_CACHE": "1", "NO_COLOR": "1", "GPULINT_PREVIEW": "1"}
    res = runner.invoke(verify, ["--trace", "--device", "cpu", "--steps", "6", "--warmup", "2", "--json", str(out),
                                 "--plot", str(plot), str(folder / "train.py"), "--", "--small"], env=env)
    assert res.exit_code == 0, res.output + res.stderr
    data = json.loads(out.read_text())
    import jsonschema

    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["schema"] == "gpulint-trace/1" and data["steps"] == 6 and data["status"] == "ok"
    # the loop's DataLoader wait, on the loop's own line
    waits = [r for r in data["rows"] if r["batches"]]
    assert [(r["path"], r["line"], r["batches"]) for r in waits] == [("train.py", 28, 6)]
    # the per-step `.item()` and the model's CPU-built tensor, in the other files, ran (no
    # sync or device copy to see on the CPU); the loop after training never ran in the traced steps
    marks = {(f["path"], f["line"], f["code"]): f["mark"] for f in data["findings"]}
    assert marks == {("meters.py", 12, "GPU101"): "ran, no event", ("model.py", 13, "GPU203"): "ran, no event",
                     ("train.py", 37, "GPU103"): "not reached", ("export.py", 4, "GPU103"): "not imported"}
    assert sorted(data["run"]["trace"]["imported"]) == ["meters.py", "model.py", "train.py"]
    assert "train.py:28" in res.output and "runtime only" in res.output
    assert "Run on the CPU" in res.output
    assert plot.exists() and plot.stat().st_size > 0
    assert "gpulint verify: tracing 2 warm-up + 6 steps ..." in res.stderr
