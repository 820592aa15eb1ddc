"""What the `self.<attr>` of a class hold, from the assignments in its methods.

Values asks this once per class (`Values.class_kinds`). A plain assignment
says what the attribute holds (`self.model = Net().cuda()`); an update that
reads the attribute itself says nothing new (`self.avg = self.avg * 0.9 +
x`); a name is read for what the method bound it to, not for its name
(`self.avg_loss = now_loss`, with `now_loss` summed from `.item()` values);
and an augmented assignment of a tensor makes a tensor of whatever the
attribute started as (`self.tokens = 0`, then `self.tokens += (y >=
0).sum()`). A buffer or parameter the class registers by name
(`self.register_buffer("inited", torch.Tensor([False]))`) is a tensor.

And what a binding of a module holds through the methods that give the
module back and the wrappers that run its forward (`constructed`,
`keeps_object`, `held_name`): `self.encoder = DDP(self.encoder)` and
`model = model.cuda()` hold the same object (the project's `refs` asks).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Optional, Set

from gpulint.model.index.nodes import FUNCS, parameter_defaults
from gpulint.model.index.order import target_names, walk_scope
from gpulint.model.values.kinds import OTHER, TENSOR
from gpulint.model.values.scopes import kind_from_annotation
from gpulint.model.index.walk import walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.values.values import Values

# names of the objects that hold a run's settings
CONFIG_NAMES = frozenset(("args", "config", "cfg", "conf", "hparams", "hps", "opt", "opts", "flags", "options"))


def class_attribute_kinds(values: "Values", cls: ast.ClassDef, kinds: Dict[str, str]) -> None:
    """Fill `kinds` with attr -> kind for the `self.<attr>` the class's methods assign."""
    grown: List[ast.AugAssign] = []
    for node in walk(cls):
        if isinstance(node, ast.Call) and _registers_tensor(node):
            # `self.register_buffer("inited", torch.Tensor([False]))`: `self.inited` is a tensor
            # (it moves with the module)
            kinds[node.args[0].value] = TENSOR  # type: ignore[attr-defined]
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if is_self_attr(t):
                    _assigned(values, node, t.attr, node.value, kinds)  # type: ignore[attr-defined]
        elif isinstance(node, ast.AnnAssign) and is_self_attr(node.target):
            # `self.fp32_loss: bool = opt.fp32_loss`: what the annotation declares, else the value says
            k = kind_from_annotation(node.annotation, values.imports)
            if k is not None:
                kinds[node.target.attr] = k  # type: ignore[attr-defined]
            elif node.value is not None:
                _assigned(values, node, node.target.attr, node.value, kinds)  # type: ignore[attr-defined]
        elif isinstance(node, ast.AugAssign) and is_self_attr(node.target):
            grown.append(node)
    # `self.tokens += (y >= 0).sum()`: a tensor from then on, whatever it
    # started as. Read once the kinds above are known, with the method's names.
    for node in grown:
        scope = values.index.enclosing_scope(values.index.ancestors(node))
        if not isinstance(scope, FUNCS):
            continue
        info = values.function_info(scope)
        if values.classify(node.value, info.kinds, info.batch_names) == TENSOR:
            kinds[node.target.attr] = TENSOR  # type: ignore[attr-defined]


def _registers_tensor(call: ast.Call) -> bool:
    """`self.register_buffer("name", <not None>)` / `register_parameter`."""
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr in ("register_buffer", "register_parameter")
            and isinstance(f.value, ast.Name) and f.value.id == "self" and len(call.args) >= 2
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
            and not (isinstance(call.args[1], ast.Constant) and call.args[1].value is None))


def _assigned(values: "Values", node: ast.AST, attr: str, value: ast.AST, kinds: Dict[str, str]) -> None:
    """`self.<attr> = value` in a method (`node`, the assignment): what it holds."""
    if mentions_self_attr(value, attr):
        return  # `self.avg = self.avg * 0.9 + x`: an update, as the value was
    k = values.classify(value, {}, set())
    if isinstance(value, ast.Name):
        # `self.avg_loss = now_loss`: what the method bound the name to, not its name
        k = local_name_kind(values, node, value.id) or (OTHER if constant_default(values, node, value.id) else k)
    if k is None and from_config(value):
        k = OTHER  # `self.margin_loss = self.strategy.args.margin_loss_enable`: a setting
    if k is not None:
        kinds[attr] = k


