"""Does a piece of code run repeatedly (per step, batch or call of a model),
or once (construction, set-up, export)?

Read from the file, and from what the project's facts say of its functions:

* **Once-only functions**: a node inside a function (or a function nested in
  one) named `__init__`, `__post_init__`, `_init_weights`,
  `reset_parameters`, `init*` / `_init*`, `setup*` / `_setup*`, `export*`,
  `fuse*`, `load_model*` / `load_weights*` / `load_state_dict*` /
  `load_checkpoint*` / `load_pretrained*` or `*dummy*` never runs repeatedly,
  but a method (not a dunder nor `*dummy*`) its class's `forward` calls in a
  plain statement of its body (StyleTTS's `initialize_decoder_states`), and
  the `__init__` of a class that a layer of the project builds on every call
  (`CallFacts.built_per_call`: the Informer family's `TriangularCausalMask`).
* **Export stand-ins**: the `forward` of an autograd Function that defines
  `symbolic` and draws random numbers is a placeholder run while an ONNX
  export traces the model (YOLO's `ORT_NMS`).
* **Trace and export functions**: a function that traces or exports a model
  whenever it runs (`torch.jit.trace`, `torch.onnx.export`,
  `torch.export.export`, not under an `if` or a loop of its own) is a one-off
  like `export*`: even if a callback calls it from a step loop, it does so
  under a guard, and a trace costs far more than anything it builds.
* **Once-only guards**: a lazily cached value, built under
  `if not hasattr(...)`, `if len(...) == 0` (optimizer state),
  `if self.<attr> is None`, or stored as `cache[key] = ...` under
  `if key not in cache:` (the same mapping and key), is built once, and so
  is code under `if token == 0:` where `token` counts the passes of a loop
  around it (`for token in range(n):`, an `enumerate` index): its first
  pass only.
* **Empty fallbacks**: the `else` of a test that a value holds items (`if
  len(valid) > 0:`, `x.numel() > 0`, `if x.shape[0]:`), or the body of one
  that it holds none (`x.numel() == 0`), where that block only hands back
  placeholders built from literals, is what a rare batch with nothing to
  score gets (SPIN's `torch.FloatTensor(1).fill_(0.)` loss for a batch
  without 3D joints), not per-step work. (A loss computed for an image
  without boxes, sized by the image, is work.)
* **Cache misses**: what a def does after an `if` that returns the value
  it tested (`if pe is not None: if pe.size(1) >= n: return pe`; a bare
  `return` for a `self.` attribute kept in place) runs on a miss only.
* **Off-period returns**: what a def does after a statement holding
  `if step % n != 0: return` runs on every n-th call only (kohya's
  `sample_images`, called every step).
* **Passes over data**: a function with a loop of its own over a DataLoader
  makes a pass over the data on each call (an evaluation, a pass scoring
  attention heads): what it does outside that loop runs once per pass,
  even when a loop calls it.
* **Epoch loops**: what the body of a loop around a loop of steps does
  outside that inner loop (a loop holding a hot loop that takes no step
  itself, or one holding the loop that steps an environment: an RL loop
  over episodes) runs once per epoch or episode, not per step: the
  hidden state `torch.zeros(1, 1, h).cuda()` set before each episode. (A
  function such a loop calls is still called repeatedly: an evaluation
  pass after every epoch goes over its data each time.)
* **Repeated**: otherwise, a node in the body of a `for` / `while` loop of
  the same function (not in the expression iterated), a node in a function
  named like per-step code (`PER_STEP_WORDS`) unless this file calls that
  function only from functions that drive a loop of their own, outside that
  loop (a diffusers pipeline's `prepare_mask_latents`, called from
  `__call__` before its denoising loop; never for `forward` and other
  framework hooks), or only every n-th pass of a loop (`if batches_done %
  sample_interval == 0: sample_image(...)`), and unless the project calls
  it from other functions and never on every step
  (`CallFacts.called_off_step`: MUNIT's `sample`, called from `train.py`
  every few thousand iterations); or in a
  function called (by `name(...)` or `self.name(...)`) from such a place in
  the same file, not only under such a periodic `if`. A function named like
  per-step code, to generate, sample or decode, that runs a model in a loop of
  its own (`generate`, one forward per token; a sampler, one per timestep) is a driver: what it does
  outside that loop is set-up, once per call (never for `forward`). The
  model may run in what the loop calls: a loop that hands a model to a
  helper (`img = self.p_sample(model, img, t)`) or refines a state by a
  function of the same file (`x = self.update(x, s, t)`, a solver's
  iterations; not `h = layer(h)` over layers) drives one too. So is
  one that is no method of a model and calls a model it is given, or a
  method of one (a demo's `do_sample(model, ...)`:
  `model.decode_first_stage(...)`). A loop whose variable its body compares
  with string literals walks a few named entries, not steps. One
  level of calls is followed, not more, and not into
  `main` / `run` (script entry points: a loop around them goes over
  command-line items, not steps).
* **Every step, from the project**: a function that the project's call
  graph says runs on every step of a training or evaluation loop (called
  from one, in this file or another, directly or through calls:
  `CallFacts.every_step`) runs repeatedly, whatever its name.

Module-level code outside a loop runs once, and so does a function named
like per-step code that the file calls only from there. A loop over a
short literal list of constants (`for channels in [30, 32, 64]:`) runs a
handful of times set by hand: it does not make its body repeated (a loop
around it does). A comprehension builds one
collection: its element runs as often as the code around it does, so a
comprehension alone does not make code repeated (step loops are `for` and
`while` loops; a list of dummy inputs built once per shape is set-up).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional, Sequence, Set, Tuple

from gpulint.model.control.caches import COUNTER_HINTS, cache_guard
from gpulint.model.control.fallbacks import empty_fallback
from gpulint.model.control.file_calls import (
    calling_class, calls_by_callee, class_group, in_forward, object_calls, own_callee_name, reached_below)
from gpulint.model.control.loops import counts_passes, iterates_names
from gpulint.model.control.periodic import is_periodic_test, off_period, returns_off_period
from gpulint.model.control.sweeps import is_literal_sweep
from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.index.order import nested_loops, scope_nodes
from gpulint.model.values.consumers import environment_loops
from gpulint.model.values.kinds import MODEL
from gpulint.model.index.walk import child_nodes, walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel
    from gpulint.model.index.tree import TreeIndex


# substrings of a function name that say it runs per step / batch / call
PER_STEP_WORDS = (
    "forward",
    "backward",
    "step",
    "batch",
    "collate",
    "mask",
    "generate",
    "sample",
    "loss",
    "decode",
)
_ONCE_RE = re.compile(
    r"^(?:__init__|__post_init__|_init_weights|reset_parameters|_?init.*|_?setup.*|_?export.*|_?fuse.*|_?load_(?:model|weights|state_dict|checkpoint|pretrained).*)$"
    r"|dummy",
    re.IGNORECASE,
)

# entry points: being called from a loop does not make them per-step code
_ENTRY_POINTS = frozenset(("main", "run"))
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def is_once_only_name(name: str) -> bool:
    """A function name that says it runs once (construction, set-up, export)."""
    return bool(_ONCE_RE.search(name))


def is_per_step_name(name: str) -> bool:
    """A function name that says it runs per step / batch / model call.
    "steps" is no such word: `get_time_steps`, `set_timesteps` make the
    schedule a sampler then steps through, once per call of it."""
    low = _STEPS_RE.sub("", name.lower())
    return any(word in low for word in PER_STEP_WORDS)


_STEPS_RE = re.compile(r"steps(?![a-z])")


# calls that trace or export a model: a function making one is a one-off
_TRACE_CALLS = frozenset(
    (
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.onnx.export",
        "torch.onnx.dynamo_export",
        "torch.export.export",
    )
)


def _traces_model(fa: "FileModel", func: ast.AST) -> bool:
    """`func` traces or exports a model every time it runs: a trace/export
    call in its own body that no `if`, loop, conditional expression or nested
    function of its own encloses (`try` and `with` are fine)."""
    cache = fa.index.memo("repetition.traces")
    if func in cache:
        return cache[func]  # type: ignore[return-value]
    found = False
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack and not found:
        n = stack.pop()
        if isinstance(n, (ast.If, ast.IfExp, ast.BoolOp, ast.Lambda, ast.ClassDef) + FUNCS + LOOPS + _COMPS):
            continue
        if isinstance(n, ast.Try):
            stack.extend(n.body)  # handlers and `else` run only sometimes
            stack.extend(n.finalbody)
            continue
        if isinstance(n, ast.Call) and fa.imports.call_qualname(n) in _TRACE_CALLS:
            found = True
        stack.extend(child_nodes(n))
    cache[func] = found
    return found


def _once_only_function(fa: "FileModel", ancestors: Sequence[ast.AST]) -> bool:
    """Some function around the node runs once: by its name, because it
    traces a model, because it stands in for an exported operator, or once
    per arguments, as a `functools.lru_cache` / `cache` keeps its results.
    A name does not say so of a method its class's `forward` calls
    unconditionally (`_named_once_called_hot`: `self.initialize_decoder_states(memory)`
    builds those states on every call, StyleTTS's aligner), nor of the
    `__init__` of a class the project's layers build every call, nor of a
    function the project says runs every step (`_called_every_step`)."""
    return any(
        isinstance(a, FUNCS) and ((is_once_only_name(a.name) and not _named_once_called_hot(fa, a)
                                   and not _built_per_call(fa, a) and not _called_every_step(fa, a))
                                  or _traces_model(fa, a) or _export_stand_in(fa, a) or _memoized(fa, a))
        for a in ancestors
    )


def _called_every_step(fa: "FileModel", func: ast.AST) -> bool:
    """`func`, not a dunder, is one the project says runs every step
    (`CallFacts.every_step`: dreamerv2's `_init_rssm_state(batch_size)`,
    which the world-model loss calls on every update): its name says
    set-up, its callers say otherwise."""
    return not func.name.startswith("__") and fa.facts.every_step(func) is not None  # type: ignore[attr-defined]


def _built_per_call(fa: "FileModel", func: ast.AST) -> bool:
    """`func` is the `__init__` of a class that layers of the project build on
    every call (`CallFacts.built_per_call`: an attention mask class)."""
    return func.name == "__init__" and fa.facts.built_per_call(fa.index.parents.get(func))  # type: ignore[attr-defined]


def _named_once_called_hot(fa: "FileModel", func: ast.AST) -> bool:
    """`func`, a method named like set-up (not a dunder: `__init__` runs when
    its class is built; not a `*dummy*` one), is called as `self.<name>(...)`
    by a statement of its class's `forward` itself, outside any branch or
    loop: every forward runs it."""
    name = func.name  # type: ignore[attr-defined]
    cls = fa.index.parents.get(func)
    if name.startswith("__") or "dummy" in name.lower() or not isinstance(cls, ast.ClassDef):
        return False
    forward = next((b for b in cls.body if isinstance(b, FUNCS) and b.name == "forward"), None)
    return forward is not None and fa.index.memoized("repetition.forward_calls", func, lambda: any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
        for stmt in forward.body if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return))
        for n in walk(stmt)))


_MEMOIZERS = frozenset(("functools.lru_cache", "functools.cache", "functools.cached_property"))


def _memoized(fa: "FileModel", func: ast.AST) -> bool:
    """`@lru_cache(maxsize=8)`, `@functools.cache`: what `func` builds is kept per arguments."""
    return any(fa.imports.qualname(d.func if isinstance(d, ast.Call) else d) in _MEMOIZERS
               for d in func.decorator_list)  # type: ignore[attr-defined]


_RANDOM_PREFIXES = ("torch.rand", "random.", "numpy.random.")


def _export_stand_in(fa: "FileModel", func: ast.AST) -> bool:
    """`func` is the `forward` of an autograd Function that defines
    `symbolic` (the operator a graph export writes) and returns random
    numbers: a placeholder that `torch.onnx.export` runs while it traces the
    model (the `ORT_NMS` / `TRT_NMS` of YOLO exports), never a real step."""
    if func.name != "forward":  # type: ignore[attr-defined]
        return False
    cls = fa.index.parents.get(func)
    if not isinstance(cls, ast.ClassDef) or not any(isinstance(n, FUNCS) and n.name == "symbolic" for n in cls.body):
        return False
    return fa.index.memoized("repetition.stand_in", func, lambda: any(
        isinstance(n, ast.Call) and (fa.imports.call_qualname(n) or "").startswith(_RANDOM_PREFIXES)
        for n in walk(func)))


def _in_loop_body(loop: ast.AST, child: ast.AST) -> bool:
    """`child` (a direct child of `loop`) is repeated by it (not the iterated expression)."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return child is not loop.iter
    if isinstance(loop, _COMPS):
        # the first generator's iterable is evaluated once
        return child is not loop.generators[0]
    return True




def is_one_shot_test(test: ast.AST) -> bool:
    """`if step == 0:` / `if iters == 1000:` / `if cuda and num_updates() == 0:`:
    a counter compared for equality with a number, true on one iteration only
    (a remainder, `step % n == 0`, is periodic and does not count)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(is_one_shot_test(v) for v in test.values)
    compared = _equal_to_an_int(test)
    if compared is None or isinstance(compared[0], ast.BinOp):
        return False
    left = compared[0]
    target = left.func if isinstance(left, ast.Call) else left
    if isinstance(target, ast.Name):
        name = target.id.lower()
    elif isinstance(target, ast.Attribute):
        name = target.attr.lower()
    else:
        name = ast.unparse(target).lower().rsplit(".", 1)[-1]
    return name in ("i", "it", "n") or any(h in name for h in COUNTER_HINTS)


def _equal_to_an_int(test: ast.AST):
    """(x, n) for `x == n` or `n == x` with an int literal `n`; else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(right, ast.Constant) and type(right.value) is int):
        return None
    return left, right.value


