"""Which `DataLoader(...)` a batch comes from.

* **Batch source**: for a batch expression (`images`, `batch["input_ids"]`,
  `v` in `{k: v.to(dev) for k, v in batch.items()}`), the loop (or `next()`
  call) that produced it and the loader expression it iterates, found by
  walking from the use to the binding of its root name: the enclosing
  `for`/comprehension that binds it, else the last assignment before it in
  the same function.
* **Loader construction**: the `DataLoader(...)` call(s) a loader expression
  refers to: a name assigned in the same function, else the same name (or
  `self` attribute) assigned elsewhere in the file, else, for a parameter of
  a function of the file, the loaders its call sites in the file hand it,
  else, for a parameter or an unknown loader, the file's only
  `DataLoader(...)` call. `None` when that
  cannot be told (the name is also bound to something else, several files'
  worth of loaders, ...).

Everything is cached per file on the file's index.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import FUNCS, SCOPES
from gpulint.model.index.order import nodes_in_order
from gpulint.model.names import last_name
from gpulint.model.values.devices import helper_move_target, move_target, type_move_target
from gpulint.model.values.host_built import plain_bindings
from gpulint.model.values.kinds import unwrap_iter
from gpulint.model.index.walk import child_nodes, walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

# ------------------------------------------------------------- batch sources
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _root(expr: ast.AST, methods: Optional[Set[str]] = None) -> ast.AST:
    """`batch` for `batch["x"]`, `batch.items()`, `batch[0].float()`; the
    names of the methods called on the way go into `methods`."""
    while True:
        if isinstance(expr, (ast.Subscript, ast.Attribute, ast.Starred)):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if methods is not None:
                methods.add(expr.func.attr)
            expr = expr.func.value
        else:
            return expr


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(target))


def _in_list(node: ast.AST, body: Sequence[ast.AST]) -> bool:
    return any(node is b for b in body)


def _pos(node: ast.AST) -> Tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> Tuple[int, int]:
    row = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
    return (row, getattr(node, "end_col_offset", None) or 0)


def _scope_nodes(scope: ast.AST):
    body = scope.body if isinstance(getattr(scope, "body", None), list) else [scope.body]  # type: ignore[attr-defined]
    return nodes_in_order(body)


def batch_source(
    fa: "FileModel",
    expr: ast.AST,
    ancestors: Sequence[ast.AST],
    methods: Optional[Set[str]] = None,
    _depth: int = 0,
    params: Optional[List[Tuple[ast.AST, str]]] = None,
) -> Optional[Tuple[ast.AST, ast.AST]]:
    """(producer, loader expression) for a batch expression: the `for` loop
    (or `next(...)` call) over a loader that the value comes from, and the
    loader it iterates. None when the value cannot be traced to a loader.
    The names of the methods applied to the value on its way from the loader
    (`pin_memory`, `float`, `items`, ...) are added to `methods`. When the
    value comes, unchanged or unpacked, from a parameter of the enclosing
    function (bound nowhere before the use in it), (function, parameter
    name) is appended to `params`."""
    if _depth > 12:
        return None
    root = _root(expr, methods)
    if isinstance(root, ast.Call):
        return _next_source(fa, root, ancestors)
    if not isinstance(root, ast.Name):
        return None
    name = root.id
    chain = list(ancestors) + [expr]
    scope: ast.AST = fa.tree
    loop: Optional[Tuple[ast.AST, ast.AST, List[ast.AST]]] = None  # (producer, iterable, its ancestors)
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if loop is None and isinstance(anc, (ast.For, ast.AsyncFor)):
            if (_in_list(child, anc.body) or _in_list(child, anc.orelse)) and _binds(anc.target, name):
                loop = (anc, anc.iter, chain[:i])
        elif loop is None and isinstance(anc, _COMPREHENSIONS):
            # a use inside generator k (its iter or ifs) sees the targets of the
            # generators before it; one in the element sees them all
            gens = list(anc.generators)
            for k, gen in enumerate(gens):
                if child is gen:
                    gens = gens[:k]
                    break
            for gen in reversed(gens):
                if _binds(gen.target, name):
                    loop = (anc, gen.iter, chain[: i + 1])
                    break
        elif isinstance(anc, SCOPES):
            scope = anc
            break
    # the last assignment to the name before the use, in the same scope
    best: Optional[ast.AST] = None
    use = _pos(root)
    for node in _scope_nodes(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_binds(t, name) for t in targets) and _end(node) <= use:
                if best is None or _pos(node) > _pos(best):
                    best = node
    if loop is not None and (best is None or not _encloses(loop[0], best)):
        return _from_iterable(fa, loop[0], loop[1], loop[2], methods, _depth, params)
    if best is None:
        if params is not None and loop is None and name not in ("self", "cls"):
            if _is_param(scope, name) and not _rebound(scope, name):
                params.append((scope, name))
        return None
    targets = best.targets if isinstance(best, ast.Assign) else [best.target]  # type: ignore[attr-defined]
    value = best.value  # type: ignore[attr-defined]
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            if len(t.elts) == len(value.elts):
                for te, ve in zip(t.elts, value.elts):
                    if _binds(te, name):
                        value = ve
                        break
    if isinstance(value, (ast.Name, ast.Subscript, ast.Attribute, ast.Call)):
        return batch_source(fa, value, fa.index.ancestors(value), methods, _depth + 1, params)
    return None


def _is_param(scope: ast.AST, name: str) -> bool:
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    a = scope.args
    return any(p.arg == name for p in a.posonlyargs + a.args + a.kwonlyargs)


def _rebound(scope: ast.AST, name: str) -> bool:
    """The parameter is assigned somewhere in the function (other than in
    nested functions): its value at a use may not be the argument's."""
    todo: List[ast.AST] = list(scope.body)  # type: ignore[attr-defined]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        targets: List[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        if any(_binds(t, name) for t in targets):
            return True
        todo.extend(child_nodes(node))
    return False


