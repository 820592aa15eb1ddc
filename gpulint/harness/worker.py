"""One side (bad or good) of one bench workload, in its own process.

Run as `python -m gpulint.harness.worker` (JSON lines on stdin and stdout),
or forked from a server that imported torch once (`serve`, messages on a
multiprocessing connection). It reads the
program and settings, runs the program's setup, the correctness steps and the
warm-up, answers `{"ok": true}`, then serves commands, one JSON line each:
`{"cmd": "time", "steps": N}` times N whole steps with a device synchronize on
both sides (so host stalls count), `{"cmd": "compare", ...}` checks its
result against the other side's, `{"cmd": "exit"}` ends it.

The program's own prints go to stderr: stdout carries the protocol alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback


def _protocol_stream():
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _to_cpu(value):
    import torch

    if isinstance(value, torch.Tensor):
        # a copy even on the CPU: a view of model state would change under later steps
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_to_cpu(v) for v in value]
    if isinstance(value, (int, float, bool)):
        return torch.tensor(float(value), dtype=torch.float64)
    if value is None:
        return None
    raise TypeError(f"run() returned a {type(value).__name__}; return tensors, numbers, or lists/dicts of them")


def _flatten(value, prefix="result"):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}[{k!r}]")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def compare(mine, other, check: str, rtol: float, atol: float) -> dict:
    """Does `mine` (good) agree with `other` (bad)? {"ok": bool, "detail": str, "max_abs": float}."""
    import torch

    if check == "none":
        return {"ok": True, "detail": "not compared", "max_abs": None}
    a, b = list(_flatten(other)), list(_flatten(mine))
    if [n for n, _ in a] != [n for n, _ in b]:
        return {"ok": False, "detail": "the two sides return differently shaped results", "max_abs": None}
    worst = 0.0
    for (name, x), (_, y) in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return {"ok": False, "detail": f"{name}: None on one side only", "max_abs": None}
            continue
        if x.shape != y.shape:
            return {"ok": False, "detail": f"{name}: shape {tuple(x.shape)} != {tuple(y.shape)}", "max_abs": None}
        if x.dtype != y.dtype and check == "stats":
            return {"ok": False, "detail": f"{name}: dtype {x.dtype} != {y.dtype}", "max_abs": None}
        xf, yf = x.to(torch.float64), y.to(torch.float64)
        if xf.numel() == 0:
            continue
        if not (torch.isfinite(xf).all() and torch.isfinite(yf).all()):
            return {"ok": False, "detail": f"{name}: non-finite values", "max_abs": None}
        if check == "allclose":
            diff = (xf - yf).abs().max().item()
            worst = max(worst, diff)
            if not torch.allclose(yf, xf, rtol=rtol, atol=atol):
                return {"ok": False, "detail": f"{name}: max abs difference {diff:.3g} (rtol={rtol}, atol={atol})",
                        "max_abs": diff}
        elif check == "stats":
            scale = max(xf.std().item() if xf.numel() > 1 else abs(xf.item()), atol)
            dmean = abs(xf.mean().item() - yf.mean().item())
            dstd = abs((xf.std().item() if xf.numel() > 1 else 0.0) - (yf.std().item() if yf.numel() > 1 else 0.0))
            worst = max(worst, dmean, dstd)
            if dmean > rtol * scale or dstd > rtol * scale:
                return {"ok": False, "detail": f"{name}: mean/std differ by {dmean:.3g}/{dstd:.3g} "
                        f"(allowed {rtol * scale:.3g})", "max_abs": max(dmean, dstd)}
        else:
            raise ValueError(f"unknown check {check!r}")
    kind = "allclose" if check == "allclose" else "same shape, dtype, mean and std"
    return {"ok": True, "detail": f"{kind} (rtol={rtol}, atol={atol})", "max_abs": worst}


def main() -> None:
    """The worker on stdin and stdout (JSON lines), as a process of its own."""
    proto = _protocol_stream()

    def reply(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    def requests():
        for line in sys.stdin:
            yield json.loads(line)

    _serve(json.loads(sys.stdin.readline()), requests(), reply)
    proto.flush()
    # DataLoader worker processes and CUDA teardown can be slow or noisy: leave now.
    os._exit(0)


def serve(conn, log_path: str) -> None:
    """The worker on a multiprocessing connection, in a process forked from
    a server that imported torch once (`bench._Worker`). The program's own
    prints, and anything else written to fd 1 or 2, go to `log_path`."""
    import multiprocessing

    # the workload's own processes (DataLoader workers) start as in a process of its
    # own, by the platform's default method, not through the server this one came from
    multiprocessing.set_start_method(None, force=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)

    def requests():
        while True:
            try:
                yield conn.recv()
            except EOFError:
                return

    try:
        _serve(conn.recv(), requests(), conn.send)
    except (EOFError, OSError):
        pass
    os._exit(0)


def _serve(spec: dict, requests, reply) -> None:
    """Set the program up from `spec`, answer `{"ok": true}`, then serve the
    commands of `requests` until `exit`. Any error goes back as one message."""
    try:
        import random

        import torch

        device = spec["device"]
        cuda = device.startswith("cuda")
        random.seed(0)
        torch.manual_seed(0)
        try:
            import numpy

            numpy.random.seed(0)
        except ImportError:
            pass

        def sync():
            if cuda:
                torch.cuda.synchronize()

        env = {"__name__": "__gpulint_bench__", "DEVICE": device, "SMALL": bool(spec["small"])}
        exec(compile(spec["program"], spec.get("filename", "<bench>"), "exec"), env)
        run = env.get("run")
        if not callable(run):
            raise RuntimeError("the bench program defines no run(steps)")
        result = _to_cpu(run(spec["check_steps"]))
        torch.save(result, spec["result_path"])
        if spec["warmup"]:
            run(spec["warmup"])
        sync()
        reply({"ok": True})
        for cmd in requests:
            if cmd["cmd"] == "time":
                sync()
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                t0 = time.perf_counter()
                run(cmd["steps"])
                sync()
                seconds = time.perf_counter() - t0
                out = {"seconds": seconds, "peak_bytes": None, "retained_bytes": None}
                if cuda:
                    out["peak_bytes"] = torch.cuda.max_memory_allocated()
                    out["retained_bytes"] = torch.cuda.memory_allocated() - base
                reply(out)
            elif cmd["cmd"] == "compare":
                other = torch.load(cmd["other"], weights_only=False)
                reply(compare(result, other, cmd["check"], cmd["rtol"], cmd["atol"]))
            elif cmd["cmd"] == "exit":
                break
    except BaseException as e:  # noqa: BLE001  (everything goes back to the parent as one message)
        tb = traceback.format_exc(limit=6)
        reply({"error": f"{type(e).__name__}: {e}", "traceback": tb})


if __name__ == "__main__":
    main()
