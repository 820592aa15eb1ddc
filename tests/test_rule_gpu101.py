"""GPU101 host-sync-in-loop: what is a hot loop, what is a tensor, what is a sync."""

from __future__ import annotations

import textwrap

import pytest

from helpers import lint, src


# GPU101 covers training loops and GPU104 evaluation/inference loops with the
# same sync detection: these tests are about the detection, so they count both.
SYNC_RULES = ["GPU101", "GPU104"]


def rows(code: str):
    """Rows flagged by GPU101 or GPU104 in `code` (dedented)."""
    return sorted({f.row for f in lint(textwrap.dedent(code).lstrip("\n"), codes=SYNC_RULES)})


def messages(code: str):
    return [f.message for f in lint(textwrap.dedent(code).lstrip("\n"), codes=SYNC_RULES)]


def marked(code: str):
    """Rows carrying a `# sync` marker: the ones that must be flagged."""
    return [i for i, line in enumerate(textwrap.dedent(code).lstrip("\n").splitlines(), 1) if "# sync" in line]


def check(code: str):
    assert rows(code) == marked(code)


# --------------------------------------------------------------- realistic loops
def test_imagenet_train_meter_update():
    check(
        """
        import time
        import torch

        def train(train_loader, model, criterion, optimizer, epoch, device, args):
            losses = AverageMeter("Loss", ":.4e")
            top1 = AverageMeter("Acc@1", ":6.2f")
            model.train()
            end = time.time()
            for i, (images, target) in enumerate(train_loader):
                images = images.to(device, non_blocking=True)
                target = target.to(device, non_blocking=True)
                output = model(images)
                loss = criterion(output, target)
                acc1, acc5 = accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))  # sync
                top1.update(acc1[0], images.size(0))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if i % args.print_freq == 0:
                    progress.display(i + 1)
                    print(f"loss {loss:.4f} {acc1[0].item()}")
        """
    )


def test_running_loss_every_step_and_epoch_loop_is_not_hot():
    check(
        """
        def fit(model, loader, optimizer, criterion, epochs):
            for epoch in range(epochs):
                running_loss = 0.0
                for inputs, labels in loader:
                    inputs, labels = inputs.cuda(), labels.cuda()
                    optimizer.zero_grad()
                    loss = criterion(model(inputs), labels)
                    loss.backward()
                    optimizer.step()
                    running_loss += loss.item()  # sync
                print(f"epoch {epoch}: {running_loss / len(loader):.3f} last {loss}")
                last = loss.item()
        """
    )


def test_validation_loop_is_hot():
    check(
        """
        import torch

        def validate(model, val_loader):
            model.eval()
            correct = 0
            with torch.no_grad():
                for images, target in val_loader:
                    images, target = images.cuda(), target.cuda()
                    output = model(images)
                    acc = (output.argmax(1) == target).sum().item()  # sync
                    correct += acc
            return correct
        """
    )


def test_metrics_dict_loop_inside_batch_loop_is_hot():
    check(
        """
        def train(model, loader, optimizer, criterion, history):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                metrics = {"loss": loss, "acc": (out.argmax(1) == y).float().mean()}
                for name, value in metrics.items():
                    history[name].append(value.item())  # sync
        """
    )


def test_numpy_post_processing_is_not_a_sync():
    check(
        """
        import numpy as np

        def predict(model, loader):
            preds = []
            for x, _ in loader:
                out = model(x.cuda())
                probs = out.softmax(-1).cpu().numpy()  # sync
                preds.extend(probs.argmax(-1).tolist())
                best = float(probs.max())
                mean = np.mean(probs).item()
                print(f"{best:.3f} {mean} {probs[:2]}")
            return preds
        """
    )


def test_hf_style_model_output_loss():
    check(
        """
        def train(model, train_dataloader, optimizer, lr_scheduler, device):
            model.train()
            for step, batch in enumerate(train_dataloader):
                batch = {k: v.to(device) for k, v in batch.items()}
                outputs = model(**batch)
                loss = outputs.loss
                loss.backward()
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                logits = outputs.logits
                print(logits.argmax(-1))  # sync
                tr_loss = loss.item()  # (right after the print's read, with nothing queued since: no wait)
        """
    )


def test_while_loop_driven_by_next_data_iter():
    check(
        """
        def train(model, train_loader, optimizer, max_steps):
            data_iter = iter(train_loader)
            step = 0
            while step < max_steps:
                batch = next(data_iter)
                loss = model(batch["input_ids"].cuda(), labels=batch["labels"].cuda()).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                step += 1
                print(f"{step}: {loss:.4f}")  # sync
        """
    )


def test_while_tensor_test_in_a_training_loop():
    check(
        """
        import torch

        def fit(model, x, y, opt, tol):
            loss = torch.ones((), device="cuda")
            while loss > tol:  # sync
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        """
    )