def call_sites(fa: "FileModel", fn: ast.AST) -> List[ast.Call]:
    """The calls of `fn` in the file: `self.<fn>(...)` in the class that
    defines the method, or `<fn>(...)` for a function defined once at module
    level whose name nothing rebinds. Empty when `fn` is neither (a static or
    class method, a property, a name defined twice)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    owner = fa.index.parents.get(fn)
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    decorators = {last_name(d) for d in fn.decorator_list}
    if isinstance(owner, ast.ClassDef):
        if decorators & {"staticmethod", "classmethod", "property"} or not positional or positional[0] != "self":
            return []
        if sum(
            isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)) and i.name == fn.name for i in owner.body
        ) != 1:
            return []

        def is_call(c: ast.Call) -> bool:
            f = c.func
            return (
                isinstance(f, ast.Attribute)
                and f.attr == fn.name
                and isinstance(f.value, ast.Name)
                and f.value.id == "self"
                and fa.index.enclosing_class(fa.index.ancestors(c)) is owner
            )

    elif isinstance(owner, ast.Module):
        defined = sum(
            isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and i.name == fn.name
            for i in fa.index.nodes(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        )
        imported = any(
            (a.asname or a.name.split(".")[0]) == fn.name
            for n in fa.index.nodes(ast.Import, ast.ImportFrom)
            for a in n.names
        )
        if defined != 1 or imported or any(_binds(t, fn.name) for t, _, _ in all_assignments(fa)):
            return []  # the name may call something else

        def is_call(c: ast.Call) -> bool:
            return isinstance(c.func, ast.Name) and c.func.id == fn.name

    else:
        return []
    return [node for node in _calls_named(fa, fn.name) if is_call(node)]


def _calls_named(fa: "FileModel", name: str) -> List[ast.Call]:
    """The calls of the file whose callee is `name` or `<...>.name`, in
    source order (indexed once per file: `call_sites` asks per function)."""
    def build() -> dict:
        out: dict = {}
        for c in fa.index.nodes(ast.Call):
            f = c.func  # type: ignore[attr-defined]
            n = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if n is not None:
                out.setdefault(n, []).append(c)
        return out

    return fa.index.memoized("loaders.calls_by_name", None, build).get(name, [])


def passed_for(fn: ast.AST, call: ast.Call, param: str) -> Optional[ast.AST]:
    """The argument `call` (one of `call_sites(fa, fn)`) gives for parameter
    `param` of `fn`: by keyword, else by position (not where `*args` comes
    at or before it); None where it gives none."""
    a = fn.args  # type: ignore[attr-defined]
    positional = [p.arg for p in a.posonlyargs + a.args]
    if positional and positional[0] == "self" and isinstance(call.func, ast.Attribute):
        positional = positional[1:]
    arg = next((k.value for k in call.keywords if k.arg == param), None)
    if arg is None and param in positional:
        index = positional.index(param)
        if any(isinstance(x, ast.Starred) for x in call.args[: index + 1]):
            return None
        if len(call.args) > index:
            arg = call.args[index]
    return arg


def _call_sites(fa: "FileModel", fn: ast.AST, param: str) -> List[ast.AST]:
    """The arguments given for parameter `param` of `fn` at its call sites in
    the file (`call_sites`), where a site gives one."""
    return [arg for call in call_sites(fa, fn) for arg in [passed_for(fn, call, param)] if arg is not None]


def _encloses(outer: ast.AST, inner: ast.AST) -> bool:
    return _pos(outer) <= _pos(inner) and _end(inner) <= _end(outer)


def _from_iterable(fa, producer, it, ancestors, methods, depth, params=None) -> Optional[Tuple[ast.AST, ast.AST]]:
    base, _ = fa.values.unwrap(it)
    info = fa.values.info_for(ancestors)
    if fa.values.is_loader(base, info.kinds):
        return producer, base
    if isinstance(base, ast.Call) and last_name(base.func) == "zip":
        return None
    # iterating something taken from a batch (`batch.items()`, `batch`): follow it
    return batch_source(fa, base, fa.index.ancestors(base), methods, depth + 1, params)


def _next_source(fa: "FileModel", call: ast.Call, ancestors) -> Optional[Tuple[ast.AST, ast.AST]]:
    if not (isinstance(call.func, ast.Name) and call.func.id == "next" and call.args):
        return None
    it = call.args[0]
    info = fa.values.info_for(ancestors)
    if isinstance(it, ast.Call) and last_name(it.func) == "iter" and it.args:
        if fa.values.is_loader(it.args[0], info.kinds):
            return call, it.args[0]
        return None
    if isinstance(it, ast.Name):
        scope = fa.index.enclosing_scope(ancestors) or fa.tree
        values = [
            n.value
            for n in _scope_nodes(scope)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == it.id for t in n.targets)
        ]
        if len(values) >= 1 and all(
            isinstance(v, ast.Call) and last_name(v.func) == "iter" and v.args for v in values
        ):
            loaders = {ast.dump(v.args[0]) for v in values}  # type: ignore[attr-defined]
            if len(loaders) == 1 and fa.values.is_loader(values[0].args[0], info.kinds):  # type: ignore[attr-defined]
                return call, values[0].args[0]  # type: ignore[attr-defined]
    return None


# ------------------------------------------------------ loader constructions
# class names of DataLoaders: torch's, and torchdata's resumable drop-in
# replacement (same arguments, same worker processes)
DATALOADER_NAMES = frozenset(("DataLoader", "StatefulDataLoader"))


def is_dataloader_call(fa: "FileModel", node: ast.AST) -> bool:
    """Any call of a class named DataLoader (torch's or another library's),
    or torchdata's `StatefulDataLoader`."""
    return isinstance(node, ast.Call) and last_name(node.func) in DATALOADER_NAMES


