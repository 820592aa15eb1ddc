"""Parameters that the project never sets, and the branches they switch off.

A layer copied from a library keeps every option of the original, and the
project that copied it builds it one way: fairseq's `MultiheadAttention`
has `add_zero_attn=False`, and nothing in the project passes it, so the
code under `if self.add_zero_attn:` never runs; Koopa's `Model(configs)`
never gets `multistep=True`, so `KPLayerApprox() if self.multistep else
KPLayer()` never builds a `KPLayerApprox`. What a strict reviewer does not
count there is dead code, one `if` deep.

A parameter is fixed when the project shows every way its function is
called:

- the function is a plain function, or `__init__` (called by its class's
  name), or a method (called as `<object>.name(...)`); not `forward` or
  another method that PyTorch or a framework calls, not a decorated one,
  and not `__init__` of a class that the project subclasses (a subclass
  may pass the value through `super().__init__`);
- the function's name occurs only as what a call calls (or in
  `isinstance`, or as `Class.attribute`), never as a value handed on
  (`partial(Layer, ...)`, a registry, a string naming it);
- every call that reached code makes passes the parameter the same
  constant (or a name that the caller's own fixed parameters fix, or a
  local the caller binds once, to a constant: `writer = None`), or
  leaves it to its default; none splats `*args` or `**kwargs`;
- the parameter's name occurs in no config, script or notebook of the
  project (a config may set it by name; a README's prose sets nothing).

Its value is then known inside the function (where the function does not
assign the name again) and, for `__init__`, in every method of the class
through `self.<attr>` when `__init__` stores it there (`self.hard = hard`)
and nothing else in the project assigns that attribute.

An `if` (or `... if ... else ...`) whose test these values decide has one
dead branch: a test of such names and constants with `not`, `and`, `or`,
`is`, `is not`, `==`, `!=`, `<`, `<=`, `>`, `>=`. Anything it cannot tell
is live.
"""

from __future__ import annotations

import ast
import operator
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from gpulint.model.index.nodes import FUNCS, parameter_defaults
from gpulint.model.index.order import end_of, start_of, walk_scope
from gpulint.model.values.attributes import is_self_attr
from gpulint.model.index.walk import child_nodes, walk

UNKNOWN = object()
_ABSENT = object()  # the parameter was not passed: its default
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
# called by PyTorch or a framework, never by name: their callers cannot be seen
_IMPLICIT = frozenset({"forward", "training_step", "validation_step", "test_step", "predict_step",
                       "backward", "symbolic"})
_REQUIRED = object()  # a parameter without a default
_PROSE = (".md", ".rst", ".txt")
_HARMLESS_CALLS = frozenset({"isinstance", "issubclass", "type", "super"})


class CallSites:
    """The calls of one name in one parsed file, and whether the name has
    other uses there (read from `FileCalls`)."""

    def __init__(self, calls: List[ast.Call], other_uses: bool) -> None:
        self.calls = calls
        self.other_uses = other_uses


class FileCalls:
    """One walk over a file: its calls by the name they call, and every
    other use of a name (a value handed on, a string naming it)."""

    def __init__(self, tree: ast.Module) -> None:
        self.calls: Dict[str, List[ast.Call]] = {}
        self.uses: Dict[str, List[int]] = {}
        self.strings: Set[str] = set()
        # attributes stored on something other than `self`, and names a `setattr`/`delattr` gives
        self.stored_elsewhere: Set[str] = set()
        harmless: Set[int] = set()
        for n in walk(tree):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name is not None:
                    self.calls.setdefault(name, []).append(n)
                    harmless.add(id(f))
                if isinstance(f, ast.Name) and f.id in _HARMLESS_CALLS:
                    harmless.update(id(a) for a in n.args)
                    harmless.update(id(e) for a in n.args if isinstance(a, ast.Tuple) for e in a.elts)
                elif isinstance(f, ast.Name) and f.id in ("setattr", "delattr"):
                    self.stored_elsewhere.update(a.value for a in n.args
                                                 if isinstance(a, ast.Constant) and isinstance(a.value, str))
            elif isinstance(n, ast.Attribute):
                if isinstance(n.value, ast.Name) and n.attr not in ("__init__", "__new__", "__call__"):
                    harmless.add(id(n.value))  # `Layer.helper(...)`, `Layer.CONSTANT`
                if not isinstance(n.ctx, ast.Store):
                    self.uses.setdefault(n.attr, []).append(id(n))
                if isinstance(n.ctx, (ast.Store, ast.Del)) and not is_self_attr(n):
                    self.stored_elsewhere.add(n.attr)
            elif isinstance(n, ast.Name):
                self.uses.setdefault(n.id, []).append(id(n))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                self.strings.update(n.value.split("."))  # `"Layer"` in a registry, `"pkg.Layer"`
        self._harmless = harmless

    def sites(self, name: str) -> CallSites:
        other = name in self.strings or any(u not in self._harmless for u in self.uses.get(name, ()))
        return CallSites(self.calls.get(name, []), other)


