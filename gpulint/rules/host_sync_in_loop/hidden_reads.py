"""GPU101's reads that no call names: `loss.data[0]` in the idiom of torch
before 0.4, the values a progress bar formats (`postfix_values`), and the
dict a wandb run logs, built before the call (`wandb_run_values`).

In torch before 0.4 a loss was a one-element tensor, and indexing its data
gave a Python number, a read on the host; since 0.4 a loss is 0-dim and
`.data[0]` of it fails, so code that indexes a loss so was written for the
old torch, where it syncs (ssd.pytorch's `loc_loss += loss_l.data[0]`).
`OldScalarReads` is a mixin of the rule class, which provides
`_in_covered_loop`, `_hot` and `report`."""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import scope_nodes
from gpulint.model.index.walk import walk
from gpulint.model.values.host_built import assigned_value, bindings_of
from gpulint.rules.host_sync_in_loop.reads import candidate


class OldScalarReads:
    _old_reads: Set[ast.AST]  # the statements reported (emptied by the rule's `begin_file`)

    def visit_Subscript(self, node: ast.Subscript, ctx) -> None:
        value = node.value
        if not (isinstance(value, ast.Attribute) and value.attr == "data" and isinstance(value.value, ast.Name)
                and isinstance(node.slice, ast.Constant) and node.slice.value == 0
                and isinstance(node.ctx, ast.Load)):
            return
        fa = ctx.analysis
        if fa.index.mentions("__version__"):
            return  # a switch on the torch version: the other branch is the new torch's read
        func = next((a for a in reversed(ctx.ancestors) if isinstance(a, FUNCS)), None)
        if value.value.id not in _losses(fa, func if func is not None else fa.tree):
            return
        if not candidate(ctx, ctx.ancestors) or not self._in_covered_loop(fa, ctx.ancestors):  # type: ignore[attr-defined]
            return
        stmt = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.stmt)), None)
        if stmt is None or _after_a_reported_read(fa, stmt, self._old_reads):  # type: ignore[attr-defined]
            return  # (`conf_loss += loss_c.data[0]` right after `loc_loss += loss_l.data[0]`: waited already)
        if self._hot(fa, node, ctx.ancestors) is None:  # type: ignore[attr-defined]
            return
        self._old_reads.add(stmt)  # type: ignore[attr-defined]
        name = value.value.id
        self.report(ctx, node, message=(  # type: ignore[attr-defined]
            f"`{name}.data[0]` reads the loss on the host every step (on the torch before 0.4 this code is "
            f"written for, it is a Python number: a GPU sync); keep `{name}` on the device and read it when "
            "logging"))


def _after_a_reported_read(fa, stmt: ast.stmt, reported: Set[ast.AST]) -> bool:
    """The statement just before `stmt`, in its block, holds such a read."""
    where = fa.index.slot(stmt)
    return where is not None and where[2] > 0 and getattr(where[0], where[1])[where[2] - 1] in reported


def _losses(fa, scope: ast.AST) -> Set[str]:
    """The names `scope` calls `.backward()` on, and the names added up into
    one (`loss = loss_l + loss_c`, then `loss.backward()`): scalar losses."""
    def compute() -> Set[str]:
        out: Set[str] = set()
        sums = {}
        for n in scope_nodes(scope):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" \
                    and isinstance(n.func.value, ast.Name):
                out.add(n.func.value.id)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, ast.BinOp):
                sums.setdefault(n.targets[0].id, set()).update(
                    m.id for m in walk(n.value) if isinstance(m, ast.Name))
        for name in list(out):
            out |= sums.get(name, set())
        return out

    return fa.index.memoized("gpu101.losses", scope, compute)  # type: ignore[return-value]


def postfix_values(fa, call: ast.Call, ancestors: Sequence[ast.AST]) -> List[ast.AST]:
    """What `bar.set_postfix(...)` formats: its keyword values, and the values
    of the dict it is handed, a display or a name the function binds to one
    just before (SimSiam's `data_dict = {"loss": loss}` then
    `local_progress.set_postfix(data_dict)`). tqdm turns each value that is
    not a Python number into `str(value)`: a tensor's text, read on the host."""
    out = [k.value for k in call.keywords if k.arg is not None]
    if call.args:
        shown = call.args[0]
        scope = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
        # a dict display's values; else the mapping itself, where it is known to hold
        # tensors (the outputs of a model's forward: `data_dict = model.forward(x1, x2)`)
        values = _dict_values(fa, shown, scope, call)
        out.extend(values if values is not None else [shown])
    return out


def _dict_values(fa, data: ast.AST, scope, call: ast.Call) -> Optional[List[ast.AST]]:
    """The values of `data`, a dict display or a name the function `scope`
    binds to one before `call` (`assigned_value`); None when it is neither."""
    if isinstance(data, ast.Name) and scope is not None:
        data = assigned_value(fa.index, data, scope, call)
    return [v for k, v in zip(data.keys, data.values) if k is not None] if isinstance(data, ast.Dict) else None


def wandb_run_values(fa, call: ast.Call, ancestors: Sequence[ast.AST]) -> List[ast.AST]:
    """The values of the dict that `run.log(d)` logs, where `run` is `wandb`
    or a name bound to `wandb.init(...)`, and `d` a dict display or a name
    the function binds to one just before (coconut's `log_dict = {...,
    "train/loss": loss.detach().float() * k}` then `wandb_run.log(log_dict)`):
    wandb turns a one-element tensor into a number on the host."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "log" and isinstance(func.value, ast.Name)
            and call.args and fa.index.mentions("wandb")):
        return []
    scope = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
    receiver = func.value
    if receiver.id != "wandb" and not _wandb_init(fa, receiver, scope, call):
        return []
    return _dict_values(fa, call.args[0], scope, call) or []


def _wandb_init(fa, name: ast.Name, scope, call: ast.Call) -> bool:
    """`name` is bound to `wandb.init(...)` by the function around `call` (or
    the module's code), and otherwise only to None (`wandb_run = None` on the
    ranks that do not log)."""
    found = bindings_of(fa.index, scope if scope is not None else fa.tree).get(name.id) or []
    values = [st.value if isinstance(st, ast.Assign) else st for st in found]
    return any(isinstance(v, ast.Call) and fa.imports.qualname(v.func) == "wandb.init" for v in values) and all(
        (isinstance(v, ast.Call) and fa.imports.qualname(v.func) == "wandb.init")
        or (isinstance(v, ast.Constant) and v.value is None) for v in values)
