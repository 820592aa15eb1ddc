from __future__ import annotations

import ast
import re
from textwrap import dedent

from gpulint.model.index.nodes import COMPREHENSIONS, LOOPS, is_main_guard, takes_input
from gpulint.model.index.order import walk_scope
from gpulint.model.control.options import off_by_default, on_by_default
from gpulint.model.names import dotted, node_word
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import IN_MEMORY_TRAIN_LOOP
from gpulint.model.index.walk import walk


class DataParallel(Rule):
    """
    ## What it does
    Flags the construction of `torch.nn.DataParallel`, in any import form
    (`nn.DataParallel`, `from torch.nn.parallel import DataParallel as DP`, ...)
    or through a subclass the file, or another file of the project, defines
    (`class CustomDataParallel(nn.DataParallel):`, a vendored
    `sync_batchnorm.DataParallelWithCallback`; PyTorch Geometric's
    `DataParallel` too),
    and calls of its functional form, `torch.nn.parallel.data_parallel(module,
    inputs, device_ids)`, which scatters, replicates the module, runs and
    gathers on every call. The functional form is flagged only where it is
    called whatever the settings: in the labelled corpora every call of it
    sat in a branch on a GPU count the user sets (`if self.ngpu > 1:` in
    the DCGAN example and its copies, poutyne's extra devices), the path
    that an option picks.
    `isinstance` checks, strings, comments and unrelated classes that happen to
    be named `DataParallel` are not flagged.
    Nor is a `DataParallel` in a branch that a command-line flag no command
    line can change never takes (the `else` of `if args.distributed:` where
    `--distributed` is `store_true` with `default=True`, AdaBins), or in the
    branch one GPU takes (the plain `else` of `if len(opt.gpu_id) > 1:`, the
    body of `if n_gpu == 1:`: MedicalNet limits CUDA to that GPU first, and
    the wrapper then only calls the module).

    Nor is `DataParallel` built inside a class or function whose name says it
    implements a data-parallel option the user picks (`DataParallelStrategy`,
    Lightning's `strategy="dp"`; fastai's `ParallelTrainer`; `wrap_dp`): the
    library cannot switch that option to DDP, and the advice belongs to the
    user's choice. The same goes for `DataParallel` under an `if` on such an
    option (`if use_multi_gpu and ...:`, `if args.data_parallel:`; not one
    whose `add_argument` in the file makes it on by default, `--dp` with
    `default=True`: that is the program's default path), in the body of an
    `if` comparing an option of the file, or of another file of its
    program (TTSR's `option.py`), with a constant where the
    comparison is false at the option's default (`if args.gpu_id == -1:`,
    `--gpu-id` 0 by default: one GPU unless the user asks; also within
    `and`/`or`: `if not args.cpu and args.num_gpu > 1:`), and under
    `if isinstance(model, DataParallel):`, which wraps parts the same way as
    a model the user already wrapped (`if not isinstance(model,
    DataParallel):` in a function that runs a backward, or that builds or
    zeroes an optimizer, is a wrap of the model it trains, and flagged). Nor is a module whose gradients the
    function turns off (`model.requires_grad_(False)`, or `for p in
    avg_g.parameters(): p.requires_grad = False`), or a call handed one
    (`DataParallel(Extractor(model))`): a frozen feature extractor (FID's
    Inception) or a moving-average generator trains nothing, and
    `DistributedDataParallel` refuses a module with no parameter that needs
    a gradient. Nor is a model
    wrapped only to be evaluated or for its keys: `net =
    nn.DataParallel(net)` in a scope that runs no backward, hands the
    wrapper nowhere else, and calls it (or its `forward`) only with
    gradients off, after switching it to eval mode (`model = model.eval()`,
    DGCNN's `test()`; `nn.DataParallel(model).to(device).eval()`), only once from a script's own code outside any loop,
    or never (wrapped only so that `load_state_dict` accepts, or
    `state_dict()` gives, `module.` keys): an `eval.py`, a `validate()`
    helper over a pretrained model, a converter that saves a checkpoint; nor
    one whose module the next statement takes back out (`net =
    nn.DataParallel(net)`, then `net = net.module`: GSCNN's trunk), which
    never runs the wrapper. Nor is one in a program that trains nothing: a script (an `if __name__
    == "__main__":` block or a command line) whose wrap runs in its
    module-level code or in a top-level function its own module-level code
    calls (`main()`, and what `main()` calls in turn on every run, not under
    an option: `main_worker(args)`), and which calls no backward, step, `fit` or `train`,
    uses no optimizer (one it only builds, or whose state it only loads and
    saves, as a checkpoint converter copied from the training script does,
    is idle), and calls nothing of the project that steps (a
    `test.py`, a `demo.py`, a `predict.py`, an interpolation script).
    A silent fallback is still flagged, such as the Trainer or
    training script that wraps the model in `DataParallel` whenever it sees
    several GPUs in one process: users who forget `torchrun` get the slow
    path without being told.

    ## Why is this bad?
    `DataParallel` runs one Python process that drives every GPU from a single
    thread: each step it scatters the batch, replicates the model onto every
    device, gathers outputs on GPU 0 and reduces gradients there. The GIL, the
    per-step replication and the imbalance on GPU 0 cap its scaling well below
    `DistributedDataParallel` (one process per GPU, gradients all-reduced with
    NCCL and overlapped with backward). PyTorch's own documentation recommends
    `DistributedDataParallel` even on a single machine.

    ## Fix safety
    No automatic fix: moving to `DistributedDataParallel` changes how the
    program is launched (`torchrun`), how data is sharded (`DistributedSampler`)
    and how the process group is set up.

    ## References
    - [PyTorch: DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    - [PyTorch: Use nn.parallel.DistributedDataParallel instead of multiprocessing or nn.DataParallel](https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel)
    - [torchrun](https://pytorch.org/docs/stable/elastic/run.html)
    """

    code = "GPU001"
    name = "data-parallel"
    message = "`DataParallel` drives all GPUs from one process; use `DistributedDataParallel` launched with `torchrun`"
    fix_safety = NONE
    needles = ("DataParallel", "data_parallel")
    examples = (
        Example(
            bad="""
            import torch
            from torch import nn

            model = nn.Linear(1024, 1024).cuda()
            model = nn.DataParallel(model)
            """,
            good="""
            import os

            import torch
            import torch.distributed as dist
            from torch import nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            # launched with: torchrun --nproc_per_node=NUM_GPUS train.py
            dist.init_process_group("nccl")
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            model = nn.Linear(1024, 1024).cuda()
            model = DDP(model, device_ids=[local_rank])
            """,
        ),
    )
    bench = Bench(
        setup='''
            import os
            import socket

            import torch
            import torch.nn.functional as F
            from torch import nn

            # ResNet-style classifier trained on batches of 128 64x64 images (synthetic, already
            # on the GPU) on one GPU: the wrapper's per-step overhead is all that differs
            batch_size, size, width, classes, n_batches = (8, 16, 8, 10, 2) if SMALL else (128, 64, 64, 1000, 8)
            inputs = torch.randn(n_batches, batch_size, 3, size, size, device=DEVICE)
            targets = torch.randint(0, classes, (n_batches, batch_size), device=DEVICE)


            def block(cin, cout, stride=1):
                return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


            net = nn.Sequential(
                block(3, width), block(width, width),
                block(width, 2 * width, 2), block(2 * width, 2 * width),
                block(2 * width, 4 * width, 2), block(4 * width, 4 * width),
                block(4 * width, 8 * width, 2), block(8 * width, 8 * width),
                nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
            ).to(DEVICE)
            step = 0
        ''',
        bad="model = nn.DataParallel(net)\n" + IN_MEMORY_TRAIN_LOOP,
        good=dedent('''
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP

            # launched with: torchrun --nproc_per_node=NUM_GPUS train.py (run alone, it is one process of one)
            for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
                os.environ.setdefault(key, value)
            if "MASTER_PORT" not in os.environ:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    os.environ["MASTER_PORT"] = str(s.getsockname()[1])
            dist.init_process_group("nccl" if DEVICE == "cuda" else "gloo")
            local_rank = int(os.environ["LOCAL_RANK"])
            if DEVICE == "cuda":
                torch.cuda.set_device(local_rank)
            model = DDP(net, device_ids=[local_rank] if DEVICE == "cuda" else None)
            ''')
        + IN_MEMORY_TRAIN_LOOP,
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "ResNet-style training step on a batch of 128 64x64 images on one GPU, wrapped in DataParallel (bad) or in "
            "DistributedDataParallel as one process of one (good, what torchrun starts per GPU). On one GPU both run the "
            "module's own kernels and DDP averages gradients over one rank: the loss agrees up to cuDNN's run-to-run "
            "rounding (rtol 1e-4)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func)
        functional = q in _FUNCTIONAL
        if q != "torch.nn.DataParallel" and not functional and not _own_subclass(ctx, node.func) \
                and ctx.analysis.facts.subclass_of(node) != "torch.nn.DataParallel":
            return
        if any(isinstance(a, _DEFS) and _IMPLEMENTS_DP.search(a.name) for a in ctx.ancestors):
            return  # the code that implements a `dp` option the user picked
        if functional and _under_a_branch(ctx.ancestors):
            return  # `if self.ngpu > 1: data_parallel(...) else: self.main(x)`: the path a setting picks
        chain = list(ctx.ancestors) + [node]
        for i, anc in enumerate(ctx.ancestors):
            if isinstance(anc, (ast.If, ast.IfExp)) and _opt_in_or_rewrap(
                    ctx.analysis, anc.test, lambda: _trains_here(ctx)):
                return
            if isinstance(anc, ast.If) and chain[i + 1] in anc.body and off_by_default(
                    ctx.analysis.index, anc.test, ctx.analysis.facts.option_defaults()):
                return  # `if args.gpu_id == -1:` with `--gpu-id` 0 by default (here, or in the program's
                # `option.py`): the user asks for it
            if isinstance(anc, ast.If) and _one_device_branch(anc, chain[i + 1]):
                return  # the `else` of `if len(opt.gpu_id) > 1:` (MedicalNet): one GPU, nothing to scatter
        if not functional and _wraps_frozen(ctx, node):
            return  # nothing of it trains: no gradient to reduce, and DDP refuses such a module
        if not functional and _only_evaluated(ctx, node):
            return  # an evaluation pass: nothing trains the wrapped model, and no gradient is reduced
        if not functional and _unwrapped_at_once(ctx, node):
            return  # `m = DataParallel(m)` then `m = m.module`: the wrapper never runs
        if _script_that_never_trains(ctx):
            return  # an inference, evaluation or export program: no gradient is ever reduced
        self.report(ctx, node, _FUNCTIONAL_MESSAGE if functional else None)


def _own_subclass(ctx, func: ast.AST) -> bool:
    """`CustomDataParallel(net)` with `class CustomDataParallel(nn.DataParallel):`
    in the file (yolact's, which only changes how batches are scattered)."""
    if not isinstance(func, ast.Name):
        return False
    index = ctx.analysis.index
    subclasses = index.memoized("gpu001.subclasses", None, lambda: {
        c.name for c in index.nodes(ast.ClassDef)
        if any(ctx.qualname(b) == "torch.nn.DataParallel" for b in c.bases)})  # type: ignore[attr-defined]
    return func.id in subclasses


# a call under one of these may run many times (`[model(b) for b in batches]` too)
_LOOPS = LOOPS + COMPREHENSIONS
# ... of which these give the wrapper itself back
_SAME_MODULE_METHODS = frozenset({"eval", "to", "cuda"})
# ... and these read or write its keys (or take the module out)
_KEY_METHODS = frozenset({"module", "load_state_dict", "state_dict"})


def _kept_in(parents, method: ast.Attribute, name: str) -> bool:
    """`model.to(d)` as a statement, or bound to the same name (`model =
    model.to(d)`): what the method gives back goes nowhere else."""
    call = parents.get(method)
    if not (isinstance(call, ast.Call) and call.func is method):
        return False
    stmt = parents.get(call)
    return isinstance(stmt, ast.Expr) or (
        isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name)


# what may be done to a wrapped model that is only evaluated
_EVAL_ONLY_METHODS = _SAME_MODULE_METHODS | _KEY_METHODS


def _only_evaluated(ctx, node: ast.Call) -> bool:
    """`model = nn.DataParallel(model)` (or `nn.DataParallel(model).to(d)`)
    in a scope that calls the wrapped model only with gradients off (or
    switches it to eval mode, `model = model.eval()`: DGCNN's `test()`), runs
    no backward, and lets it go nowhere else (not returned, stored, passed
    on, trained or read in a nested function): an evaluation pass over a
    pretrained model (a `verify.py`, an `eval_*.py`, a `validate()` helper).
    DataParallel's cost is its per-step replication and gradient reduction
    in training; a one-pass evaluation is not what the rule is about."""
    fa = ctx.analysis
    index = fa.index
    parents = index.parents
    top: ast.AST = node
    switched = False  # `model.eval()`
    while isinstance(parents.get(top), ast.Attribute) and isinstance(parents.get(parents[top]), ast.Call) \
            and parents[top].attr in ("to", "cuda", "eval"):
        switched = switched or parents[top].attr == "eval"  # `nn.DataParallel(model).to(device).eval()`
        top = parents[parents[top]]  # `nn.DataParallel(net).to(device)`
    stmt = parents.get(top)
    if not (isinstance(stmt, ast.Assign) and stmt.value is top and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    scope = index.enclosing_scope(ctx.ancestors) or ctx.tree
    own = set()
    calls = []
    keyed = False  # its `module.` keys read or written
    inside = {id(n) for n in walk(stmt)}
    if _runs_backward(fa, scope):
        return False
    for n in walk_scope(scope.body):
        own.add(id(n))
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)) or id(n) in inside or (
                n.lineno, n.col_offset) < (stmt.lineno, stmt.col_offset):
            continue  # (a read before the wrapping, or in it, reads the model as it was)
        parent = parents.get(n)
        if isinstance(parent, ast.Call) and parent.func is n:
            calls.append(parent)
        elif isinstance(parent, ast.Attribute) and parent.attr == "forward" and isinstance(
                parents.get(parent), ast.Call) and parents[parent].func is parent:
            calls.append(parents[parent])  # `model.forward(x)`
        elif not (isinstance(parent, ast.Attribute) and parent.attr in _EVAL_ONLY_METHODS):
            return False  # passed on, returned, stored, or trained (`.train()`, `.parameters()`)
        elif parent.attr in _SAME_MODULE_METHODS and not _kept_in(parents, parent, name):
            return False  # `return model.cuda()`: the wrapper itself, handed on
        elif parent.attr in _KEY_METHODS:
            keyed = True
        elif parent.attr == "eval":
            switched = True
    if any(isinstance(n, ast.Name) and n.id == name and id(n) not in own for n in walk(scope)):
        return False  # read in a nested function (defined before or after), which may do anything with it
    # never called: wrapped for its `module.` keys only (`load_state_dict`, `state_dict()`);
    # called with gradients off; or called once by a script's own code, outside any loop
    return (bool(calls) or keyed) and (switched or all(fa.contexts.grad_disabled(ancs) or (
        isinstance(scope, ast.Module) and not any(isinstance(a, _LOOPS) for a in ancs))
        for c in calls for ancs in (index.ancestors(c),)))


