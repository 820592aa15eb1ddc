from __future__ import annotations

import ast
import re
from typing import Optional, Tuple

from gpulint.model.control.options import under_opt_in_flag, words_of_test
from gpulint.model.control.repetition import after_cache_hit, under_once_guard
from gpulint.model.control.syncs import waits_on_host
from gpulint.model.index.nodes import FUNCS
from gpulint.model.names import last_name
from gpulint.model.values.devices import (
    SHAPED_FACTORIES,
    default_device_set,
    empty_placeholder,
    factory_device_arg,
    factory_name,
    has_generator,
    param_used_as_tensor,
    type_move_target,
    values_depend_on_device,
    zero_dim_size,
)
from gpulint.edits import add_keyword, find_keyword
from gpulint.rule import SAFE, TIME, UNSAFE, Bench, Example, Rule
from gpulint.workloads import GPT_MODEL, GPT_SIZES, GPT_TOKENS, GPT_TRAIN_LOOP
from gpulint.model.index.walk import walk
from gpulint.model.values.kinds import HOST_METHODS

# chained calls that take the tensor off the GPU path or move it themselves
_CHAINED_SKIP = frozenset("to cuda cpu tolist numpy item".split())
# builtins that need the value on the host
_HOST_BUILTINS = frozenset("int float bool range list tuple max min".split())
# keywords whose value is a size or a length, read on the host
_HOST_KEYWORDS = frozenset(("lengths", "size"))
# factories whose arguments are sizes or range ends, read on the host (not `tensor(data)`)
_SIZED_FACTORIES = frozenset("zeros ones empty full arange range linspace logspace eye rand randn randint randperm".split())
_PACK_FUNCS = frozenset(("pack_padded_sequence",))
_TENSOR_ANNOTATIONS = frozenset(("torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"))


def _builds_a_scalar(name: str, node: ast.Call) -> bool:
    """`torch.zeros(())`, `torch.full([], v)`, `torch.ones(0)`: a 0-dim or empty tensor."""
    return (name in SHAPED_FACTORIES and zero_dim_size(node.args)) or empty_placeholder(name, node)


# FactoryWithoutDeviceInForward's bench program (see `Bench` in gpulint/rule.py)
BENCH = Bench(
        setup="import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n" + GPT_SIZES + GPT_TOKENS,
        bad=GPT_MODEL.replace("torch.arange(n, device=idx.device)", "torch.arange(n)").replace(
            "dtype=torch.bool, device=idx.device)", "dtype=torch.bool)")
        + GPT_TRAIN_LOOP,
        good=GPT_MODEL + GPT_TRAIN_LOOP,
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "GPT-style training step (8 layers, d_model 768, 16x512 tokens) whose forward builds the position ids and "
            "the causal mask on the CPU and copies them (bad) or builds them on the input's device (good). Integer and "
            "boolean values are the same on either device: the last loss agrees up to run-to-run rounding (rtol 1e-4)"
        ),
    )


