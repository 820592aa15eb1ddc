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
        # with a `Tracer`: called at each sync (implicit: None; explicit: the seconds it waited)
        self.on_sync = None

    @property
    def count(self) -> int:
        return self.implicit + self.explicit

    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        if self.on and SYNC_WARNING in str(message):
            self.implicit += 1
            if self.on_sync is not None:
                self.on_sync(None)
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
                if self.on_sync is not None:
                    t0 = time.perf_counter()
                    out = original(*args, **kwargs)
                    self.on_sync(time.perf_counter() - t0)
                    return out
            return original(*args, **kwargs)

        synchronize.__wrapped__ = original
        synchronize.__doc__ = original.__doc__
        return synchronize


# `gpulint verify --trace`: the path of a JSON file {"root": the copy's folder,
# "watch": {relative path: [lines]}} (the lines of the static findings)
TRACE_ENV = "GPULINT_TRACE"
# calls that copy to the device what they are given (a host tensor, or Python or NumPy data)
COPY_CALLS = frozenset({"to", "cuda", "copy_", "type", "tensor", "as_tensor", "asarray"})


class Tracer:
    """What each line of the user's files costs over the traced steps: the
    host-device syncs made from it (counted from sync debug mode's warnings
    and explicit `synchronize()` calls, with the host time of the call that
    synced), the copies to the device of host data (bytes, from pageable
    memory or not, host time), and the time waiting on a DataLoader. A line
    is the innermost frame of the stack in a file under `root`. Also which
    watched lines ran at all (`reached`)."""

    def __init__(self, torch_module, spec: dict, cuda: bool) -> None:
        self.torch = torch_module
        self.cuda = cuda
        self.root = os.path.realpath(spec["root"])
        # a watched file under each name a frame may give it (the path as run, and its real path)
        self.watch = {}
        for rel, lines in spec.get("watch", {}).items():
            path = os.path.join(self.root, rel)
            for name in (path, os.path.realpath(path)):
                self.watch[name] = set(lines)
        self.rows = {}  # (path, line, kind) -> [count, seconds, bytes, pageable]
        self.reached = set()
        self.syncs = 0  # implicit syncs seen so far (a call that made some is timed as one)
        self._rel = {}
        self._undo = []
        self.on = False

    # ----------------------------------------------------------- locations
    def relative(self, filename: str):
        rel = self._rel.get(filename, False)
        if rel is False:
            real = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
            rel = None
            if real.startswith(self.root + os.sep) and real.endswith(".py"):
                rel = os.path.relpath(real, self.root).replace(os.sep, "/")
            self._rel[filename] = rel
        return rel

    def where(self, frame):
        while frame is not None:
            rel = self.relative(frame.f_code.co_filename)
            if rel is not None:
                return rel, frame.f_lineno
            frame = frame.f_back
        return None

    def add(self, kind: str, frame, seconds: float = 0.0, nbytes: int = 0, pageable: bool = False,
            count: int = 1) -> None:
        at = self.where(frame)
        if at is None:
            return
        row = self.rows.setdefault((at[0], at[1], kind), [0, 0.0, 0, 0])
        row[0] += count
        row[1] += seconds
        row[2] += nbytes
        row[3] += count if pageable else 0

    # -------------------------------------------------------------- events
    def on_sync(self, seconds) -> None:
        if seconds is None:  # an implicit sync: its time is the call's (`call`)
            self.syncs += 1
            self.add("sync", sys._getframe(1))
        else:
            self.add("sync", sys._getframe(1), seconds=seconds)

    def call(self, func, args, kwargs):
        """A torch function or Tensor method called while tracing: run it, and
        time it where it synced or copied host data to the device."""
        before = self.syncs
        t0 = time.perf_counter()
        out = func(*args, **kwargs)
        dt = time.perf_counter() - t0
        frame = sys._getframe(1)  # (the frames of boot.py are not the user's: `where` walks past them)
        # a blocking copy of pageable host data syncs: it is both, and its time is counted once, as the copy's
        copied = getattr(func, "__name__", "") in COPY_CALLS and self._copy(func.__name__, args, out, dt, frame)
        if self.syncs != before:
            self.add("sync", frame, seconds=0.0 if copied else dt, count=0)
        return out

    def _copy(self, name: str, args, out, seconds: float, frame) -> bool:
        """Record a copy of host data to the device, if `out` is one; whether it was."""
        torch = self.torch
        if not isinstance(out, torch.Tensor) or out.device.type == "cpu" or not args:
            return False
        src = args[1] if name == "copy_" and len(args) > 1 else args[0]
        if isinstance(src, torch.Tensor):
            if src.device.type != "cpu":
                return False
            nbytes, pageable = src.numel() * src.element_size(), not src.is_pinned()
        else:  # Python or NumPy data, staged through pageable memory
            nbytes, pageable = out.numel() * out.element_size(), True
        self.add("copy", frame, seconds=seconds, nbytes=nbytes, pageable=pageable)
        return True

    def _line(self, frame, event, arg):
        if event == "line":
            lines = self.watch.get(frame.f_code.co_filename)
            if lines is not None and frame.f_lineno in lines:
                self.reached.add((self.relative(frame.f_code.co_filename), frame.f_lineno))
        return self._line

    def _call_event(self, frame, event, arg):
        if frame.f_code.co_filename in self.watch:
            frame.f_trace_lines = True
            return self._line
        return None

    def explicit_sync(self, original):
        """`Event.synchronize` or `Stream.synchronize`, timed as one sync of
        the line that called it. Sync debug mode also warns on some of them
        (`Stream.synchronize`, on torch 2.11 with CUDA 13; not
        `Event.synchronize`): such a call is still counted once."""
        tracer = self

        def synchronize(obj, *a, **k):
            before = tracer.syncs
            t0 = time.perf_counter()
            out = original(obj, *a, **k)
            tracer.add("sync", sys._getframe(1), seconds=time.perf_counter() - t0,
                       count=0 if tracer.syncs != before else 1)
            return out

        return synchronize

    # --------------------------------------------------------- on and off
    def start(self, sync_counter) -> None:
        torch = self.torch
        self.on = True
        tracer = self
        if self.cuda:
            sync_counter.on_sync = self.on_sync
            sync_counter.start()
            self._undo.append(lambda: (sync_counter.stop(), setattr(sync_counter, "on_sync", None)))
            for cls in (torch.cuda.Event, torch.cuda.Stream):
                original = cls.synchronize
                cls.synchronize = self.explicit_sync(original)
                self._undo.append(lambda cls=cls, original=original: setattr(cls, "synchronize", original))
        from torch.utils.data import dataloader

        loader_next = dataloader._BaseDataLoaderIter.__next__

        def next_batch(it):
            t0 = time.perf_counter()
            try:
                batch = loader_next(it)
            except StopIteration:  # the epoch's end: its time counts, as no batch
                tracer.add("data", sys._getframe(1), seconds=time.perf_counter() - t0, count=0)
                raise
            tracer.add("data", sys._getframe(1), seconds=time.perf_counter() - t0)
            return batch

        dataloader._BaseDataLoaderIter.__next__ = next_batch
        self._undo.append(lambda: setattr(dataloader._BaseDataLoaderIter, "__next__", loader_next))
        from torch.overrides import TorchFunctionMode

        class _Traced(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return tracer.call(func, args, kwargs or {})

        mode = _Traced()
        mode.__enter__()
        self._undo.append(lambda: mode.__exit__(None, None, None))
        if self.watch:
            frame = sys._getframe(1)
            while frame is not None:  # the frames running now (the training loop's among them)
                if frame.f_code.co_filename in self.watch:
                    frame.f_trace = self._line
                    frame.f_trace_lines = True
                frame = frame.f_back
            sys.settrace(self._call_event)
            self._undo.append(lambda: sys.settrace(None))

    def stop(self) -> None:
        if not self.on:
            return
        self.on = False
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                pass
        self._undo = []

    def results(self, steps: int) -> dict:
        rows = [{"path": p, "line": ln, "kind": k, "count": c, "seconds": sec, "bytes": b, "pageable": pg}
                for (p, ln, k), (c, sec, b, pg) in sorted(self.rows.items())]
        # the files of the folder the script imported (itself included): a finding in any
        # other file is in code this script never loads, not in code its steps skipped
        imported = set(imported_files(self.root)) | {p for p, _ in self.reached} | {r["path"] for r in rows}
        return {"steps": steps, "rows": rows, "reached": sorted([p, ln] for p, ln in self.reached),
                "imported": sorted(imported)}


def imported_files(root: str) -> list:
    """The Python files under `root` whose modules are loaded now (the script
    itself, run as `__main__`, among them), relative to `root`."""
    root = os.path.realpath(root)
    out = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        # (an absolute path that exists: `torch._classes` says it is "_classes.py")
        if not (isinstance(path, str) and path.endswith(".py") and os.path.isabs(path) and os.path.exists(path)):
            continue
        real = os.path.realpath(path)
        if real.startswith(root + os.sep):
            out.add(os.path.relpath(real, root).replace(os.sep, "/"))
    return sorted(out)


class Recorder:
    """The measurement state of one run; `on_step` is the optimizer step
    post-hook, `on_backward` sees every backward() call."""

    def __init__(self, torch_module, results_path: str, steps: int, warmup: int, cuda: bool,
                 tracer: "Tracer" = None) -> None:
        self.torch = torch_module
        self.tracer = tracer  # `--trace`: the window's steps are traced (and so not timed truly)
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
            if self.tracer is not None:
                self.tracer.start(self.sync)
        if n == self.warmup + self.steps:
            if self.tracer is not None:
                self.tracer.stop()
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
            "trace": self.tracer.results(timed) if self.tracer is not None else None,
            # (the run's folder is its working directory: `sides.run_side`)
            "imported": imported_files(os.getcwd()),
        }

    def finish(self, status: str) -> None:
        if self.written:
            return
        self.written = True
        if self.tracer is not None:
            self.tracer.stop()
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
    tracer = None
    if os.environ.get(TRACE_ENV):
        with open(os.environ[TRACE_ENV], encoding="utf-8") as fh:
            tracer = Tracer(torch, json.load(fh), cuda)
    recorder = Recorder(torch, os.path.abspath(results_path), steps, warmup, cuda, tracer)
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
