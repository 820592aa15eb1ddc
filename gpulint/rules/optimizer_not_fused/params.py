"""Whose parameters an optimizer takes, and whether the file puts that model on
an accelerator.

* **Parameter owners** of an expression (the `params` argument of an
  optimizer): the receivers `X` of every `X.parameters()` /
  `X.named_parameters()` call in it (through `filter(...)`, comprehensions
  and param-group dicts), spelled as in the source (`model`, `self.model`,
  `model.head`). A name in it is followed to its bindings in the same scope,
  and to the loops of that scope over `X.(named_)parameters()` /
  `X.(named_)modules()` whose body mentions it (`decay.append(p)`), two
  levels deep. None when some part cannot be told (a parameter of the
  function, a call of another function): the caller then knows nothing.
* **Models on an accelerator**: dotted names the file moves to a device
  (`model.to(device)`, `model.cuda()`, `model = Net().to(device)`, also
  through `.train()`/`.half()`..., `DDP(...)`, `torch.compile(...)`), each
  with the node that moves it, and the models it hands to a library that
  places them (`accelerator.prepare(...)`, `fabric.setup(...)`).
  A parameter owner is on an accelerator when it, or a module it is part of
  (`model` for `model.head`), is among them.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Set, Tuple

from gpulint.model.file import FileModel
from gpulint.model.index.nodes import SCOPES
from gpulint.model.values.kinds import MODEL_SELF_METHODS
from gpulint.model.names import dotted
from gpulint.model.values.devices import move_target
from gpulint.model.index.walk import child_nodes, walk

_PARAM_METHODS = frozenset(("parameters", "named_parameters"))
_MODULE_WALKS = _PARAM_METHODS | {"modules", "named_modules", "children", "named_children"}
_WRAPPERS = frozenset(
    (
        "torch.nn.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.compile",
        "torch.distributed.fsdp.FullyShardedDataParallel",
    )
)
_WRAPPER_NAMES = frozenset(("DDP", "DistributedDataParallel", "FSDP", "FullyShardedDataParallel", "DataParallel"))
# `accelerator.prepare(model, ...)`, `fabric.setup(model, ...)`: the library places the model
_PLACING_METHODS = frozenset(("prepare", "prepare_model", "setup", "setup_module"))
_PLACERS = ("accelerat", "fabric")

MOVED = "moved"  # moved by the file itself (`.to(device)`, `.cuda()`)
PLACED = "placed"  # handed to accelerate / Fabric


def _scope_of(fa: FileModel, node: ast.AST) -> ast.AST:
    scope = fa.index.enclosing_scope(fa.index.ancestors(node))
    return scope if scope is not None else fa.tree


def param_owners(fa: FileModel, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[List[str]]:
    """The models whose parameters `expr` holds (see the module docstring), or
    None when that cannot be told."""
    scope = fa.index.enclosing_scope(ancestors)
    owners: List[str] = []
    if not _collect(fa, expr, scope if scope is not None else fa.tree, owners, set(), 0):
        return None
    return owners or None


def _collect(fa: FileModel, expr: ast.AST, scope: ast.AST, out: List[str], seen: Set[str], depth: int) -> bool:
    """Add the owners found in `expr` to `out`; False when some part of it is unknown."""
    names: List[str] = []
    before = len(out)
    for n in _param_nodes(expr):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _PARAM_METHODS:
            owner = dotted(n.func.value)
            if owner is None:
                return False
            out.append(owner)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
            names.append(n.id)
        elif isinstance(n, ast.Call) and not _is_param_passthrough(fa, n):
            return False  # `get_params(model)`, `model.trainable()`: unknown
        elif isinstance(n, ast.Attribute):
            return False  # `self.param_groups`, `cfg.params`: unknown
    if not names:
        return len(out) > before
    if depth >= 2:
        return False
    bindings = fa.host.host_bindings(scope)
    for name in names:
        if name in fa.imports.names:
            return False  # a module-level function or import used as parameters: unknown
        values = bindings.get(name)
        if not values:
            return False  # a global, a name bound elsewhere: unknown
        inner = seen | {name}
        for v in values:
            if v is None or not isinstance(v, ast.AST):
                return False  # a function parameter, a `with` target: unknown
            if not _collect(fa, v, scope, out, inner, depth + 1) and not _filled_by_loop(fa, name, scope, out):
                return False
    return len(out) > before


# calls whose result holds the parameters of their (non-function) arguments
_PASSTHROUGH = frozenset(("builtins.filter", "builtins.list", "builtins.tuple", "itertools.chain"))


def _is_param_passthrough(fa: FileModel, call: ast.Call) -> bool:
    return (fa.imports.qualname(call.func) or "") in _PASSTHROUGH or (
        isinstance(call.func, ast.Attribute) and call.func.attr == "from_iterable"
    )


def _param_nodes(expr: ast.AST):
    """The nodes of `expr` that can hold parameters: in a param-group dict only
    the value of `"params"` (not `"lr": lr`); in a comprehension only what it
    iterates; not a predicate (`filter`'s function, a lambda); the
    `X.parameters()` call itself but not `X`."""
    stack = [expr]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.Dict):
            stack.extend(
                v for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and k.value == "params"
            )
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            stack.extend(g.iter for g in n.generators)
        elif isinstance(n, ast.Lambda):
            continue
        elif isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute) and n.func.attr in _PARAM_METHODS:
                continue
            if isinstance(n.func, ast.Name) and n.func.id == "dict":
                stack.extend(kw.value for kw in n.keywords if kw.arg == "params")
                continue
            args = list(n.args)
            if isinstance(n.func, ast.Name) and n.func.id == "filter" and args:
                args = args[1:]
            stack.extend(a.value if isinstance(a, ast.Starred) else a for a in args)
        elif isinstance(n, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(n.elts)
        elif isinstance(n, ast.BinOp):
            stack.extend((n.left, n.right))  # `list(a.parameters()) + list(b.parameters())`
        elif isinstance(n, ast.Subscript):
            stack.append(n.value)  # `groups[0]`
        elif isinstance(n, ast.Starred):
            stack.append(n.value)


def _filled_by_loop(fa: FileModel, name: str, scope: ast.AST, out: List[str]) -> bool:
    """`for n, p in model.named_parameters(): ... decay.append(p)`: the loops of
    the scope over a model's parameters or modules whose body mentions `name`."""
    found = False
    body = scope.body if isinstance(getattr(scope, "body", None), list) else [getattr(scope, "body", scope)]
    stack: List[ast.AST] = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPES):
            continue
        if isinstance(n, (ast.For, ast.AsyncFor)):
            it = n.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in _MODULE_WALKS:
                owner = dotted(it.func.value)
                if owner is not None and any(
                    isinstance(m, ast.Name) and m.id == name for b in n.body for m in walk(b)
                ):
                    out.append(owner)
                    found = True
        stack.extend(child_nodes(n))
    return found


