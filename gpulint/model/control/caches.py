"""Tests that make an `if` block a cache's fill or refresh, not repeated
work: `if key not in cache: cache[key] = ...` (once per key), `if
self.grid.shape != x.shape: self.grid = ...` (once per shape), and `a or
b` of such tests and the object's own flags (VQ-Diffusion's `if
self.zero_vector is None or self.zero_vector.shape[0] != b:`). `repetition`
asks them whether code in such a block runs repeatedly."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.walk import walk

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

# words of a counter's name (`step`, `n_iter`, `num_updates`): a counter advances, a cache key does not
COUNTER_HINTS = ("step", "iter", "update", "idx", "count")


def cache_guard(test: ast.AST, stmt: ast.AST, block: Sequence[ast.AST], fa: Optional["FileModel"],
                once: Callable[[ast.AST], bool]) -> bool:
    """`test`, the test of the `if` whose `block` holds `stmt`, runs the block
    only when a cache is empty or stale (`once`: the caller's test of a
    one-shot guard, `if self.x is None:`); also `a or b` whose parts are
    such tests, or flags of the object (`self.dynamic`, an option), one of
    them at least a test (RT-DETR's `if self.dynamic or self.shapes !=
    shapes:`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        tests = [v for v in test.values if not (isinstance(v, ast.Attribute) and on_self(v))]
        return bool(tests) and all(cache_guard(v, stmt, block, fa, once) for v in tests)
    return once(test) or fills_its_cache(test, stmt) or refreshes_its_cache(test, stmt, fa) \
        or block_refreshes_its_cache(test, block)


def fills_its_cache(test: ast.AST, stmt: ast.AST) -> bool:
    """`if key not in cache: cache[key] = value`: the value is built once per
    key. Only when the store uses the key and the mapping that the test
    reads (a store under another key misses the cache every time)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn)):
        return False
    if not isinstance(stmt, ast.Assign):
        return False
    key, cache = ast.dump(test.left), ast.dump(test.comparators[0])
    return any(
        isinstance(t, ast.Subscript) and ast.dump(t.value) == cache and ast.dump(t.slice) == key
        for t in stmt.targets
    )


def refreshes_its_cache(test: ast.AST, stmt: ast.AST, fa: Optional["FileModel"] = None) -> bool:
    """`if self.grid[i].shape[2:4] != x.shape[2:4]: self.grid[i] = ...`: the object's state is rebuilt only
    when what it was built for changes (a YOLO head's grid, per feature-map size): the test compares (`!=`, or
    `>`/`<` for a cache that grows: `if seq_len > self.max_seq_len_cached:`) a part of the object's state
    (`self.<...>`) that the statement stores, itself or through a method of the file it calls on `self` (a
    rotary embedding's `self._set_cos_sin_cache(seq_len)`)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.NotEq, ast.Gt, ast.GtE, ast.Lt, ast.LtE))):
        return False
    read = {ast.unparse(n) for n in walk(test) if isinstance(n, (ast.Attribute, ast.Subscript)) and on_self(n)}
    if not read:
        return False
    if isinstance(stmt, ast.Assign):
        return any(on_self(t) and ast.unparse(t) in read for t in stmt.targets)
    if not isinstance(test.ops[0], ast.NotEq) and fa is not None and isinstance(stmt, ast.Expr) \
            and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            return any(isinstance(d, FUNCS) and d.name == f.attr and any(
                isinstance(n, ast.Assign) and any(on_self(t) and ast.unparse(t) in read for t in n.targets)
                for n in walk(d)) for d in fa.index.nodes(*FUNCS))
    return False


def block_refreshes_its_cache(test: ast.AST, block: Sequence[ast.AST]) -> bool:
    """`if seq_len > self.max_seq_len_cached: self.max_seq_len_cached = seq_len; self.yarn(...)`: a statement of
    the block stores into the state the test compares (`refreshes_its_cache`) what the test compared it with,
    so the whole block runs only when the state is stale, what it calls included. Not a counter reset (`if
    self.delay_counter > self.delay_freq: ...; self.delay_counter = 0`, TD3's delayed update), which stores
    something else, nor a step counter's advance (`if global_step > self.target_update_step:`)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    others = {n.id for side in (test.left, test.comparators[0]) if not on_self(side)
              for n in walk(side) if isinstance(n, ast.Name)}
    if not others or any(h in name.lower() for name in others for h in COUNTER_HINTS):
        return False  # `if global_step > self.target_update_step:`: once per step, not a cache (a counter's name)
    return any(
        isinstance(stmt, ast.Assign) and refreshes_its_cache(test, stmt)
        and any(isinstance(n, ast.Name) and n.id in others for n in walk(stmt.value)) for stmt in block)


def on_self(node: ast.AST) -> bool:
    """`self.<...>`: an attribute (or a part of one) of the object."""
    root = node
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    return node is not root and isinstance(root, ast.Name) and root.id == "self"