def _is_once_guard(test: ast.AST) -> bool:
    if is_one_shot_test(test):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = test.operand
        return isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "hasattr"
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if (
            isinstance(op, ast.Eq)
            and isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "len"
            and isinstance(right, ast.Constant)
            and right.value == 0
        ):
            return True
        if (
            isinstance(op, ast.Is)
            and isinstance(right, ast.Constant)
            and right.value is None
            and isinstance(left, ast.Attribute)
            and isinstance(left.value, ast.Name)
            and left.value.id == "self"
        ):
            return True
    return False


def _directly_repeated(fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST], per_step: bool = False) -> bool:
    """Repeated by its own function: a loop or a per-step name, without following callers.
    `per_step`: the body of an epoch loop (`_epoch_loop`) runs once per many steps, not repeatedly."""
    if _once_only_function(fa, ancestors):
        return False
    func, in_loop = _guarded_context(node, ancestors, fa, per_step=per_step)
    if func is _ONCE:
        return False
    if in_loop:
        return True
    return (
        func is not None and is_per_step_name(func.name) and not _called_once_here(fa, func)
        and not _drives_model_loop(fa, func) and not fa.facts.called_off_step(func)
        and not _runs_its_own_training(fa, func)
    )


# per-step words that also name a function driving a loop of model calls
# (`generate` a sequence token by token, `sample` by timestep, `decode`); a
# per-`batch` or per-`step` function looping over a loader is not one
_DRIVER_WORDS = ("generate", "sample", "decode")