def is_torch_dataloader_call(fa: "FileModel", node: ast.AST) -> bool:
    """`torch.utils.data.DataLoader(...)` (any import form) or a subclass that
    takes its arguments (PyG, MONAI, torchdata's `StatefulDataLoader`)."""
    if not isinstance(node, ast.Call):
        return False
    q = fa.imports.qualname(node.func) or ""
    if fa.facts.subclass_of(node) == "torch.utils.data.DataLoader":
        return True  # a subclass the project defines (one that sets its own `collate_fn`)
    return q in (
        "torch.utils.data.DataLoader",
        "torch_geometric.loader.DataLoader",
        "torch_geometric.data.DataLoader",
        "monai.data.DataLoader",
        "torchdata.stateful_dataloader.StatefulDataLoader",
        "torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader",
    )


def dataloader_calls(fa: "FileModel") -> List[ast.Call]:
    return fa.index.memoized(  # type: ignore[return-value]
        "placement", "dataloader_calls", lambda: [n for n in fa.index.nodes(ast.Call) if is_dataloader_call(fa, n)]
    )


def all_assignments(fa: "FileModel") -> List[Tuple[ast.AST, ast.AST, ast.AST]]:
    """(target, value, statement) for every simple or unpacking assignment in the file."""

    def build():
        out = []
        kinds = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.With,
                 ast.AsyncWith, ast.NamedExpr)
        for node in fa.index.nodes(*kinds):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    out.append((t, node.value, node))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                out.append((node.target, node.value, node))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                out.append((node.target, None, node))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        out.append((item.optional_vars, None, node))
            elif isinstance(node, ast.NamedExpr):
                out.append((node.target, node.value, node))
        return out

    return fa.index.memoized("placement", "assignments", build)  # type: ignore[return-value]