def test_decoding_and_refinement_loops_are_not_step_loops():
    # the value decides whether to go on: the sync is the loop's purpose
    check(
        """
        import torch

        def refine(model, x, tol):
            err = torch.ones((), device="cuda")
            while err > tol:
                out = model(x)
                err = (out - x).abs().max()
            return out

        def greedy(model, ids, eos, streamer):
            for _ in range(64):
                logits = model(ids)
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                streamer.put(nxt.cpu())
                ids = torch.cat([ids, nxt], dim=-1)
                if (nxt == eos).all():
                    break
            return ids
        """
    )


def test_inference_over_stored_batches_is_a_step_loop():
    check(
        """
        import torch

        def score(model, batches, device):
            total = 0.0
            for b in batches:
                total += model(b.to(device)).sum().cpu()  # sync
            return total
        """
    )


def test_predictions_kept_for_the_host_are_not_waste():
    """Per-sample outputs appended to a list (for a scorer or a file) are
    what the host needs; the copy is the point (issue 19's host consumers)."""
    check(
        """
        import torch

        def predict(model, batches, device):
            outs = []
            for b in batches:
                outs.append(model(b.to(device)).argmax(-1).cpu())
            return outs
        """
    )


def test_lightning_training_step_is_not_a_loop():
    check(
        """
        import torch
        import torch.nn.functional as F
        import lightning as L

        class LitModel(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                logits = self(x)
                loss = F.cross_entropy(logits, y)
                self.log("acc", (logits.argmax(-1) == y).float().mean().item())
                print(f"loss {loss}", float(loss))
                if torch.isnan(loss):
                    raise ValueError("nan")
                return loss
        """
    )


def test_gan_batch_loop_around_critic_loop_is_hot():
    check(
        """
        import torch

        def train(dataloader, netD, netG, optimizer_D, optimizer_G, n_critic, epochs):
            for epoch in range(epochs):
                for i, (imgs, _) in enumerate(dataloader):
                    real = imgs.cuda()
                    for _ in range(n_critic):
                        optimizer_D.zero_grad()
                        z = torch.randn(real.size(0), 100, device="cuda")
                        loss_D = -netD(real).mean() + netD(netG(z).detach()).mean()
                        loss_D.backward()
                        optimizer_D.step()
                    optimizer_G.zero_grad()
                    loss_G = -netD(netG(z)).mean()
                    loss_G.backward()
                    optimizer_G.step()
                    print(f"[{epoch}] D {loss_D.item():.3f}")  # sync
                print(f"epoch {epoch} G {loss_G}")
        """
    )


# ------------------------------------------------------------ not every step
def test_periodic_guard_and_continue_guard():
    check(
        """
        def train(model, loader, optimizer, log_every):
            for step, (x, y) in enumerate(loader):
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
                if (step + 1) % log_every == 0:
                    print(f"{step}: {loss.item():.4f}")
                if step % 10:
                    continue
                print(loss.item())
        """
    )


def test_periodic_short_circuit_and_conditional_expression():
    check(
        """
        import torch

        def train(model, loader, optimizer, best):
            for step, x in enumerate(loader):
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                if step % 100 == 0 and loss.item() > best:
                    best = loss.item()
                if step % 100 == 0 and torch.isnan(loss):
                    break
                shown = loss.item() if step % 10 == 0 else None
                if loss.item() > best and step % 10 == 0:  # sync
                    pass
                loss = model(x.cuda()).mean()  # new work: the next read waits again
                if torch.isnan(loss) and step % 10 == 0:  # sync
                    pass
                loss = model(x.cuda()).mean()
                late = loss.item() if step > 5 else None  # sync
        """
    )


def test_once_per_loop_blocks_are_not_hot():
    check(
        """
        import torch

        def train(model, loader, optimizer, max_steps):
            for step, (x, y) in enumerate(loader):
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
                if step >= max_steps:
                    print("stopping at", loss.item())
                    break
                if torch.isnan(loss):  # sync
                    raise FloatingPointError(f"nan loss at {step}: {loss}")
                try:
                    optimizer.zero_grad()
                except RuntimeError:
                    print(loss.item())
                assert loss.dim() == 0, f"bad loss {loss}"
            else:
                print(f"finished: {loss.item()}")
        """
    )


def test_break_in_a_small_inner_loop_still_runs_every_step():
    check(
        """
        def train(model, loader, optimizer, metrics):
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
                for name, value in metrics.items():
                    if name == "loss":
                        print(value.item())  # sync
                        break
        """
    )


# ------------------------------------------------------------ tensor inference
def test_receivers_known_not_to_be_tensors():
    check(
        """
        import numpy as np

        def train(model, teacher, loader, optimizer, scheduler):
            for x, y in loader:
                x = x.cuda()
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                teacher.cpu()
                model.module.cpu() if hasattr(model, "module") else None
                arr = np.zeros(3)
                arr.item() if arr.size == 1 else arr.tolist()
                n = len(y)
                float(n), int(3.5), bool(n)
                lr = scheduler.get_last_lr()[0]
                print(f"lr {lr}", lr)
                names = ["a", "b"]
                names_list = list(names)
                if names_list:
                    pass
        """
    )


