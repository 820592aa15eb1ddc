"""Hypothesis strategies for the fuzz tests (tests/test_fuzz.py).

`training_code()` composes realistic PyTorch training-script fragments from
the patterns the rules look for (loops over loaders, `.item()`,
`.to(device, non_blocking=True)`, `DataLoader(...)`, `zero_grad`, autocast,
`empty_cache`, `synchronize`, tensor factories, timers...) inside nested
functions, classes, loops and `with`/`if`/`try` blocks, with comments,
semicolons, one-line bodies, backslash continuations, odd indentation, CRLF or
lone-CR line ends and no final newline, so that the rules' fix paths fire on
layouts the hand-written tests never try. Every drawn text parses and compiles.
"""

from __future__ import annotations

from hypothesis import strategies as st

# `{T}` is the name torch is imported as, `{x}`/`{y}` batch names, `{L}` a loader
# name, `{D}` a device expression, `{O}` an optimizer, `{M}` a model.
SIMPLE = [
    "{x} = {x}.to({D}, non_blocking=True)",
    "{x}, {y} = {x}.cuda(non_blocking=True), {y}.cuda(non_blocking=True)",
    "{x} = {x}.to(device=device,\n    non_blocking=True)",
    "{x} = {x}.cuda()",
    "{x} = {x}.to({D})",
    "loss = criterion({M}({x}), {y})",
    "loss = {T}.nn.functional.cross_entropy({M}({x}), {y})",
    "out = {M}(**batch)",
    "loss.backward()",
    "loss.backward(retain_graph=True)",
    "scaler.scale(loss).backward()",
    "scaler.step({O})",
    "scaler.update()",
    "{O}.step()",
    "{O}.zero_grad()",
    "{O}.zero_grad(set_to_none=False)",
    "{O}.zero_grad(False)",
    "{M}.zero_grad(set_to_none = False, )",
    "running_loss += loss.item()",
    "total_loss += loss",
    "total_loss = total_loss + loss * {x}.size(0)",
    "losses.append(loss)",
    "print(f\"loss {{loss.item():.4f}}\")",
    "correct += ({M}({x}).argmax(1) == {y}).sum().item()",
    "val = float(loss)",
    "arr = loss.cpu().numpy()",
    "{T}.cuda.synchronize()",
    "{T}.cuda.synchronize(); {T}.cuda.empty_cache()",
    "{T}.cuda.empty_cache()",
    "{T}.cuda.empty_cache()  # free memory",
    "step_count = 0  # noqa: GPU302",
    "gc.collect(); {T}.cuda.empty_cache()",
    "{L} = DataLoader(ds, batch_size=32)",
    "{L} = DataLoader(ds, batch_size=8, shuffle=True, **kwargs)",
    "{L} = {T}.utils.data.DataLoader(ds, 4, True)",
    "{L} = DataLoader(ds, num_workers=0, pin_memory=False)",
    "{L} = DataLoader(\n    ds,\n    batch_size=64,\n    shuffle=True,\n)",
    "{L} = DataLoader(ds, batch_size=16, num_workers=4)",
    "{L} = DataLoader(ds, batch_size=16, num_workers=4, pin_memory=True)",
    "{L} = DataLoader()",
    "noise = {T}.randn(batch_size, 16).to({D})",
    "pos = {T}.arange({x}.size(1)).cuda()",
    "mask = {T}.ones({x}.shape[0], dtype={T}.bool).to({x}.device)",
    "buf = {T}.zeros(3, 3)",
    "idx = {T}.arange(n)",
    "eye = {T}.eye(4, device={D})",
    "t = {T}.tensor([1, 2, 3]).to({D}, non_blocking=True)",
    "t = {T}.full((2, 2), 0.5).cuda(non_blocking=True)",
    "scaler = {T}.cuda.amp.GradScaler()",
    "scaler = {T}.amp.GradScaler(\"cuda\", init_scale=1024)",
    "scaler = GradScaler(enabled=True)",
    "{T}.autograd.set_detect_anomaly(True)",
    "{M} = {T}.nn.DataParallel({M})",
    "{M} = nn.DataParallel({M}).cuda()",
    "from transformers import AutoModelForCausalLM\n{M} = AutoModelForCausalLM.from_pretrained(name).cuda()",
    "import timm\n{M} = timm.create_model(\"vit_base_patch16_224\").to({D})",
    "from transformers import AutoModel; {M} = AutoModel.from_pretrained(name).to({D})",
    "{M}.eval()",
    "{M}.train()",
    "{M}.train(False)",
    "t0 = time.perf_counter()",
    "elapsed = time.time() - t0",
    "start.record(); end.record()",
    "{T}.backends.cuda.matmul.allow_tf32 = True",
    "{T}.set_float32_matmul_precision(\"high\")",
    "step += 1",
    "x = 1; y = 2",
    "pass",
    "...",
    "'''doc string'''",
    "assert {x} is not None, 'empty batch'",
    "del {x}",
    "global best_acc",
    "result = (\n    {M}({x})  # comment inside parentheses\n    .float()\n)",
    "value = 1 + \\\n    2",
    "{y} = [{T}.zeros(2).to({D}) for _ in range(3)]",
    "f = lambda t: t.cuda()",
    "{x} = {x}.to(\"cuda\", non_blocking=True).float()",
    "{x} = {x}.to(\"cuda\",non_blocking=True,)",
    "{x} = {x}.to({D}, non_blocking=True, *args)",
    "logits = {M}({x}); loss = criterion(logits, {y}); loss.backward()",
    # non-ASCII text before a flagged call on the same line (columns are UTF-8 bytes in `ast`)
    "msg = \"é→ü\"; {T}.cuda.empty_cache()",
    "print(\"日本語\", {T}.arange(3).to({D}))",
    "{x} = {x}.to({D}, non_blocking=True)  # 中文",
    "ünï = {T}.zeros(2).cuda()",
    "{O}.zero_grad(set_to_none=False); {T}.cuda.synchronize()",
    "ctx = {T}.cuda.amp.autocast() if use_amp else contextlib.nullcontext()",
    "fwd = {T}.cuda.amp.custom_fwd(f)",
    "{L} = DataLoader(ds, batch_size=8, num_workers=0,)",
    "{L} = DataLoader(ds, 8, True, None, None, 0)",
    "{L} = DataLoader(dataset=ds, pin_memory=cfg.pin, num_workers=cfg.workers)",
    "_ = (\n    {T}.cuda.synchronize()\n)",
    "({T}.cuda.empty_cache())",
    "{T}.cuda.empty_cache(   )",
    "{T} . cuda . synchronize ()",
    "{T}.cuda.empty_cache() if cond else None",
    "{x} = {x}.to(  {D} ,  non_blocking = True  )",
    "{x} = {x}.cuda(device=0, non_blocking=True)",
    "{x} = {T}.randn(4, 4) \\\n    .to({D})",
]
# whole scenarios that make each fix fire; a `<S>` line becomes a random
# simple statement (or nothing), a line ending in `<S>` gets a one-liner
SCENARIOS = [
    # GPU201 + GPU202 (+ GPU102): loader without workers or pinned memory
    "{L} = DataLoader(ds, batch_size=32, shuffle=True)\n"
    "for {x}, {y} in {L}:\n"
    "    {x} = {x}.to({D}, non_blocking=True)\n"
    "    <S>\n"
    "    {y} = {y}.cuda(non_blocking=True)\n"
    "    loss = criterion({M}({x}), {y})\n"
    "    loss.backward()\n"
    "    {T}.cuda.synchronize()",
    "{L} = {T}.utils.data.DataLoader(\n"
    "    ds,\n"
    "    batch_size=64,  # per device\n"
    "    pin_memory=False\n"
    ")\n"
    "<S>\n"
    "for step, batch in enumerate({L}):\n"
    "    {x}, {y} = batch[0].to({D}, non_blocking=True), batch[1].to({D}, non_blocking=True)\n"
    "    <S>\n"
    "    {M}({x}).sum().backward()",
    # GPU204: factories without device= in forward
    "class Pos({T}.nn.Module):\n"
    "    <S>\n"
    "    def forward(self, {x}):\n"
    "        pos = {T}.arange({x}.size(1))\n"
    "        <S>\n"
    "        mask = {T}.ones({x}.size(0), {x}.size(1), dtype={T}.bool)\n"
    "        table = {T}.tensor([1.0, 2.0])\n"
    "        return {x} + pos",
    "class Attn(nn.Module):\n"
    "    def forward(self, q, k):\n"
    "        causal = {T}.triu({T}.full((q.size(1), q.size(1)), float('-inf')), diagonal=1); <S>\n"
    "        eye = {T}.eye(q.size(1)) ; idx = {T}.arange(0, q.size(1), 2)\n"
    "        return q @ k.transpose(-1, -2) + causal",
    # GPU102 + GPU103 + GPU302 in a training loop
    "for step, ({x}, {y}) in enumerate({L}):\n"
    "    {O}.zero_grad(set_to_none=False)\n"
    "    loss = criterion({M}({x}), {y})\n"
    "    <S>\n"
    "    loss.backward()\n"
    "    {O}.step()\n"
    "    {T}.cuda.synchronize()\n"
    "    {T}.cuda.empty_cache()",
    "while step < max_steps:\n"
    "    batch = next(it)\n"
    "    out = {M}(**batch)\n"
    "    out.loss.backward()\n"
    "    {T}.cuda.empty_cache(); {T}.cuda.synchronize()\n"
    "    <S>",
    # GPU301 + GPU401 (+ GPU402/404)
    "scaler = {T}.cuda.amp.GradScaler()\n"
    "for {x}, {y} in {L}:\n"
    "    with {T}.cuda.amp.autocast(dtype={T}.bfloat16):\n"
    "        loss = criterion({M}({x}), {y})\n"
    "        <S>\n"
    "    scaler.scale(loss).backward()\n"
    "    total_loss += loss\n"
    "    losses.append(loss)",
    # GPU203: factories then moved
    "for {x} in {L}:\n"
    "    noise = {T}.randn({x}.size(0), 128).to({x}.device)\n"
    "    <S>\n"
    "    z = {T}.zeros_like({x}).cuda() + {T}.rand(3).to({D}, non_blocking=True)\n"
    "    {M}(noise + {x}).mean().backward()",
    # GPU405 (+ GPU105): Adam(W) on a model moved to the device, a masked loss in the loop
    "{M} = {M}.to({D})\n"
    "{O} = {T}.optim.AdamW({M}.parameters(), lr=3e-4)\n"
    "<S>\n"
    "for {x}, {y} in {L}:\n"
    "    {x}, {y} = {x}.to({D}), {y}.to({D})\n"
    "    keep = {y} != -100\n"
    "    loss = criterion({M}({x})[keep], {y}[keep])\n"
    "    <S>\n"
    "    loss.backward()\n"
    "    {O}.step()",
    "{M} = Net().cuda()\n"
    "{O} = {T}.optim.Adam(\n"
    "    {M}.parameters(),\n"
    "    lr=1e-3,  # base rate\n"
    ")",
]
IMPORTS = [
    "import torch",
    "import torch as th",
    "from torch import nn",
    "import torch.nn as nn",
    "import torch.nn.functional as F",
    "from torch.utils.data import DataLoader",
    "from torch.utils.data import DataLoader as DL",
    "import time",
    "import gc",
    "from time import perf_counter",
    "from torch.cuda.amp import autocast, GradScaler",
    "from torch.cuda.amp import GradScaler",
    "from torch.cuda import amp",
    "from torch.cuda.amp import (\n    autocast,\n    GradScaler,  # the scaler\n)",
    "import torch.cuda.amp",
    "from torch import autograd",
    "from __future__ import annotations",
    "try:\n    import torch\nexcept ImportError:\n    torch = None",
    "if TYPE_CHECKING:\n    from torch.cuda.amp import GradScaler",
    "from torch.cuda.amp import autocast as ac, GradScaler as GS",
    "from torch.cuda.amp import autocast, \\\n    GradScaler",
    "import torch.cuda.amp as amp_mod",
    "from torch.cuda.amp import *",
    "import torch, time",
    "import torch; import time",
    "from transformers import AutoModelForCausalLM",
    "import timm",
]
PREAMBLES = ["#!/usr/bin/env python", "# -*- coding: utf-8 -*-", "\"\"\"Train a model.\"\"\""]
LOOP_HEADERS = [
    "for {x}, {y} in {L}:",
    "for step, ({x}, {y}) in enumerate({L}):",
    "for i, batch in enumerate(tqdm({L})):",
    "for batch in {L}:",
    "for epoch in range(epochs):",
    "for _ in range(100):",
    "for ({x}, {y}) in zip(a, b):",
    "async for batch in {L}:",
    "while step < max_steps:",
    "while True:",
]
WITH_HEADERS = [
    "with {T}.no_grad():",
    "with {T}.inference_mode():",
    "with {T}.autocast(\"cuda\", dtype={T}.bfloat16):",
    "with {T}.autocast(device_type=\"cuda\", dtype={T}.float16):",
    "with {T}.cuda.amp.autocast():",
    "with {T}.cuda.amp.autocast(enabled=True, dtype={T}.float16):",
    "with autocast():",
    "with amp.autocast(enabled=use_amp):",
    "with {T}.autograd.detect_anomaly():",
    "with open(path) as fh, {T}.no_grad():",
    "with (\n    {T}.no_grad()\n):",
    "async with lock:",
]
IF_HEADERS = [
    "if step % 100 == 0:",
    "if {x}.is_cuda:",
    "if rank == 0:",
    "if not training:",
]
FUNC_HEADERS = [  # parameters must be plain names
    "def train(model, loader, optimizer):",
    "def train_one_epoch(model, train_loader, opt, device='cuda'):",
    "def evaluate(model, val_loader):",
    "async def run(model, loader):",
    "def step(self, batch):",
    "def forward(self, {x}):",
    "def forward(self, {x}: {T}.Tensor) -> {T}.Tensor:",
    "@{T}.no_grad()\ndef predict(model, {x}):",
    "@staticmethod\ndef helper({x}, *args, **kwargs):",
]
CLASS_HEADERS = [
    "class Net(nn.Module):",
    "class Block({T}.nn.Module):",
    "class Trainer:",
    "class Model(nn.Module, metaclass=Meta):",
]
COMMENTS = ["# train", "#", "# type: ignore", "# noqa", "# gpulint: noqa", "# -*- coding: utf-8 -*-", "#\tcomment"]

