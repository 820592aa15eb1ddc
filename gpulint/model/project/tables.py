"""What a project's facts table holds: its keys, whether it says anything,
and its digest (the part of a file's cache key that other files decide).
Read by the graph that builds tables, the facts that read them and the
cache that keys results on them."""

from __future__ import annotations

import hashlib
import json


def digest(table: dict) -> str:
    return hashlib.sha1(json.dumps(table, sort_keys=True).encode()).hexdigest()[:16]


ANSWER_KEYS = ("steps", "drives", "returns", "iterates", "param_kinds", "host_built", "builders", "builders_any",
               "returns_synced", "hands_back", "builders_by", "returns_evaluated", "builders_each")
# ... and what the loops and calls of a file are read with
MODEL_KEYS = ANSWER_KEYS + ("every_step", "params", "entered_synced", "feeds_env", "grad_off", "called_off_step")
# ... and all that a table can say about a file (what rules ask besides)
TABLE_KEYS = MODEL_KEYS + ("device_side", "layers", "cuda_nearby", "torch_pin", "precision_calls", "opt_in", "default_device",
                          "returns_moved", "evaluated", "forwards", "self_test", "per_call", "option_defaults",
                          "subclass_of", "cudnn_free")


def is_empty(table: dict) -> bool:
    """The table says nothing about the file (its findings depend on no other file)."""
    return table.get("accelerator", True) and not any(table.get(k) for k in TABLE_KEYS)


def tells_the_model_nothing(table: dict) -> bool:
    """The table says nothing about the file's loops and calls: only what rules ask
    (`device_side`, `layers`), if anything."""
    return table.get("accelerator", True) and not any(table.get(k) for k in MODEL_KEYS)