class FactoryWithoutDeviceInForward(Rule):
    """
    ## What it does
    Flags a tensor factory (`torch.zeros`, `ones`, `arange`, `full`, `eye`,
    `rand`, `tensor([...])`, ...) without `device=` inside the `forward` of an
    `nn.Module` subclass, such as `torch.arange(seq_len)` for positions or
    `torch.ones(n, n)` for a mask. A subclass of a library's layer counts
    (torch_geometric's `MessagePassing`, DGL's PyTorch layers, torchvision's
    models): they are modules too.

    Not flagged:
    - `*_like` and `x.new_*`, which use their input's device;
    - code in `__init__` or other methods, and nested functions; but in a
      method that only `forward` calls (`self._prob_QK(q, k)` in `forward`,
      and nowhere else in the class), which runs with every forward, an
      index tensor is flagged: a factory whose tensor indexes another one
      (`K[:, :, torch.arange(L_Q).unsqueeze(1), index_sample]`, with
      `index_sample = torch.randint(L_K, (L_Q, k))`), which torch copies to
      the indexed tensor's device on every call, unless it is a boolean mask
      or the helper reads device data on the host anyway (`.item()`,
      `nonzero`, ...: the host waits there, and one small copy adds little);
    - code under a guard that holds on the first call only: `if
      self.step == 0:` (a counter), `if self.table is None:` (a lazy
      cache), `if key not in cache: cache[key] = ...`, and code after a
      return of a cached value (`if pe.size(0) >= n: return pe`);
    - `torch.tensor(3.0)`-style scalars and other 0-dim tensors, which
      PyTorch combines with CUDA tensors without a copy, and placeholders
      with a literal 0 dimension (`torch.empty([0])`) or empty data
      (`torch.tensor([])`), which hold nothing to copy (`torch.tensor` and
      `as_tensor` are only flagged for a non-empty list/tuple literal or a
      comprehension);
    - a factory chained into `.to()`/`.cuda()` (GPU203's case) or into
      `.cpu()`/`.tolist()`/`.numpy()`/`.item()`;
    - a factory where the code sets a default device that is not the CPU
      (`torch.set_default_device("cuda")`,
      `torch.set_default_tensor_type("torch.cuda.FloatTensor")`, `with
      torch.device("cuda"):`), in its file or in the module code of a script
      of its program that never sets it back (NeuS's `exp_runner.py`): it
      builds there already;
    - a boolean mask drawn only to index (`mask = torch.rand(n) > p` then
      `d[:, mask] = ...`, also through `torch.logical_and`): with a CPU mask
      the host finds the `True` positions and copies them, with a device
      mask the GPU finds them and the host waits for the count, so the host
      waits either way and `device=` buys nothing (an integer index,
      `x[torch.randint(...)]`, is still flagged: on the device it needs no
      wait);
    - a tensor the code needs on the host: `pack_padded_sequence` lengths,
      `int()`, `max()`/`min()`, an `if` test, a Python `for` loop over it, a
      slice bound (`x[:, :c]`), a size (`torch.rand(n)`, `x.view(n, -1)`,
      `size=(w, h)`), also through what the statement stores
      (`c = torch.randint(...)[0]`, `f = torch.rand(3) * k + lo`) until the
      name is bound again;
    - a factory given a `generator=`: code that works without `device=` uses
      a CPU generator, so the tensor has to be built on the CPU (with
      `device=` it would raise);
    - test files (`test_*.py`, `*_test.py`, `conftest.py`, `tests/`), whose
      modules run on the CPU, as GPU203 does, and a script (an `if __name__
      == "__main__":` block or a top-level loop) that never names a device
      and that no device code calls: a CPU program. A module whose `__main__`
      block takes no input and that other files of the project import is not
      one: the block is its self-test (Uformer's `model.py` prints its model's
      size), and the importers choose the device;
    - any factory in a `forward` that moves data to the host itself
      (`.cpu()`, `.numpy()`, SciPy), as matchers and post-processing modules
      do on purpose;
    - the CPU branch of `if x.is_cuda:` / `torch.cuda.is_available()`, and
      branches that only run while exporting or tracing (`if self.onnx_trace:`);
    - branches of an extra output the user asks for, off by default: `if
      self.output_attention:` where `__init__` stores `output_attention`,
      a parameter defaulting to `False` or `None` and named for an output
      (`output_*`, `return_*`, `store_*`, `keep_*`) or for logging
      (Informer's and Time-Series-Library's attention maps);
    - data transforms written as modules (a class named like `*Transform*`
      but not `*Transformer*`, `*Augment*`, `Random*`, or used in a
      `transforms.Compose`), which run on CPU samples in DataLoader workers.

    ## Why is this bad?
    Without `device=`, the tensor is built on the CPU on every forward pass.
    When the module runs on a GPU, every use of it then needs a synchronous
    host-to-device copy (explicit, or implicit when it indexes a CUDA tensor)
    or fails with "Expected all tensors to be on the same device". Building it
    on the device of the input keeps the module device-agnostic and avoids a
    copy per step.

    ## Fix safety
    The fix adds `device=<input>.device`, where `<input>` is the first
    parameter after `self` when it is known to be a tensor (annotated
    `torch.Tensor`, or used like one: `x.shape`, `x.view(...)`, ...), or the
    forward's own `device = ...` variable when it sets one first. There is no
    fix when the first parameter may be `None` or is not clearly a tensor.

    The fix is safe when the values are the same wherever they are computed.
    It is unsafe for random factories and for a tensor filled in place with
    random numbers (`torch.empty(n).bernoulli_(p)`): the CPU and CUDA
    generators give different numbers for the same seed. It is also unsafe
    for computed floating-point
    values (`linspace`, `logspace`, window functions, a float `arange`), which
    the CUDA kernels may round differently in the last bit.

    It is also unsafe when another tensor of the same forward stays on the
    CPU after the safe fixes: a factory call without a device that has no
    safe fix of its own, or one built from data (`torch.tensor(weights)`).
    Some forwards build a whole table on the CPU and move it once, such as
    diffusers' CogView4 rotary embedding. There, moving one of its pieces
    would make `torch.outer` mix a CUDA and a CPU tensor. When every CPU
    tensor of the forward gets a safe fix, they all move together and the
    fixes stay safe.

    ## References
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    - [PyTorch performance tuning guide: create tensors directly on the target device](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device)
    - [torch.nn.Module.forward](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.forward)
    """

    code = "GPU204"
    name = "factory-without-device-in-forward"
    message = "`torch.{factory}()` in `forward` builds the tensor on the CPU every call; pass `device=`"
    fix_safety = SAFE
    needles = ("forward",)
    examples = (
        Example(
            bad="""
            import torch
            from torch import nn

            class PositionalEmbedding(nn.Module):
                def __init__(self, max_len, dim):
                    super().__init__()
                    self.embed = nn.Embedding(max_len, dim)

                def forward(self, x):
                    positions = torch.arange(x.size(1))
                    return x + self.embed(positions)
            """,
            good="""
            import torch
            from torch import nn

            class PositionalEmbedding(nn.Module):
                def __init__(self, max_len, dim):
                    super().__init__()
                    self.embed = nn.Embedding(max_len, dim)

                def forward(self, x):
                    positions = torch.arange(x.size(1), device=x.device)
                    return x + self.embed(positions)
            """,
        ),
    )
    bench = BENCH

    def visit_Call(self, node: ast.Call, ctx) -> None:
        if factory_name(ctx.analysis, node) is None:
            return  # (before the ancestors are read: most calls are no factory)
        verdict = self._assess(ctx, node, ctx.ancestors)
        if verdict is None:
            return
        forward, name, device, reason = verdict
        fix = None
        if device is not None:
            if reason is None:
                other = self._other_cpu_tensor(ctx, forward)
                if other is not None:
                    reason = (f"line {other.lineno} builds another tensor on the CPU in this forward, and moving"
                              " only this one could make an operation mix devices")
            fix = self.make_fix(
                f"Build it on the input's device: `device={device}`",
                [add_keyword(ctx.source, node, f"device={device}")],
                UNSAFE if reason else SAFE,
            )
        if forward.name == "forward":
            self.report(ctx, node, fix=fix, factory=name)
        else:
            self.report(ctx, node, fix=fix, message=(
                f"`torch.{name}()` in `{forward.name}`, which `forward` calls, builds the tensor on the CPU every "
                "call; pass `device=`"))

    def _assess(self, ctx, node: ast.Call, ancestors) -> Optional[Tuple[ast.FunctionDef, str, Optional[str],
                                                                        Optional[str]]]:
        """(forward, factory, device expression or None, why a fix is unsafe
        or None) when the call is a finding, else None; `ancestors` run from
        the module to the call's parent."""
        fa = ctx.analysis
        name = factory_name(fa, node)
        if name is not None and fa.index.is_cpu_script() and not fa.facts.self_test() and not any(
                isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) and fa.facts.device_side(a) for a in ancestors):
            return None  # a CPU program, which no device code calls: its modules run on the CPU
        if name is not None and default_device_set(fa, ancestors):
            return None  # built on the default device the code set, not on the CPU
        if name is None:
            return None
        if factory_device_arg(name, node) is not None or find_keyword(node, "out") is not None:
            return None
        if any(kw.arg is None for kw in node.keywords) or has_generator(node):
            return None  # a CPU generator needs a CPU tensor; tests run their modules on the CPU
        forward = self._forward(ctx, ancestors)
        if forward is None:
            return None
        if forward.name != "forward" and (
                not _indexes_a_tensor(fa, node, forward) or _boolean(node) or waits_on_host(fa, forward)):
            return None  # in a helper of `forward`: only an integer index tensor, where nothing waits anyway
        if name in ("tensor", "as_tensor"):
            data = node.args[0] if node.args else None
            if not isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
                return None
            if isinstance(data, (ast.List, ast.Tuple)) and not data.elts:
                return None  # `torch.tensor([])`: an empty placeholder, nothing to copy (as GPU203 treats it)
        elif _builds_a_scalar(name, node):
            return None
        if _in_host_only_branch(ancestors, node):
            return None
        if under_opt_in_flag(fa.index, node, ancestors, forward, fa.facts.opt_in_flags()):
            return None  # `if self.output_attention:`: an extra output the user asks for, off by default
        if under_once_guard(node, ancestors, ctx.analysis.index) or after_cache_hit(fa, node, ancestors):
            return None  # `if self.step == 0:` / `if self.table is None:`: built on the first call only
            # (or after `if pe.size(0) >= n: return pe`: built when the cached table is too short)
        if _needed_on_host(ctx, node, forward) or _boolean_mask_index(ctx.analysis, node, forward):
            return None
        device = self._device_expr(forward, node, ctx)
        reason = None
        if device is not None:
            reason = values_depend_on_device(fa, name, node)
            if self._escapes(ctx, node, forward):
                reason = "the tensor is returned or stored, and callers may expect it on the CPU"
        return forward, name, device, reason

    def _other_cpu_tensor(self, ctx, forward: ast.FunctionDef) -> Optional[ast.Call]:
        """The first factory call of the forward that leaves its tensor on the
        CPU even after the safe fixes: one without a device that this rule does
        not flag, or flags without a safe fix. A safe fix of another call
        could make it meet that tensor on another device (a rotary table
        computed on the CPU from several factories, then moved as a whole)."""
        fa = ctx.analysis
        memo = fa.index.memo("gpu204_cpu_tensors")
        if forward not in memo:
            first = None
            for n in walk(forward):
                if not isinstance(n, ast.Call):
                    continue
                name = factory_name(fa, n)
                if name is None or factory_device_arg(name, n) is not None or find_keyword(n, "out") is not None:
                    continue
                if name not in ("tensor", "as_tensor") and _builds_a_scalar(name, n):
                    continue  # a 0-dim or empty tensor: a CPU scalar mixes with CUDA tensors
                verdict = self._assess(ctx, n, fa.index.ancestors(n))
                if verdict is not None and verdict[2] is not None and verdict[3] is None:
                    continue  # fixed safely too: it moves with the others
                if first is None or (n.lineno, n.col_offset) < (first.lineno, first.col_offset):
                    first = n
            memo[forward] = first
        return memo[forward]  # type: ignore[return-value]

    @staticmethod
    def _forward(ctx, ancestors) -> Optional[ast.FunctionDef]:
        """The `forward` method of an nn.Module subclass that directly holds the
        call, or a method of it that only `forward` calls (`Steps.forward_helper`)."""
        for i in range(len(ancestors) - 1, -1, -1):
            anc = ancestors[i]
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                if not (isinstance(anc, ast.FunctionDef) and i > 0):
                    return None
                cls = ancestors[i - 1]
                if anc.name != "forward" and not ctx.analysis.steps.forward_helper(anc, cls):
                    return None
                if (
                    isinstance(cls, ast.ClassDef)
                    and ctx.analysis.values.is_module_class(cls)
                    and not _is_data_transform(ctx.analysis, cls)
                ):
                    args = anc.args.posonlyargs + anc.args.args
                    if args and args[0].arg == "self":
                        return anc
                return None
        return None

    @staticmethod
    def _escapes(ctx, node: ast.Call, forward: ast.FunctionDef) -> bool:
        """The tensor itself leaves the forward (returned, or stored on an
        object), so callers see its device."""
        parents = ctx.analysis.index.parents
        cur = node
        p = parents.get(cur)
        while isinstance(p, (ast.Tuple, ast.List)):
            cur, p = p, parents.get(p)
        if isinstance(p, ast.Return):
            return True
        if isinstance(p, (ast.Assign, ast.AnnAssign)):
            targets = p.targets if isinstance(p, ast.Assign) else [p.target]
            if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                return True
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            for ret in walk(forward):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    vals = ret.value.elts if isinstance(ret.value, (ast.Tuple, ast.List)) else [ret.value]
                    if any(isinstance(v, ast.Name) and v.id in names for v in vals):
                        return True
        return False

    @staticmethod
    def _device_expr(forward: ast.FunctionDef, node: ast.Call, ctx) -> Optional[str]:
        # the forward's own `device = <...>.device` set before this statement
        stmt_line = node.lineno
        for stmt in forward.body:
            if stmt.lineno >= stmt_line:
                break
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == "device"
                and any(isinstance(n, ast.Attribute) and n.attr == "device" for n in walk(stmt.value))
            ):
                rebound = [
                    n
                    for n in walk(forward)
                    if isinstance(n, ast.Name) and n.id == "device" and isinstance(n.ctx, ast.Store)
                ]
                if len(rebound) == 1 and not any(a.arg == "device" for a in _all_args(forward)):
                    return "device"
        params = forward.args.posonlyargs + forward.args.args
        if len(params) < 2:
            return None
        p = params[1]
        # a default of None: the argument may be missing
        defaults = forward.args.defaults
        positional = params
        n_defaults = len(defaults)
        idx = 1
        if idx >= len(positional) - n_defaults:
            default = defaults[idx - (len(positional) - n_defaults)]
            if isinstance(default, ast.Constant) and default.value is None:
                return None
        if p.annotation is not None:
            q = ctx.analysis.imports.qualname(p.annotation) or ""
            ann = p.annotation
            if q in _TENSOR_ANNOTATIONS or (isinstance(ann, ast.Constant) and ann.value == "torch.Tensor"):
                return f"{p.arg}.device" if not _rebound(forward, p.arg) else None
            return None
        if not param_used_as_tensor(ctx.analysis, forward, p.arg) or _rebound(forward, p.arg):
            return None
        return f"{p.arg}.device"