def test_item_cpu_numpy_flag_unknown_receivers_but_tolist_needs_a_tensor():
    """`.numpy()` refuses a device tensor, so only `numpy(force=True)` copies one."""
    check(
        """
        def evaluate(model, loader, meter):
            for x in loader:
                out = model(x.cuda())
                score = meter.compute()
                score.item()  # sync
                out = model(x.cuda())
                meter.state().cpu()  # sync
                out = model(x.cuda())
                meter.values().numpy(force=True)  # sync
                out = model(x.cuda())
                meter.values().numpy()
                meter.values().tolist()
                float(score)
                if score:
                    pass
        """
    )


def test_rebinding_is_seen_in_order():
    """`loss = loss.item()` reads the tensor; after it, `loss` is a number."""
    check(
        """
        def train(model, loader, optimizer, criterion):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                loss = loss.item()  # sync
                total += loss
                print(f"loss {loss:.3f}", float(loss))
        """
    )


def test_host_batches_and_cpu_factories():
    check(
        """
        import torch
        from torch.utils.data import DataLoader

        def evaluate(model, dataset, device):
            loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
            labels = []
            for images, target in loader:
                out = model(images.to(device))
                labels.extend(target.tolist())
                labels.append(target.numpy())
                print(f"first label {target[0]}")
                drop = torch.rand([])
                if drop < 0.1:
                    continue
                scale = torch.tensor([2.0, 3.0])
                print(scale.tolist(), float(scale.sum()))
                moved = target.to(device, non_blocking=True)  # (a blocking copy would wait itself)
                print(moved.tolist())  # sync
        """
    )


def test_batches_of_a_prepared_loader_are_on_the_device():
    check(
        """
        from accelerate import Accelerator

        def evaluate(model, eval_dataloader):
            accelerator = Accelerator()
            model, eval_dataloader = accelerator.prepare(model, eval_dataloader)
            for batch in eval_dataloader:
                out = model(**batch)
                print(batch["labels"].tolist())  # sync
        """
    )


def test_truth_tests():
    check(
        """
        import torch

        def train(model, loader, optimizer, args):
            for x, y in loader:
                out = model(x.cuda())
                loss = (out - y.cuda()).pow(2).mean()
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if not torch.isfinite(grad_norm):  # sync
                    continue
                out = model(x.cuda())  # new work: the next read waits again
                if args.check_nan and torch.isnan(loss):  # sync
                    continue
                out = model(x.cuda())
                if loss > 100:  # sync
                    print("spike")
                if loss > 1000:  # the test just above has waited
                    print("spike")
                if loss is None or "loss" in args.skip or loss == "none":
                    continue
                if out.shape[0] != y.shape[0]:
                    continue
                optimizer.step()
        """
    )


def test_comparisons_and_booleans_of_tensors_as_conditions():
    check(
        """
        import torch

        def train(model, loader, optimizer, best, device):
            done = torch.zeros(8, dtype=torch.bool, device=device)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                pred = model(x)
                loss = torch.nn.functional.cross_entropy(pred, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if loss < best:  # sync
                    best = loss.detach()
                pred = model(x)  # new work before each test below: each waits again
                if 0.0 < loss < 10.0:  # sync
                    pass
                pred = model(x)
                if (pred.argmax(1) == y).all():  # sync
                    pass
                pred = model(x)
                if not (pred.argmax(1) == y).any() or x.size(0) < 2:  # sync
                    pass
                pred = model(x)
                if pred.argmax(1).eq(y).sum() > x.size(0) // 2:  # sync
                    pass
                if x.size(0) < 2 or x.shape[1] != 3 or x.dim() == 4:
                    pass
                pred = model(x)
                if loss.item() < 0.1:  # sync
                    pass
        """
    )


def test_while_not_all_in_a_step_loop():
    check(
        """
        import torch

        def rollout(policy, env, optimizer, n, device):
            obs = env.reset()
            done = torch.zeros(n, dtype=torch.bool, device=device)
            while not done.all():  # sync
                loss, obs, step_done = policy(obs)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                done = done | step_done
        """
    )


def test_assert_conditional_expression_and_comparing_builtins():
    check(
        """
        import torch

        def train(model, loader, optimizer, device):
            lowest = float("inf")
            longest = 0
            for step, (x, y) in enumerate(loader):
                x, y = x.to(device), y.to(device)
                loss = torch.nn.functional.mse_loss(model(x), y)
                assert torch.isfinite(loss), f"diverged: {loss}"  # sync
                assert x.shape == y.shape, f"shapes {x.shape} {y.shape}"
                loss.backward()
                optimizer.step()
                scale = 0.5 if loss > 2.0 else 1.0  # sync
                tag = "big" if x.size(0) > 64 else "small"
                lowest = min(lowest, loss)  # sync
                longest = max(longest, x.size(0), key=None)
                longest = max(longest, len(x))
                shown = loss.item() if step % 10 == 0 else None
                flag = (loss > 1.0) if step % 10 == 0 else None
        """
    )