def _unwrapped_at_once(ctx, node: ast.Call) -> bool:
    """`wide_resnet = torch.nn.DataParallel(wide_resnet)`, and the next
    statement takes the module back out (`wide_resnet = wide_resnet.module`,
    GSCNN's trunk): the wrapper is dropped before anything calls it."""
    index = ctx.analysis.index
    stmt = index.parents.get(node)
    if not (isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    where = index.slot(stmt)  # (the block holding it, and where)
    if where is None:
        return False
    body = getattr(where[0], where[1])
    nxt = body[where[2] + 1] if where[2] + 1 < len(body) else None
    return (isinstance(nxt, ast.Assign) and len(nxt.targets) == 1 and isinstance(nxt.targets[0], ast.Name)
            and nxt.targets[0].id == name and isinstance(nxt.value, ast.Attribute) and nxt.value.attr == "module"
            and isinstance(nxt.value.value, ast.Name) and nxt.value.value.id == name)


def _wraps_frozen(ctx, node: ast.Call) -> bool:
    """`nn.DataParallel(m)` of a module whose function turns its gradients
    off (`m.requires_grad_(False)`, or `for p in m.parameters():
    p.requires_grad = False`), or of a call handed such a module
    (`DataParallel(Extractor(model))` after `model.requires_grad_(False)`):
    a frozen feature extractor or a moving-average copy, which no optimizer
    steps. `DistributedDataParallel` refuses a module with no parameter
    that needs a gradient, so the rule's advice does not apply."""
    if not node.args:
        return False
    arg = node.args[0]
    wrapped = [arg] if not isinstance(arg, ast.Call) else list(arg.args)
    keys = {dotted(a) for a in wrapped if isinstance(a, (ast.Name, ast.Attribute))} - {None}
    if not keys:
        return False
    scope = ctx.analysis.index.enclosing_scope(ctx.ancestors) or ctx.tree
    for n in walk_scope(scope.body):
        if isinstance(n, ast.Call) and _turns_grad_off(n) and dotted(n.func.value) in keys:
            return True  # `model.requires_grad_(False)`
        if isinstance(n, (ast.For, ast.AsyncFor)) and isinstance(n.target, ast.Name) and _parameters_of(n.iter) in keys:
            p = n.target.id
            if any(_turns_grad_off(m) and isinstance(m.func.value, ast.Name) and m.func.value.id == p
                   or isinstance(m, ast.Assign) and _false(m.value) and any(
                       isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                       and isinstance(t.value, ast.Name) and t.value.id == p for t in m.targets)
                   for b in n.body for m in walk(b)):
                return True  # `for param in self.avgG.parameters(): param.requires_grad = False`
    return False


def _turns_grad_off(n: ast.AST) -> bool:
    """`x.requires_grad_(False)`."""
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad_"
            and len(n.args) == 1 and _false(n.args[0]))