_TRANSFORM_NAME_RE = re.compile(r"transform(?!er)|augment|^Random[A-Z]", re.I)


def _is_data_transform(fa, cls: ast.ClassDef) -> bool:
    """A data transform written as an nn.Module (torchvision style): it runs
    on CPU samples in DataLoader workers, where building on the CPU is right."""
    if _TRANSFORM_NAME_RE.search(cls.name):
        return True
    def build():
        names = set()
        for n in fa.index.nodes(ast.Call):
            if last_name(n.func) in ("Compose", "RandomApply", "RandomChoice"):
                names.update(r.id for r in walk(n) if isinstance(r, ast.Name))
        return names

    cache = fa.index.memoized("placement", "gpu204_transform_names", build)
    return cls.name in cache


def _does_host_work(fa, fn: ast.FunctionDef) -> bool:
    """The forward moves tensors to the host itself (`.cpu()`, `.numpy()`,
    SciPy): it computes on the CPU on purpose, as a matcher or a
    post-processing step does."""
    def build():
        out = {}
        for f in fa.index.nodes(ast.FunctionDef):
            if f.name == "forward":
                out[f] = any(_host_call(fa, n) for n in walk(f))
        return out

    return fa.index.memoized("placement", "gpu204_host_work", build).get(fn, False)


