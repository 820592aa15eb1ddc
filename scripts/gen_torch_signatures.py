#!/usr/bin/env python3
"""Generate gpulint/model/values/torch_signatures.json from the installed torch's stubs.

gpulint never imports torch while linting, yet it needs to know what a call
such as `torch.arange(...)`, `x.item()` or `x.shape` gives back. This script
reads the type stubs and Python sources that ship in the torch wheel (with
`ast`: torch itself is never imported) and records, for every `torch.*`
function, every Tensor method and every Tensor attribute, a coarse *kind* of
its return value (see `NAME_KINDS` below). The result is committed as data
and read by `gpulint/model/values/torch_signatures.py`.

Run it from the repository root:

    python3 scripts/gen_torch_signatures.py           # (re)write the table
    python3 scripts/gen_torch_signatures.py --check   # exit 1 if the committed table is stale
    python3 scripts/gen_torch_signatures.py --report  # also print counts and unclassified names

`--torch-dir DIR` points at a torch package directory other than the one
`importlib.util.find_spec("torch")` finds (that call locates torch without
running it).

What is read, and how names are bound (each module's top level is walked in
order, the way Python would run it, through `if`/`try` blocks):

* `def` statements (the `@overload`-decorated ones only, when a name has
  any; a `# type: (...) -> Ret` comment counts as an annotation),
  `from <known module> import ...` (also `*`, which honours a literal
  `__all__` and, in a stub, re-exports only `import x as x`),
  `name = other_name`, `name = boolean_dispatch(if_true=f, if_false=g)`
  (f's and g's overloads) and `name = _add_docstr(func, doc)`; where `func`
  is not in a stub (torch.linalg, torch.fft, torch.special wrap C functions
  that have none), the `name(args) -> Ret` line of `doc` stands in for the
  signature.
* `torch/__init__.py`'s loop over `dir(_C._VariableFunctions)` binds every
  non-dunder name of that stub in `torch`.
* A later binding replaces an earlier one, except that a binding without a
  return annotation never replaces one with (`Tensor.split` in
  `torch/_tensor.py` is unannotated; TensorBase's stub says what it returns).
* Tensor members come from `class TensorBase` in `torch/_C/__init__.pyi`, then
  `class Tensor` in `torch/_tensor.py`; annotated class attributes and
  `@property`s are attributes, every other `def` is a method.
* Only functions are listed: classes (`torch.device`, `torch.Generator`) and
  other values are not in the table.

Overloads: a name's kind is the union of its overloads' kinds. Where they
disagree, the table also lists each overload's positional-argument range
(`self` excluded, keyword-only parameters excluded, `*args` makes
`max_args` null) so that the reader can pick by argument count. A
positional parameter annotated `None` ends the range: `Tensor.type(self,
dtype: None = None, ...) -> str` is the no-argument form.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

# --------------------------------------------------------------------------
# The one mapping of annotation names to kinds.
#
# A name is looked up by its last dotted part (`torch.Tensor` -> `Tensor`,
# `builtins.bool` -> `bool`). Names not here are resolved through the module's
# own aliases (`_size: TypeAlias = ...`, `S = TypeVar("S", bound=Tensor)`) and
# imports from the other stub modules read; what is still unknown is "other".
# Structure is handled in `Module.classify`: `Optional[X]` / `X | None` is the
# kind of X (the None arm only says "absent"), other unions are the set of
# their arms, `tuple`/`list`/`Sequence` of tensors is "tensors", another `list`
# is "list", `Literal[...]` takes its values' kinds, `TypeIs[...]` /
# `TypeGuard[...]` are bools, `torch.return_types.X` is X's tuple base, `Self`
# in a Tensor class is "tensor", and any other subscripted generic is "other".
# --------------------------------------------------------------------------
NAME_KINDS: Dict[str, str] = {
    # tensors, including the legacy typed-tensor classes
    **{
        name: "tensor"
        for name in (
            "Tensor", "TensorBase", "Parameter", "UninitializedParameter", "FloatTensor",
            "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
            "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
        )
    },
    # Python numbers (bool included) and their symbolic / stub-alias spellings
    **{
        name: "number"
        for name in (
            "int", "float", "bool", "complex", "Number", "SymInt", "SymFloat", "SymBool",
            "_int", "_float", "_bool", "_complex", "IntLikeType", "FloatLikeType",
            "BoolLikeType", "TypeIs", "TypeGuard",
        )
    },
    "str": "str",
    "_str": "str",
    "list": "list",
    "List": "list",
    "Size": "size",
    "dtype": "dtype",
    "_dtype": "dtype",
    "device": "device",
    "_device": "device",
    "None": "none",
    "NoneType": "none",
    **{
        name: "storage"
        for name in ("Storage", "TypedStorage", "UntypedStorage", "StorageBase", "_StorageBase", "_LegacyStorage")
    },
    "Generator": "generator",
}

KINDS: Tuple[str, ...] = (
    "tensor", "tensors", "number", "str", "list", "size", "dtype", "device", "none",
    "storage", "generator", "other",
)
SEQUENCE_GENERICS = frozenset({"tuple", "Tuple", "list", "List", "Sequence", "MutableSequence"})
LIST_GENERICS = frozenset({"list", "List"})
TYPING_MODULES = frozenset({"typing", "typing_extensions", "collections.abc", "builtins", "types"})
# Names that are "other" on purpose; --report lists every *other* name that fell through.
KNOWN_OTHER = frozenset({
    "Any", "object", "NoReturn", "Never", "ndarray", "Callable", "tuple", "type", "bytes", "layout",
    "memory_format", "qscheme", "Stream", "Event",
})
KNOWN_OTHER_GENERICS = frozenset({
    "Callable", "Iterator", "Iterable", "Generator", "AsyncIterator", "dict", "Dict", "Mapping",
    "MutableMapping", "DefaultDict", "OrderedDict", "set", "Set", "frozenset", "AbstractContextManager",
    "ContextManager",
})

# The modules read: (qualified name, candidate paths under the torch dir).
# The first existing path is used; missing modules are skipped.
SOURCES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("torch", ("__init__.py",)),
    ("torch._C", ("_C/__init__.pyi",)),
    ("torch._C._VariableFunctions", ("_C/_VariableFunctions.pyi",)),
    ("torch._C._nn", ("_C/_nn.pyi",)),
    ("torch._tensor", ("_tensor.py",)),
    ("torch.functional", ("functional.py",)),
    ("torch.nn.functional", ("nn/functional.pyi", "nn/functional.py")),
    ("torch.linalg", ("linalg/__init__.py",)),
    ("torch.fft", ("fft/__init__.py",)),
    ("torch.special", ("special/__init__.py",)),
    ("torch.cuda", ("cuda/__init__.py",)),
    ("torch.cuda.memory", ("cuda/memory.py",)),
    ("torch.cuda.random", ("cuda/random.py",)),
    ("torch.random", ("random.py",)),
    ("torch.serialization", ("serialization.py",)),
    # read only to resolve annotations, never emitted
    ("torch.types", ("types.py",)),
    ("torch.return_types", ("return_types.pyi", "_C/return_types.pyi")),
    ("torch.nn.common_types", ("nn/common_types.pyi", "nn/common_types.py")),
)
# The namespaces whose functions the table lists, as `<module>.<name>`.
EMITTED_MODULES: Tuple[str, ...] = (
    "torch", "torch.functional", "torch.nn.functional", "torch.linalg", "torch.fft",
    "torch.special", "torch.cuda", "torch.cuda.memory", "torch.cuda.random", "torch.random",
    "torch.serialization",
)
TENSOR_CLASSES: Tuple[Tuple[str, str], ...] = (("torch._C", "TensorBase"), ("torch._tensor", "Tensor"))

# The signature line of a docstring: `[linalg.]name(args[, dim=(-2, -1)]) [-> Ret][:]`.
DOC_SIGNATURE = (
    r"^\s*(?:[A-Za-z_][\w.]*\.)?{name}\((?P<args>[^()]*(?:\([^()]*\)[^()]*)*)\)"
    r"\s*(?:->\s*(?P<ret>.+?))?\s*:?\s*$"
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "gpulint" / "model" / "values" / "torch_signatures.json"
GENERATED_BY = "scripts/gen_torch_signatures.py"

Kinds = FrozenSet[str]


@dataclass(frozen=True)
class Sig:
    """One overload: its positional-argument range and its return kinds (None: unannotated)."""

    min_args: int
    max_args: Optional[int]
    kinds: Optional[Kinds]


Binding = Tuple[Sig, ...]


def annotated(binding: Binding) -> bool:
    return any(sig.kinds is not None for sig in binding)


def rebind(namespace: Dict[str, Binding], name: str, binding: Binding) -> None:
    """Bind `name`, unless that would replace an annotated binding with an unannotated one."""
    old = namespace.get(name)
    if old is not None and annotated(old) and not annotated(binding):
        return
    namespace[name] = binding


def collapse(kinds: Kinds) -> Kinds:
    """`X | None` is X: drop the None arm of a union that has others."""
    return kinds - {"none"} if len(kinds) > 1 and "none" in kinds else kinds


def dotted(node: ast.expr) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def decorator_names(fn: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> List[str]:
    return [dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in fn.decorator_list]


def flat_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements in order, entering if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from flat_statements(stmt.body)
            yield from flat_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *[h.body for h in stmt.handlers], stmt.orelse, stmt.finalbody):
                yield from flat_statements(block)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from flat_statements(stmt.body)
        else:
            yield stmt


class World:
    """The parsed modules of one torch installation, and what fell through classification."""

    def __init__(self, torch_dir: Path) -> None:
        self.torch_dir = torch_dir
        self.modules: Dict[str, Module] = {}
        self.unclassified: Counter[str] = Counter()
        for qualname, candidates in SOURCES:
            for rel in candidates:
                path = torch_dir / rel
                if path.is_file():
                    self.modules[qualname] = Module(self, qualname, path)
                    break

    def namespace(self, qualname: str) -> Dict[str, Binding]:
        module = self.modules.get(qualname)
        return module.namespace() if module else {}


class Module:
    """One parsed stub or source file: its imports, type aliases and name bindings."""

    def __init__(self, world: World, qualname: str, path: Path) -> None:
        self.world = world
        self.qualname = qualname
        text = path.read_text(encoding="utf-8")
        try:  # `# type: (...) -> Ret` comments count as annotations
            self.tree = ast.parse(text, filename=str(path), type_comments=True)
        except SyntaxError:  # a misplaced type comment
            self.tree = ast.parse(text, filename=str(path))
        self.is_stub = path.suffix == ".pyi"
        package = qualname if path.name.startswith("__init__.") else qualname.rpartition(".")[0]
        self.package = package
        self.imports: Dict[str, Tuple[str, str]] = {}  # local name -> (module, attribute)
        self.aliases: Dict[str, ast.expr] = {}  # type aliases and TypeVar bounds
        self.all_names: Optional[List[str]] = None
        self._namespace: Optional[Dict[str, Binding]] = None
        self._partial: Optional[Dict[str, Binding]] = None  # while the namespace is being built
        self._stub_imports: Set[str] = set()  # names a stub imports without re-exporting them
        self._scan()

    # ---- imports, aliases, __all__ ----------------------------------------
    def absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".")
        base = parts[: len(parts) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def _scan(self) -> None:
        for stmt in flat_statements(self.tree.body):
            if isinstance(stmt, ast.ImportFrom):
                source = self.absolute(stmt)
                for alias in stmt.names:
                    if alias.name != "*":
                        self.imports[alias.asname or alias.name] = (source, alias.name)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if stmt.value is not None and "TypeAlias" in ast.unparse(stmt.annotation):
                    self.aliases[stmt.target.id] = stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and target.id == "__all__":
                    self.all_names = self._literal_names(stmt.value) or []
                elif isinstance(target, ast.Name):
                    self._maybe_alias(target.id, stmt.value)
            elif isinstance(stmt, ast.AugAssign) and dotted(stmt.target) == "__all__":
                self.all_names = (self.all_names or []) + self._literal_names(stmt.value)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                func = dotted(stmt.value.func)
                if func in ("__all__.append", "__all__.extend") and stmt.value.args:
                    arg = stmt.value.args[0]
                    names = [arg.value] if isinstance(arg, ast.Constant) else self._literal_names(arg)
                    self.all_names = (self.all_names or []) + [n for n in names if isinstance(n, str)]
            elif isinstance(stmt, getattr(ast, "TypeAlias", ())):  # `type X = ...` (3.12+)
                self.aliases[stmt.name.id] = stmt.value  # type: ignore[attr-defined]

    @staticmethod
    def _literal_names(node: ast.expr) -> List[str]:
        if isinstance(node, (ast.List, ast.Tuple)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []

    def _maybe_alias(self, name: str, value: ast.expr) -> None:
        """`X = TypeVar("X", bound=B)` and `X = Union[...]`-style aliases."""
        if isinstance(value, ast.Call) and dotted(value.func) in ("TypeVar", "typing.TypeVar"):
            bound = next((k.value for k in value.keywords if k.arg == "bound"), None)
            self.aliases[name] = bound if bound is not None else ast.Name("Any")
        elif isinstance(value, ast.Subscript) or (
            isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr)
        ):
            self.aliases[name] = value
        elif isinstance(value, (ast.Name, ast.Attribute)) and name != dotted(value):
            self.aliases[name] = value

    # ---- annotations -> kinds ---------------------------------------------
    def origin(self, name: str) -> Tuple[str, str]:
        """(module, original name) that a bare local name comes from ('' when local)."""
        return self.imports.get(name, ("", name))

    def classify(self, node: Optional[ast.expr], self_kind: Optional[str] = None, depth: int = 0) -> Kinds:
        """The kinds an annotation expression stands for."""
        if node is None or depth > 20:
            return frozenset({"other"})
        if isinstance(node, ast.Constant):
            if node.value is None:
                return frozenset({"none"})
            if isinstance(node.value, str):
                try:
                    parsed = ast.parse(node.value, mode="eval").body
                except SyntaxError:
                    return self._unknown(node.value)
                return self.classify(parsed, self_kind, depth + 1)
            return self._unknown(repr(node.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            arms = self.classify(node.left, self_kind, depth + 1) | self.classify(node.right, self_kind, depth + 1)
            return collapse(arms)
        if isinstance(node, ast.Tuple):  # `-> (Tensor, Tensor)` in docstring signatures
            return self._sequence(node.elts, False, self_kind, depth)
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            return self._classify_name(name, self_kind, depth) if name else self._unknown(ast.unparse(node))
        if isinstance(node, ast.Subscript):
            return self._classify_generic(node, self_kind, depth)
        return self._unknown(ast.unparse(node))

    def _unknown(self, text: str) -> Kinds:
        if text.rsplit(".", 1)[-1] not in KNOWN_OTHER:
            self.world.unclassified[text] += 1
        return frozenset({"other"})

    def _classify_name(self, name: str, self_kind: Optional[str], depth: int) -> Kinds:
        parts = name.split(".")
        module, original = self.origin(name) if len(parts) == 1 else (".".join(parts[:-1]), parts[-1])
        if module.endswith("return_types"):
            return self._return_type(original)
        if original == "Self" and self_kind:
            return frozenset({self_kind})
        if original == "Generator" and module in TYPING_MODULES:
            return frozenset({"other"})
        if original in NAME_KINDS:
            return frozenset({NAME_KINDS[original]})
        if len(parts) == 1:
            if name in self.aliases:
                return self.classify(self.aliases[name], self_kind, depth + 1)
            source = self.world.modules.get(module)
            if source is not None and source is not self:
                return source._classify_name(original, self_kind, depth + 1)
        return self._unknown(name)

    def _return_type(self, name: str) -> Kinds:
        """A `torch.return_types.<name>` named tuple: the kind of its tuple base."""
        module = self.world.modules.get("torch.return_types")
        if module is not None:
            for stmt in module.tree.body:
                if isinstance(stmt, ast.ClassDef) and stmt.name == name and stmt.bases:
                    return module.classify(stmt.bases[0])
        return self._unknown(f"torch.return_types.{name}")

    def _classify_generic(self, node: ast.Subscript, self_kind: Optional[str], depth: int) -> Kinds:
        base = dotted(node.value) or ""
        parts = base.split(".")
        original = self.origin(parts[0])[1] if len(parts) == 1 else parts[-1]
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if original in ("Optional", "Union"):
            arms = frozenset().union(*(self.classify(a, self_kind, depth + 1) for a in args))
            return collapse(arms | ({"none"} if original == "Optional" else set()))
        if original == "Literal":
            return collapse(frozenset().union(*(self._literal_kind(a) for a in args)))
        if original in ("Annotated", "Final", "ClassVar", "Required", "NotRequired"):
            return self.classify(args[0], self_kind, depth + 1)
        if original in ("TypeIs", "TypeGuard"):
            return frozenset({"number"})
        if original in SEQUENCE_GENERICS:
            return self._sequence(args, original in LIST_GENERICS, self_kind, depth)
        if original in KNOWN_OTHER_GENERICS:
            return frozenset({"other"})  # Callable[...], Iterator[...], dict[...], ...: other by design
        return self._unknown(ast.unparse(node))

    def _sequence(self, elts: Sequence[ast.expr], is_list: bool, self_kind: Optional[str], depth: int) -> Kinds:
        items = [e for e in elts if not (isinstance(e, ast.Constant) and e.value is Ellipsis)]
        kinds = frozenset().union(*(self.classify(e, self_kind, depth + 1) for e in items)) if items else frozenset()
        if kinds and kinds <= {"tensor", "tensors"}:
            return frozenset({"tensors"})
        return frozenset({"list" if is_list else "other"})

    @staticmethod
    def _literal_kind(node: ast.expr) -> Kinds:
        value = node.value if isinstance(node, ast.Constant) else object()
        if value is None:
            return frozenset({"none"})
        if isinstance(value, (bool, int, float, complex)):
            return frozenset({"number"})
        return frozenset({"str" if isinstance(value, str) else "other"})

    # ---- signatures ---------------------------------------------------------
    def signature(self, fn: Union[ast.FunctionDef, ast.AsyncFunctionDef], method: bool,
                  self_kind: Optional[str] = None) -> Sig:
        """The positional-argument range and return kinds of one `def`."""
        positional = [*fn.args.posonlyargs, *fn.args.args]
        required = len(positional) - len(fn.args.defaults)
        if method and "staticmethod" not in decorator_names(fn) and positional:
            positional, required = positional[1:], required - 1
        max_args: Optional[int] = None if fn.args.vararg else len(positional)
        for index, param in enumerate(positional):
            if index >= required and isinstance(param.annotation, ast.Constant) and param.annotation.value is None:
                max_args = index
                break
        returns = fn.returns
        if returns is None and fn.type_comment:
            try:
                returns = ast.parse(fn.type_comment, mode="func_type").returns
            except SyntaxError:
                returns = None
        kinds = self.classify(returns, self_kind) if returns is not None else None
        return Sig(max(required, 0), max_args, kinds)

    def binding(self, defs: Sequence[Union[ast.FunctionDef, ast.AsyncFunctionDef]], method: bool = False,
                self_kind: Optional[str] = None) -> Binding:
        overloads = [d for d in defs if any(n.rsplit(".", 1)[-1] == "overload" for n in decorator_names(d))]
        return tuple(self.signature(d, method, self_kind) for d in (overloads or defs))

    def docstring_binding(self, name: str, doc: ast.expr) -> Binding:
        """The binding that the `name(args) -> Ret` line of an `_add_docstr` docstring describes."""
        text = "\n".join(
            n.value for n in ast.walk(doc) if isinstance(n, ast.Constant) and isinstance(n.value, str)
        )
        for match in re.finditer(DOC_SIGNATURE.format(name=re.escape(name)), text, re.M):
            returns = f" -> {match['ret']}" if match["ret"] else ""
            # `bool pivot=True` is not Python: then keep the return alone
            for params in (match["args"], "*args, **kwargs"):
                try:
                    fn = ast.parse(f"def _({params}){returns}: ...").body[0]
                except SyntaxError:
                    continue
                assert isinstance(fn, ast.FunctionDef)
                return (self.signature(fn, method=False),)
        return (Sig(0, None, None),)

    # ---- the namespace ----------------------------------------------------
    def exports(self) -> Dict[str, Binding]:
        """What `from <this module> import *` binds."""
        namespace = self.namespace()
        if self.all_names is not None:
            return {n: namespace[n] for n in self.all_names if n in namespace}
        return {n: b for n, b in namespace.items() if not n.startswith("_") and n not in self._stub_imports}

    def resolve(self, node: ast.expr, namespace: Dict[str, Binding]) -> Optional[Binding]:
        """The binding a reference such as `f`, `_nn.gelu` or `torch._C._nn.gelu` names."""
        name = dotted(node)
        if name is None:
            return None
        if "." not in name:
            return namespace.get(name)
        head, _, attr = name.rpartition(".")
        first, _, rest = head.partition(".")
        module, original = self.origin(first)
        target = (f"{module}.{original}" if module else original) + (f".{rest}" if rest else "")
        if target == self.qualname:
            return namespace.get(attr)
        source = self.world.modules.get(target)
        return source.namespace().get(attr) if source is not None and source is not self else None

    def namespace(self) -> Dict[str, Binding]:
        """The module's function bindings, walking its top level in order."""
        if self._namespace is not None:
            return self._namespace
        if self._partial is not None:
            # an import cycle (torch/__init__.py star-imports torch.functional, which names
            # `torch.istft`): what is bound so far, as at run time
            return self._partial
        namespace: Dict[str, Binding] = {}
        self._partial = namespace
        defs: Dict[str, List[Union[ast.FunctionDef, ast.AsyncFunctionDef]]] = {}
        statements = list(flat_statements(self.tree.body))
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(stmt.name, []).append(stmt)
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                rebind(namespace, stmt.name, self.binding(defs[stmt.name]))
            elif isinstance(stmt, ast.ImportFrom):
                self._bind_import(stmt, namespace)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self._bind_assign(stmt.targets[0].id, stmt.value, namespace)
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        namespace.pop(target.id, None)
            elif isinstance(stmt, ast.For) and "_VariableFunctions" in ast.unparse(stmt.iter):
                for name, binding in self.world.namespace("torch._C._VariableFunctions").items():
                    if not name.startswith("__"):
                        rebind(namespace, name, binding)
        self._namespace = namespace
        self._partial = None
        return namespace

    def _bind_import(self, stmt: ast.ImportFrom, namespace: Dict[str, Binding]) -> None:
        source = self.world.modules.get(self.absolute(stmt))
        if source is None or source is self:
            return
        for alias in stmt.names:
            if alias.name == "*":
                for name, binding in source.exports().items():
                    rebind(namespace, name, binding)
            elif alias.name in source.namespace():
                rebind(namespace, alias.asname or alias.name, source.namespace()[alias.name])
                if self.is_stub and alias.asname != alias.name:  # PEP 484: only `import x as x` re-exports
                    self._stub_imports.add(alias.asname or alias.name)

    def _bind_assign(self, name: str, value: ast.expr, namespace: Dict[str, Binding]) -> None:
        """`name = other`, `name = _add_docstr(func, doc)`, `name = boolean_dispatch(...)`."""
        if isinstance(value, (ast.Name, ast.Attribute)):
            binding = self.resolve(value, namespace)
            if binding is not None:
                rebind(namespace, name, binding)
            return
        if not isinstance(value, ast.Call):
            return
        func = dotted(value.func) or ""
        if func.endswith("boolean_dispatch"):
            # `boolean_dispatch(..., if_true=f, if_false=g)` calls f or g: both are its overloads
            keywords = [k.value for k in value.keywords if k.arg in ("if_true", "if_false")]
            branches = [self.resolve(k, namespace) for k in keywords]
            if branches and all(b is not None for b in branches):
                rebind(namespace, name, tuple(sig for b in branches if b is not None for sig in b))
        elif func.endswith("_add_docstr") and len(value.args) >= 2:
            binding = self.resolve(value.args[0], namespace)
            if binding is None:
                binding = self.docstring_binding(name, value.args[1])
            rebind(namespace, name, binding)