def _false(n: ast.AST) -> bool:
    return isinstance(n, ast.Constant) and n.value is False


def _parameters_of(it: ast.AST):
    """`m` of `m.parameters()`, as a dotted name."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "parameters":
        return dotted(it.func.value)
    return None


# `torch.nn.parallel.data_parallel(module, inputs, device_ids)`: DataParallel's
# forward as a function, which replicates the module onto every device on each call
_FUNCTIONAL = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})
_FUNCTIONAL_MESSAGE = (
    "`data_parallel()` replicates the module onto every GPU on each call, from one process; use "
    "`DistributedDataParallel` launched with `torchrun`"
)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _one_device_branch(branch: ast.If, child: ast.AST) -> bool:
    """`child` runs only where a count of GPUs is at most one: the plain
    `else` of `if <count> > 1:` (or `>= 2`), the body of `if <count> == 1:`
    (or `<= 1`, `< 2`), the count naming GPUs or devices (`len(opt.gpu_id)`,
    `n_gpu`, `torch.cuda.device_count()`; not a world size, whose `else`
    may hold an `elif` that counts GPUs again, as ignite's `auto_model`)."""
    test = branch.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant)
            and any(_GPU_COUNT_WORD.search(w) for w in map(node_word, walk(test.left)) if w)):
        return False
    if isinstance(child, ast.If) and branch.orelse == [child]:
        return False  # an `elif`: a test of its own
    op, bound = test.ops[0], test.comparators[0].value
    if type(bound) is not int:
        return False
    many = isinstance(op, ast.Gt) and bound == 1 or isinstance(op, ast.GtE) and bound == 2
    one = isinstance(op, ast.Eq) and bound == 1 or isinstance(op, ast.LtE) and bound == 1 or (
        isinstance(op, ast.Lt) and bound == 2)
    return (many and child in branch.orelse) or (one and child in branch.body)


