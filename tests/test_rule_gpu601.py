"""GPU601 unsynchronized-timing: what an interval is, what counts as CUDA work
and as a sync, and the loop rules."""

from __future__ import annotations

import textwrap

from helpers import lint

CODE = "GPU601"
HEADER = "import time\nimport torch\nDEVICE = 'cuda'\n"


def src(code: str) -> str:
    return HEADER + textwrap.dedent(code).lstrip("\n")


def check(code: str, header: bool = True):
    """Lines marked `# flag` are exactly the findings (and they point at the clock read)."""
    text = src(code) if header else textwrap.dedent(code).lstrip("\n")
    want = [i for i, line in enumerate(text.splitlines(), 1) if "# flag" in line]
    found = lint(text, codes=[CODE])
    assert [f.row for f in found] == want
    for f in found:
        line = text.splitlines()[f.row - 1]
        clock = line[f.col - 1 :].split("(")[0].split(".")[-1]
        assert clock in ("time", "perf_counter", "monotonic", "pc", "default_timer", "now")


def test_clock_import_forms_and_interval_shapes():
    check(
        """
        import timeit
        from time import perf_counter as pc
        from time import monotonic
        from time import time as now

        def a(model, x):
            t0 = time.time()
            y = model(x)
            return time.time() - t0, y  # flag

        def b(model, x):
            start = pc()
            y = model(x)
            end = pc()  # flag
            return end - start, y

        def c(model, x):
            t0 = timeit.default_timer()
            y = model(x)
            print(f"{(timeit.default_timer() - t0) * 1e3:.1f} ms")  # flag
            return y

        def aliased(model, x):
            t0 = now()
            y = model(x)
            return now() - t0, y  # flag

        def tuple_start(model, x):
            start, seen = time.time(), 0
            y = model(x)
            return time.time() - start, y  # flag

        def d(model, x):
            t0 = time.monotonic()
            y = model(x)
            stamp = time.monotonic()
            return y, stamp
        """
    )


def test_imagenet_meters():
    check(
        """
        def train(loader, model, criterion, optimizer, batch_time, data_time):
            end = time.time()
            for images, target in loader:
                data_time.update(time.time() - end)
                images = images.to(DEVICE, non_blocking=True)
                loss = criterion(model(images), target.to(DEVICE, non_blocking=True))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                batch_time.update(time.time() - end)  # flag
                end = time.time()
        """
    )


def test_every_kind_of_sync_before_the_read():
    check(
        """
        import torch.distributed as dist

        def via_synchronize(model, x):
            t0 = time.time(); y = model(x); torch.cuda.synchronize()
            return time.time() - t0

        def via_event(model, x, done):
            t0 = time.time(); y = model(x); done.record(); done.synchronize()
            return time.time() - t0

        def via_stream(model, x):
            t0 = time.time(); y = model(x); torch.cuda.current_stream().synchronize()
            return time.time() - t0

        def via_item(model, x):
            t0 = time.time(); v = model(x).sum().item()
            return time.time() - t0

        def via_tolist(model, x):
            t0 = time.time(); v = model(x).argmax(-1).tolist()
            return time.time() - t0

        def via_cpu_numpy(model, x):
            t0 = time.time(); v = model(x).cpu().numpy()
            return time.time() - t0

        def via_to_cpu(model, x):
            t0 = time.time(); v = model(x).to("cpu")
            return time.time() - t0

        def via_as_float(model, x):
            t0 = time.time(); loss = model(x).mean(); v = float(loss)
            return time.time() - t0

        def via_printed(model, x):
            t0 = time.time(); loss = model(x).mean(); print(loss)
            return time.time() - t0

        def via_formatted(model, x, log):
            t0 = time.time(); loss = model(x).mean(); log(f"loss {loss:.3f}")
            return time.time() - t0

        def via_truth_value(model, x):
            t0 = time.time(); loss = model(x).mean()
            if loss > 10:
                print("diverged")
            return time.time() - t0

        def via_barrier(model, x):
            t0 = time.time(); y = model(x); dist.barrier()
            return time.time() - t0

        def via_blocking_copy(model, x, y_cpu):
            t0 = time.time(); y = model(x); target = y_cpu.to(DEVICE)
            return time.time() - t0

        def via_non_blocking_copy(model, x, y_cpu):
            t0 = time.time(); y = model(x); target = y_cpu.to(DEVICE, non_blocking=True)
            return time.time() - t0  # flag

        def via_logger(model, x, writer):
            t0 = time.time(); loss = model(x).mean(); writer.add_scalar("loss", loss, 0)
            return time.time() - t0

        def via_metrics_dict(model, x, run):
            t0 = time.time(); loss = model(x).mean(); run.log({"train/loss": loss})
            return time.time() - t0

        def via_local_logger(model, x):
            t0 = time.time(); loss = model(x).mean(); log_loss(loss)
            return time.time() - t0

        def log_loss(loss):
            wandb.log({"loss": loss})

        def via_list_append(model, x, preds):
            preds = []
            t0 = time.time(); preds.append(model(x))
            return time.time() - t0  # flag

        def via_sync_before_last_work(model, x):
            t0 = time.time(); v = model(x).sum().item(); y = model(x)
            return time.time() - t0  # flag
        """
    )


