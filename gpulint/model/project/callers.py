"""What the project's calls say of how a function runs, beyond the steps
of loops (`ProjectGraph.every_step`): which functions of host-only files
the device side reaches, and which functions the project calls only off
the step."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Set

from gpulint.model.project.imports import MODULE_CODE

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