_GPU_COUNT_WORD = re.compile(r"gpu|device", re.I)


def _under_a_branch(ancestors) -> bool:
    """An `if` (or `... if ... else ...`) of the enclosing function holds the node."""
    for anc in reversed(ancestors):
        if isinstance(anc, _DEFS):
            return False
        if isinstance(anc, (ast.If, ast.IfExp)):
            return True
    return False
# a user's option that asks for DataParallel: `use_multi_gpu`, `args.data_parallel`, `cfg.dp`
_OPT_IN_WORD = re.compile(r"multi_?gpu|data_?parallel|(?:^|_)dp(?:$|_)", re.I)


def _trains_here(ctx) -> bool:
    """The scope around the node being visited runs a backward, or readies
    an optimizer (`self.optimizerD.zero_grad()`, a `torch.optim` optimizer
    built: pytorch_GAN_zoo's `updateSolversDevice` wraps its networks, then
    builds and zeroes their solvers)."""
    fa = ctx.analysis
    scope = fa.index.enclosing_scope(ctx.ancestors) or ctx.tree
    return _runs_backward(fa, scope) or any(
        isinstance(n, ast.Call) and (isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad"
                                     or (fa.imports.call_qualname(n) or "").startswith("torch.optim."))
        for n in walk_scope(scope.body))