def _host_call(fa, n: ast.AST) -> bool:
    if not isinstance(n, ast.Call):
        return False
    if isinstance(n.func, ast.Attribute) and n.func.attr in ("cpu", "numpy") and not n.args:
        return True
    return (fa.imports.qualname(n.func) or "").startswith("scipy.")


def _all_args(fn: ast.FunctionDef):
    a = fn.args
    out = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    if a.vararg:
        out.append(a.vararg)
    if a.kwarg:
        out.append(a.kwarg)
    return out


# names in an `if` test that mark a branch run only while exporting/tracing
_EXPORT_FLAGS = frozenset(("onnx_trace", "is_in_onnx_export", "is_tracing", "is_scripting"))


def _in_host_only_branch(ancestors, node: ast.AST) -> bool:
    """The factory sits in the CPU branch of an `if x.is_cuda:` (or
    `torch.cuda.is_available()`) test: its `else`, or the body of
    `if not x.is_cuda:`; or in a branch that only runs
    while exporting or tracing (`if self.onnx_trace:`), where building on the
    CPU is what the code means."""
    chain = list(ancestors) + [node]
    for i, anc in enumerate(chain[:-1]):
        if not isinstance(anc, ast.If):
            continue
        child = chain[i + 1]
        in_body = child in anc.body
        in_else = child in anc.orelse
        test = anc.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        names = set(words_of_test(test.operand if negated else test))
        on_cuda = any("is_cuda" in n for n in names) or {"cuda", "is_available"} <= names
        if on_cuda and ((in_else and not negated) or (in_body and negated)):
            return True
        if names & _EXPORT_FLAGS and in_body and not negated:
            return True
    return False