# ---- Tensor members --------------------------------------------------------------
Members = Dict[str, Tuple[str, Binding]]  # name -> ("method" | "attribute", binding)


def class_members(module: Module, class_name: str, inherited: Members) -> Members:
    """The members of `class <class_name>` in `module`, layered over `inherited`."""
    members = dict(inherited)
    cls = next((s for s in module.tree.body if isinstance(s, ast.ClassDef) and s.name == class_name), None)
    if cls is None:
        return members
    defs: Dict[str, List[Union[ast.FunctionDef, ast.AsyncFunctionDef]]] = {}
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(stmt.name, []).append(stmt)

    def put(name: str, section: str, binding: Binding) -> None:
        old = members.get(name)
        if old is not None and annotated(old[1]) and not annotated(binding):
            return
        members[name] = (section, binding)

    def lookup(node: ast.expr) -> Optional[Tuple[str, Binding]]:
        ref = dotted(node) or ""
        if "." not in ref or ref.rsplit(".", 2)[-2] in ("TensorBase", class_name):
            return members.get(ref.rsplit(".", 1)[-1])
        return None

    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [n.rsplit(".", 1)[-1] for n in decorator_names(stmt)]
            if "setter" in decorators or "deleter" in decorators:
                continue
            if "property" in decorators or "cached_property" in decorators or "getter" in decorators:
                sig = module.signature(stmt, method=True, self_kind="tensor")
                put(stmt.name, "attribute", (Sig(0, 0, sig.kinds),))
            else:
                put(stmt.name, "method", module.binding(defs[stmt.name], method=True, self_kind="tensor"))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            put(stmt.target.id, "attribute", (Sig(0, 0, module.classify(stmt.annotation, "tensor")),))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            # `name = other`, `name = _add_docstr(TensorBase.other, doc)`, `name = wrapper(TensorBase.other)`
            if isinstance(value, ast.Call) and value.args and (
                (dotted(value.func) or "").endswith("_add_docstr") or len(value.args) == 1
            ):
                value = value.args[0]
            found = lookup(value)
            if found is not None:
                put(stmt.targets[0].id, *found)
    return members


