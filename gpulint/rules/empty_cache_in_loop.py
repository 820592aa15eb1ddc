from __future__ import annotations

import ast
import re

from gpulint.model.index.nodes import LOOPS, SCOPES
from gpulint.model.index.order import walk_scope
from gpulint.model.names import last_name
from gpulint.edits import remove_statement
from gpulint.model.control.loops import exits, first_passes_only
from gpulint.model.control.options import under_opt_in_flag
from gpulint.model.control.periodic import is_schedule_test
from gpulint.model.control.repetition import is_one_shot_test
from gpulint.model.control.sweeps import is_literal_sweep
from gpulint.model.values.callfacts import TRAIN
from gpulint.model.values.kinds import MODEL
from gpulint.rule import TIME, UNSAFE, Bench, Example, Rule
from gpulint.model.index.walk import child_nodes, walk


_EMPTY_CACHE = frozenset(
    {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache", "torch.accelerator.memory.empty_cache"}
)


def _only_structural_loops(node: ast.AST, ancestors, ctx) -> bool:
    """Every loop of the function around `node` walks a model's own layers
    (`for block in model.transformer.h:`) or a short list set by hand (`for
    name in ["attn.c_attn", "mlp.c_fc"]:`): a conversion, quantization or
    layer-by-layer offload, whose memory changes from one pass to the next,
    not a steady loop over data."""
    chain = list(ancestors) + [node]
    loops = ctx.analysis.loops
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            break
        if isinstance(anc, LOOPS) and any(child is s for s in anc.body):
            outer = chain[:i]
            if not (loops.iterates_model_structure(anc, outer) or is_literal_sweep(anc, ctx.analysis.index, outer)):
                return False
    return True


def _per_step_helper(node: ast.AST, ctx) -> "ast.AST | None":
    """The function holding `node` in its own code, outside any branch
    (but a periodic one: `if step_num % 10 == 0:`), handler or `finally`,
    when the project's call graph says it runs every training step (HALOs'
    `free_memory()`, called after each optimizer step; YOLOv6's loss, every
    10 steps); else None."""
    chain = list(ctx.ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return anc if ctx.analysis.facts.every_step(anc) == TRAIN else None
        if isinstance(anc, ast.If) and _periodic(anc.test) and any(child is s for s in anc.body):
            continue
        if isinstance(anc, (SCOPES, ast.If, ast.IfExp, ast.ExceptHandler, ast.With, ast.AsyncWith)) and not (
                isinstance(anc, (ast.With, ast.AsyncWith)) and any(child is s for s in anc.body)):
            return None
        if isinstance(anc, ast.Try) and any(child is s for s in anc.finalbody):
            return None
    return None


# a call that runs a phase of its own, once per interval: a checkpoint save, an
# evaluation or validation, a sampling pass (`train_state.save(...)`,
# `eval_step(...)`, `save_image(...)`, `torch.save(...)`)
_PHASE_CALL_RE = re.compile(r"^_?(?:save|eval|valid|sampl|checkpoint)", re.I)


def _after_periodic_phase(node: ast.AST, ancestors, loop: ast.AST, ctx) -> bool:
    """`node` sits in the block of a periodic `if` inside `loop` (`if step %
    config.eval_interval == 0:`) that also runs a phase of its own: saves a
    checkpoint, evaluates, validates or samples (a call named so, or a loop
    over data): the cache is emptied once per interval around that phase,
    whose memory it returns, not once per step."""
    loops = ctx.analysis.loops
    return _in_if_block(node, ancestors, loop, lambda anc, outer: (
        loops.periodic_block(anc, outer) and _runs_a_phase(anc.body, ctx)))


def _runs_a_phase(body, ctx) -> bool:
    return any(
        (isinstance(n, ast.Call) and _PHASE_CALL_RE.match(last_name(n.func) or ""))
        or (isinstance(n, (ast.For, ast.AsyncFor)) and ctx.analysis.loops.loop_iterates_data(n))
        for n in walk_scope(body)
    )


def _periodic(test: ast.AST) -> bool:
    """`step % n == 0` (or `!=`): every n-th run."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
            and isinstance(test.left, ast.BinOp) and isinstance(test.left.op, ast.Mod))


def runs_at_most_once(loop: ast.AST) -> bool:
    """The loop's body ends by leaving it (`return`, `raise`, `break`, an
    exit) and never goes on to its next pass (`continue`): whatever its
    body does, it does on the first pass only (`for tracker in trackers:
    ...; empty_cache(); return logs`)."""
    body = getattr(loop, "body", None)
    if not body or not (isinstance(body[-1], (ast.Return, ast.Raise, ast.Break)) or exits(body[-1])):
        return False
    todo = list(body)
    while todo:  # a `continue` of this loop: in its body, not in a nested loop or def
        n = todo.pop()
        if isinstance(n, ast.Continue):
            return False
        if isinstance(n, LOOPS + SCOPES):
            continue
        todo.extend(child_nodes(n))
    return True


def _moves_to_host(stmt: ast.AST) -> bool:
    """The statement moves a tensor or module to the CPU and keeps it there:
    `x = x.cpu()`, `feats[-1] = feats[-1].cpu()`, `layers[i] = layer.to("cpu")`,
    `layer.cpu()`, also kept in a list (`outs[k].append(ret[k].cpu())`,
    `outs[k] = [ret[k].cpu()]`). Not a copy made for a logger or a printout inside
    another call (`wandb.Image(img.cpu())`): that is a read, not an offload."""
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) else None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(value, (ast.List, ast.Tuple)):
        return any(_to_host(e) for e in value.elts)  # `merged[key] = [ret[key].cpu()]`: kept in a list
    if (isinstance(stmt, ast.Expr) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "append" and len(value.args) == 1):
        return _to_host(value.args[0])  # `merged[key].append(ret[key].cpu())`: kept in a list
    return _to_host(value)


def _to_host(value: ast.AST) -> bool:
    """`x.cpu()`, `x.to("cpu")`."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    if value.func.attr == "cpu" and not value.args:
        return True
    if value.func.attr == "to":
        for a in list(value.args[:1]) + [k.value for k in value.keywords if k.arg == "device"]:
            if isinstance(a, ast.Constant) and a.value == "cpu":
                return True
    return False


def _after_offload(node: ast.AST, ancestors, loop: ast.AST) -> bool:
    """Earlier in its own block of the loop's body, a statement moves data
    or a layer off the GPU (`feats[-1] = feats[-1].cpu()`, `hr = hr.cpu()`,
    `layer.cpu()`; also in a loop or `if` of that block: nerfplusplus moves
    each output of a chunk to the host before the next chunk): an offload
    that keeps a long run (a long video, a layer
    by layer pass) within the GPU's memory, and the cache is emptied so
    what was moved off makes room for what comes next. The call is the
    point of the offload, not a habit."""
    return any(_moves_to_host(n) for s in _earlier_in_block(node, ancestors, loop) for n in _statements(s))


def _statements(stmt: ast.AST):
    """`stmt` and the statements of its blocks (a loop over a chunk's outputs
    that moves each off the GPU), not those of nested defs."""
    todo = [stmt]
    while todo:
        s = todo.pop()
        yield s
        if not isinstance(s, SCOPES):
            todo.extend(c for field in ("body", "orelse", "finalbody") for c in getattr(s, field, None) or ()
                        if isinstance(c, ast.stmt))


def _earlier_in_block(node: ast.AST, ancestors, loop: ast.AST) -> list:
    """The statements before `node`'s own in the block of the loop's body that holds it."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        for field in ("body", "orelse", "finalbody"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and any(child is s for s in block):
                return block[:next(j for j, s in enumerate(block) if s is child)]
        if anc is loop:
            return []
    return []


def _frees_a_model_built_each_pass(node: ast.AST, ancestors, loop: ast.AST, ctx) -> bool:
    """Earlier in its own block, `del model` of a model the loop's body
    builds again on each pass (`model = GPTModel(cfg).to(device)`): a sweep
    over model sizes or a search for the largest batch that fits, which
    returns the last model's memory before it builds the next. A training
    loop keeps its model from one step to the next."""
    deleted = [t for s in _earlier_in_block(node, ancestors, loop) if isinstance(s, ast.Delete)
               for t in s.targets for t in (t.elts if isinstance(t, ast.Tuple) else [t])
               if isinstance(t, ast.Name) and ctx.analysis.values.kind_at(t, ctx.analysis.index.ancestors(t)) == MODEL]
    if not deleted:
        return False
    names = {t.id for t in deleted}
    return any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
               and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
               for n in walk_scope(loop.body))  # type: ignore[attr-defined]


# a load of a model's weights: `AutoModel.from_pretrained(...)`, `torch.load(path)`,
# `model.load_state_dict(sd)`, a project loader named so (`load_model_and_apply_patches(...)`)
_LOADER_NAME_RE = re.compile(r"^_?load_(model|checkpoint|ckpt|weights|pretrained)")


def _loads_a_model_each_pass(loop: ast.AST, ctx) -> bool:
    """The loop's body (not a nested def) loads a model's weights: a loop
    over models or checkpoints (yarn's evaluation scripts: `for model in
    models: torch.cuda.empty_cache(); loaded = load_model_and_apply_patches(
    model, args)`), where emptying the cache before the next model returns
    the last one's memory, once per model."""
    for n in walk_scope(loop.body):  # type: ignore[attr-defined]
        if isinstance(n, ast.Call):
            name = last_name(n.func) or ""
            if name in ("from_pretrained", "load_state_dict") or _LOADER_NAME_RE.match(name) or (
                    ctx.qualname(n.func) == "torch.load"):
                return True
    return False


def _enclosing_loop(node: ast.AST, ancestors) -> "ast.AST | None":
    """The innermost for/while whose body runs `node`, not crossing a
    def, lambda or class; None when the call sits in an except handler or a
    `finally` block first (recovering from an out-of-memory error is what
    `empty_cache` is for)."""
    chain = list(ancestors) + [node]
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            return None
        if isinstance(anc, ast.ExceptHandler):
            return None
        if isinstance(anc, ast.Try) and any(child is s for s in anc.finalbody):
            return None  # clean-up after an attempt that may have run out of memory
        if isinstance(anc, LOOPS) and any(child is s for s in anc.body) and not runs_at_most_once(anc):
            return anc  # (a loop whose body ends by leaving it runs that body once)
    return None


# reading these is measuring memory: emptying the cache between measurements
# is what makes each reading the measured code's own
_MEMORY_STATS = frozenset(
    "memory_reserved memory_allocated max_memory_allocated max_memory_reserved memory_stats "
    "memory_summary reset_peak_memory_stats reset_max_memory_allocated mem_get_info".split()
)
def _measures_memory(loop: ast.AST, ctx) -> bool:
    """The loop reads the allocator's statistics (`torch.cuda.memory_reserved()`, ...)."""
    for n in walk(loop):
        if isinstance(n, ast.Call):
            q = ctx.qualname(n.func) or ""
            parts = q.split(".")
            if len(parts) >= 3 and parts[0] == "torch" and parts[-1] in _MEMORY_STATS:
                return True
    return False


def _under_one_shot_guard(node: ast.AST, ancestors, loop: ast.AST) -> bool:
    return _in_if_block(
        node, ancestors, loop, lambda anc, outer: is_one_shot_test(anc.test) or first_passes_only(anc.test, outer))


def _in_if_block(node: ast.AST, ancestors, loop: ast.AST, test) -> bool:
    """`node` is in the body of an `if` inside `loop` for which `test(if, its
    ancestors)` holds."""
    chain = list(ancestors) + [node]
    start = next(i for i, a in enumerate(chain) if a is loop)
    for i in range(start + 1, len(chain) - 1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, ast.If) and any(child is s for s in anc.body) and test(anc, chain[:i]):
            return True
    return False


class EmptyCacheInLoop(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` (in any import form, and its
    device-generic twin `torch.accelerator.memory.empty_cache()`) called inside a
    `for` or `while` loop of the same function, periodic (`if step % 100 == 0:`)
    or not; and one in the body of a function that the project's call graph
    says runs every training step (HALOs' `free_memory()`, called after each
    optimizer step; YOLOv6's loss, which empties the cache every 10 steps),
    outside any branch but a periodic one. A call in an `except` handler inside the loop is not flagged:
    releasing the cache after an out-of-memory error before retrying with a
    smaller batch is what the function is for; nor is one in a `finally`
    block, the clean-up after an attempt that may have run out of memory
    (a benchmark sweep over sizes). A loop whose body ends by leaving it
    (`return`, `break`, `raise`) and never continues runs that body once
    (`for tracker in trackers: ...; empty_cache(); return logs`): a call
    there is not in a loop. Neither is one in the loop's
    `else` (it runs once, after the loop) or in a function defined in the
    loop, nor `empty_cache()` of other objects or other devices. Neither is a
    call that runs on one iteration only (`if step == 0:`, `if
    num_updates == 0:`: a counter compared for equality with a number), or on
    the few steps a schedule lists (`if global_step in cfg.pg_scale:`, where
    DirectVoxGO grows its voxel grids), nor
    one in a loop that reads the allocator's statistics
    (`torch.cuda.memory_reserved()`, `max_memory_allocated()`, ...): that is
    memory profiling, where emptying the cache between measurements is what
    makes each reading the measured code's own. Nor is one whose loops all
    walk a model's own layers or parameters (`for block in
    model.transformer.h:`, `for m in model.modules():`) or a short list of
    constants set by hand: a quantization, conversion or layer-by-layer
    offload script, where each pass moves a different block on and off the
    GPU and returning the last one's memory is the point. Nor is one that
    follows, in its own block of a loop that takes no optimizer step, a
    statement moving data or a layer off the GPU (`feats[-1] =
    feats[-1].cpu()`, `layers[i] = layer.to("cpu")`, also in a loop of that
    block or kept in a list: `outs[k].append(ret[k].cpu())` for each output
    of a rendered chunk): an offload that keeps a long run (a long video, a layer-by-layer pass) within the GPU's memory.
    Nor is one in a loop that takes no optimizer step and loads a model's
    weights on each pass (`from_pretrained`, `torch.load`,
    `load_state_dict`, a loader named `load_model*`/`load_checkpoint*`): a
    loop over models or checkpoints, which returns the last one's memory
    before the next. Nor is one right after `del model` of a model the
    loop's body builds again on each pass (a sweep over model sizes, a
    search for the largest batch that fits): once per model.
    Nor is one in an epoch loop: a loop whose body runs a loop of training or evaluation
    steps (in the same function, or through a call that does) but takes no
    step itself, so it empties the cache once per many steps. Nor is one
    under a command-line flag of the file or of another file of its program
    that is off by default and names a memory, debugging or logging mode (`if args.aggressive_memory:`
    with `action="store_true"`): the user opts into it. Nor is one in the
    block of a periodic `if` that also runs a phase of its own: saves a
    checkpoint, evaluates, validates or samples (`if step %
    config.eval_interval == 0:` around `eval_step(...)` or
    `train_state.save(...)`; a call named so, or a loop over data). The cache
    is then emptied once per interval, to return that phase's memory, not
    once per step. A periodic call with nothing else to release (`if step %
    10 == 0: torch.cuda.empty_cache()`) is still flagged.

    ## Why is this bad?
    PyTorch's caching allocator keeps freed GPU memory reserved so that the
    next allocation of the same size is served instantly. `empty_cache()`
    hands the unused blocks back to the driver with `cudaFree`, which waits
    for the device, and the next iteration has to get them back with
    `cudaMalloc`, which is slow. As its documentation says, it does not make
    more memory available to PyTorch (freed blocks are reused anyway), and it
    cannot release memory that live tensors still hold, so it does not cure
    an out-of-memory error caused by keeping references around: drop those
    references instead. If another process needs the memory, call it once,
    after the loop.

    ## Fix safety
    Unsafe: the fix removes the call. The computation is the same, but the
    memory reported by `nvidia-smi` and available to *other* processes on the
    same GPU stays reserved, which matters when several jobs share a device
    or when a non-PyTorch library (cuDNN benchmarking, NCCL, TensorRT)
    allocates outside the caching allocator during the loop. In rare cases of
    heavy fragmentation (inputs of very different sizes every iteration) the
    call keeps a job just under its memory limit; setting
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` is the better cure.

    ## References
    - [torch.cuda.empty_cache](https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    - [CUDA semantics: memory management](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - [PyTorch FAQ: my model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    """

    code = "GPU103"
    name = "empty-cache-in-loop"
    message = "`{name}()` inside a loop returns cached memory that the next iteration must allocate again"
    helper_message = (
        "`{name}()` in `{function}`, which runs every training step, returns cached memory that the next "
        "step must allocate again"
    )
    fix_safety = UNSAFE
    needles = ("empty_cache",)
    examples = (
        Example(
            bad="""
            import torch

            for images, labels in loader:
                images, labels = images.cuda(), labels.cuda()
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                torch.cuda.empty_cache()
            """,
            good="""
            import torch

            for images, labels in loader:
                images, labels = images.cuda(), labels.cuda()
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
        ),
    )
    bench = Bench(
        setup='''
            import torch
            import torch.nn.functional as F
            from torch import nn

            # masked-language-model style training of a 6-layer transformer encoder (d_model 1024,
            # about 100M parameters) on 16 sequences of 512 tokens: a few GB of activations each step
            vocab, dim, heads, layers, batch_size, seq_len = (100, 32, 4, 2, 2, 16) if SMALL else (32000, 1024, 16, 6, 16, 512)
            n_batches = 4
            tokens = torch.randint(0, vocab, (n_batches, batch_size, seq_len), device=DEVICE)


            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, dim)
                    layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
                    self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
                    self.head = nn.Linear(dim, vocab)

                def forward(self, idx):
                    return self.head(self.blocks(self.embed(idx)))


            model = Encoder().to(DEVICE)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            step = 0
        ''',
        bad='''
            def run(steps):
                global step
                for _ in range(steps):
                    batch = tokens[step % n_batches]
                    logits = model(batch)
                    loss = F.cross_entropy(logits.view(-1, vocab), batch.view(-1))
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    step += 1
                    torch.cuda.empty_cache()
                return loss.detach()
        ''',
        good='''
            def run(steps):
                global step
                for _ in range(steps):
                    batch = tokens[step % n_batches]
                    logits = model(batch)
                    loss = F.cross_entropy(logits.view(-1, vocab), batch.view(-1))
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    step += 1
                return loss.detach()
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "Training step of a 6-layer, d_model 1024 transformer encoder (~100M parameters) on 16x512 tokens with "
            "torch.cuda.empty_cache() after every step; the fix removes it. Same kernels in the same order: the last "
            "loss agrees up to run-to-run rounding (rtol 1e-4)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name not in _EMPTY_CACHE:
            return
        loop = _enclosing_loop(node, ctx.ancestors)
        if loop is None:
            helper = _per_step_helper(node, ctx)
            if helper is not None:
                self.report(ctx, node, self.helper_message.format(name=name, function=helper.name))
            return
        if _under_one_shot_guard(node, ctx.ancestors, loop) or _measures_memory(loop, ctx):
            return
        if _in_if_block(node, ctx.ancestors, loop, lambda anc, outer: is_schedule_test(anc.test)):
            return  # `if global_step in cfg.pg_scale:`: on the few steps a schedule lists
        if _after_periodic_phase(node, ctx.ancestors, loop, ctx):
            return  # `if step % save_every == 0: save(...); empty_cache()`: once per interval, after its phase
        if _only_structural_loops(node, ctx.ancestors, ctx):
            return
        loops = ctx.analysis.loops
        if loops.contains_hot_loop(loop) and not loops.is_step_loop(loop):
            return  # an epoch (or iteration) loop around the steps: once per many steps
        if under_opt_in_flag(ctx.analysis.index, node, ctx.ancestors, loop, ctx.analysis.facts.opt_in_flags()):
            return  # `if args.aggressive_memory:`: a memory mode the user turns on, off by default
        if not loops.is_step_loop(loop) and _after_offload(node, ctx.ancestors, loop):
            return  # `feats[-1] = feats[-1].cpu(); empty_cache()`: room made for what comes next
        if not loops.is_step_loop(loop) and _loads_a_model_each_pass(loop, ctx):
            return  # `for model in models: empty_cache(); load(model)`: the last model's memory, once per model
        if _frees_a_model_built_each_pass(node, ctx.ancestors, loop, ctx):
            return  # `del model; empty_cache()` in a sweep over model sizes: once per model
        fix = None
        parent = ctx.ancestors[-1] if ctx.ancestors else None
        if isinstance(parent, ast.Expr) and parent.value is node:
            fix = self.make_fix(f"Remove `{name}()`", remove_statement(ctx.source, parent, ctx.ancestors[:-1]))
        self.report(ctx, node, fix=fix, name=name)