def test_text_conversions_of_tensors():
    check(
        """
        import torch

        def train(model, loader, optimizer, writer, device):
            for step, (x, y) in enumerate(loader):
                loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
                writer.add_text("loss", str(loss))  # sync
                writer.add_text("loss", repr(loss))  # sync
                writer.add_text("shape", str(x.shape) + repr(x.device) + str(step))
                line = "loss %(loss).3f" % {"loss": loss}  # sync
                line = "step %(step)d" % {"step": step}
                print("loss " + str(loss))  # sync
        """
    )


def test_iterating_a_cuda_tensor_is_not_a_sync():
    # `for row in t` takes views (`t.unbind(0)`): nothing is read on the host
    # until an element is (`row.item()`, reported as an element read)
    check(
        """
        import torch

        def train(model, loader, optimizer, device):
            for x, y in loader:
                out = model(x.to(device))
                loss = torch.nn.functional.mse_loss(out, y.to(device))
                loss.backward()
                optimizer.step()
                for row in out:
                    row.mul_(0.5)
                rows = [r.sum() for r in out]
        """
    )


def test_string_like_names_and_flags_are_not_tensors():
    check(
        """
        def val(model, dataloader, compute_loss=None, losses=("boxes", "masks")):
            for im, targets in dataloader:
                out = model(im.cuda())
                if compute_loss:
                    pass
                for loss in losses:
                    if loss == "masks":
                        continue
                if out.sum():  # sync
                    pass
        """
    )


def test_local_helpers_named_like_models_are_not_models():
    check(
        """
        import importlib

        def model_type_to_module_name(model_type):
            return model_type.replace("-", "_")

        def load_all(mapping):
            for model_type, map_name in mapping.items():
                module_name = model_type_to_module_name(model_type)
                module = importlib.import_module(f".{module_name}", "transformers.models")
        """
    )


def test_formatting_forms():
    check(
        """
        def train(model, loader, optimizer, pbar, mloss):
            for i, (imgs, targets) in enumerate(loader):
                loss, loss_items = model(imgs.cuda(), targets.cuda())
                loss.backward()
                optimizer.step()
                mloss = (mloss * i + loss_items) / (i + 1)
                pbar.set_description(("%10s" * 2 + "%10.4g" * 3) % (f"{i}", "mem", *mloss))  # sync
                print("loss %.4f" % loss)  # sync
                print("loss {:.4f}".format(loss))  # sync
                print("step %d" % i, "{}".format(i), f"{i}")
        """
    )


def test_nothing_outside_loops_or_in_loops_without_triggers():
    check(
        """
        import torch

        def summarize(model, x, values):
            out = model(x)
            print(out.item(), float(out))
            for v in values:
                print(v.item())
            stats = torch.stack(values)
            for i in range(3):
                if stats[i] > 0:
                    print(stats[i].tolist())
        """
    )


def test_a_file_that_never_uses_an_accelerator_is_not_flagged():
    code = """
        import torch

        def fit(model, loader, optimizer):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                print(loss.item())
        """
    assert rows(code) == []
    assert rows(code.replace("model(x)", "model(x.to(dev))")) == [8]


def test_a_read_right_after_a_read_is_not_flagged_again():
    # the loop has just waited for the GPU: the second read waits for a kernel or two
    check(
        """
        def train(model, loader, optimizer, n):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                a = loss.item()  # sync
                b = (loss * 2).item()
                shown = loss / n
                text = f"{shown}"  # (two statements after a read, with only a division in between)
                value = loss.item() / n
                print(f"{value}")
                c = model(x.cuda()).sum().item()  # sync
                optimizer.step()
                shown = loss / n
                text = f"{shown}"  # sync
                value = loss.item() / n  # (right after formatting `shown`, a read: nothing queued since)
                print(f"{value}")
        """
    )


def test_later_reads_of_one_statement_follow_its_first_read():
    # ppo-async style logging: one read syncs, the rest of the statement only waits for a kernel or two
    check(
        """
        def train(model, loader, optimizer, metrics, log, f, n):
            for x in loader:
                loss = model(x.cuda()).mean()
                grad_norm = clip(loss.backward())
                optimizer.step()
                metrics.update(
                    {
                        "loss": loss.item(),  # sync
                        "grad_norm": grad_norm.item(),
                        "scaled": (loss * n).item(),
                        "shown": f"{loss}",
                    }
                )
                optimizer.step()
                log(
                    loss.item(),  # sync
                    grad_norm.item(),
                    step=(loss * 2).item(),
                )
                optimizer.step()
                v = f(loss.item()) + (  # sync
                    grad_norm.item()
                )
                optimizer.step()
                w = (
                    grad_norm.item()  # the test, read first, is the sync
                    if loss.item() > 0  # sync
                    else 0
                )
                optimizer.step()
                print(
                    loss.item(),  # sync
                    grad_norm if n else grad_norm.item(),
                    loss,
                )
        """
    )


