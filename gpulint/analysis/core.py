"""Hot loops, tensor inference and grad/autocast contexts.

Definitions (the ones the rule docs promise):

* **Hot loop**: the innermost `for`/`while` whose own body (not a nested loop,
  def, lambda or class) calls `.backward()`, an optimizer's `.step()`, a model
  forward, or iterates a DataLoader. A statement under a periodic guard
  (`if step % log_every == 0:`, or after `if i % n: continue`) runs rarely and
  is not hot. A loop around a hot loop runs once per inner pass and is not hot;
  a small loop with no trigger of its own nested inside a hot loop (over a dict
  of metrics, say) runs every step and is hot.
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
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set

from gpulint.analysis.names import LOCAL, ImportTable, dotted, last_name

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
ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "progress_bar", "track", "islice"})


class FunctionInfo:
    """What the names of one function (or of module level) hold."""

    def __init__(self, node: ast.AST, kinds: Dict[str, str], batch_names: Set[str]) -> None:
        self.node = node
        self.kinds = kinds
        self.batch_names = batch_names


class FileAnalysis:
    def __init__(self, tree: ast.Module, text: str, path: str = "") -> None:
        self.tree = tree
        self.text = text
        self.path = path
        self.imports = ImportTable(tree)
        self._parents: Optional[Dict[ast.AST, ast.AST]] = None
        self._func_info: Dict[ast.AST, FunctionInfo] = {}
        self._loop_hot: Dict[ast.AST, bool] = {}
        self._loop_triggers: Dict[ast.AST, bool] = {}
        self._module_classes: Optional[Set[str]] = None
        self._class_attr_kinds: Dict[ast.AST, Dict[str, str]] = {}
        self.uses_cuda = "cuda" in text

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
            classes = {n.name: n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)}
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
        return FunctionInfo(scope, kinds, batch)

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
        base, n_skip = _unwrap_iter(it)
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
            return kinds.get(expr.id) or self._name_guess(expr.id)
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self._self_attr_kind(expr)
            base = self._classify(expr.value, kinds, batch)
            if base == TENSOR:
                if expr.attr in NON_TENSOR_ATTRS:
                    return OTHER
                return TENSOR  # .grad / .data / .T, or a ModelOutput field (.loss, .logits)
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
            if self._is_batch_expr(expr.value, kinds, batch):
                return TENSOR
            return None
        if isinstance(expr, ast.BinOp):
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
        cls = self.enclosing_class(self.ancestors(expr)) if self._parents is not None or True else None
        if cls is not None:
            k = self._class_kinds(cls).get(expr.attr)
            if k is not None:
                return k
        return self._name_guess(expr.attr)

    @staticmethod
    def _name_guess(name: str) -> Optional[str]:
        return _kind_from_name(name)

    # ------------------------------------------------------- public queries
    def kind(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[str]:
        info = self.info_for(ancestors)
        return self._classify(expr, info.kinds, info.batch_names)

    def is_tensor(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[bool]:
        """True: a torch tensor; False: known not to be one; None: unknown."""
        k = self.kind(expr, ancestors)
        if k == TENSOR:
            return True
        if k is None:
            return None
        return False

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
        base, _ = _unwrap_iter(loop.iter)
        info = self.info_for(ancestors)
        return self._is_loader(base, info.kinds)

    def loader_of_loop(self, loop: ast.AST) -> Optional[ast.AST]:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return None
        base, _ = _unwrap_iter(loop.iter)
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
        return bool(OPTIMIZER_NAME_RE.match(name) or SCALER_NAME_RE.match(name))

    # ------------------------------------------------------------- hot loops
    def _own_nodes(self, loop: ast.AST) -> Iterator[ast.AST]:
        """Nodes of the loop's own body: not in nested loops, defs, lambdas or classes."""
        stack = list(loop.body) + list(getattr(loop, "orelse", []))
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
            cached = self.loop_has_triggers(loop) and not self.contains_hot_loop(loop)
            self._loop_hot[loop] = cached
        return cached

    def contains_hot_loop(self, loop: ast.AST) -> bool:
        return any(self.is_hot_loop(inner) for inner in self._nested_loops(loop))

    def is_training_loop(self, loop: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and self.is_backward_call(n) for n in self._own_nodes(loop))

    def hot_loop(self, node: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        """The hot loop `node` runs in every iteration of, or None.

        `ancestors` runs from the module down to node's parent."""
        chain = list(ancestors) + [node]
        for i in range(len(chain) - 2, -1, -1):
            anc = chain[i]
            child = chain[i + 1]
            if isinstance(anc, SCOPES):
                return None
            if isinstance(anc, ast.If) and _is_periodic_test(anc.test) and _in_list(child, anc.body):
                return None
            body = _stmt_list_of(anc, child)
            if body is not None and _after_periodic_continue(body, child):
                return None
            if isinstance(anc, LOOPS):
                # the loop's header (iter/test) runs once per pass of the outer code
                if not (_in_list(child, anc.body) or _in_list(child, getattr(anc, "orelse", []))):
                    if not (isinstance(anc, ast.While) and child is anc.test):
                        continue
                if self.is_hot_loop(anc):
                    return anc
                if self.contains_hot_loop(anc):
                    return None
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
    if parts[1] == "autograd" and parts[-1] == "grad":
        return False
    return False


def _kind_from_name(name: str) -> Optional[str]:
    if name in ("self", "cls"):
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
    if LOSS_NAME_RE.match(name) and not LOSS_ACCUMULATOR_RE.match(name) and not name.endswith("_fn"):
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


def _unwrap_iter(it: ast.AST):
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
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            continue
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # value before target, so that `x = f(x)` sees the old x
            children = children[::-1]
        stack.extend(reversed(children))


def _is_periodic_test(test: ast.AST) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            # `"%d" % x` is formatting, not a modulus
            if isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue
            return True
    return False


def _in_list(node: ast.AST, body: List[ast.AST]) -> bool:
    return any(node is b for b in body)


def _stmt_list_of(parent: ast.AST, child: ast.AST) -> Optional[List[ast.AST]]:
    for field in ("body", "orelse", "finalbody"):
        lst = getattr(parent, field, None)
        if isinstance(lst, list) and _in_list(child, lst):
            return lst
    return None


def _after_periodic_continue(body: List[ast.AST], child: ast.AST) -> bool:
    for stmt in body:
        if stmt is child:
            return False
        if (
            isinstance(stmt, ast.If)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], ast.Continue)
            and not stmt.orelse
            and _is_periodic_test(stmt.test)
        ):
            return True
    return False
