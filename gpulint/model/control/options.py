"""Options a user opts into: command-line flags that are off by default, and
a model's constructor options for extra outputs, off by default.

`parser.add_argument("--print_loss", action="store_true")` makes
`args.print_loss` False unless the user asks for it, so the block of an
`if args.print_loss:` is a debugging or logging path the user chose, not
the step's own work (issue: "code behind a user's opt-in option is not
per-step waste"). Read from the file's own `add_argument` calls, and from those of the
other files of its program (`params.py` beside `train.py`), which the
project hands on.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from gpulint.model.index.nodes import SCOPES, parameter_defaults
from gpulint.model.index.tree import TreeIndex
from gpulint.model.index.walk import walk


# words of an `if` test that make its block run on some steps only, by an
# option or a schedule decided elsewhere: `if self.control.should_log:`,
# `if args.debug:`, `if save_images:`
OPTION_WORD_RE = re.compile(
    r"log|print|verbose|debug|save|checkpoint|ckpt|eval|valid|visual|plot|display|report|profil|dump|"
    r"tensorboard|wandb|writer|monitor|trace",
    re.I,
)
# ... and, for a command-line flag that is off by default, a plotting
# server or a memory-saving mode the user turns on (`--visdom`,
# `--aggressive-memory`); not for any test (`if self.memory:` is a replay buffer)
# `--vis`, `--vis_tgt` (visualize the targets): a viewing mode
_FLAG_WORD_RE = re.compile(OPTION_WORD_RE.pattern + r"|visdom|memory|(?:^|_)vis(?:_|$)|analy[sz]|diagnos", re.I)


def opt_in_flags(index: TreeIndex) -> FrozenSet[str]:
    """`opt_in_destinations` of the file's calls, once per file."""
    return index.memoized("options.opt_in", "flags", lambda: opt_in_destinations(index.nodes(ast.Call)))


def opt_in_destinations(calls: Iterable[ast.AST]) -> FrozenSet[str]:
    """The destinations of the `add_argument` calls among `calls` whose default is
    off (`action="store_true"` without `default=True`, or `default=False`
    or None with no `action`) and whose name says logging, printing,
    debugging, saving, plotting or memory (`_FLAG_WORD_RE`): not a mode
    that changes the step itself (`--amp`, `--distributed`). A project hands
    those of its files on to the files of the same program
    (`ProjectGraph.program_facts`): the flags of `params.py` guard the
    training loop of `train.py`."""
    out = set()
    for call, kw in _argument_calls(calls):
        action = kw.get("action")
        default = kw.get("default")
        default_off = default is None or (isinstance(default, ast.Constant) and default.value in (False, None))
        store_true = isinstance(action, ast.Constant) and action.value == "store_true"
        if not (default_off and (store_true or (action is None and default is not None))):
            continue
        name = _destination(call, kw)
        if name is not None and _FLAG_WORD_RE.search(name):
            out.add(name)
    return frozenset(out)