def test_cuda_work_kinds():
    check(
        """
        import torch.nn.functional as F

        def matmul(n):
            a = torch.randn(n, n, device="cuda")
            b = torch.randn(n, n, device="cuda")
            t0 = time.perf_counter()
            c = a @ b
            return time.perf_counter() - t0, c  # flag

        def torch_fn(a, b):
            a = torch.randn(64, 64, device=DEVICE)
            t0 = time.perf_counter()
            c = torch.matmul(a, a)
            return time.perf_counter() - t0, c  # flag

        def factory():
            t0 = time.perf_counter()
            x = torch.randn(4096, 4096, device="cuda")
            return time.perf_counter() - t0, x  # flag

        def cpu_factory():
            t0 = time.perf_counter()
            x = torch.randn(4096, 4096)
            return time.perf_counter() - t0, x

        def h2d(n):
            x = torch.empty(n, dtype=torch.uint8).pin_memory()
            t0 = time.perf_counter()
            y = x.cuda(non_blocking=True)
            return time.perf_counter() - t0, y  # flag

        def backward_step(loss, optimizer):
            t0 = time.perf_counter()
            loss.backward()
            optimizer.step()
            return time.perf_counter() - t0  # flag

        def criterion_call(criterion, out, y):
            t0 = time.perf_counter()
            l = criterion(out, y)
            return time.perf_counter() - t0, l  # flag
        """
    )


def test_cpu_only_work_is_not_flagged():
    check(
        """
        import json

        def tokenize(tokenizer, texts):
            t0 = time.time()
            enc = tokenizer(texts, return_tensors="pt")
            return enc, time.time() - t0

        def read(paths):
            t0 = time.time()
            rows = [json.load(open(p)) for p in paths]
            return rows, time.time() - t0

        def next_batch(loader_iter):
            t0 = time.time()
            images, target = next(loader_iter)
            return images, time.time() - t0

        def pipeline(model, frames):
            t0 = time.time()
            results = model("bus.jpg")
            return results, time.time() - t0

        def local_helper(model, x):
            t0 = time.time()
            run_everything(model, x)
            return time.time() - t0
        """
    )


def test_local_functions_that_sync():
    check(
        """
        def to_float(t):
            return t.mean().item()

        def score(out):
            return to_float(out)

        def pure(out):
            return out.softmax(-1)

        def measured(model, x):
            t0 = time.time()
            s = score(model(x))
            return s, time.time() - t0

        def unsynced(model, x):
            t0 = time.time()
            p = pure(model(x))
            return p, time.time() - t0  # flag
        """
    )


