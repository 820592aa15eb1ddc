from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Set

from gpulint.model.control.amp import autocast_uses, dtype_of, torch_module_alias
from gpulint.rule import TIME, UNSAFE, Bench, Edit, Example, Fix, Rule
from gpulint.workloads import GPT_MODEL, GPT_SIZES, GPT_TOKENS, GPT_TRAIN_LOOP
from gpulint.model.index.walk import walk

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
# (`load_in_8bit=True`, `load_in_4bit`, `quantization_config=`: a quantized model, whose
# matmuls run in int8/4-bit and half precision, chosen when it is loaded)
PRECISION_IDENT_RE = re.compile(
    r"autocast|(^|_)(amp|fp16|bf16|precision)(_|$)|^load_in_(4|8)bit$|^quantization_config$", re.I)
FRAMEWORK_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine"})


# the bench program: the GPT workload in FP32 (bad), and with the fix's one line (good)
_BENCH_IMPORTS = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
_BENCH_BODY = '\ntorch.backends.cudnn.benchmark = DEVICE == "cuda"\n' + GPT_TOKENS + "\n" + GPT_MODEL + GPT_TRAIN_LOOP


class Fp32WithoutTf32OrAmp(Rule):
    """
    ## What it does
    Flags a CUDA training loop (a loop that calls `.backward()`, in a file that
    uses CUDA) in a file that never turns on any reduced-precision math: no
    autocast (`torch.autocast`, `torch.amp`, `torch.cuda.amp`, also as a
    decorator or through `functools.partial`), no TF32 switch
    (`torch.backends.cuda.matmul.allow_tf32`, `torch.set_float32_matmul_precision`),
    no half/bfloat16 model (`.half()`, `.bfloat16()`, `torch.float16` /
    `torch.bfloat16` anywhere, e.g. in `.to(...)` or `dtype=`), no quantized
    model (`from_pretrained(..., load_in_8bit=True)`, `load_in_4bit`,
    `quantization_config=`: int8/4-bit and half-precision matmuls), and no framework
    that manages precision (Accelerate, Lightning, DeepSpeed, apex, the
    Transformers `Trainer`), and whose models do transformer-style matmul
    work. It points at the first `.backward()` of the first such loop: the
    finding is about the file, so it is reported once per file. A file that
    sets the matmul precision or `allow_tf32` to any
    value, including `"highest"` / `False`, made a deliberate choice and is not
    flagged, nor one whose names show it handles precision elsewhere
    (`with amp_autocast():`, `args.amp`, `use_fp16`, `mixed_precision`; a
    `precision` variable or sklearn's `precision_recall_fscore_support` is
    the metric, not such a name), nor one whose functions a file of the
    project that names a reduced precision calls (picotron's `train.py`
    casts the model to bfloat16, then calls the pipeline step of
    `pipeline_parallel.py`). A file that names no device of its own uses
    CUDA when a file it imports, directly or through imports, names it (a
    `device` set in `conf.py` and star-imported).
    A loop in a function that never touches a device (a CPU loop in a file
    that also has GPU code) is not flagged. Test files are not flagged (they
    often check FP32 numerics on purpose), nor code targeting torch < 1.12,
    where TF32 matmuls were on by default.

    The rule flags only with evidence of matmul work that TF32 speeds up:
    - the `nn.Module` classes of the file, and the project's classes its
      code builds (through functions and classes of other files:
      `blip_decoder()` builds `BLIP_Decoder`, which builds a
      `VisionTransformer`; a module read by name, as in
      `vits.__dict__[arch]()`, counts whole), build attention layers (`nn.MultiheadAttention`,
      `nn.TransformerEncoderLayer`, `F.scaled_dot_product_attention`), or
      compute attention products by hand (`q @ k.transpose(-2, -1)`,
      `torch.einsum`; not a product of the module's own weights only, a
      voxel grid rebuilt from its factors with `torch.einsum('rxy,rz->rxyz',
      self.xy_plane[0], self.z_vec[0])`) with more `nn.Linear` layers than
      convolutions (a ViT, a GPT);
    - or the file builds a transformer from a library: a Hugging Face model
      (`AutoModelForCausalLM.from_pretrained(...)`), a `SentenceTransformer`,
      or a vision transformer of torchvision or timm named where it is built.

    Convolutional networks are not flagged: cuDNN already runs convolutions in
    TF32 (`torch.backends.cudnn.allow_tf32` is True by default), so the
    premise does not hold. Nor are MLPs and small recurrent nets: measured on
    an H200, 64- to 1024-unit MLPs at the batch sizes of RL and tabular code
    are launch-bound and gain nothing from TF32. A wide MLP at a large batch
    does gain (a 1024x4 MLP step at batch 4096: 2.07 to 1.62 ms), but the
    widths and batches come from configuration the linter cannot read, so
    such loops are missed on purpose. So are models the rule cannot see
    (built by a factory in a library or chosen from a registry). A trainer
    handed its model (minGPT's `Trainer`, DETR's `engine.py`) counts the
    models that the files importing it build, unless it imports models it
    builds none of (a continual-learning strategy that calls a helper of a
    models package): which one it trains cannot be told, so it is not flagged.

    A file that calls a function of the project that builds an FSDP
    mixed-precision policy (`MixedPrecisionPolicy(param_dtype=...)`,
    `MixedPrecision(...)`: lingua's `parallelize_model`) runs its model in
    the precision chosen there, and is not flagged. Other settings made in
    another module (a `main.py` that enables TF32 before calling the loop in
    `engine.py`) are not seen: suppress the rule for that file with
    `per-file-ignores`.

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
    examples = (
        Example(
            bad="""
            import torch
            import torch.nn.functional as F
            from transformers import AutoModelForSequenceClassification

            device = torch.device("cuda")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

            for epoch in range(epochs):
                for data, target in train_loader:
                    data, target = data.to(device), target.to(device)
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(data).logits, target)
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            import torch
            import torch.nn.functional as F
            from transformers import AutoModelForSequenceClassification

            torch.set_float32_matmul_precision("high")

            device = torch.device("cuda")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

            for epoch in range(epochs):
                for data, target in train_loader:
                    data, target = data.to(device), target.to(device)
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(data).logits, target)
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Example(
            title="torch imported only with `from torch import ...`",
            bad="""
            from torch import nn, optim
            from transformers import AutoModelForCausalLM


            def train(name: str, loader, epochs: int = 10):
                model = AutoModelForCausalLM.from_pretrained(name).cuda()
                criterion = nn.CrossEntropyLoss()
                optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                for epoch in range(epochs):
                    for input_ids, labels in loader:
                        input_ids, labels = input_ids.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                        loss = criterion(model(input_ids).logits.flatten(0, 1), labels.flatten())
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
            """,
            good="""
            from torch import nn, optim
            from transformers import AutoModelForCausalLM

            import torch

            torch.set_float32_matmul_precision("high")


            def train(name: str, loader, epochs: int = 10):
                model = AutoModelForCausalLM.from_pretrained(name).cuda()
                criterion = nn.CrossEntropyLoss()
                optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                for epoch in range(epochs):
                    for input_ids, labels in loader:
                        input_ids, labels = input_ids.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                        loss = criterion(model(input_ids).logits.flatten(0, 1), labels.flatten())
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
            """,
        ),
    )

    bench = Bench(
        setup=GPT_SIZES,
        bad=_BENCH_IMPORTS + _BENCH_BODY,
        good=_BENCH_IMPORTS + '\ntorch.set_float32_matmul_precision("high")\n' + _BENCH_BODY,
        metric=TIME,
        steps=10,
        warmup=3,
        check="allclose",
        rtol=1e-2,
        atol=1e-3,
        note=(
            "GPT-style training step (8 layers, d_model 768, 16x512 tokens, AdamW), matmul-bound: TF32 is the fix's"
            " speedup; TF32 rounds matmul inputs to a 10-bit mantissa by design, so the losses after the timed steps"
            " are compared at rtol 1e-2 (TF32 differs from FP32 at about 1e-3 relative)"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._eligible: Optional[bool] = None
        self._fix: Optional[Fix] = None
        self._loops: Set[int] = set()
        self._reported = False  # the finding is about the file: reported once, at its first such loop

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if self._reported or not fa.steps.is_backward_call(node):
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
        if not (matmul_heavy(fa.facts.model_layers()) or _library_transformer(fa)):
            return  # no evidence of matmul work that TF32 speeds up (convnets, small MLPs, unseen models)
        if self._fix is None:
            self._fix = self.make_fix(
                'Insert `torch.set_float32_matmul_precision("high")` after the imports', [_insertion(ctx)]
            )
        self._reported = True
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


def matmul_heavy(layers: Optional[Dict[str, int]]) -> bool:
    """The models the file can train (its own `nn.Module` classes and the
    project's classes its code builds, counted where the code builds them) do
    transformer-style matmul work: attention layers proper
    (`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`,
    `F.scaled_dot_product_attention`), or attention products computed by
    hand (`q @ k.transpose(-2, -1)`, `torch.einsum`) in models with more
    matmul layers (`nn.Linear`) than convolutions: a ViT or a GPT, not a
    conv UNet with a few low-resolution attention blocks."""
    if not layers:
        return False
    if layers.get("transformer", 0):
        return True
    return layers.get("attention", 0) > 0 and layers.get("matmul", 0) > layers.get("conv", 0)


# library models that are transformers: Hugging Face models and pipelines'
# backbones, sentence-transformers, and the vision transformers of timm and
# torchvision (by the architecture named where they are built)
_TRANSFORMER_LIBRARIES = ("transformers.", "sentence_transformers.")
_VISION_TRANSFORMER_RE = re.compile(r"(^|[^a-z])(vit|deit|swin|beit|eva|cait|xcit|maxvit|convit|pit|tnt)([^a-z]|$)", re.I)
_BUILDERS = frozenset(("timm.create_model", "torchvision.models.get_model"))


def _library_transformer(fa) -> bool:
    """The file builds a transformer from a library: a Hugging Face model
    (`AutoModelForCausalLM.from_pretrained(...)`, `BertModel(config)`), a
    `SentenceTransformer`, a vision transformer of torchvision
    (`models.vit_b_16()`) or one named to `timm.create_model("vit_base_patch16_224")`."""
    def compute() -> bool:
        for node in fa.index.nodes_of(ast.Call):
            q = fa.imports.call_qualname(node) or ""
            if q.startswith(_TRANSFORMER_LIBRARIES):
                last = q.rsplit(".", 1)[-1]
                if last in ("from_pretrained", "from_config") or last.endswith(("Model", "Transformer")) or "For" in last:
                    return True
            elif q.startswith("torchvision.models.") and _VISION_TRANSFORMER_RE.search(q.rsplit(".", 1)[-1]):
                return True
            elif q in _BUILDERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and _VISION_TRANSFORMER_RE.search(node.args[0].value):
                return True
        return False

    return fa.index.memoized("gpu403.library", "transformer", compute)


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
    """The file names CUDA, or it is device-agnostic code (`x.to(device)`)
    whose device a file of the project that names CUDA chooses (DETR's
    `engine.py`, whose device comes from `main.py`)."""
    fa = ctx.analysis
    if not fa.index.uses_cuda:
        return fa.index.may_use_accelerator and fa.facts.cuda_nearby()
    for node in walk(ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr == "cuda":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CUDA_STRING_RE.match(node.value):
            return True
    return False


DEVICE_WORD_RE = re.compile(r"device|gpu|cuda|rank", re.I)


def _scope_uses_device(ctx, scope: Optional[ast.AST]) -> bool:
    """Does the function around the loop put anything on a device, or use a
    module-level value put there (`model = GPT().to(DEVICE)`)? (Module-level
    loops: the file already uses CUDA.)"""
    if scope is None:
        return True
    if _mentions_device(ctx.analysis, scope):
        return True
    used = {n.id for n in walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in used for t in stmt.targets):
            if _mentions_device(ctx.analysis, stmt.value):
                return True
    return False


def _mentions_device(fa, scope: ast.AST) -> bool:
    for node in walk(scope):
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


# names of the precision metric, not of a numeric precision: `precision`,
# sklearn's `precision_recall_fscore_support`, `precision_score`, `average_precision`
_PRECISION_METRIC_RE = re.compile(r"^(average_)?precision(_(recall|score|at)\w*)?$", re.I)


def _precision_managed(ctx) -> bool:
    """Does anything in the file choose a precision (autocast, TF32, half/bf16, a framework),
    or call a function of the project that does (an FSDP mixed-precision policy)?"""
    fa = ctx.analysis
    if any(fa.imports.imports_module(p) for p in PRECISION_FRAMEWORKS):
        return True
    if fa.facts.calls_precision_choice():
        return True  # `parallelize_model(...)` of another file wraps the model with `MixedPrecisionPolicy`
    if fa.facts.called_in_low_precision():
        return True  # the trainer that calls this file's step casts the model to bf16 (picotron's `train.py`)
    if any(TRANSFORMERS_TRAINERS.match(q) for q in fa.imports.names.values()):  # `from transformers import Trainer`
        return True
    if autocast_uses(fa):
        return True
    for node in walk(ctx.tree):
        ident = (
            node.id if isinstance(node, ast.Name)
            else node.attr if isinstance(node, ast.Attribute)
            else node.arg if isinstance(node, (ast.arg, ast.keyword))
            else None
        )
        if ident and PRECISION_IDENT_RE.search(ident) and not (
                isinstance(node, (ast.Name, ast.arg)) and _PRECISION_METRIC_RE.match(ident)):
            return True  # (a `precision` variable is the metric: `precision, recall, f1, _ = ...`)
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