def _rebound(fn: ast.FunctionDef, name: str) -> bool:
    """The parameter is assigned something that may not be a tensor of the same device."""
    for n in walk(fn):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, (ast.Tuple, ast.List)) and any(
                    isinstance(e, ast.Name) and e.id == name for e in walk(t)
                ):
                    return True
        elif isinstance(n, (ast.For, ast.comprehension)):
            if any(isinstance(e, ast.Name) and e.id == name for e in walk(n.target)):
                return True
    return False


def _needed_on_host(ctx, node: ast.Call, forward: ast.FunctionDef) -> bool:
    """The forward works on the host on purpose, or this tensor is used
    where it has to be on the host."""
    fa = ctx.analysis
    if _does_host_work(fa, forward):
        return True
    parents = fa.index.parents
    uses = [node]
    # the value the statement stores: `c = torch.randint(...)[0]`, `f = torch.rand(n) * k + lo`
    top = node
    while True:
        p = parents.get(top)
        if isinstance(p, ast.Subscript) and p.value is top:
            top = p
        elif isinstance(p, (ast.BinOp, ast.UnaryOp)):
            top = p
        elif (
            isinstance(p, ast.Attribute)
            and p.value is top
            and p.attr not in _CHAINED_SKIP
            and isinstance(parents.get(p), ast.Call)
            and parents[p].func is p
        ):
            top = parents[p]  # `.float()`, `.clamp(...)`
        else:
            break
    parent = parents.get(top)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        name = parent.targets[0].id
        after = (parent.end_lineno or parent.lineno, parent.end_col_offset or 0)
        # until the name is bound again (`n = n.to(x.device)`: later uses see the moved tensor)
        until = min(
            (
                (s.end_lineno or s.lineno, s.end_col_offset or 0)
                for s in walk(forward)
                if isinstance(s, ast.Assign)
                and (s.lineno, s.col_offset) >= after
                and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
            ),
            default=(float("inf"), 0),
        )
        uses += [
            n
            for n in walk(forward)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and after <= (n.lineno, n.col_offset) < until
        ]
    for use in uses:
        cur = use
        # walk up the expression the value flows through
        while True:
            p = parents.get(cur)
            if p is None:
                break
            if isinstance(p, ast.Attribute):
                if p.attr in (_CHAINED_SKIP if cur is node else HOST_METHODS) and isinstance(
                    parents.get(p), ast.Call
                ):
                    return True
                if cur is node and p.attr == "type" and type_move_target(fa, parents.get(p)) is not None:
                    return True  # `.type(torch.cuda.FloatTensor)`: moved at once, as `.cuda()` (GPU203's)
                cur = p
                continue
            if isinstance(p, ast.Call):
                if cur is p.func:
                    cur = p
                    continue
                fname = last_name(p.func) or ""
                if isinstance(p.func, ast.Name) and fname in _HOST_BUILTINS:
                    return True
                if fname in _PACK_FUNCS:
                    return True
                if cur in p.args and factory_name(fa, p) in _SIZED_FACTORIES:
                    return True  # `torch.rand(drop_count)`: a size
                if cur in p.args and fname in ("view", "reshape", "expand", "repeat", "new_zeros", "new_ones"):
                    return True  # a shape
                q = fa.imports.qualname(p.func) or ""
                if q.startswith(("numpy.", "scipy.")):
                    return True
                break  # a call's result is another value
            if isinstance(p, ast.keyword):
                if p.arg in _HOST_KEYWORDS:
                    return True
                break
            if isinstance(p, ast.Slice):
                return True  # `x[:, :c]`: a slice bound
            if isinstance(p, (ast.Tuple, ast.List)) and isinstance(p.ctx, ast.Load):
                cur = p  # `size=(w, h)`: follow the display to where it goes
                continue
            if isinstance(p, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in p.ops):
                break  # `x is None` looks at the name, not the values
            if isinstance(p, (ast.Subscript, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
                cur = p
                continue
            if isinstance(p, (ast.If, ast.While, ast.Assert)) and cur is p.test:
                return True  # control flow decided by its value
            if isinstance(p, (ast.For, ast.comprehension)) and cur is p.iter:
                return True  # iterated element by element in Python
            break
    return False


_MASK_COMBINERS = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})


