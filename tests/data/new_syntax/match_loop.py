"""match statements (Python 3.10) in a training loop."""

import torch
import torch.nn.functional as F


def train(model, loader, optimizer, device, mode):
    for step, batch in enumerate(loader):
        match batch:
            case {"image": images, "label": targets}:
                pass
            case (images, targets) | [images, targets, *_]:
                pass
            case torch.Tensor() as images:
                targets = None
            case _:
                raise TypeError(type(batch))
        images = images.to(device)
        loss = F.cross_entropy(model(images), targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        match mode, step:
            case "debug", s if s % 10 == 0 and loss.item() > 0:
                print(loss.item())  # expect: GPU101
            case ("fast" | "slow") as m, _:
                print(m, loss)  # expect: GPU101