# ---- the table ---------------------------------------------------------------------
KindValue = Union[str, List[str]]


def kind_value(kinds: Kinds) -> KindValue:
    return next(iter(kinds)) if len(kinds) == 1 else sorted(kinds)


def summarize(binding: Binding) -> Tuple[KindValue, Optional[List[Dict[str, object]]]]:
    """(the kind or sorted kinds of a binding, its per-overload records when they disagree)."""
    sigs = [s for s in binding if s.kinds is not None]
    if not sigs:
        return "other", None
    kinds = frozenset().union(*(s.kinds for s in sigs if s.kinds is not None))
    records = None
    if len({s.kinds for s in sigs}) > 1:
        unique = {(s.min_args, s.max_args, tuple(sorted(s.kinds or ()))) for s in sigs}
        ordered = sorted(unique, key=lambda r: (r[0], r[1] if r[1] is not None else sys.maxsize, r[2]))
        records = [
            {"min_args": lo, "max_args": hi, "kind": kind_value(frozenset(k))} for lo, hi, k in ordered
        ]
    return kind_value(kinds), records


def torch_version(torch_dir: Path) -> str:
    """`torch/version.py`'s `__version__`, read without importing torch."""
    version_file = torch_dir / "version.py"
    if version_file.is_file():
        for stmt in ast.parse(version_file.read_text(encoding="utf-8")).body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(dotted(t) == "__version__" for t in targets) and isinstance(stmt.value, ast.Constant):
                    return str(stmt.value.value)
    from importlib import metadata

    return metadata.version("torch")