def test_reads_that_may_not_run_are_not_a_first_read():
    check(
        """
        def train(model, loader, optimizer, c, ts):
            for x in loader:
                loss = model(x.cuda()).mean()
                grad_norm = clip(loss.backward())
                optimizer.step()
                v = (
                    loss.item()  # sync
                    if c
                    else grad_norm.item()  # sync
                )
                optimizer.step()
                v = (c or loss.item()) + (  # sync
                    grad_norm.item()  # sync
                )
                optimizer.step()
                v = (c and loss.item(), (  # sync
                    grad_norm.item()  # sync
                ))
                optimizer.step()
                v = (c < 2 < loss.item()) + (  # sync
                    grad_norm.item()  # sync
                )
                optimizer.step()
                v = (lambda: loss.item(), (
                    grad_norm.item()  # sync
                ))
                optimizer.step()
                v = ([t.item() for t in ts], (  # sync
                    grad_norm.item()  # sync
                ))
                optimizer.step()
                v = (loss.item(), [  # sync
                    t.item() for t in ts  # sync
                ])
        """
    )


def test_a_short_circuit_operand_runs_only_after_the_first():
    # `loss < 2` is tested only once `loss.item() > 0` has been read: it follows that read
    code = """
        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                if loss.item() > 0 and loss < 2:
                    pass
                optimizer.step()
                if loss < 2 and loss.item() > 0:
                    pass
        """
    found = messages(code)
    assert found[0] == "`loss.item()` in a hot loop waits for the GPU every step (host-device sync)"
    # the other way round, the test reads first (and `.item()` as well: only a method read counts as a first read)
    assert found[1].startswith("`if loss < 2 and loss.item() > 0:` takes a tensor's truth value")
    assert found[2:] == [found[0]]


def test_a_read_before_work_queued_in_the_same_statement_does_not_count():
    check(
        """
        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                print(
                    loss.item(),  # sync
                    model(x.cuda()).sum().item(),  # sync
                )
        """
    )


def test_an_f_string_formats_each_part_in_turn():
    check(
        """
        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                a = f"{loss} {loss.item()}"  # sync
                optimizer.step()
                b = f"{loss.item()} {loss}"  # sync
                optimizer.step()
                c = "%s %s" % (loss, loss.item())  # sync
        """
    )
    # `a` formats `loss` before it reads `loss.item()`: the formatting is a sync
    # (and the read, as only a method read counts as a first read); `b` reads first
    code = textwrap.dedent(
        """
        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                a = f"{loss} {loss.item()}"
                optimizer.step()
                b = f"{loss.item()} {loss}"
        """
    ).lstrip("\n")
    found = [(f.row, f.message.split(" ")[0]) for f in lint(code, codes=["GPU101"])]
    assert found == [(6, "formatting"), (6, "`loss.item()`"), (8, "`loss.item()`")]


def test_a_read_after_a_compound_statement_that_read_on_every_path():
    check(
        """
        def train(model, loader, optimizer, c, log):
            for x in loader:
                loss = model(x.cuda()).mean()
                grad_norm = clip(loss.backward())
                optimizer.step()
                if c:
                    v = loss.item()  # sync
                elif c > 1:
                    v = grad_norm.item()  # sync
                else:
                    continue
                w = grad_norm.item()
                optimizer.step()
                try:
                    v = loss.item()  # sync
                except ValueError:
                    v = grad_norm.item()  # (an except handler is not a hot path)
                w = grad_norm.item()
                optimizer.step()
                with log:
                    v = loss.item()  # sync
                w = grad_norm.item()
                optimizer.step()
                if c:
                    v = loss.item()  # sync
                w = grad_norm.item()  # sync
                optimizer.step()
                if c:
                    v = loss.item()  # sync
                else:
                    v = 0.0
                w = grad_norm.item()  # sync
                optimizer.step()
                try:
                    v = loss.item()  # sync
                except ValueError:
                    pass
                w = grad_norm.item()  # sync
                optimizer.step()
                if c:
                    v = loss.item()  # sync
                    log(v)
                else:
                    v = grad_norm.item()  # sync
                w = grad_norm.item()  # sync
                optimizer.step()
                for t in x:
                    v = loss.item()  # sync
                w = grad_norm.item()  # sync
        """
    )