def _runs_backward(fa, scope: ast.AST) -> bool:
    """The code of `scope` (not its nested defs) calls a backward."""
    return any(isinstance(n, ast.Call) and fa.steps.is_backward_call(n) for n in walk_scope(scope.body))


def _opt_in_or_rewrap(fa, test: ast.AST, trains) -> bool:
    """`if use_multi_gpu and ...:` (an option the user turned on, as opposed to
    a silent `if torch.cuda.device_count() > 1:`), or `if isinstance(model,
    DataParallel):` (wrapping parts the same way as a model the user already
    wrapped)."""
    # (the class an `isinstance` names is no option: `DataParallel` there is a type)
    types = {id(t) for n in walk(test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "isinstance" and len(n.args) == 2 for t in walk(n.args[1])}
    for n in walk(test):
        word = node_word(n) if id(n) not in types else None
        if word and _OPT_IN_WORD.search(word) and not (
                isinstance(n, ast.Attribute) and n.attr in on_by_default(fa.index)):
            return True  # (`args.dp` whose `--dp` defaults to True: the default path, no choice)
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "isinstance"
            and not (_negated(fa, n) and trains())  # (`if not isinstance(model, DataParallel):` in
            # a training function wraps the model it trains; in an evaluation, one it evaluates)
            and len(n.args) == 2
            and any(fa.imports.qualname(t) == "torch.nn.DataParallel" for t in walk(n.args[1]))
        ):
            return True
    return False