def _destination(call: ast.AST, kw: dict) -> Optional[str]:
    """The attribute an `add_argument` call sets: its `dest=`, or its first
    long option (`--data-parallel` -> `data_parallel`)."""
    dest = kw.get("dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    longs = [a.value for a in call.args  # type: ignore[attr-defined]
             if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")]
    return longs[0][2:].replace("-", "_") if longs else None


def _add_argument_calls(index: TreeIndex) -> Iterable[Tuple[ast.AST, dict]]:
    """(call, its keywords by name) of each `add_argument` call of the file."""
    return _argument_calls(index.nodes(ast.Call))


def _argument_calls(calls: Iterable[ast.AST]) -> Iterable[Tuple[ast.AST, dict]]:
    """(call, its keywords by name) of each `add_argument` call among `calls`."""
    for call in calls:
        f = call.func  # type: ignore[attr-defined]
        if isinstance(f, ast.Attribute) and f.attr == "add_argument":
            yield call, {k.arg: k.value for k in call.keywords if k.arg}  # type: ignore[attr-defined]


def on_by_default(index: TreeIndex) -> FrozenSet[str]:
    """The destinations of the file's `add_argument` calls that are on unless
    the user turns them off: `default=True` (e3_diffusion's `--dp`, `type=eval,
    default=True`) or `action="store_false"`. A mode named like an option a
    user opts into (`dp`) is then the program's default path, not a choice."""
    def compute() -> FrozenSet[str]:
        out = set()
        for call, kw in _add_argument_calls(index):
            default, action = kw.get("default"), kw.get("action")
            if (isinstance(default, ast.Constant) and default.value is True) or (
                    isinstance(action, ast.Constant) and action.value == "store_false" and default is None):
                name = _destination(call, kw)
                if name is not None:
                    out.add(name)
        return frozenset(out)

    if not index.mentions("add_argument"):
        return frozenset()
    return index.memoized("options.on_by_default", None, compute)


def number_defaults(index: TreeIndex) -> Dict[str, object]:
    """destination -> the number or string an `add_argument` call of the
    file gives as its `default=` (`--gpu-id`, `default=0`), for options
    declared once."""
    if not index.mentions("add_argument"):
        return {}
    return index.memoized("options.number_defaults", None,  # type: ignore[return-value]
                          lambda: option_defaults(index.nodes(ast.Call)))


def constant_flags(index: TreeIndex) -> Dict[str, bool]:
    """The file's command-line flags that no command line can change:
    `action="store_true"` with `default=True` (always True: AdaBins'
    `--distributed`), `action="store_false"` with `default=False` (always
    False); each declared once, and never set by the file itself."""
    if not index.mentions("store_"):
        return {}

    def compute() -> Dict[str, bool]:
        out: Dict[str, bool] = {}
        seen = set()
        for call, kw in _add_argument_calls(index):
            name = _destination(call, kw)
            if name is None:
                continue
            if name in seen:
                out.pop(name, None)
                continue
            seen.add(name)
            default, action = kw.get("default"), kw.get("action")
            if isinstance(action, ast.Constant) and isinstance(default, ast.Constant) and (
                    (action.value, default.value) in (("store_true", True), ("store_false", False))):
                out[name] = default.value is True
        stored = _stored_attributes(index)
        return {k: v for k, v in out.items() if k not in stored}

    return index.memoized("options.constant_flags", None, compute)  # type: ignore[return-value]


def option_defaults(calls: Iterable[ast.AST]) -> Dict[str, object]:
    """`number_defaults` of the `add_argument` calls among `calls`."""
    out: Dict[str, object] = {}
    twice = set()
    for call, kw in _argument_calls(calls):
        name = _destination(call, kw)
        default = kw.get("default")
        if name is None:
            continue
        if name in out or name in twice:
            twice.add(name)
            out.pop(name, None)
            continue
        value = _constant(default) if default is not None else None
        if value is not None:
            out[name] = value
    return out


def default_of_option(index: TreeIndex, expr: ast.AST, elsewhere: Optional[Dict[str, object]] = None) -> Optional[object]:
    """The default of the command-line option `expr` reads (`args.workers`,
    `int(opt.nThreads)`), declared once by an `add_argument` of the file or,
    `elsewhere`, of another file of the program (`CallFacts.option_defaults`);
    None where unknown, or where the file sets the attribute itself
    (`args.workers = 8`)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and len(expr.args) == 1:
        expr = expr.args[0]
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        return None
    defaults = number_defaults(index)
    value = defaults.get(expr.attr, (elsewhere or {}).get(expr.attr))
    if value is None or expr.attr in _stored_attributes(index):
        return None
    return value


def _stored_attributes(index: TreeIndex) -> FrozenSet[str]:
    """The attribute names the file assigns (`args.workers = 8`): options it sets itself."""
    return index.memoized("options.stored_attributes", None, lambda: frozenset(  # type: ignore[return-value]
        n.attr for n in index.nodes(ast.Attribute) if isinstance(n.ctx, ast.Store)))


def _constant(node: ast.AST) -> Optional[object]:
    """The number or string a literal is (`0`, `-1`, `"adam"`); None else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
        return node.value
    return None


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le}


def off_by_default(index: TreeIndex, test: ast.AST, elsewhere: Optional[Dict[str, object]] = None) -> bool:
    """`args.gpu_id == -1` where the file declares `--gpu-id` with
    `default=0`: a comparison of an option with a constant that is false at
    the option's default, so what it guards runs only when the user asks;
    also `a == x or a == y` (each false) and `p and q` (one false).
    `elsewhere`: the defaults of the options that other files of the
    program declare (`CallFacts.option_defaults`: TTSR's `--num_gpu`, 1 in
    `option.py`, tested in `trainer.py`)."""
    if isinstance(test, ast.BoolOp):
        offs = [off_by_default(index, v, elsewhere) for v in test.values]
        return all(offs) if isinstance(test.op, ast.Or) else any(offs)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE):
        return False
    left, right = test.left, test.comparators[0]
    flipped = not isinstance(left, ast.Attribute)
    if flipped:
        left, right = right, left
    value = _constant(right)
    if not isinstance(left, ast.Attribute) or value is None:
        return False
    defaults = number_defaults(index)
    if left.attr in defaults:
        a = defaults[left.attr]
    elif elsewhere and left.attr in elsewhere:
        a = elsewhere[left.attr]
    else:
        return False
    b = value
    if flipped:
        a, b = b, a
    try:
        return not _COMPARE[type(test.ops[0])](a, b)
    except TypeError:
        return False


