"""What each name of a function (or of module level) holds, statement by
statement: the bindings of a scope, read in source order, each classified by
the values layer."""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from gpulint.model.index.order import target_names, unbound_parameters, walk_scope
from gpulint.model.index.walk import walk
from gpulint.model.names import ImportTable
from gpulint.model.values.kinds import (
    HOST_MAPPING,
    HOST_NUMBERS,
    HOST_TENSOR,
    LOADER,
    MODEL,
    NUMBER,
    OPTIMIZER,
    OTHER,
    PARAM_GROUP,
    PARAM_GROUPS,
    TENSOR,
    is_sizes,
    kind_from_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.values.values import Values


class ScopeKinds(dict):
    """name -> kind, and `handed`: the parameters that hold a tensor only
    because every per-step caller hands one (`CallFacts.parameter_kind`),
    never bound again: a tensor, or an object moved to the device (a batch
    dataclass), whose fields are not known to be tensors."""

    handed: frozenset = frozenset()


class FunctionInfo:
    """What the names of one function (or of module level) hold."""

    def __init__(
        self,
        node: ast.AST,
        kinds: Dict[str, str],
        batch_names: Set[str],
        history: Optional[Dict[str, List[tuple]]] = None,
    ) -> None:
        self.node = node
        self.kinds = kinds  # what each name holds after the whole scope ran
        self.batch_names = batch_names
        # name -> [((row, col) where a binding takes effect, kind or None)], in source order
        self.history: Dict[str, List[tuple]] = history or {}
        # name -> the positions of its history, when they are sorted (for bisect)
        self._positions: Dict[str, Optional[List[tuple]]] = {}

    def kind_before(self, name: str, pos: tuple) -> Tuple[bool, Optional[str]]:
        """(whether a binding of `name` takes effect by `pos`, the kind the last
        such binding gave it), scanning the history up to its first entry
        after `pos`."""
        hist = self.history.get(name)
        if not hist:
            return False, None
        positions = self._positions.get(name, False)
        if positions is False:
            at = [h[0] for h in hist]
            positions = self._positions[name] = at if all(a <= b for a, b in zip(at, at[1:])) else None
        if positions is not None:  # a name bound thousands of times: bisect, not a scan
            i = bisect_right(positions, pos)
            return (True, hist[i - 1][1]) if i else (False, None)
        found, kind = False, None
        for at, k in hist:
            if at > pos:
                break
            found, kind = True, k
        return found, kind


class KindsAt:
    """A read-only view of a FunctionInfo's kinds as they stand at one source
    position: the last binding before it, so that `loss.item()` in
    `loss = loss.item()` sees the tensor. A name bound only after the position
    (a loop-carried value) or never in the scope has its final kind."""

    __slots__ = ("info", "pos")

    def __init__(self, info: FunctionInfo, pos: tuple) -> None:
        self.info = info
        self.pos = pos

    def get(self, name: str, default=None):
        found, kind = self.info.kind_before(name, self.pos)
        if not found:
            return self.info.kinds.get(name, default)
        return kind if kind is not None else default

    @property
    def handed(self) -> frozenset:
        return getattr(self.info.kinds, "handed", frozenset())

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __getitem__(self, name: str) -> str:
        k = self.get(name)
        if k is None:
            raise KeyError(name)
        return k


def build_function_info(values: "Values", scope: ast.AST) -> FunctionInfo:
    """What each name of `scope` (a def, a lambda or the module) holds, statement by statement."""
    kinds: Dict[str, str] = ScopeKinds()
    handed = set()
    batch: Set[str] = set()
    history: Dict[str, List[tuple]] = {}
    # inherit from the enclosing function for closures, and from module level
    if scope is not values.index.tree:
        outer = values.index.enclosing_scope(values.index.ancestors(scope))
        base = values.function_info(outer)
        kinds.update(base.kinds)
        batch.update(base.batch_names)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        facts = values.facts
        for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
            kinds.pop(a.arg, None)
            batch.discard(a.arg)
            # what it declares, else what every caller in the project passes, else what its name says
            passed = facts.parameter_kind(scope, a.arg)
            declared = kind_from_annotation(a.annotation, values.imports)
            k = (
                declared
                or (TENSOR if passed == HOST_TENSOR else passed)  # where it lives: `HostValues`
                or kind_from_name(a.arg)
            )
            if passed == TENSOR and declared is None and a.arg in unbound_parameters(values.index, scope):
                handed.add(a.arg)
            if k is not None:
                kinds[a.arg] = k
            history.setdefault(a.arg, []).append(((0, 0), k))
        if args.kwarg is not None:
            kinds.pop(args.kwarg.arg, None)
            k = facts.parameter_kind(scope, args.kwarg.arg)
            if k is not None:
                kinds[args.kwarg.arg] = k
    if handed:
        kinds.handed = frozenset(handed)  # type: ignore[attr-defined]
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    # names bound to a wrapped loader (`pbar = tqdm(enumerate(loader)) if is_train
    # else enumerate(loader)`): a loop over the name iterates what it wraps
    wrapped: Dict[str, ast.AST] = {}
    for node in walk_scope(body):
        if isinstance(node, ast.Assign):
            k = values.classify(node.value, kinds, batch)
            for t in node.targets:
                _bind(values, t, k, kinds, batch, node.value)
                if isinstance(t, ast.Name):
                    _note_wrapped_loader(values, t.id, node.value, kinds, wrapped)
                    if t.id in wrapped and kinds.get(t.id) in (None, OTHER):
                        kinds[t.id] = LOADER  # (`diter = enumerate(tqdm(dl))`: a loop over it steps over batches)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            k = values.classify(node.value, kinds, batch)
            _bind(values, node.target, k, kinds, batch, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            k = values.classify(node.value, kinds, batch)
            if k == TENSOR:
                kinds[node.target.id] = TENSOR
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            it = node.iter
            if isinstance(it, ast.Name) and it.id in wrapped:
                it = wrapped[it.id]
            _bind_loop_target(values, node.target, it, kinds, batch, rows=True)
        elif isinstance(node, ast.comprehension):
            _bind_loop_target(values, node.target, node.iter, kinds, batch)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pass
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            _record_bindings(node, kinds, history)
    return FunctionInfo(scope, kinds, batch, history)

def _record_bindings(node: ast.AST, kinds: Dict[str, str], history: Dict[str, List[tuple]]) -> None:
    """Note what the names bound by `node` hold from the end of the statement
    (of the loop target, for a `for`) on."""
    if isinstance(node, ast.Assign):
        targets = node.targets
        where = node
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
        where = node.target
    else:
        targets = [node.target]  # type: ignore[attr-defined]
        where = node
    at = (getattr(where, "end_lineno", None) or where.lineno, getattr(where, "end_col_offset", None) or 0)
    for t in targets:
        for name in target_names(t):
            history.setdefault(name, []).append((at, kinds.get(name)))

def _note_wrapped_loader(values: "Values", name: str, value: ast.AST, kinds, wrapped: Dict[str, ast.AST]) -> None:
    """Remember `name` as a wrapped loader when `value` wraps one (`tqdm(loader)`,
    `enumerate(loader)`, either branch of a conditional); forget it otherwise."""
    wrapped.pop(name, None)
    branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
    for b in branches:
        if isinstance(b, ast.Call):
            base, _ = values.unwrap(b)
            if base is not b and values.is_loader(base, kinds):
                wrapped[name] = b
                return


def _bind(values: "Values", target, kind, kinds, batch, value) -> None:
    if isinstance(target, ast.Name):
        if kind is None and kinds.get(target.id) == NUMBER and _updates_number(values, target.id, value, kinds, batch):
            return  # `loss = smooth * loss + (1 - smooth) * history[-1]`: still a number
        if kind is None:
            # unknown value: keep a name-derived guess only if nothing was known
            kinds.pop(target.id, None)
            if values.is_batch_expr(value, kinds, batch):
                batch.add(target.id)
                kinds[target.id] = TENSOR
            elif not any(isinstance(n, ast.Name) and n.id in batch for n in walk(value)):
                # `return_loss = self.can_return_loss` after `inputs.get(...)`: no part of a batch
                # (`batch = to_device(batch, device)` still holds one)
                batch.discard(target.id)
            return
        kinds[target.id] = kind
        if values.is_batch_expr(value, kinds, batch):
            batch.add(target.id)
        else:
            batch.discard(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        if is_sizes(value):  # `N, _, H, W = imgs.shape`: Python ints, whatever `imgs` is
            for elt in target.elts:
                elt = elt.value if isinstance(elt, ast.Starred) else elt
                if isinstance(elt, ast.Name):
                    kinds[elt.id] = NUMBER
                    batch.discard(elt.id)
            return
        is_batch = values.is_batch_expr(value, kinds, batch)
        elt_kind = TENSOR if (kind == TENSOR or is_batch) else NUMBER if kind == HOST_NUMBERS else None
        if elt_kind is None and hands_back_moved_into(values, target, value):
            return  # `x, lengths = to_cuda(x, lengths)`: what it was given, moved; each name holds what it held
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                _bind(values, t, values.classify(v, kinds, batch), kinds, batch, v)
            return
        items = values.facts.returns_items(value) if elt_kind is None and isinstance(value, ast.Call) else None
        if items is not None and len(items) == len(target.elts):
            # `loss, tb_dict, disp_dict = self._train_it(batch)`, which returns `loss.item(), ...`: a
            # Python number at the places the project knows, what their names say elsewhere
            for t, k in zip(target.elts, items):
                if isinstance(t, ast.Name):
                    if k is not None:
                        kinds[t.id] = k
                    else:
                        kinds.pop(t.id, None)
                    batch.discard(t.id)
            return
        for elt in target.elts:
            if isinstance(elt, ast.Starred):
                elt = elt.value
            if isinstance(elt, ast.Name):
                if elt_kind:
                    kinds[elt.id] = elt_kind
                else:
                    kinds.pop(elt.id, None)
                if is_batch:
                    batch.add(elt.id)
            else:
                _bind(values, elt, elt_kind, kinds, batch, value)


def hands_back_moved_into(values: "Values", target: ast.AST, value: ast.AST) -> bool:
    """`x, lengths = to_cuda(x, lengths)`: a project helper that returns what
    it is given, each put on the accelerator (`CallFacts.hands_back_moved`),
    unpacked into the names it was given, in order."""
    if not (isinstance(value, ast.Call) and value.args and not value.keywords):
        return False
    elts = target.elts  # type: ignore[attr-defined]
    return (len(value.args) == len(elts) and all(
        isinstance(a, ast.Name) and isinstance(t, ast.Name) and a.id == t.id for a, t in zip(value.args, elts))
        and values.facts.hands_back_moved(value))


def _updates_number(values: "Values", name: str, value: ast.AST, kinds, batch) -> bool:
    """`value` is arithmetic on `name` (which holds a number) with operands
    none of which is known to be a tensor: it gives a number again, not the
    tensor that `name` might suggest (`loss`)."""
    if not isinstance(value, (ast.BinOp, ast.UnaryOp)):
        return False
    uses = False
    stack = [value]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.BinOp, ast.UnaryOp)):
            stack.extend([n.left, n.right] if isinstance(n, ast.BinOp) else [n.operand])
            continue
        if isinstance(n, ast.Name) and n.id == name:
            uses = True
        elif values.classify(n, kinds, batch) == TENSOR:
            return False
    return uses


def _bind_loop_target(values: "Values", target, it, kinds, batch, rows: bool = False) -> None:
    """`rows`: a `for` statement, whose target over a tensor takes its rows
    (`HostValues.host_bindings` follows it to the tensor's device)."""
    held = _element_kinds(values, target, it, kinds, batch)
    if held is not None:
        for name, k in held:
            kinds[name] = k
            batch.discard(name)
        return
    base, n_skip = values.unwrap(it)
    from_loader = values.is_loader(base, kinds)
    # (`for item in caption.split("====="):` strings, whatever `caption` is)
    from_batch = values.is_batch_expr(base, kinds, batch) and not splits_a_string(base)
    if not (from_loader or from_batch):
        if rows and not n_skip and isinstance(target, ast.Name) and values.classify(it, kinds, batch) == TENSOR:
            kinds[target.id] = TENSOR  # a row of a tensor (`for ut_gold in gold_seq:`) is one
            batch.discard(target.id)
            return
        for name in target_names(target):
            kinds.pop(name, None)
            batch.discard(name)
        return
    # enumerate(loader): the first element is the index
    if n_skip and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
        for name in target_names(target.elts[0]):
            kinds[name] = NUMBER
            batch.discard(name)
        target = target.elts[1]
    for name in target_names(target):
        batch.add(name)
        kinds[name] = TENSOR


def _element_kinds(values: "Values", target, it, kinds, batch) -> Optional[List[Tuple[str, str]]]:
    """What a loop over `it` binds, where the iterable says: the groups of
    `optimizer.param_groups`, and the items or values of a dict of host
    values (`for k, v in kwargs.items()`). None: not one of these."""
    if values.classify(it, kinds, batch) == PARAM_GROUPS and isinstance(target, ast.Name):
        return [(target.id, PARAM_GROUP)]
    if (
        isinstance(it, ast.Call) and not it.args and isinstance(it.func, ast.Attribute)
        and it.func.attr in ("items", "values")
        and values.classify(it.func.value, kinds, batch) == HOST_MAPPING
    ):
        if it.func.attr == "values" and isinstance(target, ast.Name):
            return [(target.id, NUMBER)]
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts):
            return [(target.elts[0].id, OTHER), (target.elts[1].id, NUMBER)]  # type: ignore[attr-defined]
    return None


def kind_from_annotation(ann: Optional[ast.AST], imports: ImportTable) -> Optional[str]:
    """The kind a parameter's annotation declares (`x: torch.Tensor`), or None."""
    if ann is None:
        return None
    q = imports.qualname(ann) or ""
    if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
        return TENSOR
    if isinstance(ann, ast.Name) and ann.id not in imports.names:
        if ann.id in ("float", "int"):
            return NUMBER  # `smooth_f: float = 0.05`
        if ann.id in ("bool", "str"):
            return OTHER
    if q == "torch.nn.Module":
        return MODEL
    if q == "torch.utils.data.DataLoader":
        return LOADER
    if q.startswith("torch.optim.") and q.split(".")[-1][:1].isupper():
        return OPTIMIZER
    return None


def splits_a_string(expr: ast.AST) -> bool:
    """`x.split("=====")`: `str.split` (a tensor's `split` takes sizes, not a separator)."""
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "split"
            and bool(expr.args) and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str))
