"""GPU203's indirect case: a tensor computed on the host from a CPU factory
and then moved, with casts, arithmetic or elementwise functions between
the factory and the move:

    freqs = torch.exp(-math.log(10000) * torch.arange(half) / half).to(t.device)

    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = emb.to(device=timesteps.device)

The values layer's `host_factory` finds the factory such an expression is
computed from (`model/values/host_built.py`); a move of it copies what the
GPU could have built. This module decides where that is worth a finding.
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence

from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.control.syncs import waits_on_host
from gpulint.model.index.nodes import FUNCS
from gpulint.model.values.devices import default_device_set, factory_name, range_tensor
from gpulint.model.values.host_built import defs_building_on_cpu, distribution_draw, host_factory
from gpulint.model.values.literals import NUMPY_DRAWS, NUMPY_REPEATS, constant_table, numpy_source

def computed_then_moved(fa, moved: ast.AST, ancestors: Sequence[ast.AST]) -> Optional[ast.Call]:
    """The CPU factory that `moved` (what a `.to(<device>)` / `.cuda()`
    moves) is computed from, where that is worth a finding: code that runs
    repeatedly, not under a default device, not in a module's `forward`
    (GPU204's ground), not in a function that waits for the GPU anyway
    (`waits_anyway`); one finding per factory."""
    func = function_around(ancestors)
    if isinstance(moved, ast.Constant) or default_device_set(fa, ancestors):
        return None
    if not builds_on_cpu_somewhere(fa, func):
        return None  # no CPU factory in the def at all: nothing to find, and no type inference asked
    factory = host_factory(fa, moved, func, lambda e: fa.values.is_tensor(e, ancestors))
    if factory is None or not runs_repeatedly(fa, moved, ancestors) or waits_anyway(fa, func):
        return None
    if factory_name(fa, factory) not in (None, "tensor", "as_tensor") and in_module_forward(fa, func):
        return None  # a factory in a module's forward: GPU204 reports it (a helper's is GPU203's)
    reported = fa.index.memo("gpu203.computed")
    if factory in reported:
        return None  # one finding per factory, however many moves copy what it computes
    reported[factory] = True
    return factory


def builds_on_cpu_somewhere(fa, func: Optional[ast.AST]) -> bool:
    """`func` (the module's code where None) calls a tensor factory that
    builds on the CPU, or a project function that returns what one built."""
    if func in defs_building_on_cpu(fa):
        return True
    if not fa.facts.any_host_built():
        return False
    def calling() -> frozenset:  # the defs that call a project helper returning a host-built tensor
        return frozenset(function_around(fa.index.ancestors(c)) for c in fa.index.nodes(ast.Call)
                         if fa.facts.host_built(c))
    return func in fa.index.memoized("gpu203.host_built_callers", None, calling)


def computed_message(fa, factory: ast.Call, move: ast.Call) -> str:
    line = move.func.value.end_lineno  # type: ignore[attr-defined]
    if constant_table(fa, factory):
        return (
            f"`{_callee_text(factory)}([...])` builds a constant table on the CPU, copied to the GPU at line {line} "
            "each time, a blocking copy; keep it on the device (a buffer, or built once outside the loop)"
        )
    made = numpy_source(fa, factory, lambda n: None)
    maker_name = fa.imports.qualname(made.func) or "" if made is not None else ""
    instead = NUMPY_DRAWS.get(maker_name)
    instead = f"{instead}(..., device=...)" if instead is not None else NUMPY_REPEATS.get(maker_name)
    if instead is not None:
        maker = ast.unparse(made.func).replace("numpy.", "np.", 1)  # type: ignore[union-attr]
        return (
            f"`{maker}()` makes the data on the CPU and `{_callee_text(factory)}(...)` copies it to the GPU at "
            f"line {line}, a blocking copy each time; build it there with `{instead}`"
        )
    if made is not None or _callee_text(factory).endswith("from_numpy"):  # a table of literals, or through names
        return (
            f"`{_callee_text(factory)}(...)` makes a constant on the CPU from numpy, copied to the GPU at line {line} "
            "each time, a blocking copy; keep it on the device (a buffer, or built once outside the loop)"
        )
    if distribution_draw(fa, factory, function_around(fa.index.ancestors(factory))):
        return (
            f"`{_callee_text(factory)}()` draws a tensor on the CPU (a distribution built from Python numbers), "
            f"copied to the GPU at line {move.func.value.end_lineno}; draw it there (`torch.randn(..., "  # type: ignore[attr-defined]
            "device=...)`, or a distribution built from tensors on the device)"
        )
    if range_tensor(fa, factory):
        return (
            f"`{_callee_text(factory)}(range(...))` builds an index range on the CPU, copied to the GPU at line "
            f"{move.func.value.end_lineno}; build it there with `torch.arange(..., device=...)`"  # type: ignore[attr-defined]
        )
    if factory_name(fa, factory) is None:  # a project function returning what a CPU factory built
        return (
            f"`{_callee_text(factory)}()` returns a tensor it builds on the CPU, copied to the GPU at line "
            f"{move.func.value.end_lineno}; build it on the device (pass the device in, and `device=` to its "  # type: ignore[attr-defined]
            "factories)"
        )
    return (
        f"`torch.{factory_name(fa, factory)}()` builds a tensor on the CPU that is computed on there and copied "
        f"to the GPU at line {move.func.value.end_lineno}; build it there with `device=`"  # type: ignore[attr-defined]
    )


def _callee_text(call: ast.Call) -> str:
    func = call.func
    text = ast.unparse(func)
    return text if len(text) <= 40 else (func.attr if isinstance(func, ast.Attribute) else "...")


def function_around(ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
    """The innermost def around the code (through lambdas and comprehensions)."""
    return next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)


def in_module_forward(fa, func: Optional[ast.AST]) -> bool:
    """`func` is the `forward` of an `nn.Module` class (GPU204's ground)."""
    if func is None or func.name != "forward":  # type: ignore[attr-defined]
        return False
    cls = fa.index.parents.get(func)
    return isinstance(cls, ast.ClassDef) and fa.values.is_module_class(cls)


def waits_anyway(fa, func: Optional[ast.AST]) -> bool:
    """The function around the move reads device data on the host itself
    (`waits_on_host`): the host waits for the GPU there anyway, so the stall
    of one more small copy costs next to nothing."""
    return func is not None and waits_on_host(fa, func)
