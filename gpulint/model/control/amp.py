"""Mixed precision: autocast regions, their dtypes, GradScalers, TF32 switches.

Small, general queries over a FileModel, shared by the AMP rules (GPU40x).
All of them are static and conservative: a dtype, device or `enabled=` that
is not a literal is *unknown*, and callers treat unknown as "could be
anything" (so they do not flag on it).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

AUTOCAST_QUALNAMES = frozenset({"torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast"})
BFLOAT16 = "bfloat16"
FLOAT16 = "float16"
_DTYPE_NAMES = {
    "torch.bfloat16": BFLOAT16,
    "torch.float16": FLOAT16,
    "torch.half": FLOAT16,
}
_DTYPE_STRINGS = {"bfloat16": BFLOAT16, "bf16": BFLOAT16, "float16": FLOAT16, "fp16": FLOAT16, "half": FLOAT16}
# positional parameters of each autocast flavour
_AUTOCAST_PARAMS = {
    "torch.amp.autocast": ("device_type", "dtype", "enabled", "cache_enabled"),
    "torch.cuda.amp.autocast": ("enabled", "dtype", "cache_enabled"),
    "torch.cpu.amp.autocast": ("enabled", "dtype", "cache_enabled"),
}


def call_argument(call: ast.Call, name: str, position: Optional[int]) -> Optional[ast.AST]:
    """The expression passed for parameter `name` (by keyword, or at `position`)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and position < len(call.args):
        if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return None
        return call.args[position]
    return None


def has_unpacking(call: ast.Call) -> bool:
    """`f(*args)` or `f(**kwargs)`: what is passed is not known statically."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)


def literal_bool(expr: Optional[ast.AST]) -> Optional[bool]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, bool):
        return expr.value
    return None


def is_autocast_call(fa: "FileModel", call: ast.AST) -> bool:
    return isinstance(call, ast.Call) and (fa.imports.qualname(call.func) or "") in AUTOCAST_QUALNAMES


def _autocast_param(fa: "FileModel", call: ast.Call, name: str) -> Optional[ast.AST]:
    params = _AUTOCAST_PARAMS.get(fa.imports.qualname(call.func) or "", ())
    return call_argument(call, name, params.index(name) if name in params else None)


def autocast_enabled(fa: "FileModel", call: ast.Call) -> Optional[bool]:
    """True/False for a literal (or absent: True) `enabled=`, None when not a literal."""
    if has_unpacking(call):
        return None
    expr = _autocast_param(fa, call, "enabled")
    if expr is None:
        return True
    return literal_bool(expr)


def autocast_device(fa: "FileModel", call: ast.Call) -> Optional[str]:
    """"cuda" / "cpu" / ... for a literal device, None when unknown."""
    q = fa.imports.qualname(call.func) or ""
    if q == "torch.cuda.amp.autocast":
        return "cuda"
    if q == "torch.cpu.amp.autocast":
        return "cpu"
    expr = _autocast_param(fa, call, "device_type")
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value.split(":", 1)[0]
    return None


def dtype_of(fa: "FileModel", expr: Optional[ast.AST]) -> Optional[str]:
    """BFLOAT16 / FLOAT16 for `torch.bfloat16`, `torch.half`, "bf16", ...; None otherwise."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return _DTYPE_STRINGS.get(expr.value)
    return _DTYPE_NAMES.get(fa.imports.qualname(expr) or "")


def autocast_dtype(fa: "FileModel", call: ast.Call) -> Optional[str]:
    """The low-precision dtype an autocast call uses: BFLOAT16, FLOAT16, or None when unknown.

    Without `dtype=`, CUDA autocast uses float16 and CPU autocast bfloat16."""
    if has_unpacking(call):
        return None
    expr = _autocast_param(fa, call, "dtype")
    if expr is not None:
        return dtype_of(fa, expr)
    device = autocast_device(fa, call)
    if device == "cuda":
        return FLOAT16
    if device == "cpu":
        return BFLOAT16
    return None


def autocast_uses(fa: "FileModel") -> List[ast.AST]:
    """Every reference to an autocast in the file: calls (with, decorators,
    plain calls) and bare references (`partial(torch.autocast, ...)`,
    `ctx = torch.cuda.amp.autocast`). Calls are returned as the Call node,
    bare references as the Name/Attribute node."""
    out: List[ast.AST] = []
    parents = fa.index.parents
    for node in fa.index.nodes(ast.Name, ast.Attribute):
        if isinstance(node, (ast.Name, ast.Attribute)) and (fa.imports.qualname(node) or "") in AUTOCAST_QUALNAMES:
            parent = parents.get(node)
            if isinstance(node, ast.Attribute) and isinstance(parent, ast.Attribute):
                continue  # part of a longer chain
            if isinstance(parent, ast.Call) and parent.func is node:
                out.append(parent)
            else:
                out.append(node)
    return out


def is_grad_scaler_call(fa: "FileModel", call: ast.AST) -> bool:
    """A GradScaler construction in any spelling: torch.cuda.amp.GradScaler,
    torch.amp.GradScaler, torch.GradScaler, torch.cpu.amp.GradScaler, FSDP's
    ShardedGradScaler."""
    if not isinstance(call, ast.Call):
        return False
    q = fa.imports.qualname(call.func) or ""
    if not q.startswith("torch."):
        return False
    last = q.rsplit(".", 1)[-1]
    return last in ("GradScaler", "ShardedGradScaler")


def is_autocast_decorated(fa: "FileModel", func: ast.AST) -> bool:
    """A def decorated with an autocast (`@torch.autocast("cuda")`), enabled."""
    for dec in getattr(func, "decorator_list", ()):
        if is_autocast_call(fa, dec) and autocast_enabled(fa, dec) is not False:
            return True
    return False


def autocast_region(fa: "FileModel", ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """The innermost autocast region the node runs in: an enabled `with
    <autocast>` statement, or a def decorated with an autocast; None when the
    innermost autocast in effect is disabled (`enabled=False`) or there is none.
    Does not look past the enclosing def (a def's body runs where it is called)."""
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return anc if is_autocast_decorated(fa, anc) else None
        if isinstance(anc, (ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in reversed(anc.items):
                expr = item.context_expr
                if fa.contexts.is_autocast_expr(expr):
                    if isinstance(expr, ast.Call) and autocast_enabled(fa, expr) is False:
                        return None
                    return anc
    return None


def torch_module_alias(fa: "FileModel") -> Optional[str]:
    """The name the `torch` module itself is bound to at module level
    (`import torch` -> "torch", `import torch as th` -> "th"), or None."""
    best = None
    for node in fa.tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name == "torch":
                    best = best or alias.asname
                elif not alias.asname and alias.name.split(".")[0] == "torch":
                    return "torch"
    return best
