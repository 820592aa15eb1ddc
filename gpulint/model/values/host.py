"""Which tensors are known to live in host memory, so that reading them does
not wait for the GPU."""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import COMPREHENSIONS, LOOPS, SCOPES
from gpulint.model.index.order import target_names, walk_scope
from gpulint.model.values.attributes import is_self_attr
from gpulint.model.values.devices import helper_move_target, move_target
from gpulint.model.values.kinds import (
    CONVERSIONS, HOST_FACTORIES, HOST_METHODS, HOST_TENSOR, LOADER, LOADER_ITER, NON_TENSOR_ATTRS, NUMBER, SIZE_METHODS, TENSOR, TENSOR_JOINS,
    is_cpu_device,
    is_tensor_returning_torch,
)
from gpulint.model.values.scopes import hands_back_moved_into
from gpulint.model.values.values import Values
from gpulint.model.index.walk import walk


def device_tensor(expr: ast.AST, fa) -> bool:
    """Known to be a tensor where it is read, and not known to be in host memory."""
    ancestors = fa.index.ancestors(expr)
    return fa.values.kind_at(expr, ancestors) == TENSOR and not fa.host.is_host_tensor(expr, ancestors)

LOADER_BATCH = object()  # a binding by a DataLoader loop (see HostValues.host_bindings)
HOST_ARGUMENT = object()  # a parameter that every per-step caller passes a host tensor for