def taken_by_default(index: TreeIndex, test: ast.AST, elsewhere: Optional[Dict[str, object]] = None) -> bool:
    """The `if` test holds on a run with the program's defaults: a
    comparison of an option with a constant that is true at the option's
    default (GSCNN's `if args.edge_weight > 0:` with `default=1.0`), a flag
    no command line can change that is True (`constant_flags`), or `and`
    of such tests."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(taken_by_default(index, v, elsewhere) for v in test.values)
    if isinstance(test, ast.Attribute):
        return constant_flags(index).get(test.attr) is True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE):
        return False
    if not (isinstance(test.left, ast.Attribute) and _constant(test.comparators[0]) is not None):
        return False  # (the option on the left: `args.x > 0`)
    defaults = number_defaults(index)
    if test.left.attr not in defaults and not (elsewhere and test.left.attr in elsewhere):
        return False
    return not off_by_default(index, test, elsewhere)


def tested_options(index: TreeIndex) -> FrozenSet[str]:
    """The attributes that the file's `if` tests compare with a constant
    (`if args.num_gpu > 1:`, also within `and`/`or`): those whose defaults,
    declared by another file of its program, `off_by_default` may need."""
    return index.memoized("options.tested_options", None,  # type: ignore[return-value]
                          lambda: compared_options(index.nodes(ast.If)))


def compared_options(ifs: Iterable[ast.AST]) -> FrozenSet[str]:
    """`tested_options` of the `if` statements among `ifs`."""
    out = set()
    for node in ifs:
        for n in walk(node.test):  # type: ignore[attr-defined]
            if isinstance(n, ast.Compare) and len(n.ops) == 1:
                for side, other in ((n.left, n.comparators[0]), (n.comparators[0], n.left)):
                    if isinstance(side, ast.Attribute) and _constant(other) is not None:
                        out.add(side.attr)
    return frozenset(out)


def tested_flags(index: TreeIndex) -> FrozenSet[str]:
    """The names that the file's `if` tests could be opt-in flags by
    (`if args.log_logit_mean:`, `if verbose and ...:`): those a flag of
    another file of its program must have to guard anything here."""
    return index.memoized("options.tested", "flags", lambda: frozenset(
        name for node in index.nodes(ast.If) for name in _test_names(node.test)  # type: ignore[attr-defined]
        if _FLAG_WORD_RE.search(name)))


def _test_names(test: ast.AST, self_only: bool = False):
    """The names an `if` test may test a flag by: the test's, or each part's
    of an `and` (`args.print_loss`, `verbose`); with `self_only`, only
    `self.<option>`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for v in test.values:
            yield from _test_names(v, self_only)
    elif self_only:
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self":
            yield test.attr
    elif isinstance(test, (ast.Attribute, ast.Name)):
        yield test.attr if isinstance(test, ast.Attribute) else test.id


def _names_a_flag(test: ast.AST, flags: FrozenSet[str], self_only: bool = False) -> bool:
    return any(name in flags for name in _test_names(test, self_only))


# what names a flag for a debugging or diagnostic mode, not a phase of the program
# (`--debug_eval_row_interactions`, not `--do_eval`): a whole loop under it is that mode's
DEBUG_FLAG_RE = re.compile(r"debug|verbose|print|profil|visuali|plot|trace|dump|sanity", re.I)