def _drives_model_loop(fa: "FileModel", func: ast.AST) -> bool:
    """`func`, named to generate, sample or decode, runs a model in a loop of its own (`generate`: one forward
    per token; a sampler: one per timestep), so what it does outside that loop is set-up for the loop, once
    per call: its per-step name speaks of the loop it drives. Never for `forward` and other framework hooks (a
    forward's loop over its layers is part of one step)."""
    low = func.name.lower()  # type: ignore[attr-defined]
    if func.name in _CALLED_BY_FRAMEWORK or not any(w in low for w in _DRIVER_WORDS):  # type: ignore[attr-defined]
        return False
    cache = fa.index.memo("repetition.drives")
    if func in cache:
        return cache[func]  # type: ignore[return-value]
    stack = list(func.body)  # type: ignore[attr-defined]
    loops = []
    while stack:  # the function's own loops (not those of nested defs)
        n = stack.pop()
        if isinstance(n, LOOPS):
            loops.append(n)
        elif not isinstance(n, SCOPES):
            stack.extend(child_nodes(n))
    found = any(
        isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Attribute) and n.func.attr.startswith("forward"))
            or fa.steps.is_model_call(n, fa.index.ancestors(n))
            or _passes_a_model(fa, n)
        )
        for loop in loops for n in walk(loop)
    ) or any(_refines_by_own_call(fa, func, loop) for loop in loops) or _generates_with_a_model(fa, func)
    cache[func] = found
    return found


