"""Reads the host already waits for: a statement that follows a host read of
the same step (or an explicit sync: `torch.cuda.synchronize()`, a barrier),
or a value derived from one, waits for nothing new; so does a function that
every per-step caller calls right after such a read (`entered_synced`, from
the project). The walk back over the statements before a read, asked by
GPU101 of its reads and by the project's summaries of their calls."""

from __future__ import annotations

import ast
from bisect import bisect_left
from typing import Iterator, List, Optional

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import loops_around, scope_nodes, unbound_parameters
from gpulint.model.names import dotted
from gpulint.model.values.devices import move_target
from gpulint.model.values.host import device_tensor
from gpulint.model.values.narrowing import keyed_by_text
from gpulint.model.values.literals import tensor_of_device_tensors
from gpulint.model.values.kinds import CONVERSIONS, HOST_METHODS, PARAM_GROUPS, TENSOR
from gpulint.model.values.shapes import CALL_NAMES, device_data_dependent_op, sized_by_tensor
from gpulint.model.control.eval_order import evaluation_order
from gpulint.model.control.explicit_syncs import is_explicit_sync
from gpulint.model.control.options import taken_by_default
from gpulint.model.index.walk import child_nodes, walk



# how many statements back an operation sized by the data still counts as a read (`_step_back`)
SIZES_NEAR = 6


def on_host_already(expr: ast.AST) -> bool:
    """`x.cpu().numpy()`, `x.cpu().tolist()`: the copy happened in an inner call
    (reported there); what follows works on host memory."""
    while True:
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in HOST_METHODS:
                return True
            expr = func
        elif isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        else:
            return False