def test_loops_inside_the_interval():
    check(
        """
        def repeated(model, x):
            t0 = time.time()
            for _ in range(100):
                model(x)
            return time.time() - t0  # flag

        def repeated_with_sync(model, x):
            t0 = time.time()
            for _ in range(100):
                model(x).sum().item()
            return time.time() - t0

        def epoch(model, loader, optimizer):
            t0 = time.time()
            for x, y in loader:
                loss = (model(x.to(DEVICE, non_blocking=True)) - y).pow(2).mean()
                loss.backward()
                optimizer.step()
            return time.time() - t0

        def indexed_epoch(model, data, bptt):
            t0 = time.time()
            for i in range(0, data.size(0) - 1, bptt):
                model(data[i : i + bptt])
            return time.time() - t0

        def work_after_epoch(model, loader, big):
            t0 = time.time()
            for x in loader:
                model(x)
            z = model(big)
            return time.time() - t0  # flag

        def while_loop(model, x, n):
            t0 = time.time()
            i = 0
            while i < n:
                model(x)
                i += 1
            return time.time() - t0  # flag
        """
    )


def test_deadlines_and_throttles_are_not_measurements():
    check(
        """
        def train(model, loader, optimizer, budget):
            start = time.time()
            last = start
            for x, y in loader:
                model(x).mean().backward()
                optimizer.step()
                if time.time() - start > budget:
                    break
                while time.monotonic() - last < 0.1:
                    pass
        """
    )


def test_scopes_and_cuda_use():
    check(
        """
        def outer(model, x):
            t0 = time.time()
            y = model(x)

            def report():
                return time.time() - t0

            return report
        """
    )
    # a file that never mentions the GPU
    text = "import time\n\ndef f(model, x):\n    t0 = time.time()\n    y = model(x)\n    return time.time() - t0\n"
    assert lint(text, codes=[CODE]) == []
    assert len(lint(text.replace("import time", "import time\nDEV = 'cuda'"), codes=[CODE])) == 1


def test_prefilter_lets_an_aliased_clock_through():
    text = textwrap.dedent(
        """
        from time import time as now

        def f(model, x):
            t0 = now()
            y = model(x.cuda(non_blocking=True))
            return now() - t0
        """
    ).lstrip("\n")
    assert [f.row for f in lint(text, codes=[CODE])] == [6]


def test_counted_loops_that_take_fresh_data_are_passes_over_data():
    check(
        """
        def replay_training(loss_module, replay_buffer, optim, cfg):
            training_start = time.time()
            for _ in range(cfg.num_epochs):
                for _ in range(cfg.frames_per_batch // cfg.minibatch_size):
                    subdata = replay_buffer.sample()
                    loss_vals = loss_module(subdata)
                    loss_value = loss_vals["loss"]
                    loss_value.backward()
                    optim.step()
                    optim.zero_grad()
            return time.time() - training_start

        def iterator_steps(model, loader, optimizer, steps):
            it = iter(loader)
            t0 = time.time()
            for _ in range(steps):
                x, y = next(it)
                loss = (model(x.to(DEVICE, non_blocking=True)) - y).pow(2).mean()
                loss.backward()
                optimizer.step()
            return time.time() - t0

        def fresh_iter_each_step(model, data, n):
            t0 = time.time()
            for _ in range(n):
                model(next(iter(data)))
            return time.time() - t0

        def minibatches(model, criterion, optimizer, X, Y, n_batches, bs):
            t0 = time.time()
            for i in range(n_batches):
                xb = X[i * bs : (i + 1) * bs]
                loss = criterion(model(xb), Y[i * bs : (i + 1) * bs])
                loss.backward()
                optimizer.step()
            return time.time() - t0

        def indexed_list(model, batches, n):
            t0 = time.time()
            for i in range(n):
                model(batches[i])
            return time.time() - t0
        """
    )


def test_counted_loops_over_the_same_inputs_are_still_benchmarks():
    check(
        """
        def same_inputs(model, x, n):
            t0 = time.time()
            for _ in range(n):
                y = model(x)
            return time.time() - t0  # flag

        def same_inputs_training(model, criterion, optimizer, x, y, n):
            t0 = time.time()
            for _ in range(n):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            return time.time() - t0  # flag

        def sampled_but_unused(model, replay_buffer, x, n):
            t0 = time.time()
            for _ in range(n):
                extra = replay_buffer.sample()
                y = model(x)
            return time.time() - t0  # flag

        def model_sample(model, z, n):
            t0 = time.time()
            for _ in range(n):
                out = model(model.sample(z))
            return time.time() - t0  # flag

        def parameters_are_not_data(model, x, n):
            t0 = time.time()
            for _ in range(n):
                w = next(model.parameters())
                y = model(x.to(w.dtype))
            return time.time() - t0  # flag

        def indexed_by_loop_var_but_not_data(model, x, lrs, n):
            t0 = time.time()
            for i in range(n):
                lr = lrs[i]
                y = model(x) * lr
            return time.time() - t0  # flag

        def output_indexed(model, criterion, x, y, n):
            t0 = time.time()
            for i in range(n):
                out = model(x)
                loss = criterion(out[i], y)
            return time.time() - t0  # flag

        def fetched_only_now_and_then(model, it, x, n):
            t0 = time.time()
            for i in range(n):
                if i % 100 == 0:
                    x = next(it)
                y = model(x)
            return time.time() - t0  # flag
        """
    )


