"""Fixable findings in a file of Python 3.12 syntax: `gpulint fix` must work."""

import torch


def step[T: torch.optim.Optimizer](opt: T, model, batch: dict[str, torch.Tensor], device) -> None:
    match batch:
        case {"x": x}:
            opt.zero_grad(set_to_none=False)  # expect: GPU302
    with torch.cuda.amp.autocast():  # expect: GPU401
        print(f"{batch["x"].shape}")
