"""Autograd mode: where gradient recording is off, and train/eval switches.

Small, general queries over a FileModel (results cached on it):

* `grad_off_functions(fa)`: names of the functions of this file that only run
  with autograd off: decorated with `no_grad` / `inference_mode`, or called
  (by name, or as a method by attribute name) from a `with no_grad()` /
  `inference_mode()` / `set_grad_enabled(...)` block or from another such
  function, transitively. A function called *anywhere* under a grad-off
  context counts (callers treat "may run with grad off" as off).
* `runs_with_grad_off(fa, ancestors)`: `FileModel.grad_disabled` plus those
  functions, `with` items that may disable grad (`torch.no_grad() if c else
  nullcontext()`, or a name bound to such a context in the same function),
  wrappers named after them (`@smart_inference_mode()`), and
  a statement `torch.set_grad_enabled(<not True>)` in the enclosing function or
  at module level. An explicit `with torch.enable_grad():` (innermost) wins;
  `grad_explicitly_on(fa, ancestors)` tells that case.
* train/eval switches are read in `gpulint.model.control.modes`
  (`mode_before`, `model_key`);
* `is_gradient_call(fa, call, ancestors)`: calls that need the autograd graph:
  `.backward()`, `manual_backward`, `torch.autograd.grad/backward`, gradient
  clipping, an optimizer step, a call given an optimizer (`loss_scaler(loss,
  optimizer)`); `needs_grad_call` adds calls of functions of this file that
  make one (`gradient_functions`).
* `is_frozen_model(fa, key, scope)`: `<model>.requires_grad_(False)` or
  `for p in <model>.parameters(): p.requires_grad = False` (or
  `p.requires_grad_(False)`) in `scope`.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import FUNCS
from gpulint.model.values.attributes import SELF_RETURNING
from gpulint.model.values.consumers import writes_out
from gpulint.model.values.kinds import OPTIMIZER
from gpulint.model.names import last_name
from gpulint.model.index.order import callee_name, scope_nodes
from gpulint.model.project.callgraph import functions_reaching
from gpulint.model.values.loaders import call_sites, passed_for
from gpulint.model.index.walk import child_nodes
from gpulint.model.control.modes import EVAL, mode_before, mode_of_switch, mode_switches, model_key

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

GRAD_ON_QUALNAMES = frozenset({"torch.enable_grad"})
GRAD_OFF_WORDS = ("no_grad", "nograd", "inference_mode")
GRADIENT_QUALNAMES = frozenset(
    {
        "torch.autograd.grad",
        "torch.autograd.backward",
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_value_",
    }
)


def _is_grad_on_ctx(fa: FileModel, expr: ast.AST) -> bool:
    """`torch.enable_grad()` / `set_grad_enabled(True)`: grad explicitly on."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    q = fa.imports.qualname(target)
    if q in GRAD_ON_QUALNAMES:
        return True
    if q == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
        a = expr.args[0]
        return isinstance(a, ast.Constant) and a.value is True
    return False


def is_grad_off_like(fa: FileModel, expr: ast.AST) -> bool:
    """`FileModel._is_grad_off_ctx`, or a project's own wrapper of it named
    after it (yolov5/ultralytics `@smart_inference_mode()`, `@torch_no_grad`),
    unless its first argument is a literal False."""
    if fa.contexts.is_grad_off_ctx(expr):
        return True
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = (last_name(target) or "").lower()
    if not any(w in name for w in GRAD_OFF_WORDS) or "enable" in name or name.startswith("is_"):
        return False
    if isinstance(expr, ast.Call) and expr.args:
        a = expr.args[0]
        return not (isinstance(a, ast.Constant) and a.value is False)
    return True


def _decorated_grad_off(fa: FileModel, func: ast.AST) -> bool:
    return any(is_grad_off_like(fa, d) for d in getattr(func, "decorator_list", ()))


