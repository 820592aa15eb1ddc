"""PEP 695 (Python 3.12): generic functions and classes, type aliases."""

import torch
import torch.nn.functional as F

type Batch = tuple[torch.Tensor, torch.Tensor]
type Pair[T] = tuple[T, T]


class Trainer[M: torch.nn.Module, O](object):
    def __init__(self, model: M, optimizer: O) -> None:
        self.model = model
        self.optimizer = optimizer

    def fit[L](self, loader: L, device, epochs: int = 1) -> None:
        for epoch in range(epochs):
            for images, targets in loader:
                images, targets = images.to(device), targets.to(device)
                loss = F.cross_entropy(self.model(images), targets)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                print(f"epoch {epoch} loss {loss.item():.4f}")  # expect: GPU101


def train[
    T: torch.nn.Module,
    *Ts,
    **P,
](model: T, loader, optimizer, device) -> T:
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        loss = F.cross_entropy(model(images), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total = loss.item()  # expect: GPU101
    return model
