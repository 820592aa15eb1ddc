"""PEP 701 (Python 3.12): f-strings that reuse their quotes, hold
backslashes and comments, and nest."""

import torch
import torch.nn.functional as F


def train(model, loader, optimizer, device, log):
    metrics = {"loss": torch.zeros((), device=device)}
    for step, (images, targets) in enumerate(loader):
        loss = F.cross_entropy(model(images.to(device)), targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        metrics["loss"] = loss.detach()
        log(f"step {step}: {metrics["loss"].item():.3f}")  # expect: GPU101


def evaluate_nested(model, loader, log):
    for images, targets in loader:
        loss = F.cross_entropy(model(images), targets)
        loss.backward()
        log(f"{"\n".join(["a", "b"])} {f"{loss.item()}"}")  # expect: GPU101


def comments_inside(model, loader, log):
    for images, targets in loader:
        loss = F.cross_entropy(model(images), targets)
        loss.backward()
        log(f"""{
            loss.item()  # expect: GPU101
        }""")
        log(f"{'it\'s'} {'é'} {len(targets)}")
