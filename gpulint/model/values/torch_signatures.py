"""What torch's functions and Tensor members return, from torch's own type stubs.

The table `torch_signatures.json` next to this module is generated from the
stubs of a torch wheel by `scripts/gen_torch_signatures.py` (rerun it, or its
`--check`, when torch changes); linting reads it and never imports torch.

A kind is one of "tensor", "tensors" (a tuple/list/named tuple of tensors),
"number" (int, float, bool, complex and their Sym* forms), "str", "list",
"size", "dtype", "device", "none", "storage", "generator" or "other"; None
means unknown: the name is not in the table, or its overloads return
different kinds and the argument count does not tell them apart.

Stdlib only, and nothing from gpulint: the table is read once, on first use.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

TABLE_PATH = Path(__file__).with_name("torch_signatures.json")


@functools.lru_cache(maxsize=1)
def _table() -> Dict[str, Any]:
    """The parsed table (read on the first call only)."""
    with TABLE_PATH.open(encoding="utf-8") as table:
        return json.load(table)


def table_torch_version() -> str:
    """The torch version the table was generated from, e.g. "2.13.0+cpu"."""
    return str(_table()["torch_version"])


def _accepts(overload: Dict[str, Any], nargs: int) -> bool:
    """Whether an overload takes `nargs` positional arguments (`max_args` null: any number)."""
    high = overload.get("max_args")
    return overload["min_args"] <= nargs and (high is None or nargs <= high)


def _pick(section: str, name: str, overload_key: str, nargs: Optional[int]) -> Optional[str]:
    """The single kind of `name` in `section`, narrowed by `nargs` where the overloads disagree."""
    value = _table()[section].get(name)
    if value is None or isinstance(value, str):
        return value
    if nargs is None:
        return None
    kinds = set()
    for overload in _table()["overloads"].get(overload_key, ()):
        if _accepts(overload, nargs):
            kind = overload["kind"]
            kinds.update([kind] if isinstance(kind, str) else kind)
    return kinds.pop() if len(kinds) == 1 else None


def function_kind(qualname: str, nargs: Optional[int] = None) -> Optional[str]:
    """The kind that calling the torch function `qualname` returns, or None if unknown.

    `qualname` is fully qualified: "torch.arange", "torch.nn.functional.relu",
    "torch.linalg.norm", "torch.cuda.synchronize". `nargs`, the number of
    positional arguments of the call, picks among overloads that disagree
    (`torch.max(x)` is a tensor, `torch.max(x, 1)` a (values, indices) pair).
    """
    return _pick("functions", qualname, qualname, nargs)


def tensor_method_kind(name: str, nargs: Optional[int] = None) -> Optional[str]:
    """The kind a Tensor method returns, or None if unknown.

    `nargs` counts the positional arguments after `self`: `x.type()` is a
    "str", `x.type(torch.float16)` a "tensor"; `x.size()` a "size",
    `x.size(0)` a "number".
    """
    return _pick("tensor_methods", name, f"tensor.{name}", nargs)


def tensor_attribute_kind(name: str) -> Optional[str]:
    """The kind of a Tensor attribute or property (`shape` -> "size", `grad` -> "tensor"), or None."""
    value = _table()["tensor_attributes"].get(name)
    return value if isinstance(value, str) else None


def kinds_of(section: str, name: str) -> List[str]:
    """Every kind the table records for `name` in `section` ("functions",
    "tensor_methods" or "tensor_attributes"); empty when it is not there."""
    value = _table()[section].get(name)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