def _same_target(target: ast.AST, ref: ast.AST) -> bool:
    if isinstance(ref, ast.Name):
        return isinstance(target, ast.Name) and target.id == ref.id
    if isinstance(ref, ast.Attribute) and isinstance(ref.value, ast.Name) and ref.value.id == "self":
        return (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and target.attr == ref.attr
        )
    return False


def binds_ref(target: ast.AST, ref: ast.AST) -> bool:
    if _same_target(target, ref):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(binds_ref(e, ref) for e in target.elts)
    if isinstance(target, ast.Starred):
        return binds_ref(target.value, ref)
    return False


def _resolve(fa: "FileModel", bindings, ref: ast.AST, depth: int = 0) -> Optional[List[ast.Call]]:
    """All bindings must assign a DataLoader(...) (or None): directly, or
    through a method of the same class that returns one (`self.loader =
    self._setup_data(...)`, `self.sampler, self.loader = self._setup_data(...)`
    with `return sampler, loader`)."""
    calls: List[ast.Call] = []
    for target, value, stmt in bindings:
        if value is None:
            return None
        values = _bound_values(fa, target, value, ref, stmt, depth)
        if values is None:
            return None
        for v, v_ancestors in values:
            if isinstance(v, ast.Constant) and v.value is None:
                continue
            if is_dataloader_call(fa, v):
                calls.append(v)  # type: ignore[arg-type]
                continue
            if isinstance(v, (ast.Call, ast.Name)) and v_ancestors is None and depth < 3 and len(bindings) > 1:
                # `dataloader = tqdm(loader)` in one branch, `dataloader = loader` in the other
                # (StableTTS's vocoder loop): what the wrapper walks, what the other name holds. (A
                # name bound once to a wrapper is the loop's own business: `batch_source` unwraps it)
                inner = unwrap_iter(v)[0] if isinstance(v, ast.Call) else v
                if isinstance(v, ast.Call) and inner is v:
                    return None  # a call of something else: not known
                if isinstance(inner, ast.Name) and isinstance(ref, ast.Name) and inner.id == ref.id:
                    return None  # (`loader = tqdm(loader)`: the name's own other bindings say)
                found = loader_constructions(fa, inner, fa.index.ancestors(inner), depth + 1)
                if found is None:
                    return None
                calls.extend(found)
                continue
            if v_ancestors is None or not isinstance(v, ast.Name) or depth >= 3:
                return None
            # a name returned by the method: only its bindings in that method
            scope = fa.index.enclosing_scope(v_ancestors)
            local = [
                b
                for b in all_assignments(fa)
                if binds_ref(b[0], v) and fa.index.enclosing_scope(fa.index.ancestors(b[2])) is scope
            ]
            inner = _resolve(fa, local, v, depth + 1) if local else None
            if inner is None:
                return None
            calls.extend(inner)
    calls = list({id(c): c for c in calls}.values())  # (two bindings may reach one loader)
    return calls or None