def find_torch_dir() -> Optional[Path]:
    """The installed torch package directory, found without running torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def build_table(torch_dir: Path, world: Optional[World] = None) -> Dict[str, object]:
    """The whole table for the torch installed in `torch_dir`."""
    world = world or World(torch_dir)
    functions: Dict[str, KindValue] = {}
    overloads: Dict[str, List[Dict[str, object]]] = {}
    for qualname in EMITTED_MODULES:
        for name, binding in world.namespace(qualname).items():
            if name.startswith("__"):
                continue
            functions[f"{qualname}.{name}"], records = summarize(binding)
            if records:
                overloads[f"{qualname}.{name}"] = records
    members: Members = {}
    for module_name, class_name in TENSOR_CLASSES:
        module = world.modules.get(module_name)
        if module is not None:
            members = class_members(module, class_name, members)
    methods: Dict[str, KindValue] = {}
    attributes: Dict[str, KindValue] = {}
    for name, (section, binding) in members.items():
        value, records = summarize(binding)
        (attributes if section == "attribute" else methods)[name] = value
        if records and section == "method":
            overloads[f"tensor.{name}"] = records
    return {
        "torch_version": torch_version(torch_dir),
        "generated_by": GENERATED_BY,
        "functions": dict(sorted(functions.items())),
        "tensor_methods": dict(sorted(methods.items())),
        "tensor_attributes": dict(sorted(attributes.items())),
        "overloads": dict(sorted(overloads.items())),
    }


def render(table: Dict[str, object]) -> str:
    """The JSON text: sorted keys, one entry per line inside each section."""
    lines = ["{"]
    keys = sorted(table)
    for i, key in enumerate(keys):
        value = table[key]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(value, dict):
            lines.append(f"{json.dumps(key)}: {{")
            entries = sorted(value.items())
            for j, (name, entry) in enumerate(entries):
                tail = "," if j < len(entries) - 1 else ""
                lines.append(f"  {json.dumps(name)}: {json.dumps(entry, sort_keys=True)}{tail}")
            lines.append("}" + comma)
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def diff_summary(old: Dict[str, object], new: Dict[str, object], limit: int = 5) -> List[str]:
    """Short lines saying how the committed table `old` differs from `new`."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if not (isinstance(a, dict) and isinstance(b, dict)):
            out.append(f"{key}: {a!r} (committed) != {b!r} (installed torch)")
            continue
        added = sorted(set(b) - set(a))
        removed = sorted(set(a) - set(b))
        changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
        out.append(f"{key}: {len(added)} added, {len(removed)} removed, {len(changed)} changed")
        out += [f"  + {k}: {json.dumps(b[k])}" for k in added[:limit]]
        out += [f"  - {k}: {json.dumps(a[k])}" for k in removed[:limit]]
        out += [f"  ~ {k}: {json.dumps(a[k])} -> {json.dumps(b[k])}" for k in changed[:limit]]
    return out