def _passes_a_model(fa: "FileModel", call: ast.Call) -> bool:
    """`self.sample_image(x[i:i + 8], model)`, `self.p_sample(model, img, t)`:
    the call hands a model to the code that runs it."""
    args = list(call.args) + [k.value for k in call.keywords]
    if not args:
        return False
    ancestors = fa.index.ancestors(call)
    return any(isinstance(a, ast.Name) and fa.values.kind(a, ancestors) == MODEL for a in args)


def _own_functions(fa: "FileModel", func: ast.AST) -> Set[str]:
    """Names a call in `func` can reach by `name(...)` or `self.name(...)`
    in this file: the methods of its class and the module's functions."""
    names = {n.name for n in fa.tree.body if isinstance(n, FUNCS)}  # type: ignore[attr-defined]
    cls = fa.index.parents.get(func)
    if isinstance(cls, ast.ClassDef):
        names |= {n.name for n in cls.body if isinstance(n, FUNCS)}
    return names


def _refines_by_own_call(fa: "FileModel", func: ast.AST, loop: ast.AST) -> bool:
    """The loop carries a state that a function of this file refines on each pass (`x =
    self.singlestep_dpm_solver_update(x, s, t, ...)`, `img = p_sample(img, t)`): the iterations of a sampler
    or solver, whose model runs in the function called. Not a loop over layers (`h = layer(h)`, the callee
    being no def of the file)."""
    own = _own_functions(fa, func)
    for stmt in walk(loop):
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
            continue
        name = own_callee_name(stmt.value)
        if name is None or name not in own or name == func.name:  # type: ignore[attr-defined]
            continue
        targets = {t.id for tgt in stmt.targets for t in walk(tgt) if isinstance(t, ast.Name)}
        passed = {a.id for a in stmt.value.args if isinstance(a, ast.Name)}
        passed |= {k.value.id for k in stmt.value.keywords if isinstance(k.value, ast.Name)}
        if targets & passed:
            return True
    return False