NAMES_X = ["x", "images", "inputs", "data", "batch_x"]
NAMES_Y = ["y", "labels", "targets", "target"]
NAMES_L = ["loader", "train_loader", "val_loader", "dataloader", "self.loader"]
DEVICES = ["device", "\"cuda\"", "'cuda:0'", "self.device", "{T}.device(\"cuda\")", "args.device", "0"]
OPTS = ["optimizer", "opt", "self.optimizer"]
MODELS = ["model", "net", "self.model"]


_CACHE = {}


def _pick(options):
    """sampled_from, built once per option list (building strategies is slow)."""
    key = tuple(options)
    strat = _CACHE.get(key)
    if strat is None:
        strat = _CACHE[key] = st.sampled_from(key)
    return strat


_INTS = {}


def _int(lo, hi):
    strat = _INTS.get((lo, hi))
    if strat is None:
        strat = _INTS[(lo, hi)] = st.integers(min_value=lo, max_value=hi)
    return strat


class _Names:
    def __init__(self, draw):
        self.T = draw(_pick(["torch", "torch", "torch", "th"]))
        self.x = draw(_pick(NAMES_X))
        self.y = draw(_pick(NAMES_Y))
        self.L = draw(_pick(NAMES_L))
        self.D = draw(_pick(DEVICES)).replace("{T}", self.T)
        self.O = draw(_pick(OPTS))
        self.M = draw(_pick(MODELS))

    def fill(self, template: str) -> str:
        return template.format(T=self.T, x=self.x, y=self.y, L=self.L, D=self.D, O=self.O, M=self.M)