def report(table: Dict[str, object], world: World) -> List[str]:
    """Counts per section and per kind, and the annotation names that fell through to "other"."""
    out = []
    for section in ("functions", "tensor_methods", "tensor_attributes", "overloads"):
        entries = table[section]
        assert isinstance(entries, dict)
        if section == "overloads":
            out.append(f"{section}: {len(entries)}")
            continue
        counts = Counter(v if isinstance(v, str) else "[" + ",".join(v) + "]" for v in entries.values())
        out.append(f"{section}: {len(entries)} (" + ", ".join(f"{k} {n}" for k, n in counts.most_common()) + ")")
    if world.unclassified:
        out.append("unclassified annotations (-> other): " + ", ".join(
            f"{name} x{n}" for name, n in world.unclassified.most_common()))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--torch-dir", type=Path, help="the torch package directory (default: the installed one)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the table to write or check")
    parser.add_argument("--check", action="store_true", help="exit 1 if the table differs from the installed torch's")
    parser.add_argument("--report", action="store_true", help="print counts per kind and unclassified names")
    args = parser.parse_args(argv)
    torch_dir = args.torch_dir or find_torch_dir()
    if torch_dir is None or not (torch_dir / "__init__.py").is_file():
        print("torch is not installed (or --torch-dir is not a torch package directory)", file=sys.stderr)
        return 2
    world = World(torch_dir)
    table = build_table(torch_dir, world)
    text = render(table)
    if args.report:
        print("\n".join(report(table, world)))
    if args.check:
        try:
            committed = json.loads(args.output.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{args.output}: cannot read the committed table ({exc})", file=sys.stderr)
            return 1
        if committed != table:
            print(f"{args.output} is stale for torch {table['torch_version']}:")
            print("\n".join(diff_summary(committed, table)))
            print(f"regenerate it with: python3 {GENERATED_BY}")
            return 1
        if args.output.read_text(encoding="utf-8") != text:
            print(f"{args.output}: same data, different layout; regenerate it with: python3 {GENERATED_BY}")
            return 1
        print(f"{args.output} is up to date with torch {table['torch_version']}")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} (torch {table['torch_version']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