def _in_index(fa, n: ast.AST) -> bool:
    """`n` is (part of) the index of a subscript: `d[:, mask]`, `x[:, b, mask[b]]`."""
    cur = n
    while True:
        p = fa.index.parents.get(cur)
        if isinstance(p, ast.Subscript):
            if cur is p.slice:
                return True
            cur = p  # `mask[b]` inside an index
        elif isinstance(p, ast.Tuple):
            cur = p
        else:
            return False


def _boolean_mask_index(fa, node: ast.Call, forward: ast.AST) -> bool:
    """`mask = torch.rand(n) > p` then `d[:, mask] = ...` (TabPFN's priors):
    a boolean mask that only indexes. Indexing with a CPU mask finds its
    `True` positions on the host and copies them over; with a device mask
    the GPU must find them and the host wait for the count. Either way the
    host waits, so `device=` buys nothing."""
    cmp = fa.index.parents.get(node)
    if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1
            and not isinstance(cmp.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn))):
        return False
    other = cmp.comparators[0] if cmp.left is node else cmp.left
    if fa.values.is_tensor(other, fa.index.ancestors(other)) is True:
        return False  # `torch.rand(n) <= prob` with `prob` on the device: the comparison needs it there
    if _in_index(fa, cmp):
        return True
    stmt = fa.index.parents.get(cmp)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    uses = [n for n in walk(forward) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    for use in uses:
        if _in_index(fa, use):
            continue
        call = fa.index.parents.get(use)
        if isinstance(call, ast.Call) and use in call.args and (last_name(call.func) or "") in _MASK_COMBINERS:
            continue  # `torch.logical_and(mask, other)`: still a mask
        return False
    return bool(uses)


def _indexes_a_tensor(fa, node: ast.Call, func: ast.AST) -> bool:
    """The factory's tensor is an index of a subscript in `func`: the call
    itself sits in a subscript's index (through `.unsqueeze(1)`, `[:, None]`
    and other chains on it), or it is bound to a name that one does, before
    the name is bound again (Informer's `index_sample = torch.randint(...)`,
    then `K_expand[:, :, rows, index_sample, :]`)."""
    parents = fa.index.parents
    cur, p = node, parents.get(node)
    while p is not None and not isinstance(p, (ast.stmt, FUNCS)):
        if isinstance(p, ast.Subscript) and cur is p.slice:
            return True
        if isinstance(p, (ast.Tuple, ast.Attribute, ast.Call)) or (isinstance(p, ast.Subscript) and cur is p.value):
            cur, p = p, parents.get(p)
            continue
        return False
    if not (isinstance(p, ast.Assign) and len(p.targets) == 1 and isinstance(p.targets[0], ast.Name) and cur is p.value):
        return False
    name = p.targets[0].id
    for n in walk(func):
        if isinstance(n, ast.Subscript) and n.lineno >= p.lineno and n is not p.value:
            if any(isinstance(m, ast.Name) and m.id == name and isinstance(m.ctx, ast.Load) for m in walk(n.slice)):
                return True
    return False


def _boolean(node: ast.Call) -> bool:
    """`torch.ones(n, dtype=torch.bool)`: a mask, which the host must read to
    index with (on either device)."""
    dtype = find_keyword(node, "dtype")
    return dtype is not None and last_name(dtype.value) == "bool"
