"""Workload text shared by the rules' `bench` programs (see `Bench` in gpulint/rule.py).

Each constant is flush-left Python source ending in a newline, so a rule can
concatenate it with its own (dedented) text. The bench programs were measured
on the GPU as they are: changing a constant changes every program that uses it.
It sits below the rules, beside the framework, so every rule may use it.
"""

from __future__ import annotations

LANGUAGE_MODEL = """\
import torch
from torch import nn
import torch.nn.functional as F

# a GPT-2-small-sized causal language model (124M parameters), 8 sequences of 512 tokens per step
vocab, width, depth, heads, batch, seq = (128, 32, 2, 2, 2, 16) if SMALL else (50304, 768, 12, 12, 8, 512)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(seq, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied, GPT-2 style
        nn.init.normal_(self.embed.weight, std=0.02)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.size(1), device=tokens.device)
        x = self.embed(tokens) + self.pos[: tokens.size(1)]
        return self.head(self.norm(self.blocks(x, mask=mask, is_causal=True)))


model = LanguageModel().to(DEVICE)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
train_batches = [torch.randint(0, vocab, (batch, seq + 1), device=DEVICE) for _ in range(8)]
"""
"""Setup: a GPT-2-small-sized causal LM (124M parameters) with AdamW and 8 batches of
8x513 tokens on the device (`model`, `optimizer`, `train_batches`, `F`)."""

LM_TRAIN_LOOP = """\
def run(steps):
    model.train()
    for step in range(steps):
        tokens = train_batches[step % len(train_batches)]
        optimizer.zero_grad()
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        optimizer.step()
    return loss.detach()
"""
"""`run(steps)`: the plain bf16-autocast next-token training step of LANGUAGE_MODEL."""

RESNET18 = """\
# a ResNet-18-sized convolutional network (VGG-style stages) on ImageNet-sized batches
batch, size, width, classes = (2, 32, 8, 10) if SMALL else (256, 224, 64, 1000)


def stage(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


model = nn.Sequential(
    nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1),
    stage(width, width, 1), stage(width, 2 * width, 2), stage(2 * width, 4 * width, 2), stage(4 * width, 8 * width, 2),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
).to(DEVICE, memory_format=torch.channels_last)
"""
"""Sizes (`batch, size, width, classes`) and a ResNet-18-sized conv net `model` in
channels_last on the device; needs `torch` and `nn` imported first."""

_CONV_BLOCK = """\
def block(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
"""

RESNET_CLASSIFIER = _CONV_BLOCK + """

model = nn.Sequential(
    block(3, width), block(width, width),
    block(width, 2 * width, 2), block(2 * width, 2 * width),
    block(2 * width, 4 * width, 2), block(4 * width, 4 * width),
    block(4 * width, 8 * width, 2), block(8 * width, 8 * width),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
).to(DEVICE)
"""
"""A ResNet-style classifier `model` (eight conv-BN-ReLU blocks, no stem) on the device,
for small crops; needs `nn`, `width` and `classes` defined first."""

RESNET_CLASSIFIER_WITH_STEM = _CONV_BLOCK + """

model = nn.Sequential(
    nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1),
    block(width, width), block(width, width),
    block(width, 2 * width, 2), block(2 * width, 2 * width),
    block(2 * width, 4 * width, 2), block(4 * width, 4 * width),
    block(4 * width, 8 * width, 2), block(8 * width, 8 * width),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
).to(DEVICE)
"""
"""RESNET_CLASSIFIER with an ImageNet stem (7x7 stride-2 conv and max pool), for
224x224 inputs; needs `nn`, `width` and `classes` defined first."""