def under_opt_in_flag(index: TreeIndex, node: ast.AST, ancestors: Sequence[ast.AST], stop: ast.AST,
                      elsewhere: FrozenSet[str] = frozenset(), beyond: Optional["re.Pattern"] = None) -> bool:
    """`node` runs in the body of an `if args.<flag>:` (or `if ... and
    args.<flag>:`) between it and `stop` (a loop or a def), where `<flag>`
    is one of the file's opt-in flags; or of an `if self.<option>:` where
    `<option>` is an output option of the class, off by default
    (`output_options`). `elsewhere`: the opt-in flags that other files of
    the program define (`CallFacts.opt_in_flags`). With `beyond`, the walk
    goes on past `stop` to the def, taking there only the flags and options
    whose names it matches (`DEBUG_FLAG_RE`: a debugging mode around the
    loop itself)."""
    flags = opt_in_flags(index) | elsewhere
    cls = next((a for a in reversed(ancestors) if isinstance(a, ast.ClassDef)), None)
    options = output_options(index, cls) if cls is not None else frozenset()
    if not flags and not options:
        return False
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES) or (anc is stop and beyond is None):
            return False
        if anc is stop:  # (past the loop: a debugging mode's flags only)
            flags = frozenset(f for f in flags if beyond.search(f))
            options = frozenset(o for o in options if beyond.search(o))
            if not flags and not options:
                return False
        if isinstance(anc, ast.If) and child in anc.body and (
                _names_a_flag(anc.test, flags) or _names_a_flag(anc.test, options, self_only=True)):
            return True
    return False


# what names an output a model returns only when asked: its attention maps,
# hidden states, intermediate results (`output_attention`, `return_attn`)
_OUTPUT_OPTION_RE = re.compile(r"^(?:output|return|store|keep)_|" + OPTION_WORD_RE.pattern, re.I)


def output_options(index: TreeIndex, cls: ast.ClassDef) -> FrozenSet[str]:
    """The attributes that the class's `__init__` sets from a parameter whose
    default is off (`False` or `None`) and whose name asks for an extra output
    or for logging (`self.output_attention = output_attention`, with
    `output_attention=False`): Informer's attention layers build the
    attention map to return only when the user asks for it."""

    def compute() -> FrozenSet[str]:
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is None:
            return frozenset()
        off = {a.arg for a, d in parameter_defaults(init) if isinstance(d, ast.Constant) and d.value in (False, None)
               and _OUTPUT_OPTION_RE.search(a.arg)}
        out = set()
        for stmt in walk(init):
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in off:
                out.update(t.attr for t in stmt.targets if isinstance(t, ast.Attribute)
                           and isinstance(t.value, ast.Name) and t.value.id == "self")
        return frozenset(out)

    return index.memoized("options.output", cls, compute)


def under_option(fa, node: ast.AST, ancestors, region: ast.AST) -> bool:
    """`node` sits in the body of an `if` between it and `region` whose test
    names an option or schedule (`OPTION_WORD_RE`): the callee then runs on
    some steps, not every one, and the call graph does not make it per-step
    code. (Within one function the rules judge such guards themselves.) Also
    a test-mode option (`if opt.test:`, `_TEST_MODE_RE`) and a test that
    picks one pass of a loop by its variable (`if step == 0:`)."""
    chain = list(ancestors) + [node]
    loop_vars = {n.id for anc in chain if isinstance(anc, (ast.For, ast.AsyncFor))
                 for n in walk(anc.target) if isinstance(n, ast.Name)}
    for i in range(len(chain) - 2, -1, -1):
        anc = chain[i]
        if anc is region:
            return False
        if isinstance(anc, ast.If) and fa.index.in_block(chain[i + 1], anc):
            if _names_option(fa, anc.test) or _one_pass_test(anc.test, loop_vars):
                return True
    return False


def _names_option(fa, test: ast.AST) -> bool:
    """A word of the test names an option or schedule (`OPTION_WORD_RE`);
    once per test, since every call under the `if` asks."""
    return fa.index.memoized("summary.option_test", test, lambda: any(
        OPTION_WORD_RE.search(w) or _TEST_MODE_RE.search(w) for w in words_of_test(test)))


# a test-mode option (`if opt.test:`, `args.test_only`, `self.testing`): CenterNet's
# `save_result` of detections runs in its test passes only, not every training step;
# and a visualisation switch (EfficientZero's `if vis_result:`, every `vis_interval` steps)
_TEST_MODE_RE = re.compile(r"(?:^|_)test(?:ing|_only)?$|(?:^|_)vis(?:_|$)", re.I)


def _one_pass_test(test: ast.AST, loop_vars) -> bool:
    """`if i == len(loader) - 1:`, `if step == 0:`: a loop variable compared
    for equality picks one pass of the loop, not every one."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and any(isinstance(x, ast.Name) and x.id in loop_vars for x in (test.left, test.comparators[0]))
    )


def words_of_test(test: ast.AST) -> List[str]:
    """The names and attribute names a test is made of (`opt.test` -> `opt`, `test`)."""
    out = []
    for n in walk(test):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
    return out
