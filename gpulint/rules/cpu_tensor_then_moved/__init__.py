from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.model.values.devices import (
    DEVICE,
    DTYPE,
    LEGACY_CONSTRUCTORS,
    default_device_set,
    device_arg_kind,
    empty_placeholder,
    factory_device_arg,
    factory_name,
    is_cuda_tensor_type,
    legacy_constructor,
    legacy_size_args,
    range_tensor,
    type_move_target,
    values_depend_on_device,
)
from gpulint.model.control.repetition import runs_repeatedly
from gpulint.model.control.syncs import follows_host_read, read_earlier_in_statement
from gpulint.rules.cpu_tensor_then_moved.moved_like import moved_like_text, typed_like_message
from gpulint.model.values.host_built import builds_on_cpu
from gpulint.model.values.literals import NUMPY_DRAWS, TENSOR_OF_DATA, constant_table, numpy_draw
from gpulint.rules.cpu_tensor_then_moved.attribute import kept_attribute, kept_message
from gpulint.rules.cpu_tensor_then_moved.constant_fill import constant_fill, fill_message, stored_under_a_key
from gpulint.rules.cpu_tensor_then_moved.host_built import computed_message, computed_then_moved
from gpulint.rules.cpu_tensor_then_moved.indexed import index_copied, index_message
from gpulint.edits import add_keyword, find_keyword, replace_node
from gpulint.rule import SAFE, TIME, UNSAFE, Bench, Edit, Example, Rule