def grad_off_functions(fa: FileModel) -> FrozenSet[str]:
    """Names of functions of this file that run with autograd off (see module doc)."""
    cache = fa.index.memo("grad_mode")
    found = cache.get("grad_off_functions")
    if found is not None:
        return found  # type: ignore[return-value]
    seeds: Set[str] = set()
    calls_from: Dict[str, Set[str]] = {}
    # (node, grad is off here, name of the innermost enclosing def)
    stack: List[Tuple[ast.AST, bool, Optional[str]]] = [(fa.tree, False, None)]
    while stack:
        node, off, fname = stack.pop()
        if isinstance(node, FUNCS):
            dec_off = _decorated_grad_off(fa, node)
            if dec_off:
                seeds.add(node.name)
            for d in node.decorator_list:
                stack.append((d, off, fname))
            for stmt in node.body:
                stack.append((stmt, dec_off, node.name))
            continue
        if isinstance(node, ast.Lambda):
            stack.append((node.body, False, fname))
            continue
        if isinstance(node, ast.Call):
            name = callee_name(node)
            if name is not None:
                if off:
                    seeds.add(name)
                elif fname is not None:
                    calls_from.setdefault(fname, set()).add(name)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inner = off
            for item in node.items:
                if is_grad_off_like(fa, item.context_expr):
                    inner = True
                elif _is_grad_on_ctx(fa, item.context_expr):
                    inner = False
                stack.append((item, off, fname))
            for stmt in node.body:
                stack.append((stmt, inner, fname))
            continue
        for child in child_nodes(node):
            stack.append((child, off, fname))
    result = set(seeds)
    todo = list(seeds)
    while todo:
        name = todo.pop()
        for callee in calls_from.get(name, ()):
            if callee not in result:
                result.add(callee)
                todo.append(callee)
    found = frozenset(result)
    cache["grad_off_functions"] = found
    return found


def _may_disable_grad(fa: FileModel, expr: ast.AST, scope: Optional[ast.AST]) -> bool:
    """A `with` item that may turn grad off: a grad-off context, either branch
    of a conditional expression, or a name bound to one in `scope`."""
    if is_grad_off_like(fa, expr):
        return True
    if isinstance(expr, ast.IfExp):
        return _may_disable_grad(fa, expr.body, scope) or _may_disable_grad(fa, expr.orelse, scope)
    if isinstance(expr, ast.BoolOp):
        return any(_may_disable_grad(fa, v, scope) for v in expr.values)
    if isinstance(expr, ast.Name) and scope is not None:
        for node in scope_nodes(scope):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == expr.id for t in node.targets
            ):
                if not isinstance(node.value, ast.Name) and _may_disable_grad(fa, node.value, None):
                    return True
    return False


def _grad_off_statement(fa: FileModel, nodes: Sequence[ast.AST]) -> bool:
    """A bare `torch.set_grad_enabled(<anything but True>)` statement among `nodes`."""
    for node in nodes:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and fa.imports.call_qualname(node.value) == "torch.set_grad_enabled"
            and fa.contexts.is_grad_off_ctx(node.value)
        ):
            return True
    return False


def _module_grad_off(fa: FileModel) -> bool:
    cache = fa.index.memo("grad_mode")
    v = cache.get("module_grad_off")
    if v is None:
        v = _grad_off_statement(fa, list(scope_nodes(fa.tree)))
        cache["module_grad_off"] = v
    return bool(v)


def runs_with_grad_off(fa: FileModel, ancestors: Sequence[ast.AST], own_only: bool = False) -> bool:
    """Whether code with these ancestors (module -> parent) may run with
    autograd off. With `own_only`, by the code of the innermost function
    alone (its decorators and the `with` blocks in it), not by where it is
    called from or what the module sets."""
    scope = fa.index.enclosing_scope(ancestors)
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in anc.items:
                if _is_grad_on_ctx(fa, item.context_expr):
                    return False
                if _may_disable_grad(fa, item.context_expr, scope):
                    return True
        elif isinstance(anc, FUNCS):
            if _decorated_grad_off(fa, anc) or (not own_only and (
                    anc.name in grad_off_functions(fa) or fa.facts.entered_grad_off(anc))):
                return True  # (every call the project makes of it runs with grad off, here or in another file)
            if _grad_off_statement(fa, list(scope_nodes(anc))):
                return True
            if own_only:
                return False
    if own_only:
        return False
    if fa.contexts.grad_disabled(ancestors):
        return True
    return _module_grad_off(fa)


