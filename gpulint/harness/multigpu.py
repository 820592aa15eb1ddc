"""GPU001 on several GPUs: `nn.DataParallel` in one process against
`DistributedDataParallel` with one process per GPU under torchrun.

    gpulint bench --gpus 2,4,8            # on a machine with 8 GPUs
    gpulint bench --gpus 2 --device cpu   # the same plumbing on the CPU (gloo)

Every run trains GPU001's own workload model (the ResNet-style classifier of
its `Bench.setup`, executed as is) on the same global batch of synthetic
images already on the device:

- `single`: the plain model on one GPU, the whole global batch (the baseline
  for scaling efficiency);
- `dp`: `nn.DataParallel` over N GPUs in one process, the whole global batch
  (it scatters it);
- `ddp`: `torchrun --standalone --nproc_per_node=N`, each process one GPU and
  a 1/N slice of the global batch; NCCL on CUDA, gloo on the CPU.

Each run does warm-up steps, then `reps` timed windows of `steps` whole steps
(synchronised; for DDP the slowest rank's time), and reports samples/s (the
median window), and the peak memory allocated on GPU 0. Scaling efficiency is
N-GPU throughput / (N x one-GPU throughput). The workers are subprocesses: the
parent (gpulint) never imports torch. NVLink multicast stays off in every child
(NCCL_NVLS_ENABLE=0 and friends are set unless already set).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence

from gpulint.harness.stats import fmt_mib

# never let NCCL or PyTorch use NVLink multicast on a shared host (see the device notes)
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
DEFAULT_GLOBAL_BATCH = 512
MODES = ("single", "dp", "ddp")


class StudyError(Exception):
    """A run failed or the request cannot be met: one line."""


def parse_counts(text: str) -> List[int]:
    try:
        counts = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise StudyError(f"--gpus takes GPU counts separated by commas (e.g. 2,4,8), not {text!r}")
    if not counts or counts[0] < 1:
        raise StudyError(f"--gpus takes positive GPU counts, not {text!r}")
    return counts


def child_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of every worker: ours, multicast kept off, gpulint importable."""
    env = dict(os.environ)
    for k, v in SAFE_ENV.items():
        env.setdefault(k, v)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default too: say it, rather than let it warn
    env.update(extra or {})
    return env


def worker_command(mode: str, n: int, out: str, device: str, global_batch: int, steps: int, warmup: int,
                   reps: int, small: bool) -> List[str]:
    args = ["-m", "gpulint.harness.multigpu", "--worker", "--mode", mode, "--gpus", str(n), "--out", out,
            "--device", device, "--global-batch", str(global_batch), "--steps", str(steps), "--warmup", str(warmup),
            "--reps", str(reps)] + (["--small"] if small else [])
    if mode == "ddp":
        # torchrun, as `python -m` so that it is this Python's
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"] + args
    return [sys.executable] + args


def run_one(mode: str, n: int, device: str, global_batch: int, steps: int, warmup: int, reps: int, small: bool,
            timeout: float) -> dict:
    """One worker run's results. A run killed by a signal (a worker of a
    loaded machine aborted by its communication library) is run once more,
    and the result says so (`retried`); one that fails twice, or exits with
    an error, is a StudyError that quotes the worker's error lines."""
    for attempt in (0, 1):
        with tempfile.TemporaryDirectory(prefix="gpulint-multigpu-") as tmp:
            out = os.path.join(tmp, "result.json")
            cmd = worker_command(mode, n, out, device, global_batch, steps, warmup, reps, small)
            try:
                # in an empty folder: `-m` puts the working directory first on sys.path
                proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=timeout, cwd=tmp)
            except subprocess.TimeoutExpired:
                raise StudyError(f"{mode} on {n}: stopped after {timeout:g} s")
            if proc.returncode == 0 and os.path.exists(out):
                with open(out, encoding="utf-8") as fh:
                    result = json.load(fh)
                if attempt:
                    result["retried"] = attempt
                return result
            text = proc.stderr or proc.stdout
            if attempt == 0 and _killed_by_signal(proc.returncode, text):
                continue
            raise StudyError(f"{mode} on {n}: exit {proc.returncode}: {_error_lines(text)}")
    raise AssertionError("unreachable")  # pragma: no cover


def _killed_by_signal(returncode: int, text: str) -> bool:
    """The worker (or, under torchrun, one of its processes) died of a signal."""
    return returncode < 0 or "Signal " in text and "received by PID" in text


def _error_lines(text: str) -> str:
    """The lines of a worker's output that say what went wrong (an
    exception, `terminate called`, an error) and its last three, joined."""
    lines = text.strip().splitlines()
    said = [ln.strip() for ln in lines if any(w in ln for w in ("Error", "error:", "terminate", "Exception"))]
    return " | ".join(dict.fromkeys(said[-3:] + [ln.strip() for ln in lines[-3:]]))[-600:]