# a block is a list of (depth, line) pairs; multi-line templates keep their
# own relative indentation (continuation lines are indented one unit deeper)


def _lines_of(text: str, depth: int):
    out = []
    for k, line in enumerate(text.split("\n")):
        if k == 0 or line.startswith("@") or line.startswith("def ") or line.startswith("async def "):
            out.append((depth, line))
        else:
            stripped = line.lstrip(" ")
            extra = (len(line) - len(stripped)) // 4
            out.append((depth + extra, stripped))
    return out


def _header_and_decorators(text: str, depth: int):
    return [(depth, line) for line in text.split("\n")]


ONE_LINERS = [p for p in SIMPLE if "\n" not in p and "global" not in p and ";" not in p and "\x27\x27\x27" not in p]
_ONE_LINE_PARTS = st.lists(st.sampled_from(ONE_LINERS), min_size=1, max_size=3)
_IMPORT_LISTS = st.lists(st.sampled_from(IMPORTS), max_size=5, unique=True)


def _block(draw, names, depth, in_loop, in_func, in_class, in_async):
    stmts = []
    n = draw(_int(1, (6, 4, 3)[depth] if depth < 3 else 2))
    for _ in range(n):
        kinds = ["simple"] * 6 + ["scenario"] * 2 + ["comment", "blank"]
        if depth < 3:
            kinds += ["loop"] * 3 + ["with"] * 2 + ["if", "try", "func", "class"]
        if in_loop:
            kinds += ["break", "continue"]
        if in_func:
            kinds += ["return"]
        kind = draw(_pick(kinds))
        if kind == "simple":
            stmts += _lines_of(names.fill(draw(_pick(SIMPLE))), depth)
        elif kind == "scenario":
            for d, line in _lines_of(names.fill(draw(_pick(SCENARIOS))), depth):
                if line == "<S>":
                    filler = draw(_pick(SIMPLE + ["#", None, None, None]))
                    if filler is not None:
                        stmts += _lines_of(names.fill(filler), d)
                elif line.endswith("<S>"):
                    filler = draw(_pick(ONE_LINERS + [None]))
                    stmts.append((d, line[: -len("<S>")] + (names.fill(filler) if filler else "pass")))
                else:
                    stmts.append((d, line))
        elif kind == "comment":
            stmts.append((depth, draw(_pick(COMMENTS))))
        elif kind == "blank":
            stmts.append((None, draw(_pick(["", "   ", "\t"]))))
        elif kind in ("break", "continue"):
            stmts.append((depth, kind))
        elif kind == "return":
            stmts.append((depth, draw(_pick(["return loss", "return", "return loss.item()"]))))
        else:
            if kind == "loop":
                header = names.fill(draw(_pick(LOOP_HEADERS)))
            elif kind == "with":
                header = names.fill(draw(_pick(WITH_HEADERS)))
            elif kind == "if":
                header = names.fill(draw(_pick(IF_HEADERS)))
            elif kind == "try":
                header = "try:"
            elif kind == "func":
                header = names.fill(draw(_pick(FUNC_HEADERS)))
            else:
                header = names.fill(draw(_pick(CLASS_HEADERS)))
            is_async_header = header.startswith("async def") or header.startswith("async ")
            if header.startswith("async ") and not header.startswith("async def") and not in_async:
                header = header[len("async "):]  # async for/with only inside async def
            body_loop = kind == "loop" or (in_loop and kind not in ("func", "class"))
            body_func = kind == "func" or (in_func and kind != "class")
            body_async = (kind == "func" and is_async_header) or (in_async and kind not in ("func", "class"))
            one_line = kind not in ("func", "class", "try") and draw(_int(0, 5)) == 0
            if one_line:
                # `for x in loader: loss.backward(); optimizer.step()`
                parts = [names.fill(p) for p in draw(_ONE_LINE_PARTS)]
                stmts += _lines_of(header, depth)
                last_depth, last_line = stmts[-1]
                stmts[-1] = (last_depth, last_line + " " + "; ".join(parts))
                continue
            stmts += _header_and_decorators(header, depth) if kind == "func" else _lines_of(header, depth)
            stmts += _block(draw, names, depth + 1, body_loop, body_func, kind == "class", body_async)
            if kind == "try":
                stmts.append((depth, draw(_pick(["except Exception:", "except (ValueError, KeyError) as e:", "finally:"]))))
                stmts += _block(draw, names, depth + 1, in_loop, in_func, False, in_async)
            elif kind in ("if", "loop") and draw(_int(0, 3)) == 0:
                stmts.append((depth, "else:"))
                stmts += _block(draw, names, depth + 1, in_loop, in_func, False, in_async)
    # a block must hold at least one statement: comments and blank lines do not count
    if all(d is None or line.lstrip().startswith("#") for d, line in stmts):
        stmts.append((depth, "pass"))
    return stmts