def grad_explicitly_on(fa: FileModel, ancestors: Sequence[ast.AST]) -> bool:
    """Inside `with torch.enable_grad():` / `set_grad_enabled(True)` (or a function
    decorated with them), with no grad-off context nested inside it: the code
    asked for gradients on purpose."""
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in anc.items:
                if _is_grad_on_ctx(fa, item.context_expr):
                    return True
                if is_grad_off_like(fa, item.context_expr):
                    return False
        elif isinstance(anc, FUNCS):
            if any(_is_grad_on_ctx(fa, d) for d in anc.decorator_list):
                return True
            if _decorated_grad_off(fa, anc):
                return False
    return False


# ------------------------------------------------------------ train / eval
def evaluated_by_callers(fa: FileModel, func: ast.AST, key: str) -> bool:
    """`func` never switches the model `key` itself, and every call of it in
    this file (one at least) comes after its caller switched that model to
    eval mode: `self.net.eval()` then `self.inference(loader)` in a method of
    the same class, or `model.eval()` then `predict(model, loader)` for a
    parameter. The loop of `func` then runs the model in eval mode, though
    the switch is in another function."""
    if not isinstance(func, FUNCS) or any(k == key for _, k, _ in mode_switches(fa, func)):
        return False
    cache = fa.index.memoized("gpu501", "by_callers", dict)
    if (func, key) not in cache:
        cache[(func, key)] = _evaluated_by_callers(fa, func, key)
    return cache[(func, key)]


def _evaluated_by_callers(fa: FileModel, func: ast.AST, key: str) -> bool:
    attribute = key.startswith("self.")
    if attribute and not isinstance(fa.index.parents.get(func), ast.ClassDef):
        return False
    args = func.args  # type: ignore[attr-defined]
    if not attribute and key not in [a.arg for a in args.posonlyargs + args.args]:
        return False  # (a method's `self` attribute, or a parameter)
    calls = call_sites(fa, func)
    if not calls:
        # called from other files only: the project says whether each of those callers
        # switched the model it passes to eval mode first (SASRec's `evaluate(model, ...)`)
        return not attribute and fa.facts.evaluated_parameter(func, key)
    for call in calls:
        caller = fa.index.enclosing_scope(fa.index.ancestors(call)) or fa.tree  # (or the module's code)
        if caller is func:
            return False
        if attribute:
            passed: Optional[str] = key
        else:
            arg = passed_for(func, call, key)
            passed = model_key(arg) if arg is not None else None
        if passed is None or mode_before(fa, passed, call, caller) != EVAL:
            return False
    return True