def test_periodic_meters_over_many_steps():
    check(
        """
        def throughput_with_per_step_sync(world_model, opt, buffer_, total_steps, log_every, x):
            t_log_start = time.time()
            step = 0
            while step < total_steps:
                loss = world_model(x).mean()
                loss_value = loss.item()
                loss.backward()
                opt.step()
                step += 1
                if step % log_every == 0:
                    t_log_end = time.time()
                    print(log_every / (t_log_end - t_log_start), "steps/s")
                    t_log_start = time.time()

        def throughput_over_a_data_pass(model, loader, optimizer, log_every):
            t0 = time.time()
            for step, (x, y) in enumerate(loader):
                loss = (model(x.to(DEVICE, non_blocking=True)) - y).pow(2).mean()
                loss.backward()
                optimizer.step()
                if step % log_every == 0:
                    print(f"{log_every / (time.time() - t0):.1f} it/s")
                    t0 = time.time()

        def elapsed_since_start(model, replay_buffer, optimizer, steps):
            start = time.time()
            for step in range(steps):
                loss = model(replay_buffer.sample()).mean()
                loss.backward()
                optimizer.step()
                if (step + 1) % 100 == 0:
                    print(f"step {step + 1}: {time.time() - start:.0f} s")

        def per_step_time_printed_now_and_then(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                t0 = time.time()
                loss = (model(x.to(DEVICE, non_blocking=True)) - y).pow(2).mean()
                loss.backward()
                optimizer.step()
                if step % 10 == 0:
                    print(time.time() - t0)  # flag

        def benchmark_with_periodic_meter(model, x, n):
            t0 = time.time()
            for i in range(n):
                y = model(x)
                if i % 10 == 0:
                    print(time.time() - t0, y.sum().item())  # flag
                    t0 = time.time()

        def meter_read_every_pass(model, x, n):
            # never restarted, in a loop that syncs every pass: each reading spans whole
            # synced passes but the current one's tail (ElegantRL's objective-vs-time curve)
            t0 = time.time()
            step = 0
            while step < n:
                loss = model(x).mean()
                loss.item()
                loss.backward()
                step += 1
                print(step / (time.time() - t0))

        def meter_read_every_pass_without_a_sync(model, x, n):
            t0 = time.time()
            step = 0
            while step < n:
                loss = model(x).mean()
                loss.backward()
                step += 1
                print(step / (time.time() - t0))  # flag
        """
    )


def test_a_meter_restarted_every_pass_of_a_loop_that_syncs_every_pass_measures_the_pass():
    # PyTorch-GAN's ETA: read and restarted once per batch, and each batch ends in the
    # print's `.item()`: a reading spans one pass between two syncs
    script = """
        Tensor = torch.cuda.FloatTensor
        generator = Generator().cuda()
        optimizer_G = torch.optim.Adam(generator.parameters())
        prev_time = time.time()
        for epoch in range(n_epochs):
            for i, imgs in enumerate(dataloader):
                real = imgs.type(Tensor)
                loss_G = generator(real).mean()
                loss_G.backward()
                optimizer_G.step()
                batches_left = n_epochs * len(dataloader) - i
                time_left = batches_left * (time.time() - prev_time)  # flag
                prev_time = time.time()
                print(PRINTED, time_left)
        """
    check(script.replace("PRINTED", "loss_G.item()").replace("  # flag", ""))
    check(script.replace("PRINTED", "epoch"))  # no sync in the pass: the reading is launch time
