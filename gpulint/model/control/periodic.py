"""Tests true on some passes of a loop only: a modulus of a step counter
(`step % 100 == 0`), a counter looked up in a schedule (`epoch in
milestones`), the time passed since an earlier clock read against an
interval; and the test a name or a property holds where an `if` tests one
(`held_test`). The loops (`loops.Loops`) and the repetition of work
(`repetition`) ask them."""

from __future__ import annotations

import ast
import re

from gpulint.model.index.order import loops_around, target_names
from gpulint.model.index.nodes import SCOPES
from gpulint.model.index.walk import child_nodes, walk
from gpulint.model.names import ImportTable, last_name
from gpulint.model.values.host_built import assigned_value
from gpulint.model.control.contexts import CLOCK_FUNCS


def held_test(index, test: ast.AST) -> ast.AST:
    """The test a name holds, where the `if` tests a name bound a few
    statements before it in the same block (`should_validate = step %
    interval == 0` then `if should_validate:`), also each name of an
    `and`/`or` of names (`early_phase = batch_idx % log_frequency == 0 and
    step < 2000`, `late_phase = step % 2000 == 0`, then `if early_phase or
    late_phase:`); and the value a property of the class returns, for
    `self.<property>` (`if self.log_outputs_now:` with `log_outputs_now`
    returning `self.global_step % self.log_interval == 0`); else `test`."""
    stmt = index.parents.get(test)
    if not isinstance(stmt, ast.If):
        return test
    if isinstance(test, ast.BoolOp) and any(isinstance(v, (ast.Name, ast.Attribute)) for v in test.values):
        values = [_held(index, stmt, v) for v in test.values]
        return test if all(a is b for a, b in zip(values, test.values)) else ast.BoolOp(op=test.op, values=values)
    return _held(index, stmt, test)


def _held(index, stmt: ast.If, value: ast.AST) -> ast.AST:
    if isinstance(value, ast.Name):
        return _held_by_name(index, stmt, value)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return _held_by_property(index, stmt, value)
    return value