# methods of a model that set it up or read its state, not what it computes
_MODEL_SETUP = frozenset(
    """eval train to cuda cpu half float double bfloat16 parameters named_parameters buffers named_buffers
    state_dict load_state_dict modules named_modules children named_children requires_grad_ zero_grad
    apply register_buffer register_forward_hook""".split()
)


def _generates_with_a_model(fa: "FileModel", func: ast.AST) -> bool:
    """`func`, named to generate, sample or decode, hands its work to a model: it calls one, or a method of
    one (`model.decode_first_stage(z)`, `model.denoiser(...)`), in its own code. It is a generation driver (a
    demo's `do_sample`, run once per request), not a per-step utility such as a distribution's `sample()`,
    which draws from its own tensors. Not a method of an `nn.Module` (a VAE's `generate()`, which a replay
    plugin may call on every training step): its own layers are no sign."""
    cls = fa.index.parents.get(func)
    if isinstance(cls, ast.ClassDef) and fa.values.is_module_class(cls):
        return False
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPES):
            continue
        if isinstance(n, ast.Call):
            ancestors = fa.index.ancestors(n)
            if fa.steps.is_model_call(n, ancestors):
                return True
            f = n.func
            if (isinstance(f, ast.Attribute) and f.attr not in _MODEL_SETUP and isinstance(f.value, ast.Name)
                    and fa.values.kind(f.value, ancestors) == MODEL):
                return True
        stack.extend(child_nodes(n))
    return False


_ONCE = object()
# what PyTorch or a framework calls, never this file: the name is the only evidence
_CALLED_BY_FRAMEWORK = ("forward", "backward", "training_step", "validation_step", "test_step", "predict_step")


def _called_once_here(fa: "FileModel", func: ast.AST) -> bool:
    """A function named like per-step code (`prepare_mask_latents`, `decode_latents`) that this file calls
    only from functions that drive a loop of their own, and outside that loop (a pipeline's `__call__`, before
    or after its denoising loop): its call sites say more than its name. False when the file never calls it (a
    framework does) and for `forward`-style hooks."""
    name = func.name  # type: ignore[attr-defined]
    if name in _CALLED_BY_FRAMEWORK:
        return False
    cache = fa.index.memo("repetition.called_once")
    if func in cache:
        return cache[func]  # type: ignore[return-value]
    cache[func] = False  # while the callers are looked at (recursion): per-step, as the name says
    # (and `dataset.generate_data()` on an object of the file's class: called before a loop, once)
    sites = calls_by_callee(fa.index).get(name, []) + object_calls(fa.index).get(name, [])
    once = bool(sites)
    for call in sites:
        ancestors = fa.index.ancestors(call)
        caller = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
        if _under_periodic_guard(call, ancestors):
            continue  # `if batches_done % opt.sample_interval == 0: sample_image(...)`: now and then
        if caller is None:
            # the script's own code, outside any loop (`if __name__ == "__main__":
            # check_forward_equal()`): it runs once
            if _directly_repeated(fa, call, ancestors):
                once = False
                break
            continue
        # the caller drives a loop of its own and calls this outside it (before or after):
        # a call from a loop-less method says nothing, other files may call that in a loop
        if not _has_own_loop(caller) or _directly_repeated(fa, call, ancestors):
            once = False
            break
    cache[func] = once
    return once


