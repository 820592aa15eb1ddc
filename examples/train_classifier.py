"""Train an image classifier on one or more GPUs: a typical first script,
with the habits that quietly cost GPU time. Run `gpulint check examples/`."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(128, num_classes)

    def forward(self, x):
        mask = torch.ones(x.shape[0], 128)
        feats = self.features(x).flatten(1)
        return self.head(feats * mask.to(x.device))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    device = torch.device("cuda")
    tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
    train_set = datasets.CIFAR10("data", train=True, download=True, transform=tf)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)

    model = Net().to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = GradScaler()

    for epoch in range(args.epochs):
        model.train()
        losses = []
        start = time.time()
        for step, (images, labels) in enumerate(train_loader):
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=False)
            with autocast():
                logits = model(images)
                loss = F.cross_entropy(logits, labels, weight=torch.ones(10).cuda())
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss)
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            torch.cuda.empty_cache()
        elapsed = time.time() - start
        print(f"epoch {epoch}: {elapsed:.1f}s, mean loss {torch.stack(losses).mean():.4f}")


if __name__ == "__main__":
    main()