# factories whose values are the same in every dtype: `.to(dev, dtype)` can
# become `device=dev, dtype=dtype` on them
_EXACT_IN_ANY_DTYPE = frozenset(("zeros", "ones", "empty", "eye"))
class CpuTensorThenMoved(Rule):
    """
    ## What it does
    Flags a tensor factory (`torch.zeros`, `ones`, `empty`, `full`, `arange`,
    `linspace`, `eye`, `rand`, `randn`, `randint`, `randperm`, ...) built on
    the CPU (no `device=`, or `device="cpu"`) and moved at once with `.cuda()`
    or `.to(<device>)`, as in `torch.zeros(n).cuda()`, in code that runs
    repeatedly: in the body of a `for`/`while` loop, in a `forward`/`backward`,
    in a function whose name says it runs per step (it contains `forward`,
    `backward`, `step`, `batch`, `collate`, `mask`, `generate`, `sample`,
    `loss` or `decode`; not `steps`: `get_timesteps` makes a schedule), or in a
    function called from such a place in the same file (one level, not into
    `main`/`run`; `self.te = self.embedding`, then `self.te(t)`, calls it; a
    method, by `self.<name>(...)` in its class or a relative's). A
    function that the file calls only from its own top-level code outside any
    loop (`if __name__ == "__main__": check_forward()`) runs once whatever its
    name, and a loop over a short hand-written list of constants (`for channels
    in [30, 32, 64]:`, a sweep of sizes in a check script) does not make its
    body repeated.

    Code that runs once is not flagged: module level outside a loop,
    `__init__`, `_init_weights`, `reset_parameters`, `init*`, `setup*`,
    `export*`, `fuse*`, `load_model*`-style loaders, `*dummy*` functions (even
    with a loop inside; but a method, not `*dummy*`, that its class's `forward`
    calls unconditionally, StyleTTS's `initialize_decoder_states`, and the `__init__` of a class a layer
    of the project builds every call, Informer's `TriangularCausalMask`, run every forward, as does one the
    project runs every step, dreamerv2's `_init_rssm_state`), functions that trace or export a model each time they run (`torch.jit.trace`, `torch.onnx.export`, `torch.export.export` outside
    any `if` or loop of theirs: a dummy input for a graph trace), the `forward`
    of an autograd Function that defines `symbolic` and returns random numbers
    (the `ORT_NMS` stand-in an ONNX export traces), values cached (`if not
    hasattr(...)`, `if len(state) == 0`, `if self.x is None`, `if
    self.grid.shape != x.shape: self.grid = ...`, all of a block that stores
    what its test compares, an `lru_cache` function), and
    code under `if token == 0:` on the first pass of the loop `token` counts. A
    comprehension builds one collection and repeats only as often as the code
    around it: a list of dummy inputs built once in a plain function is not
    flagged, one inside a loop or `forward` is. There a one-off CPU build and
    copy costs microseconds, once; the advice would be noise.

    Nor is a placeholder with a literal 0 dimension (`torch.zeros(0)`,
    `torch.empty((0, d))`): it holds nothing to copy (GPU204 agrees). Nor is
    a factory where the code sets a default device that is not the CPU
    (`torch.set_default_device("cuda")`, `torch.set_default_tensor_type(
    "torch.cuda.FloatTensor")`, `with torch.device("cuda"):`): in its file,
    or in the module code of a script of its program that never sets it back
    (NeuS's `exp_runner.py`, for the renderer it imports): the factory builds
    there already (GPU204 agrees).
    A factory given a `generator=` is not flagged: working code that builds
    on the CPU with one uses a CPU generator (`torch.Generator()`), which a
    CUDA tensor cannot draw from, so it has to build on the CPU and copy.
    `.to(dtype)`, `.to("cpu")` and `.to(other_tensor)` are not flagged; `*_like`
    and `new_*` already build on their input's device. `torch.tensor(data)` and
    `torch.as_tensor(data)` are not flagged: host data crosses anyway (with
    `device=` PyTorch still builds on the CPU and copies). But numpy data made
    only to be copied is (`Tensor(np.random.normal(...))`, a CUDA tensor
    type; `torch.from_numpy(np.eye(k).flatten()).cuda()`, through casts and
    names: PointNet's identity in every forward; a range repeated, few-shot
    labels `torch.from_numpy(np.repeat(range(n_way), n_query))`), and so is a table of
    literals (`torch.tensor([[1., 4.], [4., 16.]])`, `np.array([1, 0, 1])`),
    a constant a buffer would keep on the device; no fix. Tests are skipped.

    An index built on the CPU (`arange`, `randint`, `randperm`, or a project
    helper returning one) that indexes a tensor known to be on the device is
    moved too: torch copies it there on every pass (`x[torch.arange(n)]`,
    `rep[cycle_index(n, 1)]`); flagged at the factory, without a fix.

    A tensor computed on the CPU from a factory and then moved is flagged at
    the factory, without a fix: casts, arithmetic, elementwise functions,
    reshapes, `.requires_grad_()`, `.detach()`, `.clone()` between them
    (`torch.exp(-k * torch.arange(half) / half).to(t.device)`,
    `torch.ones(n).long().cuda()`), samples drawn from it
    (`torch.multinomial(torch.ones(n), k).to(x.device)`, which samples on the
    CPU), and the draws of a `torch.distributions` object built from Python
    numbers (`z = Normal(0, 1).sample(mean.shape)` then `z.to(device)`, SAC's
    reparameterized noise), also through names the function assigns once in a
    block that holds the move (`emb = torch.exp(torch.arange(h) * -k)` then
    `emb = emb.to(device)`, four assignments deep at most), and through items
    written into it in place from such values (`pe = torch.zeros(d, w)`,
    `pe[0::2] = torch.sin(pos * div)`; not Python numbers written in one by
    one, which are host data), through parts a tuple unpacks from
    `torch.meshgrid` or a split (a detector's anchor grid) and updates in place
    by numbers (`xy += 0.5`). A call of a project function that returns such a
    tensor, and nothing else, is flagged at the call, without a fix (demucs'
    `create_2d_sin_embedding(...)` moved in every forward: the helper should
    build on the device); the project reads the helper's file for it, even one
    that names no device; so is a move of one `__init__` keeps as a plain
    attribute (`self.freqs_cis.to(x.device)`, or an item of a list of such tensors, `self.priors[i].to(d)`): make it a buffer. A table rebuilt only on a cache miss, after an early
    return of the cached value (`if pe is not None: if pe.size(1) >= n: return
    pe`; `if self.cos_cached is not None and n <= self.cos_cached.shape[0]:
    return`), is not repeated code. An operation that mixes a CPU tensor with a
    CUDA one raises, so such an expression runs on the CPU. It is not flagged
    where other tensor data joins the factory's (`(t * torch.arange(n)).cuda()`
    with `t` a tensor: the data crosses either way; every part of a
    `torch.cat`/`stack` is a tensor, so a part the model cannot place, a
    batch handed in as a parameter, counts as data), in a function that reads
    device data on the host itself (`.item()`, `.tolist()`, `.cpu()`,
    `.numpy()`, `nonzero`, `unique`, `torch.any`: the host waits there anyway,
    so one more small copy stalls next to nothing), nor in the `forward` of an
    `nn.Module` class, where GPU204 flags the factory (one finding per site). A
    factory moved to the device of another tensor in a `forward` (`torch.zeros(1, 1, n, k).to(mask)`,
    `.to(y)` with `y = states[0]` in an ODE function's: a forward's input or an item of one) is
    flagged without a fix: `device=mask.device, dtype=mask.dtype` keeps the
    dtype that `.to(mask)` also takes; so is one in a method that the class's
    `forward` calls on `self`, directly or through another such method
    (Chronos-2's padding helper; svoice's `pad_segment`, which `forward` reaches
    through `create_chuncks`), and a factory's
    tensor, laid out with `repeat`/`view`, cast with `.type_as(x)` or
    `.type(x.type())` to such a tensor in such a helper (a YOLO loss's grids,
    per level of every step; svoice's padding), or in a plain function that
    the call graph runs every step (a flow loss's `flow_warp`, whose grid
    comes from a helper returning what `torch.arange` built): the cast takes
    `x`'s device too. `.type(torch.cuda.FloatTensor)` moves as `.cuda()` does, also through
    a name the function binds once to a CUDA tensor type (the YOLOv3 layer's
    `dtype = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor`,
    then `torch.zeros(b, a, f, f, 85).type(dtype)` in every training
    forward); it is flagged without a fix, since `device=` alone would not
    keep the cast's dtype, and a host read elsewhere in that forward does not
    pay for copying buffers of the batch's size. A loop around a loop of steps (an epoch loop,
    an RL loop over episodes around its loop over environment steps) does not
    make what its own body builds repeated: the hidden state `torch.zeros(1, 1,
    h).cuda()` reset before each episode is built once per episode. What a
    function named to generate, sample or decode builds before the loop in
    which it runs its model (`tokens = torch.full(...).cuda()` before the token
    loop of `generate`) is set-up, once per call, and not flagged, also where
    the model runs in what the loop calls (`img = self.p_sample(model, img,
    t)`, a solver's `x = self.update(x, s, t)`); nor is what such a function
    builds when it is no method of a model and hands its work to a model it is
    given (a demo's `do_sample(model, sampler, ...)` that calls
    `model.decode_first_stage(...)`: once per request). A loop over a few named
    entries (`for k in inputs: if k == "image_only_indicator":`) does not make
    its body repeated.

    Legacy typed constructors (`torch.Tensor`, `torch.FloatTensor`,
    `torch.LongTensor`, and the `Double`, `Half`, `BFloat16`, `Byte`, `Char`,
    `Short`, `Int`, `Bool` ones) called with sizes and moved at once are
    flagged too, as in `torch.FloatTensor(b, n).cuda()`: an uninitialised
    tensor is allocated on the CPU and its garbage copied to the GPU, where
    `torch.empty(b, n, dtype=torch.float32, device=...)` only allocates on the
    GPU. The arguments must surely be sizes: several of them, or one that is an
    int by its form (`3`, `len(xs)`, `x.size(0)`, `x.size()`, a tensor's
    `x.shape`, `*shape`) or a name the function binds only to such values.
    Called with data (`torch.FloatTensor([0.485, 0.456, 0.406])`,
    `torch.Tensor(np_array)`, a list), a legacy constructor is not flagged, for
    the same reason as `torch.tensor(data)`: the data lives on the host and
    must be copied anyway: on an H200 with torch 2.11, `torch.tensor(list,
    device=...)` measured 2x slower than `torch.LongTensor(list).cuda()` at
    262,144 elements (41.6 vs 20.8 ms) and the same at 64, so the rewrite would
    not pay. Two literals are no data, and are flagged (without a fix): a
    constant of one repeated number (`torch.tensor([0.]).to(d)`, with
    `requires_grad=True` too, `torch.FloatTensor([0.5]).cuda()`,
    `torch.tensor([0] * batch_size).cuda()`,
    a loop's counter repeated, `torch.tensor([trg_idx] * n).to(d)` in `for
    trg_idx, domain in enumerate(domains):`, `torch.tensor(-100).to(d)`),
    which `torch.zeros(1, device=d)` or `torch.full((n,), v, device=d)` fills
    on the GPU with no copy at all (not one stored under a key,
    `losses["loss_dn"] = torch.as_tensor(0.).to("cuda")`: a zero standing in
    for a loss the other path computes, read with the rest of the dict; nor
    one sized by a read of device data on the host in the same statement, a
    detector's per-class `torch.LongTensor(keep.sum().item() * [c]).to(d)`,
    or copied in the statements right after such a read with no model work
    queued between, `n = mask.sum().item()` then `torch.tensor(0).to(d)`:
    the host has just waited, and the copy stalls on nothing); and
    a Python range (`torch.LongTensor(range(n))`, `torch.tensor(list(range(n)))`),
    which `torch.arange(n, device=d)` makes there, also where casts or
    reshapes (or the old `Variable(...)`) come between it and the move.
    Nor are an empty tensor (`torch.LongTensor()`), an argument that
    could be data or a size (a parameter `n`), and
    `torch.cuda.FloatTensor(...)`, which builds on the GPU already. Filled on
    the way (`torch.FloatTensor(b, n).fill_(0).to(device)`, `.zero_()`), the
    tensor is built, filled and copied: `torch.zeros(b, n, ..., device=...)` or
    `torch.full((b, n), v, ..., device=...)` does it on the GPU (reported
    without a fix). So is one filled at random (`torch.FloatTensor(b,
    n).uniform_(-1, 1).to(device)`, CQL's random actions): `torch.empty(b, n,
    device=...).uniform_(-1, 1)` draws on the GPU, from its own generator, so
    the numbers differ (no fix either).

    ## Why is this bad?
    The tensor is allocated and filled on the CPU, then copied to the GPU
    through a synchronous host-to-device transfer, and the CPU copy is thrown
    away. Paid on every step, that is a copy and a host synchronisation per
    step that stalls the CPU while it should be queueing kernels. Passing
    `device=` builds it on the GPU directly: one kernel (or an allocation),
    no copy, no host synchronisation.

    ## Fix safety
    The fix moves the target into the factory: `.cuda()` becomes
    `device="cuda"`, `.cuda(1)` becomes `device="cuda:1"`, `.to(dev)` and
    `.to(dev, non_blocking=...)` become `device=dev`. `.to(dev, dtype)` is
    merged into `device=dev, dtype=dtype` only for `zeros`/`ones`/`empty`/`eye`
    without a `dtype=`, whose values are the same in every dtype; other
    forms (a `dtype` change of computed values, `requires_grad=True`, which
    would turn a non-leaf into a leaf, `pin_memory=`, `memory_format=`,
    `.cuda(<variable>)`, which could be `None`) are reported without a fix.

    The fix is safe when the values are the same wherever they are computed,
    and unsafe for random factories (the CPU and CUDA generators give
    different numbers for the same seed) and for computed floating-point
    values (`linspace`, `logspace`, window functions, a float `arange`), which
    the CUDA kernels may round differently in the last bit. Legacy
    constructors are reported without a fix (the message names the call).

    ## References
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    - [Tensor creation ops](https://pytorch.org/docs/stable/torch.html#creation-ops)
    - [The legacy `torch.Tensor` constructor](https://pytorch.org/docs/stable/tensors.html#torch.Tensor.__init__)
    - [PyTorch performance tuning guide: create tensors directly on the target device](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device)
    - [Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    """

    code = "GPU203"
    name = "cpu-tensor-then-moved"
    message = "`torch.{factory}()` builds the tensor on the CPU and then copies it to the GPU; pass `device=` instead"
    fix_safety = SAFE
    needles = (".cuda(", ".to(", ".type_as(", ".type(", "arange(", "randint(", "randperm(")
    examples = (
        Example(
            bad="""
            import torch

            class PositionalEncoding(torch.nn.Module):
                def forward(self, x):
                    positions = torch.arange(x.size(1)).to(x.device)
                    scale = torch.ones(x.size(-1)).cuda()
                    return x * scale + self.table[positions]
            """,
            good="""
            import torch

            class PositionalEncoding(torch.nn.Module):
                def forward(self, x):
                    positions = torch.arange(x.size(1), device=x.device)
                    scale = torch.ones(x.size(-1), device="cuda")
                    return x * scale + self.table[positions]
            """,
        ),
        Example(
            title="random factories: unsafe fix",
            bad="""
            import torch

            for real in loader:
                noise = torch.randn(batch_size, latent_dim).to(device)
            """,
            good="""
            import torch

            for real in loader:
                noise = torch.randn(batch_size, latent_dim, device=device)
            """,
        ),
    )
    bench = Bench(
        setup='''
            import torch
            import torch.nn.functional as F
            from torch import nn

            # denoising-diffusion training (DDPM) on batches of 128 64x64 RGB images: every step
            # draws fresh Gaussian noise the size of the batch and a timestep per image
            batch_size, size, width, T = (4, 16, 8, 100) if SMALL else (128, 64, 128, 1000)
            n_batches = 4
            data = torch.rand(n_batches, batch_size, 3, size, size, device=DEVICE) * 2 - 1
            betas = torch.linspace(1e-4, 0.02, T, device=DEVICE)
            alpha_bar = torch.cumprod(1 - betas, dim=0)


            class Denoiser(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.time_embed = nn.Embedding(T, width)
                    self.inp = nn.Conv2d(3, width, 3, padding=1)
                    self.body = nn.Sequential(
                        *[nn.Sequential(nn.GroupNorm(8, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1)) for _ in range(6)]
                    )
                    self.out = nn.Conv2d(width, 3, 3, padding=1)

                def forward(self, x, t):
                    h = self.inp(x) + self.time_embed(t)[:, :, None, None]
                    return self.out(self.body(h))


            model = Denoiser().to(DEVICE)
            optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
            step = 0
        ''',
        bad='''
            def run(steps):
                global step
                for _ in range(steps):
                    x0 = data[step % n_batches]
                    noise = torch.randn(x0.shape).to(DEVICE)
                    t = torch.randint(0, T, (batch_size,)).to(DEVICE)
                    ab = alpha_bar[t].view(-1, 1, 1, 1)
                    x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
                    loss = F.mse_loss(model(x_t, t), noise)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    step += 1
                return noise
        ''',
        good='''
            def run(steps):
                global step
                for _ in range(steps):
                    x0 = data[step % n_batches]
                    noise = torch.randn(x0.shape, device=DEVICE)
                    t = torch.randint(0, T, (batch_size,), device=DEVICE)
                    ab = alpha_bar[t].view(-1, 1, 1, 1)
                    x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
                    loss = F.mse_loss(model(x_t, t), noise)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    step += 1
                return noise
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="stats",
        rtol=0.1,
        atol=0.1,
        note=(
            "DDPM training step on 128 64x64 images: bad draws the batch-sized noise and the timesteps on the CPU and "
            "copies them, good draws them on the GPU. The CUDA generator gives other numbers than the CPU one by design, "
            "so the check compares the noise's statistics (mean 0, std 1; tolerance 0.1 covers the sampling error of "
            "the smoke-test size)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        fa = ctx.analysis
        if len(node.args) == 1 and is_cuda_tensor_type(fa, func):
            # `torch.cuda.FloatTensor(np.random.normal(...))`, or with `Tensor = torch.cuda.FloatTensor`
            self._report_if(ctx, node, _numpy_draw_message(ctx, node, node.args[0], ctx.source.node_text(func)))
            return
        if isinstance(func, ast.Attribute) and func.attr == "type_as":
            return self._report_if(ctx, node, typed_like_message(fa, node, ctx.ancestors, ctx.source.node_text))
        if not (isinstance(func, ast.Attribute) and func.attr in ("cuda", "to", "type")):
            return
        if func.attr == "type" and type_move_target(fa, node) is None:
            # `.type(x.type())` casts to x's type, its device included; `.type(torch.cuda.FloatTensor)`
            # (or a name bound to it) moves as `.cuda()` does; other casts stay where they are
            return self._report_if(ctx, node, typed_like_message(fa, node, ctx.ancestors, ctx.source.node_text))
        inner = func.value
        kept = kept_attribute(fa, node, ctx.ancestors) if _target(node, fa) is not None else None
        if kept is not None:  # `self.freqs_cis.to(x.device)`, built in `__init__`
            return self.report(ctx, node, message=kept_message(*kept))
        if range_tensor(fa, inner):
            return _computed(self, ctx, node, inner)  # `torch.LongTensor(range(n)).cuda()`: an arange
        fill = constant_fill(fa, inner, ctx.source.node_text)
        if fill is not None:  # `torch.tensor([0.]).to(device)`: a constant, not data
            if _target(node, fa) is not None and not stored_under_a_key(fa, node) \
                    and runs_repeatedly(fa, node, ctx.ancestors) and not _right_after_a_read(fa, node, ctx.ancestors):
                self.report(ctx, node, message=fill_message(fill, ctx.source.node_text(inner)))
            return
        if (
            isinstance(inner, ast.Call) and len(inner.args) == 1
            and fa.imports.qualname(inner.func) in TENSOR_OF_DATA
            and _target(node, fa) is not None
        ):
            if numpy_draw(fa, inner.args[0]) is None:
                return _computed(self, ctx, node, inner)  # `torch.from_numpy(np.eye(k).flatten())`, through a cast
            self._report_if(ctx, node, _numpy_draw_message(ctx, node, inner.args[0], ctx.source.node_text(inner.func)))
            return
        if constant_table(fa, inner):
            return _computed(self, ctx, node, inner)  # `torch.tensor([1, 0, 0, 1]).cuda()`: a table of literals
        name = factory_name(fa, inner)
        if name is None:
            legacy = legacy_constructor(fa, inner)
            if legacy is not None:
                self._report_if(ctx, node, _legacy_message(ctx, node, inner, legacy))
            elif not _legacy_filled(self, ctx, node, inner):
                _computed(self, ctx, node, inner)
            return
        assert isinstance(inner, ast.Call)
        if not builds_on_cpu(fa, name, inner) or empty_placeholder(name, inner):
            return  # (`torch.zeros(0).to(device)`: a placeholder with nothing to copy, as GPU204 has it)
        if default_device_set(fa, ctx.ancestors):
            return  # the factory already builds on the default device the code set: the move copies nothing
        built_on = factory_device_arg(name, inner)
        target = _target(node, fa)
        if target is None:
            return self._report_if(ctx, node, moved_like_text(fa, node, ctx.ancestors, ctx.source.node_text, name))
        if not runs_repeatedly(fa, node, ctx.ancestors):
            return  # built once: a one-off copy costs microseconds
        fix = _device_fix(self, ctx, node, inner, name, built_on)
        self.report(ctx, node, fix=fix, factory=name)

    def visit_Subscript(self, node: ast.Subscript, ctx) -> None:
        if not isinstance(node.ctx, ast.Del) and not isinstance(node.slice, (ast.Slice, ast.Constant)):  # (read or written)
            factory = index_copied(ctx.analysis, node, ctx.ancestors)
            if factory is not None:
                self.report(ctx, factory, message=index_message(ctx.analysis, factory, node))

    def _report_if(self, ctx, node: ast.Call, message: Optional[str]) -> None:
        if message is not None:
            self.report(ctx, node, message=message)





def _computed(rule, ctx, node: ast.Call, inner: ast.AST) -> None:
    """`torch.exp(-k * torch.arange(half) / half).to(t.device)` (`host_built`):
    reported at the factory, without a fix (on the GPU the last bits may differ)."""
    if _target(node, ctx.analysis) is None:
        return
    factory = computed_then_moved(ctx.analysis, inner, ctx.ancestors)
    if factory is not None:
        rule.report(ctx, factory, message=computed_message(ctx.analysis, factory, node))


def _legacy_filled(rule, ctx, node: ast.Call, inner: ast.AST) -> bool:
    """`torch.FloatTensor(b, n).fill_(0).to(device)` (`.zero_()` too), reported
    without a fix; True when `inner` has that shape (reported or not)."""
    shaped, message = _legacy_filled_message(ctx, node, inner)
    if message is not None:
        rule.report(ctx, node, message=message)
    return shaped


def _right_after_a_read(fa, move: ast.Call, ancestors) -> bool:
    """The statement reads device data on the host before the constant's
    copy (a detector's per-class `torch.LongTensor(keep.sum().item() *
    [c]).to(d)`, sized by the read), or the statements just before it did,
    with no model work queued since (`syncs.follows_host_read`: ILQL's
    `torch.tensor(0).to(d)` the line after an `.item()`; not a blocking
    upload of the batch, after which StarGAN v2's per-batch label copy was
    judged a cost): the host has just waited, and one small copy after that
    wait stalls next to nothing. (Only constants: a factory sized by a read
    just before it, fairseq's `torch.arange(lengths.max().item())`, builds
    a mask as large as the batch, judged a cost.)"""
    stmt = next((a for a in reversed(ancestors) if isinstance(a, ast.stmt)), None)
    return stmt is not None and (read_earlier_in_statement(stmt, move, fa)
                                 or follows_host_read(move, ancestors, fa, uploads=False))


def _legacy_message(ctx, node: ast.Call, inner: ast.Call, legacy: str) -> Optional[str]:
    """`torch.FloatTensor(3, 4).cuda()`: an uninitialised CPU tensor, copied.
    Reported without a fix; the message names the `torch.empty` call. None
    where there is nothing to report."""
    fa = ctx.analysis
    if not legacy_size_args(fa, inner, ctx.ancestors):
        return None  # data (`torch.FloatTensor([1, 2])`) crosses from the host anyway
    if _target(node, fa) is None or not runs_repeatedly(fa, node, ctx.ancestors):
        return None
    src = ctx.source
    sizes = _sizes_text(src, inner)
    dtype = _moved_dtype(node, fa)
    if dtype is not None:
        dtype_text: Optional[str] = src.node_text(dtype)
    else:
        base = LEGACY_CONSTRUCTORS[legacy]
        dtype_text = f"torch.{base}" if base else None  # torch.Tensor: the default dtype, as torch.empty
    method = node.func.attr  # type: ignore[attr-defined]
    dev = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
    if method == "cuda" and dev is None:
        device_text = '"cuda"'
    elif method == "cuda" and isinstance(dev, ast.Constant) and isinstance(dev.value, int):
        device_text = f'"cuda:{dev.value}"'
    else:
        device_text = src.node_text(dev) if dev is not None and len(src.node_text(dev)) <= 30 else "..."
    args = [sizes] + ([f"dtype={dtype_text}"] if dtype_text else []) + [f"device={device_text}"]
    return (
        f"`torch.{legacy}({sizes})` builds an uninitialised tensor on the CPU and then copies it to the GPU; "
        f"use `torch.empty({', '.join(args)})` instead"
    )


def _numpy_draw_message(ctx, node: ast.Call, data: ast.AST, copier: str) -> Optional[str]:
    """`Tensor(np.random.normal(0, 1, (n, d)))`: noise drawn (or a constant
    built) on the host only to be copied to the GPU, every time. Reported
    without a fix: the GPU's generator draws other numbers, and numpy's
    arguments do not map one to one."""
    fa = ctx.analysis
    draw = numpy_draw(fa, data)
    if draw is None or not runs_repeatedly(fa, node, ctx.ancestors):
        return None
    short = draw.replace("numpy.", "np.", 1)
    return (f"`{short}()` makes the data on the CPU and `{copier}(...)` copies it to the GPU; build it there with "
            f"`{NUMPY_DRAWS[draw]}(..., device=...)` instead")

def _sizes_text(src, call: ast.Call) -> str:
    """The size arguments of a legacy constructor as the message quotes them ("..." when long)."""
    sizes = ", ".join(src.node_text(a) for a in call.args)
    return "..." if len(sizes) > 40 or "\n" in sizes else sizes


def _device_fix(rule, ctx, node: ast.Call, inner: ast.Call, name: str, built_on) -> Optional[object]:
    """The fix that builds the factory on the target device (`device=`) and drops the move."""
    fa = ctx.analysis
    src = ctx.source
    for kw in inner.keywords:
        if kw.arg in ("requires_grad", "pin_memory") and not (
            isinstance(kw.value, ast.Constant) and kw.value.value is False
        ):
            return None
    method = node.func.attr  # type: ignore[attr-defined]
    if method == "type":
        return None  # `.type(torch.cuda.FloatTensor)` casts too: `device=` alone would not keep its dtype
    device_text: Optional[str] = None
    dtype_text: Optional[str] = None
    if method == "cuda":
        if any(kw.arg not in ("device", "non_blocking") for kw in node.keywords) or len(node.args) > 2:
            return None
        dev = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
        if dev is None:
            device_text = '"cuda"'
        elif isinstance(dev, ast.Constant) and isinstance(dev.value, int) and not isinstance(dev.value, bool):
            device_text = f'"cuda:{dev.value}"'
        elif isinstance(dev, ast.Constant) and isinstance(dev.value, str) and dev.value.startswith("cuda"):
            device_text = src.node_text(dev)
        else:
            return None  # `.cuda(x)`: x may be None (the current device) or an index
    else:
        # Tensor.to(device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=...)
        if any(kw.arg not in ("device", "dtype", "non_blocking") for kw in node.keywords):
            return None
        positional = list(node.args)
        dev_kw = find_keyword(node, "device")
        dtype_kw = find_keyword(node, "dtype")
        if dev_kw is not None:
            if positional:
                return None
            dev = dev_kw.value
        else:
            dev = positional.pop(0)
        dtype = dtype_kw.value if dtype_kw is not None else None
        if positional and dtype is None and device_arg_kind(fa, positional[0]) == DTYPE:
            dtype = positional.pop(0)
        # what is left may only be a literal non_blocking (harmless to drop)
        if len(positional) > 1 or (
            positional and not (isinstance(positional[0], ast.Constant) and isinstance(positional[0].value, bool))
        ):
            return None
        device_text = src.node_text(dev)
        if dtype is not None:
            if name not in _EXACT_IN_ANY_DTYPE or find_keyword(inner, "dtype") is not None:
                return None
            dtype_text = src.node_text(dtype)
    inner_end = src.node_span(inner)[1]
    node_end = src.node_span(node)[1]
    if "#" in src.text[inner_end:node_end]:
        return None  # a comment inside the removed `.to(...)` would be lost
    edits: List[Edit] = []
    if built_on is not None:
        # device="cpu": point it at the target instead
        if dtype_text is not None:
            return None
        edits.append(replace_node(src, built_on, device_text))
    else:
        text = f"device={device_text}" + (f", dtype={dtype_text}" if dtype_text else "")
        edits.append(add_keyword(src, inner, text))
    edits.append(Edit(inner_end, node_end, ""))
    reason = values_depend_on_device(fa, name, inner)
    applicability = UNSAFE if reason else SAFE
    what = f"Build it on the device: `device={device_text}`"
    return rule.make_fix(what, edits, applicability)


def _moved_dtype(node: ast.Call, fa) -> Optional[ast.AST]:
    """The dtype a `.to(device, dtype)` converts to, or None."""
    if node.func.attr != "to":  # type: ignore[attr-defined]
        return None
    kw = find_keyword(node, "dtype")
    if kw is not None:
        return kw.value
    if len(node.args) >= 2 and device_arg_kind(fa, node.args[1]) == DTYPE:
        return node.args[1]
    return None


def _target(node: ast.Call, fa) -> Optional[str]:
    """DEVICE when the call moves to an accelerator, else None."""
    if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    if node.func.attr in ("cuda", "type"):  # type: ignore[attr-defined]
        return DEVICE  # (`.type(...)`: only a CUDA tensor type gets here)
    dev = next((kw.value for kw in node.keywords if kw.arg == "device"), None)
    if dev is None and node.args:
        dev = node.args[0]
    return DEVICE if device_arg_kind(fa, dev) == DEVICE else None


# in-place random fills: `torch.FloatTensor(n, k).uniform_(-1, 1)` draws on the CPU
RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_",
                          "cauchy_", "log_normal_"})


def _legacy_filled_message(ctx, node: ast.Call, inner: ast.AST):
    """(`inner` is a legacy constructor filled on the way, the message to
    report or None): see `CpuTensorThenMoved._legacy_filled`."""
    fa = ctx.analysis
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
            and (inner.func.attr in ("fill_", "zero_") or inner.func.attr in RANDOM_FILLS)):
        return False, None
    base = inner.func.value
    legacy = legacy_constructor(fa, base) if isinstance(base, ast.Call) else None
    if legacy is None:
        return False, None
    if not legacy_size_args(fa, base, ctx.ancestors):
        return True, None  # data: crosses from the host anyway
    if _target(node, fa) is None or not runs_repeatedly(fa, node, ctx.ancestors):
        return True, None
    src = ctx.source
    sizes = _sizes_text(src, base)  # type: ignore[arg-type]
    dtype = LEGACY_CONSTRUCTORS[legacy]
    dtype_arg = f", dtype=torch.{dtype}" if dtype else ""
    if inner.func.attr in RANDOM_FILLS:  # drawn on the CPU: draw it on the device
        args = "..." if inner.args or inner.keywords else ""
        use = f"torch.empty({sizes}{dtype_arg}, device=...).{inner.func.attr}({args})"
    elif inner.func.attr == "zero_" or (len(inner.args) == 1 and isinstance(inner.args[0], ast.Constant)
                                        and inner.args[0].value == 0):
        use = f"torch.zeros({sizes}{dtype_arg}, device=...)"
    else:
        value = src.node_text(inner.args[0]) if inner.args else "..."
        shape = f"({sizes},)" if len(base.args) == 1 else f"({sizes})"  # type: ignore[attr-defined]
        use = f"torch.full({shape}, {value if len(value) <= 20 else '...'}{dtype_arg}, device=...)"
    return True, (f"`torch.{legacy}({sizes}).{inner.func.attr}({'...' if inner.args else ''})` builds and fills "
                  "the tensor on the CPU and "
                  f"then copies it to the GPU; use `{use}` instead")
