from __future__ import annotations

import ast
import re
from textwrap import dedent
from typing import Dict, Optional, Set

from gpulint.model.control.amp import autocast_uses, dtype_of, torch_module_alias
from gpulint.rule import TIME, UNSAFE, Bench, Edit, Example, Fix, Rule
from gpulint.workloads import WIDE_MLP_TRAINING

# packages that manage precision (or drive the loop) themselves
PRECISION_FRAMEWORKS = (
    "accelerate",
    "lightning",
    "pytorch_lightning",
    "deepspeed",
    "apex",
    "colossalai",
    "composer",
    "fairscale",
)
TRANSFORMERS_TRAINERS = re.compile(r"^transformers\.(\w+\.)*(Seq2Seq)?(Trainer|TrainingArguments)$")
CUDA_STRING_RE = re.compile(r"^cuda(:|$)")
LOW_PRECISION_STRINGS = frozenset(
    {"bf16", "fp16", "bfloat16", "float16", "half", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "amp"}
)
HALF_METHODS = frozenset({"half", "bfloat16"})
# identifiers that show the code handles precision somewhere we cannot see
# (`with amp_autocast():`, `if args.amp:`, `use_fp16`, `mixed_precision=...`)
PRECISION_IDENT_RE = re.compile(r"autocast|(^|_)(amp|fp16|bf16|precision)(_|$)", re.I)
FRAMEWORK_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine"})