def local_name_kind(values: "Values", at: ast.AST, name: str) -> Optional[str]:
    """What the function around `at` binds `name` to, read from its own
    statements in order (`now_loss = 0`, `now_loss += x.item()`): the kind
    every binding that says anything agrees on (a tensor added to a number
    makes a tensor); None otherwise, and for a loop or `with` variable."""
    scope = values.index.enclosing_scope(values.index.ancestors(at))
    if not isinstance(scope, FUNCS):
        return None
    found: Set[str] = set()
    local: Dict[str, str] = {}  # the name's kind so far, statement by statement
    for node in walk_scope(scope.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
                k = values.classify(node.value, local, set())
                if k is not None:
                    found.add(k)
                    local[name] = k
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
            if bound is not None and name in target_names(bound):
                return None
    if TENSOR in found:
        return TENSOR
    return found.pop() if len(found) == 1 else None


def constant_default(values: "Values", at: ast.AST, name: str) -> bool:
    """`name` is a parameter of the function around `at` whose default is a
    number, a string or a bool (`advantage_weighted_buffer_loss=True`): a
    setting the caller may change, not a tensor, whatever its name says."""
    scope = values.index.enclosing_scope(values.index.ancestors(at))
    if not isinstance(scope, FUNCS):
        return False
    return any(a.arg == name and isinstance(d, ast.Constant) and isinstance(d.value, (bool, int, float, str))
               for a, d in parameter_defaults(scope))


def is_self_attr(t: ast.AST) -> bool:
    return isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"


def mentions_self_attr(value: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == attr and is_self_attr(n) for n in walk(value))


# methods of a module that return the module itself (`Net().to(device)` is a `Net`)
SELF_RETURNING = frozenset(("to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16",
                             "requires_grad_", "share_memory", "to_empty"))
# wrappers whose call runs the wrapped module's `forward`
_MODULE_WRAPPERS = frozenset(("DDP", "DistributedDataParallel", "DataParallel", "FSDP",
                              "FullyShardedDataParallel", "compile", "convert_sync_batchnorm"))


def constructed(value: Optional[ast.AST]) -> Optional[ast.AST]:
    """The construction under a chain of methods that return the module
    itself, and of wrappers that run its `forward`: `Net(cfg).to(device)
    .train()` -> `Net(cfg)`, `nn.DataParallel(Net()).to(device)` -> `Net()`."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in SELF_RETURNING and isinstance(func.value, ast.Call):
            value = func.value
            continue
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last in _MODULE_WRAPPERS and value.args and isinstance(value.args[0], ast.Call):
            value = value.args[0]
            continue
        break
    return value


def keeps_object(value: Optional[ast.AST], target: ast.AST) -> bool:
    """`name = name.to(device)`, `name = DDP(name, ...)`, `name =
    torch.compile(name)`, `self.encoder = DDP(self.encoder)`: `target` (a
    name, or an attribute of `self`) still holds (a wrapper of) the object it
    held, whose `forward` a call of it runs."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in SELF_RETURNING:
        innermost = constructed(value).func  # (the first method called on the name, when it is one)
        return (isinstance(innermost, ast.Attribute) and innermost.attr in SELF_RETURNING
                and _same_ref(innermost.value, target))
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if last not in _MODULE_WRAPPERS or not value.args:
        return False
    wrapped = value.args[0]  # `DDP(model)`, `DDP(model.to(device), ...)`
    return _same_ref(wrapped, target) or (
        isinstance(wrapped, ast.Call) and isinstance(wrapped.func, ast.Attribute)
        and wrapped.func.attr in SELF_RETURNING and keeps_object(wrapped, target))


def held_name(value: Optional[ast.AST]) -> Optional[str]:
    """The name whose object `value` is: the name itself, or the object a
    method of it gives back (`model.cuda()`, `model.to(device)`) or a
    wrapper of it (`DDP(model)`)."""
    if isinstance(value, ast.Name):
        return value.id
    if not isinstance(value, ast.Call):
        return None
    inner = constructed(value)
    base = inner.func.value if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) else (
        value.args[0] if value.args else None)
    return base.id if isinstance(base, ast.Name) and keeps_object(value, base) else None


def _same_ref(expr: ast.AST, target: ast.AST) -> bool:
    """`expr` names what `target` does: the same name, or the same attribute of `self`."""
    if isinstance(target, ast.Name):
        return isinstance(expr, ast.Name) and expr.id == target.id
    return is_self_attr(expr) and is_self_attr(target) and expr.attr == target.attr  # type: ignore[attr-defined]


def from_config(value: ast.AST) -> bool:
    """`strategy.args.model.margin_loss_enable`, `cfg.train.loss_weight`: an
    attribute read through a settings object (a flag, a number, a string),
    not a tensor."""
    if not isinstance(value, ast.Attribute):
        return False
    node: ast.AST = value.value
    while isinstance(node, ast.Attribute):
        if node.attr in CONFIG_NAMES:
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id in CONFIG_NAMES