def is_gradient_call(fa: FileModel, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """A call that needs the autograd graph: `.backward()`, Lightning's
    `manual_backward`, `torch.autograd.grad` / `backward`, gradient clipping,
    an optimizer step, or a call that is handed an optimizer."""
    if not isinstance(call, ast.Call):
        return False
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("backward", "manual_backward"):
        return True
    if fa.imports.call_qualname(call) in GRADIENT_QUALNAMES:
        return True
    if fa.steps.is_optimizer_step(call, ancestors):
        return True
    # `loss_scaler(loss, optimizer, ...)`, `train_step(model, batch, optimizer)`; not a checkpoint
    # saved or loaded with the optimizer's state (`save_checkpoint(dir, model, optimizer, epoch)`)
    if writes_out(call) or _LOADS_RE.match(last_name(call.func) or ""):
        return False
    args = list(call.args) + [kw.value for kw in call.keywords]
    return any(fa.values.kind(a, ancestors) == OPTIMIZER for a in args if isinstance(a, (ast.Name, ast.Attribute)))


_LOADS_RE = re.compile(r"_?(load|restore|resume)", re.I)


def gradient_functions(fa: FileModel) -> FrozenSet[str]:
    """Names of the functions of this file whose code needs the autograd graph
    (`is_gradient_call`), directly or through calls to other such functions
    (by name, or as a method by attribute name)."""
    cache = fa.index.memo("grad_mode")
    found = cache.get("gradient_functions")
    if found is not None:
        return found  # type: ignore[return-value]
    found = functions_reaching(
        fa.tree, lambda node, anc: isinstance(node, ast.Call) and is_gradient_call(fa, node, anc)
    )
    cache["gradient_functions"] = found
    return found


def needs_grad_call(fa: FileModel, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`is_gradient_call`, or a call of a function of this file that makes one."""
    if not isinstance(call, ast.Call):
        return False
    if is_gradient_call(fa, call, ancestors):
        return True
    recv = getattr(call.func, "value", None)
    if mode_of_switch(call) is not None and not (isinstance(recv, ast.Name) and recv.id in ("self", "cls")):
        return False  # `self.model.train()`: a module's mode switch, not the file's own `train`
    name = callee_name(call)
    return name is not None and name in gradient_functions(fa)


def _is_false_call(call: ast.AST, method: str) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == method
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value is False
    )


def _module_of(expr: ast.AST) -> ast.AST:
    """`m` for `m.eval().to(device)`: the module a chain of such calls gives back."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_RETURNING:
        expr = expr.func.value
    return expr


def is_frozen_model(fa: FileModel, key: str, scope: ast.AST, seen: frozenset = frozenset()) -> bool:
    """Whether `scope` turns off `requires_grad` on every parameter of model
    `key`: `key.requires_grad_(False)` (also at the end of a chain,
    `key.eval().requires_grad_(False)`, or in the value bound to `key`,
    `G = Net().train().requires_grad_(False)`), a loop over its parameters,
    or `key = copy.deepcopy(other)` of a frozen `other`."""
    for node in scope_nodes(scope):
        if _is_false_call(node, "requires_grad_") and model_key(_module_of(node.func.value)) == key:  # type: ignore[attr-defined]
            return True
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and model_key(node.targets[0]) == key:
            value = node.value
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_RETURNING:
                if _is_false_call(value, "requires_grad_"):
                    return True  # `G = Net().train().requires_grad_(False).to(device)`
                value = value.func.value
            if (isinstance(value, ast.Call) and fa.imports.call_qualname(value) == "copy.deepcopy" and value.args
                    and key not in seen):
                other = model_key(value.args[0])
                if other is not None and is_frozen_model(fa, other, scope, seen | {key}):
                    return True  # `G_ema = copy.deepcopy(G).eval()`
        if not isinstance(node, ast.For):
            continue
        it = node.iter
        target = node.target
        if isinstance(target, ast.Tuple) and target.elts:  # `for name, p in m.named_parameters()`
            target = target.elts[-1]
        if not (
            isinstance(target, ast.Name)
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Attribute)
            and it.func.attr in ("parameters", "named_parameters")
            and model_key(it.func.value) == key
        ):
            continue
        p = target.id
        # only an unconditional freeze (`if "lora" not in n:` keeps some parameters live)
        for stmt in node.body:
            inner = stmt.value if isinstance(stmt, ast.Expr) else stmt
            if (
                isinstance(inner, ast.Assign)
                and isinstance(inner.value, ast.Constant)
                and inner.value.value is False
                and any(
                    isinstance(t, ast.Attribute)
                    and t.attr == "requires_grad"
                    and isinstance(t.value, ast.Name)
                    and t.value.id == p
                    for t in inner.targets
                )
            ):
                return True
            if (
                _is_false_call(inner, "requires_grad_")
                and isinstance(inner.func.value, ast.Name)  # type: ignore[attr-defined]
                and inner.func.value.id == p  # type: ignore[attr-defined]
            ):
                return True
    return False