class Fp32WithoutTf32OrAmp(Rule):
    """
    ## What it does
    Flags a CUDA training loop (a loop that calls `.backward()`, in a file that
    uses CUDA) in a file that never turns on any reduced-precision math: no
    autocast (`torch.autocast`, `torch.amp`, `torch.cuda.amp`, also as a
    decorator or through `functools.partial`), no TF32 switch
    (`torch.backends.cuda.matmul.allow_tf32`, `torch.set_float32_matmul_precision`),
    no half/bfloat16 model (`.half()`, `.bfloat16()`, `torch.float16` /
    `torch.bfloat16` anywhere, e.g. in `.to(...)` or `dtype=`), and no framework
    that manages precision (Accelerate, Lightning, DeepSpeed, apex, the
    Transformers `Trainer`). It points at the loop's first `.backward()`, once
    per loop. A file that sets the matmul precision or `allow_tf32` to any
    value, including `"highest"` / `False`, made a deliberate choice and is not
    flagged, nor one whose names show it handles precision elsewhere
    (`with amp_autocast():`, `args.amp`, `use_fp16`, `mixed_precision`).
    A loop in a function that never touches a device (a CPU loop in a file
    that also has GPU code) is not flagged. Test files are not flagged (they
    often check FP32 numerics on purpose), nor code targeting torch < 1.12,
    where TF32 matmuls were on by default.

    A loop whose models are convolutional is not flagged: where the
    `nn.Module` classes of the file and of the project files it imports build
    convolutions, no attention, and no more `nn.Linear` (or RNN) layers than
    convolutions, counted where the code builds them (a DCGAN with its latent
    projection, a UNet, a ResNet with its classifier head).
    cuDNN already runs convolutions in TF32 (`torch.backends.cudnn.allow_tf32`
    is True by default), so the premise does not hold and the fix changes
    next to nothing. A model built from `torchvision.models` counts as
    convolutional (a ResNet by name, or `models.__dict__[args.arch]()`,
    whose choices are convolutional networks), unless the file names a
    vision transformer; where the layer counts see project models the loop
    can train, those decide instead.
    Where the models come from another library (`timm`, `transformers`), the
    rule cannot see their layers and still flags the loop.

    The rule sees one file at a time: when the precision is set in another
    module (a `main.py` that enables TF32 before calling the loop in
    `engine.py`), suppress it for that file with `per-file-ignores`.

    ## Why is this bad?
    Since PyTorch 1.12 float32 matmuls on CUDA run in full IEEE FP32 by default.
    On Ampere and newer GPUs (A100, H100, RTX 30xx/40xx) the tensor cores run
    TF32 matmuls several times faster than the FP32 units (A100 datasheet: 156
    vs 19.5 TFLOPS; an 8192x8192 float32 matmul on an NVIDIA H200 with torch 2.11,
    measured 2026-11-29, ran at 51 TFLOP/s with the default `"highest"` precision and 403 with
    `"high"`), and bfloat16/float16 autocast is faster still and stores the
    activations it saves in half the bytes. A training loop that uses neither
    leaves most of the GPU's matmul throughput unused.

    ## Fix safety
    Unsafe: the fix inserts `torch.set_float32_matmul_precision("high")` once,
    after the module's imports (adding `import torch` when torch is only
    imported with `from torch import ...`). This changes numerics: TF32 keeps
    float32's range but rounds the matmul inputs to a 10-bit mantissa (about
    three decimal digits), which is fine for training almost every network but
    can matter for code that relies on exact FP32 results. Setting it at import
    time also changes the setting for everything else running in the process.
    Mixed precision with `torch.autocast` is the bigger win, but it needs a
    `GradScaler` for float16 and changes more code; see the AMP recipe.

    ## References
    - [torch.set_float32_matmul_precision](https://pytorch.org/docs/stable/generated/torch.set_float32_matmul_precision.html)
    - [PyTorch: TensorFloat-32 (TF32) on Ampere (and later) devices](https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices)
    - [PyTorch recipe: Automatic Mixed Precision](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "GPU403"
    name = "fp32-without-tf32-or-amp"
    message = (
        "CUDA training loop runs in full FP32: this file uses no autocast, no TF32 and no half-precision model;"
        " enable TF32 with `torch.set_float32_matmul_precision(\"high\")` or use `torch.autocast`"
    )
    fix_safety = UNSAFE
    needles = ("backward",)
    skips_test_files = True
    examples = (
        Example(
            bad="""
            import torch
            import torch.nn.functional as F

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

            for epoch in range(epochs):
                for data, target in train_loader:
                    data, target = data.to(device), target.to(device)
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(data), target)
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            import torch
            import torch.nn.functional as F

            torch.set_float32_matmul_precision("high")

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

            for epoch in range(epochs):
                for data, target in train_loader:
                    data, target = data.to(device), target.to(device)
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(data), target)
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Example(
            title="torch imported only with `from torch import ...`",
            bad="""
            from torch import nn, optim


            def train(model: nn.Module, loader, epochs: int = 10):
                model = model.cuda()
                criterion = nn.CrossEntropyLoss()
                optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                for epoch in range(epochs):
                    for images, labels in loader:
                        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                        loss = criterion(model(images), labels)
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
            """,
            good="""
            from torch import nn, optim

            import torch

            torch.set_float32_matmul_precision("high")


            def train(model: nn.Module, loader, epochs: int = 10):
                model = model.cuda()
                criterion = nn.CrossEntropyLoss()
                optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                for epoch in range(epochs):
                    for images, labels in loader:
                        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                        loss = criterion(model(images), labels)
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
            """,
        ),
    )

    bench = Bench(
        setup="""
        # a wide MLP (4 hidden layers of 4096) trained on batches of 8192 samples
        batch, features, hidden, depth, classes = (16, 32, 64, 2, 10) if SMALL else (8192, 1024, 4096, 4, 1000)
        """,
        bad=dedent("""
            import torch
            from torch import nn
            import torch.nn.functional as F

            """)
        + WIDE_MLP_TRAINING,
        good=dedent("""
            import torch
            from torch import nn
            import torch.nn.functional as F

            torch.set_float32_matmul_precision("high")

            """)
        + WIDE_MLP_TRAINING,
        metric=TIME,
        steps=10,
        warmup=3,
        check="allclose",
        rtol=1e-2,
        atol=1e-3,
        note=(
            "wide MLP training step (8192x1024 batch copied from host, 4 hidden layers of 4096, AdamW), matmul-bound: TF32 is the fix's"
            " speedup; TF32 rounds matmul inputs to a 10-bit mantissa by design, so the losses after two steps are"
            " compared at rtol 1e-2 (TF32 differs from FP32 at about 1e-3 relative)"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._eligible: Optional[bool] = None
        self._fix: Optional[Fix] = None
        self._loops: Set[int] = set()

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if not fa.steps.is_backward_call(node):
            return
        owner = node.func.value  # type: ignore[attr-defined]
        if isinstance(owner, ast.Name) and owner.id in FRAMEWORK_BACKWARD_OWNERS:
            return
        loop = _innermost_loop(ctx.ancestors, node, fa)
        if loop is None or id(loop) in self._loops:
            return
        self._loops.add(id(loop))
        if not self._file_eligible(ctx):
            return
        if fa.contexts.grad_disabled(ctx.ancestors):
            return
        if not _scope_uses_device(ctx, fa.index.enclosing_scope(ctx.ancestors)):
            return  # e.g. a CPU toy loop in a file that also has GPU code
        layers = fa.facts.model_layers()
        # the project's own models decide where the layer counts see them; else a torchvision convnet
        if convolutional(layers) if layers else _torchvision_convnet(fa):
            return  # cuDNN already runs the convolutions in TF32
        if self._fix is None:
            self._fix = self.make_fix(
                'Insert `torch.set_float32_matmul_precision("high")` after the imports', [_insertion(ctx)]
            )
        self.report(ctx, node, fix=self._fix)

    # ------------------------------------------------------------------
    def _file_eligible(self, ctx) -> bool:
        if self._eligible is None:
            self._eligible = (
                ctx.torch_version >= (1, 12)
                and _uses_cuda(ctx)
                and not _precision_managed(ctx)
            )
        return self._eligible


def convolutional(layers: Optional[Dict[str, int]]) -> bool:
    """The models the file can train (its own `nn.Module` classes and those of
    the project files it imports) are convolutional: convolutions, no
    attention, and no more matmul layers (`nn.Linear`, an RNN) than
    convolutions (a DCGAN's latent projection and classifier head), counted
    where the code builds them."""
    if not layers:
        return False
    conv = layers.get("conv", 0)
    return conv > 0 and not layers.get("attention", 0) and layers.get("matmul", 0) <= conv


# torchvision's classification models that are not convolutional
_TORCHVISION_NOT_CONV = ("vit_", "swin_", "maxvit", "vision_transformer", "swin_transformer")
# its subpackages and look-up functions, which say nothing of the architecture
_TORCHVISION_OTHER = frozenset(("detection", "segmentation", "video", "optical_flow", "quantization",
                                "feature_extraction", "get_model", "list_models", "get_weight", "get_model_weights"))


def _torchvision_convnet(fa) -> bool:
    """The file builds its model from `torchvision.models`: a convolutional
    family by name (`models.resnet50()`), or by an architecture chosen at
    run time (`models.__dict__[args.arch]()`, `getattr(models, arch)`),
    whose choices are convolutional unless the file names a vision
    transformer."""
    def compute() -> bool:
        found = False
        for node in fa.index.nodes_of(ast.Attribute):
            q = fa.imports.qualname(node) or ""
            if not q.startswith("torchvision.models.") or q.count(".") != 2:
                continue
            name = q.rsplit(".", 1)[1]
            if name.startswith(_TORCHVISION_NOT_CONV):
                return False
            if name == "__dict__" or (name[:1].islower() and name not in _TORCHVISION_OTHER):
                found = True
        return found

    return fa.index.memoized("gpu403.torchvision", "convnet", compute)


def _innermost_loop(ancestors, node, fa) -> Optional[ast.AST]:
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(anc, (ast.For, ast.AsyncFor, ast.While)):
            if fa.index.in_block(child, anc, "body", "orelse"):
                return anc
            return None  # in the loop's header
    return None


def _uses_cuda(ctx) -> bool:
    if not ctx.analysis.index.uses_cuda:
        return False
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr == "cuda":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CUDA_STRING_RE.match(node.value):
            return True
    return False


DEVICE_WORD_RE = re.compile(r"device|gpu|cuda|rank", re.I)


def _scope_uses_device(ctx, scope: Optional[ast.AST]) -> bool:
    """Does the function around the loop put anything on a device? (Module-level
    loops: the file already uses CUDA.)"""
    if scope is None:
        return True
    fa = ctx.analysis
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "cuda":
                return True
            if node.func.attr == "to" and (node.args or node.keywords):
                first = node.args[0] if node.args else node.keywords[0].value
                if dtype_of(fa, first) is None and not (fa.imports.qualname(first) or "").startswith("torch.float"):
                    return True
        elif isinstance(node, ast.keyword) and node.arg == "device":
            return True
        elif isinstance(node, ast.Name) and DEVICE_WORD_RE.search(node.id):
            return True
        elif isinstance(node, ast.Attribute) and DEVICE_WORD_RE.search(node.attr):
            return True
        elif isinstance(node, ast.arg) and DEVICE_WORD_RE.search(node.arg):
            return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and CUDA_STRING_RE.match(node.value):
            return True
    return False


def _precision_managed(ctx) -> bool:
    """Does anything in the file choose a precision (autocast, TF32, half/bf16, a framework)?"""
    fa = ctx.analysis
    if any(fa.imports.imports_module(p) for p in PRECISION_FRAMEWORKS):
        return True
    if autocast_uses(fa):
        return True
    for node in ast.walk(ctx.tree):
        ident = (
            node.id if isinstance(node, ast.Name)
            else node.attr if isinstance(node, ast.Attribute)
            else node.arg if isinstance(node, (ast.arg, ast.keyword))
            else None
        )
        if ident and PRECISION_IDENT_RE.search(ident):
            return True
        if isinstance(node, (ast.Name, ast.Attribute)):
            q = fa.imports.qualname(node) or ""
            if q.startswith(("torch.amp.", "torch.cuda.amp.", "torch.cpu.amp.")):
                return True
            if TRANSFORMERS_TRAINERS.match(q):
                return True
            if q in ("torch.set_float32_matmul_precision", "torch.backends.fp32_precision"):
                return True
            if dtype_of(fa, node) is not None:
                return True  # torch.float16 / torch.bfloat16 / torch.half
            if isinstance(node, ast.Attribute):
                if node.attr == "fp32_precision":
                    return True
                if node.attr == "allow_tf32" and _tf32_attr_is_deliberate(fa, node):
                    return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in HALF_METHODS and not node.args:
                return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.lower() in LOW_PRECISION_STRINGS:
                return True
    return False


def _tf32_attr_is_deliberate(fa, node: ast.Attribute) -> bool:
    """`...matmul.allow_tf32 = <anything>` is a decision about matmul precision;
    `cudnn.allow_tf32 = True` (the default) says nothing about matmuls."""
    owner = node.value
    if isinstance(owner, ast.Attribute) and owner.attr == "matmul":
        return True
    parent = fa.index.parents.get(node)
    if isinstance(parent, ast.Assign):
        v = parent.value
        return not (isinstance(v, ast.Constant) and v.value is True)
    return False


def _insertion(ctx) -> Edit:
    """One `torch.set_float32_matmul_precision("high")` after the module's top-level imports."""
    src = ctx.source
    text = src.text
    alias = torch_module_alias(ctx.analysis)
    call = f'{alias or "torch"}.set_float32_matmul_precision("high")'
    block = call if alias else f"import torch\n\n{call}"
    body = ctx.tree.body
    imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
    anchor_stmt = imports[-1] if imports else None
    if anchor_stmt is None and body and isinstance(body[0], ast.Expr):
        v = body[0].value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            anchor_stmt = body[0]  # the module docstring
    if anchor_stmt is None:
        start = src.node_span(body[0])[0] if body else len(text)
        start -= src.position(start)[1] - 1  # to the start of its line
        return Edit(start, start, block + "\n\n")
    end_row = anchor_stmt.end_lineno or anchor_stmt.lineno
    offset = src.offset(end_row + 1, 0)  # the start of the next line (or the end of the text)
    if offset >= len(text) and not text.endswith(("\n", "\r")):
        return Edit(len(text), len(text), "\n\n" + block + "\n")
    return Edit(offset, offset, "\n" + block + "\n")
