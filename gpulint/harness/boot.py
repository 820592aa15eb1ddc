"""Runs a user's training script under measurement, for `gpulint verify`.

This file runs in the child process, by path:

    python .../gpulint/harness/boot.py RESULTS.json STEPS WARMUP SCRIPT [ARGS...]

It imports only the standard library and torch (never gpulint, so any
interpreter with torch can run it), and it never edits the user's code. It

- fixes the seeds (`random`, NumPy when installed, `torch.manual_seed(0)`,
  which seeds CUDA too);
- counts optimizer steps with PyTorch's global optimizer step hooks (every
  `optimizer.step()` of every optimizer: a script that steps two optimizers
  per iteration, a GAN, counts two);
- keeps `loss.detach().clone()` of the first `K_LOSSES` scalar `backward()`
  calls without reading them (a clone is one more asynchronous kernel, no
  host-device sync); they are read only after the timed window;
- counts host-device syncs during the warm-up steps after the first one
  (`torch.cuda.set_sync_debug_mode("warn")`, whose warnings are counted and
  swallowed, plus explicit `torch.cuda.synchronize()` calls), and switches the
  counting off before the timed window so it cannot distort the timing;
- times STEPS optimizer steps after WARMUP ones with one
  `torch.cuda.synchronize()` at the start of the window and one at the end
  (no sync per step: that would hide the very stalls being measured), and
  records the peak of `torch.cuda.max_memory_allocated()` over the window;
- then writes RESULTS.json and ends the process with `os._exit(0)` (so
  DataLoader workers go with it and the rest of the script never runs).

A script that ends, exits or raises before STEPS + WARMUP steps still gets
its results written, with the steps it reached and how it ended.
"""

from __future__ import annotations

import json
import os
import random
import runpy
import sys
import time
import traceback
import warnings

K_LOSSES = 5
SYNC_WARNING = "synchronizing CUDA operation"  # torch.cuda.set_sync_debug_mode("warn") says "called a ..."
RESULTS_VERSION = 1


class SyncCounter:
    """Counts host-device syncs while on: the warnings of CUDA's sync debug
    mode (counted and not shown) and explicit `torch.cuda.synchronize()` calls
    made through `counted_synchronize`."""

    def __init__(self, torch_module=None, use_debug_mode: bool = False) -> None:
        self.torch = torch_module
        self.use_debug_mode = use_debug_mode
        self.on = False
        self.implicit = 0
        self.explicit = 0
        self._saved_showwarning = None
        self._filter = None

    @property
    def count(self) -> int:
        return self.implicit + self.explicit

    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        if self.on and SYNC_WARNING in str(message):
            self.implicit += 1
            return
        self._saved_showwarning(message, category, filename, lineno, file, line)

    def start(self) -> None:
        if self.on:
            return
        self.on = True
        # installed now, after the script set up its own warning filters: ours
        # goes first, and "always" keeps repeats from the same line coming
        warnings.filterwarnings("always", message=".*" + SYNC_WARNING)
        self._filter = warnings.filters[0]
        self._saved_showwarning = warnings.showwarning
        warnings.showwarning = self._showwarning
        if self.use_debug_mode:
            self.torch.cuda.set_sync_debug_mode("warn")

    def stop(self) -> None:
        if not self.on:
            return
        if self.use_debug_mode:
            self.torch.cuda.set_sync_debug_mode("default")
        self.on = False
        if warnings.showwarning == self._showwarning:
            warnings.showwarning = self._saved_showwarning
        try:
            warnings.filters.remove(self._filter)
        except ValueError:  # the script reset the filters meanwhile
            pass
        mutated = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
        if mutated is not None:
            try:
                mutated()
            except Exception:
                pass

    def counted_synchronize(self, original):
        def synchronize(*args, **kwargs):
            if self.on:
                self.explicit += 1
            return original(*args, **kwargs)

        synchronize.__wrapped__ = original
        synchronize.__doc__ = original.__doc__
        return synchronize


