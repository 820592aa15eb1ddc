"""GPU203's implicit case: an index built on the host indexes a tensor on the
device, which copies the index there on every pass:

    neg = context_rep[cycle_index(len(context_rep), 1)]     # arange(n) + shift, on the CPU

    task_indices = torch.arange(batch_size).repeat(n)
    kl = kl_divergences[task_indices, elbo_indices]

Indexing a CUDA tensor with a CPU integer tensor works: torch copies the
index to the indexed tensor's device first, a host-to-device copy from
pageable memory that `device=` on the factory would save. Only factories
that make indices count (`arange`, `randint`, `randperm`; a project helper
returning what one built), and only where the indexed value is known to be
a tensor that is not in host memory, in a file that can put tensors on an
accelerator or in a function that such a file calls (the project says so):
a dataset's transforms, in a file that names no device, work on host
tensors. Not under an option the user turns on (`if self.output_attention:`,
as GPU204 has it)."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence

from gpulint.model.control.options import under_opt_in_flag
from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.control.syncs import waits_on_host
from gpulint.model.index.nodes import LOOPS
from gpulint.model.index.order import scope_nodes
from gpulint.model.values.devices import default_device_set, factory_name
from gpulint.model.values.host import device_tensor
from gpulint.model.values.host_built import host_factory

from gpulint.rules.cpu_tensor_then_moved.host_built import (
    builds_on_cpu_somewhere, function_around, in_module_forward, waits_anyway)

# factories whose tensor is an integer index: `arange(n)`, `randint(0, n, (k,))`, `randperm(n)`
INDEX_FACTORIES = frozenset(("arange", "randint", "randperm"))


def index_copied(fa, sub: ast.Subscript, ancestors: Sequence[ast.AST]) -> Optional[ast.Call]:
    """The CPU factory (or project helper) an index of `sub` is computed
    from, where `sub` indexes a device tensor in code that runs repeatedly,
    outside a module's `forward` (GPU204's ground) and outside a function
    that waits for the GPU anyway; one finding per factory."""
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    parts = [p for p in parts if not isinstance(p, (ast.Slice, ast.Constant, ast.Compare, ast.UnaryOp, ast.BoolOp))]
    func = function_around(ancestors)
    if not parts or not (fa.index.may_use_accelerator or (func is not None and fa.facts.device_side(func))):
        return None  # (a file that names no device, and that no such file calls, computes on the host)
    if not builds_on_cpu_somewhere(fa, func) or default_device_set(fa, ancestors):
        return None
    def tensor_kind(e: ast.AST):
        return fa.values.is_tensor(e, ancestors)

    for part in parts:
        factory = host_factory(fa, part, func, tensor_kind)
        if factory is None:
            continue
        name = factory_name(fa, factory)
        if name is not None and (name not in INDEX_FACTORIES or in_module_forward(fa, func)):
            continue
        if not device_tensor(sub.value, fa) or host_factory(fa, sub.value, func, tensor_kind) is not None:
            return None  # (a tensor the host built indexed by a host index: nothing crosses)
        if _element(fa, part, func) or not runs_repeatedly(fa, sub, ancestors) or _waits_anyway(fa, func, ancestors):
            return None
        if func is not None and under_opt_in_flag(fa.index, sub, ancestors, func, fa.facts.opt_in_flags()):
            return None  # `if self.output_attention:`: attention maps the user asks for (as GPU204 has it)
        reported = fa.index.memo("gpu203.computed")
        if factory in reported:
            return None
        reported[factory] = True
        return factory
    return None


def _waits_anyway(fa, func: Optional[ast.AST], ancestors: Sequence[ast.AST]) -> bool:
    """The function around the index waits for the GPU anyway (`waits_anyway`);
    for a script's top-level code, the innermost loop around it (an
    environment loop that reads its actions on the host for `envs.step`)."""
    if func is not None:
        return waits_anyway(fa, func)
    loop = next((a for a in reversed(ancestors) if isinstance(a, LOOPS)), None)
    return loop is not None and waits_on_host(fa, loop)


def _element(fa, part: ast.AST, func: Optional[ast.AST]) -> bool:
    """`perm[i]`, or a name every assignment of which in `func` is one: one
    element, a 0-dim index, which torch reads on the host (no copy)."""
    if isinstance(part, ast.Subscript):
        return _one_element(part)
    if not isinstance(part, ast.Name) or func is None:
        return False
    values = _single_name_values(fa, func).get(part.id)
    return bool(values) and all(_one_element(v) for v in values)


def _one_element(value: ast.AST) -> bool:
    return isinstance(value, ast.Subscript) and not isinstance(value.slice, (ast.Slice, ast.Tuple))


def _single_name_values(fa, func: ast.AST) -> Dict[str, List[ast.AST]]:
    """name -> the values `func`'s own code assigns to it alone (`ind = perm[i]`),
    from one pass over the function, kept in the index."""
    def compute() -> Dict[str, List[ast.AST]]:
        out: Dict[str, List[ast.AST]] = {}
        for n in scope_nodes(func):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                out.setdefault(n.targets[0].id, []).append(n.value)
        return out

    return fa.index.memoized("gpu203.single_name_values", func, compute)  # type: ignore[return-value]


def index_message(fa, factory: ast.Call, sub: ast.Subscript) -> str:
    if factory_name(fa, factory) is None:
        return (f"`{ast.unparse(factory.func)}()` returns an index it builds on the CPU, which indexing a device "
                f"tensor at line {sub.lineno} copies to the GPU; build it on the device")
    return (f"`torch.{factory_name(fa, factory)}()` builds an index on the CPU, which indexing a device tensor at "
            f"line {sub.lineno} copies to the GPU; build it there with `device=`")
