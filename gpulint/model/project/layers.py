"""The layers a file's `nn.Module` classes build: what does their math
(convolutions, which cuDNN runs in TF32 by default, matmuls, and
attention), counted per class where the code builds them, for the
project's picture of the models a training loop trains (`summary`,
`models.ModelFiles`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Optional

from gpulint.model.names import ImportTable
from gpulint.model.values.host_built import bindings_of
from gpulint.model.values.values import module_class_names
from gpulint.model.index.walk import walk

if TYPE_CHECKING:
    from gpulint.model.index.tree import TreeIndex


# the layers of the file's `nn.Module` classes, by what does their math: convolutions
# (which cuDNN runs in TF32 by default), matmuls, and attention
CONV_LAYERS = frozenset(
    f"torch.nn.{k}" for k in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
)
MATMUL_LAYERS = frozenset(
    f"torch.nn.{k}" for k in ("Linear", "Bilinear", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell")
)
# attention layers proper: a transformer's matmul work
TRANSFORMER_LAYERS = frozenset(
    ["torch.nn.MultiheadAttention", "torch.nn.functional.scaled_dot_product_attention"]
    + [f"torch.nn.{k}" for k in ("Transformer", "TransformerEncoder", "TransformerDecoder",
                                 "TransformerEncoderLayer", "TransformerDecoderLayer")]
)
# and the products that attention-style code computes by hand
ATTENTION_CALLS = TRANSFORMER_LAYERS | frozenset(["torch.matmul", "torch.bmm", "torch.einsum", "torch.baddbmm"])


_LAYER_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in CONV_LAYERS | MATMUL_LAYERS | ATTENTION_CALLS)


# words of code that runs cuDNN kernels: convolutions and recurrent layers, and the model
# libraries and families built of them (`cudnn_words`)
_CUDNN_WORDS = ("lstm", "gru", "rnn", "cnn", "torchvision", "timm", "resnet", "vgg", "densenet", "mobilenet",
                "efficientnet", "inception", "unet", "yolo", "cudnn_rnn", "conv")
# ... "conv" but not "convert", "converge", "convex", "convince", "convention", "convey"
_NOT_CONV = ("er", "ex", "in", "en", "ey", "ic", "oy")


# bits of `cudnn_words`
NAMES_CUDNN_WORK, DEFINES_MODULES, SETS_CUDNN_DETERMINISTIC = 1, 2, 4


def cudnn_words(text: str) -> int:
    """NAMES_CUDNN_WORK where the text names a convolution or recurrent
    layer (`nn.Conv2d`, `F.conv1d`, `self.conv3`, `nn.LSTM`), or a model
    library or family built of them (`torchvision`, `timm`, `resnet`):
    cuDNN may run its kernels; `convert` and its like do not count. And
    DEFINES_MODULES where it defines an `nn.Module` subclass (`(nn.Module)`),
    and SETS_CUDNN_DETERMINISTIC where it names `cudnn.deterministic` (the
    only file that asks `Programs.cudnn_free`). A plain scan of the
    lower-cased text."""
    low = text.lower()
    found = DEFINES_MODULES if "nn.module)" in low or "(module)" in low else 0
    if "cudnn.deterministic" in low:
        found |= SETS_CUDNN_DETERMINISTIC
    if any(word in low for word in _CUDNN_WORDS[:-1]):
        return found | NAMES_CUDNN_WORK
    at = low.find("conv")
    while at >= 0:
        if low[at + 4:at + 6] not in _NOT_CONV:
            return found | NAMES_CUDNN_WORK
        at = low.find("conv", at + 4)
    return found


def total_layers(per_class: Dict[str, Dict[str, int]]) -> Dict[str, int]:
    """The sum of a file's `class_layer_counts` ({} for none)."""
    total: Dict[str, int] = {}
    for counts in per_class.values():
        for k, n in counts.items():
            total[k] = total.get(k, 0) + n
    if total:
        for k in ("conv", "matmul", "attention"):
            total.setdefault(k, 0)
    return total