def _under_periodic_guard(node: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`node` is in the body of an `if step % n == 0:` of the loop around it
    (within its function): it runs every n-th pass, not every one."""
    child = node
    for anc in reversed(ancestors):
        if isinstance(anc, FUNCS + LOOPS):
            return False
        if isinstance(anc, ast.If) and child in anc.body and is_periodic_test(anc.test):
            return any(isinstance(a, LOOPS) for a in ancestors)
        child = anc
    return False


def _has_own_loop(func: ast.AST) -> bool:
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack:
        n = stack.pop()
        if isinstance(n, LOOPS):
            return True
        if isinstance(n, SCOPES):
            continue
        stack.extend(child_nodes(n))
    return False


def _guarded_context(node: ast.AST, ancestors: Sequence[ast.AST], fa: Optional["FileModel"] = None,
                     memo: Optional["TreeIndex"] = None, per_step: bool = False):
    """`memo`: an index to keep answers in that do not depend on `fa`. `per_step`:
    a loop around a loop of steps (`_epoch_loop`) does not repeat what its own body does."""
    memo = fa.index if fa is not None else memo
    child = node
    in_loop = False
    for i in range(len(ancestors) - 1, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, ast.If) and child is not anc.test and child in anc.body and (
            _is_once_guard(anc.test) or _first_pass(anc.test, ancestors[:i])
            or cache_guard(anc.test, child, anc.body, fa, _is_once_guard)
        ):
            return _ONCE, False
        if isinstance(anc, ast.If) and child is not anc.test and empty_fallback(anc, child):
            return _ONCE, False  # what a batch with nothing to score gets instead (rare)
        if (isinstance(anc, ast.If) and child in anc.body and not in_loop and fa is not None
                and fa.loops.periodic_block(anc, ancestors[:i]) and not _small_period(anc.test)):
            return _ONCE, False  # every n-th pass (`if step % 1000 == 0:` around a preview sample): rare
        if isinstance(anc, ast.ExceptHandler):
            return _ONCE, False  # error handling (a fallback after a failed call, the end of an iterator): rare
        if isinstance(anc, FUNCS):
            return anc, in_loop
        if (isinstance(anc, LOOPS) and _in_loop_body(anc, child)
                and not is_literal_sweep(anc, fa.index if fa is not None else None, ancestors[:i])
                and not (memo.memoized("repetition.names", anc, lambda: iterates_names(anc))
                         if memo is not None else iterates_names(anc))
                and not (per_step and fa is not None and _epoch_loop(fa, anc))):
            in_loop = True
        child = anc
    return None, in_loop


def _epoch_loop(fa: "FileModel", loop: ast.AST) -> bool:
    """A loop around a loop of steps that takes no step itself (an epoch
    loop, an RL loop over episodes around its loop over env steps): what its
    own body does runs once per many steps (`hidden = torch.zeros(1, 1,
    h).cuda()` before each episode), not per step."""
    loops = fa.loops
    if loops.contains_hot_loop(loop) and not loops.is_step_loop(loop):
        return True
    stepping = environment_loops(fa.index)
    return bool(stepping) and loop not in stepping and any(inner in stepping for inner in nested_loops(loop))


def _runs_its_own_training(fa: "FileModel", func: ast.AST) -> bool:
    """`func` runs epochs of training steps of its own: one of its loops is
    an epoch loop (`_epoch_loop`) around a loop whose body runs a backward or
    an optimizer step (CloserLookFewShot's `set_forward_adaptation`, which
    fits a linear classifier for 100 epochs on each test episode). A call
    is a training run, whatever the function's name says."""
    return fa.index.memoized("repetition.own_training", func, lambda: any(
        isinstance(n, LOOPS) and _epoch_loop(fa, n)
        and any(fa.loops.is_training_step_loop(inner) for inner in nested_loops(n))
        for n in scope_nodes(func)))


# a period this short (`if token % 2 == 0:`) still repeats the block every few passes
_SMALL_PERIOD = 10


def _small_period(test: ast.AST) -> bool:
    """The test's modulus is a small literal (`token % 2`): not a logging or
    saving interval, which a name (`step % args.log_every`) or a large
    number (`step % 1000`) sets."""
    return any(
        isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.right, ast.Constant)
        and type(n.right.value) is int and n.right.value < _SMALL_PERIOD
        for n in walk(test)
    )