class FixedValues:
    """What the project fixes of a definition's parameters (see the module doc).

    `files_with(word)` gives ("py", key) or ("text", key) for each file of
    the project holding `word`; `parsed(key)` the `PythonFile` of a Python
    file (or None); `reached(node, pf)` whether the definition around a
    call is reached (None: top-level code)."""

    def __init__(self, files_with: Callable[[str], Iterable[Tuple[str, str]]], parsed: Callable[[str], object],
                 reached: Callable[[Optional[ast.AST], object], bool], is_subclassed: Callable[[ast.ClassDef], bool],
                 ) -> None:
        self._files_with = files_with
        self._parsed = parsed
        self._reached = reached
        self._subclassed = is_subclassed
        self._params: Dict[int, Dict[str, object]] = {}
        self._attrs: Dict[int, Dict[str, object]] = {}
        self._files: Dict[str, FileCalls] = {}
        self._stored: Dict[str, bool] = {}

    # ------------------------------------------------------------- branches
    def dead_at(self, pf, chain: List[ast.AST], pos: Tuple[int, int]) -> bool:
        """The code at `pos` (line, 0-based column) lies in a branch that the
        fixed values of its function (the innermost of `chain`, the
        definitions around it) switch off."""
        func = next((d for d in reversed(chain) if isinstance(d, FUNCS)), None)
        if func is None:
            return False
        env = self._env(pf, func)
        return bool(env) and _dead_branch(func, pos, env)

    # ------------------------------------------------------------- values
    def params(self, pf, func: ast.AST) -> Dict[str, object]:
        """name -> value of the parameters of `func` that the project fixes."""
        key = id(func)
        if key not in self._params:
            self._params[key] = {}  # while being worked out (recursion through `reached`)
            self._params[key] = self._fixed_params(pf, func)
        return self._params[key]

    def _fixed_params(self, pf, func) -> Dict[str, object]:
        if any(not _plain(d) for d in func.decorator_list):
            return {}
        outer = pf.parent.get(func)
        method = isinstance(outer, ast.ClassDef)
        if isinstance(outer, FUNCS):
            return {}  # a closure: called through names we do not follow
        name = func.name
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
        if name == "__init__":
            if not method or self._subclassed(outer) or any(not _plain(d) for d in outer.decorator_list):
                return {}
            name = outer.name
        elif name.startswith("__") or name in _IMPLICIT:
            return {}
        args = func.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        wanted: Dict[str, object] = {p: _REQUIRED for p in positional + [a.arg for a in args.kwonlyargs]}
        for a, d in parameter_defaults(func):
            wanted[a.arg] = d.value if isinstance(d, ast.Constant) else UNKNOWN
        if method and not static and positional:
            wanted.pop(positional[0], None)  # self
        wanted = {p: v for p, v in wanted.items() if v is not UNKNOWN and not self._configured(p)}
        if not wanted:
            return {}
        values: Dict[str, object] = {p: _ABSENT for p in wanted}
        seen = False
        for kind, key in self._files_with(name):
            if kind != "py":
                continue
            other = self._parsed(key)
            if other is None:
                return {}
            sites = self._file_calls(key, other).sites(name)
            if sites.other_uses:
                return {}
            for call in sites.calls:
                ctx = _context(other, call)
                if not self._reached(ctx, other):
                    continue
                if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    return {}
                if func.name == "__init__":
                    shift: Optional[int] = 1
                elif method and not static:
                    shift = 1 if isinstance(call.func, ast.Attribute) else None
                else:
                    shift = 0
                seen = True
                for p in list(values):
                    got = _passed(call, p, positional, shift)
                    if got is _ABSENT:
                        got = wanted[p]
                    elif isinstance(got, ast.AST):
                        got = self._value(got, other, ctx)
                    if got is UNKNOWN or got is _REQUIRED or (values[p] is not _ABSENT and values[p] != got):
                        del values[p]
                    else:
                        values[p] = got
                if not values:
                    return {}
        if not seen:
            return {}  # no reached call: dead, or called from where we cannot see
        assigned = _assigned_names(func)
        return {p: v for p, v in values.items() if v is not _ABSENT and p not in assigned}

    def _file_calls(self, key: str, pf) -> FileCalls:
        calls = self._files.get(key)
        if calls is None:
            calls = self._files[key] = FileCalls(pf.tree)
        return calls

    def _env(self, pf, func: ast.AST) -> Dict[str, object]:
        """What the project fixes in `func`: its parameters and its class's `self.<attr>`s."""
        env = dict(self._attributes_for(pf, func))
        env.update(self.params(pf, func))
        return env

    def _value(self, node: ast.AST, pf, ctx: Optional[ast.AST]) -> object:
        """The value of an argument passed in `ctx`: a constant, or a name or
        `self.<attr>` that the project fixes there (`HybridSort(tau=tau,
        hard=hard)` in a `__init__` whose `hard` nothing sets); else UNKNOWN."""
        if isinstance(node, ast.Constant):
            return node.value
        if not isinstance(ctx, FUNCS) or not isinstance(node, (ast.Name, ast.Attribute)):
            return UNKNOWN
        if isinstance(node, ast.Name):
            local = _local_constant(ctx, node.id)
            if local is not UNKNOWN:
                return local
        env = self._env(pf, ctx)
        return evaluate(node, env) if env else UNKNOWN

    def _configured(self, param: str) -> bool:
        """The parameter's name is in a config, script or notebook of the
        project (not in prose: a README's words set nothing)."""
        return any(kind != "py" and not key.lower().endswith(_PROSE) for kind, key in self._files_with(param))

    def _attributes_for(self, pf, func) -> Dict[str, object]:
        """`self.<attr>` -> value, for the attributes that `__init__` of the
        class of method `func` sets from a fixed parameter and nothing else sets."""
        cls = pf.parent.get(func)
        if not isinstance(cls, ast.ClassDef):
            return {}
        key = id(cls)
        if key not in self._attrs:
            self._attrs[key] = {}
            init = next((n for n in cls.body if isinstance(n, FUNCS) and n.name == "__init__"), None)
            if init is not None:
                fixed = self.params(pf, init)
                found: Dict[str, object] = {}
                for n in walk(init):
                    if (isinstance(n, ast.Assign) and len(n.targets) == 1 and is_self_attr(n.targets[0])
                            and isinstance(n.value, ast.Name) and n.value.id in fixed):
                        found["self." + n.targets[0].attr] = fixed[n.value.id]  # type: ignore[attr-defined]
                self._attrs[key] = {k: v for k, v in found.items() if not self._stored_elsewhere(k[5:], cls)}
        return self._attrs[key]

    def _stored_elsewhere(self, attr: str, cls: ast.ClassDef) -> bool:
        """Some code other than one `self.<attr> = <name>` in `cls`'s
        `__init__` assigns the attribute: another `self.<attr> =` in the
        class, `<object>.<attr> =` anywhere in the project, or a `setattr`
        naming it."""
        if sum(1 for n in walk(cls) if isinstance(n, ast.Attribute) and n.attr == attr and is_self_attr(n)
               and isinstance(n.ctx, (ast.Store, ast.Del))) != 1:
            return True
        if attr not in self._stored:
            self._stored[attr] = any(
                (other := self._parsed(key)) is None or attr in self._file_calls(key, other).stored_elsewhere
                for kind, key in self._files_with(attr) if kind == "py")
        return self._stored[attr]