HOST_PIPELINE_TRAINING = """\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ResNet-style classifier trained on 64x64 crops, batch 256; the input pipeline
# (random crop, flip, normalise) runs on the host with numpy, in the training loop
batch_size, size, width, classes, n_images = (8, 16, 8, 10, 32) if SMALL else (256, 64, 128, 1000, 4096)
rng = np.random.default_rng(0)
train_images = rng.integers(0, 256, size=(n_images, size + 8, size + 8, 3), dtype=np.uint8)
train_targets = rng.integers(0, classes, size=n_images)
mean = np.array([123.7, 116.3, 103.5], dtype=np.float32)
std = np.array([58.4, 57.1, 57.4], dtype=np.float32)


def next_batch():
    idx = rng.integers(0, n_images, size=batch_size)
    top, left = rng.integers(0, 9, size=2)
    crops = train_images[idx, top : top + size, left : left + size]
    if rng.random() < 0.5:
        crops = crops[:, :, ::-1]
    x = np.ascontiguousarray(((crops - mean) / std).transpose(0, 3, 1, 2), dtype=np.float32)
    x, y = torch.from_numpy(x), torch.from_numpy(train_targets[idx])
    if torch.cuda.is_available():
        x, y = x.pin_memory(), y.pin_memory()
    return x, y


""" + RESNET_CLASSIFIER + """\
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
"""
"""Setup: RESNET_CLASSIFIER with SGD, fed by `next_batch()`, which crops, flips and
normalises a batch of 256 64x64 images on the host with numpy (pinned on CUDA)."""

_LOADER_TRAIN_LOOP = """\
def run(steps):
    step = 0
    while step < steps:
        for images, labels in loader:
{copy}
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                break
    return loss.detach()
"""

LOADER_TRAIN_LOOP = _LOADER_TRAIN_LOOP.format(
    copy="            images, labels = images.to(DEVICE), labels.to(DEVICE)"
)
"""`run(steps)`: classifier training steps over `loader` (a DataLoader), restarting it
at the end of an epoch; copies each batch with a plain `.to(DEVICE)`."""

LOADER_TRAIN_LOOP_NON_BLOCKING = _LOADER_TRAIN_LOOP.format(
    copy="            images = images.to(DEVICE, non_blocking=True)\n"
    "            labels = labels.to(DEVICE, non_blocking=True)"
)
"""LOADER_TRAIN_LOOP copying each batch with `.to(DEVICE, non_blocking=True)`."""

IN_MEMORY_TRAIN_LOOP = """\
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def run(steps):
    global step
    for _ in range(steps):
        images, labels = inputs[step % n_batches], targets[step % n_batches]
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
    return loss.detach()
"""
"""SGD and `run(steps)`: classifier training steps over the batches `inputs`/`targets`
already on the device, counting a global `step`; `model` is whatever wraps the net."""

GPT_SIZES = """\
# GPT-style causal language model (8 layers, d_model 768, about 90M parameters)
# trained on 16 sequences of 512 tokens; synthetic tokens already on the GPU
vocab, dim, heads, layers, batch_size, seq_len = (100, 32, 4, 2, 2, 16) if SMALL else (32000, 768, 12, 8, 16, 512)
n_batches = 4
"""
"""The sizes of the GPT workload."""

GPT_TOKENS = """\
tokens = torch.randint(0, vocab, (n_batches, batch_size, seq_len + 1), device=DEVICE)
"""
"""The GPT workload's device-resident `tokens` batches; needs `torch` and `GPT_SIZES` first."""

GPT_MODEL = """\
class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        n = idx.size(1)
        positions = torch.arange(n, device=idx.device)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos(positions.to(idx.device))
        return self.head(self.blocks(x, mask=mask.to(idx.device), is_causal=True))


"""
"""A GPT-style `nn.Module` (token and position embeddings, a pre-norm
`nn.TransformerEncoder`, a vocabulary head) sized by `GPT_SIZES`."""

GPT_TRAIN_LOOP = """\
model = GPT().to(DEVICE)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
step = 0


def run(steps):
    global step
    for _ in range(steps):
        batch = tokens[step % n_batches]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
    return loss.detach()
"""
"""Builds the `GPT` class defined before it, with AdamW, and `run(steps)`: next-token
training steps over the device-resident `tokens` batches."""
