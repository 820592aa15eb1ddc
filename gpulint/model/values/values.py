"""The kind of any expression, and the questions built on it.

**Tensor inference**: within a function, which names hold torch tensors:
results of torch calls, model and criterion outputs, losses, batches from a
DataLoader, results of tensor methods and arithmetic on tensors. Values known
to be numpy arrays or Python numbers are known *not* to be tensors.

Kinds of value tracked per name: tensor, model, loader, optimizer, scaler,
criterion, numpy, number, other (`gpulint.model.values.kinds`). Unknown is None.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.tree import TreeIndex
from gpulint.model.names import LOCAL, ImportTable, dotted, last_name
from gpulint.model.values.kinds import (
    CRITERION,
    HOST_TENSOR,
    IN_MEMORY_DATASET,
    LOADER,
    LOADER_ITER,
    LOADER_NAME_RE,
    MODEL_FACTORY_NAME_RE,
    MODEL,
    MODEL_CODE_WORDS,
    MODEL_SELF_METHODS,
    GRAPH_COUNT_ATTRS,
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    is_text_key,
    NOT_MODEL_HINT_RE,
    NUMBER,
    NUMPY,
    OPTIMIZER,
    OTHER,
    PARAM_GROUP,
    PARAM_GROUPS,
    SCALER,
    SETTINGS_HOLDER_PREFIXES,
    SETTINGS_HOLDERS,
    SIZE_METHODS,
    TENSOR,
    TENSOR_ATTRS,
    is_tensor_returning_torch,
    kind_from_name,
    stub_attribute_kind,
    stub_method_kind,
    unwrap_iter,
)
from gpulint.model.values.callfacts import NO_FACTS, CallFacts
from gpulint.model.values.narrowing import not_a_tensor_here
from gpulint.model.values.attributes import class_attribute_kinds
from gpulint.model.values.scopes import FunctionInfo, KindsAt, build_function_info, splits_a_string


# where a class named in CapWords is an `nn.Module`: torch's own layers, and the
# layers of libraries built on them (torch_geometric's `MessagePassing` and convolutions,
# DGL's PyTorch layers, torchvision's models)
_MODULE_NAMESPACES = ("torch.nn.", "torch_geometric.nn.", "dgl.nn.pytorch.", "torchvision.models.")


def module_class_names(classes: Dict[str, ast.ClassDef], imports: ImportTable) -> Set[str]:
    """The names of `classes` that subclass torch.nn.Module (transitively,
    also through each other)."""
    result: Set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, cls in classes.items():
            if name in result:
                continue
            for base in cls.bases:
                q = imports.qualname(base) or ""
                b = last_name(base) or ""
                if (
                    q == "torch.nn.Module"
                    or (q.startswith(_MODULE_NAMESPACES) and q.split(".")[-1][:1].isupper())
                    or b in result
                    or (b in ("Module", "LightningModule", "PreTrainedModel") and q != "")
                ):
                    result.add(name)
                    changed = True
                    break
    return result


class Values:
    """What the expressions of one file are."""

    def __init__(self, index: TreeIndex, imports: ImportTable, facts: CallFacts = NO_FACTS) -> None:
        self.index = index
        self.imports = imports
        self.facts = facts
        self._func_info: Dict[ast.AST, FunctionInfo] = {}
        self._module_classes: Optional[Set[str]] = None
        self._class_attr_kinds: Dict[ast.AST, Dict[str, str]] = {}

    @property
    def module_classes(self) -> Set[str]:
        """Names of classes in this file that subclass torch.nn.Module (transitively)."""
        if self._module_classes is None:
            classes = {n.name: n for n in self.index.nodes(ast.ClassDef)}
            self._module_classes = module_class_names(classes, self.imports)
        return self._module_classes

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        return cls.name in self.module_classes

    def class_kinds(self, cls: ast.ClassDef) -> Dict[str, str]:
        """Kinds of `self.<attr>` assigned anywhere in the class's methods
        (`attributes.class_attribute_kinds`)."""
        kinds = self._class_attr_kinds.get(cls)
        if kinds is None:
            kinds = {}
            self._class_attr_kinds[cls] = kinds  # before filling: an attribute read while filling finds it
            class_attribute_kinds(self, cls, kinds)
        return kinds

    def function_info(self, scope: Optional[ast.AST]) -> FunctionInfo:
        key = scope if scope is not None else self.index.tree
        info = self._func_info.get(key)
        if info is None:
            info = build_function_info(self, key)
            self._func_info[key] = info
        return info

    def info_for(self, ancestors: Sequence[ast.AST]) -> FunctionInfo:
        return self.function_info(self.index.enclosing_scope(ancestors))

    # --------------------------------------------------------- classification
    def classify(self, expr: ast.AST, kinds: Dict[str, str], batch: Set[str]) -> Optional[str]:
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
            return kind_from_name(expr.id)
        if isinstance(expr, ast.Attribute):
            if expr.attr == "param_groups":
                return PARAM_GROUPS  # `optimizer.param_groups`, `self.optimizer.param_groups`
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self.self_attr_kind(expr)
            base = self.classify(expr.value, kinds, batch)
            if base == TENSOR:
                if expr.attr in NON_TENSOR_ATTRS or expr.attr.startswith(("is_", "has_")):
                    return OTHER
                if expr.attr in TENSOR_ATTRS:
                    return TENSOR
                if expr.attr in GRAPH_COUNT_ATTRS:
                    return NUMBER
                stub = stub_attribute_kind(expr.attr)
                if stub is not None:
                    return stub
                if isinstance(expr.value, ast.Name) and expr.value.id in getattr(kinds, "handed", ()) or (
                        isinstance(expr.value, ast.Attribute) and expr.value.attr not in TENSOR_ATTRS):
                    return None  # a field of what every caller hands (`batch.dict_key`), or of a field: not known
                return TENSOR  # a ModelOutput field (.loss, .logits)
            if base == MODEL and expr.attr in ("module", "_orig_mod"):
                return MODEL
            if base == NUMPY:
                # `np.finfo(np.float32).eps`, `arr.T`: numpy values (`arr.shape`, `arr.dtype`: host facts)
                return OTHER if expr.attr in ("shape", "ndim", "size", "dtype", "itemsize", "nbytes") else NUMPY
            q = self.imports.qualname(expr)
            if q and q.startswith("torch.") and q.split(".")[-1] in ("float32", "float16", "bfloat16", "int64"):
                return OTHER
            return None
        if isinstance(expr, ast.Subscript):
            if is_text_key(expr):
                return OTHER  # `batch["name"]`: the text a dataset hands, which collation keeps as strings
            base = self.classify(expr.value, kinds, batch)
            if base in (TENSOR, NUMPY):
                return base
            if base == PARAM_GROUPS:
                return PARAM_GROUP
            if base == PARAM_GROUP:
                # `group["lr"]`, `optimizer.param_groups[0]["weight_decay"]`: a hyperparameter
                key = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
                if isinstance(key, str) and key != "params":
                    return NUMBER if key != "betas" else OTHER
                return None
            if base is None and self.is_batch_expr(expr.value, kinds, batch):
                return TENSOR
            return None
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.left, ast.JoinedStr) or (
                isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, (str, bytes))
            ):
                return OTHER  # `"loss %.3f" % loss`: string formatting
            left = self.classify(expr.left, kinds, batch)
            right = self.classify(expr.right, kinds, batch)
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
            return self.classify(expr.operand, kinds, batch)
        if isinstance(expr, ast.Compare):
            operands = [expr.left] + list(expr.comparators)
            if any(isinstance(o, ast.Constant) and (o.value is None or isinstance(o.value, (str, bytes))) for o in operands):
                return OTHER  # `loss == "masks"`: a name compared with a string is not a tensor
            if all(isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in expr.ops):
                for operand in [expr.left] + list(expr.comparators):
                    if self.classify(operand, kinds, batch) == TENSOR:
                        return TENSOR
            return OTHER
        if isinstance(expr, ast.IfExp):
            a = self.classify(expr.body, kinds, batch)
            b = self.classify(expr.orelse, kinds, batch)
            return a if a == b else (a or b if None in (a, b) else None)
        if isinstance(expr, ast.Await):
            return None
        if isinstance(expr, ast.Call):
            return self._classify_call(expr, kinds, batch)
        return None

    def _classify_call(self, call: ast.Call, kinds, batch) -> Optional[str]:
        func = call.func
        q = self.imports.qualname(func)
        if q:
            k = self._kind_of_qualified_call(q, call, kinds, batch)
            if k is not None:
                return k
        if isinstance(func, ast.Attribute):
            method = func.attr
            if isinstance(func.value, ast.Name) and func.value.id == "self" and self.self_attr_kind(func) == MODEL:
                return TENSOR  # `self.enc(x)` with `self.enc = nn.Linear(...)`: a sub-module's output
            recv = self.classify(func.value, kinds, batch)
            if recv == TENSOR:
                if method in ("item",):
                    return NUMBER
                if method == "numpy":
                    return NUMPY
                if splits_a_string(call):
                    return OTHER  # `caption.split("=====")`: a string's (a tensor splits by sizes)
                stub = stub_method_kind(method, call)
                if stub is not None:
                    return stub
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
            return self._returned(call)
        if isinstance(func, ast.Name):
            if func.id not in kinds and func.id in self.imports.names:
                # a function or class (imported, or defined at module level), not a model
                # instance: `build_model(cfg)` returns a model, `is_peft_model(m)` a bool
                verb = func.id.lstrip("_")
                if verb.startswith(("is_", "has_")):
                    return OTHER
                named = kind_from_name(func.id)
                if named == MODEL:
                    return MODEL
                if named == CRITERION:
                    return TENSOR  # `loss_fn(pred, y)`: a loss function returns the loss
                return self._returned(call)
            if func.id == "sum" and func.id not in kinds and len(call.args) == 1 and isinstance(
                    call.args[0], (ast.GeneratorExp, ast.ListComp)) and self.classify(call.args[0].elt, kinds, batch) == TENSOR:
                return TENSOR  # `sum(loss_dict[k] * weight_dict[k] for k in ...)`: DETR's weighted losses
            k = kinds.get(func.id) or kind_from_name(func.id)
            if k == MODEL:
                # (`load_model(model, path)` of a star import: a function that hands back a model)
                return MODEL if MODEL_FACTORY_NAME_RE.match(func.id) else TENSOR
            if k == CRITERION:
                return TENSOR
            if func.id in ("next",) and call.args:
                if self.classify(call.args[0], kinds, batch) in (LOADER, LOADER_ITER) or self.is_loader(call.args[0], kinds):
                    return TENSOR
            if func.id == "iter" and call.args and self.is_loader(call.args[0], kinds):
                return LOADER_ITER
        return self._returned(call)

    def _returned(self, call: ast.Call) -> Optional[str]:
        """What the project says the callee returns (a host tensor is a tensor)."""
        k = self.facts.returns(call)
        return TENSOR if k == HOST_TENSOR else OTHER if k == IN_MEMORY_DATASET else k

    def _kind_of_qualified_call(self, q: str, call: ast.Call, kinds, batch) -> Optional[str]:
        last = q.rsplit(".", 1)[-1]
        if q in SETTINGS_HOLDERS or q.startswith(SETTINGS_HOLDER_PREFIXES):
            return OTHER  # `Munch(config["loss_params"])`: settings, whatever the name it is bound to
        if q.startswith(LOCAL + "."):
            if last in self.module_classes:
                return MODEL
            return None
        if q.startswith("builtins."):
            if last in ("float", "int", "len", "round", "abs") and last != "abs":
                return NUMBER
            if last in ("min", "max") and len(call.args) > 1 and not call.keywords and all(
                self.classify(a, kinds, batch) == NUMBER for a in call.args
            ):
                return NUMBER  # `max(max_lr, group["lr"])`
            if last == "zip" and self.zips_loaders(call, kinds):
                return LOADER_ITER  # `loader = zip(loader_l, loader_u)`: its items are batches
            if last in ("list", "dict", "tuple", "str", "repr", "bool", "set", "range", "enumerate", "zip", "sorted"):
                return OTHER
            if last == "iter" and call.args and self.is_loader(call.args[0], kinds):
                return LOADER_ITER
            if last == "next" and call.args:
                a = call.args[0]
                if self.classify(a, kinds, batch) in (LOADER, LOADER_ITER) or self.is_loader(a, kinds):
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
            if call.args and self.classify(call.args[0], kinds, batch) == MODEL:
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

    def self_attr_kind(self, expr: ast.Attribute) -> Optional[str]:
        cls = self.index.enclosing_class(self.index.ancestors(expr))
        if cls is not None:
            k = self.class_kinds(cls).get(expr.attr)
            if k is not None:
                return k
            if any(isinstance(item, FUNCS) and item.name == expr.attr for item in cls.body):
                # `self.save_model()`: a method of the class, not a sub-module
                return OTHER
        return kind_from_name(expr.attr)

    # ------------------------------------------------------- public queries
    def kind(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[str]:
        if isinstance(expr, ast.Name) and not_a_tensor_here(expr, ancestors, self.imports):
            return OTHER
        info = self.info_for(ancestors)
        return self.classify(expr, info.kinds, info.batch_names)

    def kind_at(self, expr: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[str]:
        """Like `kind`, with names as they stand where `expr` is: after
        `loss = criterion(...)` and before `loss = loss.item()`, `loss` is a tensor."""
        if isinstance(expr, ast.Name) and not_a_tensor_here(expr, ancestors, self.imports):
            return OTHER
        info = self.info_for(ancestors)
        pos = (getattr(expr, "lineno", 0), getattr(expr, "col_offset", 0))
        return self.classify(expr, KindsAt(info, pos), info.batch_names)  # type: ignore[arg-type]

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
        return self.is_batch_expr(expr, info.kinds, info.batch_names)

    def is_batch_expr(self, expr, kinds, batch) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in batch
        if isinstance(expr, ast.Subscript):
            if is_text_key(expr):
                return False  # `batch["name"]`: the text a dataset hands, not a tensor of the batch
            return self.is_batch_expr(expr.value, kinds, batch)
        if isinstance(expr, ast.Attribute):
            # (`labels.shape[0]`, `x.dtype`: facts of a tensor of the batch, host values)
            return expr.attr not in NON_TENSOR_ATTRS and self.is_batch_expr(expr.value, kinds, batch)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            # batch.items() / batch.values() / batch.float() / batch.to(...) (not `x.size(0)`, `x.numel()`)
            return expr.func.attr not in SIZE_METHODS and self.is_batch_expr(expr.func.value, kinds, batch)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "next" and expr.args:
            return self.is_loader(expr.args[0], kinds) or self.classify(expr.args[0], kinds, batch) == LOADER_ITER
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and (self.imports.qualname(expr.func) or "") in (
                "torch.autograd.Variable", "torch.autograd.variable.Variable"):
            return self.is_batch_expr(expr.args[0], kinds, batch)  # `Variable(x.to(device))`: the same tensor
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp)) and len(expr.generators) == 1:
            # `[b.to(device) for b in batch]`: the batch's tensors, moved, in order
            gen = expr.generators[0]
            elt = expr.elt
            return (not gen.ifs and isinstance(gen.target, ast.Name) and isinstance(elt, ast.Call)
                    and isinstance(elt.func, ast.Attribute) and elt.func.attr in ("to", "cuda")
                    and isinstance(elt.func.value, ast.Name) and elt.func.value.id == gen.target.id
                    and self.is_batch_expr(gen.iter, kinds, batch))
        return False

    def is_loader(self, expr, kinds) -> bool:
        if isinstance(expr, ast.Call):
            q = self.imports.qualname(expr.func) or ""
            return (q == "torch.utils.data.DataLoader" or q.endswith(".DataLoader")
                    or self.facts.returns(expr) == LOADER or (q == "builtins.zip" and self.zips_loaders(expr, kinds)))
        if isinstance(expr, ast.Name):
            k = kinds.get(expr.id)
            if k is not None:
                return k in (LOADER, LOADER_ITER)
            return kind_from_name(expr.id) == LOADER
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self.self_attr_kind(expr) == LOADER
            return LOADER_NAME_RE.match(expr.attr) is not None
        return False

    def zips_loaders(self, call: ast.Call, kinds) -> bool:
        """`zip(loader_l, loader_u)`: every argument a loader, known from how
        it was built (`DataLoader(...)`), not from its name alone
        (semi-supervised training steps over a labelled and an unlabelled
        loader at once)."""
        return bool(call.args) and not call.keywords and all(
            (kinds.get(a.id) in (LOADER, LOADER_ITER) if isinstance(a, ast.Name) else
             isinstance(a, ast.Call) and self.is_loader(a, kinds)) for a in call.args)

    def unwrap(self, it: ast.AST) -> Tuple[ast.AST, int]:
        """What a `for` loop over `it` iterates: `loader` for
        `enumerate(tqdm(loader))`, and through a generator that yields the
        elements of its argument (`metric_logger.log_every(loader, 10)`);
        with 1 when an `enumerate` was seen."""
        base, skip = unwrap_iter(it)
        for _ in range(8):  # wrappers of wrappers, a few deep
            if not isinstance(base, ast.Call):
                break
            inner = self.facts.iterated_argument(base)
            if inner is None:
                break
            base, more = unwrap_iter(inner)
            skip = skip or more
        return base, skip


def in_model_code(values: "Values", ancestors: Sequence[ast.AST]) -> bool:
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
            return isinstance(parent, ast.ClassDef) and values.is_module_class(parent)
        if isinstance(anc, (ast.Lambda, ast.ClassDef)):
            return False
    return False