def under_once_guard(node: ast.AST, ancestors: Sequence[ast.AST], memo: Optional["TreeIndex"] = None) -> bool:
    """`node` is in the body of a once-only guard of its function (see the
    module docstring): `if self.step == 0:`, `if self.cache is None:`,
    `if key not in cache: cache[key] = ...`, `if token == 0:` in a loop that
    counts `token`. It runs on one call or pass, not on every one."""
    return _guarded_context(node, ancestors, memo=memo)[0] is _ONCE


def _first_pass(test: ast.AST, outer: Sequence[ast.AST]) -> bool:
    """`if token == 0:` (or `... and token == 0 and ...`) where `token` counts
    the passes of a loop around it (`for token in range(n):`, the index of
    `enumerate(...)`): true on the loop's first pass only."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_first_pass(v, outer) for v in test.values)
    compared = _equal_to_an_int(test)
    if compared is None or compared[1] != 0 or not isinstance(compared[0], ast.Name):
        return False
    left = compared[0]
    for anc in reversed(outer):
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, LOOPS) and counts_passes(anc, left.id):
            return True
    return False


def _passes_over_data(fa: "FileModel", func: ast.AST) -> bool:
    """`func` steps over a DataLoader in a loop of its own: a call is a pass
    over the data (an evaluation, a pass scoring attention heads), and what
    it does outside that loop runs once per pass, not once per step. So does
    a function that runs epochs of training steps of its own (a few-shot
    test episode fitting a classifier for 100 epochs): a call is a training
    run."""
    def compute() -> bool:
        return _runs_its_own_training(fa, func) or any(
            isinstance(n, (ast.For, ast.AsyncFor)) and fa.loops.loop_iterates_loader(n, fa.index.ancestors(n))
            for n in scope_nodes(func))  # (the function's own loops, not those of nested defs)

    return fa.index.memoized("repetition.passes", func, compute)  # type: ignore[return-value]


def _hot_callees(fa: "FileModel") -> Set[Tuple[Optional[str], str]]:
    """(class group, name) of the functions called from repeated code of
    this file: the group (`class_group`) of the class whose method calls
    `self.name(...)`, or None for a plain `name(...)` call."""
    cache = fa.index.memo("repetition")
    if "hot_callees" in cache:
        return cache["hot_callees"]  # type: ignore[return-value]
    out: Set[Tuple[Optional[str], str]] = set()
    others = []  # the calls not in repeated code themselves: (callee, the call, its ancestors)
    per_forward: Set[Tuple[Optional[str], str]] = set()  # the callees a `forward` calls, and theirs
    for name, calls in calls_by_callee(fa.index).items():
        for c in calls:
            ancestors = fa.index.ancestors(c)
            cls = calling_class(c, ancestors)
            key = (class_group(fa.index, cls) if cls is not None else None, name)
            if _repeated_call(fa, c, ancestors):
                out.add(key)
                if in_forward(ancestors):
                    per_forward.add(key)
            else:
                others.append((key, c, ancestors))
    # and what those call on every call, below a layer's `forward` (svoice's `forward` calls `create_chuncks`,
    # which calls `pad_segment`); not below other hot code (a sampler's loop over whole samplings). The
    # calls' guards are read only in a file where a `forward` calls a function of its own
    if per_forward:
        rest = []  # (callee, the def the call is in), for the calls not under a once or periodic guard
        for key, c, ancestors in others:
            func, _ = _guarded_context(c, ancestors, fa, per_step=True)
            if func is not _ONCE and func is not None and not _under_periodic_guard(c, ancestors):
                owner = fa.index.parents.get(func)
                rest.append((key, (class_group(fa.index, owner.name) if isinstance(owner, ast.ClassDef) else None,
                                   func.name)))  # type: ignore[attr-defined]
        out |= reached_below(per_forward, rest)
    cache["hot_callees"] = out
    return out


def _is_hot_callee(fa: "FileModel", func: ast.AST) -> bool:
    """This file calls `func` from repeated code: a plain function by its
    name, a method by `self.<name>(...)` in its own class or in a class of
    the file related to it by inheritance (another class's method of the same
    name is another function: a rotary embedding's `yarn()` that one class
    calls only in `__init__` and another in every `forward`)."""
    hot = _hot_callees(fa)
    name = func.name  # type: ignore[attr-defined]
    cls = fa.index.parents.get(func)
    if not isinstance(cls, ast.ClassDef):
        return (None, name) in hot
    return (class_group(fa.index, cls.name), name) in hot


def _repeated_call(fa: "FileModel", call: ast.Call, ancestors: Sequence[ast.AST]) -> bool:
    """The call runs repeatedly, not only every n-th pass of its loop."""
    return _directly_repeated(fa, call, ancestors) and not _under_periodic_guard(call, ancestors)


def called_repeatedly(fa: "FileModel", func: ast.AST) -> bool:
    """This file calls the function `func` (by `name(...)`, or a method by
    `self.name(...)`) from repeated code: a loop, or per-step code."""
    return _is_hot_callee(fa, func)


def after_periodic_return(fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`node` follows, in its def's body, a statement holding an early return
    off the period (`if steps % args.sample_every_n_steps != 0: return`):
    kohya's `sample_images` is called every step and returns at once on all
    steps but every n-th, so what comes after runs only then."""
    if not fa.index.memoized("repetition.periodic_return", "file", lambda: any(
            off_period(n.test) and any(isinstance(b, ast.Return) for b in n.body) for n in fa.index.nodes(ast.If))):
        return False  # (no `if <off period>: return` in the whole file: one pass over its `if`s)
    return _after_statement(fa, node, ancestors, "repetition.periodic_return", returns_off_period)


