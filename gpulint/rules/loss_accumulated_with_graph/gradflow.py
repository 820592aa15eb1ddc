"""Which values carry an autograd graph inside a training loop.

Definitions (the ones the rule docs promise):

* **Training loop**: a loop whose own body calls `.backward()`
  (`FileModel.is_training_loop`). `training_loop_of` finds the innermost
  one around a node, without crossing a def.
* **Grad-carrying value** inside a training loop: a model output, a
  criterion/loss-function result or a `torch` function of a grad-carrying
  value, anything `.backward()` is called on in the loop, and what is derived
  from those by arithmetic, indexing, attribute access (`outputs.loss`) and
  graph-preserving tensor methods (`.mean()`, `.sum()`, `.float()`, `.to()`,
  ...). `.detach()`, `.item()`, `.data`, `.tolist()`, `float()`/`int()`
  and values computed under `no_grad`/`inference_mode` do not carry a graph.
  Names are followed to their latest assignment *earlier in the same loop
  body* (flow-sensitive in source order); a value defined outside the loop is
  not from this iteration and does not count. Anything unknown (the result
  of a user function) counts only when `.backward()` is called on it.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import LOOPS, SCOPES
from gpulint.model.values.kinds import CRITERION, LOSS_NAME_RE, MODEL
from gpulint.model.index.order import nodes_in_order
from gpulint.model.index.walk import walk
from gpulint.model.values.narrowing import non_tensor_branch

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

Pos = Tuple[int, int]

# tensor methods whose result no longer carries the graph
DETACHING_METHODS = frozenset(
    """detach detach_ item tolist numpy argmax argmin argsort size dim numel nelement
    long int bool byte short char eq ne lt le gt ge isnan isinf isfinite nonzero
    backward data_ptr stride element_size is_contiguous __len__ sign""".split()
)
# tensor methods that keep the graph of their receiver
GRAD_PRESERVING_METHODS = frozenset(
    """mean sum prod clone float double half bfloat16 to cpu cuda view view_as reshape reshape_as
    squeeze unsqueeze flatten contiguous abs sqrt rsqrt exp log log1p pow square norm max min
    amax amin mul div add sub neg clamp clip softmax log_softmax sigmoid tanh relu expand expand_as
    permute transpose t narrow select index_select gather masked_fill where type_as
    __getitem__ chunk split unbind squeeze_ unsqueeze_ mul_ div_ add_ sub_ nansum nanmean
    std var logsumexp cumsum diag trace""".split()
)
NON_GRAD_ATTRS = frozenset(
    """data grad shape device dtype is_cuda requires_grad ndim is_leaf layout names grad_fn
    is_sparse is_quantized is_meta output_nr""".split()
)
NON_GRAD_BUILTINS = frozenset({"float", "int", "bool", "round", "len", "str", "repr", "format", "print"})
NON_GRAD_TORCH = frozenset(
    """argmax argmin argsort no_grad inference_mode is_tensor numel eq ne lt le gt ge isnan isinf
    isfinite equal allclose zeros ones empty full arange linspace eye rand randn randint randperm
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like tensor as_tensor
    from_numpy device manual_seed sign count_nonzero bucketize searchsorted""".split()
)


class _LoopDefs:
    """Assignments to plain names in a loop body, and its backward calls."""

    def __init__(self, fa: FileModel, loop: ast.AST) -> None:
        self.defs: Dict[str, List[Tuple[Pos, Optional[ast.AST], ast.AST]]] = {}
        self.backward_calls: List[ast.Call] = []
        for node in nodes_in_order(list(loop.body) + list(getattr(loop, "orelse", []))):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self._bind(t, node.value, node)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._bind(node.target, node.value, node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                value = ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op, right=node.value)
                ast.copy_location(value, node)
                self._add(node.target.id, value, node)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                for n in _names(node.target):
                    self._add(n, None, node)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                for n in _names(node.optional_vars):
                    self._add(n, None, fa.index.parents.get(node, node))
            elif isinstance(node, ast.NamedExpr):
                self._add(node.target.id, node.value, node)
            elif isinstance(node, ast.Call) and fa.steps.is_backward_call(node):
                self.backward_calls.append(node)
        for lst in self.defs.values():
            lst.sort(key=lambda d: d[0])

    def _bind(self, target: ast.AST, value: ast.AST, stmt: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._add(target.id, value, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind(t, v, stmt)
            else:
                for elt in target.elts:
                    for n in _names(elt.value if isinstance(elt, ast.Starred) else elt):
                        self._add(n, _Unpacked(value), stmt)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value, stmt)

    def _add(self, name: str, value: Optional[ast.AST], stmt: ast.AST) -> None:
        self.defs.setdefault(name, []).append((_pos(stmt), value, stmt))

    def reaching(self, name: str, pos: Pos) -> Optional[Tuple[Pos, Optional[ast.AST], ast.AST]]:
        """The latest assignment to `name` in the loop body that starts before `pos`."""
        lst = self.defs.get(name)
        if not lst:
            return None
        i = bisect_left([d[0] for d in lst], pos)
        return lst[i - 1] if i > 0 else None


class _Unpacked(ast.AST):
    """Marker value: one element of an unpacked expression (`loss, logs = f(x)`)."""

    _fields = ("value",)

    def __init__(self, value: ast.AST) -> None:
        super().__init__()
        self.value = value


class GradFlow:
    def __init__(self, fa: FileModel) -> None:
        self.fa = fa
        self._loops: Dict[ast.AST, _LoopDefs] = {}
        self._training: Dict[ast.AST, bool] = {}

    def is_training_loop(self, loop: ast.AST) -> bool:
        """FileModel.is_training_loop, cached per loop."""
        cache = self._training
        hit = cache.get(loop)
        if hit is None:
            hit = cache[loop] = self.fa.loops.is_training_loop(loop)
        return hit

    def unpacked_from_call(self, expr: ast.AST, loop: ast.AST, pos: Pos) -> bool:
        """Some name in `expr` is, where `expr` is, one element unpacked from
        a call that is not a model call (`loss, surrogate = particle(...)`):
        whether it is a tensor at all is only a guess from its name and from
        what else the call returned."""
        defs = self.loop_defs(loop)
        for n in walk(expr):
            if isinstance(n, ast.Name):
                d = defs.reaching(n.id, pos)
                if d is not None and isinstance(d[1], _Unpacked):
                    inner = d[1].value
                    if not (isinstance(inner, ast.Call) and self.fa.steps.is_model_call(inner, self.fa.index.ancestors(inner))):
                        return True
        return False

    def loop_defs(self, loop: ast.AST) -> _LoopDefs:
        d = self._loops.get(loop)
        if d is None:
            d = _LoopDefs(self.fa, loop)
            self._loops[loop] = d
        return d

    def carries_grad(self, expr: ast.AST, loop: ast.AST, pos: Pos, depth: int = 0) -> bool:
        """Does `expr`, evaluated at `pos` inside training loop `loop`, carry an autograd graph?"""
        return self._eval(expr, loop, pos, depth) is True

    # True: carries a graph; False: known not to; None: unknown
    def _eval(self, expr: ast.AST, loop: ast.AST, pos: Pos, depth: int) -> Optional[bool]:
        if depth > 12:
            return None
        fa = self.fa
        if isinstance(expr, ast.Name):
            return self._eval_name(expr.id, loop, pos, depth)
        if isinstance(expr, ast.Attribute):
            if expr.attr in NON_GRAD_ATTRS:
                return False
            base = self._eval(expr.value, loop, pos, depth + 1)
            return True if base else None
        if isinstance(expr, ast.Subscript):
            base = self._eval(expr.value, loop, pos, depth + 1)
            return True if base else None
        if isinstance(expr, ast.BinOp):
            a = self._eval(expr.left, loop, pos, depth + 1)
            b = self._eval(expr.right, loop, pos, depth + 1)
            if a or b:
                return True
            return False if (a is False and b is False) else None
        if isinstance(expr, ast.UnaryOp):
            if isinstance(expr.op, ast.Not):
                return False
            return self._eval(expr.operand, loop, pos, depth + 1)
        if isinstance(expr, ast.IfExp):
            a = self._branch(expr, expr.body, True, loop, pos, depth)
            b = self._branch(expr, expr.orelse, False, loop, pos, depth)
            if a or b:
                return True
            return False if (a is False and b is False) else None
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.Compare, ast.BoolOp, ast.Lambda)):
            return False
        if isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            return False  # a container, not a tensor
        if isinstance(expr, _Unpacked):
            inner = expr.value
            if isinstance(inner, ast.Call) and fa.steps.is_model_call(inner, fa.index.ancestors(inner)):
                return True  # `logits, loss = model(x, y)`
            return None
        if isinstance(expr, ast.Call):
            return self._eval_call(expr, loop, pos, depth)
        return None

    def _branch(self, ifexp: ast.IfExp, branch: ast.AST, taken: bool, loop: ast.AST, pos: Pos,
                depth: int) -> Optional[bool]:
        """One branch of `a if test else b`; a bare name that the test says
        holds no tensor there carries no graph (`x.item() if type(x) != float else x`)."""
        if isinstance(branch, ast.Name) and non_tensor_branch(ifexp.test, branch.id, self.fa.imports) is taken:
            return False
        return self._eval(branch, loop, pos, depth + 1)

    def _eval_name(self, name: str, loop: ast.AST, pos: Pos, depth: int) -> Optional[bool]:
        defs = self.loop_defs(loop)
        d = defs.reaching(name, pos)
        if d is None:
            return False  # not assigned earlier in this iteration
        dpos, value, stmt = d
        if self.fa.contexts.grad_disabled(self.fa.index.ancestors(stmt)):
            return False
        result = self._eval(value, loop, dpos, depth + 1) if value is not None else None
        if result is None:
            if self._backward_on(name, d, loop):
                return True
            if LOSS_NAME_RE.match(name) and id(d[2]) in self._backward_inputs(loop):
                return True  # `class_loss, kd_loss = step(batch)`, combined into what is backwarded
        return result

    def _backward_on(self, name: str, d, loop: ast.AST) -> bool:
        """Is `.backward()` called on (an expression of) this definition of
        `name`, possibly through redefinitions of the name from itself
        (`loss = loss / accum_steps`)?"""
        defs = self.loop_defs(loop)
        for call in defs.backward_calls:
            cpos = _pos(call)
            if cpos <= d[0]:
                continue
            if not any(isinstance(n, ast.Name) and n.id == name for n in walk(call)):
                continue
            r = defs.reaching(name, cpos)
            while r is not None and r is not d:
                value = r[1]
                if value is None or not mentions(value, {name}):
                    break
                r = defs.reaching(name, r[0])
            if r is d:
                return True
        return False

    def _backward_inputs(self, loop: ast.AST) -> Set[int]:
        """ids of the assignments in the loop whose values flow into a `.backward()` call."""
        cache = getattr(self, "_bw_inputs", None)
        if cache is None:
            cache = self._bw_inputs = {}  # type: ignore[attr-defined]
        found = cache.get(loop)
        if found is None:
            found = set()
            defs = self.loop_defs(loop)
            work: List[Tuple[ast.AST, Pos]] = [(c, _pos(c)) for c in defs.backward_calls]
            while work:
                expr, pos = work.pop()
                for n in walk(expr):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        d = defs.reaching(n.id, pos)
                        if d is not None and id(d[2]) not in found:
                            found.add(id(d[2]))
                            if d[1] is not None:
                                work.append((d[1], d[0]))
            cache[loop] = found
        return found

    def _eval_call(self, call: ast.Call, loop: ast.AST, pos: Pos, depth: int) -> Optional[bool]:
        fa = self.fa
        func = call.func
        q = fa.imports.qualname(func) or ""
        if q.startswith("builtins."):
            if q[9:] in NON_GRAD_BUILTINS:
                return False
            return None
        if isinstance(func, ast.Attribute) and not q.startswith("torch."):
            method = func.attr
            if method in DETACHING_METHODS:
                return False
            if method in GRAD_PRESERVING_METHODS:
                recv = self._eval(func.value, loop, pos, depth + 1)
                if recv is not None:
                    return recv
                # `F.cross_entropy` style module functions fall through below
        ancestors = fa.index.ancestors(call)
        if fa.steps.is_model_call(call, ancestors):
            return True
        if q.startswith("torch."):
            last = q.rsplit(".", 1)[-1]
            if last in NON_GRAD_TORCH or not _torch_value_function(q):
                return False
            return True if self._any_arg(call, loop, pos, depth) else None
        if isinstance(func, (ast.Name, ast.Attribute)) and fa.values.kind(func, ancestors) == CRITERION:
            return True if self._any_arg(call, loop, pos, depth) else None
        if isinstance(func, ast.Name) and fa.values.kind(func, ancestors) == MODEL:
            return True
        return None

    def _any_arg(self, call: ast.Call, loop, pos, depth) -> bool:
        for a in list(call.args) + [k.value for k in call.keywords]:
            if isinstance(a, ast.Starred):
                a = a.value
            if self._eval(a, loop, pos, depth + 1):
                return True
        return False


def grad_flow(fa: FileModel) -> GradFlow:
    """The per-file GradFlow (built once per file)."""
    return fa.index.memoized("gradflow", None, lambda: GradFlow(fa))


def training_loop_of(fa: FileModel, ancestors: Sequence[ast.AST], node: ast.AST) -> Optional[ast.AST]:
    """The innermost loop around `node` (in its body, not its header; not
    crossing a def) that is a training loop, or None."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            return None
        if isinstance(anc, LOOPS):
            in_body = any(child is s for s in anc.body) or any(child is s for s in getattr(anc, "orelse", []))
            if in_body and grad_flow(fa).is_training_loop(anc):
                return anc
    return None


def unconditional_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a block that run every time the block runs: the block's
    own statements and those of `with` blocks and `try` bodies in it (not
    `if` branches, nested loops or handlers)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from unconditional_statements(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from unconditional_statements(stmt.body)
            yield from unconditional_statements(stmt.finalbody)


def mentions(expr: ast.AST, names: Set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(expr))


def _torch_value_function(q: str) -> bool:
    parts = q.split(".")
    if len(parts) == 2:
        return parts[1][:1].islower()
    if parts[1] == "nn" and len(parts) >= 4 and parts[2] == "functional":
        return True
    return parts[1] in ("linalg", "fft", "special")


def _pos(node: ast.AST) -> Pos:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _names(target: ast.AST) -> Iterator[str]:
    for n in walk(target):
        if isinstance(n, ast.Name):
            yield n.id


