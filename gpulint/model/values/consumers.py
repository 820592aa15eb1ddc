"""Host consumers: values copied to the host because the host needs them.

A reinforcement-learning loop hands its actions to an environment that runs
on the host: `next_obs, reward, terminated, truncated, info =
envs.step(actions)` (the Gym API, whose `step` returns four or five values).
Copying the actions to the host every step is the point, not waste. So is
a value that picks the optimizer's learning rate (PPO's adaptive KL
schedule): an optimizer's `lr` is a Python number.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import LOOPS, SCOPES
from gpulint.model.index.tree import TreeIndex
from gpulint.model.index.walk import walk
from gpulint.model.values.kinds import NUMPY, TENSOR_JOINS


def feeds_environment_step(index: TreeIndex, read: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """The host read `read` is an argument of an environment's step
    (`envs.step(actions.cpu().numpy())`), or its value is bound to a name
    that a later statement of the same loop body passes to one
    (`actions = actions.cpu().numpy()` ... `envs.step(actions)`)."""
    chain = list(ancestors) + [read]
    for i in range(len(chain) - 2, -1, -1):
        anc = chain[i]
        if isinstance(anc, ast.stmt):
            break
        if isinstance(anc, ast.Call) and chain[i + 1] is not anc.func and _environment_step(index, anc):
            return True
    stmt = next((a for a in reversed(chain) if isinstance(a, ast.stmt)), None)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    loop = next((a for a in reversed(ancestors) if isinstance(a, LOOPS)), None)
    if loop is None:
        return False
    return _last_steps(index).get(loop, {}).get(stmt.targets[0].id, 0) > stmt.lineno


def _last_steps(index: TreeIndex) -> Dict[ast.AST, Dict[str, int]]:
    """For each loop, the names passed to an environment's step inside it, each
    with the last line that passes it. Built once per file from its step calls
    (asking the loop's body again for each read made the rule quadratic)."""

    def compute() -> Dict[ast.AST, Dict[str, int]]:
        out: Dict[ast.AST, Dict[str, int]] = {}
        for call in index.nodes(ast.Call):
            if not _environment_step(index, call):  # type: ignore[arg-type]
                continue
            names = [n for n in (_root_name(a) for a in call.args) if n is not None]  # type: ignore[attr-defined]
            for anc in index.ancestors(call):
                if isinstance(anc, LOOPS):
                    last = out.setdefault(anc, {})
                    for name in names:
                        last[name] = max(last.get(name, 0), call.lineno)  # type: ignore[attr-defined]
        return out

    return index.memoized("consumers.steps", "last", compute)


def _root_name(arg: ast.AST) -> Optional[str]:
    """The name an argument passes on, through the conversions and indexing
    that take it there: `action` for `action`, `action.numpy()`,
    `action.cpu().numpy()[0]`."""
    while True:
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in _PASS_ATTRS:
            arg = arg.func.value
        elif isinstance(arg, ast.Subscript):
            arg = arg.value
        else:
            break
    return arg.id if isinstance(arg, ast.Name) else None


def environment_loops(index: TreeIndex) -> FrozenSet[ast.AST]:
    """The loops that step an environment in their own body: the innermost
    loop around each environment step call (`obs, r, done, info =
    env.step(a)`), once per file."""

    def compute() -> FrozenSet[ast.AST]:
        out = set()
        for call in index.nodes(ast.Call):
            if _environment_step(index, call):  # type: ignore[arg-type]
                loop = next((a for a in reversed(index.ancestors(call)) if isinstance(a, LOOPS + SCOPES)), None)
                if isinstance(loop, LOOPS):
                    out.add(loop)
        return frozenset(out)

    return index.memoized("consumers.steps", "loops", compute)


# what an environment's step gives besides the observation
_OUTCOME_NAME_RE = re.compile(r"reward|done|terminal|terminated", re.I)


def _environment_step(index: TreeIndex, call: ast.Call) -> bool:
    """`x.step(...)` whose result is unpacked into four or five names (Gym's
    `obs, reward, done, info` or `obs, reward, terminated, truncated, info`),
    or into three of which one names a reward or an episode's end (a custom
    Atari wrapper's `next_state, reward, done = env.step(action)`)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step" and call.args):
        return False
    parent: Optional[ast.AST] = index.parents.get(call)
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0], (ast.Tuple, ast.List))):
        return False
    elts = parent.targets[0].elts
    return len(elts) in (4, 5) or (len(elts) == 3 and any(
        isinstance(e, ast.Name) and _OUTCOME_NAME_RE.search(e.id) for e in elts))


# methods, attributes and wrappers a copied tensor passes through on its way
# to where the host keeps it (`preds.detach().cpu().numpy()`, `list(x.numpy())`)
_PASS_ATTRS = frozenset(
    "cpu numpy tolist detach data float double long int half astype squeeze flatten ravel reshape view copy clone"
    # (and what the host does to the copy on the way: IMDN's `tensor.float().cpu().clamp_(0, 1)`)
    " clamp clamp_ clip round permute transpose contiguous"
    .split()
)
_WRAPPERS = frozenset(("list", "tuple", "np.asarray", "np.array", "numpy.asarray", "numpy.array"))
# reductions: what they give is one number, bookkeeping rather than an output
_REDUCTIONS = frozenset("sum mean max min prod norm std var all any item count_nonzero".split())
# names of scalar bookkeeping (`losses.append(loss.cpu())` is a metric, not an output)
_SCALAR_NAME_RE = re.compile(r"(^|_)(loss|losses|acc|accuracy|correct|err|error|nll|ppl|perplexity)(_|$)", re.I)


def exports_outputs(index: TreeIndex, read: ast.AST) -> bool:
    """The host copy `read` (`x.cpu()`, `x.numpy()`, `x.tolist()`) takes a
    model's per-sample outputs to where the host keeps them: appended to a
    list (`predictions.append(preds.detach().cpu().numpy())`) that is not
    joined back into a tensor, returned or yielded, directly or through a
    name the function keeps that way later. Predictions for a scorer, an evaluator or a file:
    the copy is the point. Not a reduction or a loss (`loss.cpu()`,
    `(pred == y).sum().cpu()`), which is bookkeeping that could stay on the GPU."""
    if not (isinstance(read, ast.Call) and isinstance(read.func, ast.Attribute)
            and read.func.attr in ("cpu", "numpy", "tolist")):
        return False
    if _scalar(read.func.value):
        return False
    parents = index.parents
    node: ast.AST = read
    while True:
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in _PASS_ATTRS:
            call = parents.get(parent)
            node = call if isinstance(call, ast.Call) and call.func is parent else parent
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            node = parent
        elif isinstance(parent, ast.Call) and node in parent.args and writes_out(parent):
            return True  # `np.save(path, out.cpu().numpy())`, `write(path, sr, audio.cpu().numpy())`
        elif isinstance(parent, ast.Attribute) and parent.value is node and _writer_name(parent.attr):
            return True  # `Image.fromarray(img.cpu().numpy()).save(path)`
        elif isinstance(parent, ast.Call) and node in parent.args and (_wrapper(parent) or _host_function(parent)):
            node = parent  # `tokenizer.batch_decode(ids.cpu().numpy())`: what the host makes of it is kept
        elif isinstance(parent, ast.ListComp) and parent.elt is node:
            node = parent
        else:
            return _kept(index, node, parent) or _stored_by_key(index, node, parent)


def _stored_by_key(index: TreeIndex, value: ast.AST, parent: Optional[ast.AST]) -> bool:
    """`for qid, l in zip(ques_id, label.cpu().numpy()): quesid2ans[qid] =
    dset.label2ans[l]` (LXMERT's `predict`): the host iterates the copy and
    stores each element, or what a host table makes of it, in a mapping by
    key, which the function returns: the per-sample predictions are what it
    makes (a training loop that fills such a mapping for an accuracy it
    computes itself is bookkeeping)."""
    loop = parent
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("zip", "enumerate") \
            and value in parent.args:
        loop = index.parents.get(parent)
        value = parent
    if not (isinstance(loop, ast.For) and loop.iter is value):
        return False
    names = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
    stores = set()
    for stmt in loop.body:
        for node in walk(stmt):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            used = {n.id for n in walk(node.value) if isinstance(n, ast.Name)}
            if not used & names:
                continue
            if isinstance(target, ast.Name):
                names.add(target.id)  # `ans = dset.label2ans[l]`
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                stores.add(target.value.id)
    if not stores:
        return False
    owner = index.owner(loop)
    for node in walk(owner if owner is not None else index.tree):
        if isinstance(node, ast.Return) and node.value is not None and any(
                isinstance(n, ast.Name) and n.id in stores
                for n in (node.value.elts if isinstance(node.value, ast.Tuple) else [node.value])):
            return True  # (`return quesid2ans`; not `return evaluator.evaluate(quesid2ans)`)
    return False


def host_array_input(fa, read: ast.AST) -> bool:
    """The host copy `read` indexes a numpy array (`sel1[D01ind.cpu().numpy()]`
    after `sel1 = np.random.choice(n, k)`, FCGF's hardest-negative mining), or
    is stored into one, or into a tensor in host memory (`PS[idx, :] =
    p.detach().cpu().numpy()` after `PS = np.zeros(...)`, self-label's
    pseudo-label matrix for a numpy solver): a host algorithm takes it, so it
    needs it on the host."""
    if not (isinstance(read, ast.Call) and isinstance(read.func, ast.Attribute)
            and read.func.attr in ("cpu", "numpy", "tolist")):
        return False
    index = fa.index
    node: ast.AST = read
    parent = index.parents.get(node)
    while isinstance(parent, ast.Attribute) and parent.attr in _PASS_ATTRS:
        call = index.parents.get(parent)
        node = call if isinstance(call, ast.Call) and call.func is parent else parent
        parent = index.parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        array = parent.value
    elif isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], ast.Subscript):
        array = parent.targets[0].value
    else:
        return False
    ancestors = index.ancestors(array)
    kind = fa.values.kind_at(array, ancestors)
    return kind == NUMPY or (parent is not None and isinstance(parent, ast.Assign)
                             and fa.host.is_host_tensor(array, ancestors))


def _scalar(expr: ast.AST) -> bool:
    while isinstance(expr, (ast.Attribute, ast.Subscript)) or (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _PASS_ATTRS
    ):
        expr = expr.func.value if isinstance(expr, ast.Call) else expr.value  # type: ignore[union-attr]
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _REDUCTIONS:
        return not expr.args and not any(k.arg == "dim" for k in expr.keywords)
    name = expr.id if isinstance(expr, ast.Name) else None
    return name is not None and _SCALAR_NAME_RE.search(name) is not None


# roots of calls that compute on tensors (their result is a tensor again, not a host output)
_TENSOR_ROOTS = frozenset(("torch", "F", "nn", "functional"))


def _host_function(call: ast.Call) -> bool:
    """A method of a host object that turns arrays into host data
    (`tokenizer.batch_decode(...)`, `encoder.encode(...)`): a call on a
    named object's attribute, not of torch, and not one of the passes
    (`.numpy()`) or keeping calls (`.append`) asked about separately."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    root = f.value
    while isinstance(root, ast.Attribute):  # `PIL.Image.fromarray(...)`
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    return root.id not in _TENSOR_ROOTS and f.attr not in _PASS_ATTRS and f.attr not in (
        "append", "extend", "update", "add", "put", "send", "log", "add_scalar")


# what writes host data out: a file, an image, a sound (`np.save`, `cv2.imwrite`,
# `scipy.io.wavfile.write`, `save_image(...)`, `json.dump`, `torch.save`)
_WRITE_RE = re.compile(r"(save|write|dump|imsave|imwrite)(_|$)|savez|savetxt")


def writes_out(call: ast.Call) -> bool:
    """The call writes what it is handed out, by its name: a function or
    method named `save...`, `write...`, `dump`, `imsave`, `imwrite`, ...
    (`torch.save` too: a device tensor is copied to the host to be written
    either way)."""
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return name is not None and _writer_name(name)


def _writer_name(name: str) -> bool:
    return _WRITE_RE.match(name) is not None


def keys_a_mapping(index: TreeIndex, read: ast.AST) -> bool:
    """`{t["image_id"].item(): out for t, out in zip(targets, results)}`,
    `res[img_id.item()] = out`: the value read is a dict key, which must be a
    Python value on the host (the results handed to an evaluator by id)."""
    if not (isinstance(read, ast.Call) and isinstance(read.func, ast.Attribute) and read.func.attr == "item"):
        return False
    parent = index.parents.get(read)
    if isinstance(parent, ast.DictComp):
        return parent.key is read
    if isinstance(parent, ast.Dict):
        return any(k is read for k in parent.keys)
    if isinstance(parent, ast.Subscript) and parent.slice is read and isinstance(parent.ctx, ast.Store):
        return True
    return False


def _wrapper(call: ast.Call) -> bool:
    f = call.func
    text = f.id if isinstance(f, ast.Name) else (
        f"{f.value.id}.{f.attr}" if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else "")
    return text in _WRAPPERS


def _kept(index: TreeIndex, value: ast.AST, parent: Optional[ast.AST]) -> bool:
    """`value` is appended to (or extends) a list the host keeps, or is
    returned or yielded; or is bound to a name that a later statement of the
    function keeps so."""
    owner = index.owner(value)
    tables = _tables(index).get(owner, ({}, frozenset(), frozenset(), {}, {}))
    if _keeps(value, parent, tables[1], tables[2]):
        return True
    if isinstance(parent, ast.AugAssign) and parent.value is value and isinstance(parent.op, ast.Add):
        return isinstance(value, ast.Call) and _wrapper(value)  # `gt_labels += list(labels_.numpy())`
    if not (isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):
        return False
    name = parent.targets[0].id
    if tables[0].get(name, 0) > parent.lineno:
        return True
    # or written out through what the host makes of it: `predict_np = pred.cpu().numpy()`, then
    # `im = Image.fromarray(predict_np * 255)`, `imo = im.resize(size)`, `imo.save(path)`
    written, flows = tables[3], tables[4]
    todo, seen = [name], {name}
    while todo:
        n = todo.pop()
        if written.get(n, 0) > parent.lineno:
            return True
        for m in flows.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return False


def _keeps(value: ast.AST, parent: Optional[ast.AST], joined: frozenset, unread: frozenset) -> bool:
    """`xs.append(value)` / `xs.extend(value)` with `xs` not joined back into a
    tensor (`torch.cat(xs)`: then the copies were not needed on the host) and
    read for something (`unread`: lists the function only ever appends to,
    whose copies nothing uses), or `return value` / `yield value`."""
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr in (
        "append", "extend"
    ):
        target = parent.func.value
        return value in parent.args and not (isinstance(target, ast.Name) and (target.id in joined or target.id in unread))
    if isinstance(parent, ast.Call) and value in parent.args and writes_out(parent):
        return True  # `save_images(image, prediction, ...)`: written out
    return isinstance(parent, (ast.Return, ast.Yield)) and parent.value is value


def _tables(index: TreeIndex) -> Dict[Optional[ast.AST], tuple]:
    """For each function (and the module): (name -> the last line that keeps
    it, the lists joined back into a tensor by `torch.cat` / `torch.stack`).
    Built for the whole file in one walk."""

    def compute() -> Dict[Optional[ast.AST], tuple]:
        joined: Dict[Optional[ast.AST], set] = {}
        for call in index.nodes(ast.Call):
            f = call.func  # type: ignore[attr-defined]
            if (isinstance(f, ast.Attribute) and f.attr in TENSOR_JOINS and isinstance(f.value, ast.Name)
                    and f.value.id == "torch" and call.args and isinstance(call.args[0], ast.Name)):  # type: ignore[attr-defined]
                joined.setdefault(index.owner(call), set()).add(call.args[0].id)  # type: ignore[attr-defined]
        frozen = {o: frozenset(names) for o, names in joined.items()}
        # per owner: the names only ever appended to (the receiver of `.append` / `.extend`, never read otherwise)
        filled: Dict[Optional[ast.AST], set] = {}
        read: Dict[Optional[ast.AST], set] = {}
        for n in index.nodes(ast.Name):
            if not isinstance(n.ctx, ast.Load):  # type: ignore[attr-defined]
                continue
            parent = index.parents.get(n)
            grand = index.parents.get(parent) if isinstance(parent, ast.Attribute) else None
            receiver = (isinstance(parent, ast.Attribute) and parent.attr in ("append", "extend")
                        and isinstance(grand, ast.Call) and grand.func is parent)
            (filled if receiver else read).setdefault(index.owner(n), set()).add(n.id)  # type: ignore[attr-defined]
        unread = {o: frozenset(names - read.get(o, set())) for o, names in filled.items()}
        kept: Dict[Optional[ast.AST], Dict[str, int]] = {}
        for n in index.nodes(ast.Name):
            if not isinstance(n.ctx, ast.Load):  # type: ignore[attr-defined]
                continue
            # (through the passes that keep its values: `cf_scores.append(batch_scores.numpy())`)
            value, parent = _through_passes(index, n)
            if not isinstance(parent, (ast.Call, ast.Return, ast.Yield)):
                continue  # (only a call's argument or a returned value can be kept: ask its owner then)
            owner = index.owner(n)
            if _keeps(value, parent, frozen.get(owner, frozenset()), unread.get(owner, frozenset())):
                names = kept.setdefault(owner, {})
                names[n.id] = max(names.get(n.id, 0), n.lineno)  # type: ignore[attr-defined]
        written, flows = _written_and_flows(index)
        return {o: (kept.get(o, {}), frozen.get(o, frozenset()), unread.get(o, frozenset()), written.get(o, {}),
                    flows.get(o, {}))
                for o in set(kept) | set(frozen) | set(unread) | set(written)}

    return index.memoized("consumers.kept", "all", compute)


def _through_passes(index: TreeIndex, node: ast.AST) -> Tuple[ast.AST, Optional[ast.AST]]:
    """(the outermost of `node.numpy()`, `node.detach().cpu()`, ... that only
    pass its values on (`_PASS_ATTRS`), that expression's parent)."""
    parent = index.parents.get(node)
    while isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in _PASS_ATTRS:
        call = index.parents.get(parent)
        if not (isinstance(call, ast.Call) and call.func is parent):
            break
        node, parent = call, index.parents.get(call)
    return node, parent


def _written_and_flows(index: TreeIndex) -> Tuple[Dict[Optional[ast.AST], Dict[str, int]],
                                                   Dict[Optional[ast.AST], Dict[str, Set[str]]]]:
    """Per function: (name -> the last line that writes it out, in a writer's
    arguments (`cv2.imwrite(path, img * 255)`) or as the object whose writer
    method runs (`imo.save(path)`); name -> the names assigned from an
    expression that reads it (`im = Image.fromarray(predict_np * 255)`))."""
    written: Dict[Optional[ast.AST], Dict[str, int]] = {}
    flows: Dict[Optional[ast.AST], Dict[str, Set[str]]] = {}
    for call in index.nodes(ast.Call):
        f = call.func  # type: ignore[attr-defined]
        sources: List[ast.AST] = []
        if writes_out(call):  # type: ignore[arg-type]
            sources.extend(call.args)  # type: ignore[attr-defined]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and _writer_name(f.attr):
            sources.append(f.value)
        if sources:
            names = written.setdefault(index.owner(call), {})
            for src in sources:
                for n in walk(src):
                    if isinstance(n, ast.Name):
                        names[n.id] = max(names.get(n.id, 0), call.lineno)  # type: ignore[attr-defined]
    for assign in index.nodes(ast.Assign):
        targets = [t.id for t in assign.targets if isinstance(t, ast.Name)]  # type: ignore[attr-defined]
        if not targets:
            continue
        edges = flows.setdefault(index.owner(assign), {})
        for n in walk(assign.value):  # type: ignore[attr-defined]
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                edges.setdefault(n.id, set()).update(targets)
    return written, flows


def sets_learning_rate(index: TreeIndex, read: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """The read is in the test of an `if` whose branches set a value that the
    function then gives the optimizer as its learning rate: `if kl_mean >
    self.desired_kl * 2.0: self.learning_rate = ...` and later
    `param_group["lr"] = self.learning_rate` (rsl_rl's adaptive schedule),
    or it is that value (`self.learning_rate = lr_tensor.item()`). The host
    needs the comparison to pick the rate."""
    test_of = next((a for a in reversed(ancestors) if isinstance(a, ast.stmt)), None)
    func = index.owner(read)
    if isinstance(test_of, ast.Assign) and len(test_of.targets) == 1:
        # `self.learning_rate = lr_tensor.item()` (the rate broadcast from rank 0)
        return ast.unparse(test_of.targets[0]) in _learning_rate_sources(index, func)
    if not (isinstance(test_of, ast.If) and _within(read, test_of.test)):
        return False
    rates = _learning_rate_sources(index, func)
    if not rates:
        return False
    branch = [test_of]
    while branch:
        stmt = branch.pop()
        for b in stmt.body + stmt.orelse:  # type: ignore[attr-defined]
            if isinstance(b, ast.If):
                branch.append(b)  # an `elif`, or an `if` inside
            elif isinstance(b, (ast.Assign, ast.AugAssign)):
                targets = b.targets if isinstance(b, ast.Assign) else [b.target]
                if any(ast.unparse(t) in rates for t in targets):
                    return True
    return False


def _within(node: ast.AST, tree: ast.AST) -> bool:
    return any(n is node for n in walk(tree))


def _learning_rate_sources(index: TreeIndex, func: Optional[ast.AST]) -> FrozenSet[str]:
    """The names and attributes (as written) that the code of `func` (its
    `TreeIndex.owner`) assigns to an `["lr"]` item: `param_group["lr"] =
    self.learning_rate`."""
    def compute() -> FrozenSet[str]:
        out = set()
        for node in index.nodes(ast.Assign):
            t = node.targets[0]  # type: ignore[attr-defined]
            if len(node.targets) == 1 and isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) \
                    and t.slice.value == "lr" and isinstance(node.value, (ast.Name, ast.Attribute)):  # type: ignore[attr-defined]
                out.add((index.owner(node), ast.unparse(node.value)))  # type: ignore[attr-defined]
        return frozenset(out)
    return frozenset(name for owner, name in index.memoized("consumers.lr", None, compute) if owner is func)