def _render(draw, lines) -> str:
    indent = draw(_pick(["    ", "  ", "\t", "        ", " "]))
    eol = draw(_pick(["\n"] * 4 + ["\r\n", "\r\n", "\r"]))
    mixed = draw(_int(0, 9)) == 0
    out = []
    for depth, line in lines:
        prefix = "" if depth is None else indent * depth
        trailing = draw(_pick([""] * 8 + ["  ", "\t", "  # trailing"]))
        if line.endswith("\\"):
            trailing = ""  # nothing may follow a line-continuation backslash
        line_eol = draw(_pick(["\n", "\r\n"])) if mixed else eol
        out.append(prefix + line + trailing + line_eol)
    text = "".join(out)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no final newline
    return text


@st.composite
def training_code(draw) -> str:
    names = _Names(draw)
    lines = []
    imports = draw(_IMPORT_LISTS)
    for usual in ("import torch", "from torch.utils.data import DataLoader", "from torch import nn"):
        if usual not in imports and draw(_int(0, 4)) > 0:
            imports.append(usual)
    if "from __future__ import annotations" in imports:
        imports.remove("from __future__ import annotations")
        imports.insert(0, "from __future__ import annotations")
    preamble = [p for p in PREAMBLES if draw(_int(0, 3)) == 0]
    imports = preamble + imports
    if names.T == "th" and "import torch as th" not in imports:
        imports.append("import torch as th")
    for imp in imports:
        lines += _lines_of(imp, 0)
    lines += _block(draw, names, 0, False, False, False, False)
    text = _render(draw, lines)
    # the composition is meant to be valid Python; when a rare combination is
    # not (e.g. `return` inside a class body), the drawing is rejected
    return text


def compiles(text: str) -> bool:
    try:
        compile(text, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