def _plain(decorator: ast.AST) -> bool:
    d = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else ""
    return name in ("staticmethod", "classmethod", "no_grad", "inference_mode", "torch.no_grad")


def _context(pf, call: ast.Call) -> Optional[ast.AST]:
    """The innermost definition around `call` (None: top-level code)."""
    chain = pf.chain(call.lineno)
    return chain[-1] if chain else None


def _passed(call: ast.Call, param: str, positional: List[str], shift: Optional[int]) -> object:
    """What `call` passes for `param`: the argument's node, UNKNOWN, or _ABSENT.
    `shift`: how many leading parameters the call does not pass (`self`);
    None when its arguments cannot be mapped (a bare call of a method's name)."""
    for k in call.keywords:
        if k.arg == param:
            return k.value
    if param in positional:
        if shift is None:
            return UNKNOWN if call.args else _ABSENT
        i = positional.index(param) - shift
        if i < 0:
            return UNKNOWN
        if i < len(call.args):
            return call.args[i]
    return _ABSENT


def _local_constant(func: ast.AST, name: str) -> object:
    """The constant that `func`'s own code binds `name` to, once and only
    once (`writer = None  # SummaryWriter(output_dir)`, then
    `agent.train(..., log_writer=writer)`); UNKNOWN for a parameter, a name
    bound twice or to anything else, or one declared global or nonlocal."""
    args = func.args  # type: ignore[attr-defined]
    if name in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} | {
            a.arg for a in (args.vararg, args.kwarg) if a is not None}:
        return UNKNOWN
    value: object = UNKNOWN
    bound = 0
    for n in walk_scope(func.body):  # type: ignore[attr-defined]
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return UNKNOWN
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound += 1
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and n.targets[0].id == name and isinstance(n.value, ast.Constant):
            value = n.value.value
    return value if bound == 1 else UNKNOWN


