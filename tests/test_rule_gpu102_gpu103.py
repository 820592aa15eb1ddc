"""GPU102 synchronize-in-loop and GPU103 empty-cache-in-loop: where they
fire, and that their fix removes exactly the statement."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def rows(code: str, code_: str):
    return [f.row for f in lint(src(code), codes=[code_])]


TRAIN_HEAD = """
import torch

for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
"""


# ------------------------------------------------------------------ GPU102
@pytest.mark.parametrize(
    "imports,call",
    [
        ("import torch", "torch.cuda.synchronize()"),
        ("import torch.cuda", "torch.cuda.synchronize(device)"),
        ("import torch.cuda as tc", "tc.synchronize()"),
        ("from torch import cuda", "cuda.synchronize()"),
        ("from torch.cuda import synchronize", "synchronize()"),
        ("from torch.cuda import synchronize as sync", "sync()"),
        ("import torch", "torch.accelerator.synchronize()"),
    ],
)
def test_synchronize_any_import_form(imports, call):
    code = f"""
        {imports}

        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            {call}
        """
    assert rows(code, "GPU102") == [7]


def test_synchronize_lookalikes_are_not_flagged():
    code = """
        import torch

        class Stream:
            def synchronize(self):
                pass

        def synchronize():
            pass

        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            synchronize()
            stream.synchronize()
            torch.cuda.current_stream().synchronize()
            event.synchronize()
            torch.cuda.synchronize()
        """
    # only the real one (the control) is flagged
    assert rows(code, "GPU102") == [18]


def test_synchronize_not_hot():
    code = """
        import time
        import torch

        def warmup(model, x):
            for _ in range(10):
                model(x)
            torch.cuda.synchronize()

        def train(model, loader, optimizer):
            for epoch in range(3):
                for x in loader:
                    model(x).sum().backward()
                    optimizer.step()
                torch.cuda.synchronize()
                for step, x in enumerate(loader):
                    model(x).sum().backward()
                    if step % 100 == 0:
                        torch.cuda.synchronize()

        def copy_all(tensors):
            for t in tensors:
                torch.cuda.synchronize()
        """
    assert rows(code, "GPU102") == []


def test_synchronize_in_timing_code_is_not_flagged():
    code = """
        import time
        from time import perf_counter
        import torch

        def train(model, loader, optimizer):
            end = time.time()
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
                torch.cuda.synchronize()
                batch_time = time.time() - end
                end = time.time()

        def bench(model, x):
            for _ in range(100):
                t0 = perf_counter()
                model(x)
                torch.cuda.synchronize()
                print(perf_counter() - t0)

        def bench_events(model, x, start, end):
            for _ in range(100):
                start.record()
                model(x)
                end.record()
                torch.cuda.synchronize()
                print(start.elapsed_time(end))

        def untimed(model, x):
            t0 = perf_counter()
            for _ in range(100):
                model(x)
                torch.cuda.synchronize()
            return perf_counter() - t0
        """
    # the clock reads of `untimed` are outside its loop: the per-step sync is not needed to time it
    assert rows(code, "GPU102") == [33]


def test_synchronize_fix_removes_the_line():
    code = src(TRAIN_HEAD + "    torch.cuda.synchronize()  # wait for the step\n    scheduler.step()\n")
    assert fix(code, codes=["GPU102"], unsafe=True) == src(TRAIN_HEAD + "    scheduler.step()\n")
    # unsafe: nothing happens without --unsafe-fixes
    assert fix(code, codes=["GPU102"]) == code


def test_synchronize_fix_only_statement_becomes_pass():
    code = src(TRAIN_HEAD + "    if args.sync:\n        torch.cuda.synchronize()  # debug\n")
    assert fix(code, codes=["GPU102"], unsafe=True) == src(TRAIN_HEAD + "    if args.sync:\n        pass\n")


def test_synchronize_inside_an_expression_has_no_fix():
    code = src(TRAIN_HEAD + "    ok = torch.cuda.synchronize() or True\n")
    findings = lint(code, codes=["GPU102"])
    assert [f.row for f in findings] == [7]
    assert findings[0].fix is None


# ------------------------------------------------------------------ GPU103
def test_empty_cache_in_any_loop():
    code = """
        import torch
        from torch.cuda import empty_cache

        for epoch in range(10):
            for x in loader:
                model(x).sum().backward()
                torch.cuda.empty_cache()
            if epoch % 5 == 0:
                empty_cache()
        while queue:
            job = queue.pop()
            run(job)
            torch.cuda.empty_cache()
            torch.cuda.memory.empty_cache()
            torch.accelerator.memory.empty_cache()
        """
    # line 9 runs once per five epochs, in the epoch loop around the steps: not flagged
    assert rows(code, "GPU103") == [7, 13, 14, 15]


def test_messages_name_the_function():
    code = src(TRAIN_HEAD + "    torch.accelerator.synchronize()\n    torch.cuda.empty_cache()\n")
    msgs = sorted(f.message for f in lint(code, codes=["GPU102", "GPU103"]))
    assert msgs == [
        "`torch.accelerator.synchronize()` in a hot loop makes the CPU wait for the GPU every step",
        "`torch.cuda.empty_cache()` inside a loop returns cached memory that the next iteration must allocate again",
    ]


def test_empty_cache_not_in_a_loop():
    code = """
        import torch

        torch.cuda.empty_cache()

        def f():
            torch.cuda.empty_cache()

        for m in modules:
            def hook(*_):
                torch.cuda.empty_cache()
            m.register_forward_hook(hook)
            m.register_forward_hook(lambda *_: torch.cuda.empty_cache())

        for bs in (256, 128, 64):
            try:
                run(bs)
                break
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
        else:
            torch.cuda.empty_cache()

        for shape in shapes:
            try:
                bench_one(shape)
            finally:
                torch.cuda.empty_cache()

        for cache in caches:
            cache.empty_cache()
            torch.mps.empty_cache()
        """
    assert rows(code, "GPU103") == []


def test_empty_cache_in_a_try_body_is_still_flagged():
    code = """
        import torch

        for batch in loader:
            try:
                step(batch)
                torch.cuda.empty_cache()
            finally:
                log()
        """
    assert rows(code, "GPU103") == [6]


def test_empty_cache_fix():
    code = src(
        """
        import torch

        for x in loader:
            out = model(x)
            del out
            torch.cuda.empty_cache()
        """
    )
    assert fix(code, codes=["GPU103"], unsafe=True) == src(
        """
        import torch

        for x in loader:
            out = model(x)
            del out
        """
    )


def test_both_removed_from_one_block_leaves_pass():
    """Two removals that would empty a block are applied one per pass."""
    code = src(
        """
        import torch

        while True:
            torch.cuda.empty_cache()
            torch.cuda.empty_cache()
        """
    )
    assert fix(code, codes=["GPU103"], unsafe=True) == src(
        """
        import torch

        while True:
            pass
        """
    )


def test_sync_and_empty_cache_on_one_line():
    code = src(TRAIN_HEAD + "    torch.cuda.synchronize(); torch.cuda.empty_cache()\n    print(1)\n")
    assert fix(code, codes=["GPU102", "GPU103"], unsafe=True) == src(TRAIN_HEAD + "    print(1)\n")