def after_cache_hit(fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """`node` follows, in its def's body, an `if` that returns a value the caller cached (`if pe is not None:
    if pe.size(1) >= n: return pe`, `if self.cache is not None: return self.cache`): what comes after runs on
    a miss only (a relative position table rebuilt when a longer input comes), not on every call."""
    return _after_statement(fa, node, ancestors, "repetition.cache_hit",
                            lambda stmt: isinstance(stmt, ast.If) and _returns_what_it_tests(stmt))


def _after_statement(fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST], memo: str, marks) -> bool:
    """`node` is in a statement of its def's body that comes after the first
    one `marks` (found once per def, kept in the index under `memo`)."""
    func = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
    if func is None:
        return False
    chain = list(ancestors) + [node]
    at = chain.index(func) + 1
    if at >= len(chain):
        return False
    body = func.body  # type: ignore[attr-defined]
    first = fa.index.memoized(memo, func, lambda: next((i for i, stmt in enumerate(body) if marks(stmt)), None))
    if first is None:
        return False
    return any(s is chain[at] for s in body[first + 1:])


def _returns_what_it_tests(stmt: ast.If) -> bool:
    """`if x is not None: ... return x` (x a name or `self.<attr>`; a bare
    `return` for an attribute, kept in place), the return anywhere in the
    `if`'s body; also where more conditions follow with `and` (StableTTS's
    rotary `_build_cache`: `if self.cos_cached is not None and x.shape[0]
    <= self.cos_cached.shape[0]: return`, rebuilt for a longer input only)."""
    test = stmt.test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        test = test.values[0]
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return False
    key = ast.dump(test.left)
    attribute = isinstance(test.left, ast.Attribute)  # `if self.pe is not None: ... return`: kept in place
    return any(isinstance(n, ast.Return) and (ast.dump(n.value) == key if n.value is not None else attribute)
               for s in stmt.body for n in walk(s))


def runs_repeatedly(fa: "FileModel", node: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """Whether `node` runs repeatedly (see the module docstring)."""
    if after_cache_hit(fa, node, ancestors) or after_periodic_return(fa, node, ancestors):
        return False
    if _directly_repeated(fa, node, ancestors, per_step=True):
        return True
    if _once_only_function(fa, ancestors):
        return False
    func, in_loop = _guarded_context(node, ancestors, fa, per_step=True)
    if func is _ONCE or func is None:
        return False
    if not in_loop and _passes_over_data(fa, func):
        return False  # once per pass over a loader (bertology's `compute_heads_importance`)
    if fa.facts.every_step(func) is not None or _built_per_call(fa, func):
        return True  # the project says so: called every step of a loop (or built every forward), here or elsewhere
    return func.name not in _ENTRY_POINTS and _is_hot_callee(fa, func)