def truth_operands(test: ast.AST) -> Iterator[ast.AST]:
    """The values whose truth an `if`/`while` test takes: through `not`, `and`, `or`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from truth_operands(test.operand)
    elif isinstance(test, ast.BoolOp):
        for v in test.values:
            yield from truth_operands(v)
    elif isinstance(test, ast.NamedExpr):
        yield from truth_operands(test.value)
    else:
        yield test


def reads_truth(test: ast.AST, analysis) -> bool:
    """An `if` test that surely takes a device tensor's truth value (its first
    operand, which always runs: `if self.tokens < warmup:`)."""
    first = next(truth_operands(test), None)
    return first is not None and device_tensor(first, analysis) and not keyed_by_text(first, analysis)


def _converts_tensor(n: ast.AST, analysis) -> bool:
    """`float(t)`, `int(t)`, `bool(t)` of a tensor not known to be in host memory."""
    if not (isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords):
        return False
    return analysis.imports.qualname(n.func) in CONVERSIONS and device_tensor(n.args[0], analysis)


def _slices_by_tensor(n: ast.AST, analysis) -> bool:
    """`x[:length]` with a device tensor `length` as a bound (a name, or a
    name plus or minus a number; `slice_bound_tensor`): Python reads its
    `__index__` on the host."""
    if not isinstance(n, ast.Slice):
        return False
    for bound in (n.lower, n.upper, n.step):
        if isinstance(bound, ast.BinOp) and isinstance(bound.right, ast.Constant):
            bound = bound.left
        if isinstance(bound, ast.Name) and slice_bound_tensor(bound, analysis.index.ancestors(bound), analysis):
            return True
    return False


def slice_bound_tensor(name: ast.Name, ancestors, analysis) -> bool:
    """The name holds a device tensor (`device_tensor`), or is bound by a loop
    over `zip(...)` to the elements of a name that does (`for pred, length
    in zip(preds, lengths)` over CUDA `lengths`: an element of a tensor is a
    tensor, on its device). A parameter the function never binds again says
    nothing of its device (flair's `_get_scores_from_features(features,
    lengths)`, handed CPU lengths): not one."""
    if analysis.values.kind_at(name, ancestors) == TENSOR:
        return not analysis.host.is_host_tensor(name, ancestors) and not _unbound_parameter(name, ancestors, analysis)
    source = _zipped_from(name, ancestors)
    return (source is not None and device_tensor(source, analysis)
            and not _unbound_parameter(source, analysis.index.ancestors(source), analysis))


def _unbound_parameter(name: ast.Name, ancestors, analysis) -> bool:
    """`name` is a parameter of the innermost def around it that its own code
    never binds again (`index.order.unbound_parameters`), and that the
    project does not say every per-step caller hands a tensor not in host
    memory (`CallFacts.parameter_kind`: vits2's `slice_segments(x, ids_str)`,
    handed the CUDA starts the model drew)."""
    func = next((a for a in reversed(ancestors) if isinstance(a, FUNCS)), None)
    return func is not None and name.id in unbound_parameters(analysis.index, func) \
        and analysis.facts.parameter_kind(func, name.id) != TENSOR


def _zipped_from(name: ast.Name, ancestors) -> Optional[ast.AST]:
    """The argument of `zip(a, b, ...)` whose elements the innermost loop
    around `name` binding it (`for x, y in zip(a, b):`) binds it to, where
    that argument is a name; else None."""
    for anc in reversed(ancestors):
        if isinstance(anc, FUNCS):
            return None
        if not isinstance(anc, (ast.For, ast.AsyncFor)) or not isinstance(anc.target, ast.Tuple):
            continue
        it = anc.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip"
                and len(it.args) == len(anc.target.elts) and not it.keywords):
            continue
        for t, a in zip(anc.target.elts, it.args):
            if isinstance(t, ast.Name) and t.id == name.id:
                return a if isinstance(a, ast.Name) else None
    return None


def _logs_device_tensor(n: ast.AST, analysis) -> bool:
    """`writer.add_scalar(tag, t, step)` or `wandb.log({"loss": t})` of a
    tensor not known to be in host memory."""
    return any(device_tensor(v, analysis) for v in logged_values(n))


def _formats_device_tensor(n: ast.AST, analysis) -> bool:
    """`f"{loss=}"`, `print(loss)`: formatting a tensor not known to be in
    host memory copies its values to the host (its `__format__` / `__repr__`)."""
    if isinstance(n, ast.FormattedValue):
        return device_tensor(n.value, analysis)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print":
        return any(not isinstance(a, ast.Starred) and device_tensor(a, analysis) for a in n.args)
    return False


def logged_values(call: ast.AST) -> List[ast.AST]:
    """What `writer.add_scalar(tag, value, step)` (or `scalar_value=value`)
    logs, the values of the dict display `writer.add_scalars(tag, {...},
    step)` logs, or the values of the dict display `wandb.log({"loss": value, ...})`
    logs: TensorBoard's SummaryWriter and wandb turn a tensor into a number
    on the host (wandb's `.item()` of a one-element tensor)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return []
    if _wandb_log(call.func):
        data = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "data"), None)
        return [v for k, v in zip(data.keys, data.values) if k is not None] if isinstance(data, ast.Dict) else []
    if call.func.attr == "add_scalars":  # `add_scalars(main_tag, {"mel": mel_loss, ...}, step)`
        data = call.args[1] if len(call.args) >= 2 else next(
            (k.value for k in call.keywords if k.arg == "tag_scalar_dict"), None)
        return [v for k, v in zip(data.keys, data.values) if k is not None] if isinstance(data, ast.Dict) else []
    if call.func.attr != "add_scalar":
        return []
    if len(call.args) >= 2 and not isinstance(call.args[1], ast.Starred):
        return [call.args[1]]
    return [k.value for k in call.keywords if k.arg == "scalar_value"]


def _wandb_log(func: ast.Attribute) -> bool:
    return func.attr == "log" and isinstance(func.value, ast.Name) and func.value.id == "wandb"


# `float(t)`, `int(t)`, `bool(t)` (`CONVERSIONS`) and `print(t)`: plain calls that may read a tensor
_READING_BUILTINS = frozenset(q.rsplit(".", 1)[-1] for q in CONVERSIONS) | {"print"}


def may_read_by_form(node: ast.AST, methods) -> bool:
    """`node` may be a host read, by its form alone (a cheap test before
    `has_host_read`, which infers values): a call of one of `methods`
    (`.item()`, `.cpu()`, `synchronize()`) or of `add_scalar`, `float(...)`,
    `print(...)`, a formatted value, or an `if`/`while` (its test's truth)."""
    if isinstance(node, (ast.If, ast.While, ast.FormattedValue)):
        return True
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in methods or func.attr == "add_scalar" or _wandb_log(func)
    return isinstance(func, ast.Name) and func.id in _READING_BUILTINS


def has_host_read(node: ast.AST, analysis=None) -> bool:
    """`node` surely reads a tensor on the host when it runs: reads in the
    branches of `x if c else y`, after the first operand of `and`/`or`, or in
    lambdas and comprehensions may not run, and do not count. With
    `analysis`, nor do reads known not to wait for the GPU (`may_sync`), and
    `float(t)` of a device tensor counts, and so does a call of a function
    whose every return reads on the host (`CallFacts.returns_synced`)."""
    for n in _surely_evaluated(node):
        if is_host_read_call(n) and (analysis is None or may_sync(n, analysis)) or is_explicit_sync(n, analysis):
            return True
        if analysis is not None and (_converts_tensor(n, analysis) or sized_by_tensor(n, analysis) or _logs_device_tensor(n, analysis)
                                     or _formats_device_tensor(n, analysis) or _slices_by_tensor(n, analysis)
                                     or tensor_of_device_tensors(n, analysis)):
            return True
        if analysis is not None and isinstance(n, ast.Call) and analysis.facts.returns_synced(n):
            return True  # a call whose every return reads on the host (`clip_gradient(...)` returning `.item()`)
    return False


def _surely_evaluated(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and the nodes below it that run whenever it runs: not the
    branches of `x if c else y`, what follows the first operand of
    `and`/`or`, or the bodies of lambdas and comprehensions."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.IfExp):
            stack.append(n.test)
        elif isinstance(n, ast.BoolOp):
            stack.append(n.values[0])
        elif not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(child_nodes(n))


def _sizes_surely(stmt: ast.AST, analysis) -> bool:
    """A simple statement that surely runs an operation sized by the data
    (`sizes_from_values`), as `has_host_read` reads a statement."""
    return isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
        sizes_from_values(n, analysis) for n in _surely_evaluated(stmt))


def sizes_from_values(n: ast.AST, analysis) -> bool:
    """`x[mask]` with a bool tensor `mask`, `torch.nonzero(x)`, one-argument
    `torch.where(m)`, `masked_select`, `unique` (`shapes.data_dependent_op`)
    of a tensor not known to be in host memory: before it can size the
    result, the host waits for the GPU to count (RAFT's `epe[valid]`), as a
    read does."""
    if isinstance(n, ast.Subscript):
        if not isinstance(n.ctx, ast.Load) or isinstance(n.slice, (ast.Constant, ast.Slice)):
            return False
    elif not isinstance(n, ast.Call) or (
            n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) not in CALL_NAMES:
        return False
    return device_data_dependent_op(analysis, n, analysis.index.ancestors(n)) is not None


def statement_and_block(chain, analysis):
    """(the innermost statement of `chain`, the statement list holding it)."""
    for i in range(len(chain) - 1, 0, -1):
        stmt = chain[i]
        if isinstance(stmt, ast.stmt):
            block = analysis.index.block_of(chain[i - 1], stmt)
            return stmt, block
    return None, None


def follows_host_read(node, ancestors, analysis, at=None, limit=None, uploads: bool = True) -> bool:
    """The loop has just waited for the GPU, and this read only waits for what
    was queued since, a few small kernels: an earlier statement of the step
    surely read a tensor on the host (`a = x.item()` then `b = y.item()`;
    also an `if`/`try`/`with` each of whose paths ends with such a
    statement) and nothing since queued model work (see `synced_before`),
    or this statement did, in a part evaluated before this read and every
    time (`{"a": a.item(), "b": b.item()}`). `at` is the node whose
    evaluation makes the read (default `node`): for an f-string, the first
    tensor it formats. `limit`: at most that many statements are walked back.
    `uploads`: a blocking copy to the GPU counts as such a read (the copy
    waits for the queue too); a copy that asks only whether the host read
    passes False. A function that every per-step caller enters right after a read
    (`CallFacts.entered_synced`) starts synced."""
    chain = list(ancestors) + [node]
    stmt, block = statement_and_block(chain, analysis)
    if stmt is None:
        return False
    if queues_model_work(stmt, list(ancestors), analysis):
        return False  # this statement queues real work of its own (before reading, or we cannot tell)
    return synced_before(chain, analysis, limit, uploads) or read_earlier_in_statement(stmt, node if at is None else at, analysis)


def sync_follows(node, ancestors, analysis, limit: int = 8) -> bool:
    """An explicit sync (`torch.cuda.synchronize()`, an alias of it) comes
    after the read's statement, in the same block (or after the `with`
    statement whose block it ends), with only simple
    statements that queue no model work between: the host waits for the
    same work there anyway (nanochat reads the loss, then synchronizes to
    time the step, `timing_sync`), so the read costs nothing of its own."""
    chain = list(ancestors) + [node]
    stmt, block = statement_and_block(chain, analysis)
    where = analysis.index.slot(stmt) if stmt is not None else None
    while where is not None:
        k = where[2]
        for j in range(k + 1, min(len(block), k + 1 + limit)):
            b = block[j]
            if _sync_statement(b, analysis):
                return timing_sync(block, j, analysis)
            if is_compound(b) or queues_model_work(b, chain[:-1], analysis):
                return False
        if k + 1 + limit <= len(block):
            return False
        limit -= len(block) - k - 1
        # the end of a `with` block (`with torch.no_grad():` around the read): on after the `with`
        owner = where[0]
        if not (isinstance(owner, (ast.With, ast.AsyncWith)) and where[1] == "body") or limit <= 0:
            return False
        where = analysis.index.slot(owner)
        block = getattr(where[0], where[1]) if where is not None else None
    return False


def _sync_statement(stmt, analysis) -> bool:
    """`torch.cuda.synchronize()` (or an alias) as a statement of its own."""
    return isinstance(stmt, ast.Expr) and is_explicit_sync(stmt.value, analysis)


def timing_sync(block, j: int, analysis) -> bool:
    """`block[j]`, an explicit sync, is there to time the GPU's work: the
    next statement reads a clock (`synchronize()` then `t1 = time.time()`).
    Such a sync stays, so a read beside it costs nothing; a sync that is
    there for nothing (GPU102) may go, and the read would then wait alone."""
    if j + 1 >= len(block):
        return False
    return any(analysis.contexts.is_clock_call(n) for n in walk(block[j + 1]))


def queues_model_work(node, ancestors, analysis) -> bool:
    """`node` calls a model, `.backward()` or an optimizer step somewhere, or
    a project function that runs one (`self.optimize(loss)`): GPU work worth
    waiting for (small tensor ops such as `clamp`, `mse_loss` or `mean` are not)."""
    for n in walk(node):
        if isinstance(n, ast.Call) and (
            analysis.steps.is_model_call(n, ancestors) or analysis.steps.is_backward_call(n) or analysis.steps.is_optimizer_step(n, ancestors)
            or analysis.steps.helper_steps(n)
        ):
            return True
    return False


# compound statements that a walk back may pass (when they queue no model work
# and hold no loop) and whose bodies it may leave for the statements before them
PASSABLE = (ast.If, ast.With, ast.AsyncWith, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


LOOP_STMTS = (ast.For, ast.AsyncFor, ast.While)


def synced_before(chain, analysis, limit=None, uploads: bool = True) -> bool:
    """Walking back from the innermost statement of `chain` through the
    statements run before it in this step, a statement that surely read on
    the host (`ends_reading`) comes before any that queues model work.

    The walk passes simple statements and `if`/`with`/`try` statements that
    queue no model work and hold no loop; from the top of the body of an
    `if` (or its `else`), a `with` or a `try` it goes on before that
    statement, once its header (an `if` test, `with` items) has been checked
    the same way. It stops at the top of a loop's body (what ran before is
    the previous iteration, or the code before the loop), at an `except`,
    `else` or `finally` block of a `try`, and at a function's body, unless
    the project says every per-step caller enters the function right after
    a read (`entered_synced`). With `limit`, it gives up (False) after that
    many statements. Without `uploads`, a blocking copy to the GPU does not
    count as a read."""
    budget = limit
    plain = [True] if uploads else None  # the walk has passed only tensor ops so far (`blocking_upload` counts then)
    near = [SIZES_NEAR]  # statements left within which an operation sized by the data counts as a read
    for depth in range(len(chain) - 1, 0, -1):
        stmt = chain[depth]
        if not isinstance(stmt, ast.stmt):
            continue
        parent = chain[depth - 1]
        where = analysis.index.slot(stmt)
        if where is None or where[0] is not parent:
            return False  # an `except` handler's body, a `match` case: stop
        _, field, k = where
        block = getattr(parent, field)
        outer = chain[: depth - 1]
        for j in range(k - 1, -1, -1):  # the statements before, nearest first
            found, budget = _step_back(block[j], chain[:depth], analysis, budget, plain, near)
            if found is not None:
                return found
        # the top of the block: leave it for the statements before `parent`?
        if isinstance(parent, (ast.If, ast.With, ast.AsyncWith)) and field in ("body", "orelse"):
            header = parent.test if isinstance(parent, ast.If) else parent.items
            headers = header if isinstance(header, list) else [header]
            if any(queues_model_work(h, outer, analysis) for h in headers):
                return False
            if any(has_host_read(h.context_expr if isinstance(h, ast.withitem) else h, analysis) for h in headers):
                return True  # `if loss.item() > 0:` ran before its body
            if isinstance(parent, ast.If) and reads_truth(parent.test, analysis):
                return True  # `if self.tokens < warmup:` took a device tensor's truth value first
            continue  # on before `parent`, in the block holding it
        if isinstance(parent, PASSABLE) and field == "body":  # a `try` body
            continue
        if field == "body" and _small_inner_loop(parent, chain[: depth - 1], analysis) and not _over_device_tensor(parent, analysis):
            # each pass of a per-sample loop waits only for the small work its
            # body queued since the last pass's read; the first pass, for what
            # ran before the loop: go on before it
            continue
        if isinstance(parent, FUNCS) and field == "body" and analysis.facts.entered_synced(parent):
            return True  # every per-step caller has just read on the host
        if isinstance(parent, LOOP_STMTS) and field == "body" and not _may_continue(parent):
            # the top of a loop's body: what ran before it is the end of the previous pass.
            # An explicit sync there (nanochat's step loop ends its timed part with
            # `synchronize()`, then logs) leaves nothing to wait for; a read there does not
            # count (one read per element of a loop over losses is one sync per element)
            for j in range(len(block) - 1, k, -1):
                b = block[j]
                if _sync_statement(b, analysis):
                    return timing_sync(block, j, analysis)
                found, budget = _step_back(b, chain[:depth], analysis, budget)
                if found is False:
                    return False  # (a read queues nothing: the walk passes it)
        return False
    return False


def _step_back(b, chain, analysis, budget, plain=None, near=None):
    """One statement `b` of a walk back (`synced_before`): (True: it surely
    read on the host; False: the walk stops here; None: go on before it,
    the budget left). `plain`: [whether every statement passed so far ran
    tensor ops only], for which a blocking copy to the GPU counts as a read
    (after a helper's call, it may have queued model work the walk cannot
    see: `outputs = self._predict(x)`). `near`: [how many more statements
    back an operation sized by the data (`sizes_from_values`: `keep =
    torch.where(label != 255)[0]`) counts as a read]; the host waited for
    the GPU there, but what many statements queued since is no longer little."""
    if budget is not None:
        budget -= 1
        if budget < 0:
            return False, budget
    if ends_reading(b, analysis) or (plain is not None and plain[0] and blocking_upload(b, analysis)):
        return True, budget
    if near is not None:
        near[0] -= 1
        if near[0] >= 0 and _sizes_surely(b, analysis):
            return True, budget
    if not isinstance(b, PASSABLE) and is_compound(b) and not _only_host_loops(b, analysis):
        return False, budget  # a loop, a def, a `match`: stop
    if (holds_loop(b) and not _only_host_loops(b, analysis)) or queues_model_work(b, chain, analysis):
        return False, budget
    if plain is not None and plain[0] and not _tensor_ops_only(b, analysis):
        plain[0] = False
    return None, budget


# plain calls that run no model work
_PLAIN_BUILTINS = frozenset({"len", "int", "float", "bool", "min", "max", "abs", "round", "isinstance", "range", "print"})


def _tensor_ops_only(stmt, analysis) -> bool:
    """Every call of `stmt` is a torch function (`torch.count_nonzero(y)`), a
    method of a tensor (`(y > 0).float().mean()`) or a plain builtin."""
    for n in walk(stmt):
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        if isinstance(func, ast.Name) and func.id in _PLAIN_BUILTINS:
            continue
        q = analysis.imports.qualname(func) or ""
        if q.startswith("torch.") and not q.startswith(("torch.distributed.", "torch.cuda.")):
            continue  # (a collective, `all_reduce`, queues work of its own)
        if isinstance(func, ast.Attribute) and analysis.values.kind_at(func.value, analysis.index.ancestors(n)) == TENSOR:
            continue
        return False
    return True


def _may_continue(loop) -> bool:
    """A `continue` of `loop` may skip the end of its body."""
    stack = list(loop.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Continue):
            return True
        if not isinstance(n, LOOP_STMTS + FUNCS + (ast.ClassDef, ast.Lambda)):
            stack.extend(child_nodes(n))
    return False


def _over_device_tensor(loop, analysis) -> bool:
    """`for idx in mask.nonzero():`: each pass takes an element of a device
    tensor, so a read of it syncs once per element, whatever ran before the loop."""
    it = getattr(loop, "iter", None)
    return it is not None and analysis.values.kind_at(it, analysis.index.ancestors(it)) == TENSOR


def _only_host_loops(stmt, analysis) -> bool:
    """Every loop in `stmt` walks an optimizer's `param_groups` (setting the
    learning rate): host dictionaries, no GPU work to wait for; or `stmt` is
    a loop that reads on the host on every pass (`for k, v in
    metrics.items(): out[k] = v.item()`), with no loop inside and no model
    work, so it queues nothing to wait for after its reads."""
    loops = [n for n in walk(stmt) if isinstance(n, LOOP_STMTS)]
    if loops == [stmt] and isinstance(stmt, (ast.For, ast.AsyncFor)) and not stmt.orelse and _reads_every_pass(stmt, analysis):
        return True
    if loops and _over_host_values(stmt, loops, analysis):
        return True
    return bool(loops) and all(
        isinstance(n, (ast.For, ast.AsyncFor))
        and analysis.values.kind_at(n.iter, analysis.index.ancestors(n.iter)) == PARAM_GROUPS
        for n in loops
    )


def _over_host_values(stmt, loops, analysis) -> bool:
    """Every loop in `stmt` is a `for` over values the block read on the host
    before it, or over its own loops' targets (`start_pred = ....cpu().numpy()`,
    then `for i, s in enumerate(start_pred): for j, e in
    enumerate(end_pred[i:]):`, a span decoder's): host data, no GPU work
    queued by the walk itself (`queues_model_work` judges the bodies)."""
    if not all(isinstance(n, (ast.For, ast.AsyncFor)) for n in loops):
        return False
    bound = {t.id for loop in loops for t in walk(loop.target) if isinstance(t, ast.Name)}
    called = {id(c.func) for loop in loops for c in walk(loop.iter) if isinstance(c, ast.Call)}
    used = {n.id for loop in loops for n in walk(loop.iter) if isinstance(n, ast.Name) and id(n) not in called}
    ancestors = analysis.index.ancestors(stmt.iter) if isinstance(stmt, (ast.For, ast.AsyncFor)) else None
    return bool(used - bound) and ancestors is not None and all(
        derived_from_host_read(name, ancestors, analysis) for name in used - bound)


def _reads_every_pass(loop, analysis) -> bool:
    """The loop's body ends with a statement that surely read on the host,
    and no statement of it queues model work or defines anything."""
    body = loop.body
    if any(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for b in body):
        return False
    ancestors = analysis.index.ancestors(loop) + [loop]
    if any(queues_model_work(b, ancestors, analysis) for b in body):
        return False
    return ends_reading(body[-1], analysis)


def _small_inner_loop(loop, outer, analysis) -> bool:
    """`for bib in range(len(lengths)): n = int(lengths[bib].item())`: a `for`
    loop inside another loop of the same function, over no DataLoader, whose
    body queues no model work and holds no loop of its own: a walk over the
    samples of one step, not a step loop, nor one over a model's parameters
    or layers."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    if not loops_around(list(outer) + [loop]):
        return False
    if analysis.loops.loop_fetches_data(loop) or analysis.loops.is_step_loop(loop):
        return False
    if analysis.loops.iterates_model_structure(loop, outer):
        return False  # one read per parameter: hundreds of round trips, each its own wait
    return not any(holds_loop(b) or queues_model_work(b, list(outer) + [loop], analysis) for b in loop.body)


def is_compound(stmt) -> bool:
    return any(isinstance(getattr(stmt, f, None), list) for f in ("body", "orelse", "finalbody", "cases"))


def holds_loop(stmt) -> bool:
    return any(isinstance(n, LOOP_STMTS) for n in walk(stmt))


NO_FALLTHROUGH = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def ends_reading(stmt, analysis) -> bool:
    """Every path through `stmt` that goes on to the next statement ends with
    a simple statement that surely read a tensor on the host: the statement
    itself, or the last statement of each branch of an `if` with an `else`
    (a branch ending in `continue`, `break`, `return` or `raise` does not go
    on), of a `with` body, of a `try` (its `else` if any, and each
    handler; or its `finally`)."""
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return has_host_read(stmt, analysis)
    if isinstance(stmt, ast.Assert):  # (the test runs every time; an `assert` that fails goes on to no statement)
        return has_host_read(stmt.test, analysis) or reads_truth(stmt.test, analysis)
    if isinstance(stmt, ast.If):
        if has_host_read(stmt.test, analysis) or reads_truth(stmt.test, analysis):
            return True  # the test runs on every path, before either branch
        cuda = _cuda_branch(stmt)
        if cuda is not None and block_ends_reading(cuda, analysis):
            return True  # (`elif device == "cuda": torch.cuda.synchronize()`: elsewhere nothing waits on CUDA)
        return block_ends_reading(stmt.body, analysis) and (block_ends_reading(stmt.orelse, analysis) or taken_by_default(
            analysis.index, stmt.test, analysis.facts.option_defaults()))  # (`if args.edge_weight > 0:`, 1.0)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return block_ends_reading(stmt.body, analysis)
    if isinstance(stmt, ast.Try):
        if stmt.finalbody:
            return block_ends_reading(stmt.finalbody, analysis)
        return block_ends_reading(stmt.orelse or stmt.body, analysis) and all(
            block_ends_reading(h.body, analysis) for h in stmt.handlers
        )
    return False


def blocking_upload(stmt, analysis) -> bool:
    """`labels = labels.cuda()` (or `x, y = x.cuda(), y.to(device)`) of
    tensors in host memory, without `non_blocking=True`: PyTorch copies and
    then waits for the stream (`memcpy_and_sync`), so the host has waited for
    all the work queued before, as after a read. The statement does nothing
    else (not `loss = model(x.cuda())`, whose model work comes after the copy)."""
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, (ast.Assign, ast.Expr)) or value is None:
        return False
    moves = value.elts if isinstance(value, ast.Tuple) else [value]
    found = False
    for n in moves:
        moved = move_target(analysis, n)
        if moved is None or any(k.arg == "non_blocking" for k in n.keywords) or (
                n.func.attr == "to" and len(n.args) > 1):  # (`.to(device, True)`: non_blocking)
            return False
        source = moved[0]
        while isinstance(source, (ast.Subscript, ast.Attribute)):
            source = source.value
        found = found or isinstance(source, ast.Name) and analysis.host.is_host_tensor(  # (a batch: not
            moved[0], analysis.index.ancestors(moved[0]))  # `torch.tensor(x).cuda()`, whose `x` may be on the GPU)
    return found


def _cuda_branch(stmt: ast.If) -> Optional[list]:
    """The block of an `if`/`elif` chain that runs when the code runs on
    CUDA (`if device == "cuda":`, `elif device_type == "cuda":`, `if
    torch.cuda.is_available():`): the other branches run where no CUDA work
    is queued, so a read or sync on that path is the one that matters. So
    does the block of a type check of the value it reads (`if
    torch.is_tensor(output): output = output.cpu().numpy()`, a metric
    helper's): a read that takes the value for a device tensor takes that
    path, and the host has waited there."""
    branch: Optional[ast.AST] = stmt
    while isinstance(branch, ast.If):
        if _tests_for_cuda(branch.test):
            return branch.body
        orelse = branch.orelse
        branch = orelse[0] if len(orelse) == 1 else None
    return None


def _tests_for_cuda(test: ast.AST) -> bool:
    if isinstance(test, ast.Call) and len(test.args) in (1, 2) and isinstance(test.args[0], ast.Name) and (
            dotted(test.func) == "torch.is_tensor" and len(test.args) == 1
            or dotted(test.func) == "isinstance" and len(test.args) == 2 and dotted(test.args[1]) == "torch.Tensor"):
        return True  # `if torch.is_tensor(output):`, `if isinstance(x, torch.Tensor):`
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        sides = [test.left, test.comparators[0]]
        named = [s for s in sides if not isinstance(s, ast.Constant)]
        return any(isinstance(s, ast.Constant) and s.value == "cuda" for s in sides) and len(named) == 1 and (
            "device" in (dotted(named[0]) or "").lower())
    return (isinstance(test, ast.Call) and not test.args and dotted(test.func) == "torch.cuda.is_available")


def block_ends_reading(block, analysis) -> bool:
    """The block's last statement reads on the host (`ends_reading`), or one before it does and only
    statements of tensor ops (`_tensor_ops_only`) and no loop follow (`main_loss += d['dual_loss']`)."""
    for stmt in reversed(block):  # (an empty one, an `if` without `else`: that path reads nothing)
        if isinstance(stmt, NO_FALLTHROUGH) or ends_reading(stmt, analysis):
            return True
        if (is_compound(stmt) and not isinstance(stmt, PASSABLE)) or holds_loop(stmt) or not _tensor_ops_only(
                stmt, analysis):
            return False
    return False


def read_earlier_in_statement(stmt, at, analysis) -> bool:
    """A host read of `stmt` is evaluated every time the statement runs, and
    before `at`: `d.update({"a": a.item(), "b": b.item()})`,
    `f(x.item()) + y.item()`, `y.item() if x.item() > 0 else 0` (not a read
    in a branch of `... if ... else ...`, after the first operand of
    `and`/`or`, or in a lambda or comprehension; and never `at` itself when
    it lies in a lambda or runs once per item of a comprehension)."""
    memo = analysis.index.memo("syncs.statement_reads")
    entry = memo.get(stmt)
    if entry is None:
        order = evaluation_order(stmt)
        first = next((i for i, (n, sure) in enumerate(order) if sure and is_host_read_call(n)), None)
        entry = memo[stmt] = ({id(n): i for i, (n, _) in enumerate(order)}, first)
    position, first = entry
    i = position.get(id(at))
    return first is not None and i is not None and first < i


def may_sync(call: ast.Call, analysis) -> bool:
    """A host read (`x.item()`, `x.cpu()`, ...) not known to skip the GPU: its
    receiver is not known to be a numpy array, a number or a model, nor a
    tensor in host memory, nor already copied (`x.cpu().numpy()`)."""
    recv = call.func.value  # type: ignore[attr-defined]
    if on_host_already(recv):
        return False
    ancestors = analysis.index.ancestors(call)
    if analysis.values.kind_at(recv, ancestors) not in (TENSOR, None):
        return False
    return not analysis.host.is_host_tensor(recv, ancestors)


def is_host_read_call(n: ast.AST) -> bool:
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in HOST_METHODS and not n.args


def derived_from_host_read(name: str, ancestors, analysis) -> bool:
    """`loss_to_log = running_loss.item() / n` earlier in the same block (or
    computed from names that were): the value comes from a host read this step,
    so formatting it waits only for that arithmetic."""
    stmt, block = statement_and_block(list(ancestors), analysis)
    if block is None:
        return False
    k = analysis.index.slot(stmt)[2]
    return derived_before(name, block, k, assignments(block, analysis), depth=0)


def assignments(block, analysis):
    """name -> the indices of the block's `name = ...` statements, in order."""
    memo = analysis.index.memo("syncs.block_assignments")
    out = memo.get(id(block))
    if out is None or out[0] is not block:
        by_name = {}
        for i, b in enumerate(block):
            if isinstance(b, ast.Assign):
                for name in {t.id for t in b.targets if isinstance(t, ast.Name)}:
                    by_name.setdefault(name, []).append(i)
        out = memo[id(block)] = (block, by_name)
    return out[1]


def derived_before(name: str, block, k: int, assigned, depth: int) -> bool:
    if depth > 4:
        return False
    at = assigned.get(name, ())
    j = bisect_left(at, k)  # the last assignment of `name` before statement k
    if j == 0:
        return False
    i = at[j - 1]
    value = block[i].value
    if has_host_read(value):
        return True
    names = {n.id for n in walk(value) if isinstance(n, ast.Name)}
    return any(derived_before(n, block, i, assigned, depth + 1) for n in names if n != name)


# calls that make the host wait for the GPU (a read of device data on the host,
# or an op whose output size the host must learn)
_WAITING_METHODS = frozenset(("item", "tolist", "cpu", "numpy", "nonzero", "unique", "masked_select"))
_WAITING_FUNCS = frozenset(("torch.nonzero", "torch.unique", "torch.masked_select", "torch.any", "torch.all"))


def waits_on_host(analysis, func: ast.AST) -> bool:
    """`func`'s own code reads device data on the host somewhere (`.item()`,
    `.tolist()`, `.cpu()`, `.numpy()`, `nonzero`, `unique`, a `.to("cpu")`,
    a truth test of `torch.any(...)`): each run of it waits for the GPU
    anyway, so one more small blocking copy in it costs next to nothing."""
    return analysis.index.memoized("syncs.waits_on_host", func, lambda: _waits(analysis, func))


def _waits(analysis, func: ast.AST) -> bool:
    for n in scope_nodes(func):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in _WAITING_METHODS and not n.args:
            return True
        if isinstance(f, ast.Attribute) and f.attr == "to" and n.args and isinstance(n.args[0], ast.Constant) \
                and n.args[0].value == "cpu":
            return True
        if (analysis.imports.qualname(f) or "") in _WAITING_FUNCS:
            return True
    return False