def study(counts: Sequence[int], device: str, visible: int, global_batch: int = DEFAULT_GLOBAL_BATCH,
          steps: int = 20, warmup: int = 5, reps: int = 5, small: bool = False, timeout: float = 900,
          progress: Callable[[str], None] = lambda msg: None) -> dict:
    """Run the baseline and DP/DDP for each count; `visible` is how many GPUs
    there are (counts above it are recorded as not run, with the reason)."""
    for n in counts:
        if global_batch % n:
            raise StudyError(f"the global batch {global_batch} does not split over {n} GPUs")
    progress("single: 1 GPU" if device == "cuda" else "single: 1 process")
    single = run_one("single", 1, device, global_batch, steps, warmup, reps, small, timeout)
    rows = []
    for n in counts:
        if device == "cuda" and n > visible:
            rows.append({"gpus": n, "skipped": f"needs {n} GPUs, {visible} visible"})
            continue
        progress(f"dp: {n}")
        dp = run_one("dp", n, device, global_batch, steps, warmup, reps, small, timeout)
        progress(f"ddp: {n}")
        ddp = run_one("ddp", n, device, global_batch, steps, warmup, reps, small, timeout)
        base = single["samples_per_s"]
        rows.append({
            "gpus": n,
            "dp": dp,
            "ddp": ddp,
            "ddp_over_dp": ddp["samples_per_s"] / dp["samples_per_s"],
            "scaling_efficiency_dp": dp["samples_per_s"] / (n * base),
            "scaling_efficiency_ddp": ddp["samples_per_s"] / (n * base),
        })
    return {"device": device, "global_batch": global_batch, "steps": steps, "warmup": warmup, "reps": reps,
            "small": small, "visible_gpus": visible, "single": single, "rows": rows}


def render_table(report: dict) -> str:
    """The study as a markdown table (also what `gpulint bench --gpus` prints)."""
    s = report["single"]
    lines = [
        f"Global batch {report['global_batch']}, {report['reps']} windows of {report['steps']} steps after "
        f"{report['warmup']} warm-up steps; "
        + (f"one GPU alone: {s['samples_per_s']:,.0f} samples/s, peak {fmt_mib(s.get('peak_bytes_gpu0'))}."
           if report["device"] == "cuda" else
           f"one process alone: {s['samples_per_s']:,.0f} samples/s (CPU: processes stand in for GPUs)."),
        "",
        "| GPUs | DataParallel samples/s | DDP samples/s | DDP / DP | scaling efficiency DP | scaling efficiency DDP "
        "| peak memory GPU 0, DP -> DDP |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        if "skipped" in r:
            lines.append(f"| {r['gpus']} | not run: {r['skipped']} | | | | | |")
            continue
        dp, ddp = r["dp"], r["ddp"]
        lines.append(
            f"| {r['gpus']} | {dp['samples_per_s']:,.0f} | {ddp['samples_per_s']:,.0f} | **{r['ddp_over_dp']:.2f}x** "
            f"| {r['scaling_efficiency_dp']:.0%} | {r['scaling_efficiency_ddp']:.0%} "
            f"| {fmt_mib(dp.get('peak_bytes_gpu0'))} -> {fmt_mib(ddp.get('peak_bytes_gpu0'))} |"
        )
    retried = [f"{r['gpus']} GPUs, {m}" for r in report["rows"] for m in ("dp", "ddp") if r.get(m, {}).get("retried")]
    if s.get("retried"):
        retried.insert(0, "one GPU alone")
    if retried:
        lines += ["", "Run again after a worker was killed by a signal: " + "; ".join(retried) + "."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the worker (imports torch)
def _worker(a: argparse.Namespace) -> None:
    import time

    import torch
    import torch.nn.functional as F
    from torch import nn

    from gpulint.rule import Bench
    from gpulint.rules.data_parallel import DataParallel

    cuda = a.device == "cuda"
    rank, world, local = 0, 1, 0
    if a.mode == "ddp":
        import torch.distributed as dist

        rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
        if cuda:
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(0)  # the same initial weights in every process (DDP also broadcasts rank 0's)
    ns: dict = {"DEVICE": a.device, "SMALL": a.small}
    exec(compile(Bench._code(DataParallel.bench.setup), "<GPU001 workload setup>", "exec"), ns)
    net, size, classes, n_batches = ns["net"], ns["size"], ns["classes"], ns["n_batches"]
    batch = a.global_batch // world
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    g = torch.Generator(device="cpu").manual_seed(1 + rank)
    inputs = torch.randn(n_batches, batch, 3, size, size, generator=g).to(dev)
    targets = torch.randint(0, classes, (n_batches, batch), generator=g).to(dev)
    if a.mode == "dp":
        model = nn.DataParallel(net, device_ids=list(range(a.gpus)) if cuda else None)
    elif a.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(net, device_ids=[local] if cuda else None)
    else:
        model = net
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def step(i):
        loss = F.cross_entropy(model(inputs[i % n_batches]), targets[i % n_batches])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(0 if a.mode != "ddp" else local)
    windows = []
    loss = None
    for _ in range(a.reps):
        if a.mode == "ddp":
            dist.barrier()
        sync()
        t0 = time.perf_counter()
        for i in range(a.steps):
            loss = step(i)
        sync()
        elapsed = time.perf_counter() - t0
        if a.mode == "ddp":  # the step is as slow as the slowest rank
            t = torch.tensor([elapsed], device=dev, dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            elapsed = float(t.item())
        windows.append(elapsed)
    result = {
        "mode": a.mode,
        "gpus": a.gpus if a.mode != "single" else 1,
        "processes": world,
        "global_batch": a.global_batch,
        "per_process_batch": batch,
        "window_seconds": windows,
        "samples_per_s": a.global_batch * a.steps / statistics.median(windows),
        "peak_bytes_gpu0": torch.cuda.max_memory_allocated(0) if cuda else None,
        "last_loss": float(loss.detach()) if loss is not None else None,
        "torch": torch.__version__,
        "backend": ("nccl" if cuda else "gloo") if a.mode == "ddp" else None,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }
    if a.mode == "ddp":
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh)


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gpulint.harness.multigpu")
    p.add_argument("--worker", action="store_true", required=True, help="run one measurement (internal)")
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--global-batch", type=int, default=DEFAULT_GLOBAL_BATCH)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--small", action="store_true")
    _worker(p.parse_args(argv))


if __name__ == "__main__":
    main()
