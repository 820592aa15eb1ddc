"""`gpulint bench`: time each rule's bad and good workload on the device.

Each side runs in a fresh subprocess (`worker.py`); both stay alive and are
asked in turn (A B A B ...) to time `steps` whole steps, each repetition
wrapped in a device synchronize, so host stalls count. Each side is
summarised by its median time per step and its min-max spread. The ratio
comes with a bootstrap interval over the repetitions (`stats.ratio_interval`,
as `gpulint verify` uses): a ratio whose interval does not clear 1 by more
than `stats.TOLERANCE` is reported as "no measurable gain", never as a
speedup.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from gpulint.harness import stats
from gpulint.rule import MEMORY, Bench


class WorkloadError(Exception):
    pass


class _Worker:
    """One side of a workload in a process of its own. With the interpreter
    running gpulint, the process is forked from a server that imported torch
    once (`_forkserver`): a bench of 23 rules starts 46 sides, and importing
    torch in each took most of a `--small` run. Each side is still a fresh
    process, forked from one that has set nothing. With another interpreter
    (`--python`), it is `python -m gpulint.harness.worker`."""

    def __init__(self, program: str, filename: str, device: str, small: bool, bench: Bench, result_path: str,
                 python: str, timeout: float):
        self.timeout = timeout
        self.proc = None
        self.conn = None
        self.log_path = result_path + ".log"
        spec = {
            "program": program, "filename": filename, "device": device, "small": small,
            "check_steps": 2, "warmup": 1 if small else bench.warmup, "result_path": result_path,
        }
        ctx = _forkserver() if os.path.realpath(python) == os.path.realpath(sys.executable) else None
        if ctx is not None:
            from gpulint.harness import worker

            self.conn, child = ctx.Pipe()
            # (not a daemon: a workload may start DataLoader workers of its own; `close` ends it)
            self.proc = ctx.Process(target=worker.serve, args=(child, self.log_path))
            self.proc.start()
            child.close()
        else:
            self.proc = subprocess.Popen(
                [python, "-m", "gpulint.harness.worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=_child_env(),
            )
        self._send(spec)

    def _send(self, obj) -> None:
        if self.conn is not None:
            self.conn.send(obj)
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _died(self) -> WorkloadError:
        if self.conn is not None:
            self.proc.join(5)
            try:
                with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                    err = fh.read()
            except OSError:
                err = ""
            err = err or f"exit status {self.proc.exitcode}"
        else:
            err = self.proc.stderr.read() if self.proc.stderr else ""
        return WorkloadError(f"the worker died: {err.strip()[-800:] or 'no message'}")

    def receive(self) -> dict:
        if self.conn is not None:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                raise self._died() from None
        else:
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if not line:
                raise self._died()
            msg = json.loads(line)
        if "error" in msg:
            raise WorkloadError(f"{msg['error']}\n{msg.get('traceback', '')}".strip())
        return msg

    def ask(self, obj) -> dict:
        self._send(obj)
        return self.receive()

    def close(self) -> None:
        if self.conn is not None:
            try:
                if self.proc.is_alive():
                    self.conn.send({"cmd": "exit"})
                    self.proc.join(30)
            except (OSError, ValueError):
                pass
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
            self.conn.close()
            return
        try:
            if self.proc.poll() is None:
                self._send({"cmd": "exit"})
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


_SERVER = []  # the forkserver context, once started


def _forkserver():
    """A multiprocessing context whose server process imported torch and the
    worker once, started with the workers' environment (hash seed 0); None
    where there is no forkserver (not POSIX)."""
    if _SERVER:
        return _SERVER[0]
    import multiprocessing
    from multiprocessing import forkserver

    try:
        ctx = multiprocessing.get_context("forkserver")
    except ValueError:
        _SERVER.append(None)
        return None
    # (torch._dynamo: every optimizer's constructor imports it, about 1.5 s each time)
    ctx.set_forkserver_preload(["torch", "torch._dynamo", "gpulint.harness.worker"])
    saved = {k: os.environ.get(k) for k in ("PYTHONHASHSEED", "PYTHONPATH")}
    os.environ.update({k: v for k, v in _child_env().items() if k in saved})
    try:
        forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _SERVER.append(ctx)
    return ctx


def _child_env() -> dict:
    env = dict(os.environ)
    # the worker imports gpulint.harness.worker from this very gpulint
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.setdefault("PYTHONHASHSEED", "0")
    return env


@dataclass
class SideResult:
    seconds_per_step: List[float] = field(default_factory=list)
    peak_bytes: List[int] = field(default_factory=list)
    retained_bytes: List[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        s = stats.Summary.of(self.seconds_per_step)
        return {
            "seconds_per_step": s.as_dict(),
            "samples": self.seconds_per_step,
            "peak_bytes": max(self.peak_bytes) if self.peak_bytes else None,
            "retained_bytes_per_step": (
                stats.statistics.median(self.retained_bytes) if self.retained_bytes else None
            ),
        }


def measure(rule, device: str, small: bool, reps: int, steps: Optional[int] = None,
            python: Optional[str] = None, timeout: float = 600.0,
            progress: Callable[[str], None] = lambda s: None) -> dict:
    """Run one rule's workload, bad and good, and return its record."""
    bench: Bench = rule.bench
    n = steps or (2 if small else bench.steps)
    with tempfile.TemporaryDirectory(prefix="gpulint-bench-") as tmp:
        paths = {side: os.path.join(tmp, f"{side}.pt") for side in ("bad", "good")}
        workers: Dict[str, _Worker] = {}
        try:
            progress("setting up")
            for side, program in (("bad", bench.bad_program), ("good", bench.good_program)):
                workers[side] = _Worker(program, f"<{rule.code} {side}>", device, small, bench, paths[side],
                                        python or sys.executable, timeout)
            for side in ("bad", "good"):
                try:
                    workers[side].receive()
                except WorkloadError as e:
                    raise WorkloadError(f"{side} side: {e}") from None
            check = workers["good"].ask({"cmd": "compare", "other": paths["bad"], "check": bench.check,
                                         "rtol": bench.rtol, "atol": bench.atol})
            results = {"bad": SideResult(), "good": SideResult()}
            for i in range(reps):
                for side in ("bad", "good"):
                    progress(f"repetition {i + 1}/{reps} ({side})")
                    try:
                        out = workers[side].ask({"cmd": "time", "steps": n})
                    except WorkloadError as e:
                        raise WorkloadError(f"{side} side: {e}") from None
                    r = results[side]
                    r.seconds_per_step.append(out["seconds"] / n)
                    if out["peak_bytes"] is not None:
                        r.peak_bytes.append(out["peak_bytes"])
                        r.retained_bytes.append(out["retained_bytes"] / n)
        finally:
            for w in workers.values():
                w.close()
    return record(rule, results["bad"], results["good"], check, n, reps)


