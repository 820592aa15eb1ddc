"""GPU402 step-inside-autocast: which regions count as autocast, which calls are steps."""

from __future__ import annotations

from helpers import check_marked, src

CODE = "GPU402"


def check(code: str):
    check_marked(src(code), CODE, "snippet.py", marker="# inside")


def test_every_autocast_spelling():
    check(
        """
        import torch
        from torch.cuda.amp import autocast
        from torch import autocast as ac

        with torch.autocast("cuda"):
            loss.backward()  # inside
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            optimizer.step()  # inside
        with torch.cuda.amp.autocast():
            scaler.step(optimizer)  # inside
        with autocast():
            accelerator.backward(loss)  # inside
        with ac(device_type="cuda"), open("log.txt") as fh:
            torch.autograd.backward(loss)  # inside
        """
    )


def test_scheduler_and_other_steps_are_not_optimizer_steps():
    check(
        """
        import torch
        with torch.autocast("cuda"):
            scheduler.step()
            lr_scheduler.step()
            noise_scheduler.step(model_output, t, sample)
            env.step(action)
            scaler.update()
            optimizer.zero_grad()
        """
    )


def test_disabled_autocast_region_is_fine():
    check(
        """
        import torch
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            with torch.autocast("cuda", enabled=False):
                out.float().sum().backward()
            with torch.cuda.amp.autocast(False):
                optimizer.step()
        with torch.autocast("cuda", enabled=use_amp):
            loss.backward()  # inside
        """
    )


def test_decorated_functions_and_nested_defs():
    check(
        """
        import torch

        @torch.autocast("cuda", dtype=torch.bfloat16)
        def train_step(model, batch, optimizer):
            loss = model(batch).mean()
            loss.backward()  # inside
            optimizer.step()  # inside

            def closure():
                loss.backward()

            return closure

        @torch.autocast("cuda", enabled=False)
        def fp32_step(loss):
            loss.backward()

        with torch.autocast("cuda"):
            def later(loss):
                loss.backward()
            hook = lambda l: l.backward()
        """
    )


def test_backward_after_the_block():
    check(
        """
        import torch
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """
    )
