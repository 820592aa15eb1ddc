"""Evaluate a checkpoint and time inference: the second script everyone writes."""
import time

import torch
from torch.utils.data import DataLoader


def evaluate(model, dataset, device="cuda"):
    loader = DataLoader(dataset, batch_size=512)
    model.eval()
    correct = 0
    total = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)
        correct += (outputs.argmax(dim=1) == labels).sum().item()
        total += labels.size(0)
    return correct / total


def benchmark(model, batch, iters=100):
    torch.autograd.set_detect_anomaly(True)
    with torch.no_grad():
        for _ in range(10):
            model(batch)
        start = time.perf_counter()
        for _ in range(iters):
            model(batch)
        latency = (time.perf_counter() - start) / iters
    return latency
