"""The project's answers to the model's questions about calls (`CallFacts`),
for one file, and the file's model read with them.

A file is first read alone: its summary, joined into a call graph of that
one file, already answers for its own helpers (`self._run_step(...)` in the
same class). `model_with_facts` repeats that to a fixpoint, since what a
loop is depends on what its calls do. The runner then joins every file's
summary (`graph.ProjectGraph`) and reads again, with the project's table,
the files whose table changed.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from gpulint.model.file import FileModel
from gpulint.model.index.nodes import self_test_block
from gpulint.model.names import ImportTable
from gpulint.model.control.options import opt_in_destinations, option_defaults
from gpulint.model.project.graph import ProjectGraph
from gpulint.model.project.hierarchy import FRAMEWORK_ROOTS
from gpulint.model.project.tables import ANSWER_KEYS, is_empty, tells_the_model_nothing
from gpulint.model.project.imports import bound_dotted, import_bindings, imported_modules, star_imported, used_names
from gpulint.model.project.refs import FileRefs, star_refs
from gpulint.model.project.layers import class_layer_counts, may_build_layers, cudnn_words, total_layers
from gpulint.model.project.per_call import built_per_call
from gpulint.model.project.exports import EXTERNAL_ROOTS, exports_summary
from gpulint.model.project.summary import duck_call, reads_newly_every_step, summarize, summary_stands
from gpulint.model.values.callfacts import CallFacts

MAX_ROUNDS = 4


class ProjectFacts(CallFacts):
    """Answers from a table of `ProjectGraph.facts_for`."""

    def __init__(self, table: dict, module: str, package: bool = False) -> None:
        self.table = table
        self.module = module
        self.package = package
        self.empty = tells_the_model_nothing(table)
        self._steps = frozenset(table.get("steps", ()))
        self._drives = frozenset(table.get("drives", ()))
        self._returns: Dict[str, object] = table.get("returns", {})  # (a list: a tuple's kinds by place)
        self._iterates: Dict[str, int] = table.get("iterates", {})
        self._host_built = frozenset(table.get("host_built", ()))
        self._returns_synced = frozenset(table.get("returns_synced", ()))
        self._hands_back = frozenset(table.get("hands_back", ()))
        self._evaluated_back = frozenset(table.get("returns_evaluated", ()))
        self._every: Dict[str, str] = table.get("every_step", {})
        self._param_kinds: Dict[str, Dict[str, str]] = table.get("param_kinds", {})
        self._accelerator = table.get("accelerator", True)
        self._refs_of: Dict[int, Optional[str]] = {}
        self.refs: Optional[FileRefs] = None

    def with_every_step(self, table: dict) -> None:
        """Take the answers of `table`, which differs from this one in
        `every_step` only: no answer the model has cached depends on it."""
        self.table = table
        self._every = table.get("every_step", {})
        self.empty = tells_the_model_nothing(table)

    def with_parameters(self, table: dict) -> None:
        """Take the answers of `table`, which like this one says nothing of
        steps, loops, returns or generators (`answers_nothing`): only what
        the file's parameters hold and which functions run every step
        change, so no answer the model has cached changes, and the
        references are read again with the parameters."""
        self.with_every_step(table)
        self._refs_of = {}
        if self.refs is not None:
            self.bind(self.refs.fa)

    def bind(self, model: object) -> None:
        self.refs = FileRefs(model, self.module, self.package, self.table.get("params"),  # type: ignore[arg-type]
                             self.table.get("builders"), self.table.get("builders_any"), self.table.get("builders_by"),
                             self.table.get("builders_each"))

    def unbind(self) -> None:
        self.refs = None
        self._refs_of = {}

    def _ref(self, call: ast.Call) -> Optional[str]:
        key = id(call)
        if key not in self._refs_of:
            ref = self.refs.call_ref(call) if self.refs is not None else None
            if ref is None and self.refs is not None and isinstance(call.func, ast.Name) and self.refs.star_modules:
                # a name only a star import binds (`from evaluation import *`, then `get_accuracy(SR, GT)`):
                # the function of the one module that may define it
                found = star_refs(self.refs, call.func.id)
                ref = found[0] if len(found) == 1 else None
            if ref is None and self.refs is not None and isinstance(call.func, ast.Attribute) \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id not in self.refs.names:
                # `model.train_a_batch(x, y)` on a parameter of no known class (`summary.duck_call`)
                index = self.refs.fa.index
                ref = duck_call(self.refs, call.func, call.func.value, index.enclosing_scope(index.ancestors(call)))
            self._refs_of[key] = ref
        return self._refs_of[key]

    def _any_of(self, call: ast.Call, found) -> bool:
        """The call's reference is in `found`; or, where its receiver holds an
        object of one of several classes (`agent = make_agent(env)`), the
        method of one of them is."""
        ref = self._ref(call)
        if ref is not None or self.refs is None or not self.refs.has_unions or not isinstance(call.func, ast.Attribute):
            return ref in found
        return any(r in found for r in self.refs.call_refs(call, self.refs.fa.index.ancestors(call)))

    def steps(self, call: ast.Call) -> bool:
        return bool(self._steps) and self._any_of(call, self._steps)

    def drives(self, call: ast.Call) -> bool:
        return bool(self._drives) and self._any_of(call, self._drives)

    def returns(self, call: ast.Call) -> Optional[str]:
        found = self._returned(call)
        return found if isinstance(found, str) else None

    def returns_items(self, call: ast.Call) -> Optional[List[Optional[str]]]:
        found = self._returned(call)
        return found if isinstance(found, list) else None

    def _returned(self, call: ast.Call):
        if not self._returns:
            return None
        ref = self._ref(call)
        return self._returns.get(ref) if ref is not None else None

    def host_built(self, call: ast.Call) -> bool:
        return bool(self._host_built) and self._ref(call) in self._host_built

    def any_host_built(self) -> bool:
        return bool(self._host_built)

    def moved_returns(self, call: ast.Call) -> Tuple[int, ...]:
        moved = self.table.get("returns_moved")  # (asked by rules only: read from the table as it is now)
        if not moved:
            return ()
        ref = self._ref(call)
        return tuple(moved.get(ref, ())) if ref is not None else ()

    def returns_synced(self, call: ast.Call) -> bool:
        return bool(self._returns_synced) and self._ref(call) in self._returns_synced

    def hands_back_moved(self, call: ast.Call) -> bool:
        return bool(self._hands_back) and self._ref(call) in self._hands_back

    def returns_evaluated(self, call: ast.Call) -> bool:
        return bool(self._evaluated_back) and self._ref(call) in self._evaluated_back

    def any_returns_evaluated(self) -> bool:
        return bool(self._evaluated_back)

    def forwards(self, call: ast.Call) -> bool:
        found = self.table.get("forwards")  # (asked by rules only: read from the table as it is now)
        return bool(found) and self._ref(call) in found

    def iterated_argument(self, call: ast.Call) -> Optional[ast.AST]:
        if not self._iterates:
            return None
        ref = self._ref(call)
        i = self._iterates.get(ref) if ref is not None else None
        if i is None or i >= len(call.args) or any(isinstance(a, ast.Starred) for a in call.args[: i + 1]):
            return None
        return call.args[i]

    def project_uses_accelerator(self) -> bool:
        return self._accelerator

    def parameter_kind(self, func: ast.AST, name: str) -> Optional[str]:
        if not self._param_kinds or self.refs is None:
            return None
        return self._param_kinds.get(self.refs.qualname(func), {}).get(name)

    def opt_in_flags(self) -> FrozenSet[str]:
        return frozenset(self.table.get("opt_in", ()))

    def option_defaults(self) -> Dict[str, object]:
        return self.table.get("option_defaults") or {}

    def self_test(self) -> bool:
        return bool(self.table.get("self_test"))

    def subclass_of(self, call: ast.Call) -> Optional[str]:
        found = self.table.get("subclass_of")
        return found.get(self._ref(call)) if found else None

    def built_per_call(self, cls: ast.AST) -> bool:
        return getattr(cls, "name", None) in self.table.get("per_call", ())

    def default_device(self) -> bool:
        return bool(self.table.get("default_device"))

    def model_layers(self) -> Optional[Dict[str, int]]:
        return self.table.get("layers") or None

    def cuda_nearby(self) -> bool:
        return bool(self.table.get("cuda_nearby"))

    def cudnn_free(self) -> bool:
        return bool(self.table.get("cudnn_free"))

    def called_in_low_precision(self) -> bool:
        """A file that names a reduced precision (a bf16 model, autocast, TF32)
        calls a function of this file: the precision is chosen there."""
        return bool(self.table.get("low_precision_callers"))

    def calls_precision_choice(self) -> bool:
        """The file calls a function of the project that chooses the model's
        precision (builds an FSDP mixed-precision policy)."""
        return bool(self.table.get("precision_calls"))

    def _lists(self, key: str, func: ast.AST) -> bool:
        """The table's `key` lists the function (by its qualified name)."""
        listed = self.table.get(key)
        return bool(listed) and self.refs is not None and self.refs.qualname(func) in listed

    def device_side(self, func: ast.AST) -> bool:
        return self._lists("device_side", func)

    def every_step(self, func: ast.AST) -> Optional[str]:
        if not self._every or self.refs is None:
            return None
        return self._every.get(self.refs.qualname(func))

    def entered_synced(self, func: ast.AST) -> bool:
        return self._lists("entered_synced", func)

    def entered_grad_off(self, func: ast.AST) -> bool:
        return self._lists("grad_off", func)

    def feeds_env(self, func: ast.AST) -> bool:
        return self._lists("feeds_env", func)

    def called_off_step(self, func: ast.AST) -> bool:
        return self._lists("called_off_step", func)

    def evaluated_parameter(self, func: ast.AST, name: str) -> bool:
        listed = self.table.get("evaluated")  # (asked by rules only)
        return bool(listed) and self.refs is not None and name in listed.get(self.refs.qualname(func), ())