class HostValues:
    """Host-memory tensors of one file."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.index = values.index
        self.imports = values.imports
        self._bindings: Dict[ast.AST, Dict[str, List[Optional[ast.AST]]]] = {}

    def is_host_tensor(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """Known to live in host memory, so reading it does not wait for the GPU:

        * a batch straight from a DataLoader loop (`for x, y in loader:`), or a
          part of one (`batch["labels"]`), that is never moved: the name is
          bound by that loop only (not when the file hands its loaders to a
          library that moves batches itself: accelerate's `prepare`, Fabric's
          `setup_dataloaders`);
        * a torch factory without `device=` (`torch.rand([])`, `torch.tensor(xs)`,
          `torch.from_numpy(a)`, `torch.as_tensor([done])` of a list display),
          `.cpu()` / `.numpy()` results, `.to("cpu")`;
        * torch functions, tensor methods, arithmetic and comparisons of such
          values, and names bound only to such values, or whose last binding
          before the read, on every path to it, is one (`dominating_value`);
        * what the project says is one: the return value of a function that
          returns a host tensor, a parameter every caller passes one for;
        * an attribute `self.x` every assignment of which in its class is one
          (a plain tensor attribute does not move with its module);
        * a name (or each name of `len2 - 1`) the same block moves to the
          accelerator after the read (`moved_after`).

        False means "not known": it may well be on the host too."""
        if self.index.mentions("set_default_device") or self.index.mentions("set_default_tensor_type") \
                or self.values.facts.default_device():
            return False
        scope = self.index.enclosing_scope(ancestors)
        scope = scope if scope is not None else self.index.tree
        root = expr
        while True:  # `batch["x"]`, `images.max()`: the name they are read from
            if isinstance(root, (ast.Subscript, ast.Attribute)) and not is_self_attr(root):
                root = root.value
            elif isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute) and not is_self_attr(root.func):
                root = root.func.value
            else:
                break
        names = [root] if isinstance(root, ast.Name) else [
            n for n in walk(root) if isinstance(n, ast.Name)] if isinstance(root, ast.BinOp) else []
        if names and all(moved_after(self.values, n, ancestors) for n in names):
            return True  # the code moves it (`len2 - 1`: each) to the accelerator after this read: on the host here
        if isinstance(root, ast.Name):
            reaching = self._reaching_in_loop(root, ancestors, scope)
            if reaching is None:
                last = _last_binding(self.index, root, ancestors)
                if last is _ENTRY:  # the argument itself, whatever the def binds the name to later
                    reaching = [b for b in self.host_bindings(scope).get(root.id, ())
                                if b is HOST_ARGUMENT or b is None][:1] or None
                else:
                    reaching = [last] if last is not None else None
            if reaching is not None:
                inner = {root.id}
                if all(
                    self._host_binding(b, root.id, scope, inner) for b in reaching if not _joins_itself(b, root.id)
                ) and self._is_host(expr, scope, set(), root.id):
                    return True
        return self._is_host(expr, scope, set())  # (every binding of the name, where that says more)

    def _reaching_in_loop(self, name: ast.Name, ancestors: Sequence[ast.AST], scope: ast.AST) -> Optional[list]:
        """The bindings of `name` that reach a read of it in the body of the
        loop that binds it (`for imgs, sizes in loader: sizes =
        [sizes[0].item(), ...]`): the loop's own, and those in its body
        before the read. A binding later in the body (the statement the read
        is part of, too) is replaced by the loop's at the next pass, and one
        before the loop never reaches. None when this cannot be told: the
        read is in a loop nested in that one, or a binding has no place."""
        child: ast.AST = name
        loop = None
        for anc in reversed(ancestors):
            if isinstance(anc, SCOPES):
                return None
            if isinstance(anc, LOOPS + COMPREHENSIONS):
                if isinstance(anc, (ast.For, ast.AsyncFor)) and name.id in target_names(anc.target) \
                        and self.index.in_block(child, anc):
                    loop = anc
                break  # the innermost loop around the read must bind the name itself
            child = anc
        if loop is None:
            return None
        bindings = self.host_bindings(scope).get(name.id) or []
        body_start = (loop.body[0].lineno, loop.body[0].col_offset)
        read_at = (name.lineno, name.col_offset)
        header = (loop.lineno, loop.col_offset), (loop.iter.end_lineno, loop.iter.end_col_offset)
        out = []
        for b in bindings:
            if b is LOADER_BATCH:
                out.append(b)  # the loop's own (any loader loop of this name: checked by position below)
                continue
            if not isinstance(b, ast.AST) or not hasattr(b, "lineno"):
                return None  # a parameter, a `with` target, ...: no place to tell by
            start, end = (b.lineno, b.col_offset), (b.end_lineno, b.end_col_offset)
            if header[0] <= start and end <= header[1]:
                out.append(b)  # the loop's own binding: its iterable
            elif start < body_start:
                continue  # before the loop: replaced by the loop's binding
            elif end <= read_at:
                out.append(b)  # earlier in this pass
            elif start > (loop.end_lineno, loop.end_col_offset):  # type: ignore[attr-defined]
                continue  # after the loop
            # else: later in this pass (or the read's own statement): replaced at the next pass
        return out if out else None

    def _is_host(self, expr: ast.AST, scope: ast.AST, seen: Set[str], checked: str = "") -> bool:
        """(`checked`: a name whose bindings the caller has already found host.)"""
        if not isinstance(expr, ast.Constant) and self._python_value(expr, scope, seen):
            return True  # `psemask.shape`, `int(pad_w)`: Python values, which the host holds (a
            # constant binding, `total = 0`, says nothing of what the name holds later)
        if isinstance(expr, (ast.Subscript, ast.Attribute)):
            if is_self_attr(expr):
                return self._self_attr_host(expr, seen)
            return self._is_host(expr.value, scope, seen, checked)
        if isinstance(expr, ast.Name) and expr.id == checked:
            return True
        if isinstance(expr, ast.Name) and expr.id not in seen and expr in self.index.parents:
            # the binding every run reaching this read passes last, where one does (`shape` of
            # `path, shape = Path(p), shapes[i][0]` earlier in the loop's body, whatever else the
            # function binds `shape` to elsewhere)
            last = _reaching_value(self.index, expr)
            if isinstance(last, ast.AST) and not isinstance(last, _CONTAINERS) and not any(
                    isinstance(n, ast.Name) and n.id == expr.id for n in walk(last)):
                return self._is_host(last, scope, seen | {expr.id})  # (a list display is filled later: below)
        if isinstance(expr, ast.Name):
            if _ALL_OF + expr.id in seen:
                # a binding of the name from itself (`x = x.float()`), while every binding of
                # the name is being checked: host when the others are
                return True
            if expr.id in seen:
                return False
            bindings = self.host_bindings(scope).get(expr.id)
            if not bindings:
                return False
            inner = seen | {expr.id, _ALL_OF + expr.id}
            return all(self._host_binding(b, expr.id, scope, inner) for b in bindings if not _joins_itself(b, expr.id))
        if isinstance(expr, ast.UnaryOp):
            return self._is_host(expr.operand, scope, seen)
        if isinstance(expr, (ast.List, ast.Tuple)):
            # a list of host tensors (a binding's display with what is appended to it later,
            # `_host_binding`), joined by `torch.cat(codes)`: none empty, every element a host tensor
            return bool(expr.elts) and all(self._is_host(e, scope, seen) for e in expr.elts)
        if isinstance(expr, (ast.BinOp, ast.Compare)):
            operands = [expr.left, expr.right] if isinstance(expr, ast.BinOp) else [expr.left] + list(expr.comparators)
            return self._host_operands(operands, scope, seen)
        if not isinstance(expr, ast.Call):
            return False
        if self.values.facts.returns(expr) == HOST_TENSOR:
            return True  # `loss = self.fit_batch(batch)`, which returns `loss.detach().cpu()`
        func = expr.func
        if isinstance(func, ast.Name) and func.id == "next" and len(expr.args) == 1:
            # `batch = next(data_iter)` with `data_iter = iter(loader)`: a loader's batch, as a
            # loop over the loader takes it (unless the file's loaders move their batches)
            return not self._moves_batches() and self.values.kind(
                expr.args[0], self.index.ancestors(expr)) in (LOADER, LOADER_ITER)
        if any(kw.arg == "device" for kw in expr.keywords):
            return is_cpu_device(next(kw.value for kw in expr.keywords if kw.arg == "device"))
        q = self.imports.qualname(func) or ""
        if q.startswith("torch."):
            name = q.rsplit(".", 1)[-1]
            if name in HOST_FACTORIES and q.count(".") == 1:
                return True
            if q in ("torch.as_tensor", "torch.asarray") and expr.args and isinstance(
                    expr.args[0], (ast.List, ast.Tuple, ast.Constant)):
                return True  # `torch.as_tensor([done])`: a list of Python values, copied to the host
            if is_tensor_returning_torch(q) and not name.endswith("_like"):
                return self._host_operands(list(expr.args), scope, seen)
            return False
        if isinstance(func, ast.Attribute):
            if func.attr in ("cpu", "numpy"):
                return True
            if func.attr == "to":
                return any(is_cpu_device(a) for a in expr.args)
            if func.attr in ("cuda", "pin_memory") or func.attr.startswith("_"):
                return False
            if isinstance(func.value, ast.Attribute) and func.value.attr in NON_TENSOR_ATTRS:
                return False  # `self.state.device.tensor_to_device(t)`: a method of a device object
            return self._is_host(func.value, scope, seen, checked)
        return False

    def _python_value(self, expr: ast.AST, scope: ast.AST, seen: Set[str]) -> bool:
        """A plain Python value, no tensor: a constant, a conversion
        (`int(pad_w)`: where it reads a device value, it waited there), a
        tensor's facts (`x.shape`, `x.shape[0]`, `x.size(1)`, `x.dtype`),
        arithmetic of such, or a name whose binding that reaches it is one
        (`b = images.shape[0]`)."""
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, ast.Attribute):
            return expr.attr in NON_TENSOR_ATTRS
        if isinstance(expr, ast.Subscript):
            return isinstance(expr.value, ast.Attribute) and expr.value.attr in NON_TENSOR_ATTRS
        if isinstance(expr, ast.Call):
            func = expr.func
            return (self.imports.qualname(func) in CONVERSIONS or (isinstance(func, ast.Name) and func.id == "len")
                    or isinstance(func, ast.Attribute) and func.attr in SIZE_METHODS)
        if isinstance(expr, ast.BinOp):
            return self._python_value(expr.left, scope, seen) and self._python_value(expr.right, scope, seen)
        if isinstance(expr, ast.UnaryOp):
            return self._python_value(expr.operand, scope, seen)
        if isinstance(expr, ast.Name) and expr.id not in seen and expr in self.index.parents:
            last = _reaching_value(self.index, expr)
            return isinstance(last, ast.AST) and self._python_value(last, scope, seen | {expr.id})
        return False

    def _host_binding(self, binding, name: str, scope: ast.AST, seen: Set[str]) -> bool:
        """One binding of `name` (`host_bindings`) holds a host value: a
        loader's batch, a parameter the project says is one, or a value that
        is one; a list display (`codes = []`) counts with what the scope puts
        in it (`_list_fills`), unknown where the list is changed otherwise."""
        if binding is LOADER_BATCH or binding is HOST_ARGUMENT:
            return True
        if binding is None:
            return False
        if isinstance(binding, ast.List):
            added = self.index.memoized("host.list_fills", scope, lambda: _list_fills(scope)).get(name, ())
            if added is None:
                return False
            binding = ast.copy_location(ast.List(elts=list(binding.elts) + list(added), ctx=ast.Load()), binding)
        return self._is_host(binding, scope, seen)

    def _self_attr_host(self, expr: ast.Attribute, seen: Set[str]) -> bool:
        """`self.count = torch.ones(n)`: every assignment of the attribute in
        its class is a host tensor (a CPU factory, `.cpu()`, `torch.from_numpy`),
        so the attribute lives in host memory. A plain tensor attribute does not
        move with its module's `.cuda()` (only parameters and buffers do); an
        assignment of anything else, or none seen, leaves it unknown."""
        key = "self." + expr.attr  # type: ignore[attr-defined]
        if key in seen:
            # the attribute in its own assignment (`self.adv = (self.adv - mean) / std`): what it
            # held before, which the other assignments say; another one's cycle is not host
            return _UPDATING + key in seen
        cls = self.index.enclosing_class(self.index.ancestors(expr))
        if cls is None:
            return False
        memo = self.index.memo("host.self_attrs")
        if (cls, key) not in memo:
            memo[(cls, key)] = False  # (while being computed: a cycle is not host)
            values = _self_assignments(self.index, cls).get(expr.attr, [])  # type: ignore[attr-defined]
            inner = {s for s in _other_scope(seen) if not s.startswith(_UPDATING)} | {key, _UPDATING + key}
            memo[(cls, key)] = bool(values) and any(isinstance(v, ast.Call) for v, _ in values) and all(
                isinstance(v, (ast.Call, ast.BinOp, ast.UnaryOp)) and self._is_host(v, scope, inner) for v, scope in values)
        return bool(memo[(cls, key)])

    def _host_operands(self, operands, scope, seen) -> bool:
        """At least one operand is a host tensor and no other one is a tensor not
        known to be on the host (a CUDA tensor would make the result a CUDA one)."""
        info = self.values.function_info(scope if scope is not self.index.tree else None)
        found = False
        for o in operands:
            kind = self.values.classify(o, info.kinds, info.batch_names)
            if kind == NUMBER or self._python_value(o, scope, seen):
                continue  # a Python value (`beta * kle`, `b ** 2` with `b = x.shape[0]`): no tensor, host or not
            if self._is_host(o, scope, seen):
                found = True
            elif kind == TENSOR:
                return False
        return found

    def _moves_batches(self) -> bool:
        """The file hands its loaders to accelerate or Fabric, whose loaders move batches."""
        return self.index.mentions("prepare(") or self.index.mentions("setup_dataloaders(")

    def host_bindings(self, scope: ast.AST) -> Dict[str, List[Optional[ast.AST]]]:
        """name -> what each binding in the scope assigns: an expression (the
        value, or the iterable/value it is unpacked from), `LOADER_BATCH` for a
        DataLoader loop target, `HOST_ARGUMENT` for a parameter the project
        says holds a host tensor, None for anything else (other arguments,
        `with`, imports, ...)."""
        cached = self._bindings.get(scope)
        if cached is not None:
            return cached
        out: Dict[str, List[Optional[ast.AST]]] = {}
        info = self.values.function_info(scope if scope is not self.index.tree else None)
        moves_batches = self._moves_batches()
        claimed: Set[int] = set()

        def bind(target: ast.AST, value: Optional[ast.AST]) -> None:
            if isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(value)
                claimed.add(id(target))
            elif isinstance(target, (ast.Tuple, ast.List)):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    for t, v in zip(target.elts, value.elts):
                        bind(t, v)
                else:
                    for t in target.elts:
                        bind(t.value if isinstance(t, ast.Starred) else t, value)
            elif isinstance(target, ast.Starred):
                bind(target.value, value)

        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            forward = getattr(scope, "name", "") == "forward" and isinstance(self.index.parents.get(scope), ast.ClassDef)
            a = scope.args
            for arg in list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs) + [a.vararg, a.kwarg]:
                if arg is not None:
                    # a parameter every per-step caller in the project passes a host tensor for (not
                    # a module's `forward`: what wraps the model, FSDP, DDP, DataParallel, moves its inputs)
                    host = self.values.facts.parameter_kind(scope, arg.arg) == HOST_TENSOR and not forward
                    out.setdefault(arg.arg, []).append(HOST_ARGUMENT if host else None)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        nodes = list(walk_scope(body))
        for node in nodes:
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    bind(t, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                bind(node.target, node.value)
            elif isinstance(node, ast.AugAssign):
                bind(node.target, node.value if isinstance(node.target, ast.Name) else None)
            elif isinstance(node, ast.NamedExpr):
                bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                base, target, index = _elements_taken(self.values, node.iter, node.target)
                if index is not None:
                    bind(index, None)  # the enumerate index
                if self.values.is_loader(base, info.kinds) and not moves_batches:
                    for n in walk(target):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, []).append(LOADER_BATCH)
                            claimed.add(id(n))
                elif _zipped(base, target):
                    # `for ref, gen in zip(x, y_hats):` each name takes an element of its iterable
                    for t, it in zip(target.elts, base.args):  # type: ignore[attr-defined]
                        bind(t, ast.copy_location(ast.Subscript(value=it, slice=ast.Constant(0), ctx=ast.Load()), it))
                else:
                    bind(target, base)
            elif isinstance(node, ast.comprehension) and not isinstance(node.target, ast.Starred):
                base, target, index = _elements_taken(self.values, node.iter, node.target)
                if index is not None:
                    bind(index, None)  # the enumerate index
                bind(target, base)  # (`[data[i:i + n] for i in ix]`: each `i` an element of `ix`)
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in claimed:
                out.setdefault(node.id, []).append(None)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    out.setdefault(name, []).append(None)
        self._bindings[scope] = out
        return out

    def tensor_loop_element(self, expr: ast.AST, ancestors: Sequence[ast.AST],
                            anywhere: bool = False) -> Optional[ast.AST]:
        """`expr` is the element a `for` loop takes from a tensor, as that loop
        bound it: in `for idx in hits: idx.item()` (also `enumerate(hits)`),
        the name `idx` read in the loop's body, with `hits` known to be a tensor
        and not known to be in host memory (with `anywhere`, wherever it is);
        also the element a comprehension takes (`[v[int(x)] for x in seq]`).
        Returns the iterated expression, or None. The name must not be rebound
        in the loop before the read (a rebinding later in the same statement,
        `idx = idx.item()`, is fine), nor anywhere in an inner loop around the
        read, nor by an inner comprehension."""
        if not isinstance(expr, ast.Name):
            return None
        name = expr.id
        chain = list(ancestors)
        child: ast.AST = expr
        for i in range(len(chain) - 1, -1, -1):
            anc = chain[i]
            if isinstance(anc, SCOPES):
                return None
            if isinstance(anc, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                gen = next((g for g in anc.generators if name in target_names(g.target)), None)
                if gen is not None:
                    # `[id2label[int(x)] for x in seq]`: an element of a tensor, one per pass
                    return _element_source(self, gen.iter, gen.target, name, chain[:i], anywhere)
            elif isinstance(anc, (ast.For, ast.AsyncFor)) and name in target_names(anc.target):
                if not self.index.in_block(child, anc):
                    return None  # the iterable, or the `else` after the last element
                loop_anc = chain[:i]
                base = _element_source(self, anc.iter, anc.target, name, loop_anc, anywhere)
                if base is None:
                    return None  # the index of `enumerate`, a part of an unpacked row, or no device tensor
                # rebinding inside the loop: before the read, or in an inner loop around it
                for n in walk_scope(anc.body):
                    if n is expr:
                        break
                    if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
                        return None
                for inner in chain[i + 1 :]:
                    if isinstance(inner, LOOPS) and any(
                        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                        for n in walk_scope([inner])
                    ):
                        return None
                return base
            child = anc
        return None


def _elements_taken(values: Values, it: ast.AST, target: ast.AST) -> Tuple[ast.AST, ast.AST, Optional[ast.AST]]:
    """(the iterable whose elements a loop's `target` takes, the target that
    takes them, the target of `enumerate`'s index or None): `for i, x in
    enumerate(xs)` gives (xs, x, i)."""
    base, n_skip = values.unwrap(it)
    if n_skip and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
        return base, target.elts[1], target.elts[0]
    return base, target, None


def _element_source(host: "HostValues", it: ast.AST, target: ast.AST, name: str, outer: Sequence[ast.AST],
                    anywhere: bool) -> Optional[ast.AST]:
    """The tensor that a loop (or a comprehension's generator) over `it`
    takes `name` from, one element per pass (plainly, or as the value of
    `enumerate`), if it is one not known to be in host memory (with
    `anywhere`, wherever it is)."""
    base, target, _ = _elements_taken(host.values, it, target)
    if not (isinstance(target, ast.Name) and target.id == name):
        return None
    if host.values.kind_at(base, outer) != TENSOR or (not anywhere and host.is_host_tensor(base, outer)):
        return None
    return base


# list methods that add elements: the argument that is the element
_ADDS = {"append": 0, "insert": 1}


def _list_fills(scope: ast.AST) -> Dict[str, Optional[List[ast.AST]]]:
    """name -> what the scope puts in the list the name holds:
    `codes.append(x)`, `codes.insert(i, x)`, the elements of
    `codes.extend([x, y])`; None for a name whose list is changed any other
    way (`codes[i] = x`, `codes.extend(other)`, `codes += ...`), which is
    then not known to hold host tensors."""
    out: Dict[str, Optional[List[ast.AST]]] = {}
    body = scope.body if isinstance(scope.body, list) else [scope.body]  # type: ignore[attr-defined]
    for node in walk_scope(body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            name, method = node.func.value.id, node.func.attr
            at = _ADDS.get(method)
            if at is not None and len(node.args) > at:
                added = [node.args[at]]
            elif method == "extend" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                added = list(node.args[0].elts)
            elif method in ("pop", "clear", "index", "count", "copy"):
                continue
            else:
                out[name] = None
                continue
            bucket = out.setdefault(name, [])
            if bucket is not None:
                bucket.extend(added)
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            out[node.value.id] = None
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return out


# `seen` marks a name whose every binding is being checked with this prefix
_ALL_OF = "*"


# in `seen`: the attribute whose own assignments are being read (`_self_attr_host`)
_UPDATING = "\0updating "


def _other_scope(seen: Set[str]) -> Set[str]:
    """`seen` for a look into another scope: its names are not the same names."""
    return {s for s in seen if not s.startswith(_ALL_OF)}


def _joins_itself(binding: Optional[ast.AST], name: str) -> bool:
    """`codes = torch.cat(codes, dim=0)`: the binding joins the list the name
    held before into one tensor, on the host when that list's tensors are."""
    return (
        isinstance(binding, ast.Call) and isinstance(binding.func, ast.Attribute) and binding.func.attr in TENSOR_JOINS
        and len(binding.args) >= 1 and isinstance(binding.args[0], ast.Name) and binding.args[0].id == name
    )


def _zipped(base: ast.AST, target: ast.AST) -> bool:
    """`for a, b in zip(xs, ys):`: as many names as iterables, none starred."""
    return (
        isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "zip"
        and not base.keywords and isinstance(target, (ast.Tuple, ast.List))
        and len(target.elts) == len(base.args)
        and not any(isinstance(a, ast.Starred) for a in list(base.args) + list(target.elts))
    )


def dominating_value(index, name: ast.Name, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """The value of the assignment to `name` that every run reaching the read
    `name` passes last: `name = value` as a plain statement earlier in the
    read's block, or in a block around it, with no other binding of the name
    between (`done = torch.as_tensor([done])` after `s, r, done =
    env.step(a)`, then `if done:`). None when another binding may come
    between (a branch or a loop that binds it), or the search reaches the
    top of a loop body that binds the name (a value carried from the last
    pass may reach) or of the def."""
    found = _last_binding(index, name, ancestors)
    return None if found is _ENTRY else found


# displays of containers that code fills after binding them (`codes = []`, then `codes.append(...)`)
_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)

# (`_last_binding`: the search reached the def's first statement, and the name is a parameter:
# the read holds the argument, whatever later statements bind the name to)
_ENTRY = object()


def _reaching_value(index, name: ast.Name):
    """`_last_binding` of the read `name`, through tuple unpacking too, kept
    per read (`_is_host` and `_python_value` both ask it)."""
    return index.memoized("host.reaching", name, lambda: _last_binding(index, name, index.ancestors(name), unpack=True))


def _last_binding(index, name: ast.Name, ancestors: Sequence[ast.AST], unpack: bool = False):
    """(`unpack`: also `a, b = x, y`, which gives `a` the value `x`, and
    `a, b = v`, which gives it a part of `v`: `v` itself, for questions a
    value and its parts answer alike, such as where it lives.)"""
    if name in index.parents:  # (the caller's `ancestors` may stop at the statement around the read)
        ancestors = index.ancestors(name)
    chain = list(ancestors) + [name]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, COMPREHENSIONS + (ast.Lambda,)):
            return None
        where = index.slot(child)
        if where is not None and where[0] is anc:
            for stmt in reversed(getattr(anc, where[1])[:where[2]]):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    if stmt.targets[0].id == name.id:
                        return stmt.value
                    continue
                if unpack and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                        and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) and _plain_target(stmt.targets[0]):
                    if name.id not in target_names(stmt.targets[0]):
                        continue
                    return _unpacked(stmt.targets[0], stmt.value, name.id)
                if _binds(stmt, name.id):
                    return None
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)) and where is not None and where[0] is anc \
                and where[1] == "body" and any(a.arg == name.id for a in anc.args.posonlyargs + anc.args.args
                                               + anc.args.kwonlyargs):
            return _ENTRY
        if isinstance(anc, LOOPS) and where is not None and where[1] == "body" and not _binds(anc, name.id):
            continue  # (a loop that never binds the name carries the value it had before it)
        if isinstance(anc, SCOPES + LOOPS) or isinstance(anc, ast.Module) or (
                isinstance(anc, ast.Try) and where is not None and where[1] != "body"):
            return None  # (a handler or `finally` may run after any statement of the `try`)
    return None


def _plain_target(target: ast.AST) -> bool:
    """Names, nested in tuples or lists: `(img1, pos1), cls, idx`."""
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_plain_target(e) for e in target.elts)


def _unpacked(target: ast.AST, value: ast.AST, name: str) -> Optional[ast.AST]:
    """What `name` of the unpacking `target = value` takes: the element of
    a display it lines up with (`a, b = x, y`), or the value it is a part of
    (`(img1, pos1), cls = data`: `data`); None where a display does not
    line up."""
    if isinstance(target, ast.Name):
        return value
    if not isinstance(value, (ast.Tuple, ast.List)):
        return value
    elts = target.elts  # type: ignore[attr-defined]
    if len(value.elts) != len(elts) or any(isinstance(e, ast.Starred) for e in value.elts):
        return None
    for t, v in zip(elts, value.elts):
        if name in target_names(t):
            return _unpacked(t, v, name)
    return None


def _self_assignments(index, cls: ast.ClassDef) -> Dict[str, List[Tuple[ast.AST, ast.AST]]]:
    """attr -> (value, its scope) of each `self.<attr> = value` of the
    class's own methods (not of a class nested in it), once per class."""
    def compute() -> Dict[str, List[Tuple[ast.AST, ast.AST]]]:
        out: Dict[str, List[Tuple[ast.AST, ast.AST]]] = {}
        for n in walk(cls):
            if not isinstance(n, ast.Assign):
                continue
            ancestors = index.ancestors(n)
            if index.enclosing_class(ancestors) is not cls:
                continue
            scope = index.enclosing_scope(ancestors) or index.tree
            for t in n.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out.setdefault(t.attr, []).append((n.value, scope))
        return out

    return index.memoized("host.self_assignments", cls, compute)


def moved_after(values: Values, name: ast.Name, ancestors: Sequence[ast.AST]) -> bool:
    """`assert pred_mask.sum().item() == len(y)` and then, later in the same
    block, `pred_mask = pred_mask.cuda()` or `x, pred_mask = to_cuda(x,
    pred_mask)` (a project helper that hands back what it is given, moved:
    `CallFacts.hands_back_moved`): the code moves the tensor to the accelerator
    after the read, so at the read it is on the host (XLM's steps build
    their masks on the host and move them after). In a loop's body the name
    must be bound earlier in the same body, not carried over from the move
    of the pass before."""
    stmt = next((a for a in reversed(ancestors) if isinstance(a, ast.stmt)), None)
    slot = values.index.slot(stmt) if stmt is not None else None
    if slot is None or isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try)):
        return False  # (a read in a compound statement's header or body: not one plain statement)
    parent, field, i = slot
    bindings = _block_bindings(values, parent, field).get(name.id)
    while not bindings and isinstance(parent, (ast.If, ast.With, ast.AsyncWith)):
        # a read in the block of an `if` or `with` that binds nothing of that name: the move
        # may come after that statement (OLMo's `if self.indices_file is not None:` reads the
        # batch's indices, then the batch is moved)
        slot = values.index.slot(parent)
        if slot is None:
            return False
        parent, field, i = slot
        bindings = _block_bindings(values, parent, field).get(name.id)
    if isinstance(parent, ast.ClassDef) or isinstance(parent, ast.Module) and not values.index.mentions("cuda"):
        return False
    if not bindings:
        return False
    k = bisect_right(bindings, (i, True))
    if k == len(bindings) or not bindings[k][1]:
        return False  # no later binding, or the next one is no move
    return not isinstance(parent, LOOPS) or (k > 0 and bindings[k - 1][0] < i)


def _block_bindings(values: Values, parent: ast.AST, field: str) -> Dict[str, List[Tuple[int, bool]]]:
    """name -> [(index, it moves the name to the accelerator)] of the
    statements of the block that bind it, in order; once per block."""
    def compute() -> Dict[str, List[Tuple[int, bool]]]:
        out: Dict[str, List[Tuple[int, bool]]] = {}
        for k, stmt in enumerate(getattr(parent, field)):
            for bound in _bound_names(stmt):
                out.setdefault(bound, []).append((k, _moves_name(values, stmt, bound)))
        return out

    return values.index.memoized("host.block_bindings", (id(parent), field), compute)


def _bound_names(stmt: ast.AST) -> Set[str]:
    """The names `stmt` may bind (not in a nested def or class: an
    assignment, a loop or `with` target, `global`, a def, an import)."""
    out: Set[str] = set()
    for node in walk_scope([stmt]):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
    return out


def _moves_name(values: Values, stmt: ast.AST, name: str) -> bool:
    """`name = name.cuda()` / `name = name.to(device)` / `name =
    move_to_device(name, device)` (or one element of
    `a, name = a.cuda(), name.cuda()`), or `a, name = f(a, name)` where the
    project says `f` returns what it is given, moved."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target, value = stmt.targets[0], stmt.value
    pairs = [(target, value)] if isinstance(target, ast.Name) else list(zip(target.elts, value.elts)) if (
        isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)) else []
    for t, v in pairs:
        if isinstance(t, ast.Name) and t.id == name:
            moved = move_target(values, v) or helper_move_target(values, v)  # type: ignore[arg-type]
            return moved is not None and isinstance(moved[0], ast.Name) and moved[0].id == name
    return (isinstance(target, (ast.Tuple, ast.List)) and any(isinstance(t, ast.Name) and t.id == name for t in target.elts)
            and hands_back_moved_into(values, target, value))


def _binds(stmt: ast.AST, name: str) -> bool:
    """`stmt` may bind `name` (not in a nested def or class)."""
    return name in _bound_names(stmt)


_READ_BUILTINS = frozenset(q.rsplit(".", 1)[-1] for q in CONVERSIONS)


def first_read_lines(fa, methods: FrozenSet[str] = HOST_METHODS) -> Dict[ast.AST, int]:
    """def (or module) -> the first line of its own code that calls, by name
    only, one of `methods` (as a method or a plain function) or `float()`,
    `int()` or `bool()`: where none is called, no value can be read on the
    host there (`reads_on_return`), and a call before the first one cannot
    follow a read (the summary's `synced`). One pass over the file's calls,
    once per set of methods."""
    def compute() -> Dict[ast.AST, int]:
        found: Dict[ast.AST, int] = {}
        for call in fa.index.nodes_of(ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in methods or (isinstance(func, ast.Name) and name in _READ_BUILTINS):
                scope = fa.index.owner(call)
                if scope is not None and (scope not in found or call.lineno < found[scope]):
                    found[scope] = call.lineno
        return found

    return fa.index.memoized("host.first_reads", methods, compute)


def reads_on_return(fa, value: ast.AST) -> bool:
    """`value`, what a function returns, is read from the device on the host
    as it is computed: `x.item()`, `x.cpu()`, `x.cpu().numpy()`, `x.tolist()`,
    `float(x)` of a tensor not known to live on the host, a tuple of such
    values, arithmetic of one with host numbers (`float(corr) / n`), or a
    name whose last binding on every path is one (`out =
    logits.cpu().numpy()` ... `return out`). Such a read waits for all the
    work queued before it, so when the function returns the host is in step
    with the device."""
    if fa.index.owner(value) not in first_read_lines(fa):
        return False  # (the read's call is in the value, or in the binding it reads: the same def)
    if isinstance(value, ast.Tuple):
        return bool(value.elts) and all(reads_on_return(fa, e) for e in value.elts)
    if isinstance(value, ast.Name):
        bound = dominating_value(fa.index, value, fa.index.ancestors(value))
        return bound is not None and not isinstance(bound, ast.Name) and reads_on_return(fa, bound)
    if isinstance(value, ast.BinOp):  # `float(corr) / n`: arithmetic of what was read, and of host numbers
        sides = (value.left, value.right)
        return any(reads_on_return(fa, v) for v in sides) and all(
            reads_on_return(fa, v) or fa.values.kind(v, fa.index.ancestors(v)) != TENSOR for v in sides)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    ancestors = fa.index.ancestors(value)
    if isinstance(func, ast.Attribute) and func.attr in HOST_METHODS and not value.keywords:
        recv = func.value
        if func.attr == "numpy" and isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) \
                and recv.func.attr == "cpu":
            recv = recv.func.value  # `x.cpu().numpy()`: the `.cpu()` reads
        return fa.values.kind(recv, ancestors) == TENSOR and not fa.host.is_host_tensor(recv, ancestors)
    if isinstance(func, ast.Name) and func.id in _READ_BUILTINS and len(value.args) == 1:
        arg = value.args[0]
        return fa.values.kind(arg, ancestors) == TENSOR and not fa.host.is_host_tensor(arg, ancestors)
    return False