# calls that may train what they are handed where the project cannot tell:
# Lightning's `trainer.fit(model)`, a Trainer's `train()`, `model.train()` before a step
_MAY_TRAIN_ATTRS = frozenset({"backward", "step", "fit", "train", "fit_one_epoch", "train_one_epoch", "train_epoch",
                              "train_step"})


def _script_that_never_trains(ctx) -> bool:
    """The wrap runs in a program that trains nothing: its file is run as a
    script (module-level code, or a top-level function that the file's own
    module-level code or `if __name__ == "__main__":` block calls, such as
    `main()`), calls no backward or step, names no optimizer, and none of its calls
    reaches one through the project (`facts.steps`) or is one a framework
    or a trainer trains with (`trainer.fit(model)`, `.train(...)`,
    `train_one_epoch(...)`: a loop of steps in another file is also built
    around an optimizer, which the file would build or name). An
    `eval.py`, a `test.py`, a demo or an export script wraps the model for
    its `module.` keys or to spread one evaluation pass; DataParallel's cost
    is the gradient reduction and replication of every training step."""
    fa = ctx.analysis
    index = fa.index
    if not any(is_main_guard(s) for s in ctx.tree.body) and not takes_input(index.text):
        return False  # a module that others import, not a program (a script reads its settings)
    funcs = [a for a in ctx.ancestors if isinstance(a, _DEFS)]
    if funcs:
        func = funcs[0]
        if len(funcs) > 1 or index.parents.get(func) is not ctx.tree or isinstance(func, ast.ClassDef):
            return False  # a method, or a nested function: someone else may call it
        if func.name not in index.memoized("gpu001.run_by_the_script", None, lambda: _run_by_the_script(index)):
            return False  # a function no module-level code of the file runs: other files may call it
    return index.memoized("gpu001.never_trains", None, lambda: not any(
        (isinstance(n, ast.Call) and (fa.facts.steps(n) or node_word(n.func) in _MAY_TRAIN_ATTRS))
        or (isinstance(n, (ast.Name, ast.Attribute)) and "optim" in (node_word(n) or "").lower()
            and not _optimizer_kept_idle(index, n))
        for n in index.nodes(ast.Call, ast.Name, ast.Attribute)))


