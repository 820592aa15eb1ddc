"""Train and eval modes: where a function switches a model to evaluation
mode (`model.eval()`, `model.train(False)`) or back to training.

* `model_key(expr)`: one spelling for a model, `self.model.module` ->
  `self.model`, to tell whether two expressions name the same model.
* `forward_model_key(call)`: the model a forward call runs.
* `mode_switches(fa, scope)`: every switch of the function (or module code),
  in source order; `mode_before(fa, key, node, scope)`: "eval" / "train" /
  None, the last switch of model `key` before `node`; `eval_before`: some
  model is in eval mode there; `switching_scopes(fa)`: the functions that
  switch one at all.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional, Set, Tuple

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import end_of, scope_nodes, start_of, stored_names
from gpulint.model.names import dotted

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

EVAL = "eval"
TRAIN = "train"
_MODEL_WRAPPER_ATTRS = ("module", "_orig_mod")


def model_key(expr: ast.AST) -> Optional[str]:
    """`model`, `self.model`; wrappers (`.module`, `._orig_mod`) are dropped."""
    while isinstance(expr, ast.Attribute) and expr.attr in _MODEL_WRAPPER_ATTRS:
        expr = expr.value
    return dotted(expr)


def forward_model_key(call: ast.Call) -> Optional[str]:
    """The model a forward call runs: `model(x)`, `model.forward(x)`, `model.module(x)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return model_key(func)


def mode_of_switch(call: ast.Call) -> Optional[str]:
    """EVAL for `.eval()` / `.train(False)`; TRAIN for `.train()`, `.train(True)`
    and `.train(<expr>)` (which may switch training on)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "eval" and not call.args and not call.keywords:
        return EVAL
    if func.attr == "train":
        arg = call.args[0] if call.args else None
        for kw in call.keywords:
            if kw.arg == "mode":
                arg = kw.value
        if isinstance(arg, ast.Constant) and arg.value is False:
            return EVAL
        return TRAIN
    return None


def mode_switches(fa: FileModel, scope: ast.AST) -> List[Tuple[Tuple[int, int], str, str]]:
    """(position, model key, EVAL/TRAIN) of every train/eval switch in `scope`,
    in source order. `model = Net().to(dev).eval()` switches `model` at the
    assignment."""
    cache = fa.index.memo("grad_mode")
    key = ("mode_switches", id(scope))
    found = cache.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    out: List[Tuple[Tuple[int, int], str, str]] = []
    for node in scope_nodes(scope):
        if isinstance(node, ast.Call):
            mode = mode_of_switch(node)
            if mode is not None:
                k = model_key(node.func.value)  # type: ignore[attr-defined]
                for each in _models_iterated(fa, node, k):
                    out.append((end_of(node), each, mode))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            # `model = build().eval()`: the eval() receiver has no name of its own
            mode = None
            cur = node.value
            while isinstance(cur, ast.Call) and isinstance(cur.func, ast.Attribute):
                m = mode_of_switch(cur)
                if m is not None and model_key(cur.func.value) is None:
                    mode = mode or m
                cur = cur.func.value
            if mode is None and isinstance(node.value, ast.Call) and fa.facts.returns_evaluated(node.value):
                mode = EVAL  # `model = get_model(name)`, a project function that returns it in eval mode
            if mode is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    k = model_key(t)
                    if k is not None:
                        out.append((end_of(node), k, mode))
    out.sort()
    cache[key] = out
    return out


def _models_iterated(fa: FileModel, call: ast.Call, key: Optional[str]) -> List[str]:
    """The models a switch `key.eval()` names: `key` itself, or, where `key`
    is the variable of a loop or comprehension over a literal tuple or list
    (`[x.eval() for x in (embedding_net, cls_head)]`, `for m in [G, D]:
    m.train()`), each model of that literal."""
    if key is None:
        return []
    if "." in key:
        return [key]
    for anc in reversed(fa.index.ancestors(call)):
        generators = anc.generators if isinstance(anc, (ast.ListComp, ast.SetComp, ast.GeneratorExp)) else (
            [anc] if isinstance(anc, ast.For) and call not in anc.orelse else [])
        for gen in generators:
            if isinstance(gen.target, ast.Name) and gen.target.id == key:
                if not isinstance(gen.iter, (ast.Tuple, ast.List)):
                    return [key]
                return [k for k in map(model_key, gen.iter.elts) if k is not None]
        if isinstance(anc, FUNCS + (ast.Lambda, ast.ClassDef)):
            break
    return [key]


def evaluated_at_module_level(fa: FileModel, key: str, scope: ast.AST) -> bool:
    """`key`, a module-level model that the top-level function `scope` uses
    without binding it, is in eval mode whenever the function runs: the
    module code switches it to eval mode (`net.eval()` after loading it, in
    an evaluation script) and nothing in the file switches it back to
    training mode."""
    if "." in key or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or fa.index.parents.get(scope) is not fa.tree:
        return False
    switches = [mode for _, k, mode in mode_switches(fa, fa.tree) if k == key]
    if not switches or any(mode != EVAL for mode in switches):
        return False
    if any(k == key and mode != EVAL for s in switching_scopes(fa) if s is not None
           for _, k, mode in mode_switches(fa, s)):
        return False
    args = scope.args
    if any(a.arg == key for a in args.posonlyargs + args.args + args.kwonlyargs):
        return False
    return key not in stored_names(fa.index).get(scope, ())


def switching_scopes(fa: FileModel) -> Set[Optional[ast.AST]]:
    """The defs (and module code) whose own code switches a model's mode
    (`mode_of_switch`), or calls a project function that returns a model in
    eval mode: only there can `mode_switches` find one, from one pass over
    the file's calls."""
    return fa.index.memoized("modes.switching", None, lambda: {
        fa.index.owner(c) for c in fa.index.nodes_of(ast.Call)
        if mode_of_switch(c) is not None or fa.facts.returns_evaluated(c)})


def mode_before(fa: FileModel, key: str, node: ast.AST, scope: ast.AST) -> Optional[str]:
    """The last train/eval switch of model `key` in `scope` before `node`, or None."""
    last = None
    start = start_of(node)
    for pos, k, mode in mode_switches(fa, scope):
        if pos > start:
            break
        if k == key:
            last = mode
    return last


def eval_before(fa: FileModel, node: ast.AST, scope: ast.AST) -> bool:
    """Some model of `scope` is switched to eval mode before `node` (else
    `mode_before` is EVAL for no key)."""
    start = start_of(node)
    return any(mode == EVAL for pos, _, mode in mode_switches(fa, scope) if pos <= start)