def test_a_read_several_statements_after_a_read_with_small_ops_in_between():
    check(
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader, optimizer, log):
            for x, y in loader:
                out = model(x.cuda())
                loss = F.mse_loss(out, y.cuda())
                loss.backward()
                optimizer.step()
                log(loss.item())  # sync
                err = torch.clamp(out - y.cuda(), -1, 1).abs()
                log(err.mean().item())
                m = err.mean()
                s = err.std()
                log(m.item(), s.item())
        """
    )


def test_gpu_work_in_between_ends_the_synced_state():
    code = """
        import torch

        def train(model, loader, optimizer, scaler, log):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                log(loss.item())  # sync
                aux = torch.clamp(loss, 0, 1)
                {work}
                log(aux.item())  # sync
        """
    for work in ("out = model(x.cuda())", "aux.backward()", "scaler.step(optimizer)"):
        check(code.replace("{work}", work))


def test_the_synced_state_does_not_cross_a_loop_boundary_or_a_nested_loop_with_model_work():
    check(
        """
        def train(model, loader, optimizer, log, ts):
            for x in loader:
                v = loss.item()  # sync (the end of the previous step does not count)
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                a = loss.item()  # sync
                for t in ts:
                    b = loss.item()  # a small per-item loop after a read: each pass waits for nothing new
                c = loss.item()  # after a loop whose every pass reads, and no model work: nothing new
                for t in ts:
                    f = model(t).sum().item()  # sync (model work in the nested loop)
                for t in ts:
                    d = (loss * t).mean()
                e = loss.item()  # sync
                w = loss.item()
        """
    )


def test_the_synced_state_reaches_into_if_and_with_blocks_and_past_them():
    check(
        """
        import torch

        def train(model, loader, optimizer, c, log):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                a = loss.item()  # sync
                if c:
                    v = loss * 2
                else:
                    v = torch.clamp(loss, 0, 1)
                b = v.item()
                with torch.no_grad():
                    w = v.mean()
                    log(w.item())
                optimizer.step()
                if loss.item() > 0:  # sync
                    log(v.item())
                optimizer.step()
                if c:
                    out = model(x.cuda())
                d = loss.item()  # sync
                optimizer.step()
                with torch.no_grad():
                    e = loss.item()  # sync
                if model(x.cuda()).sum() > 0:  # sync
                    f = loss.item()  # sync (the test queued model work before it)
        """
    )


def test_a_sync_on_the_cuda_branch_of_a_device_test_covers_what_follows():
    """llm.c: `if device == "mps": torch.mps.synchronize()` / `elif device ==
    "cuda": torch.cuda.synchronize()` to time the step, then the log formats
    the gradient norm. Where the code runs on CUDA it has just synchronized;
    elsewhere nothing waits on CUDA. A sync under any other test does not
    cover the read."""
    check(
        """
        import time
        import torch

        def train(model, loader, optimizer, device, verbose):
            for x in loader:
                loss = model(x.to(device)).mean()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                if device == "mps":
                    torch.mps.synchronize()
                elif device == "cuda":
                    torch.cuda.synchronize()
                t1 = time.time()
                print(f"norm {norm:.4f}")
                optimizer.step()
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                print(f"norm {norm:.4f}")
                optimizer.step()
                if verbose:
                    torch.cuda.synchronize()
                print(f"norm {norm:.4f}")  # sync
        """
    )


def test_a_read_known_not_to_wait_for_the_gpu_is_no_first_read():
    check(
        """
        import numpy as np

        def train(model, loader, optimizer, log):
            for x, y in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                log(y.tolist())
                z = np.zeros(3).item()
                log(loss.item())  # sync
        """
    )


def test_ppo_logging_reads_after_the_first():
    # stable-baselines3's PPO.train: only the first read of the step syncs
    check(
        """
        import torch as th
        import torch.nn.functional as F

        def train(self, clip_range, clip_range_vf, pg_losses, value_losses, entropy_losses, approx_kl_divs):
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions.to(self.device)
                values, log_prob, entropy = self.policy.evaluate_actions(rollout_data.observations, actions)
                ratio = th.exp(log_prob - rollout_data.old_log_prob)
                policy_loss = -th.min(ratio, th.clamp(ratio, 1 - clip_range, 1 + clip_range)).mean()
                pg_losses.append(policy_loss.item())  # sync
                clip_fraction = th.mean((th.abs(ratio - 1) > clip_range).float()).item()
                if clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = rollout_data.old_values + th.clamp(values - rollout_data.old_values, -1, 1)
                value_loss = F.mse_loss(rollout_data.returns, values_pred)
                value_losses.append(value_loss.item())
                if entropy is None:
                    entropy_loss = -th.mean(-log_prob)
                else:
                    entropy_loss = -th.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = policy_loss + 0.01 * entropy_loss + 0.5 * value_loss
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
                    approx_kl_divs.append(approx_kl_div)
                self.policy.optimizer.zero_grad()
                loss.backward()
                self.policy.optimizer.step()
        """
    )


@pytest.mark.parametrize(
    "source, reads",
    [
        ("a = f(x.item()) + y.item()", [("x.item()", True), ("y.item()", True)]),
        ("a = x.item() if c else y.item()", [("x.item()", False), ("y.item()", False)]),
        ("a = y.item() if x.item() else 0", [("x.item()", True), ("y.item()", False)]),
        ("d[k.item()] = v.item()", [("v.item()", True), ("k.item()", True)]),  # value before targets
        ("f({k.item(): v.item(), j.item(): w.item()})", [("k.item()", True), ("v.item()", True),
                                                         ("j.item()", True), ("w.item()", True)]),
        ("f(a.item(), *b.tolist(), k=c.item())", [("a.item()", True), ("b.tolist()", True), ("c.item()", True)]),
        ("assert a.item(), b.item()", [("a.item()", True), ("b.item()", False)]),
        ("x = [t.item() for t in a.tolist()]", [("a.tolist()", True)]),
        ("x = lambda t=a.item(): t.item()", [("a.item()", True)]),
        ("if a.item() and b.item():\n    c.item()", [("a.item()", True), ("b.item()", False)]),
    ],
)
def test_evaluation_order_of_a_statement(source, reads):
    import ast

    from gpulint.model.control.eval_order import evaluation_order

    stmt = ast.parse(source).body[0]
    got = [
        (ast.get_source_segment(source, n), sure)
        for n, sure in evaluation_order(stmt)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("item", "tolist")
    ]
    assert got == reads


def test_message_names_the_call():
    msgs = messages(
        """
        def train(model, loader, optimizer):
            for x in loader:
                x = x.cuda(non_blocking=True)
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                print(loss.item())
                v = model(x).softmax(dim=-1).permute(0, 2, 1).contiguous().float().mean(dim=0).cpu()
        """
    )
    assert msgs[0] == "`loss.item()` in a hot loop waits for the GPU every step (host-device sync)"
    # a long chain keeps its root and its last links
    assert msgs[1].startswith("`model(...)....contiguous().float().mean(...).cpu()` in a hot loop")


@pytest.mark.parametrize(
    "line",
    [
        "x.item(1)",  # not Tensor.item
        "x.cpu(0)",
        "x.tolist(1)",
        "float(x, 1)",
    ],
)
def test_calls_that_are_not_the_tensor_methods(line):
    code = f"""
        def train(model, loader, optimizer):
            for x in loader:
                x = x.cuda()
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                {line}
                loss.cpu()
        """
    # only the control line (the real `.cpu()`) is flagged
    assert rows(code) == [8]


@pytest.mark.parametrize("path", ["tests/test_loop.py", "scripts/test_data_loop.py", "pkg/loop_test.py"])
def test_test_files_are_not_hot_paths(path):
    # (outside a test folder, a file named like a test is one when it uses a test framework)
    code = textwrap.dedent(
        """
        import pytest
        import torch

        def check_training(model, loader, optimizer, accelerator):
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                loss = model(batch).mean()
                accelerator.backward(loss)
                optimizer.step()
                print(f"loss {loss.item()}")
        """
    )
    assert [f.code for f in lint(code, codes=["GPU101"], path=path)] == []
    # the same loop in a training script is flagged
    assert [f.code for f in lint(code, codes=["GPU101"], path="train.py")] == ["GPU101"]


# ------------------------------------------- reading each element of a tensor
ELEMENT_HEADER = """
import torch
import torch.nn as nn