def _assigned_names(func: ast.AST) -> Set[str]:
    """Names that `func`'s own code binds again (not nested definitions)."""
    out: Set[str] = set()
    for n in walk_scope(func.body):  # type: ignore[attr-defined]
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def evaluate(test: ast.AST, env: Dict[str, object]) -> object:
    """The value of `test` where `env` fixes names and `self.<attr>`s; UNKNOWN
    when it depends on anything else."""
    if isinstance(test, ast.Constant):
        return test.value
    if isinstance(test, ast.Name):
        return env.get(test.id, UNKNOWN)
    if is_self_attr(test):
        return env.get("self." + test.attr, UNKNOWN)  # type: ignore[attr-defined]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        v = evaluate(test.operand, env)
        return UNKNOWN if v is UNKNOWN else not v
    if isinstance(test, ast.BoolOp):
        values = [evaluate(v, env) for v in test.values]
        if isinstance(test.op, ast.And):
            if any(v is not UNKNOWN and not v for v in values):
                return False
            return True if all(v is not UNKNOWN for v in values) else UNKNOWN
        if any(v is not UNKNOWN and v for v in values):
            return True
        return False if all(v is not UNKNOWN for v in values) else UNKNOWN
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE:
        left, right = evaluate(test.left, env), evaluate(test.comparators[0], env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            return bool(_COMPARE[type(test.ops[0])](left, right))
        except TypeError:
            return UNKNOWN
    return UNKNOWN


def _within(node: ast.AST, pos: Tuple[int, int]) -> bool:
    return start_of(node) <= pos < end_of(node)


def _dead_branch(func: ast.AST, pos: Tuple[int, int], env: Dict[str, object]) -> bool:
    """The code at `pos` lies in an `if` body or `else` (or an arm of `... if
    ... else ...`) of `func`'s own code that `env` switches off."""
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack:
        n = stack.pop()
        if not _within(n, pos):
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # another function's code
        if isinstance(n, (ast.If, ast.IfExp)):
            v = evaluate(n.test, env)
            if v is not UNKNOWN:
                off = n.body if not v else n.orelse
                if any(_within(s, pos) for s in (off if isinstance(off, list) else [off])):
                    return True
        stack.extend(c for c in child_nodes(n) if hasattr(c, "lineno") and hasattr(c, "end_col_offset"))
    return False
