"""A file's summary: what each of its functions does that other functions
need to know, read from the file's own model.

For each function (and for the module's top-level code, `<module>`):

* `steps`: its own code runs `.backward()` (also `manual_backward`) or an
  optimizer step, not inside a loop of its own: each call is a step;
* `drives`: its own code has a hot loop (a call of it runs many steps);
* `params`: the names its arguments bind (and `kwargs`: its `**` parameter);
* `calls`: the calls of its own code, each as a reference (`refs`), where
  it runs, and the classes of the objects it passes (where known): `train` in every step of a training loop, `eval` in every step
  of another hot loop, `body` on every call of the function, `some` only on
  some (under a periodic guard, in an error handler, under an `if` on a
  logging, saving or debugging option, ...); for a call from a hot loop,
  also the kind of each argument it passes (`values.kinds`);
* `returns`: the kind of value every `return` gives, where they agree;
* `iterates`: for a generator that yields the elements of one of its
  positional arguments (`for obj in iterable: yield obj`), that argument's
  position at the call;
* `moves`: the positions of what it returns that it put on an accelerator
  (`return model.to(device), tokenizer`: [0]; `values.devices`).

And for each class, the references of its bases, and the modules the file
imports (where the project looks for the files it depends on). A summary is plain data
(JSON), so it can be cached and sent between processes; `graph` joins the
summaries of a project into facts.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from gpulint.model.control.modes import EVAL as EVAL_MODE, mode_before, model_key, switching_scopes
from gpulint.model.control.options import number_defaults, opt_in_flags, tested_flags, tested_options, under_option
from gpulint.model.control.repetition import after_periodic_return, under_once_guard
from gpulint.model.control.syncs import follows_host_read, may_read_by_form
from gpulint.model.index.nodes import FUNCS, LOOPS, abstract_method, self_test_block
from gpulint.model.index.order import unbound_parameters
from gpulint.model.names import dotted
from gpulint.model.project.builds import built_object
from gpulint.model.project.layers import class_layer_counts, cudnn_words, total_layers
from gpulint.model.project.per_call import built_per_call
from gpulint.model.project.passing import argument_kinds, evaluated_arguments, forwarded, kind_passed
from gpulint.model.project.exports import EXTERNAL_ROOTS, package_exports
from gpulint.model.project.hotness import EVAL, STEP_WORDS, TRAIN, Hotness, mentions_any
from gpulint.model.project.imports import MODULE_CODE, star_imported, used_names
from gpulint.model.project.refs import DUCK, FileRefs, has_project_bases, star_refs
from gpulint.model.values.consumers import feeds_environment_step
from gpulint.model.values.devices import hands_back_moved, moved_return_positions, sets_program_default_device
from gpulint.model.values.host import first_read_lines, reads_on_return
from gpulint.model.values.host_built import bindings_of, defs_building_on_cpu, host_factory
from gpulint.model.values.kinds import HOST_METHODS, HOST_NUMBERS, IN_MEMORY_DATASET, NUMBER, NUMPY
from gpulint.model.values.loaders import dataset_sources, numpy_made, serves_stored_items
from gpulint.model.index.walk import walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

BODY, SOME = "body", "some"
LOOP = "loop"  # from a loop of a file read without its loops (`_plain_where`)
# how many statements back a per-step call's summary looks for a host read
# (`follows_host_read`): a bound, so that a block of many calls costs linear time
SYNC_WALK_LIMIT = 32


# without one of these words no loop of a file steps over data (unless the
# project says a call steps, which then reads the file again)
TRIGGER_WORDS = ("backward", ".step(", "loader", "Loader", "_dl", "yield")
# "backward" is also a word of prose ("backward compatible"): a file starts a
# step by calling it
_BACKWARD_CALL = re.compile(r"backward\s*\(")


# what sets a model's precision where it is wrapped or run: FSDP's mixed-precision
# policies (`fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))`)
_PRECISION_POLICIES = frozenset({"MixedPrecision", "MixedPrecisionPolicy"})
# words of code that chooses a reduced precision for what it runs: a half or
# bf16 model or dtype, autocast, TF32 (read as text: a file that names one is
# evidence enough that the functions it calls need not run in full FP32)
LOW_PRECISION_WORDS = ("bfloat16", "float16", ".half()", "autocast", "allow_tf32", "set_float32_matmul_precision")


def _item_read(value: Optional[ast.AST]) -> bool:
    """`<tensor>.item()`: the Python number a tensor holds."""
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "item"
            and not value.args and not value.keywords)


def _number_for_sure(fa: "FileModel", value: ast.AST, scope: Optional[ast.AST]) -> bool:
    """`value` is a Python number read from a tensor on every path: `t.item()`,
    `float(t)` / `int(t)`, or a name every binding of which in `scope` is a
    plain assignment of one (`host_built.bindings_of`)."""
    if _item_read(value) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                             and value.func.id in ("float", "int") and len(value.args) == 1):
        return True
    if not isinstance(value, ast.Name) or not isinstance(scope, FUNCS):
        return False
    bound = bindings_of(fa.index, scope).get(value.id)
    return bool(bound) and all(isinstance(b, ast.Assign) and isinstance(b.targets[0], ast.Name)
                               and _number_for_sure(fa, b.value, None) for b in bound)


def _choosing_precision(fa: "FileModel", refs: FileRefs) -> Set[str]:
    """The functions of the file that build an FSDP mixed-precision policy
    (`MixedPrecisionPolicy(param_dtype=...)`, `MixedPrecision(...)`): a
    training file that calls one of them (lingua's `parallelize_model`)
    runs its model in the precision chosen there (`precision` in the
    summary; GPU403 reads it through `CallFacts.calls_precision_choice`)."""
    if not any(fa.index.mentions(w) for w in _PRECISION_POLICIES):
        return set()
    out: Set[str] = set()
    for call in fa.index.nodes_of(ast.Call):
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in _PRECISION_POLICIES and (fa.imports.qualname(func) or "").startswith("torch.distributed."):
            scope = fa.index.owner(call)
            if isinstance(scope, FUNCS):
                out.add(refs.qualname(scope))
    return out


def may_start_steps(text: str) -> bool:
    """The text has a word without which none of its loops steps over data
    and none of its functions steps, yields or returns a loader: it calls
    `backward` or `.step(`, or names a loader or a `yield`."""
    for w in TRIGGER_WORDS:
        if w in text and (w != "backward" or _BACKWARD_CALL.search(text) is not None):
            return True
    return False


# what a table may say that `summarize` never reads (the parameters it asks of
# `refs` aside): which functions run every step, with autograd off or for an
# environment, which are device code, and the models' layers are asked by
# rules only (through `Loops.every_step`, `runs_repeatedly`, `CallFacts`)
_NOT_READ_BY_SUMMARIES = frozenset({"every_step", "grad_off", "evaluated", "feeds_env", "device_side", "layers", "cuda_nearby",
                                    "precision_calls", "opt_in", "returns_moved"})
# calls that start a step by their name alone (`Hotness.own_step`)
_STEP_ATTRS = frozenset({"backward", "manual_backward", "step"})


def summary_stands(fa: "FileModel", refs: FileRefs, old: dict, new: dict, new_is_empty: bool) -> bool:
    """`summarize(fa, refs)` read with the table `old` is what it would be
    read with `new`, where neither says anything of steps, loops, returns
    or generators (`graph.answers_nothing`): the tables differ only in what
    summaries never read and in the classes of parameters, none of which
    `refs` was asked about; and where one table is empty and the other is
    not, the file's hotness is read the same way either way (`Hotness`:
    it names a word of a step, so it is not read `light`; and it calls no
    `backward` or `step` that its text does not show as one). `fa` is read
    with `old`; `new_is_empty`: `new` tells the model nothing
    (`graph.tells_the_model_nothing`)."""
    if any((old.get(k) or None) != (new.get(k) or None)
           for k in set(old) | set(new) if k not in _NOT_READ_BY_SUMMARIES and k != "params"):
        return False
    if fa.facts.empty != new_is_empty:
        if not mentions_any(fa, TRIGGER_WORDS):
            return False
        if not mentions_any(fa, STEP_WORDS) and any(
                isinstance(c.func, ast.Attribute) and c.func.attr in _STEP_ATTRS for c in fa.index.nodes_of(ast.Call)):
            return False
    before, after = old.get("params") or {}, new.get("params") or {}
    return all(before.get(q, {}).get(n) == after.get(q, {}).get(n) for q, n in refs.asked_params)


def summarize(fa: "FileModel", refs: FileRefs) -> dict:
    """The file's summary: one walk over the nodes the index holds (calls,
    returns, yields, loops), each given to the def (or the module code) it
    belongs to; nodes in lambdas and class bodies belong to neither."""
    hot = Hotness(fa, refs, light=not mentions_any(fa, TRIGGER_WORDS) and fa.facts.empty)
    scopes: Dict[ast.AST, _Scope] = {fa.tree: _Scope()}
    for func in fa.index.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        scopes[func] = _Scope()
    loaders = fa.index.mentions("DataLoader")
    grad_words = any(fa.index.mentions(w) for w in ("no_grad", "inference_mode", "set_grad_enabled"))
    switches = fa.index.mentions(".eval()") or fa.index.mentions(".train(") or fa.facts.any_returns_evaluated()
    # (models switched to eval mode, here or by a helper that returns one)
    arrays = fa.index.mentions("np.") or fa.index.mentions("numpy")  # (what a loader's dataset may be)
    for node in fa.index.nodes_of(ast.Call, ast.Return, ast.Yield, ast.YieldFrom, ast.For, ast.AsyncFor, ast.While):
        scope = fa.index.owner(node)
        sc = scopes.get(scope) if scope is not None else None
        if sc is None:
            continue  # in a lambda or a class body
        if isinstance(node, ast.Call):
            _call(fa, refs, hot, node, scope, sc, grad_words, switches)
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            sc.generator = True
        elif isinstance(node, ast.Return):
            sc.return_nodes.append(node)
        else:
            sc.loops.append(node)
    for scope, sc in scopes.items():
        # what a function returns, where a loop would read it: a loader (where the file
        # builds any), or what a step function gives back (its loss, as a tensor or a number)
        if sc.return_nodes and not sc.steps and all(_item_read(n.value) for n in sc.return_nodes):
            sc.returns.append(NUMBER)  # `return reduced_loss.item()`: a Python number, however it was computed
        elif sc.return_nodes and arrays and not (loaders or sc.steps):
            # read for what a loader may take: an array, by its numpy call alone (no inference)
            made = [numpy_made(fa, n.value, scope) for n in sc.return_nodes]
            sc.returns = [NUMPY] if all(made) else [None]
        elif sc.return_nodes and (loaders or sc.steps):
            for node in sc.return_nodes:
                value = node.value
                if isinstance(value, ast.Name) and not fa.values.info_for(fa.index.ancestors(value)).kinds.get(value.id):
                    # a parameter, or a name bound several ways: its name is no evidence of what
                    # the function returns (`ensure_data_spec(dataloader)` returns a DataSpec)
                    sc.returns.append(None)
                elif value is not None and isinstance(value, (ast.Call, ast.Name, ast.Attribute, ast.BinOp)):
                    sc.returns.append(kind_passed(fa, value, fa.index.ancestors(value)))
                elif isinstance(value, ast.Tuple) and value.elts and not any(isinstance(e, ast.Starred) for e in value.elts):
                    items = [kind_passed(fa, e, fa.index.ancestors(e)) for e in value.elts]
                    sc.returns.append(HOST_NUMBERS if all(k == NUMBER for k in items) else None)  # `return loss.item(), acc.item()`
                    # (`return loss.item(), tb_dict, disp_dict`: place by place, a number only where it is one
                    # on every path: not poutyne's `loss`, bound to `float(...)` under an `if` only)
                    sc.items.append([NUMBER if _number_for_sure(fa, e, scope) else None for e in value.elts])
                else:
                    sc.returns.append(None)
    for scope, sc in scopes.items():
        # a function every return of which reads device values on the host (`return
        # clip_grad_norm_(...).item()`, `return out.cpu().numpy()`): when it returns, the host
        # has waited for everything queued before (`returns_synced`)
        if sc.return_nodes and not sc.generator and isinstance(scope, FUNCS):
            sc.returns_synced = all(n.value is not None and (reads_on_return(fa, n.value) or _after_read(fa, n, scope))
                                    for n in sc.return_nodes)  # (`x = t.item()` then `return loss, x`: too)
            sc.moved = moved_return_positions(fa, scope, sc.return_nodes)  # `return model.to(device), tok`
            sc.hands_back = hands_back_moved(fa, sc.return_nodes)  # `return [x.cuda() for x in args]`
            # a model it switched to eval mode, on every return (`model.eval()` ... `return model`)
            # (asked only of a def that switches a model at all: one pass over the file's calls)
            sc.evaluated_back = scope in switching_scopes(fa) and all(
                isinstance(n.value, (ast.Name, ast.Attribute)) and model_key(n.value) is not None
                and mode_before(fa, model_key(n.value), n, scope) == EVAL_MODE for n in sc.return_nodes)
    building = defs_building_on_cpu(fa)
    for scope, sc in scopes.items():
        # a helper returning a tensor it computed on the host (`create_sin_embedding`): a move
        # of its result, in a caller, copies what the GPU could have built (`values.host_built`)
        if sc.return_nodes and not sc.generator and (scope in building or fa.facts.any_host_built()):
            # first without type inference (names of unknown kind taken as no data), which rules
            # out most defs cheaply; then with it, for the few whose returns may be host-built
            sc.host_built = all(
                n.value is not None and host_factory(fa, n.value, scope, lambda e: None) is not None
                for n in sc.return_nodes
            ) and all(
                host_factory(fa, n.value, scope, lambda e: fa.values.is_tensor(e, fa.index.ancestors(e))) is not None
                for n in sc.return_nodes
            )
    functions: Dict[str, dict] = {}
    for scope, sc in scopes.items():
        qual = f"{refs.module}.{MODULE_CODE}" if isinstance(scope, ast.Module) else refs.qualname(scope)
        functions[qual] = sc.summary(fa, hot, scope)
        if sc.return_nodes and not sc.generator and isinstance(scope, FUNCS):
            # the object every return builds (`return Net(cfg).cuda()`), or one of several
            functions[qual].update(built_object(refs, sc.return_nodes, scope))
    if fa.index.mentions("__getitem__"):
        for cls in fa.index.nodes(ast.ClassDef):
            init = next((f for f in cls.body if isinstance(f, FUNCS) and f.name == "__init__"), None)
            if init is not None and serves_stored_items(cls) and refs.qualname(init) in functions:
                # building it builds a dataset of samples in memory (a loader of another file need no workers)
                functions[refs.qualname(init)]["returns"] = IN_MEMORY_DATASET
    for qual in _choosing_precision(fa, refs):
        if qual in functions:
            functions[qual]["precision"] = True
    classes = {
        refs.qualname(c): [b for b in (refs.resolve_name(base) for base in c.bases) if b is not None]
        for c in fa.index.nodes(ast.ClassDef)
    }
    out = {"functions": functions, "classes": {k: v for k, v in classes.items() if v}, "imports": sorted(refs.imported)}
    held = refs.class_attributes()
    if held:
        out["held"] = held  # what its classes' `self.<attr>` hold (`ProjectGraph.resolve` of a `HELD` reference)
    if loaders:  # what the file's loaders take as their dataset: the project reads what those calls return
        feeds = {r for c in dataset_sources(fa) for r in refs.call_refs(c, fa.index.ancestors(c))}
        if feeds:
            out["dataset_calls"] = sorted(feeds)
    stars = star_imported(fa.index.nodes_of(ast.ImportFrom), refs.module, refs.package) if fa.index.mentions("*") else ()
    dict_reads = fa.index.mentions("__dict__")
    out["uses"] = used_names(fa.tree, refs.module, refs.names, fa.index.nodes_of(ast.Call), EXTERNAL_ROOTS,
                             dict_reads, stars, fa.index.nodes_of(ast.Attribute) if dict_reads else None)
    per_class = class_layer_counts(fa.tree, fa.imports, fa.index) if fa.values.module_classes else {}
    if per_class:
        out["layers"] = total_layers(per_class)
        out["class_layers"] = per_class
    per_call = built_per_call(fa.tree, refs.module, refs.names) if fa.values.module_classes else ()
    if per_call:
        out["per_call"] = per_call  # the classes its layers build on every call (`Programs.per_call`)
    exports = package_exports(fa.tree, refs.module, refs.package)
    if exports:
        out["exports"] = exports
    if refs.package and stars:
        out["star_exports"] = list(stars)
    if self_test_block(fa.tree, fa.index.text):
        out["self_test"] = True  # a program of fixed steps: a module's self-test, where others import it
    flags = opt_in_flags(fa.index) if fa.index.mentions("add_argument") else ()
    if flags:
        out["flags"] = sorted(flags)  # its opt-in command-line flags, for the files of its program
    tested = tested_flags(fa.index)
    if tested:
        out["tests_flags"] = sorted(tested)  # what such a flag of another file could guard here
    defaults = number_defaults(fa.index)
    if defaults:
        out["option_defaults"] = defaults  # its options' defaults (`--num_gpu`, 1), for the files of its program
    compared = tested_options(fa.index) - set(defaults)
    if compared:
        out["tests_options"] = sorted(compared)  # what such an option of another file could be here
    words = cudnn_words(fa.index.text)
    if words:
        out["cudnn"] = words  # (for the files of its program: `Programs.cudnn_free`)
    if any(fa.index.mentions(w) for w in LOW_PRECISION_WORDS):
        out["low_precision"] = True  # (for the files whose functions it calls: `CallFacts.called_in_low_precision`)
    if sets_program_default_device(fa):
        out["default_device"] = True  # (for the files of its program: `Programs.default_device`)
    if not fa.index.may_use_accelerator:
        out["host_only"] = True  # nothing in the file can put a tensor on an accelerator
    elif fa.index.uses_cuda:
        out["cuda"] = True  # the file names CUDA (for the files whose device it chooses)
    return out


class _Scope:
    __slots__ = ("steps", "calls", "returns", "items", "return_nodes", "generator", "host_built", "loops", "alternatives", "marks",
                 "returns_synced", "moved", "params", "evaluated", "forwards", "hands_back", "evaluated_back")

    def __init__(self) -> None:
        self.steps = False
        self.calls: set = set()
        # summary key -> reference -> whether each of its calls so asked is so: each per-step
        # call comes right after a host read (`synced`), hands its result to an environment's
        # step (`feeds_env`); each call runs with autograd off (`grad_off`, `with torch.no_grad():`)
        self.marks: Dict[str, Dict[str, bool]] = {"synced": {}, "feeds_env": {}, "grad_off": {}}
        # `if` statements of the function's own body -> branch -> what its plain statements call
        self.alternatives: Dict[ast.If, Dict[int, Set[str]]] = {}
        self.returns: List[Optional[str]] = []
        self.items: List[List[Optional[str]]] = []  # each returned tuple's kinds, position by position
        self.return_nodes: List[ast.Return] = []
        self.generator = False
        self.host_built = False
        self.returns_synced = False
        self.moved: List[int] = []
        self.loops: List[ast.AST] = []
        self.params: Optional[Set[str]] = None  # its parameters never bound again (`own_parameters`)
        # reference -> the arguments (position or keyword) each of its calls passes a model in eval mode
        self.evaluated: Dict[str, Set[str]] = {}
        self.hands_back = False
        self.evaluated_back = False  # every return gives a model it switched to eval mode
        self.forwards = False  # a method that runs its own module (`self(x)`, `self.forward(x)`), autograd as its caller has it

    def own_parameters(self, fa: "FileModel", scope: ast.AST) -> Set[str]:
        if self.params is None:
            self.params = unbound_parameters(fa.index, scope)
        return self.params

    def summary(self, fa: "FileModel", hot: "Hotness", scope: ast.AST) -> dict:
        out: dict = {
            "steps": self.steps,
            "drives": any(hot.kind(loop) is not None for loop in self.loops),
            "calls": [_call_entry(r, w, a, k) for r, w, a, k in sorted(self.calls, key=_call_order)],
        }
        if isinstance(scope, FUNCS):
            out["params"] = _parameters(fa, scope)
            if scope.args.kwarg is not None:
                out["kwargs"] = scope.args.kwarg.arg
            if isinstance(fa.index.parents.get(scope), ast.ClassDef) and abstract_method(scope):
                out["abstract"] = True
        kinds = set(self.returns)
        if self.returns and not self.generator and len(kinds) == 1 and None not in kinds:
            out["returns"] = kinds.pop()
        items = _numbers_at(self.items, len(self.return_nodes)) if "returns" not in out and not self.generator else None
        if items is not None:
            out["returns_items"] = items
        if self.host_built:
            out["host_built"] = True
        if self.returns_synced:
            out["returns_synced"] = True
        if self.forwards:
            out["forwards"] = True
        if self.hands_back:
            out["hands_back"] = True
        if self.evaluated_back:
            out["returns_evaluated"] = True
        if self.moved:
            out["moves"] = self.moved
        either = []
        for stmt, branches in self.alternatives.items():
            n = _branch_count(stmt)
            if n and len(branches) == n:  # an `if`/`elif`/`else` each of whose branches calls the project
                either.append([sorted(branches[i]) for i in range(n)])
        if either:
            out["either"] = sorted(either)
        for key, refs in self.marks.items():
            marked = sorted(ref for ref, ok in refs.items() if ok)
            if marked:
                out[key] = marked
        evaluated = {ref: sorted(keys) for ref, keys in self.evaluated.items() if keys}
        if evaluated:
            out["evaluated"] = evaluated
        if self.generator and isinstance(scope, FUNCS):
            i = _iterated_parameter(fa, scope, self.loops)
            if i is not None:
                out["iterates"] = i
        elif isinstance(scope, FUNCS) and scope.name == "__init__":
            i = _wrapped_iterable(fa, scope)
            if i is not None:
                out["iterates"] = i  # (a call of the class: `LogProgress(logger, loader)`)
        return out


def _call(fa: "FileModel", refs: FileRefs, hot: "Hotness", node: ast.Call, scope: ast.AST, sc: _Scope,
          grad_words: bool = False, switches: bool = False) -> None:
    """Add the call `node` of `scope` to its summary `sc`. `switches`: the
    file may switch a model to eval mode, so which arguments are such models
    is asked (`evaluated`). `grad_words`: the
    file can turn autograd off (it names `no_grad`, `inference_mode` or
    `set_grad_enabled`), so whether the call runs with it off is asked."""
    func = node.func
    ancestors: Optional[list] = None
    if isinstance(func, ast.Attribute):
        if hot.own_step(node):
            ancestors = fa.index.ancestors(node)
            if _where(fa, hot, node, ancestors, scope) in (BODY, SOME):
                sc.steps = True
    elif not isinstance(func, ast.Name):
        return
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "super" \
            and func.value is root:  # type: ignore[attr-defined]
        pass  # `super().__init__(model, ...)`: the base's method (`FileRefs.call_ref`)
    elif not isinstance(root, ast.Name):
        return
    elif root.id in ("self", "cls"):
        if (func is root or func.attr == "forward" and func.value is root) and root.id == "self":  # type: ignore[attr-defined]
            if isinstance(scope, FUNCS):  # `self(x)`, `self.forward(x)`: the method runs its own module
                sc.forwards = sc.forwards or not (grad_words and fa.contexts.grad_disabled(fa.index.ancestors(node)))
            if func is root:
                return  # (`self(x)` names no function the project can resolve)
        if (
            isinstance(func, ast.Attribute) and func.value is root
            and func.attr not in refs.methods and not has_project_bases(refs, scope)
            and refs.method_alias(fa.index.parents.get(scope), func.attr) is None
            and not refs.functions_held(fa.index.parents.get(scope), func.attr)):
            held = refs.held_by_self(scope, func.attr)
            if held is not None and not held.endswith("Loss") and isinstance(scope, FUNCS) \
                    and fa.values.is_module_class(fa.index.parents.get(scope)):
                # a module's method that runs a sub-module of it (`self.item_encoder(emb, mask)` in
                # S3Rec's `finetune`): it runs the model's layers, as its `forward` does
                sc.forwards = sc.forwards or not (grad_words and fa.contexts.grad_disabled(fa.index.ancestors(node)))
            if held is None and func.attr == "forward" and isinstance(scope, FUNCS):
                pass  # `self.forward(batch)` in a base that leaves `forward` to its subclasses (EfficientConformer's
                # `Model.fit`): the graph runs their overrides (`graph._overriding`)
            elif held is None or held.split(".", 1)[0] in EXTERNAL_ROOTS:
                return  # `self.conv(x)`: a torch sub-module (`self.reg = Regulator()`: the project's)
    duck = None
    if isinstance(root, ast.Name) and root.id not in ("self", "cls"):
        target = refs.names.get(root.id)
        if target is not None:
            if target.split(".", 1)[0] in EXTERNAL_ROOTS:
                return
        elif root.id not in refs.instances and root.id not in refs.nested_def_names and (
            isinstance(scope, ast.Module) or refs.instance_of(root.id, scope) is None
        ) and not refs.classes_of(root.id, None if isinstance(scope, ast.Module) else scope) and not (
            root is func and star_refs(refs, root.id)
        ):
            duck = duck_call(refs, func, root, scope)
            if duck is None:
                return  # a builtin, or a local value that holds no known object (not a nested def)
    if ancestors is None:
        ancestors = fa.index.ancestors(node)
    found = refs.call_refs(node, ancestors) if duck is None else {duck}
    if not found:
        return
    alt = _alternative(ancestors, scope)
    if alt is not None:
        sc.alternatives.setdefault(alt[0], {}).setdefault(alt[1], set()).update(found)
    args = refs.argument_classes(node, ancestors)
    where = _plain_where(ancestors, scope, hot.light, refs.iterates_submodules if refs.has_submodule_loops else None)
    if where != BODY and not (hot.light or hot.in_model_class(scope)):
        where = _where(fa, hot, node, ancestors, scope)
    if where == BODY and after_periodic_return(fa, node, ancestors):
        where = SOME  # past `if step % n != 0: return`: on every n-th call only
    # what a call from a hot loop passes (the callee runs every step: what it reads matters);
    # a call on every run of a function, which of the function's own parameters it hands on
    passed = argument_kinds(fa, node, ancestors) if where in (TRAIN, EVAL) else (
        _forward_passes(fa, node, ancestors, sc.own_parameters(fa, scope)) if where == BODY and _module_forward(hot, scope)
        else forwarded(node, sc.own_parameters(fa, scope)) if where == BODY and isinstance(scope, FUNCS) else None)
    # whether a per-step call comes right after a host read of the caller (`entered_synced`)
    synced: Optional[bool] = None
    if where in (TRAIN, EVAL):  # (from a loop's step; a per-step function's own calls are not asked: cost)
        first = min((line for line in (_first_reads(fa).get(scope), _first_synced_calls(fa).get(scope))
                     if line is not None), default=None)
        synced = first is not None and first <= node.lineno and follows_host_read(node, ancestors, fa, limit=SYNC_WALK_LIMIT)
    # whether a per-step call's result is the action an environment's step takes
    env = feeds_environment_step(fa.index, node, ancestors) if where in (TRAIN, EVAL) else None
    # whether the call runs with autograd off (`entered_grad_off`; a file that never turns it off: no)
    off = grad_words and fa.contexts.grad_disabled(ancestors)
    # which arguments are models the caller switched to eval mode before the call (`entered_evaluated`)
    evaluated = evaluated_arguments(fa, node, scope) if switches and (node.args or node.keywords) else set()
    for ref in found:
        before = sc.evaluated.get(ref)
        sc.evaluated[ref] = evaluated if before is None else before & evaluated
        sc.calls.add((ref, where, tuple(sorted(args.items())), passed))
        for key, value in (("synced", synced), ("feeds_env", env), ("grad_off", off)):
            if value is not None:  # (None: not asked of this call)
                marks = sc.marks[key]
                marks[ref] = marks.get(ref, True) and value


# method names a parameter's call is not resolved by: framework objects' own (an optimizer's,
# a writer's, a module's), which a project class defining one says nothing of what the parameter is
_FRAMEWORK_METHODS = frozenset({
    "zero_grad", "state_dict", "load_state_dict", "named_parameters", "named_modules", "named_children",
    "named_buffers", "add_module", "register_buffer", "register_parameter", "add_scalar", "add_scalars",
    "add_image", "add_images", "add_histogram", "add_text", "add_figure", "set_postfix", "set_description",
    "get_lr", "get_last_lr", "set_epoch", "from_pretrained", "save_pretrained", "to_dict", "get_device",
    "type_as", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "log_dict", "manual_backward",
})


def duck_call(refs, func: ast.AST, root: ast.Name, scope: ast.AST) -> Optional[str]:
    """`model.train_a_batch(x, y)` where `model` is a parameter of `scope`
    whose class no caller shows (continual-learning's `train_cl(model,
    ...)`, handed one of several classifiers through a function chosen at
    run time): `?.train_a_batch` (`refs.DUCK`), which the project resolves
    to the methods of that name its classes define, when few do. Only a
    compound name (`train_a_batch`, `extract_vector`), not a framework
    object's own (`zero_grad`) nor an in-place one (`add_`), and not a
    dunder: a plain verb (`update`, `predict`) is too common to say which
    class it is."""
    if not (isinstance(func, ast.Attribute) and func.value is root and isinstance(scope, FUNCS)):
        return None
    name = func.attr
    if "_" not in name.strip("_") or name.startswith("__") or name.endswith("_") or name in _FRAMEWORK_METHODS:
        return None
    if root.id not in refs.parameters_of(scope):
        return None
    return f"{DUCK}.{name}"


# host reads and syncs, by name (`_first_reads`)
_READ_METHODS = frozenset(HOST_METHODS | {"synchronize", "barrier"})
# ... and what else makes the host wait, as `follows_host_read` reads a statement: a blocking
# copy of host data to the GPU (`labels = labels.cuda()` last in a loss helper) and an operation
# sized by the data (`torch.masked_select`, a truth test of `.any()`): by name only, for `_after_read`
_WAIT_METHODS = _READ_METHODS | {"cuda", "to", "any", "all", "masked_select", "nonzero", "unique"}


def _module_forward(hot: "Hotness", scope: ast.AST) -> bool:
    """`scope` is the `forward` of an `nn.Module` class (`Hotness.in_model_class`)."""
    return isinstance(scope, FUNCS) and scope.name == "forward" and hot.in_model_class(scope)


def _forward_passes(fa: "FileModel", call: ast.Call, ancestors, params: Set[str]) -> tuple:
    """What a call on every run of a module's `forward` hands on: the
    forward's own parameters as such (`forwarded`), the other arguments by
    kind (`argument_kinds`: MTR's `mixup_process(h, lam)` of hidden states, a
    tensor on the model's device), so that the project knows what the
    helper's parameters hold every step."""
    kinds = dict(argument_kinds(fa, call, ancestors))
    for key, value in forwarded(call, params) or ():
        if value != "?":
            kinds[key] = value
    return tuple(sorted(kinds.items()))


def _first_reads(fa: "FileModel") -> Dict[ast.AST, int]:
    """scope -> the first line of a call in it that may read on the host or
    sync (`x.item()`, `torch.cuda.synchronize()`, `float(t)`), by name only:
    a call before none of them cannot follow a read, and needs no walk back
    (`follows_host_read`)."""
    return first_read_lines(fa, _READ_METHODS)


def _first_synced_calls(fa: "FileModel") -> Dict[ast.AST, int]:
    """scope -> the first line of a call in it of a project function that
    returns right after a host read (`CallFacts.returns_synced`: the
    segmentation metrics' `get_accuracy(SR, GT)`, which returns
    `float(corr) / n`): the calls after it may follow a read too."""
    def compute() -> Dict[ast.AST, int]:
        found: Dict[ast.AST, int] = {}
        if fa.facts.empty:
            return found
        for call in fa.index.nodes_of(ast.Call):
            if fa.facts.returns_synced(call):
                scope = fa.index.owner(call)
                if scope is not None and (scope not in found or call.lineno < found[scope]):
                    found[scope] = call.lineno
        return found

    return fa.index.memoized("summary.first_synced_calls", None, compute)


def reads_newly_every_step(fa: "FileModel", refs: FileRefs, before: dict, after: dict) -> bool:
    """A function that the facts table `after`, and not `before`, says runs
    every step may read on the host before a `return` of a value: its `returns_synced`
    (asked of per-step functions only, `_after_read`) may change, so a
    summary read with `before` does not stand for `after`."""
    new = set(after.get("every_step", {})) - set(before.get("every_step", {}))
    return bool(new) and any(
        isinstance(scope, FUNCS) and refs.qualname(scope) in new and any(
            isinstance(n, ast.Return) and n.value is not None and n.lineno >= line for n in walk(scope))
        for scope, line in _first_reads(fa).items())


# how many statements before a `return` its function's last host read may be (`_after_read`)
RETURN_READ_LIMIT = 6


def _after_read(fa: "FileModel", ret: ast.Return, scope: ast.AST) -> bool:
    """A host read of the function's body comes a few statements before `ret`
    (RETURN_READ_LIMIT), with no model work between: the function ends
    right after the host waited (not one that reads first, then computes).
    Asked only of functions that run every step (`CallFacts.every_step`):
    only a per-step caller's read after the call is at stake, and the walk
    infers values (5.7 s of a 92 s profile when asked of every function)."""
    first = first_read_lines(fa, _WAIT_METHODS).get(scope)
    if first is None or first > ret.lineno or fa.facts.every_step(scope) is None:
        return False  # (asked only of what runs every step, by the file's own graph or the project's)
    where = fa.index.slot(ret)  # (a cheap look at the statements before it, first: the walk infers values)
    before = getattr(where[0], where[1])[max(0, where[2] - RETURN_READ_LIMIT):where[2]] if where is not None else ()
    if not any(may_read_by_form(n, _WAIT_METHODS) for stmt in before for n in walk(stmt)):
        return False
    return follows_host_read(ret, fa.index.ancestors(ret), fa, limit=RETURN_READ_LIMIT)


def _call_order(call: tuple) -> tuple:
    return call[0], call[1], call[2], call[3] or ()


def _call_entry(ref: str, where: str, classes: tuple, kinds: Optional[tuple]) -> list:
    """[reference, where, {argument: class}, {argument: kind}], the last two
    only where known (kinds only for calls from a hot loop)."""
    if kinds is not None:
        return [ref, where, dict(classes), dict(kinds)]
    return [ref, where, dict(classes)] if classes else [ref, where]


_SIMPLE_STMTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)


def _alternative(ancestors, scope: ast.AST) -> Optional[Tuple[ast.If, int]]:
    """(the `if`, the branch) when the call sits in a plain statement of one
    branch of an `if`/`elif`/`else` chain that is itself a plain statement of
    the function (`if self.use_fp16: return self._optimize_fp16(opt) else:
    return self._optimize_normal(opt)`): each run takes one branch."""
    chain = list(ancestors)
    try:
        i = chain.index(scope)
    except ValueError:
        return None
    below = chain[i + 1:]
    if len(below) < 2 or not isinstance(below[0], ast.If) or below[0] not in getattr(scope, "body", ()):
        return None
    top = below[0]
    branch, k = 0, 0
    node = top
    while True:
        nxt = below[k + 1] if k + 1 < len(below) else None
        if nxt is None:
            return None
        if nxt in node.body:
            break
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) and nxt is node.orelse[0]:
            node, k, branch = nxt, k + 1, branch + 1  # `elif`
            continue
        if nxt in node.orelse:
            branch += 1
            break
        return None
    stmt = below[k + 1]
    if not isinstance(stmt, _SIMPLE_STMTS):
        return None
    for anc in below[k + 2:]:
        if isinstance(anc, (ast.Lambda, ast.IfExp, ast.BoolOp, ast.comprehension)):
            return None  # may not run
    return top, branch


def _branch_count(stmt: ast.If) -> int:
    """How many branches an `if`/`elif` chain has when it ends in an `else`; 0 without one."""
    n = 1
    while True:
        if not stmt.orelse:
            return 0
        if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If):
            stmt, n = stmt.orelse[0], n + 1
            continue
        return n + 1


def _plain_where(ancestors, scope: ast.AST, light: bool = False, through=None) -> str:
    """BODY when nothing but plain statements lie between the call and its
    function, else SOME: for the methods of `nn.Module` subclasses, whose
    loops (over layers, heads, ...) never step over data. With `light` (a
    file whose loops were not read: no word of a step in it, no facts yet),
    a call from a loop is LOOP: what runs it is not known yet, and a loop
    around a function that steps is a loop of steps (it drives them), so
    the call must not make its caller one that steps. `through(loop)`: a
    loop every run of the function runs whole (`for block in self.blocks:`,
    `FileRefs.iterates_submodules`), passed as plain code, as is `if self.training:`."""
    for k in range(len(ancestors) - 1, -1, -1):
        anc = ancestors[k]
        if anc is scope:
            return BODY
        if through is not None and isinstance(anc, (ast.For, ast.AsyncFor)) and through(anc) or isinstance(
                anc, ast.If) and dotted(anc.test) == "self.training" and k + 1 < len(ancestors) and ancestors[k + 1] in anc.body:
            continue  # (and the body of `if self.training:` in a module's method: a training step takes it)
        if light and isinstance(anc, (ast.For, ast.AsyncFor, ast.While)):
            return LOOP
        if isinstance(anc, (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.ExceptHandler,
                            ast.BoolOp, ast.comprehension)):
            return SOME
    return SOME


def _numbers_at(items: List[List[Optional[str]]], returns: int) -> Optional[List[Optional[str]]]:
    """Where every return of a function gives a tuple of the same length
    (`return loss.item(), tb_dict, disp_dict`): the kind at each position
    that every one of them agrees on, NUMBER only (None elsewhere), if there
    is one; else None."""
    if not items or len(items) != returns or len({len(i) for i in items}) != 1:
        return None
    out = [NUMBER if all(i[k] == NUMBER for i in items) else None for k in range(len(items[0]))]
    return out if NUMBER in out else None


def _parameters(fa: "FileModel", func: ast.AST) -> List[str]:
    """The names a call's positional arguments bind, in order (without
    `self` / `cls` for a method), then the keyword-only ones."""
    a = func.args  # type: ignore[attr-defined]
    positional = [x.arg for x in list(a.posonlyargs) + list(a.args)]
    if _is_method(fa, func) and positional:
        positional = positional[1:]
    return positional + [x.arg for x in a.kwonlyargs]


def _is_method(fa: "FileModel", func: ast.AST) -> bool:
    return isinstance(fa.index.parents.get(func), ast.ClassDef) and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list  # type: ignore[attr-defined]
    )


def _where(fa: "FileModel", hot: "Hotness", node: ast.AST, ancestors, scope: ast.AST) -> str:
    region = fa.loops.region(node, ancestors, hot.is_hot, hot.contains_hot, hot.block_steps)
    if region is None or under_option(fa, node, ancestors, region) or under_once_guard(node, ancestors, fa.index):
        return SOME  # (`if self.step == 0: self.plot_train_batch(...)`: the first step only)
    if isinstance(region, LOOPS):
        return hot.kind(region) or SOME
    return BODY if region is scope else SOME


def _wrapped_iterable(fa: "FileModel", init: ast.AST) -> Optional[int]:
    """For the `__init__` of a class whose `__iter__` iterates an attribute
    that `__init__` sets to one of its parameters (`self.iterable =
    iterable`, then `iter(self.iterable)`: svoice's `LogProgress`, a
    progress logger around the loader): the position of that parameter at
    a call of the class. Its objects step over what that parameter holds."""
    cls = fa.index.parents.get(init)
    if not isinstance(cls, ast.ClassDef):
        return None
    it = next((b for b in cls.body if isinstance(b, FUNCS) and b.name == "__iter__"), None)
    if it is None:
        return None
    iterated = set()
    for n in walk(it):
        target = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "iter" and len(n.args) == 1:
            target = n.args[0]  # `return iter(self.iterable)`, `self._it = iter(self.iterable)`
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            target = n.iter  # `for x in self.iterable: yield x`
        elif isinstance(n, ast.YieldFrom):
            target = n.value
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            iterated.add(target.attr)
    if not iterated:
        return None
    positional = [a.arg for a in list(init.args.posonlyargs) + list(init.args.args)][1:]  # type: ignore[attr-defined]
    for stmt in init.body:  # type: ignore[attr-defined]
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == "self"
                and stmt.targets[0].attr in iterated and isinstance(stmt.value, ast.Name)
                and stmt.value.id in positional):
            return positional.index(stmt.value.id)
    return None


def _iterated_parameter(fa: "FileModel", func: ast.AST, loops: List[ast.AST]) -> Optional[int]:
    """The position, at a call, of the parameter whose elements the generator
    `func` yields: a `for` over the bare parameter whose body yields."""
    positional = [a.arg for a in list(func.args.posonlyargs) + list(func.args.args)]  # type: ignore[attr-defined]
    if _is_method(fa, func) and positional:
        positional = positional[1:]
    for loop in loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, ast.Name):
            continue
        if loop.iter.id not in positional:
            continue
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in loop.body for n in walk(stmt)):
            return positional.index(loop.iter.id)
    return None
