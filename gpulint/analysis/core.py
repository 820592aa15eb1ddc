"""Hot loops, tensor inference and grad/autocast contexts.

Definitions (the ones the rule docs promise):

* **Hot loop**: the innermost `for`/`while` whose own body (not a nested loop,
  def, lambda or class) calls `.backward()`, an optimizer's `.step()`, a model
  forward, or iterates a DataLoader. A statement under a periodic guard
  (`if step % log_every == 0:`, or after `if i % n: continue`; also the rest
  of `step % n == 0 and ...` and `x if step % n == 0 else y`) runs rarely and
  is not hot; neither is one that runs at most once per loop: in a block that
  ends in `return` / `raise` (or in `break`, for the loop it leaves), in an
  `except` handler, in an `assert` message, or in the loop's `else`. A loop
  around a hot loop runs once per inner pass and is not hot (an epoch loop),
  unless it is a step loop itself: it iterates a DataLoader or its own body
  calls `.backward()` / an optimizer step (a GAN's batch loop around its
  critic loop). A small loop with no trigger of its own nested inside a hot
  loop (over a dict of metrics, say) runs every step and is hot.
* **Tensor inference**: within a function, which names hold torch tensors:
  results of torch calls, model and criterion outputs, losses, batches from a
  DataLoader, results of tensor methods and arithmetic on tensors. Values known
  to be numpy arrays or Python numbers are known *not* to be tensors.

Kinds of value tracked per name: tensor, model, loader, optimizer, scaler,
criterion, numpy, number, other. Unknown is None.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, TypeVar

from gpulint.analysis.walk import index_tree
from gpulint.analysis.names import LOCAL, ImportTable, dotted, last_name

_T = TypeVar("_T")

TENSOR = "tensor"
MODEL = "model"
LOADER = "loader"
LOADER_ITER = "loader_iter"
OPTIMIZER = "optimizer"
SCALER = "scaler"
CRITERION = "criterion"
NUMPY = "numpy"
NUMBER = "number"
OTHER = "other"

LOOPS = (ast.For, ast.While, ast.AsyncFor)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)

MODEL_NAME_RE = re.compile(
    r"^(model|net|network|backbone|classifier|encoder|decoder|generator|discriminator|"
    r"critic|actor|policy|teacher|student|unet|vae|transformer|netG|netD|G|D)$"
    r"|^(model|net)_\w+$|^\w+_(model|net|network)$",
)
LOADER_NAME_RE = re.compile(r"^(\w+_)?(data)?loader(_\w+)?$|^(\w+_)?dl$|^dataloader\w*$", re.I)
OPTIMIZER_NAME_RE = re.compile(r"^(\w+_)?(opt|optim|optimizer|optimiser)(_\w+)?$|^opt[A-Z]\w*$")
SCALER_NAME_RE = re.compile(r"^(\w+_)?(grad_)?scaler$")
CRITERION_NAME_RE = re.compile(
    r"^(criterion|criterion_\w+|\w+_criterion|loss_fn|loss_func|lossfn|loss_function|\w+_loss_fn)$"
)
LOSS_NAME_RE = re.compile(r"^(loss|\w+_loss|loss_\w+)$")
LOSS_ACCUMULATOR_RE = re.compile(
    r"^(total|running|epoch|avg|mean|sum|cum|accum|acc|train|val|valid|test|eval|best|prev|last|min|max|"
    r"batch_avg|smoothed|ema|log)_"
)
# `compute_loss`, `use_loss`, `return_loss`: a function or a flag, not a loss value
LOSS_NOT_VALUE_RE = re.compile(
    r"^(compute|calc|calculate|get|use|with|has|return|do|enable|skip|apply|no|is|should|need|build|make|"
    r"init|create|add|set|update|log|print|report)_"
)
NOT_MODEL_HINT_RE = re.compile(r"tokeni[sz]er|processor|config|feature_extractor|scheduler", re.I)

# torch.<sub>.* namespaces whose calls do not return tensors
_NON_TENSOR_TORCH_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.optim.",
    "torch.jit.",
    "torch.onnx.",
    "torch.hub.",
    "torch.amp.",
    "torch.profiler.",
    "torch.multiprocessing.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.testing.",
    "torch.export.",
    "torch.fx.",
    "torch.package.",
    "torch.mps.",
    "torch.xpu.",
    "torch.autograd.profiler.",
)
_NON_TENSOR_TORCH_FUNCS = frozenset(
    """device dtype no_grad enable_grad inference_mode set_grad_enabled is_grad_enabled
    is_tensor is_storage is_floating_point is_complex is_nonzero numel manual_seed seed initial_seed
    save load get_default_dtype set_default_dtype set_default_device set_default_tensor_type compile
    Generator Size finfo iinfo set_float32_matmul_precision get_float32_matmul_precision
    use_deterministic_algorithms are_deterministic_algorithms_enabled set_printoptions
    set_num_threads get_num_threads set_num_interop_threads get_num_interop_threads
    get_rng_state set_rng_state set_anomaly_enabled is_anomaly_enabled autocast
    set_autocast_enabled is_autocast_enabled typename memory_format layout
    vmap func cond sym_int sym_float""".split()
)
# tensor methods whose result is not a tensor
NON_TENSOR_METHODS = frozenset(
    """item tolist numpy size dim ndimension numel nelement element_size data_ptr stride
    storage untyped_storage get_device is_contiguous is_floating_point is_complex
    backward register_hook retain_grad type_as_string __len__ is_pinned is_shared
    is_set_to equal allclose has_names storage_offset""".split()
)
NON_TENSOR_ATTRS = frozenset(
    """shape device dtype is_cuda requires_grad ndim is_leaf layout names grad_fn is_sparse
    is_quantized is_meta output_nr""".split()
)
TENSOR_ATTRS = frozenset("grad data T mT H mH real imag".split())
# methods of a model that return the model itself
MODEL_SELF_METHODS = frozenset("to cuda cpu train eval half float double bfloat16 requires_grad_".split())
MODEL_TELL_METHODS = frozenset(
    "parameters named_parameters train eval state_dict load_state_dict modules named_modules".split()
)
CLOCK_FUNCS = frozenset(
    {
        "time.time",
        "time.perf_counter",
        "time.monotonic",
        "time.process_time",
        "time.time_ns",
        "time.perf_counter_ns",
        "time.monotonic_ns",
        "timeit.default_timer",
    }
)
ACCELERATOR_HINT_RE = re.compile(
    r"cuda|\.to\(|device|gpu|accelerat|[Ff]abric|lightning|Trainer|\b(mps|xpu|npu|hpu)\b"
)
# the same test, plain substrings first (`in` is several times faster than the alternation)
_ACCELERATOR_WORDS = ("cuda", ".to(", "device", "gpu", "accelerat", "Fabric", "fabric", "lightning", "Trainer")
_ACCELERATOR_DEVICES_RE = re.compile(r"\b(mps|xpu|npu|hpu)\b")


def may_use_accelerator(text: str) -> bool:
    """Same answer as `ACCELERATOR_HINT_RE.search(text)`."""
    return any(w in text for w in _ACCELERATOR_WORDS) or _ACCELERATOR_DEVICES_RE.search(text) is not None
# torch factories that build a tensor on the default (CPU) device unless given `device=`
HOST_FACTORIES = frozenset(
    """zeros ones empty full arange range linspace logspace eye rand randn randint randperm
    tensor from_numpy frombuffer scalar_tensor""".split()
)
_LOADER_BATCH = object()  # a binding by a DataLoader loop (see FileAnalysis._host_bindings)
# names of functions that compute with a model (and so on its device)
MODEL_CODE_WORDS = ("forward", "backward", "step", "generate", "sample", "decode", "loss")
ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "progress_bar", "track", "islice"})


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


class _KindsAt:
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

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __getitem__(self, name: str) -> str:
        k = self.get(name)
        if k is None:
            raise KeyError(name)
        return k


class FileAnalysis:
    def __init__(self, tree: ast.Module, text: str, path: str = "") -> None:
        self.tree = tree
        self.text = text
        self.path = path
        # one fast walk gives every node in pre-order with its depth, and parents
        self.order, self._parents = index_tree(tree)
        self.imports = ImportTable(tree)
        self._func_info: Dict[ast.AST, FunctionInfo] = {}
        self._loop_hot: Dict[ast.AST, bool] = {}
        self._loop_triggers: Dict[ast.AST, bool] = {}
        self._module_classes: Optional[Set[str]] = None
        self._class_attr_kinds: Dict[ast.AST, Dict[str, str]] = {}
        self._host_bindings_cache: Dict[ast.AST, Dict[str, List[Optional[ast.AST]]]] = {}
        self.uses_cuda = "cuda" in text
        self._memo: Dict[str, Dict[object, object]] = {}
        self._by_type: Optional[Dict[type, List[ast.AST]]] = None
        self._slots: Optional[Dict[ast.AST, Tuple[ast.AST, str, int]]] = None
        self._mentions: Dict[str, bool] = {}
        # anything that can put tensors on an accelerator: CUDA, a `.to(device)`,
        # accelerate / Fabric / Lightning, a `device` variable, MPS/XPU/NPU
        self.may_use_accelerator = may_use_accelerator(text)

    def nodes(self, *types: type) -> List[ast.AST]:
        """Every node of the file of these types (every node, with none), in
        source order. Rules and analyses ask this instead of `ast.walk`-ing the
        tree again: the file is indexed once, and each list is built once
        (shared: read it, never change it)."""
        by_type = self._by_type
        if by_type is None:
            by_type = self._by_type = {}
            for n, _ in self.order:
                bucket = by_type.get(n.__class__)
                if bucket is None:
                    by_type[n.__class__] = [n]
                else:
                    bucket.append(n)
        if not types:
            every = self._memo.get("nodes.all")
            if every is None:
                every = self._memo["nodes.all"] = [n for n, _ in self.order]
            return every  # type: ignore[return-value]
        if len(types) == 1:
            return by_type.get(types[0], [])
        key = ("nodes",) + types
        out = self._memo.get(key)  # type: ignore[call-overload]
        if out is None:
            wanted = set(types)
            out = [n for n, _ in self.order if n.__class__ in wanted]
            self._memo[key] = out  # type: ignore[index]
        return out  # type: ignore[return-value]

    def mentions(self, word: str) -> bool:
        """`word` occurs in the file's text (searched once per word, not once
        per question: the text may be 10 MB)."""
        hit = self._mentions.get(word)
        if hit is None:
            hit = self._mentions[word] = word in self.text
        return hit

    def memo(self, namespace: str) -> Dict[object, object]:
        """A per-file dict for an analysis module's cached results."""
        return self._memo.setdefault(namespace, {})

    def memoized(self, namespace: str, key: object, compute: Callable[[], _T]) -> _T:
        """`compute()`, once per key of the namespace (a falsy answer is kept too)."""
        cache = self.memo(namespace)
        if key in cache:
            return cache[key]  # type: ignore[return-value]
        out = cache[key] = compute()
        return out

    # ------------------------------------------------------------------ names
    def qualname(self, node: ast.AST) -> Optional[str]:
        return self.imports.qualname(node)

    def call_qualname(self, call: ast.AST) -> Optional[str]:
        return self.imports.qualname(call.func) if isinstance(call, ast.Call) else None

    # --------------------------------------------------------------- parents
    @property
    def parents(self) -> Dict[ast.AST, ast.AST]:
        if self._parents is None:
            parents: Dict[ast.AST, ast.AST] = {}
            for node in ast.walk(self.tree):
                for child in ast.iter_child_nodes(node):
                    parents[child] = node
            self._parents = parents
        return self._parents

    def slot(self, stmt: ast.AST) -> Optional[Tuple[ast.AST, str, int]]:
        """(parent, field, index) of a statement in its parent's `body`,
        `orelse` or `finalbody` list; None for anything else. One index of
        the file answers what `any(stmt is s for s in parent.body)` would
        scan a block for (a 100,000-statement body, once per finding)."""
        slots = self._slots
        if slots is None:
            slots = self._slots = {}
            for n, _ in self.order:
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(n, field, None)
                    if block.__class__ is list:
                        for i, b in enumerate(block):
                            slots[b] = (n, field, i)
        return slots.get(stmt)

    def in_block(self, child: ast.AST, parent: ast.AST, *fields: str) -> bool:
        """`child` is a statement of one of `parent`'s blocks (default `body`)."""
        where = self.slot(child)
        return where is not None and where[0] is parent and where[1] in (fields or ("body",))

    def block_of(self, parent: ast.AST, child: ast.AST) -> Optional[List[ast.AST]]:
        """The `body`, `orelse` or `finalbody` list of `parent` that holds `child`."""
        where = self.slot(child)
        return getattr(parent, where[1]) if where is not None and where[0] is parent else None

    def after_periodic_continue(self, parent: ast.AST, child: ast.AST) -> bool:
        """An earlier statement of `child`'s block is `if step % k: continue`
        (so `child` runs only on some steps)."""
        where = self.slot(child)
        if where is None or where[0] is not parent:
            return False
        firsts = self.memo("core.periodic_continue")
        key = (parent, where[1])
        first = firsts.get(key)  # type: ignore[call-overload]
        if first is None:
            block = getattr(parent, where[1])
            first = firsts[key] = next(  # type: ignore[index]
                (i for i, stmt in enumerate(block) if _is_periodic_continue(stmt)), len(block)
            )
        return first < where[2]  # type: ignore[operator]

    def ancestors(self, node: ast.AST) -> List[ast.AST]:
        """Ancestors from the module down to the node's parent."""
        out = []
        parents = self.parents
        cur = parents.get(node)
        while cur is not None:
            out.append(cur)
            cur = parents.get(cur)
        out.reverse()
        return out

    @staticmethod
    def enclosing_scope(ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        for anc in reversed(ancestors):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return anc
        return None

    @staticmethod
    def enclosing_class(ancestors: Sequence[ast.AST]) -> Optional[ast.ClassDef]:
        for anc in reversed(ancestors):
            if isinstance(anc, ast.ClassDef):
                return anc
        return None

    # ------------------------------------------------------------ classes
    @property
    def module_classes(self) -> Set[str]:
        """Names of classes in this file that subclass torch.nn.Module (transitively)."""
        if self._module_classes is None:
            classes = {n.name: n for n, _ in self.order if isinstance(n, ast.ClassDef)}
            result: Set[str] = set()
            changed = True
            while changed:
                changed = False
                for name, cls in classes.items():
                    if name in result:
                        continue
                    for base in cls.bases:
                        q = self.qualname(base) or ""
                        b = last_name(base) or ""
                        if (
                            q == "torch.nn.Module"
                            or (q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper())
                            or b in result
                            or (b in ("Module", "LightningModule", "PreTrainedModel") and q != "")
                        ):
                            result.add(name)
                            changed = True
                            break
            self._module_classes = result
        return self._module_classes

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        return cls.name in self.module_classes

    def _class_kinds(self, cls: ast.ClassDef) -> Dict[str, str]:
        """Kinds of `self.<attr>` assigned anywhere in the class's methods."""
        kinds = self._class_attr_kinds.get(cls)
        if kinds is None:
            kinds = {}
            self._class_attr_kinds[cls] = kinds
            for node in ast.walk(cls):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if (
                            isinstance(t, ast.Attribute)
                            and isinstance(t.value, ast.Name)
                            and t.value.id == "self"
                        ):
                            k = self._classify(node.value, {}, set())
                            if k is not None:
                                kinds[t.attr] = k
        return kinds

    # ----------------------------------------------------------- functions
    def function_info(self, scope: Optional[ast.AST]) -> FunctionInfo:
        key = scope if scope is not None else self.tree
        info = self._func_info.get(key)
        if info is None:
            info = self._build_function_info(key)
            self._func_info[key] = info
        return info

    def info_for(self, ancestors: Sequence[ast.AST]) -> FunctionInfo:
        return self.function_info(self.enclosing_scope(ancestors))

    def _build_function_info(self, scope: ast.AST) -> FunctionInfo:
        kinds: Dict[str, str] = {}
        batch: Set[str] = set()
        history: Dict[str, List[tuple]] = {}
        # inherit from the enclosing function for closures, and from module level
        if scope is not self.tree:
            outer = self.enclosing_scope(self.ancestors(scope))
            base = self.function_info(outer)
            kinds.update(base.kinds)
            batch.update(base.batch_names)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = scope.args
            for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
                kinds.pop(a.arg, None)
                batch.discard(a.arg)
                k = _kind_from_annotation(a.annotation, self) or _kind_from_name(a.arg)
                if k is not None:
                    kinds[a.arg] = k
                history.setdefault(a.arg, []).append(((0, 0), k))
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        for node in _walk_scope(body):
            if isinstance(node, ast.Assign):
                k = self._classify(node.value, kinds, batch)
                for t in node.targets:
                    self._bind(t, k, kinds, batch, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                k = self._classify(node.value, kinds, batch)
                self._bind(node.target, k, kinds, batch, node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                k = self._classify(node.value, kinds, batch)
                if k == TENSOR:
                    kinds[node.target.id] = TENSOR
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self._bind_loop_target(node.target, node.iter, kinds, batch)
            elif isinstance(node, ast.comprehension):
                self._bind_loop_target(node.target, node.iter, kinds, batch)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                pass
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                self._record_bindings(node, kinds, history)
        return FunctionInfo(scope, kinds, batch, history)

    @staticmethod
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
            for name in _target_names(t):
                history.setdefault(name, []).append((at, kinds.get(name)))

    def _bind(self, target, kind, kinds, batch, value) -> None:
        if isinstance(target, ast.Name):
            if kind is None:
                # unknown value: keep a name-derived guess only if nothing was known
                kinds.pop(target.id, None)
                if self._is_batch_expr(value, kinds, batch):
                    batch.add(target.id)
                    kinds[target.id] = TENSOR
                return
            kinds[target.id] = kind
            if self._is_batch_expr(value, kinds, batch):
                batch.add(target.id)
            else:
                batch.discard(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            is_batch = self._is_batch_expr(value, kinds, batch)
            elt_kind = TENSOR if (kind == TENSOR or is_batch) else None
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind(t, self._classify(v, kinds, batch), kinds, batch, v)
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
                    self._bind(elt, elt_kind, kinds, batch, value)

    def _bind_loop_target(self, target, it, kinds, batch) -> None:
        base, n_skip = unwrap_iter(it)
        from_loader = self._is_loader(base, kinds)
        from_batch = self._is_batch_expr(base, kinds, batch)
        if not (from_loader or from_batch):
            for name in _target_names(target):
                kinds.pop(name, None)
                batch.discard(name)
            return
        # enumerate(loader): the first element is the index
        if n_skip and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            for name in _target_names(target.elts[0]):
                kinds[name] = NUMBER
                batch.discard(name)
            target = target.elts[1]
        for name in _target_names(target):
            batch.add(name)
            kinds[name] = TENSOR

    # --------------------------------------------------------- classification
    def _classify(self, expr: ast.AST, kinds: Dict[str, str], batch: Set[str]) -> Optional[str]:
        if isinstance(expr, ast.Constant):
            v = expr.value
            if isinstance(v, bool) or v is None:
                return OTHER
            if isinstance(v, (int, float, complex)):
                return NUMBER
            return OTHER
        if isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.JoinedStr)):
            return OTHER
        if isinstance(expr, ast.Name):
            k = kinds.get(expr.id)
            if k:
                return k
            if expr.id in self.imports.names:
                # bound by an import or a module-level def/class: a module,
                # function or class (`model_type_to_name`), not a model or tensor
                return OTHER
            return self._name_guess(expr.id)
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self._self_attr_kind(expr)
            base = self._classify(expr.value, kinds, batch)
            if base == TENSOR:
                if expr.attr in NON_TENSOR_ATTRS or expr.attr.startswith(("is_", "has_")):
                    return OTHER
                if expr.attr in TENSOR_ATTRS:
                    return TENSOR
                if isinstance(expr.value, ast.Attribute) and expr.value.attr not in TENSOR_ATTRS:
                    # `outputs.cache.is_croppable`: a field of a field of a model
                    # output is some object, not known to be a tensor
                    return None
                return TENSOR  # a ModelOutput field (.loss, .logits)
            if base == MODEL and expr.attr in ("module", "_orig_mod"):
                return MODEL
            q = self.qualname(expr)
            if q and q.startswith("torch.") and q.split(".")[-1] in ("float32", "float16", "bfloat16", "int64"):
                return OTHER
            return None
        if isinstance(expr, ast.Subscript):
            base = self._classify(expr.value, kinds, batch)
            if base in (TENSOR, NUMPY):
                return base
            if base is None and self._is_batch_expr(expr.value, kinds, batch):
                return TENSOR
            return None
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.left, ast.JoinedStr) or (
                isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, (str, bytes))
            ):
                return OTHER  # `"loss %.3f" % loss`: string formatting
            left = self._classify(expr.left, kinds, batch)
            right = self._classify(expr.right, kinds, batch)
            if TENSOR in (left, right):
                return TENSOR
            if NUMPY in (left, right):
                return NUMPY
            if left == NUMBER and right == NUMBER:
                return NUMBER
            return None
        if isinstance(expr, ast.UnaryOp):
            if isinstance(expr.op, ast.Not):
                return OTHER
            return self._classify(expr.operand, kinds, batch)
        if isinstance(expr, ast.Compare):
            operands = [expr.left] + list(expr.comparators)
            if any(isinstance(o, ast.Constant) and (o.value is None or isinstance(o.value, (str, bytes))) for o in operands):
                return OTHER  # `loss == "masks"`: a name compared with a string is not a tensor
            if all(isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in expr.ops):
                for operand in [expr.left] + list(expr.comparators):
                    if self._classify(operand, kinds, batch) == TENSOR:
                        return TENSOR
            return OTHER
        if isinstance(expr, ast.IfExp):
            a = self._classify(expr.body, kinds, batch)
            b = self._classify(expr.orelse, kinds, batch)
            return a if a == b else (a or b if None in (a, b) else None)
        if isinstance(expr, ast.Await):
            return None
        if isinstance(expr, ast.Call):
            return self._classify_call(expr, kinds, batch)
        return None

    def _classify_call(self, call: ast.Call, kinds, batch) -> Optional[str]:
        func = call.func
        q = self.qualname(func)
        if q:
            k = self._kind_of_qualified_call(q, call, kinds, batch)
            if k is not None:
                return k
        if isinstance(func, ast.Attribute):
            method = func.attr
            recv = self._classify(func.value, kinds, batch)
            if recv == TENSOR:
                if method in ("item",):
                    return NUMBER
                if method == "numpy":
                    return NUMPY
                if method in NON_TENSOR_METHODS:
                    return OTHER
                return TENSOR
            if recv == NUMPY:
                if method in ("item",):
                    return NUMBER
                if method == "tolist":
                    return OTHER
                return NUMPY
            if recv == MODEL:
                if method in MODEL_SELF_METHODS:
                    return MODEL
                if method in ("forward", "generate", "encode", "decode"):
                    return TENSOR
                return None
            if recv in (LOADER, LOADER_ITER):
                return None
            if method == "from_pretrained":
                owner = dotted(func.value) or ""
                if NOT_MODEL_HINT_RE.search(owner):
                    return OTHER
                return MODEL
            return None
        if isinstance(func, ast.Name):
            k = kinds.get(func.id) or self._name_guess(func.id)
            if k == MODEL:
                return TENSOR
            if k == CRITERION:
                return TENSOR
            if func.id in ("next",) and call.args:
                if self._classify(call.args[0], kinds, batch) in (LOADER, LOADER_ITER) or self._is_loader(call.args[0], kinds):
                    return TENSOR
            if func.id == "iter" and call.args and self._is_loader(call.args[0], kinds):
                return LOADER_ITER
        return None

    def _kind_of_qualified_call(self, q: str, call: ast.Call, kinds, batch) -> Optional[str]:
        last = q.rsplit(".", 1)[-1]
        if q.startswith(LOCAL + "."):
            if last in self.module_classes:
                return MODEL
            return None
        if q.startswith("builtins."):
            if last in ("float", "int", "len", "round", "abs") and last != "abs":
                return NUMBER
            if last in ("list", "dict", "tuple", "str", "repr", "bool", "set", "range", "enumerate", "zip", "sorted"):
                return OTHER
            if last == "iter" and call.args and self._is_loader(call.args[0], kinds):
                return LOADER_ITER
            if last == "next" and call.args:
                a = call.args[0]
                if self._classify(a, kinds, batch) in (LOADER, LOADER_ITER) or self._is_loader(a, kinds):
                    return TENSOR
            return None
        if q == "torch.utils.data.DataLoader" or last == "DataLoader":
            return LOADER
        if q.startswith("numpy.") or q == "numpy":
            return NUMPY
        if q.startswith("torch.optim.lr_scheduler"):
            return OTHER
        if q.startswith("torch.optim.") and last[:1].isupper():
            return OPTIMIZER
        if last == "GradScaler":
            return SCALER
        if q in ("torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel") or last in (
            "DistributedDataParallel",
            "FullyShardedDataParallel",
            "DDP",
            "FSDP",
        ):
            return MODEL
        if q == "torch.compile":
            if call.args and self._classify(call.args[0], kinds, batch) == MODEL:
                return MODEL
            return OTHER
        if q.startswith("torch.nn.functional."):
            return TENSOR
        if q.startswith("torch.nn.") and last[:1].isupper():
            if last.endswith("Loss"):
                return CRITERION
            if last in ("Parameter",):
                return TENSOR
            return MODEL
        if q.startswith("torchvision.models.") or q in ("timm.create_model",):
            return MODEL
        if q.startswith("torch.") and is_tensor_returning_torch(q):
            return TENSOR
        if q.startswith("torch."):
            return OTHER
        return None

    def _self_attr_kind(self, expr: ast.Attribute) -> Optional[str]:
        cls = self.enclosing_class(self.ancestors(expr))
        if cls is not None:
            k = self._class_kinds(cls).get(expr.attr)
            if k is not None:
                return k
            if any(isinstance(item, FUNCS) and item.name == expr.attr for item in cls.body):
                # `self.save_model()`: a method of the class, not a sub-module
                return OTHER
        return self._name_guess(expr.attr)

    @staticmethod
    def _name_guess(name: str) -> Optional[str]:
        return _kind_from_name(name)

    # ------------------------------------------------------- public queries
    def kind(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[str]:
        info = self.info_for(ancestors)
        return self._classify(expr, info.kinds, info.batch_names)

    def kind_at(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[str]:
        """Like `kind`, with names as they stand where `expr` is: after
        `loss = criterion(...)` and before `loss = loss.item()`, `loss` is a tensor."""
        info = self.info_for(ancestors)
        pos = (getattr(expr, "lineno", 0), getattr(expr, "col_offset", 0))
        return self._classify(expr, _KindsAt(info, pos), info.batch_names)  # type: ignore[arg-type]

    def is_tensor(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[bool]:
        """True: a torch tensor; False: known not to be one; None: unknown."""
        k = self.kind(expr, ancestors)
        if k == TENSOR:
            return True
        if k is None:
            return None
        return False

    def is_host_tensor(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """Known to live in host memory, so reading it does not wait for the GPU:

        * a batch straight from a DataLoader loop (`for x, y in loader:`), or a
          part of one (`batch["labels"]`), that is never moved: the name is
          bound by that loop only (not when the file hands its loaders to a
          library that moves batches itself: accelerate's `prepare`, Fabric's
          `setup_dataloaders`);
        * a torch factory without `device=` (`torch.rand([])`, `torch.tensor(xs)`,
          `torch.from_numpy(a)`), `.cpu()` / `.numpy()` results, `.to("cpu")`;
        * torch functions, tensor methods, arithmetic and comparisons of such
          values, and names bound only to such values.

        False means "not known": it may well be on the host too."""
        if self.mentions("set_default_device") or self.mentions("set_default_tensor_type"):
            return False
        scope = self.enclosing_scope(ancestors)
        return self._is_host(expr, scope if scope is not None else self.tree, set())

    def _is_host(self, expr: ast.AST, scope: ast.AST, seen: Set[str]) -> bool:
        if isinstance(expr, (ast.Subscript, ast.Attribute)):
            if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return False
            return self._is_host(expr.value, scope, seen)
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return False
            bindings = self._host_bindings(scope).get(expr.id)
            if not bindings:
                return False
            inner = seen | {expr.id}
            return all(b is _LOADER_BATCH or (b is not None and self._is_host(b, scope, inner)) for b in bindings)
        if isinstance(expr, ast.UnaryOp):
            return self._is_host(expr.operand, scope, seen)
        if isinstance(expr, (ast.BinOp, ast.Compare)):
            operands = [expr.left, expr.right] if isinstance(expr, ast.BinOp) else [expr.left] + list(expr.comparators)
            return self._host_operands(operands, scope, seen)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if any(kw.arg == "device" for kw in expr.keywords):
            return _is_cpu_device(next(kw.value for kw in expr.keywords if kw.arg == "device"))
        q = self.qualname(func) or ""
        if q.startswith("torch."):
            name = q.rsplit(".", 1)[-1]
            if name in HOST_FACTORIES and q.count(".") == 1:
                return True
            if is_tensor_returning_torch(q) and not name.endswith("_like"):
                return self._host_operands(list(expr.args), scope, seen)
            return False
        if isinstance(func, ast.Attribute):
            if func.attr in ("cpu", "numpy"):
                return True
            if func.attr == "to":
                return any(_is_cpu_device(a) for a in expr.args)
            if func.attr in ("cuda", "pin_memory") or func.attr.startswith("_"):
                return False
            return self._is_host(func.value, scope, seen)
        return False

    def _host_operands(self, operands, scope, seen) -> bool:
        """At least one operand is a host tensor and no other one is a tensor not
        known to be on the host (a CUDA tensor would make the result a CUDA one)."""
        info = self.function_info(scope if scope is not self.tree else None)
        found = False
        for o in operands:
            if self._is_host(o, scope, seen):
                found = True
            elif self._classify(o, info.kinds, info.batch_names) == TENSOR:
                return False
        return found

    def _host_bindings(self, scope: ast.AST) -> Dict[str, List[Optional[ast.AST]]]:
        """name -> what each binding in the scope assigns: an expression (the
        value, or the iterable/value it is unpacked from), `_LOADER_BATCH` for a
        DataLoader loop target, None for anything else (arguments, `with`,
        imports, ...)."""
        cached = self._host_bindings_cache.get(scope)
        if cached is not None:
            return cached
        out: Dict[str, List[Optional[ast.AST]]] = {}
        info = self.function_info(scope if scope is not self.tree else None)
        moves_batches = self.mentions("prepare(") or self.mentions("setup_dataloaders(")
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
            a = scope.args
            for arg in list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs) + [a.vararg, a.kwarg]:
                if arg is not None:
                    out.setdefault(arg.arg, []).append(None)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        nodes = list(_walk_scope(body))
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
                base, n_skip = unwrap_iter(node.iter)
                target = node.target
                if n_skip and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
                    bind(target.elts[0], None)  # the enumerate index
                    target = target.elts[1]
                if self._is_loader(base, info.kinds) and not moves_batches:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, []).append(_LOADER_BATCH)
                            claimed.add(id(n))
                else:
                    bind(target, base)
        for node in nodes:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in claimed:
                out.setdefault(node.id, []).append(None)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    out.setdefault(name, []).append(None)
        self._host_bindings_cache[scope] = out
        return out

    def tensor_loop_element(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        """`expr` is the element a `for` loop takes from a tensor, as that loop
        bound it: in `for idx in hits: idx.item()` (also `enumerate(hits)`),
        the name `idx` read in the loop's body, with `hits` known to be a tensor
        and not known to be in host memory. Returns the iterated expression, or
        None. The name must not be rebound in the loop before the read (a
        rebinding later in the same statement, `idx = idx.item()`, is fine), nor
        anywhere in an inner loop around the read, nor by a comprehension."""
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
                if any(name in _target_names(g.target) for g in anc.generators):
                    return None
            elif isinstance(anc, (ast.For, ast.AsyncFor)) and name in _target_names(anc.target):
                if not self.in_block(child, anc):
                    return None  # the iterable, or the `else` after the last element
                base, n_skip = unwrap_iter(anc.iter)
                target = anc.target
                if n_skip and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
                    target = target.elts[1]
                if not (isinstance(target, ast.Name) and target.id == name):
                    return None  # the index of `enumerate`, or a part of an unpacked row
                loop_anc = chain[:i]
                if self.kind_at(base, loop_anc) != TENSOR or self.is_host_tensor(base, loop_anc):
                    return None
                # rebinding inside the loop: before the read, or in an inner loop around it
                for n in _walk_scope(anc.body):
                    if n is expr:
                        break
                    if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
                        return None
                for inner in chain[i + 1 :]:
                    if isinstance(inner, LOOPS) and any(
                        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                        for n in _walk_scope([inner])
                    ):
                        return None
                return base
            child = anc
        return None

    def is_batch(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        info = self.info_for(ancestors)
        return self._is_batch_expr(expr, info.kinds, info.batch_names)

    def _is_batch_expr(self, expr, kinds, batch) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in batch
        if isinstance(expr, ast.Subscript):
            return self._is_batch_expr(expr.value, kinds, batch)
        if isinstance(expr, ast.Attribute):
            return self._is_batch_expr(expr.value, kinds, batch)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            # batch.items() / batch.values() / batch.float() / batch.to(...)
            return self._is_batch_expr(expr.func.value, kinds, batch)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "next" and expr.args:
            return self._is_loader(expr.args[0], kinds) or self._classify(expr.args[0], kinds, batch) == LOADER_ITER
        return False

    def _is_loader(self, expr, kinds) -> bool:
        if isinstance(expr, ast.Call):
            q = self.qualname(expr.func) or ""
            return q == "torch.utils.data.DataLoader" or q.endswith(".DataLoader")
        if isinstance(expr, ast.Name):
            k = kinds.get(expr.id)
            if k is not None:
                return k in (LOADER, LOADER_ITER)
            return _kind_from_name(expr.id) == LOADER
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self._self_attr_kind(expr) == LOADER
            return LOADER_NAME_RE.match(expr.attr) is not None
        return False

    def loop_iterates_loader(self, loop: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        base, _ = unwrap_iter(loop.iter)
        info = self.info_for(ancestors)
        return self._is_loader(base, info.kinds)

    def loop_iterates_data(self, loop: ast.AST) -> bool:
        """`for batch in batches:` / `for i, b in enumerate(tqdm(dataset)):`: a
        loop over stored data, not over `range(...)` (decoding steps) or a tensor."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        base = self.loader_of_loop(loop)
        while isinstance(base, ast.Call) and (last_name(base.func) or "") == "zip" and base.args:
            base = base.args[0]
        if not isinstance(base, (ast.Name, ast.Attribute, ast.Subscript)):
            return False
        return self.kind(base, self.ancestors(loop)) != TENSOR

    def loop_fetches_data(self, loop: ast.AST) -> bool:
        """A `for` loop (`for _ in range(steps):`) whose every pass takes fresh
        data and runs the model on it: its own body (not a nested loop, and not
        under a periodic `if`) draws `buffer.sample(...)`, `next(<iterator>)` or
        `data[i]` / `data[i * bs:(i + 1) * bs]` indexed by the loop variable, and
        that value, directly or through names bound from it in the loop, reaches
        the arguments of a model forward or a criterion, or the receiver of a
        `.backward()`. Not a fetch: `.sample()` of a model or a tensor,
        `next(model.parameters())` (only `next(it)` / `next(iter(data))`).
        The same inputs timed over and over (the benchmark pattern) take nothing
        fresh."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        cache = self.memo("loop_fetches_data")
        found = cache.get(loop)
        if found is None:
            found = self._loop_fetches_data(loop)
            cache[loop] = found
        return found  # type: ignore[return-value]

    def _loop_fetches_data(self, loop: ast.AST) -> bool:
        anc = self.ancestors(loop) + [loop]
        body: List[ast.AST] = []
        stack = list(loop.body)  # type: ignore[attr-defined]
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            body.append(n)
            stack.extend(ast.iter_child_nodes(n))
        bindings = []
        for n in body:
            if isinstance(n, ast.Assign):
                bindings.append((n.targets, n.value))
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                bindings.append(([n.target], n.value))
            elif isinstance(n, (ast.For, ast.AsyncFor)):
                bindings.append(([n.target], n.iter))
        # `out[i]` of an `out` computed in the loop is not stored data
        bound_here = {dotted(n) for targets, _ in bindings for t in targets for n in ast.walk(t)} - {None}
        loop_vars = set(_target_names(loop.target))  # type: ignore[attr-defined]
        fetches: Set[int] = set()
        for node in self._own_nodes(loop):
            if (
                self._is_fetch(node, loop_vars, bound_here, anc)
                and self.hot_loop(node, self.ancestors(node), is_hot=lambda lp: lp is loop) is loop
            ):
                fetches.add(id(node))
        if not fetches:
            return False
        fresh: Set[str] = set()

        def mentions(expr: Optional[ast.AST]) -> bool:
            if expr is None:
                return False
            for n in ast.walk(expr):
                if id(n) in fetches:
                    return True
                if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in fresh:
                    return True
            return False

        changed = True
        while changed:  # the names bound from fresh data, to a fixed point
            changed = False
            for targets, value in bindings:
                if not mentions(value):
                    continue
                for t in targets:
                    for n in ast.walk(t):
                        key = dotted(n) if isinstance(n, (ast.Name, ast.Attribute)) else None
                        if key is not None and key not in fresh:
                            fresh.add(key)
                            changed = True
        for n in body:
            if not isinstance(n, ast.Call):
                continue
            if self.is_backward_call(n) and mentions(n.func.value):  # type: ignore[attr-defined]
                return True
            is_criterion = isinstance(n.func, (ast.Name, ast.Attribute)) and self.kind(n.func, anc) == CRITERION
            if (is_criterion or self.is_model_call(n, anc)) and any(
                mentions(a) for a in list(n.args) + [kw.value for kw in n.keywords]
            ):
                return True
        return False

    def _is_fetch(
        self, node: ast.AST, loop_vars: Set[str], bound_here: Set[Optional[str]], anc: Sequence[ast.AST]
    ) -> bool:
        """`x.sample(...)`, `next(it)`, `data[i]` with `i` a loop variable (see `loop_fetches_data`)."""
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "sample":
                return self.kind(func.value, anc) not in (MODEL, TENSOR)
            if isinstance(func, ast.Name) and func.id == "next" and node.args:
                it = node.args[0]
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "iter" and it.args:
                    it = it.args[0]
                return isinstance(it, (ast.Name, ast.Attribute, ast.Subscript)) and self.kind(it, anc) != MODEL
            return False
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if dotted(node.value) in bound_here:
                return False
            return any(isinstance(n, ast.Name) and n.id in loop_vars for n in ast.walk(node.slice))
        return False

    def loader_of_loop(self, loop: ast.AST) -> Optional[ast.AST]:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return None
        base, _ = unwrap_iter(loop.iter)
        return base

    def is_model_call(self, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """`model(x)`, `self.net(x)`, `model.module(x)`; not `model.eval()`."""
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        if isinstance(func, ast.Name):
            return self.kind(func, ancestors) == MODEL
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                return self._self_attr_kind(func) == MODEL
            if func.attr in ("forward",):
                return self.kind(func.value, ancestors) == MODEL
            if func.attr in ("module", "_orig_mod"):
                return self.kind(func.value, ancestors) == MODEL
            # model.encoder(x) style sub-module call on a known model
            return False
        return False

    @staticmethod
    def is_backward_call(call: ast.AST) -> bool:
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
        )

    def is_optimizer_step(self, call: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
        """`optimizer.step()`, `opt.step()`, `scaler.step(optimizer)`; not `scheduler.step()`."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
            return False
        recv = call.func.value
        k = self.kind(recv, ancestors)
        if k in (OPTIMIZER, SCALER):
            return True
        name = last_name(recv) or ""
        name = name.lstrip("_")
        return bool(OPTIMIZER_NAME_RE.match(name) or SCALER_NAME_RE.match(name))

    # ------------------------------------------------------------- hot loops
    def _own_nodes(self, loop: ast.AST) -> Iterator[ast.AST]:
        """Nodes of the loop's own body: not in nested loops, defs, lambdas or classes."""
        stack = [
            n
            for n in list(loop.body) + list(getattr(loop, "orelse", []))
            if not isinstance(n, LOOPS) and not isinstance(n, SCOPES)
        ]
        while stack:
            node = stack.pop()
            yield node
            for child in ast.iter_child_nodes(node):
                if isinstance(child, LOOPS) or isinstance(child, SCOPES):
                    continue
                stack.append(child)

    def _nested_loops(self, loop: ast.AST) -> Iterator[ast.AST]:
        stack = list(ast.iter_child_nodes(loop))
        while stack:
            node = stack.pop()
            if isinstance(node, SCOPES):
                continue
            if isinstance(node, LOOPS):
                yield node
            stack.extend(ast.iter_child_nodes(node))

    def loop_has_triggers(self, loop: ast.AST) -> bool:
        cached = self._loop_triggers.get(loop)
        if cached is None:
            ancestors = self.ancestors(loop) + [loop]
            cached = self.loop_iterates_loader(loop, ancestors[:-1])
            if not cached:
                for node in self._own_nodes(loop):
                    if isinstance(node, ast.Call) and (
                        self.is_backward_call(node)
                        or self.is_optimizer_step(node, ancestors)
                        or self.is_model_call(node, ancestors)
                    ):
                        cached = True
                        break
            self._loop_triggers[loop] = cached
        return cached

    def is_hot_loop(self, loop: ast.AST) -> bool:
        cached = self._loop_hot.get(loop)
        if cached is None:
            cached = self.loop_has_triggers(loop) and (
                not self.contains_hot_loop(loop) or self.is_step_loop(loop)
            )
            self._loop_hot[loop] = cached
        return cached

    def _if_takes_step(self, node: ast.If, ancestors: Sequence[ast.AST]) -> bool:
        """`_block_takes_step` of an `if`'s body, once per `if`."""
        return self.memoized("core.if_takes_step", node, lambda: self._block_takes_step(node.body, ancestors))

    def _block_takes_step(self, body: List[ast.AST], ancestors: Sequence[ast.AST]) -> bool:
        """The block calls an optimizer step: `if (i + 1) % accum == 0:` around
        `optimizer.step()` marks the end of each training step, not a logging
        interval, so what it does runs every step."""
        stack = list(body)
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            if isinstance(n, ast.Call) and self.is_optimizer_step(n, ancestors):
                return True
            stack.extend(ast.iter_child_nodes(n))
        return False

    def is_training_step_loop(self, loop: ast.AST) -> bool:
        """The loop's own body calls `.backward()` (also `accelerator.backward`,
        `fabric.backward`, `manual_backward`) or an optimizer step."""
        return self.memoized("core.training_step_loop", loop, lambda: self._is_training_step_loop(loop))

    def _is_training_step_loop(self, loop: ast.AST) -> bool:
        inner = self.ancestors(loop) + [loop]
        for n in self._own_nodes(loop):
            if not isinstance(n, ast.Call):
                continue
            if self.is_backward_call(n) or self.is_optimizer_step(n, inner):
                return True
            if isinstance(n.func, ast.Attribute) and n.func.attr == "manual_backward":
                return True
        return False

    def is_step_loop(self, loop: ast.AST) -> bool:
        """A loop that runs once per training/evaluation step even when a hot
        loop is nested in it: it iterates a DataLoader, or its own body calls
        `.backward()` or an optimizer step (a GAN's batch loop around its
        critic loop, a batch loop around gradient-accumulation micro-steps).
        An epoch loop does neither itself."""
        def compute() -> bool:
            ancestors = self.ancestors(loop)
            inner = ancestors + [loop]
            return self.loop_iterates_loader(loop, ancestors) or any(
                isinstance(n, ast.Call) and (self.is_backward_call(n) or self.is_optimizer_step(n, inner))
                for n in self._own_nodes(loop)
            )

        return self.memoized("core.step_loop", loop, compute)

    def contains_hot_loop(self, loop: ast.AST) -> bool:
        return self.memoized(
            "core.contains_hot_loop", loop, lambda: any(self.is_hot_loop(inner) for inner in self._nested_loops(loop))
        )

    def is_training_loop(self, loop: ast.AST) -> bool:
        return self.memoized(
            "core.training_loop", loop,
            lambda: any(isinstance(n, ast.Call) and self.is_backward_call(n) for n in self._own_nodes(loop)),
        )

    def hot_loop(
        self, node: ast.AST, ancestors: Sequence[ast.AST], is_hot: Optional[Callable[[ast.AST], bool]] = None
    ) -> Optional[ast.AST]:
        """The hot loop `node` runs in every iteration of, or None.

        `ancestors` runs from the module down to node's parent. `is_hot`
        replaces `is_hot_loop` as the test of which loops count (with
        `lambda loop: True`: the innermost loop of the function whose every
        pass runs `node`, under the same exemptions)."""
        chain = list(ancestors) + [node]
        # set when a block ending in `break` was passed: it runs at most once
        # per pass of the innermost loop around it
        once_per_loop = False
        for i in range(len(chain) - 2, -1, -1):
            anc = chain[i]
            child = chain[i + 1]
            if isinstance(anc, SCOPES):
                return None
            if (
                isinstance(anc, ast.If)
                and _is_periodic_test(anc.test)
                and self.in_block(child, anc)
                and not self._if_takes_step(anc, chain[: i + 1])
            ):
                return None
            if isinstance(anc, ast.IfExp) and child is anc.body and _is_periodic_test(anc.test):
                return None  # `loss.item() if step % 10 == 0 else None`
            if isinstance(anc, ast.BoolOp) and isinstance(anc.op, ast.And):
                # `step % 10 == 0 and loss.item() > x`: evaluated only on periodic steps
                earlier = anc.values[: next(k for k, v in enumerate(anc.values) if v is child)]
                if any(_is_periodic_test(v) for v in earlier):
                    return None
            if isinstance(anc, ast.ExceptHandler):
                return None  # error handling: runs when something failed, not every step
            if isinstance(anc, ast.Assert) and child is anc.msg:
                return None  # the message is built only when the assertion fails
            body = self.block_of(anc, child)
            if body is not None and self.after_periodic_continue(anc, child):
                return None
            if body is not None and body and isinstance(body[-1], (ast.Return, ast.Raise)):
                return None  # a block that leaves the function runs once
            if body is not None and body and isinstance(body[-1], ast.Break):
                once_per_loop = True
            if isinstance(anc, LOOPS):
                # the loop's header (iter/test) and its `else` run once per pass of the outer code
                if not self.in_block(child, anc):
                    if not (isinstance(anc, ast.While) and child is anc.test):
                        continue
                if (is_hot or self.is_hot_loop)(anc):
                    return None if once_per_loop else anc
                if self.contains_hot_loop(anc):
                    return None
                once_per_loop = False
        return None

    # ------------------------------------------------------------ contexts
    def grad_disabled(self, ancestors: Sequence[ast.AST]) -> bool:
        """Inside `torch.no_grad()` / `inference_mode()` / `set_grad_enabled(...)`,
        or a function decorated with them (or that turns grad off itself)."""
        for anc in ancestors:
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    if self._is_grad_off_ctx(item.context_expr):
                        return True
            elif isinstance(anc, FUNCS):
                for dec in anc.decorator_list:
                    if self._is_grad_off_ctx(dec):
                        return True
                for n in anc.body:
                    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
                        q = self.call_qualname(n.value)
                        if q == "torch.set_grad_enabled":
                            return True
        return False

    def _is_grad_off_ctx(self, expr: ast.AST) -> bool:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.qualname(target)
        if q in ("torch.no_grad", "torch.inference_mode"):
            if q == "torch.inference_mode" and isinstance(expr, ast.Call) and expr.args:
                a = expr.args[0]
                return not (isinstance(a, ast.Constant) and a.value is False)
            return True
        if q == "torch.set_grad_enabled" and isinstance(expr, ast.Call):
            a = expr.args[0] if expr.args else None
            # a literal True turns grad on; anything else (False, `phase == "train"`) may turn it off
            return not (isinstance(a, ast.Constant) and a.value is True)
        return False

    def autocast_block(self, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        """The innermost enclosing `with <autocast>` statement (not crossing a def)."""
        for anc in reversed(ancestors):
            if isinstance(anc, SCOPES):
                return None
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    if self.is_autocast_expr(item.context_expr):
                        return anc
        return None

    def is_autocast_expr(self, expr: ast.AST) -> bool:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.qualname(target) or ""
        return q in ("torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast")

    def is_clock_call(self, call: ast.AST) -> bool:
        return isinstance(call, ast.Call) and self.call_qualname(call) in CLOCK_FUNCS

    def is_timing_read(self, call: ast.AST) -> bool:
        """A host clock read (`is_clock_call`) or `start.elapsed_time(end)` on
        CUDA events: code that measures time."""
        if self.is_clock_call(call):
            return True
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "elapsed_time"
        )

    def timing_reads(self, node: ast.AST) -> List[ast.Call]:
        """The timing reads (`is_timing_read`) in `node`'s code, not looking
        into nested defs, lambdas or classes."""
        out: List[ast.Call] = []
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, ast.Call) and self.is_timing_read(cur):
                out.append(cur)
            for child in ast.iter_child_nodes(cur):
                if not isinstance(child, SCOPES):
                    stack.append(child)
        return out

    def in_model_code(self, ancestors: Sequence[ast.AST]) -> bool:
        """Code that computes with a model, so its tensors live on the model's
        device: a method of an `nn.Module` subclass of this file, or a function
        named like model computation (`forward`, `generate`, `_sample`,
        `training_step`, `compute_loss`, ...). Data preparation (image
        processors, feature extractors, collate functions) usually runs on the CPU."""
        for i in range(len(ancestors) - 1, -1, -1):
            anc = ancestors[i]
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                low = anc.name.lower()
                if any(w in low for w in MODEL_CODE_WORDS):
                    return True
                parent = ancestors[i - 1] if i > 0 else None
                return isinstance(parent, ast.ClassDef) and self.is_module_class(parent)
            if isinstance(anc, (ast.Lambda, ast.ClassDef)):
                return False
        return False

    @property
    def uses_cuda_graphs(self) -> bool:
        """The file captures CUDA graphs (`torch.cuda.graph`, `CUDAGraph`,
        `make_graphed_callables`, tensordict's `CudaGraphModule`, or
        `torch.compile` in a mode that uses them). A replayed graph reads and
        writes fixed addresses, so buffers such as gradients must stay
        allocated between steps."""
        return any(self.mentions(w) for w in _CUDA_GRAPH_WORDS)

    def is_test_file(self) -> bool:
        p = self.path.replace("\\", "/")
        base = p.rsplit("/", 1)[-1]
        return (
            base.startswith("test_")
            or base.endswith("_test.py")
            or base == "conftest.py"
            or "/tests/" in "/" + p
            or "/test/" in "/" + p
        )


_CUDA_GRAPH_WORDS = (
    "CUDAGraph", "cuda.graph(", "make_graphed_callables", "CudaGraphModule", "reduce-overhead", "max-autotune",
    "cudagraphs",
)


# ---------------------------------------------------------------- helpers
def is_tensor_returning_torch(q: str) -> bool:
    if any(q.startswith(p) for p in _NON_TENSOR_TORCH_PREFIXES):
        return False
    parts = q.split(".")
    if len(parts) == 2:
        name = parts[1]
        if name in _NON_TENSOR_TORCH_FUNCS or name.startswith("_"):
            return False
        if name[:1].isupper():
            return name.endswith("Tensor")
        return name.islower() or "_" in name
    if parts[1] in ("linalg", "fft", "special", "sparse", "nested"):
        return True
    if parts[1] == "nn" and len(parts) >= 4 and parts[2] == "functional":
        return True
    if parts[1] == "nn" and parts[-1] in ("clip_grad_norm_", "get_total_norm", "parameters_to_vector"):
        return True  # torch.nn.utils.clip_grad_norm_ returns the total norm as a tensor
    if parts[1] == "autograd" and parts[-1] == "grad":
        return False
    return False


def _kind_from_name(name: str) -> Optional[str]:
    if name in ("self", "cls"):
        return None
    name = name.lstrip("_")  # `self._optimizer`, `self._model` name the same things
    if not name:
        return None
    if NOT_MODEL_HINT_RE.search(name):
        return None
    if MODEL_NAME_RE.match(name):
        return MODEL
    if LOADER_NAME_RE.match(name):
        return LOADER
    if OPTIMIZER_NAME_RE.match(name):
        return OPTIMIZER
    if SCALER_NAME_RE.match(name):
        return SCALER
    if CRITERION_NAME_RE.match(name):
        return CRITERION
    if (
        LOSS_NAME_RE.match(name)
        and not LOSS_ACCUMULATOR_RE.match(name)
        and not LOSS_NOT_VALUE_RE.match(name)
        and not name.endswith("_fn")
    ):
        return TENSOR
    return None


def _kind_from_annotation(ann: Optional[ast.AST], fa: "FileAnalysis") -> Optional[str]:
    if ann is None:
        return None
    q = fa.qualname(ann) or ""
    if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
        return TENSOR
    if q == "torch.nn.Module":
        return MODEL
    if q == "torch.utils.data.DataLoader":
        return LOADER
    if q.startswith("torch.optim.") and q.split(".")[-1][:1].isupper():
        return OPTIMIZER
    return None


def _is_cpu_device(expr: ast.AST) -> bool:
    """`"cpu"`, `torch.device("cpu")`."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.split(":")[0] == "cpu"
    if isinstance(expr, ast.Call) and (last_name(expr.func) or "") == "device" and expr.args:
        return _is_cpu_device(expr.args[0])
    return False


def unwrap_iter(it: ast.AST):
    """enumerate(tqdm(loader)) -> (loader, 1 if enumerate was seen)."""
    skip = 0
    while isinstance(it, ast.Call) and it.args:
        name = last_name(it.func) or ""
        if name == "enumerate":
            skip = 1
            it = it.args[0]
        elif name in ITER_WRAPPERS:
            it = it.args[0]
        else:
            break
    return it, skip


def _target_names(target: ast.AST) -> Iterable[str]:
    for n in ast.walk(target):
        if isinstance(n, ast.Name):
            yield n.id


def _walk_scope(body: List[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope in source order, not descending into nested scopes."""
    stack: List[object] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):  # an assignment whose value has been walked
            yield node[0]
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # the value (and comprehensions in it, which bind their own names)
            # is walked before the assignment binds its targets, as Python runs
            # it: `batch = {k: v.cuda() for k, v in batch.items()}` sees the old batch
            stack.append((node,))
            stack.extend(reversed(list(ast.iter_child_nodes(node))[::-1]))
            continue
        yield node
        if isinstance(node, SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_periodic_test(test: ast.AST) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            # `"%d" % x` is formatting, not a modulus
            if isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue
            return True
    return False


def _is_periodic_continue(stmt: ast.AST) -> bool:
    """`if step % k == 0: continue`."""
    return (
        isinstance(stmt, ast.If)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Continue)
        and not stmt.orelse
        and _is_periodic_test(stmt.test)
    )