def record(rule, bad: SideResult, good: SideResult, check: dict, steps: int, reps: int) -> dict:
    bench: Bench = rule.bench
    interval = stats.ratio_interval([[t] for t in bad.seconds_per_step], [[t] for t in good.seconds_per_step])
    out = {
        "code": rule.code, "name": rule.name, "metric": bench.metric, "steps_per_repetition": steps,
        "repetitions": reps, "note": bench.note, "fix_safety": rule.fix_safety,
        "bad": bad.as_dict(), "good": good.as_dict(),
        "time_ratio": interval.ratio,
        "time_interval": interval.as_dict(),
        "time_verdict": stats.time_verdict(interval) or stats.NO_GAIN,
        "check": {"kind": bench.check, "rtol": bench.rtol, "atol": bench.atol, **check},
    }
    bp, gp = out["bad"]["peak_bytes"], out["good"]["peak_bytes"]
    out["memory_ratio"] = stats.ratio(bp, gp) if bp and gp else None
    out["memory_verdict"] = stats.memory_verdict(bp, gp) if bp is not None and gp is not None else None
    out["verdict"] = verdict_text(out)
    return out


def verdict_text(rec: dict) -> str:
    if not rec["check"].get("ok", True):
        return f"WRONG RESULT: {rec['check'].get('detail')}"
    if rec["metric"] == MEMORY:
        v = rec.get("memory_verdict")
        if v is None:
            return "memory not measured (no CUDA)"
        if v == stats.LESS_MEMORY:
            return f"{rec['memory_ratio']:.2f}x less peak memory"
        if v == stats.MORE_MEMORY:
            return f"{1 / rec['memory_ratio']:.2f}x more peak memory"
        return "no measurable gain (same peak memory)"
    v = rec["time_verdict"]
    if v == stats.FASTER:
        return f"{rec['time_ratio']:.2f}x faster"
    if v == stats.SLOWER:
        return f"{1 / rec['time_ratio']:.2f}x slower"
    return "no measurable gain"


_ms, _mib = stats.fmt_ms, stats.fmt_mib


def _interval_text(interval: Optional[dict]) -> str:
    return "" if not interval else f" [{interval['low']:.2f}-{interval['high']:.2f}]"


def render_table(report: dict) -> str:
    rows = [("rule", "bad ms/step [min-max]", "good ms/step [min-max]", f"ratio [{stats.CONFIDENCE:.0%} interval]",
             "peak memory bad -> good", "verdict")]
    for rec in report["rules"]:
        if "error" in rec:
            rows.append((rec["code"], "-", "-", "-", "-", f"ERROR: {rec['error'].splitlines()[0][:120]}"))
            continue
        b, g = rec["bad"]["seconds_per_step"], rec["good"]["seconds_per_step"]
        rows.append((
            f"{rec['code']} {rec['name']}",
            f"{_ms(b['median'])} [{_ms(b['min'])}-{_ms(b['max'])}]",
            f"{_ms(g['median'])} [{_ms(g['min'])}-{_ms(g['max'])}]",
            f"{rec['time_ratio']:.2f}x" + _interval_text(rec.get("time_interval")),
            f"{_mib(rec['bad']['peak_bytes'])} -> {_mib(rec['good']['peak_bytes'])}",
            rec["verdict"],
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def plot(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [r for r in report["rules"] if "error" not in r]
    if not recs:
        raise WorkloadError("nothing to plot: no workload ran")
    labels, ratios, lo, hi, colours = [], [], [], [], []
    for r in recs:
        memory = r["metric"] == MEMORY and r.get("memory_ratio")
        if memory:
            value = low = high = r["memory_ratio"]
        else:
            b, g = r["bad"]["seconds_per_step"], r["good"]["seconds_per_step"]
            value = r["time_ratio"]
            iv = r.get("time_interval")
            low, high = (iv["low"], iv["high"]) if iv else (b["min"] / g["max"], b["max"] / g["min"])
        labels.append(f"{r['code']} {r['name']}" + (" (peak memory)" if memory else ""))
        ratios.append(value)
        lo.append(max(value - low, 0))
        hi.append(max(high - value, 0))
        v = r["verdict"]
        colours.append("tab:red" if v.startswith("WRONG") or "slower" in v or "more" in v
                       else "tab:green" if ("faster" in v or "less" in v) else "tab:gray")
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(recs) + 1.6))
    y = list(range(len(recs)))[::-1]
    ax.barh(y, ratios, xerr=[lo, hi], color=colours, capsize=3)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("bad / good (time per step, or peak memory); bars show the interval; grey = no measurable gain")
    ax.set_title(f"gpulint bench: {report['where']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