def _held_by_property(index, stmt: ast.If, attr: ast.Attribute) -> ast.AST:
    """What `self.<attr>` holds when it names a property of the class around
    `stmt` whose body is one `return`: the returned expression; else `attr`."""
    cls = index.enclosing_class(index.ancestors(stmt))
    if cls is None:
        return attr
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == attr.attr and any(
                isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
            body = [s for s in item.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                return body[0].value
            return attr
    return attr


def _held_by_name(index, stmt: ast.If, name: ast.Name) -> ast.AST:
    """What `name` holds when `stmt` tests it: the value of its single-name
    assignment a few statements before `stmt` in the same block; else `name`."""
    where = index.slot(stmt)
    if where is None:
        return name
    block = getattr(where[0], where[1], None)
    if not isinstance(block, list):
        return name
    for prev in reversed(block[max(0, where[2] - 8): where[2]]):  # a few statements back, no more
        if isinstance(prev, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and name.id in target_names(
            prev.targets[0] if isinstance(prev, ast.Assign) else prev.target
        ):
            if isinstance(prev, ast.Assign) and len(prev.targets) == 1 and isinstance(prev.targets[0], ast.Name):
                return prev.value
            return name
    # further back: the flag set at the top of the loop's body (`log_losses = i > 0 and
    # n_iter % args.print_freq == 0`), when every binding of it in the def is a plain one and
    # the last before the `if` always runs before it (a block around the `if` holds it)
    ancestors = index.ancestors(stmt)
    func = index.enclosing_scope(ancestors)
    if func is None or not loops_around(list(ancestors) + [stmt]):
        return name  # (no loop between the `if` and its def: it runs once per call, periodic or not)
    held = assigned_value(index, name, func, stmt)
    return held if held is not None else name


def is_periodic_test(test: ast.AST) -> bool:
    """A test true on some passes only: a modulus (`step % 100 == 0`), or a
    step counter looked up in a schedule (`if global_step in
    opt.upsample_steps:`, `if epoch in milestones:`)."""
    return _has_modulus(test) or is_schedule_test(test)


def elapsed_test(index, imports: ImportTable, test: ast.AST) -> bool:
    """A test of the time passed since an earlier clock read (`contexts.CLOCK_FUNCS`)
    against an interval (`current_time - last_logging > args.log_freq_time`,
    with `current_time = time.time()` just before, VICReg's logging): true
    once per interval, not on every pass."""
    stmt = index.parents.get(test)
    while stmt is not None and not isinstance(stmt, (ast.If, ast.IfExp, ast.While)) and isinstance(stmt, ast.expr):
        stmt = index.parents.get(stmt)
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for n in parts:  # (a part of an `and`: the test is true only when it is)
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1):
            continue
        if isinstance(n.ops[0], (ast.Gt, ast.GtE)):
            diff = n.left
        elif isinstance(n.ops[0], (ast.Lt, ast.LtE)):
            diff = n.comparators[0]
        else:
            continue
        if not (isinstance(diff, ast.BinOp) and isinstance(diff.op, ast.Sub)):
            continue
        now = diff.left
        if isinstance(now, ast.Name) and isinstance(stmt, ast.If):
            now = _held_by_name(index, stmt, now)
        if isinstance(now, ast.Call) and imports.call_qualname(now) in CLOCK_FUNCS:
            return True
    return False


def _has_modulus(test: ast.AST) -> bool:
    for n in walk(test):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            # `"%d" % x` is formatting, not a modulus
            if isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue
            return True
    return False


# a step, iteration or epoch counter, by its name: the model has no count of
# passes for an attribute (`self.global_step`) that another method advances
_COUNTER_WORD_RE = re.compile(r"(^|_)(global_)?(step|steps|iter|iters|iteration|it|epoch|epochs|ep)(_|$)|^(step|iter|epoch)",
                              re.I)


def is_schedule_test(test: ast.AST) -> bool:
    """`counter in schedule`: a step, iteration or epoch counter looked up in
    a collection of steps (`if self.global_step in self.opt.upsample_model_steps:`,
    `if epoch in milestones:`), true on the listed passes only. Not `not in`,
    which is true on most passes."""
    for n in walk(test):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In):
            word = last_name(n.left) if isinstance(n.left, (ast.Name, ast.Attribute)) else None
            if word and _COUNTER_WORD_RE.search(word) and not isinstance(n.comparators[0], ast.Constant):
                return True
    return False


def is_periodic_continue(stmt: ast.AST) -> bool:
    """`if step % k == 0: continue` (not `if step in skipped: continue`,
    after which the rest runs on most passes)."""
    return (
        isinstance(stmt, ast.If)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Continue)
        and not stmt.orelse
        and _has_modulus(stmt.test)
    )


def returns_off_period(stmt: ast.AST) -> bool:
    """`stmt` holds (outside nested defs) `if <periodic test>: return`."""
    stack = [stmt]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.If) and off_period(n.test) and any(isinstance(b, ast.Return) for b in n.body):
            return True
        if not isinstance(n, SCOPES):
            stack.extend(c for c in child_nodes(n) if isinstance(c, ast.stmt))
    return False


def off_period(test: ast.AST) -> bool:
    """True on every pass but the n-th: `step % n != 0`, `step % n`,
    `not step % n == 0`, or an `or` with such a part."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(off_period(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        t = test.operand
        return (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)
                and _zero(t.comparators[0]) and _modulus_test(t.left))
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq):
        return _zero(test.comparators[0]) and _modulus_test(test.left)
    return _modulus_test(test)


def _modulus_test(e: ast.AST) -> bool:
    return isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) and is_periodic_test(e)


def _zero(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and e.value == 0 and not isinstance(e.value, bool)
