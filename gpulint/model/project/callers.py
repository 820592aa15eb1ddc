"""What the project's calls say of how a function runs, beyond the steps
of loops (`ProjectGraph.every_step`): which functions of host-only files
the device side reaches, and which functions the project calls only off
the step; and what every call of a function brings with it (a host read
just before, autograd off, an evaluated model, an environment fed with its
result)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Dict, List, Set

from gpulint.model.project.imports import MODULE_CODE
from gpulint.model.project.summary import BODY, EVAL, TRAIN

if TYPE_CHECKING:
    from gpulint.model.project.graph import ProjectGraph


def device_side(graph: "ProjectGraph") -> Set[str]:
    """The functions of files whose summary says `host_only` that a
    function of another file reaches through calls."""
    host_only = {path for path, (_, summary) in graph.files.items() if summary.get("host_only")}
    if not host_only:
        return set()
    todo = deque(fid for fid, path in graph.owner.items() if path not in host_only)
    seen = set(todo)
    found: Set[str] = set()
    while todo:
        for cid, _, _ in graph.resolved_calls(todo.popleft()):
            if cid not in seen:
                seen.add(cid)
                todo.append(cid)
                if graph.owner[cid] in host_only:
                    found.add(cid)
    return found


# hooks a framework calls (PyTorch's `__call__`, Lightning's loop): the project's own calls are not all of them
_FRAMEWORK_HOOKS = frozenset({"forward", "__call__", "training_step", "validation_step", "test_step", "predict_step",
                              "backward", "step"})


def called_off_step(graph: "ProjectGraph") -> Set[str]:
    """The functions that the project calls, from other functions, and never
    on every step of a loop (not in `every_step`): TensoRF's
    `updateAlphaMask`, called at the iterations of a schedule only. Their
    names (`update...`, `sample`) say nothing then; the calls do. Not what a
    framework may call without the project showing it: a hook (`forward`),
    a function nothing in the project calls (a callback, an entry point),
    and whatever those reach through calls."""
    callees = {fid: [cid for cid, _, _ in graph.resolved_calls(fid)] for fid in graph.functions}
    called: Set[str] = {cid for fid, cids in callees.items() for cid in cids if cid != fid}
    todo = deque()
    for fid in graph.functions:
        name = fid.split("@", 1)[0].rsplit(".", 1)[-1]
        if name != MODULE_CODE and (fid not in called or name in _FRAMEWORK_HOOKS):
            todo.append(fid)
    unseen = set(todo)  # what code the project does not show may run, and its callees
    while todo:
        for cid in callees.get(todo.popleft(), ()):
            if cid not in unseen:
                unseen.add(cid)
                todo.append(cid)
    return {cid for cid in called if cid not in graph.every_step and cid not in unseen}


def called_in_low_precision(graph: "ProjectGraph") -> Set[str]:
    """The functions that a function of a file naming a reduced precision
    calls (`low_precision` in its summary: a trainer script that casts the
    model to bfloat16, then calls another file's pipeline step)."""
    return {cid for fid, path in graph.owner.items() if graph.files[path][1].get("low_precision")
            for cid, _, _ in graph.resolved_calls(fid)}


def entered_synced(graph: "ProjectGraph") -> Set[str]:
    """The functions that run every step and that every per-step call
    (from a loop's step, or from the body of a function that runs every
    step) makes right after a host read of its caller (a summary's
    `synced`): MAE's `all_reduce_mean(loss_value)` after `torch.cuda.synchronize()`."""
    return _every_per_step_call_marked(graph, "synced", per_step_bodies=True)


def feeds_env(graph: "ProjectGraph") -> Set[str]:
    """The functions that run every step and whose every per-step call hands
    its result to an environment's step (a summary's `feeds_env`: `action =
    self.explore(state)` then `env.step(action)`): what it returns is the
    action the host needs."""
    return _every_per_step_call_marked(graph, "feeds_env", per_step_bodies=False)


def entered_grad_off(graph: "ProjectGraph") -> Set[str]:
    """The functions every call of which that the project makes runs with
    autograd off: under `with torch.no_grad():` (a summary's `grad_off`), or
    in a function that itself only runs so (melgan's `validate(...)`, called
    only inside `with torch.no_grad():` in another file). A function the
    project never calls is not one."""
    if not any(f.get("grad_off") for f in graph.functions.values()):
        return set()
    edges = []  # (caller, callee, the call runs with autograd off)
    for fid, f in graph.functions.items():
        marked = set(f.get("grad_off", ()))
        for cid, _, call in graph.resolved_calls(fid):
            if cid != fid:
                edges.append((fid, cid, call[0] in marked))
    off: Set[str] = set()
    while True:  # (grows each round: a caller found to run with grad off turns its calls off)
        ok: Dict[str, bool] = {}
        for caller, cid, marked in edges:
            ok[cid] = ok.get(cid, True) and (marked or caller in off)
        found = {cid for cid, yes in ok.items() if yes}
        if found == off:
            return off
        off = found


def entered_evaluated(graph: "ProjectGraph") -> Dict[str, List[str]]:
    """function -> the parameters every call of it that the project makes
    (one at least) hands a model its caller switched to eval mode (a
    summary's `evaluated`): SASRec's `evaluate(model, dataset, args)`,
    called from `main.py` after `model.eval()`."""
    if not any(f.get("evaluated") for f in graph.functions.values()):
        return {}
    found: Dict[str, Set[str]] = {}
    for fid, f in graph.functions.items():
        marked = f.get("evaluated", {})
        for cid, _, call in graph.resolved_calls(fid):
            params = graph.functions[cid].get("params", [])
            names = {params[int(k)] if k.isdigit() and int(k) < len(params) else k for k in marked.get(call[0], ())}
            found[cid] = names if cid not in found else found[cid] & names
    return {cid: sorted(names) for cid, names in found.items() if names}


def _every_per_step_call_marked(graph: "ProjectGraph", key: str, per_step_bodies: bool) -> Set[str]:
    """The functions that run every step and every per-step call of which its
    caller's summary lists under `key`: calls from a loop's step and, with
    `per_step_bodies`, from the body of a function that runs every step (a
    per-step function's own calls are never marked: they count against)."""
    ok: Dict[str, bool] = {}
    for fid, f in graph.functions.items():
        body = per_step_bodies and fid in graph.every_step
        marked = f.get(key)
        marked = set(marked) if marked else ()
        for cid, where, call in graph.resolved_calls(fid):
            if where in (TRAIN, EVAL) or (body and where == BODY):
                ok[cid] = ok.get(cid, True) and call[0] in marked
    return {cid for cid, yes in ok.items() if yes and cid in graph.every_step}