def model_with_facts(
    tree: ast.Module, text: str, path: str, names: Sequence[str], package: bool = False,
    table: Optional[dict] = None, like: Optional[FileModel] = None, told: Optional[dict] = None,
) -> Tuple[FileModel, dict, dict]:
    """(the file's model, its summary, the facts table the model was read
    with). With `table` (the project's), the model is read with it once;
    without, the file's own call graph is joined to a fixpoint, with what
    its program `told` it (`default_device`). `like`: a model of the same
    tree, whose index is reused."""
    module = names[0] if names else "__main__"
    own = table is None
    table = table if table is not None else dict(told or {})
    fa: Optional[FileModel] = like
    facts: Optional[ProjectFacts] = None
    for _ in range(MAX_ROUNDS):
        if facts is None or facts.table is not table:
            facts = ProjectFacts(table, module, package)
            old, fa = fa, FileModel(tree, text, path, facts, like=fa)
            if old is not None:
                old.close()
        refs = facts.refs if facts.refs is not None else FileRefs(fa, module, package)
        summary = summarize(fa, refs)
        if not own:
            return fa, summary, table
        found = ProjectGraph({path: (list(names) or [module], summary)}).facts_for(path)
        if told:
            found = dict(found, **told)
        if found == table or (is_empty(found) and is_empty(table)):
            return fa, summary, table
        newly = reads_newly_every_step(fa, refs, table, found)  # (a helper's `returns_synced` may change)
        if _same_but_every_step(found, table) and not newly:
            facts.with_every_step(found)  # the summary and the model's answers stand
            return fa, summary, found
        if answers_nothing(found) and answers_nothing(table):
            stands = not newly and summary_stands(fa, refs, table, found, tells_the_model_nothing(found))
            facts.with_parameters(found)  # the same model, its calls' references read again
            if stands:  # (and its summary as it was: the table it gives is `found`)
                return fa, summary, found
        table = found
    return fa, summary, table