class Router(nn.Module):
    def forward(self, x, routing):
        hit = torch.bincount(routing.flatten().cuda()).nonzero().flatten()
"""


def element_lint(body: str):
    code = ELEMENT_HEADER + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n        return x\n"
    return lint(code.lstrip("\n"), codes=SYNC_RULES)


def element_findings(body: str):
    """(code, row within `body`) of each finding."""
    return [(f.code, f.row - ELEMENT_HEADER.lstrip("\n").count("\n")) for f in element_lint(body)]


@pytest.mark.parametrize(
    "body",
    [
        "for e in hit:\n    x = x + e.item()",
        "for e in hit:\n    x = x + int(e)",
        "for e in hit:\n    x = x + float(e)",
        "for e in hit:\n    x = x[: e.tolist()]",
        "for i, e in enumerate(hit):\n    x = x + e.item()",
        "for e in hit:\n    e = e.item()\n    x = x + e",
        "for e in hit:\n    for k in range(3):\n        x = x + e.item()",
    ],
)
def test_each_element_read_in_a_loop_over_a_gpu_tensor(body):
    [finding] = element_lint(body)
    assert finding.code == "GPU101"
    assert "reads each element of the tensor `hit` on the host" in finding.message
    assert "`.tolist()`" in finding.message


@pytest.mark.parametrize(
    "body",
    [
        "for e in hit.tolist():\n    x = x + e",  # one read before the loop
        "for e in torch.arange(4):\n    x = x + e.item()",  # built on the CPU
        "for e in hit:\n    x = x + e.cpu()",  # a copy of an element, not a value read for the host
        "for e in hit:\n    e = hit[0]\n    x = x + e.item()",  # rebound before the read
        "for e in hit:\n    for k in range(3):\n        x = x + e.item()\n        e = hit[k]",  # rebound in the inner loop
        "for i, e in enumerate(hit):\n    x = x + i",  # the index of enumerate is a Python int
        "for e in hit:\n    pass\nelse:\n    x = x + e.item()",  # after the loop, once
        "for e in hit:\n    x = x + sum(e.item() for e in x)",  # the comprehension's own name
        "for e in routing:\n    x = x + e.item()",  # not known to be a tensor
        "for e in hit:\n    a = x.sum().item()\n    x = x + e.item()",  # right after another read
    ],
)
def test_element_reads_left_alone(body):
    assert element_findings(body) == []


def test_element_reads_in_one_statement_are_reported_once():
    assert element_findings("for e in hit:\n    x = x + (e.item() if x.dim() else e.item() + 1)") == [("GPU101", 2)]


def test_element_reads_outside_model_code_or_in_one_off_code():
    prep = """
    import torch

    def to_masks(seg):
        present = torch.unique(seg.cuda())
        return [seg == label.item() for label in present], [int(v) for v in present if v]

    def labels_of(seg):
        for label in torch.unique(seg.cuda()):
            yield label.item()
    """
    assert rows(prep) == []
    once = """
    import torch
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self, sizes):
            super().__init__()
            for s in torch.tensor(sizes).cuda():
                self.add_module(f"m{s.item()}", nn.Linear(2, 2))

        def forward(self, x, sizes):
            for s in torch.tensor(sizes).cuda():
                x = x[: s.item()]  # sync
            return x
    """
    check(once)


def test_element_reads_are_not_gpu104s():
    code = """
    import torch

    def evaluate(model, loader):
        for images, labels in loader:
            preds = model(images.cuda()).argmax(1)
            for p in preds:
                print(p.item())
    """
    assert [f.code for f in lint(textwrap.dedent(code), codes=SYNC_RULES)] == ["GPU104"]


def test_a_read_past_a_warm_up_threshold_in_a_per_step_helper_runs_every_step():
    # ParallelWaveGAN's Trainer: the discriminator's loss is read once the step counter
    # passes its start step; a read under an option stays unflagged (it may be off)
    check("""
        import torch

        class Trainer:
            def _train_epoch(self):
                for batch in self.data_loader:
                    self._train_step(batch)

            def _train_step(self, batch):
                y = batch.cuda()
                loss = self.model(y).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.steps += 1
                if self.steps > self.config["discriminator_train_start_steps"]:
                    real_loss = self.disc(y).mean()
                    self.total["real_loss"] += real_loss.item()  # sync
                if self.config["use_mel_loss"]:
                    mel_loss = self.mel(y).mean()
                    self.total["mel_loss"] += mel_loss.item()
    """)


def test_tensorboard_add_scalar_of_a_tensor_reads_it_on_the_host():
    check(
        """
        def train(model, loader, optimizer, writer, log_every):
            for step, (x, y) in enumerate(loader):
                loss = model(x.cuda(), y.cuda())
                writer.add_scalar("loss", loss, global_step=step)  # sync
                loss.backward()
                optimizer.step()
                writer.add_scalar("lr", optimizer.param_groups[0]["lr"], step)
                writer.add_scalar("step", step, step)
                if step % log_every == 0:
                    writer.add_scalar(tag="loss", scalar_value=loss.detach(), global_step=step)
        """
    )


def test_a_per_parameter_loop_after_a_read_still_syncs_on_each_parameter():
    # hundreds of round trips, each its own wait (guided-diffusion's norm logging)
    check(
        """
        def train(model, loader, optimizer, log):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                v = loss.item()  # sync
                for p in model.parameters():
                    log(p.grad.norm().item())  # sync
                optimizer.step()
        """
    )


def test_a_field_of_what_every_caller_hands_is_not_known_to_be_a_tensor():
    """`log_step(batch, out)` is handed a batch moved to the device and a
    model's output on every step: `out` is a tensor (formatting it reads it),
    but a field of the handed batch (sam2's `batch.dict_key`, a str) is not
    known to be one."""
    code = src("""
        import torch

        def log_step(batch, out):
            key = batch.dict_key
            print(f"{key}")
            print(f"{out}")

        def train(model, loader, opt):
            for batch in loader:
                batch = batch.to("cuda")
                out = model(batch)
                loss = out.mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                log_step(batch, out)
    """)
    assert [f.row for f in lint(code, codes=["GPU101"])] == [6]