def _moved_expr(fa: FileModel, expr: ast.AST) -> Optional[ast.AST]:
    """The move in `expr` when its value is a model moved to a device:
    `Net().to(device)`, `model.cuda().train()`, `DDP(model.to(rank))`."""
    while isinstance(expr, ast.Call):
        if move_target(fa, expr) is not None:
            return expr
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in MODEL_SELF_METHODS:
            expr = func.value
            continue
        q = fa.imports.qualname(func) or ""
        if (q in _WRAPPERS or (dotted(func) or "").split(".")[-1] in _WRAPPER_NAMES) and expr.args:
            expr = expr.args[0]
            continue
        return None
    return None


def accelerator_models(fa: FileModel) -> Dict[str, List[Tuple[str, ast.AST]]]:
    """dotted name -> [(MOVED or PLACED, the call that does it)] for every model
    the file puts on an accelerator (see the module docstring)."""

    def build() -> Dict[str, List[Tuple[str, ast.AST]]]:
        out: Dict[str, List[Tuple[str, ast.AST]]] = {}

        def add(name: Optional[str], how: str, where: ast.AST) -> None:
            if name:
                out.setdefault(name, []).append((how, where))

        for call in fa.index.nodes(ast.Call):
            moved = move_target(fa, call)
            if moved is not None:
                add(dotted(moved[0]), MOVED, call)
                continue
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in _PLACING_METHODS:
                recv = (dotted(func.value) or "").lower()
                if any(p in recv for p in _PLACERS):
                    for a in call.args:
                        add(dotted(a.value if isinstance(a, ast.Starred) else a), PLACED, call)
        for node in fa.index.nodes(ast.Assign):
            value = node.value
            if isinstance(value, ast.Call) and len(node.targets) == 1:
                # `model, tokenizer = init_model(cfg, device=args.device)`, whose `return
                # model.to(device), tokenizer` the project knows (`CallFacts.moved_returns`)
                for i in fa.facts.moved_returns(value):
                    t = node.targets[0]
                    if i == -1:
                        add(dotted(t), MOVED, value)
                    elif isinstance(t, (ast.Tuple, ast.List)) and i < len(t.elts) and not any(
                            isinstance(e, ast.Starred) for e in t.elts):
                        add(dotted(t.elts[i]), MOVED, value)
            move = _moved_expr(fa, value)
            how = MOVED
            if move is None and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                if value.func.attr in _PLACING_METHODS and any(
                    p in (dotted(value.func.value) or "").lower() for p in _PLACERS
                ):
                    move, how = value, PLACED
            if move is None:
                continue
            for t in node.targets:
                elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                for e in elts:
                    add(dotted(e.value if isinstance(e, ast.Starred) else e), how, move)
        return out

    return fa.index.memoized("placement", "params.accelerator_models", build)  # type: ignore[return-value]


def placements(fa: FileModel, owner: str, ancestors: Sequence[ast.AST]) -> List[Tuple[str, ast.AST]]:
    """How the model `owner` (as spelled at a node with these `ancestors`), or
    a model it is part of (`model` for `model.head`), is put on an
    accelerator: [(MOVED or PLACED, the call)], empty when it is not. Only
    moves of the same variable count: in the scope that binds its name (the
    function, an enclosing one, or the module), and for `self.<attr>` in the
    methods of the same class."""
    models = accelerator_models(fa)
    parts = owner.split(".")
    if parts[0] == "self":
        cls = fa.index.enclosing_class(ancestors)

        def same(where: ast.AST) -> bool:
            return cls is not None and fa.index.enclosing_class(fa.index.ancestors(where)) is cls

    else:
        home = _binding_scope(fa, parts[0], ancestors)

        def same(where: ast.AST) -> bool:
            scope = fa.index.enclosing_scope(fa.index.ancestors(where))
            return (scope if scope is not None else fa.tree) is home

    out: List[Tuple[str, ast.AST]] = []
    for i in range(len(parts), 0, -1):
        if i == 1 and parts[0] == "self" and len(parts) > 1:
            break  # `self.to(device)` somewhere does not place `self.encoder`
        out.extend((how, where) for how, where in models.get(".".join(parts[:i]), ()) if same(where))
    return out


def _binding_scope(fa: FileModel, name: str, ancestors: Sequence[ast.AST]) -> ast.AST:
    """The innermost function around `ancestors` that binds `name` (an argument
    or an assignment), else the module."""
    for anc in reversed(ancestors):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name in fa.host.host_bindings(anc):
            return anc
    return fa.tree