# an attribute compared with a literal (`args.num_gpu > 1`, `opt.model == "gnn"`)
_COMPARED_RE = re.compile(r"\.([A-Za-z_]\w*)\s*(?:[<>]=?|[!=]=)\s*-?(?:\d|['\"])")


# the last names of the framework classes whose subclasses a file read only partly records
_FRAMEWORK_BASES = tuple(sorted(root.rpartition(".")[2] for root in FRAMEWORK_ROOTS))


def partial_summary(tree: ast.Module, text: str, names: Sequence[str], package: bool,
                    layers: bool = True) -> Optional[dict]:
    """The summary of a file that nothing in it can start a step from (its
    loops and calls are summarized only when the project asks): what a
    package re-exports, and with `layers` the layers its `nn.Module` classes
    build. None where it has neither."""
    module = names[0] if names else "__main__"
    out = exports_summary(tree, module) if package else {"functions": {}, "classes": {}, "imports": [], "partial": True}
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in tree.body):
        out["defines"] = True  # (a factory of the project's objects, `make_agent(env)`: `_importing_steps`)
    if "__main__" in text and self_test_block(tree, text):
        out["self_test"] = True  # (`Programs.self_tested`)
    if "cuda" in text:
        out["cuda"] = True  # (as a full summary says it: for the files that import it, `Programs.imports_one_saying`)
    words = cudnn_words(text)
    if words:
        out["cudnn"] = words  # (as a full summary says it: `Programs.cudnn_free`)
    if "add_argument" in text:  # its opt-in command-line flags and its options' defaults, for the files of its program
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        flags = opt_in_destinations(calls)
        if flags:
            out["flags"] = sorted(flags)
        defaults = option_defaults(calls)
        if defaults:
            out["option_defaults"] = defaults
    if "class " in text:  # the method names its classes define (`engine.project.demanded`: a parameter's
        # method, `model.train_a_batch(x)`, or an override of an abstract method, that per-step code calls
        # and no file read yet defines)
        methods = sorted({item.name for node in tree.body if isinstance(node, ast.ClassDef) for item in node.body
                          if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("__")})
        if methods:
            out["methods"] = methods
    if any(w in text for w in _FRAMEWORK_BASES):  # its subclasses of those (`graph._subclass_calls`)
        bound = {q: b for q, b in class_bases(tree, module, import_bindings(top, module, package)).items()
                 if any(base.rpartition(".")[2].endswith(_FRAMEWORK_BASES) for base in b)}
        if bound:
            out.setdefault("classes", {}).update(bound)
    # what an option of another file could be compared with here (`Programs.option_defaults`; a
    # plain scan of the text, `.num_gpu > 1`: the file is not walked)
    compared = set(_COMPARED_RE.findall(text)) - set(out.get("option_defaults", ()))
    if compared:
        out["tests_options"] = sorted(compared)
    if not may_build_layers(text):
        if out.get("exports") or out.get("star_exports"):
            return out
        if not package and top:  # what it imports: which program it belongs to (`ProjectGraph.program_facts`)
            out["imports"] = sorted(imported_modules(top, module, package))
            if not out.get("classes"):  # (a subclass of one of those, for the graph to know)
                out["imports_only"] = True
            return out
        return None
    if not package:  # what it imports: where the models it builds may have more layers, and
        # whether it imports a training file (a subclass of a trainer, whose models the project asks for)
        out["imports"] = sorted(imported_modules(top, module, package))
    if "Module" in text:  # the classes its layers build on every call (`Programs.per_call`)
        per_call = built_per_call(tree, module, import_bindings(top, module, package))
        if per_call:
            out["per_call"] = per_call
    if layers:
        per_class = class_layer_counts(tree, ImportTable(tree))
        out["layers"] = total_layers(per_class)  # {} too: asked, and there are none
        if per_class:
            out["class_layers"] = per_class
        # and what it builds or calls of those, and its classes' bases (`ModelFiles`)
        bindings = import_bindings(top, module, package)
        out["uses"] = used_names(tree, module, bindings, None, EXTERNAL_ROOTS,
                                 "__dict__" in text, star_imported(top, module, package))
        out["classes"] = class_bases(tree, module, bindings)
    return out if not package or "layers" in out or out.get("exports") or out.get("star_exports") else None


def class_bases(tree: ast.Module, module: str, bindings: Dict[str, str]) -> Dict[str, List[str]]:
    """class -> its bases, absolute, for the file's top-level classes whose
    bases name imported or top-level names (`class MLP(BaseModelTorch)`)."""
    names = dict(bindings)
    names.update({n.name: f"{module}.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef)})
    out: Dict[str, List[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b for b in (bound_dotted(base, names) for base in node.bases) if b is not None]
            if bases:
                out[f"{module}.{node.name}"] = bases
    return out


def answers_nothing(table: dict) -> bool:
    """No call of the file steps, drives a loop, returns a kind or yields
    an argument's elements by `table`: the model asks it nothing else."""
    return not any(table.get(k) for k in ANSWER_KEYS)


def _same_but_every_step(a: dict, b: dict) -> bool:
    return all((a.get(k) or None) == (b.get(k) or None) for k in ANSWER_KEYS + ("params",))