def class_layer_counts(tree: ast.Module, imports: ImportTable,
                       index: Optional["TreeIndex"] = None) -> Dict[str, Dict[str, int]]:
    """class -> {"conv": n, "matmul": n, "attention": n, "transformer": n}: the
    layers each `nn.Module` class at the file's top level builds
    (`nn.Conv2d(...)`, `nn.Linear(...)`, counted where the code builds them),
    the attention-style products their code computes (`q @ k.transpose(...)`,
    `torch.matmul`, `nn.MultiheadAttention`), and of those the attention
    layers proper (`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`,
    `F.scaled_dot_product_attention`); classes that build none are left out. Read from
    the tree and its imports (and the file's `index`, where it has one, to
    visit only calls and products): the file need not be modelled."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if not classes:
        return {}
    modules = {classes[n] for n in module_class_names(classes, imports)}
    if not modules:
        return {}
    per_class: Dict[str, Dict[str, int]] = {}
    # the file's functions that build a convolution (`def WNConv1d(*a, **k): return weight_norm(nn.Conv1d(*a, **k))`)
    conv_helpers = {
        n.name for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _returns_conv(n, imports)
    }
    if index is not None:
        parents = index.parents
        found = []
        for node in index.nodes_of(ast.Call, ast.BinOp):
            owner = parents.get(node)
            while owner is not None and not isinstance(owner, ast.ClassDef):
                owner = parents.get(owner)
            if owner in modules:
                found.append((node, owner))
    else:
        found = [(n, cls) for cls in modules for n in walk(cls) if isinstance(n, (ast.Call, ast.BinOp))]
    weighted: Dict[ast.AST, Dict[str, bool]] = {}
    for node, owner in found:
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, ast.MatMult):
                continue
        else:
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if called not in _LAYER_NAMES and called not in conv_helpers:
                continue
        counts = per_class.setdefault(owner.name, {"conv": 0, "matmul": 0, "attention": 0})
        if isinstance(node, ast.BinOp):
            if not _weights_only(node, index, weighted):
                counts["attention"] += 1
            continue
        q = imports.call_qualname(node)
        if q in CONV_LAYERS or (isinstance(node.func, ast.Name) and node.func.id in conv_helpers):
            counts["conv"] += 1
        elif q in MATMUL_LAYERS:
            counts["matmul"] += 1
        elif q in ATTENTION_CALLS and (q in TRANSFORMER_LAYERS or not _weights_only(node, index, weighted)):
            counts["attention"] += 1
            if q in TRANSFORMER_LAYERS:
                counts["transformer"] = counts.get("transformer", 0) + 1
    return {name: counts for name, counts in per_class.items() if any(counts.values())}


def _weights_only(product: ast.AST, index: Optional["TreeIndex"], memo: Dict[ast.AST, Dict[str, bool]]) -> bool:
    """A product of the module's own weights only (`torch.einsum('rxy,rz->rxyz',
    self.xy_plane[0], self.z_vec[0, :, :, 0])`, and then of names the function
    binds to such products): a tensor factorisation rebuilding a voxel grid
    from its factors, not matmul work on the data. A product with an input
    (`theta @ self.basis`, `torch.bmm(q, w)`) counts."""
    if isinstance(product, ast.BinOp):
        operands = [product.left, product.right]
    else:
        args = list(product.args)  # type: ignore[attr-defined]
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            args = args[1:]  # (an einsum's equation)
        operands = args
    if not operands:
        return False
    func = None
    if index is not None:
        func = index.parents.get(product)
        while func is not None and not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            func = index.parents.get(func)
    bound = _weight_names(index, func, memo) if index is not None and isinstance(
        func, (ast.FunctionDef, ast.AsyncFunctionDef)) else {}
    return all(_a_weight(o, bound) for o in operands)


def _a_weight(expr: ast.AST, bound: Dict[str, bool]) -> bool:
    """`self.w`, `self.w[0, :, :, 0]`, or a name bound only to products of such."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id == "self"
    return isinstance(expr, ast.Name) and bound.get(expr.id, False)


def _weight_names(index: "TreeIndex", func: ast.AST, memo: Dict[ast.AST, Dict[str, bool]]) -> Dict[str, bool]:
    """name -> every binding of it in `func` is a plain assignment of a sum or
    product of the module's weights only (`feat = torch.cat([torch.einsum(...,
    self.a, self.b), ...])`; a name bound some other way, `+=`, a loop target,
    unpacking, is not followed)."""
    found = memo.get(func)
    if found is not None:
        return found
    found = memo[func] = {}
    for name, bound in bindings_of(index, func).items():
        found[name] = all(isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
                          and _built_from_weights(st.value, found) for st in bound)
    return found


def _built_from_weights(expr: ast.AST, bound: Dict[str, bool]) -> bool:
    """Every leaf of `expr` is a weight (`_a_weight`) or a constant, joined by
    products, sums and `torch.cat`/`torch.stack`/`einsum` calls."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.BinOp):
        return _built_from_weights(expr.left, bound) and _built_from_weights(expr.right, bound)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_built_from_weights(e, bound) for e in expr.elts)
    if isinstance(expr, ast.Call) and _called(expr.func) in ("einsum", "cat", "stack", "matmul", "bmm", "mm"):
        args = list(expr.args)
        if args and isinstance(args[0], ast.Constant):
            args = args[1:]
        return bool(args) and all(_built_from_weights(a, bound) for a in args)
    return _a_weight(expr, bound)


def _called(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _returns_conv(func: ast.AST, imports: ImportTable) -> bool:
    """A helper whose body returns a call that builds a convolution layer."""
    for node in walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            if any(isinstance(c, ast.Call) and imports.call_qualname(c) in CONV_LAYERS for c in walk(node.value)):
                return True
    return False


_LAYER_WORDS = ("Conv", "Linear", "LSTM", "GRU", "RNN", "@", "matmul", "bmm", "einsum", "ttention", "Transformer")


def may_build_layers(text: str) -> bool:
    """The text may define `nn.Module` classes that build layers (see `class_layer_counts`)."""
    return "Module" in text and any(w in text for w in _LAYER_WORDS)
