"""except* (Python 3.11) around a training step."""

import torch


def train(model, loader, optimizer, device):
    total = 0.0
    for x, y in loader:
        try:
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            total += loss.item()  # expect: GPU101
        except* RuntimeError as group:
            print(group)
        except *(ValueError, TypeError):
            pass
        optimizer.zero_grad(set_to_none=True)
    return total