def _bound_values(
    fa: "FileModel", target: ast.AST, value: ast.AST, ref: ast.AST, stmt: ast.AST, depth: int
) -> Optional[List[Tuple[ast.AST, Optional[List[ast.AST]]]]]:
    """The expression(s) that `target = value` binds `ref` to, each with its
    ancestors when it comes from a `return` of a method (None otherwise);
    None when that cannot be told."""
    index: Optional[int] = None
    size = 0
    if isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        hits = [i for i, e in enumerate(target.elts) if _same_target(e, ref)]
        if len(hits) != 1:
            return None
        index, size = hits[0], len(target.elts)
    elif not _same_target(target, ref):
        return None

    def pick(v: ast.AST) -> Optional[ast.AST]:
        if index is None:
            return v
        if isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == size:
            return v.elts[index]
        return None

    returns = _method_returns(fa, value, stmt) if depth < 3 else None
    if not returns:
        direct = pick(value)
        return None if direct is None else [(direct, None)]
    out: List[Tuple[ast.AST, Optional[List[ast.AST]]]] = []
    for ret in returns:
        if ret.value is None:
            continue  # a bare `return`: no loader
        v = pick(ret.value)
        if v is None:
            return None
        out.append((v, fa.index.ancestors(v)))
    return out or None


def _method_returns(fa: "FileModel", value: ast.AST, stmt: ast.AST) -> Optional[List[ast.Return]]:
    """The `return` statements of the method of the enclosing class that
    `value` calls (`self.<method>(...)`); None when `value` is no such call,
    or the method is a generator or returns nothing."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "self"
    ):
        return None
    cls = fa.index.enclosing_class(fa.index.ancestors(stmt))
    if cls is None:
        return None
    methods = [
        item
        for item in cls.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == value.func.attr
    ]
    if len(methods) != 1:
        return None
    returns: List[ast.Return] = []
    todo: List[ast.AST] = list(methods[0].body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # their returns are not the method's
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Return):
            returns.append(node)
        todo.extend(child_nodes(node))
    return returns or None


def loader_constructions(
    fa: "FileModel", loader: ast.AST, ancestors: Sequence[ast.AST], depth: int = 0
) -> Optional[List[ast.Call]]:
    """The DataLoader(...) call(s) a loader expression refers to, or None."""
    if isinstance(loader, ast.Call):
        if is_dataloader_call(fa, loader):
            return [loader]
        inner, _ = unwrap_iter(loader)  # `tqdm(loader)`, `enumerate(loader)`: the loader it walks
        if inner is loader or depth >= 3:
            return None
        return loader_constructions(fa, inner, fa.index.ancestors(inner), depth + 1)
    ref_ok = isinstance(loader, ast.Name) or (
        isinstance(loader, ast.Attribute) and isinstance(loader.value, ast.Name) and loader.value.id == "self"
    )
    if ref_ok:
        scope = fa.index.enclosing_scope(ancestors)
        all_bindings = [b for b in all_assignments(fa) if binds_ref(b[0], loader)]
        if isinstance(loader, ast.Name):
            local = [b for b in all_bindings if (fa.index.enclosing_scope(fa.index.ancestors(b[2])) is scope)]
            if local:
                return _resolve(fa, local, loader)
        else:
            # `self.x`: the bindings of the same class, when it has any (two
            # classes of one file may each have their own `self.loader`)
            cls = fa.index.enclosing_class(ancestors)
            own = [b for b in all_bindings if cls is not None and fa.index.enclosing_class(fa.index.ancestors(b[2])) is cls]
            if own:
                return _resolve(fa, own, loader)
        if all_bindings:
            return _resolve(fa, all_bindings, loader)
        handed = _handed_loaders(fa, loader, scope, depth)
        if handed:
            return handed
    elif not isinstance(loader, ast.Attribute):
        return None
    return _only_construction(fa)


def _handed_loaders(fa: "FileModel", loader: ast.AST, scope: Optional[ast.AST], depth: int) -> Optional[List[ast.Call]]:
    """For a loader that is a parameter of a function of the file (`def
    train_xe(model, dataloader, optim)`), the loaders every call site of the
    file hands it (`train_xe(model, dataloader_train, optim)`), where each
    site's is known; else None."""
    if not (isinstance(loader, ast.Name) and isinstance(scope, FUNCS) and depth < 3):
        return None
    a = scope.args  # type: ignore[attr-defined]
    if loader.id not in {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}:
        return None
    out: List[ast.Call] = []
    for arg in _call_sites(fa, scope, loader.id):
        calls = loader_constructions(fa, arg, fa.index.ancestors(arg), depth + 1)
        if not calls:
            return None
        out.extend(c for c in calls if c not in out)
    return out or None


