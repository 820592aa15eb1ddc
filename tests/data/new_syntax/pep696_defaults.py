"""PEP 696 (Python 3.13): type parameter defaults."""

import torch


class Loop[M: torch.nn.Module = torch.nn.Linear, *Ts = *tuple[int, ...]]:
    def run(self, model: M, loader, optimizer, device):
        losses = []
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())  # expect: GPU101
        return losses


def first[T = int, **P = [int, str]](xs: list[T]) -> T:
    return xs[0]


type Table[K = str, V = torch.Tensor] = dict[K, V]