# what a script that never trains does with an optimizer it builds: its state, for a checkpoint
_IDLE_OPTIMIZER_ATTRS = frozenset({"load_state_dict", "state_dict", "param_groups"})


def _optimizer_kept_idle(index, n: ast.AST) -> bool:
    """`n`, a name or attribute that names an optimizer, only builds or keeps
    one: the target of `optimizer = torch.optim.RMSprop(...)`, the
    constructor's own name (`torch.optim`, `optim.Adam`), or the receiver of
    `optimizer.load_state_dict(...)` / `.state_dict()` (a converter copied
    from the training script resumes one to save it). Handed to a call, or
    stepped, it may train (`fit(model, optimizer)`)."""
    if isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del)):
        return True
    parent = index.parents.get(n)
    if isinstance(parent, ast.Attribute) and parent.value is n:
        if parent.attr in _IDLE_OPTIMIZER_ATTRS:
            return True
        while isinstance(parent, ast.Attribute):  # `torch.optim.lr_scheduler.StepLR`
            n, parent = parent, index.parents.get(parent)
        return isinstance(parent, ast.Call) and parent.func is n  # the constructor called
    return isinstance(parent, ast.Call) and parent.func is n


_BRANCHING = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.BoolOp,
              ast.Lambda) + ((ast.Match,) if hasattr(ast, "Match") else ())


def _run_by_the_script(index) -> frozenset:
    """The names of the file's top-level functions that its module-level
    code calls, or that such a function calls on every run of it (not under
    a branch or a loop), and so on (`main()` calling `main_worker(args)`,
    SpCL's test script)."""
    tops = {s.name for s in index.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls: dict = {}  # caller (None: module-level code) -> the top-level functions it calls by name
    for c in index.nodes(ast.Call):
        if isinstance(c.func, ast.Name) and c.func.id in tops:
            ancestors = index.ancestors(c)
            owner = next((a for a in reversed(ancestors) if isinstance(a, _DEFS)), None)
            if owner is None:
                calls.setdefault(None, set()).add(c.func.id)  # (any call of the module's code)
            elif isinstance(owner, ast.FunctionDef) and index.parents.get(owner) is index.tree and all(
                    isinstance(a, (ast.stmt, ast.expr)) and not isinstance(a, _BRANCHING) for a in
                    ancestors[ancestors.index(owner) + 1:]):
                # a function's own plain calls (`main()` always calls `main_worker(args)`); not
                # one an option picks (yolact's `evaluate` runs `evalvideo` under `elif args.video`)
                calls.setdefault(owner.name, set()).add(c.func.id)
    run, todo = set(), [None]
    while todo:
        for name in calls.get(todo.pop(), ()):
            if name not in run:
                run.add(name)
                todo.append(name)
    return frozenset(run)


# `DataParallelStrategy`, `ParallelTrainer`, `to_parallel`, `wrap_dp`
_IMPLEMENTS_DP = re.compile(r"parallel|(?:^|_)dp(?:$|_)", re.I)


def _negated(fa, node: ast.AST) -> bool:
    """`not <node>`: the node is the operand of a `not`."""
    parent = fa.index.parents.get(node)
    return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