class Recorder:
    """The measurement state of one run; `on_step` is the optimizer step
    post-hook, `on_backward` sees every backward() call."""

    def __init__(self, torch_module, results_path: str, steps: int, warmup: int, cuda: bool) -> None:
        self.torch = torch_module
        self.results_path = results_path
        self.steps = steps
        self.warmup = warmup
        self.cuda = cuda
        self.steps_done = 0
        self.optimizers = set()
        self.losses = []  # detached clones, read at the end
        self.loss_values = None
        self.backward_calls = 0
        self.t_start = None
        self.t_end = None
        self.host_times = []  # perf_counter at each step in the window (no sync: host-side only)
        self.peak_memory = None
        self.sync = SyncCounter(torch_module, use_debug_mode=cuda)
        self.sync_steps = 0
        self.sync_count = None
        self.written = False
        self.ended = None  # how the script ended, when it did before the window closed
        self.error = None
        self._synchronize = None
        # what happens once the window closes: end the process (tests replace it)
        self.on_done = lambda: flush_and_exit(0)

    # --------------------------------------------------------------- hooks
    def device_synchronize(self) -> None:
        if self.cuda:
            (self._synchronize or self.torch.cuda.synchronize)()

    def on_backward(self, tensors) -> None:
        self.backward_calls += 1
        if len(self.losses) >= K_LOSSES:
            return
        t = tensors
        if isinstance(t, (list, tuple)):
            t = t[0] if t else None
        if isinstance(t, self.torch.Tensor) and t.numel() == 1:
            self.losses.append(t.detach().clone())

    def on_step(self, optimizer, args=None, kwargs=None) -> None:
        self.optimizers.add(id(optimizer))
        self.steps_done += 1
        n = self.steps_done
        if self.t_start is not None:
            self.host_times.append(time.perf_counter())
        # syncs: counted over warm-up steps 2..W (the first step is special:
        # lazy initialisation, cuDNN autotuning, optimizer state allocation)
        if n == 1 and self.warmup >= 2:
            self.sync.start()
        if n == self.warmup:
            if self.sync.on:
                self.sync.stop()
                self.sync_steps = self.warmup - 1
                self.sync_count = self.sync.count
            self.device_synchronize()
            if self.cuda:
                self.torch.cuda.reset_peak_memory_stats()
            self.t_start = time.perf_counter()
            self.host_times = [self.t_start]
        if n == self.warmup + self.steps:
            self.device_synchronize()
            self.t_end = time.perf_counter()
            if self.cuda:
                self.peak_memory = int(self.torch.cuda.max_memory_allocated())
            self.finish("done")
            self.on_done()

    # -------------------------------------------------------------- results
    def results(self, status: str) -> dict:
        if self.loss_values is None:
            vals = []
            for t in self.losses:
                try:
                    vals.append(float(t.float().item()))
                except Exception:  # a loss that cannot be read (a device error): stop reading
                    break
            self.loss_values = vals
        timed = 0
        seconds = None
        if self.t_start is not None and self.t_end is not None:
            timed = self.steps
            seconds = self.t_end - self.t_start
        host_ms = [(b - a) * 1e3 for a, b in zip(self.host_times, self.host_times[1:])]
        return {
            "version": RESULTS_VERSION,
            "status": status,
            "steps_requested": self.steps,
            "warmup": self.warmup,
            "steps_reached": self.steps_done,
            "steps_timed": timed,
            "seconds": seconds,
            "host_step_ms": host_ms,
            "sync_count": self.sync_count if self.cuda else None,
            "sync_steps": self.sync_steps if self.cuda else 0,
            "peak_memory_bytes": self.peak_memory,
            "losses": self.loss_values,
            "backward_calls": self.backward_calls,
            "optimizers": len(self.optimizers),
            "cuda": self.cuda,
            "ended": self.ended,
            "error": self.error,
        }

    def finish(self, status: str) -> None:
        if self.written:
            return
        self.written = True
        if self.sync.on:
            self.sync.stop()
        data = self.results(status)
        tmp = self.results_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.results_path)


def flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def seed_everything(torch_module) -> None:
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except Exception:
        pass
    torch_module.manual_seed(0)  # seeds every CUDA device too


def install(torch_module, recorder: Recorder):
    """Register the global hooks and wrappers; returns a function that
    removes them again (for tests: the child process never needs it)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    handle = register_optimizer_step_post_hook(recorder.on_step)
    original_backward = torch_module.autograd.backward
    original_synchronize = torch_module.cuda.synchronize

    def backward(tensors, *args, **kwargs):
        recorder.on_backward(tensors)
        return original_backward(tensors, *args, **kwargs)

    backward.__wrapped__ = original_backward
    backward.__doc__ = original_backward.__doc__
    torch_module.autograd.backward = backward  # Tensor.backward calls torch.autograd.backward
    if recorder.cuda:
        recorder._synchronize = original_synchronize
        torch_module.cuda.synchronize = recorder.sync.counted_synchronize(original_synchronize)

    def uninstall() -> None:
        handle.remove()
        torch_module.autograd.backward = original_backward
        torch_module.cuda.synchronize = original_synchronize
        recorder.sync.stop()

    return uninstall


def main(argv) -> int:
    if len(argv) < 4:
        sys.stderr.write("usage: boot.py RESULTS STEPS WARMUP SCRIPT [ARGS...]\n")
        return 2
    results_path, steps, warmup, script = argv[0], int(argv[1]), int(argv[2]), argv[3]
    args = argv[4:]
    import torch

    cuda = bool(torch.cuda.is_available())
    recorder = Recorder(torch, os.path.abspath(results_path), steps, warmup, cuda)
    seed_everything(torch)
    install(torch, recorder)

    script = os.path.abspath(script)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(script)
    import atexit

    # sys.exit() and os.exit paths that run atexit (not os._exit) still leave results
    atexit.register(lambda: recorder.finish("ended"))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        recorder.ended = f"sys.exit({code!r})"
        if code not in (None, 0):
            recorder.error = f"the script exited with sys.exit({code!r})"
            recorder.finish("error")
            raise
        recorder.finish("ended")
        return 0
    except BaseException as exc:  # noqa: BLE001 (the script's own error, reported)
        traceback.print_exc()
        recorder.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        recorder.finish("error")
        return 1
    recorder.ended = "the script returned"
    recorder.finish("ended")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