def _only_construction(fa: "FileModel") -> Optional[List[ast.Call]]:
    """The file's single DataLoader(...) call, unless the file consumes it
    itself in a loop (then a loop over some other loader is not its)."""

    def build():
        calls = dataloader_calls(fa)
        if len(calls) != 1:
            return None
        call = calls[0]
        parent = fa.index.parents.get(call)
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
            return None
        if isinstance(parent, ast.Call) and last_name(parent.func) in ("enumerate", "tqdm", "iter"):
            return None
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names = [t for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
            for ref in names:
                if _consumed_in_file(fa, ref):
                    return None
        return [call]

    return fa.index.memoized("placement", "only_construction", build)  # type: ignore[return-value]


def _consumed_in_file(fa: "FileModel", ref: ast.AST) -> bool:
    """The loader is iterated directly in the file and never handed to other code."""
    iterated = passed = False
    for node in fa.index.nodes(ast.For, ast.AsyncFor, ast.comprehension, ast.Call, ast.Return):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            base, _ = fa.values.unwrap(node.iter)
            if _same_target(base, ref):
                iterated = True
        elif isinstance(node, ast.Call):
            if last_name(node.func) in ("enumerate", "tqdm", "iter", "trange", "islice"):
                continue
            for a in list(node.args) + [k.value for k in node.keywords]:
                if _same_target(a, ref):
                    passed = True
        elif isinstance(node, ast.Return) and node.value is not None and _same_target(node.value, ref):
            passed = True
    return iterated and not passed


def gpu_fed_loaders(fa: "FileModel") -> Dict[ast.Call, ast.AST]:
    """DataLoader(...) calls whose batches this file moves to an accelerator
    (`.cuda()`, `.to(device)`, `.type(torch.cuda.FloatTensor)`, or a helper
    such as `batch_to_device(batch, device)`), each with the first such move. The move may be in a method
    of the same class, or a module-level function of the file, that the
    loop passes the batch to (one call deep): `self.forward_step(batch)`
    whose parameter (or a part of it) is moved."""

    def build():
        out: Dict[ast.Call, ast.AST] = {}
        if not dataloader_calls(fa):
            return out
        for node in fa.index.nodes(ast.Call):
            mv = move_target(fa, node)
            typed = type_move_target(fa, node) if mv is None else None
            if mv is not None or typed is not None:
                recv = mv[0] if mv is not None else typed
                path = [node, node.func]  # type: ignore[attr-defined]
            else:
                mv = helper_move_target(fa, node)
                if mv is None:
                    continue
                recv = mv[0]
                path = [node]
            ancestors = fa.index.ancestors(node)
            params: List[Tuple[ast.AST, str]] = []
            src = batch_source(fa, recv, ancestors + path, params=params)
            sources: List[Tuple[ast.AST, ast.AST]] = []
            if src is not None:
                if fa.values.is_batch(recv, ancestors):
                    sources.append(src)
            else:
                # the value is a parameter of this function (or part of one):
                # a batch when a call site of the same class / file passes one
                for fn, name in params:
                    for arg in _call_sites(fa, fn, name):
                        arg_ancestors = fa.index.ancestors(arg)
                        if fa.values.is_batch(arg, arg_ancestors):
                            outer = batch_source(fa, arg, arg_ancestors)
                            if outer is not None:
                                sources.append(outer)
            for producer, loader in sources:
                calls = loader_constructions(fa, loader, fa.index.ancestors(loader))
                for c in calls or ():
                    prev = out.get(c)
                    if prev is None or _pos(node) < _pos(prev):
                        out[c] = node
        return out

    return fa.index.memoized("placement", "gpu_fed_loaders", build)  # type: ignore[return-value]


def dataset_sources(fa: "FileModel") -> List[ast.Call]:
    """The calls whose results torch `DataLoader`s of the file take as their
    dataset: `DataLoader(make_windows(x))`, or `ds = make_windows(x)` (a
    name, or a `self` attribute, the file assigns) then `DataLoader(ds)` or
    `DataLoader(ds[:n])`. What those calls return (an array, a dataset
    class) says whether the loader's samples are in memory."""
    def build() -> List[ast.Call]:
        out: List[ast.Call] = []
        bindings = None
        for call in dataloader_calls(fa):
            if not is_torch_dataloader_call(fa, call):
                continue
            dataset = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataset"), None)
            while isinstance(dataset, ast.Subscript):
                dataset = dataset.value
            if isinstance(dataset, ast.Call):
                out.append(dataset)
            elif isinstance(dataset, (ast.Name, ast.Attribute)):
                bindings = bindings if bindings is not None else all_assignments(fa)
                out.extend(v for t, v, _ in bindings if isinstance(v, ast.Call) and _same_target(t, dataset))
        return out

    return fa.index.memoized("placement", "dataset_sources", build)  # type: ignore[return-value]


def numpy_made(fa: "FileModel", value: Optional[ast.AST], scope: ast.AST) -> bool:
    """`value`, returned from `scope`, is an array a numpy call made:
    `np.array(...)`, or a name the function binds only to numpy calls, in
    plain assignments (`x_seqs = np.array(windows)` ... `return x_seqs`;
    `host_built.plain_bindings`). By the calls alone,
    with no type inference: what a loader's dataset helper returns."""
    def by_numpy(v: Optional[ast.AST]) -> bool:
        return isinstance(v, ast.Call) and (fa.imports.qualname(v.func) or "").startswith("numpy.")

    if isinstance(value, ast.Call):
        return by_numpy(value)
    if not isinstance(value, ast.Name) or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    found = plain_bindings(fa, scope).get(value.id)  # (None: bound some other way too)
    return bool(found) and all(stmt is not None and by_numpy(stmt.value) for stmt in found)


# cheap conversions of a stored item (not decoding, tokenizing or augmenting it)
_SERVING_CALLS = frozenset({"len", "int", "float", "tuple", "list", "dict", "tensor", "as_tensor", "from_numpy",
                            # casts of what was looked up (`torch.from_numpy(window).type(torch.float)`)
                            "type", "long", "double", "bool",
                            # a buffer the looked-up slice is padded into (CPC_audio's `outSeq =
                            # torch.zeros((dim, max_size))`, then `outSeq[:, :n] = self.data[:, a:b]`)
                            "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "pad"})


def serves_stored_items(cls: Optional[ast.AST]) -> bool:
    """A dataset class whose `__getitem__` only looks up what `__init__` stored
    (`return self.input_ids[idx], self.masks[idx]`, directly or through names
    bound to the stored attributes), calling nothing but conversions and
    the buffers it pads them into (and what an error it raises builds): trlx's pre-tokenized `PairwiseDataset`,
    PPLM's cache of representations, egnn's N-body arrays. Its samples are in memory, like a `TensorDataset`'s
    (the project tells other files as `kinds.IN_MEMORY_DATASET`)."""
    if not isinstance(cls, ast.ClassDef):
        return False
    get = next((f for f in cls.body if isinstance(f, FUNCS) and f.name == "__getitem__"), None)
    if get is None:
        return False
    raised = {id(c) for r in walk(get) if isinstance(r, ast.Raise) for c in walk(r) if isinstance(c, ast.Call)}
    # names bound to what `__init__` stored (`loc, vel, edge_attr, charges = self.data`, egnn's N-body set)
    held = {t.id for a in walk(get) if isinstance(a, ast.Assign) and _self_attribute(a.value)
            for target in a.targets for t in walk(target) if isinstance(t, ast.Name)}
    reads_self = False
    for n in walk(get):
        if isinstance(n, ast.Call) and last_name(n.func) not in _SERVING_CALLS and id(n) not in raised:
            return False  # (an error raised is no work of a sample)
        reads_self = reads_self or (isinstance(n, ast.Subscript) and (
            _self_attribute(n.value) or (isinstance(n.value, ast.Name) and n.value.id in held)))
    return reads_self


def _self_attribute(e: ast.AST) -> bool:
    return isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
