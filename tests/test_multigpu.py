"""GPU001's multi-GPU study (`gpulint bench --gpus`): DataParallel against DDP
under torchrun. CI has no GPU: the same plumbing runs on the CPU with the gloo
backend and 2 processes on a tiny model; the CUDA-only parts are tested on
their inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulint.harness import multigpu

pytest.importorskip("torch", reason="the harness tests need torch (the test extra installs it)")


def test_cpu_study_end_to_end_through_the_cli(tmp_path):
    out = tmp_path / "multigpu.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpulint", "bench", "--gpus", "2", "--device", "cpu", "--small", "--reps", "2",
         "--steps", "2", "--global-batch", "8", "--json", str(out)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and report["global_batch"] == 8
    single = report["single"]
    assert single["mode"] == "single" and single["processes"] == 1 and single["per_process_batch"] == 8
    [row] = report["rows"]
    dp, ddp = row["dp"], row["ddp"]
    assert dp["mode"] == "dp" and dp["processes"] == 1 and dp["per_process_batch"] == 8
    # torchrun started two processes, each with half the global batch, talking over gloo
    assert ddp["mode"] == "ddp" and ddp["processes"] == 2 and ddp["per_process_batch"] == 4
    assert ddp["backend"] == "gloo"
    for r in (single, dp, ddp):
        assert len(r["window_seconds"]) == 2 and all(t > 0 for t in r["window_seconds"])
        assert r["samples_per_s"] > 0 and r["last_loss"] > 0
    assert row["ddp_over_dp"] == pytest.approx(ddp["samples_per_s"] / dp["samples_per_s"])
    assert row["scaling_efficiency_ddp"] == pytest.approx(ddp["samples_per_s"] / (2 * single["samples_per_s"]))
    assert "| 2 |" in proc.stdout and "DDP / DP" in proc.stdout


def test_every_child_keeps_nvlink_multicast_off(monkeypatch):
    for k in multigpu.SAFE_ENV:
        monkeypatch.delenv(k, raising=False)
    env = multigpu.child_env()
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    # a value the user set is kept, never overridden
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    env = multigpu.child_env()
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NCCL_DEBUG"] == "INFO"


def test_ddp_is_launched_by_torchrun_one_process_per_gpu():
    cmd = multigpu.worker_command("ddp", 4, "/tmp/o.json", "cuda", 512, 20, 5, 3, False)
    assert cmd[:5] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4"]
    assert cmd[5:7] == ["-m", "gpulint.harness.multigpu"] and "--worker" in cmd
    dp = multigpu.worker_command("dp", 4, "/tmp/o.json", "cuda", 512, 20, 5, 3, False)
    assert dp[:3] == [sys.executable, "-m", "gpulint.harness.multigpu"]


def test_counts_and_batch_are_checked():
    assert multigpu.parse_counts("8,2,4,2") == [2, 4, 8]
    for bad in ("two", "", "0", "2,-1"):
        with pytest.raises(multigpu.StudyError):
            multigpu.parse_counts(bad)
    with pytest.raises(multigpu.StudyError, match="does not split over 3"):
        multigpu.study([3], "cuda", 8, global_batch=512)


def test_table_says_what_was_not_run_and_the_ratios():
    single = {"samples_per_s": 1000.0, "peak_bytes_gpu0": 2**30}
    report = {
        "device": "cuda", "global_batch": 512, "steps": 20, "warmup": 5, "reps": 5, "single": single,
        "rows": [
            {"gpus": 2, "dp": {"samples_per_s": 1200.0, "peak_bytes_gpu0": 3 * 2**30},
             "ddp": {"samples_per_s": 1800.0, "peak_bytes_gpu0": 2**29},
             "ddp_over_dp": 1.5, "scaling_efficiency_dp": 0.6, "scaling_efficiency_ddp": 0.9},
            {"gpus": 8, "skipped": "needs 8 GPUs, 2 visible"},
        ],
    }
    table = multigpu.render_table(report)
    assert "| 2 | 1,200 | 1,800 | **1.50x** | 60% | 90% | 3,072 MiB -> 512 MiB |" in table
    assert "| 8 | not run: needs 8 GPUs, 2 visible |" in table
    assert "one GPU alone: 1,000 samples/s" in table


def test_cli_refuses_codes_with_gpus(tmp_path):
    from click.testing import CliRunner

    from gpulint.frontends.cli import cli

    res = CliRunner().invoke(cli, ["bench", "GPU101", "--gpus", "2"])
    assert res.exit_code == 2 and "takes no CODES" in res.output
    res = CliRunner().invoke(cli, ["bench", "--global-batch", "64"])
    assert res.exit_code == 2 and "--global-batch is for the --gpus study" in res.output


def test_gpu001_page_quotes_the_measured_study():
    from gpulint.frontends.docs import multigpu_summary, render_multigpu

    report = {
        "where": "NVIDIA H200 · torch 2.11.0 · CUDA 13.0 · 2026-11-29", "visible_gpus": 2, "device": "cuda",
        "global_batch": 512, "steps": 20, "warmup": 5, "reps": 5,
        "single": {"samples_per_s": 1000.0, "peak_bytes_gpu0": 2**30},
        "rows": [
            {"gpus": 2, "dp": {"samples_per_s": 1200.0}, "ddp": {"samples_per_s": 1800.0},
             "ddp_over_dp": 1.5, "scaling_efficiency_dp": 0.6, "scaling_efficiency_ddp": 0.9},
            {"gpus": 4, "skipped": "needs 4 GPUs, 2 visible"},
        ],
    }
    text = multigpu_summary(report)
    assert "2 GPUs: DDP 1.50x DataParallel's throughput, scaling efficiency 90% (DDP) against 60%" in text
    assert "NVIDIA H200" in text and "Not run for 4 GPUs" in text
    assert render_multigpu(report).startswith("Measured on NVIDIA H200")
    # nothing measured on several GPUs: nothing claimed
    assert multigpu_summary(dict(report, rows=[{"gpus": 2, "skipped": "needs 2 GPUs, 1 visible"}])) == ""


def test_a_worker_killed_by_a_signal_is_run_once_more_and_says_so(monkeypatch):
    """A two-process gloo study on a loaded machine was once aborted
    (torchrun: `Signal 6 (SIGABRT) received by PID ...`): such a run is made
    once more, and the result records it; a second death, or a plain error,
    fails with the worker's own error lines."""
    calls = []
    aborted = "RuntimeError: [gloo] Connection closed by peer\\n  traceback : Signal 6 (SIGABRT) received by PID 1\\n"

    def fake_run(cmd, **kw):
        calls.append(cmd)
        out = cmd[cmd.index("--out") + 1]
        if len(calls) == 1:
            return subprocess.CompletedProcess(cmd, 1, "", aborted)
        with open(out, "w") as fh:
            json.dump({"mode": "ddp"}, fh)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(multigpu.subprocess, "run", fake_run)
    assert multigpu.run_one("ddp", 2, "cpu", 8, 2, 1, 2, True, 60) == {"mode": "ddp", "retried": 1}
    assert len(calls) == 2
    run = {"samples_per_s": 10.0}
    report = {"device": "cpu", "global_batch": 8, "steps": 2, "warmup": 1, "reps": 2, "single": run,
              "rows": [{"gpus": 2, "dp": run, "ddp": dict(run, retried=1), "ddp_over_dp": 1.0,
                        "scaling_efficiency_dp": 0.5, "scaling_efficiency_ddp": 0.5}]}
    assert "Run again after a worker was killed by a signal: 2 GPUs, ddp." in multigpu.render_table(report)

    calls.clear()
    monkeypatch.setattr(multigpu.subprocess, "run",
                        lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(cmd, 1, "", aborted))
    with pytest.raises(multigpu.StudyError, match="Connection closed by peer"):
        multigpu.run_one("ddp", 2, "cpu", 8, 2, 1, 2, True, 60)
    assert len(calls) == 2

    calls.clear()
    failed = "Traceback (most recent call last):\\nValueError: bad batch\\n"
    monkeypatch.setattr(multigpu.subprocess, "run",
                        lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(cmd, 1, "", failed))
    with pytest.raises(multigpu.StudyError, match="ValueError: bad batch"):
        multigpu.run_one("ddp", 2, "cpu", 8, 2, 1, 2, True, 60)
    assert len(calls) == 1  # an error of its own is not retried
