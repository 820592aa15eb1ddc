"""What a call calls, as a dotted reference the project can look up.

`train_one_epoch(...)` imported with `from engine import train_one_epoch`
is `engine.train_one_epoch`; `self.run_step(batch)` in a method of
`TrainLoop` is `<module>.TrainLoop.run_step`; `loss_scaler(loss, opt)` with
`loss_scaler = NativeScaler()` is `util.misc.NativeScaler.__call__`;
`metric_logger.log_every(...)` with `metric_logger = misc.MetricLogger()`
is `util.misc.MetricLogger.log_every`. A reference names where the code
would be if it is in the project; the call graph (`graph`) decides whether
it is, through base classes too. None: the callee cannot be told (a
parameter's method, a value returned by a call, a subscript).
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import FUNCS, class_method_aliases
from gpulint.model.index.order import stored_names
from gpulint.model.index.walk import walk
from gpulint.model.names import module_level_defs
from gpulint.model.project.imports import import_bindings, imported_modules, star_imported
from gpulint.model.project.tuples import handed_back, unpack_built
from gpulint.model.values.attributes import constructed, held_name, keeps_object

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel


# the builtins' names: a call of one names no function of a star-imported module
_BUILTINS = frozenset(dir(builtins))


def _bound_names(index) -> Set[str]:
    """Every name the file binds anywhere: assigned, deleted or a loop or
    `with` target, a def or class, a parameter."""
    bound = set().union(*stored_names(index).values())
    for f in index.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
        if not isinstance(f, ast.Lambda):
            bound.add(f.name)
        if not isinstance(f, ast.ClassDef):
            a = f.args
            bound.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            bound.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    return bound


class FileRefs:
    """References of one file's calls and functions."""

    def __init__(self, fa: "FileModel", module: str, package: bool = False,
                 params: Optional[Dict[str, Dict[str, str]]] = None,
                 builders: Optional[Dict[str, str]] = None,
                 builders_any: Optional[Dict[str, List[str]]] = None,
                 builders_by: Optional[Dict[str, list]] = None,
                 builders_each: Optional[Dict[str, list]] = None) -> None:
        self.fa = fa
        self.module = module
        self.package = package
        # function -> {parameter: the class of the object every caller passes}, from the project
        self.params = params or {}
        self._param_unions_memo: Optional[bool] = None  # (`_param_unions`)
        self._attr_counts: Dict[ast.AST, Dict[str, int]] = {}  # class -> its `self.<attr>` bindings (`_inherited`)
        self._attr_bound: Dict[ast.AST, Dict[str, int]] = {}  # the same, less placeholders (`self.model = None`)
        # function -> the class of the object it builds and returns (`build_model(cfg)`), from the project
        self.builders = builders or {}
        # function -> the classes of which it builds and returns one (`make_agent(env)`), from the project
        self.builders_any = builders_any or {}
        # function -> [position, name, {string: class}] where that parameter chooses the class
        self.builders_by: Dict[str, list] = builders_by or {}
        # function -> per object of the tuple it returns, the classes of which it builds one
        self.builders_each: Dict[str, list] = builders_each or {}
        self.names: Dict[str, str] = {}  # module-level name -> what it is (dotted)
        self.instances: Dict[str, str] = {}  # module-level name -> the class of the object it holds
        self._local_instances: Dict[ast.AST, Dict[str, str]] = {}
        # names bound more than once, each time to `Something(...)`, not all the same
        self._unions: Dict[ast.AST, Dict[str, Tuple[str, ...]]] = {}
        self._attr_instances: Dict[ast.AST, Dict[str, str]] = {}
        # class -> {attr: the classes of which `self.<attr> = make(...)` holds one}
        self._attr_unions: Dict[ast.AST, Dict[str, Tuple[str, ...]]] = {}
        # class -> {attr: the module-level functions of the file `self.<attr>` is bound to, every time}
        self._attr_functions: Dict[ast.AST, Dict[str, Tuple[str, ...]]] = {}
        # function -> {loop variable: the class of the elements of the `self.<attr>` it iterates}
        self._element_instances: Dict[ast.AST, Dict[str, str]] = {}
        self._inherited_memo: Dict[Tuple[int, ast.AST], dict] = {}
        self._param_names: Dict[ast.AST, frozenset] = {}
        # (function, parameter) for each parameter whose class was asked (`summary_stands`)
        self.asked_params: Set[Tuple[str, str]] = set()
        self.imported: Set[str] = set()  # the modules (or module members) the file imports
        self.instances = {}
        self._read_module()
        # names of the methods defined in the file's classes
        self.methods = {
            f.name for f in self.fa.index.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(self.fa.index.parents.get(f), ast.ClassDef)
        }

    # ------------------------------------------------------------ module level
    def _read_module(self) -> None:
        tree = self.fa.tree
        nodes = self.fa.index.nodes_of(ast.Import, ast.ImportFrom)
        self.imported = imported_modules(nodes, self.module, self.package)
        self.names.update(import_bindings(nodes, self.module, self.package))
        # the modules it imports every name of (`from utils import *`): where a call's name is
        # bound nowhere in the file, it names a function of one of them (`star_refs`)
        self.star_modules = star_imported(nodes, self.module, self.package) if self.fa.index.mentions("*") else []
        for node in module_level_defs(tree.body):  # (also a script's defs under `if __name__ == "__main__":`)
            self.names[node.name] = f"{self.module}.{node.name}"
        _read_bindings(self)

    def _built_by(self, func: ast.AST) -> Optional[str]:
        """What a call of `func` builds: the class it names, or the class a
        function of the project builds and returns (`build_model(cfg)`)."""
        target = self.resolve_name(func)
        return self.builders.get(target, target) if target is not None else None

    def _built_all(self, func: ast.AST) -> Tuple[str, ...]:
        """`_built_by`, or the classes of which a project function builds one."""
        target = self.resolve_name(func)
        if target is not None and target in self.builders_any:
            return tuple(self.builders_any[target])
        one = self.builders.get(target, target) if target is not None else None
        return (one,) if one is not None else ()

    def built_class(self, value: Optional[ast.AST], scope: ast.AST) -> Optional[str]:
        """The dotted class or function `value` calls to build an object
        (`Net(cfg)`, `Net(cfg).cuda()`, `nn.DataParallel(Net())`), or the
        class of the object a name of `scope` holds; None where unknown."""
        value = constructed(value)
        if isinstance(value, ast.Call):
            return self._built_by(value.func)
        if isinstance(value, ast.Name):
            return self._instance_class(value.id, scope)
        return None

    def resolve_name(self, expr: ast.AST) -> Optional[str]:
        """The dotted target of a Name or an Attribute chain through the
        module's imports and definitions (`misc.MetricLogger` ->
        `util.misc.MetricLogger`), or None."""
        parts: List[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self.names.get(expr.id)
        if base is None:
            return None
        return ".".join([base] + parts[::-1])

    # ---------------------------------------------------------------- calls
    def call_ref(self, call: ast.Call, ancestors: Optional[Sequence[ast.AST]] = None) -> Optional[str]:
        func = call.func
        if ancestors is None:
            ancestors = self.fa.index.ancestors(call)
        scope = _enclosing_function(ancestors)
        if isinstance(func, ast.Name):
            cls = self._instance_class(func.id, scope)
            if cls is not None:
                return f"{cls}.__call__"
            local = _local_def(self, func.id, ancestors)
            return self.qualname(local) if local is not None else self.resolve_name(func)
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super" \
                and scope is not None:
            return self._super_ref(func.attr, ancestors)
        if isinstance(owner, ast.Name):
            if owner.id in ("self", "cls") and scope is not None:
                cls_node = self.fa.index.enclosing_class(ancestors)
                if cls_node is not None and self.fa.index.parents.get(scope) is cls_node:
                    held = self.held_by_self(scope, func.attr)
                    if held is not None:
                        # `self.reg(x)` with `self.reg = Regulator()`: the object is called
                        # (a submodule: its `forward`), not a method of this class
                        return f"{held}.__call__"
                    functions = self.functions_held(cls_node, func.attr)
                    if functions:  # `self.head = MetaOptNetHead_SVM_CS`: that function (several: `call_refs`)
                        return functions[0] if len(functions) == 1 else None
                    return f"{self.qualname(cls_node)}.{self.method_alias(cls_node, func.attr) or func.attr}"
                return None
            cls = self._instance_class(owner.id, scope)
            if cls is not None:
                return f"{cls}.{func.attr}"
            return self.resolve_name(func)
        if (
            isinstance(owner, ast.Attribute)
            and isinstance(owner.value, ast.Name)
            and owner.value.id == "self"
        ):
            cls_node = self.fa.index.enclosing_class(ancestors)
            if cls_node is not None:
                held = self._attributes_of(cls_node).get(owner.attr)
                if held is not None:
                    return f"{held}.{func.attr}"
                if isinstance(cls_node, ast.ClassDef) and not self._binds(cls_node, owner.attr):
                    # `self.model.optimizeParameters(x)` in a base class whose subclasses (in other
                    # files) set `self.model`: the project resolves it (`graph.ProjectGraph.resolve`)
                    return f"{self.qualname(cls_node)}{HELD}{owner.attr}.{func.attr}"
            return None
        return self.resolve_name(func)

    def parameters_of(self, scope: ast.AST) -> frozenset:
        """The names the parameters of `scope` bind."""
        return self._parameters_of(scope)

    def _parameters_of(self, scope: ast.AST) -> frozenset:
        """The names the parameters of `scope` bind, read once per scope."""
        params = self._param_names.get(scope)
        if params is None:
            params = self._param_names[scope] = _parameter_names(scope)
        return params

    def passed(self, func: ast.AST, name: str) -> object:
        """What the project says the callers of `func` pass for its parameter
        `name`: a class, a sorted list of a few classes, or None; the
        question is recorded (`asked_params`)."""
        qual = self.qualname(func)
        self.asked_params.add((qual, name))
        return self.params.get(qual, {}).get(name)

    def _super_ref(self, method: str, ancestors: Sequence[ast.AST]) -> Optional[str]:
        """`super().__init__(model, ...)` in a method of a class: the method of
        its first base, where the file knows the base (the project's graph
        resolves it through that base's own bases)."""
        cls = self.fa.index.enclosing_class(ancestors)
        if cls is None or not cls.bases:  # type: ignore[attr-defined]
            return None
        base = self.resolve_name(cls.bases[0])  # type: ignore[attr-defined]
        return f"{base}.{method}" if base is not None else None

    @property
    def nested_def_names(self) -> frozenset:
        """The names of the defs made inside another function of the file."""
        return self.fa.index.memoized("refs.nested_def_names", None, lambda: frozenset(
            name for defs in _nested_defs(self.fa.index).values() for name in defs))

    def call_refs(self, call: ast.Call, ancestors: Sequence[ast.AST]) -> List[str]:
        """The references `call` may call: `call_ref`'s, or where the
        method's owner is a name bound in several places to objects of
        different classes (`agent = A2C(...)` in one branch, `agent =
        PPO(...)` in another), the method of each class; or a name the file
        binds nowhere, in each module it imports every name of
        (`star_refs`)."""
        ref = self.call_ref(call, ancestors)
        if ref is not None:
            return [ref]
        func = call.func
        if isinstance(func, ast.Name):
            return star_refs(self, func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return list(self.functions_held(self.fa.index.enclosing_class(ancestors), func.attr))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return [f"{cls}.{func.attr}" for cls in self.classes_of(func.value.id, _enclosing_function(ancestors))]
        owner = func.value if isinstance(func, ast.Attribute) else None
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
            held = self._inherited(self.fa.index.enclosing_class(ancestors), self._attr_unions).get(owner.attr, ())
            return [f"{cls}.{func.attr}" for cls in held]  # type: ignore[union-attr]
        return []

    def _binds(self, cls: ast.ClassDef, attr: str) -> bool:
        """The class, or a base of it in the file, binds `self.<attr>` to
        something other than a placeholder (PyCIL's `self._network = None` in
        a base class whose subclasses build the network), or holds one of
        several classes there (`_attr_unions`)."""
        return attr in self._inherited(cls, self._attr_bound) or attr in self._inherited(cls, self._attr_unions)

    def class_attributes(self) -> Dict[str, Dict[str, str]]:
        """class -> {attr: the class of the object `self.<attr> = Class(...)`
        holds}, for the classes of the file (their own bindings): the
        project resolves a base class's calls through them (`HELD`)."""
        return {self.qualname(cls): dict(attrs) for cls, attrs in self._attr_instances.items()
                if attrs and isinstance(cls, ast.ClassDef)}

    def classes_of(self, name: str, scope: Optional[ast.AST]) -> Tuple[str, ...]:
        """The classes `name` may hold in `scope` where it is bound to objects
        of several (see `call_refs`); () otherwise."""
        if scope is not None and name in self._unions.get(scope, {}):
            return self._unions[scope][name]
        if scope is not None and name in self._local_instances.get(scope, {}):
            return ()
        if scope is not None and self.params and name in self._parameters_of(scope):
            found = self.passed(scope, name)
            return tuple(found) if isinstance(found, list) else ()
        return self._unions.get(self.fa.tree, {}).get(name, ())

    @property
    def has_unions(self) -> bool:
        """Some name (or `self.<attr>`) of the file holds an object of one of several classes (`classes_of`)."""
        return bool(self._unions) or bool(self._attr_unions) or any(self._attr_functions.values()) or self._param_unions()

    def _param_unions(self) -> bool:
        """Some parameter holds an object of one of several classes (`classes_of`)."""
        if self._param_unions_memo is None:
            self._param_unions_memo = any(isinstance(c, list) for ps in self.params.values() for c in ps.values())
        return self._param_unions_memo

    @property
    def has_submodule_loops(self) -> bool:
        """Some method of the file iterates a `ModuleList` of one class (`iterates_submodules`)."""
        return bool(self._element_instances)

    def iterates_submodules(self, loop: ast.AST) -> bool:
        """`loop` is `for block in self.blocks:` over a `ModuleList` of one
        class (`_element_class`): every run of the method runs its body."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not self._element_instances:
            return False
        held = _iterated_attribute(loop)
        scope = self.fa.index.owner(loop)
        return held is not None and held[0] in self._element_instances.get(scope, {})

    def instance_of(self, name: str, scope: Optional[ast.AST]) -> Optional[str]:
        """The class (dotted) of the object `name` holds in `scope`, where known."""
        return self._instance_class(name, scope)

    def _instance_class(self, name: str, scope: Optional[ast.AST]) -> Optional[str]:
        if scope is not None:
            local = self._local_instances.get(scope, {})
            if name in local:
                return local[name]
            element = self._element_instances.get(scope, {}).get(name)
            if element is not None:
                return element  # `for block in self.blocks: x = block(x)`
            if name in self._parameters_of(scope):
                # a parameter: the class its callers pass, where the project knows it
                found = self.passed(scope, name)
                return found if isinstance(found, str) else None  # (several: `classes_of`)
        return self.instances.get(name)

    def held_by_self(self, method: Optional[ast.AST], attr: str) -> Optional[str]:
        """The class (dotted) of the object `self.<attr>` holds in the class
        of `method`, bound once to `Class(...)` in its methods; else None."""
        cls = self.fa.index.parents.get(method) if method is not None else None
        if not isinstance(cls, ast.ClassDef) or _defines(cls, attr):
            return None
        return self._attributes_of(cls).get(attr)

    def method_alias(self, cls: Optional[ast.AST], attr: str) -> Optional[str]:
        """The method of class `cls` that `self.<attr>` names where the class
        assigns it (`self.timestep_embedding = self.positional_embedding`,
        then `self.timestep_embedding(t)` runs `positional_embedding`;
        `index.nodes.method_aliases`); None otherwise."""
        if not isinstance(cls, ast.ClassDef):
            return None
        return class_method_aliases(self.fa.index, cls).get(attr)

    def functions_held(self, cls: Optional[ast.AST], attr: str) -> Tuple[str, ...]:
        """The module-level functions of the file that `self.<attr>` of class
        `cls` holds, bound to one of them each time (MetaOptNet's `self.head
        = MetaOptNetHead_SVM_CS` or `= ProtoNetHead`, by the base learner's
        name): `self.head(...)` calls one of them; () otherwise."""
        return self._attr_functions.get(cls, {}).get(attr, ()) if cls is not None else ()

    def _attributes_of(self, cls: ast.ClassDef) -> Dict[str, str]:
        """`self.<attr> = Class(...)` in the class's methods: attr -> class;
        also those its bases of the same file set, where it sets no
        attribute of that name itself (`FinetuneTrainer(Trainer)`, whose
        `self.model` its base's `__init__` stores)."""
        return self._inherited(cls, self._attr_instances)

    def _inherited(self, cls: Optional[ast.AST], found: Dict[ast.AST, Dict[str, object]]) -> dict:
        """`found[cls]`, with what it says of the bases of `cls` that the file
        defines (the nearest first) for the attributes `cls` never assigns."""
        own = found.get(cls, {}) if cls is not None else {}
        if not isinstance(cls, ast.ClassDef) or not cls.bases:
            return own
        memo = self._inherited_memo  # (its own: another `Refs` of the file may hold new dicts at these ids)
        key = (id(found), cls)
        if key in memo:
            return memo[key]  # type: ignore[return-value]
        local = self._local_classes()
        bases = [local[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in local]
        if not bases:
            memo[key] = own
            return own
        memo[key] = own  # (a cycle of bases reads no further)
        out = dict(own)
        assigned = self._attr_counts.get(cls, {})  # (what the class itself assigns: its own, bound or not)
        for base_cls in bases:
            for attr, held in self._inherited(base_cls, found).items():
                if attr not in out and attr not in assigned:
                    out[attr] = held
        memo[key] = out
        return out

    def _local_classes(self) -> Dict[str, ast.ClassDef]:
        """The file's top-level classes by name."""
        return self.fa.index.memoized("refs.local_classes", None, lambda: {
            n.name: n for n in self.fa.tree.body if isinstance(n, ast.ClassDef)})

    def argument_classes(self, call: ast.Call, ancestors: Sequence[ast.AST]) -> Dict[str, str]:
        """{position or keyword: class} for the arguments that are names bound
        to an object of a known class (`loss_scaler` with `loss_scaler =
        NativeScaler()`), or that build one where they are passed
        (`train(net, loader, DiceLoss())`)."""
        scope = _enclosing_function(ancestors)
        out: Dict[str, str] = {}
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                break
            cls = self._argument_class(a, scope)
            if cls is not None:
                out[str(i)] = cls
        for kw in call.keywords:
            cls = self._argument_class(kw.value, scope) if kw.arg is not None else None
            if cls is not None:
                out[kw.arg] = cls  # type: ignore[index]
        return out

    def _argument_class(self, value: ast.AST, scope: Optional[ast.AST]) -> Optional[str]:
        if isinstance(value, ast.Name):
            return self._instance_class(value.id, scope)
        if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
            return self.built_class(value, scope)  # type: ignore[arg-type]
        return None

    # ------------------------------------------------------------- functions
    def qualname(self, node: ast.AST) -> str:
        """`module.f`, `module.C.m` (nested definitions by their path)."""
        parts = [getattr(node, "name", "<lambda>")]
        cur = self.fa.index.parents.get(node)
        while cur is not None and not isinstance(cur, ast.Module):
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts.append(cur.name)
            cur = self.fa.index.parents.get(cur)
        return ".".join([self.module] + parts[::-1])


# the mark of a reference to a method of an object a class's `self.<attr>` holds, where
# the class binds no such attribute: `pkg.trainer.GANTrainer#model.optimizeParameters`
HELD = "#"
# the mark of a reference to a method of a parameter whose class no caller shows
# (`model.train_a_batch(x, y)` in continual-learning's `train_cl(model, ...)`): `?.train_a_batch`,
# which the project resolves to the methods of that name its classes define (`graph.duck_typed`)
DUCK = "?"


def _read_bindings(refs: "FileRefs") -> None:
    """One pass over the file's bindings: names bound exactly once, to
    `Something(...)`, per scope (the module's are `instances`), and
    `self.<attr> = Something(...)` per class."""
    every: Dict[ast.AST, Dict[str, List[str]]] = {}  # scope -> name -> the classes of its bindings
    counts: Dict[ast.AST, Dict[str, int]] = {}
    attr_found: Dict[ast.AST, Dict[str, ast.Call]] = {}  # (what each is built by, resolved at the end)
    attr_strings: Dict[ast.AST, Dict[str, str]] = {}
    elements_found: Dict[ast.AST, Dict[str, ast.AST]] = {}  # `self.blocks = nn.ModuleList([Block() ...])`
    iterated: List[Tuple[ast.AST, ast.AST, str, str]] = []  # (method, class, loop variable, attr)
    built: Dict[ast.AST, Dict[str, List[ast.AST]]] = {}
    aliases: Dict[str, ast.AST] = {}
    local_aliases: Dict[ast.AST, Dict[str, ast.AST]] = {}
    every_alias: Dict[ast.AST, Dict[str, List[ast.AST]]] = {}  # scope -> name -> each name it is bound to
    attr_counts: Dict[ast.AST, Dict[str, int]] = {}
    attr_bound: Dict[ast.AST, Dict[str, int]] = {}  # (less `self.<attr> = None`)
    attr_params: Dict[ast.AST, Dict[str, Tuple[ast.AST, str]]] = {}  # `self.<attr> = <parameter>`
    attr_names: Dict[ast.AST, Dict[str, List[str]]] = {}  # `self.<attr> = <a module-level function>`
    module_functions = {n.name for n in refs.fa.tree.body if isinstance(n, FUNCS)}
    parents = refs.fa.index.parents
    kinds = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)
    for stmt in refs.fa.index.nodes_of(*kinds):
        scope = refs.fa.index.owner(stmt)
        if scope is None or isinstance(scope, ast.Lambda):
            continue
        if isinstance(stmt, ast.Assign):
            targets, value, weight = stmt.targets, stmt.value, 1
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets, value, weight = [stmt.target], getattr(stmt, "value", None), 1
            if isinstance(stmt, ast.AugAssign):
                value = None
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            targets, value, weight = [stmt.target], None, 2
        else:
            targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            value, weight = None, 2
        for t, value in _pairs(targets, value):
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                cls = parents.get(scope) if isinstance(scope, FUNCS) else None
                if isinstance(cls, ast.ClassDef):
                    kept = keeps_object(value, t)  # `self.encoder = DDP(self.encoder)`: the same object
                    c = attr_counts.setdefault(cls, {})
                    c[t.attr] = c.get(t.attr, 0) + (0 if kept else weight)
                    if not (isinstance(value, ast.Constant) and value.value is None):
                        b = attr_bound.setdefault(cls, {})
                        b[t.attr] = b.get(t.attr, 0) + weight
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        attr_strings.setdefault(cls, {})[t.attr] = value.value  # `self.sampler_type = "uniform"`
                    elif isinstance(value, ast.Name) and value.id in module_functions:
                        attr_names.setdefault(cls, {}).setdefault(t.attr, []).append(value.id)
                    built_by = constructed(value)  # (`Net().cuda()`, `DataParallel(Net())`: a Net)
                    held_param = held_name(value) if len(targets) == 1 and isinstance(scope, FUNCS) else None
                    if held_param is not None and held_param in refs._parameters_of(scope):
                        # `self.policy = policy`, `self.model = model.cuda()`
                        attr_params.setdefault(cls, {})[t.attr] = (scope, held_param)
                    if isinstance(built_by, ast.Call) and len(targets) == 1 and not kept:
                        attr_found.setdefault(cls, {})[t.attr] = built_by
                        element = _element_class(built_by)
                        if element is not None:
                            elements_found.setdefault(cls, {})[t.attr] = element
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and isinstance(scope, FUNCS):
                held = _iterated_attribute(stmt)  # `for block in self.blocks:`
                if held is not None and isinstance(parents.get(scope), ast.ClassDef):
                    iterated.append((scope, parents.get(scope), held[0], held[1]))
            if isinstance(t, ast.Name) and keeps_object(value, t):
                continue  # `model = model.to(device)`, `model = DDP(model)`: the same model
            c = counts.setdefault(scope, {})
            # what a project function returns at each position of the tuple it gives (`builders_each`)
            each = refs.builders_each.get(refs.resolve_name(value.func) or "") if (
                refs.builders_each and isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, ast.Call)) else None
            handed = handed_back(each, t, value) if each is not None else ()  # type: ignore[arg-type]
            for n in walk(t):
                # names the statement binds: `trainer.cql_alpha = x` and
                # `d[k] = v` store into an object, they do not rebind its name
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in handed:
                    c[n.id] = c.get(n.id, 0) + weight
            if isinstance(t, ast.Name) and isinstance(value, (ast.Name, ast.Attribute)):
                every_alias.setdefault(scope, {}).setdefault(t.id, []).append(value)
                if isinstance(scope, ast.Module):
                    aliases[t.id] = value  # `Exp = Exp_Informer`
                elif isinstance(scope, FUNCS):
                    local_aliases.setdefault(scope, {})[t.id] = value  # the same in a def (`main()`)
            value = constructed(value)
            if isinstance(t, ast.Name) and isinstance(value, ast.Call):
                built.setdefault(scope, {}).setdefault(t.id, []).append(value.func)
            elif each is not None:
                unpack_built(each, t, every.setdefault(scope, {}))  # `(net, head) = get_model(opt)`
            elif isinstance(t, ast.Name) and isinstance(stmt, ast.AnnAssign) and isinstance(
                    stmt.annotation, (ast.Name, ast.Attribute)):
                # `bpr: utils.BPRLoss = loss_class`: the object of the class the annotation names
                built.setdefault(scope, {}).setdefault(t.id, []).append(stmt.annotation)
    # a module-level name bound once, to a class or function the file knows: the same one
    module_counts = counts.get(refs.fa.tree, {})
    for name, value in aliases.items():
        target = refs.resolve_name(value) if module_counts.get(name) == 1 else None
        if target is not None and name not in refs.names:
            refs.names[name] = target
    for scope, funcs in built.items():
        # a name of the def bound once, to a class of the file or an imported one
        # (`Exp = Exp_Main` then `exp = Exp(args)`): calls of it build that class; bound
        # to one of several, in the branches of an `if` (iTransformer's `Exp = Exp_Long_Term_Forecast`
        # or `Exp_Long_Term_Forecast_Partial`), one of those
        local = {name: value for name, value in local_aliases.get(scope, {}).items()
                 if counts.get(scope, {}).get(name) == 1}
        several = {name: values for name, values in every_alias.get(scope, {}).items()
                   if len(values) > 1 and counts.get(scope, {}).get(name) == len(values)}
        for name, found in funcs.items():
            targets = []  # (per binding: its classes)
            for f in found:
                if isinstance(f, ast.Name) and f.id in several:
                    classes = [refs._built_all(v) for v in several[f.id]]
                    if all(classes):
                        targets.append(tuple(sorted({c for cs in classes for c in cs})))
                    continue
                t = refs._built_all(local.get(f.id, f) if isinstance(f, ast.Name) else f)
                if t:
                    targets.append(t)
            if targets:
                every.setdefault(scope, {}).setdefault(name, []).extend(targets)
    for scope, names in every.items():
        c = counts.get(scope, {})
        classes = {k: {t for ts in v for t in ts} for k, v in names.items()}
        unions = {k: tuple(sorted(classes[k])) for k, v in names.items()
                  if c.get(k) == len(v) and len(classes[k]) > 1}
        if unions:
            refs._unions[scope] = unions
        # bound once, or every time to the same class (`exp = Exp(args)` in both
        # branches of a module-level `if args.is_training:`)
        kept = {k: v[-1][0] for k, v in names.items() if len(classes[k]) == 1 and (
            c.get(k) == 1 or c.get(k) == len(v))}
        if isinstance(scope, ast.Module):
            refs.instances = kept
        elif isinstance(scope, FUNCS):
            refs._local_instances[scope] = kept
    for cls, attrs in attr_found.items():
        c = attr_counts.get(cls, {})
        strings = {k: v for k, v in attr_strings.get(cls, {}).items() if c.get(k) == 1}
        unions = {k: t for k, v in attrs.items() if c.get(k) == 1 for t in (refs._built_all(v.func),) if len(t) > 1}
        chosen = {k: _chosen_class(refs, attrs[k], strings) for k in unions}
        unions = {k: t for k, t in unions.items() if chosen[k] is None}
        if unions:  # `self.model = MuZeroNetwork(config)`, whose `__new__` builds one of two classes
            refs._attr_unions[cls] = unions
        refs._attr_instances[cls] = {
            k: t for k, v in attrs.items() if c.get(k) == 1 and k not in unions
            for t in (chosen.get(k) or refs._built_by(v.func),) if t is not None
        }
    for cls, attrs in attr_names.items():  # (bound to such a function each time, in the branches of an `if`)
        c = attr_counts.get(cls, {})
        refs._attr_functions[cls] = {k: tuple(sorted({refs.names[n] for n in v})) for k, v in attrs.items()
                                     if c.get(k) == len(v) and not _defines(cls, k)}
    refs._attr_counts = attr_counts
    refs._attr_bound = attr_bound
    for cls, attrs in attr_params.items():
        # `self.policy = policy` in `__init__`, the attribute's only binding: the object of the
        # class every caller passes for that parameter (`MFPolicyTrainer(policy=CQLPolicy(...))`)
        c = attr_counts.get(cls, {})
        held = refs._attr_instances.setdefault(cls, {})
        for attr, (method, name) in attrs.items():
            if c.get(attr) == 1 and attr not in held:
                found = refs.passed(method, name)
                if isinstance(found, str):
                    held[attr] = found
                elif found:  # one of several classes, each run script's own
                    refs._attr_unions.setdefault(cls, {})[attr] = tuple(found)
    for method, cls, name, attr in iterated:
        # the loop's variable, bound by that loop only, holds the elements' class
        element = elements_found.get(cls, {}).get(attr)
        if element is not None and attr_counts.get(cls, {}).get(attr) == 1 and counts.get(method, {}).get(name) == 2:
            target = refs._built_by(element)
            if target is not None:
                refs._element_instances.setdefault(method, {})[name] = target


def _pairs(targets: Sequence[ast.AST], value: Optional[ast.AST]) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    """(target, the value it gets) of an assignment: `a, b = A(), B()` binds
    `a` to `A()` and `b` to `B()`; in `a = b = C()` each target gets the
    value; a target unpacked from anything else gets no known value."""
    if len(targets) != 1:
        return [(t, value) for t in targets]
    t = targets[0]
    if (isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(t.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in list(t.elts) + list(value.elts))):
        return list(zip(t.elts, value.elts))
    return [(t, value)]


def _element_class(call: ast.Call) -> Optional[ast.AST]:
    """What builds every element of `nn.ModuleList([Block(d) for _ in
    range(n)])`, `nn.ModuleList([Block(1), Block(2)])` or
    `nn.Sequential(*[Block(d) for ...])`: `Block`; else None."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in ("ModuleList", "Sequential") or len(call.args) != 1 or call.keywords:
        return None
    arg = call.args[0]
    if name == "Sequential":
        if not isinstance(arg, ast.Starred):
            return None
        arg = arg.value
    if isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
        elts = [arg.elt]
    elif isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
        elts = list(arg.elts)
    else:
        return None
    built = [constructed(e) for e in elts]
    if not all(isinstance(b, ast.Call) for b in built):
        return None
    funcs = {ast.dump(b.func) for b in built}  # type: ignore[union-attr]
    return built[0].func if len(funcs) == 1 else None  # type: ignore[union-attr]


def _iterated_attribute(loop: ast.AST) -> Optional[Tuple[str, str]]:
    """(the loop variable, attr) of `for block in self.<attr>:` (or a slice
    of it) or `for i, block in enumerate(self.<attr>):`, also zipped with
    other sequences, the attribute first (T5's `for i, (layer_module,
    past) in enumerate(zip(self.block, past_key_values)):`); else None."""
    it, target = loop.iter, loop.target  # type: ignore[attr-defined]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and len(it.args) == 1 \
            and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        it, target = it.args[0], target.elts[1]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip" and not it.keywords \
            and isinstance(target, ast.Tuple) and len(target.elts) == len(it.args) >= 2:
        it, target = it.args[0], target.elts[0]
    if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice):
        it = it.value  # `for layer in self.layers[:n_q]:`: some of the same elements
    if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == "self" \
            and isinstance(target, ast.Name):
        return target.id, it.attr
    return None


def _enclosing_function(ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    for anc in reversed(ancestors):
        if isinstance(anc, FUNCS) or isinstance(anc, ast.Lambda):
            return anc
        if isinstance(anc, ast.ClassDef):
            return None
    return None


def _parameter_names(scope: ast.AST) -> frozenset:
    """The names the parameters of `scope` bind (none for a module or class)."""
    args = getattr(scope, "args", None)
    if args is None:
        return frozenset()
    every = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs) + [args.vararg, args.kwarg]
    return frozenset(a.arg for a in every if a is not None)


def _defines(cls: ast.ClassDef, name: str) -> bool:
    """`cls` defines a method (or a class attribute) `name` itself."""
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return True
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return True
    return False


def star_refs(refs: FileRefs, name: str) -> List[str]:
    """`<module>.<name>` for each module the file imports every name of
    (`from utils import *`, then `evaluate(model, data)`), where the file
    binds `name` nowhere (no import, definition, assignment or parameter)
    and it is no builtin; [] otherwise. The project keeps the one that
    resolves."""
    stars = refs.star_modules
    if not stars or name in refs.names or name in _BUILTINS:
        return []
    bound = refs.fa.index.memoized("refs.bound", None, lambda: _bound_names(refs.fa.index))
    return [] if name in bound else [f"{m}.{name}" for m in stars]


def has_project_bases(refs: FileRefs, func: Optional[ast.AST]) -> bool:
    """The class of method `func` has a base that may be in the project
    (not torch's, nor `object`), whose methods `self.m()` may call."""
    cls = refs.fa.index.parents.get(func) if func is not None else None
    if not isinstance(cls, ast.ClassDef):
        return False
    for base in cls.bases:
        target = refs.resolve_name(base)
        if target is not None and not target.startswith(("torch.", "builtins.")):
            return True
    return False


def _nested_defs(index) -> Dict[ast.AST, Dict[str, ast.AST]]:
    """function -> {name: def} of the defs in its own body, once per file."""

    def compute() -> Dict[ast.AST, Dict[str, ast.AST]]:
        out: Dict[ast.AST, Dict[str, ast.AST]] = {}
        for node in index.nodes_of(*FUNCS):
            owner = index.owner(node)
            if isinstance(owner, FUNCS):
                out.setdefault(owner, {})[node.name] = node  # type: ignore[attr-defined]
        return out

    return index.memoized("refs.nested_defs", None, compute)


def _local_def(refs: FileRefs, name: str, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """The def named `name` in the body of a function around the call, the
    innermost first: `_backward(loss)` in timm's loop, whose body defines
    `def _backward(_loss): ... optimizer.step()` (a nested function)."""
    if name not in refs.nested_def_names:
        return None
    local = _nested_defs(refs.fa.index)
    for f in reversed(ancestors):
        found = local.get(f, {}).get(name) if isinstance(f, FUNCS) else None
        if found is not None:
            return found
    return None


def _chosen_class(refs: FileRefs, call: ast.Call, strings: Dict[str, str]) -> Optional[str]:
    """The one class a builder that chooses by a string parameter
    (`builds.built_object`) builds for `call`, which passes a string or a
    `self.<attr>` set once to one (`create_named_schedule_sampler(
    self.sampler_type, d)`); else None."""
    target = refs.resolve_name(call.func)
    by = refs.builders_by.get(target) if target is not None else None
    if not by:
        return None
    i, name, table = by
    arg = call.args[i] if i < len(call.args) else next((k.value for k in call.keywords if k.arg == name), None)
    if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "self":
        value = strings.get(arg.attr)
    else:
        value = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
    return table.get(value) if value is not None else None
