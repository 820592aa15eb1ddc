from __future__ import annotations

import ast
import re
from typing import List

from gpulint.model.index.nodes import FUNCS, LOOPS, SCOPES
from gpulint.model.values.callfacts import TRAIN
from gpulint.model.values.consumers import (exports_outputs, feeds_environment_step, host_array_input, keys_a_mapping,
                                            sets_learning_rate)
from gpulint.model.values.devices import is_cpu_tensor_type
from gpulint.model.values.kinds import CONVERSIONS, HOST_METHODS, TENSOR, TENSOR_ONLY_METHODS
from gpulint.model.control.syncs import (
    follows_host_read, logged_values, on_host_already, statement_and_block, sync_follows,
)
from gpulint.model.values.literals import tensor_of_device_tensors
from gpulint.model.values.shapes import sized_by_tensor
from gpulint.model.values.values import in_model_code
from gpulint.model.control.options import DEBUG_FLAG_RE, under_opt_in_flag
from gpulint.model.control.repetition import after_periodic_return, runs_repeatedly
from gpulint.rules.host_sync_in_loop.branches import conditional_in
from gpulint.rules.host_sync_in_loop.exits import returns_the_action, stops_search
from gpulint.rules.host_sync_in_loop.hidden_reads import OldScalarReads, postfix_values, wandb_run_values
from gpulint.rules.host_sync_in_loop.reads import MAX_SNIPPET, candidate, indexed_element, is_device_tensor, snippet
from gpulint.rules.host_sync_in_loop.scaler import scale_read
from gpulint.rules.host_sync_in_loop.slicing import SliceReads
from gpulint.rules.host_sync_in_loop.truth import TruthTests
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import HOST_PIPELINE_TRAINING

# Tensor methods that copy to the host. `.item()` / `.cpu()` / `.numpy()` exist
# on little else than tensors (and numpy values, which inference tells apart),
# so they are flagged unless the receiver is known not to be a tensor;
# `.tolist()` is common on numpy arrays too and needs a known tensor.
# builtins that turn their argument into text (a tensor's values, read on the host)
_TEXT_CONVERSIONS = frozenset({"builtins.str", "builtins.repr"})
# builtins that compare their arguments with `<` / `>` and take the result's truth value
_COMPARING_BUILTINS = frozenset({"builtins.max", "builtins.min"})
# `math` tests that take a Python float: given a tensor, they read it on the host
_MATH_TESTS = frozenset({"isfinite", "isnan", "isinf"})
_BUILTIN_NAMES = frozenset({"float", "int", "bool", "print", "str", "repr", "max", "min", "range"})
# reads of a loop element that pull its value to the host
_ELEMENT_READ_METHODS = frozenset({"item", "tolist"})


def _links(node: ast.AST, ctx) -> List[str]:
    """`torch.cat(xs).permute(0, 2, 1).cpu()` -> ["torch.cat(...)", ".permute(...)", ".cpu()"]."""
    if isinstance(node, ast.Call):
        links = _links(node.func, ctx)
        links[-1] += "(...)" if node.args or node.keywords else "()"
        return links
    if isinstance(node, ast.Attribute):
        inner = _links(node.value, ctx)
        if len(inner) == 1 and isinstance(node.value, (ast.Name, ast.Attribute)):
            return [f"{inner[0]}.{node.attr}"]  # keep dotted names whole: `torch.cuda`, `self.model`
        return inner + [f".{node.attr}"]
    if isinstance(node, ast.Subscript):
        links = _links(node.value, ctx)
        links[-1] += "[...]"
        return links
    if isinstance(node, ast.Name):
        return [node.id]
    text = re.sub(r"\s+", " ", ctx.node_text(node)).strip()
    return [f"({text})" if len(text) <= MAX_SNIPPET // 2 else "(...)"]


def _callsnippet(ctx, call: ast.Call) -> str:
    text = re.sub(r"\s+", " ", ctx.node_text(call)).strip()
    if len(text) <= MAX_SNIPPET:
        return text
    links = _links(call, ctx)
    text = "".join(links)
    if len(text) <= MAX_SNIPPET:
        return text
    # the receiver's root and as many trailing links as fit: `model(...)....mean(...).cpu()`
    head, tail = links[0], [links[-1]]
    for link in reversed(links[1:-1]):
        if len(head) + 3 + len(link) + sum(map(len, tail)) > MAX_SNIPPET:
            break
        tail.insert(0, link)
    return head + "..." + "".join(tail)


def _is_str_expr(node: ast.AST) -> bool:
    """A string built from literals: `"%d"`, `f"..."`, `"%11s" * 2 + "%11.4g" * 5`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_str_expr(node.left) or _is_str_expr(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _is_str_expr(node.left) or _is_str_expr(node.right)
    return False


def _element_message(ctx, node: ast.Call, iterated: ast.AST) -> str:
    return (
        f"`{_callsnippet(ctx, node)}` reads each element of the tensor `{snippet(ctx.node_text(iterated))}` on "
        "the host as the loop iterates it, one GPU sync per element; read them all at once (`.tolist()`) before "
        "the loop"
    )


def _logs_a_tensor(call: ast.Call, ctx) -> bool:
    """`writer.add_scalar(tag, t, step)` (or `scalar_value=t`),
    `writer.add_scalars(tag, {"mel": t}, step)` or `wandb.log({"loss": t})`,
    of a device tensor: TensorBoard's SummaryWriter
    and wandb turn it into a number on the host."""
    values = logged_values(call) or wandb_run_values(ctx.analysis, call, ctx.ancestors)
    return bool(values) and candidate(ctx, ctx.ancestors) and any(is_device_tensor(v, ctx) for v in values)


def _percent_operands(right: ast.AST) -> List[ast.AST]:
    """What `"%.4f" % loss`, `("%11s" * 2 + "%11.4g" * 3) % (epoch, mem, *mloss)`
    or `"%(loss).3f" % {...}` formats."""
    if isinstance(right, ast.Tuple):
        values = list(right.elts)
    elif isinstance(right, ast.Dict):
        values = [v for k, v in zip(right.keys, right.values) if k is not None]
    else:
        values = [right]
    return [v.value if isinstance(v, ast.Starred) else v for v in values]


# HostSyncInLoop's bad/good examples: its tests, its docs' examples and its bench
EXAMPLES = (
        Example(
            bad="""
            import torch

            running_loss = 0.0
            for step, (images, labels) in enumerate(loader):
                images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                loss = criterion(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                if step % 100 == 99:
                    print(f"step {step + 1}: loss {running_loss / 100:.4f}")
                    running_loss = 0.0
            """,
            good="""
            import torch

            running_loss = torch.zeros((), device="cuda")
            for step, (images, labels) in enumerate(loader):
                images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
                loss = criterion(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running_loss = running_loss + loss.detach()
                if step % 100 == 99:
                    print(f"step {step + 1}: loss {running_loss.item() / 100:.4f}")
                    running_loss.zero_()
            """,
        ),
    )


# HostSyncInLoop's bench program (see `Bench` in gpulint/rule.py)
BENCH = Bench(
        setup=HOST_PIPELINE_TRAINING + "log_every = 50\nhistory = []\nstep = 0\n",
        bad='''
            running_loss = 0.0


            def run(steps):
                global running_loss, step
                for _ in range(steps):
                    images, labels = next_batch()
                    images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    loss = F.cross_entropy(model(images), labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    running_loss += loss.item()
                    step += 1
                    if step % log_every == 0:
                        history.append(running_loss / log_every)
                        running_loss = 0.0
                return running_loss
        ''',
        good='''
            running_loss = torch.zeros((), device=DEVICE)


            def run(steps):
                global running_loss, step
                for _ in range(steps):
                    images, labels = next_batch()
                    images, labels = images.to(DEVICE, non_blocking=True), labels.to(DEVICE, non_blocking=True)
                    loss = F.cross_entropy(model(images), labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    running_loss = running_loss + loss.detach()
                    step += 1
                    if step % log_every == 0:
                        history.append(running_loss.item() / log_every)
                        running_loss.zero_()
                return running_loss.item()
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "ResNet-style training step on a batch of 256 64x64 crops that the host prepares with numpy (about as long "
            "as the GPU step), copied from pinned memory; bad reads loss.item() every step, good sums the loss on the "
            "GPU and reads it every 50 steps. Same kernels in the same order: the running loss agrees up to float32 vs "
            "float64 summation and cuDNN's run-to-run rounding (rtol 1e-4)"
        ),
    )


class HostSyncInLoop(TruthTests, SliceReads, OldScalarReads, Rule):
    """
    ## What it does
    Flags code that copies a CUDA tensor's value to the host on every step of a
    training loop: the hot loop (the innermost loop that runs a model forward,
    `backward()`, an optimizer step or iterates a DataLoader) when it calls
    `backward()` (also `accelerator.backward`, `manual_backward`) or an
    optimizer step. Evaluation and inference loops are covered by GPU104
    (host-sync-in-eval-loop), which is off by default:

    - `.item()`, `.cpu()`, `.numpy(force=True)` on a value not known to be a
      numpy array, a Python number or a model; `.tolist()` on a tensor;
    - `float(t)`, `int(t)`, `bool(t)`, `range(t)` of a tensor, and `math.isfinite(t)`,
      `math.isnan(t)`, `math.isinf(t)`, which convert it to a float first
      (RT-DETR's `if not math.isfinite(loss_value):` on the summed loss);
    - a tensor as a slice bound (`pred[:length]` over `zip(preds, lengths)`
      of CUDA lengths: Python reads its `__index__`), once per statement;
    - the values of a dict a wandb run logs (`run.log(log_dict)` with `run =
      wandb.init(...)` and `log_dict` a display built just before), which
      wandb turns into numbers;
    - the values a tqdm bar's `set_postfix(...)` is handed (its keywords, a
      dict display, or a mapping of tensors such as a model's outputs):
      tqdm turns each one that is not a Python number into its text;
    - `loss.data[0]` of a loss the loop runs `.backward()` on (or of a term
      summed into it), in a file with no switch on `torch.__version__`: code
      written for torch before 0.4, where it is a Python number (since 0.4 a
      loss is 0-dim and `.data[0]` of it fails); not a second such read in
      the statement right after one;
    - `scaler.get_scale()` of a `GradScaler`, which returns `.item()` of the
      scale tensor (pi-GAN's `if scaler.get_scale() < 1:` every step);
    - a tensor logged with `writer.add_scalar(tag, t, step)`, in the dict `writer.add_scalars(tag,
      {"mel": t}, step)` or `wandb.log({"loss": t})` is given, which turn it into a number on the
      host; `torch.tensor([loss_a, loss_b])` of device tensors, each read;
    - a factory handed a device tensor as a size or bound
      (`torch.arange(torch.max(lengths))`, `torch.zeros(n_pos)` with a CUDA
      count): it reads the value on the host before it can allocate;
    - `print()` of a tensor, `str(t)` / `repr(t)`, and formatting a tensor in
      an f-string (or with `str.format` / `%`, also `"%(loss).3f" % {...}`);
    - a tensor's truth value taken by a condition: `if t:` / `while t:`
      (including `if torch.isnan(loss).any():`), a comparison or a boolean
      of a tensor (`if loss < best:`, `if (pred == y).all():`,
      `while not done.all():`), an `assert` on a tensor
      (`assert torch.isfinite(loss)`), a conditional expression
      (`scale = 0.5 if loss > 2 else 1.0`), and `max()` / `min()` of a tensor
      and other values (`lowest = min(lowest, loss)` compares them with
      `<` and takes the result's truth value).

    The loop and the read may be in different functions and files: the
    project's call graph (docs/architecture.md) tells when a loop's step is in
    a helper (`loss_scaler(loss, optimizer)`, `self._run_step(batch)`, timm's
    `_backward(loss)` defined in the loop's body), when a loop iterates a
    DataLoader through a wrapper (`metric_logger.log_every(loader, 10)`), and
    which helpers run every step. A read in such a helper is flagged there ("in
    `update`, which runs every training step"). A helper counts when a call of
    it runs on every pass of a training loop or every run of such a helper, not
    under a periodic guard, an `if` on a logging, saving or debugging option,
    or an `if` on the loop's index; a function with a training loop of its own
    (`train_one_epoch`) is an epoch, not a step. In the helper, a read under an
    `if` other than a type check (`torch.is_tensor(v)`, which may also return
    early) is not flagged (most often an option or a rare path), but one under
    a step counter past a warm-up (`if self.steps > start_steps:`) is, and so
    is one on the path of a distributed run (`if world_size > 1:`, `if
    dist.is_initialized():`), which a training repository takes on every step
    (not `if rank == 0:`, which picks one process). A file with no device word
    is device code when one that uses a device calls it. A file linted alone,
    or by flake8, sees the files it imports.

    It also flags, in any loop and not only a training loop, a `for` loop over
    a tensor that reads each element it takes on the host:
    `for idx in expert_hit: e = int(idx.item())`, `int(idx)`, `float(idx)`,
    `idx.tolist()` (also through `enumerate`, and each row's elements in a
    loop over the rows: `for x in row: int(x)`), or that reads the element at
    the loop's own index where the loop does device work between the reads
    (`for i in range(k): torch.roll(v, -int(index[i]))`, Autoformer's top-k
    delays; not a loop that only fills host records). Each iteration is a sync, where
    `for e in expert_hit.tolist():` reads them all with one. Only the loop's
    own name counts (not other tensors, not the name once rebound, not an
    alias), the tensor must be known to be one and not known to be in host
    memory (`for i in torch.randperm(n)` is on the CPU), and the loop must be
    in model code (a method of an `nn.Module` subclass, or a function named
    like `forward`, `generate`, `sample`, `step`, `decode`, `loss`) or in a
    training loop: data preparation such as image processors usually runs on
    the CPU. Code that runs once (`__init__`, set-up, loading) is not flagged,
    and a statement reading the element twice is reported once.

    Not flagged, because it does not run every step or does not wait for the
    GPU:

    - code under a periodic guard (`if step % log_every == 0:`, also through
      a flag the step sets first, `log_losses = n_iter % print_freq == 0`
      then `if log_losses:` further down, or a property of the trainer that
      returns one, `if self.log_outputs_now:`; or after
      `if step % n: continue`, or a step counter looked up in a schedule:
      `if global_step in upsample_steps:`), code that runs at most once per loop (a block
      ending in `break`, `return` or `raise`, an `except` handler, an `assert`
      message, the loop's `else`), and an outer loop around the hot loop (an
      epoch loop; a batch loop around an inner critic or micro-batch loop
      still counts), and code under a command-line flag that is off by
      default and names a logging, printing, debugging, saving, plotting or
      viewing mode (`if args.print_loss:` with `action="store_true"`,
      `--vis_tgt`), defined in the same file or in another file of its
      program (`--log-logit-mean` in a `params.py` the script imports): the user opts into it
      (`--amp` and other modes of the step still count);
    - values known to be numpy arrays, Python numbers or models
      (`probs.tolist()` after `.numpy()`, `np.finfo(np.float32).eps.item()`,
      `model.cpu()`), and tensors known to be in host memory: batches straight
      from a DataLoader that were never moved, results of `.cpu()`, torch
      factories without `device=` (`torch.rand([])`), a name whose last
      binding on every path is one, an attribute every assignment of which
      in its class is one (`self.count = torch.ones(n)`);
    - `t.numpy()` without `force=True`: torch refuses it for a device tensor,
      so `t` is in host memory (a copy is the `.cpu()` before it);
    - values whose type is unknown, except for `.item()`, `.cpu()` and
      `.numpy(force=True)`, which hardly exist on anything but tensors; comparisons of
      sizes, shapes and numbers (`if x.size(0) < 2:`, `assert x.shape == y.shape`,
      `max(longest, len(x))`), and `max()` / `min()` with `key=`, or with a
      single iterable that is not a device tensor (`min(y)` of a CUDA tensor
      compares its elements one by one on the host, and is flagged);
    - a `for` loop over a CUDA tensor on its own (`for row in logits:`):
      iterating a tensor takes views of its rows (`t.unbind(0)`) and reads
      nothing on the host; reading each element is what syncs (below);
    - files that never mention CUDA, a device, `.to(...)` or a library that
      places tensors (accelerate, Lightning): they compute on the CPU, unless
      the call graph says the function runs every step of a training loop
      elsewhere and some file of the project can use an accelerator;
    - values the host needs: actions copied for an environment
      (`envs.step(actions.cpu().numpy())`, or `actions = actions.cpu().numpy()`
      and then `next_obs, reward, terminated, truncated, info =
      envs.step(actions)`: a `step` whose result is unpacked into four or five
      values, as in Gym), and per-sample outputs the host keeps: a `.cpu()`,
      `.numpy()` or `.tolist()` whose result is appended to a list
      (`predictions.append(preds.detach().cpu().numpy())` for a scorer) or
      extended, returned, or written out by a function or method named to
      save, write or dump (`np.save(path, out.cpu().numpy())`,
      `Image.fromarray(img.cpu().numpy()).save(path)`, `save_images(image,
      prediction, ...)`), directly or through a name the function keeps
      so later; a loss or a reduction (`.sum()`, `.mean()`) copied that way,
      a list joined back into a tensor (`torch.cat(outs)`) and a metrics
      dict are bookkeeping and stay flagged;
    - a read of a tensor the same block moves to the accelerator after it
      (`assert lengths.sum().item() > 0` and then `x, lengths = to_cuda(x,
      lengths)`, or `lengths = lengths.cuda()`): it is still on the host there;
    - a read right after `torch.cuda.synchronize()`, `event.synchronize()` or
      a barrier, or a module-level alias of one (nanochat's `synchronize =
      torch.cuda.synchronize if device_type == "cuda" else lambda: None`):
      the host has just waited for everything queued (GPU102 reports the
      synchronize itself), also when the sync runs on the CUDA branch of a
      device test (`elif device == "cuda": torch.cuda.synchronize()`: the
      other branches run where nothing waits on CUDA). A sync that times the step (the next statement
      reads a clock: `synchronize()` then `t1 = time.time()`) also covers a
      read just before it, with no model work between
      (`train_loss_f = train_loss.item()` then `synchronize()`, also after the
      `with torch.no_grad():` block the read ends), and a read at
      the top of the next pass, when no `continue` can skip it: the host waits
      there for the same work either way. So does a read right after a call
      of a project function whose every return reads on the host (`s =
      score(model, x)` returning `out.item()`), or that reads on the host
      after its model work, a few statements before it returns (`correct =
      (logits.argmax(1) == y).sum().item()` ... `return loss, correct`), and
      at most six statements after an operation sized by the data (`keep =
      torch.where(label != 255)[0]`, `x[mask]`, `nonzero`: GPU105's), with
      no model work between;
    - the exit test of a loop that trains nothing (`if is_finished.all():
      break` in a decoding loop, `while not converged.all():` in a search):
      the host needs it to know whether to go on. A training loop's own
      `if loss.isnan(): break` is still flagged: it could be checked less often;
    - what a per-step function returns to a caller that hands it to an
      environment's step (`action = agent.explore(state)` then
      `env.step(action)`, with `explore` ending `return action.item()`);
    - a read that picks the optimizer's learning rate, a Python number: the
      test of an `if` whose branches set what the function then assigns to
      `param_group["lr"]` (PPO's adaptive KL schedule: `if kl_mean >
      2 * desired_kl: self.learning_rate /= 1.5`), or that value itself;
    - a read on a path that ends the program (`if not math.isfinite(loss):
      print(loss_dict); sys.exit(1)`, DETR's divergence check): it runs once;
    - files in another tensor framework (they import Paddle, TensorFlow,
      JAX, MXNet or MindSpore, and never torch: RT-DETR's `rtdetr_paddle/`),
      and code under an `if` on a module-level flag that the file sets to
      False once and never changes (`time_it = False`, `HF_MODE = False`),
      for every rule: a user turns that code on by editing the file (not
      where the file sets its globals another way, as nanoGPT's
      `exec(open("configurator.py").read())` does);
    - test files (`test_*.py`, `*_test.py`, `conftest.py`, files under
      `tests/`): their loops check results, they are not hot paths;
    - a read after another: when an earlier statement of the step already
      read a tensor on the host (`a = x.item()` then `b = y.item()`), or the
      value was computed from such a read (`shown = loss.item() / n`, then
      `f"{shown}"`), the loop has just waited for the GPU and this read only
      waits for the few small kernels queued since. A copy of a host tensor to
      the GPU without `non_blocking=True` (`labels = labels.cuda()`) counts
      as such a read: PyTorch waits for the stream after it. So does a call
      of a per-step function that returns right after such a read or copy
      (a loss helper that moves the batch's labels last); not one of a CPU
      factory's tensor, which GPU203 reports. The earlier read may lie
      several statements back (`pg_losses.append(policy_loss.item())`, then
      `value_loss = F.mse_loss(...)`, then `value_losses.append(value_loss.item())`)
      as long as none in between calls a model, `backward()` or an optimizer
      step, or holds a loop (one over values read on the host before it, a
      span decoder's, is passed); small tensor ops and `if`/`with`/`try`
      statements of such ops are fine. The walk back
      also leaves an `if`, `with` or `try` body for the statements before it
      (a read at the top of `with torch.no_grad():` follows a read just
      before it; so does a read in the body of `if loss.item() > 0:`), but
      it stops at the top of the loop's body (the previous step's reads do
      not count) and of a nested loop's. The earlier read must be one that
      waits for the GPU: not of a numpy array, a number or a tensor known to
      be in host memory; printing or formatting a tensor (`print(loss)`,
      `f"{loss=}"`) is such a read. The same holds after an `if`/`else`, `try` or
      `with` each of whose paths ends with such a statement (a branch
      ending in `continue`, `break`, `return` or `raise` does not reach
      the next one; the branch of `if torch.is_tensor(x):` is the path a
      device tensor takes), and within one statement for the reads
      Python evaluates after a read of that statement that always runs:
      in `log({"loss": loss.item(), "norm": norm.item()})`, in
      `f(x.item()) + y.item()` or in `y.item() if x.item() > 0 else 0` only
      the first read is flagged. A read that may not run is no first read: in a
      branch of `... if ... else ...`, after the first operand of
      `and`/`or`, after the first comparison of a chain (`a < b < x.item()`),
      in a lambda or in a comprehension. And no read follows another when
      its own statement also calls a model, `backward()` or an optimizer
      step (`c = model(x).sum().item()` after `a = loss.item()`). The walk
      back stops at the top of a function, unless every per-step call of
      that function, in this file or another, comes right after such a read
      or sync of its caller (MAE's `all_reduce_mean(loss_value)` after
      `torch.cuda.synchronize()`, `model.get_step()` after `loss.item()`);
    - loops that run no backward and no optimizer step: evaluation and
      inference loops (see GPU104), token-by-token decoding, iterative
      refinement, a model's own loop over experts. There a per-step read often
      *is* the point (collecting predictions, a stop token, a streamer), and
      the labelled study in docs/accuracy.md found most such findings could
      not be avoided. The one exception is the loop over a tensor's own
      elements described above, where one `.tolist()` before the loop
      replaces every per-element read.

    ## Why is this bad?
    CUDA runs asynchronously: the CPU queues kernels and races ahead while the
    GPU works through them. Reading a tensor's value on the host forces the CPU
    to wait until every queued kernel up to that value has finished, and
    then the GPU idles while the CPU prepares and launches the next step.
    Done every step, this removes the overlap between CPU and GPU work; on
    small and medium models it is often the largest single slowdown of a
    training loop.

    Keep running values on the GPU (`running = running + loss.detach()`) and
    read them once per logging interval, or in one transfer at the end of
    evaluation (`torch.cat(preds).cpu()`).

    ## Fix safety
    No automatic fix: moving the read out of the loop changes where values are
    available and how they are logged. For a loop over a tensor's elements,
    `for x in t.tolist():` is not a drop-in either: the loop then takes Python
    numbers (or nested lists, for rows of a 2-D `nonzero()`), and every other
    use of `x` in the body (indexing, arithmetic with tensors) would change.

    ## References
    - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - [PyTorch performance tuning guide: avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    - [torch.Tensor.item](https://pytorch.org/docs/stable/generated/torch.Tensor.item.html)
    - [torch.cuda.set_sync_debug_mode](https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html)
    """

    code = "GPU101"
    name = "host-sync-in-loop"
    message = "`{expr}` in a hot loop waits for the GPU every step (host-device sync)"
    fix_safety = NONE
    # every finding is inside a loop
    needles = ("for", "while")
    reads_every_step_functions = True
    examples = EXAMPLES
    bench = BENCH

    # reads of the elements of a tensor that a `for` loop iterates (GPU101's own)
    element_reads = True

    def begin_file(self, ctx) -> None:
        self._element_statements = set()
        self._sliced = set()  # (`SliceReads`: one finding per statement)
        self._old_reads = set()  # (`OldScalarReads`: the statements reported)
        self._region = None  # what the last `_hot` found: a loop, or an every-step function

    def report(self, ctx, node, message=None, fix=None, **fmt) -> None:
        region = self._region
        if message is None and isinstance(region, FUNCS) and "expr" in fmt:
            message = self.function_message.format(function=region.name, **fmt)
        super().report(ctx, node, message, fix, **fmt)

    # ----------------------------------------------------------- which loops
    # the kind of every-step function (`CallFacts.every_step`) this rule covers
    step_kind = TRAIN
    # the message for a read in such a function (the loop that runs it is elsewhere)
    function_message = "`{expr}` in `{function}`, which runs every training step, waits for the GPU (host-device sync)"

    def _hot(self, analysis, node, ancestors, at=None, per_element=False, scan=False):
        """The hot loop around `node` if it is one this rule covers, or the
        function around it when that runs every step of such a loop
        elsewhere (in this file or another). `at`: the part of `node` whose
        evaluation reads on the host, when not all of it. `per_element`: the
        read copies the tensor element by element (`min(y)`), one wait per
        element, however little is queued. `scan`: the read takes each element
        of a loop over a tensor (`for x in seq: if int(x) == PAD: break`),
        which one `.tolist()` replaces, even where it decides whether the
        loop goes on."""
        loop = self._region = analysis.loops.every_step(node, ancestors)
        if loop is None:
            return None
        if isinstance(loop, FUNCS):
            if analysis.facts.every_step(loop) != self.step_kind or conditional_in(node, ancestors, loop, analysis) \
                    or after_periodic_return(analysis, node, ancestors):
                return None
        elif not self.covers_loop(analysis, loop):
            return None
        if under_opt_in_flag(analysis.index, node, ancestors, loop, analysis.facts.opt_in_flags(), beyond=DEBUG_FLAG_RE):
            return None  # `if args.print_loss:`: a debugging path the user turns on, off by default; or
            # a debugging mode around the loop itself (NPT's `if self.c.debug_eval_row_interactions:`
            # around its row loop; not `if args.do_eval:`, the program's evaluation phase)
        if not per_element and (follows_host_read(node, ancestors, analysis, at) or sync_follows(node, ancestors, analysis)):
            return None
        if feeds_environment_step(analysis.index, node, ancestors) or exports_outputs(analysis.index, node) or (
                keys_a_mapping(analysis.index, node) or returns_the_action(analysis, loop, node, ancestors)
                or host_array_input(analysis, node) or sets_learning_rate(analysis.index, node, ancestors)
                or (not scan and stops_search(analysis, node, ancestors))):
            return None  # actions for the environment; predictions kept on the host; keys of a dict; an lr;
            # a host array's indices or contents (a host algorithm's input); whether a search goes on
        return loop

    @staticmethod
    def covers_loop(analysis, loop) -> bool:
        """Training step loops: the loop calls `.backward()` or an optimizer step."""
        return analysis.loops.is_training_step_loop(loop)

    def _in_covered_loop(self, analysis, ancestors) -> bool:
        """Some loop around the node (within its function) is one this rule
        covers. `_hot` can only answer for such a loop, and this costs no type
        inference: model code, full of loops but with no training step in
        them, stops here (asked before whether a value is a tensor)."""
        seen = analysis.index.memo(f"{self.code}.covers")
        for anc in reversed(ancestors):
            if isinstance(anc, SCOPES):
                return isinstance(anc, FUNCS) and analysis.facts.every_step(anc) == self.step_kind
            if isinstance(anc, LOOPS):
                covered = seen.get(anc)
                if covered is None:
                    covered = seen[anc] = self.covers_loop(analysis, anc)
                if covered:
                    return True
        return False

    # ---------------------------------------------------------------- calls
    def visit_Call(self, node: ast.Call, ctx) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in HOST_METHODS:
                _host_method(self, node, ctx)
            elif func.attr == "type" and _cpu_type_cast(node, ctx) and self._in_covered_loop(ctx.analysis, ctx.ancestors):
                if self._hot(ctx.analysis, node, ctx.ancestors) is not None:
                    self.report(ctx, node, expr=_callsnippet(ctx, node))
            elif func.attr == "get_scale" and scale_read(self, node, ctx):
                self.report(ctx, node, expr=_callsnippet(ctx, node))
            elif func.attr == "set_postfix":  # tqdm turns every value that is not a number into `str(value)`
                self._formatted(node, postfix_values(ctx.analysis, node, ctx.ancestors), ctx)
            elif func.attr == "format" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                args = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
                self._formatted(node, args + [k.value for k in node.keywords if k.arg is not None], ctx)
            elif func.attr in ("add_scalar", "add_scalars", "log") and _logs_a_tensor(node, ctx) and self._in_covered_loop(ctx.analysis, ctx.ancestors):
                if self._hot(ctx.analysis, node, ctx.ancestors) is not None:
                    self.report(ctx, node, expr=_callsnippet(ctx, node))
            elif self._in_covered_loop(ctx.analysis, ctx.ancestors) and (
                    (stacked := tensor_of_device_tensors(node, ctx.analysis)) or _math_test_of_tensor(node, ctx)) \
                    and self._hot(ctx.analysis, node, ctx.ancestors):
                self.report(ctx, node, message=_stacked_message(ctx, node) if stacked else None, expr=_callsnippet(ctx, node))
            elif sized_by_tensor(node, ctx.analysis):
                _sized_read(self, node, ctx)
            return
        if isinstance(func, ast.Name) and func.id in _BUILTIN_NAMES:
            _builtin_read(self, node, ctx)

    # ------------------------------------------------------------ formatting
    def visit_JoinedStr(self, node: ast.JoinedStr, ctx) -> None:
        values = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        self._formatted(node, values, ctx)

    def visit_BinOp(self, node: ast.BinOp, ctx) -> None:
        if isinstance(node.op, ast.Mod) and _is_str_expr(node.left):
            self._formatted(node, _percent_operands(node.right), ctx)

    def _formatted(self, node: ast.AST, values, ctx) -> None:
        if not values or not candidate(ctx, ctx.ancestors) or not self._in_covered_loop(ctx.analysis, ctx.ancestors):
            return
        tensors = [v for v in values if is_device_tensor(v, ctx)]
        # an f-string formats each part as it comes (`f"{t} {x.item()}"` reads `t` first);
        # `%` and `.format` format once every operand is evaluated
        at = tensors[0] if tensors and isinstance(node, ast.JoinedStr) else None
        if not tensors or self._hot(ctx.analysis, node, ctx.ancestors, at) is None:
            return
        names = ", ".join(f"`{snippet(ctx.node_text(t))}`" for t in tensors[:2])
        self.report(
            ctx,
            node,
            message=f"formatting the tensor {names} as text in a hot loop waits for the GPU every step (host-device sync)",
        )


def _element_read(rule, node: ast.Call, value: ast.AST, ctx) -> bool:
    """`for idx in hits: e = idx.item()`: the loop reads each element of a
    GPU tensor on the host, one sync per element, in any loop that runs
    repeatedly (not only a training loop). Reports it and returns True."""
    if not rule.element_reads:
        return False
    analysis = ctx.analysis
    iterated = analysis.host.tensor_loop_element(value, ctx.ancestors) or indexed_element(analysis, value, ctx.ancestors)
    if iterated is None or not runs_repeatedly(analysis, node, ctx.ancestors):
        return False
    if not (in_model_code(analysis.values, ctx.ancestors) or rule._hot(analysis, node, ctx.ancestors, scan=True) is not None):
        return False
    if follows_host_read(node, ctx.ancestors, analysis):
        return False
    stmt, _ = statement_and_block(list(ctx.ancestors) + [node], analysis)
    key = (id(stmt), ast.unparse(value))
    if key in rule._element_statements:
        return True  # `e.item() + 1 if c else e.item()`: one read per statement and iteration
    rule._element_statements.add(key)
    rule.report(ctx, node, message=_element_message(ctx, node, iterated))
    return True


def _element_of_a_tensor(rule, node: ast.Call, value: ast.AST, ctx) -> bool:
    """`_element_read` (reported), or the element of a loop over a tensor that
    is in host memory: either way the element-by-element reading decides it
    (the batch's indices read before the batch is moved, OLMo's)."""
    return _element_read(rule, node, value, ctx) or (
        rule.element_reads and isinstance(value, ast.Name)
        and ctx.analysis.host.tensor_loop_element(value, ctx.ancestors, anywhere=True) is not None)


def _cpu_type_cast(node: ast.Call, ctx) -> bool:
    """`(mask < p).type(torch.FloatTensor)`: a cast of a device tensor to a
    legacy CPU tensor type copies it to the host, and waits for it."""
    return (
        len(node.args) == 1 and not node.keywords and is_cpu_tensor_type(ctx.analysis, node.args[0])
        and candidate(ctx, ctx.ancestors) and is_device_tensor(node.func.value, ctx)  # type: ignore[attr-defined]
    )


def _stacked_message(ctx, node: ast.Call) -> str:
    """The message for `torch.tensor([a, b])` of device tensors (`literals.tensor_of_device_tensors`)."""
    return (f"`{_callsnippet(ctx, node)}` reads each device tensor of the list on the host, one GPU sync per "
            "element, every step; `torch.stack([...])` keeps them on the device")


def _math_test_of_tensor(node: ast.Call, ctx) -> bool:
    """`math.isfinite(loss)` of a device tensor: converts it to a Python float first."""
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr in _MATH_TESTS and len(node.args) == 1
            and not node.keywords and ctx.analysis.imports.qualname(func) == f"math.{func.attr}"
            and is_device_tensor(node.args[0], ctx))


def _forced(call: ast.Call) -> bool:
    """`t.numpy(force=True)`: copies a device tensor to the host (torch 1.13+);
    without it, `numpy()` raises on anything but a CPU tensor."""
    return any(k.arg == "force" and not (isinstance(k.value, ast.Constant) and not k.value.value)
               for k in call.keywords)


def _host_method(rule: HostSyncInLoop, node: ast.Call, ctx) -> None:
    """`t.item()`, `t.cpu()`, `t.tolist()`, ... of a device tensor in a hot loop: reported by `rule`."""
    func = node.func
    if node.args:
        return  # none of these tensor methods takes a positional argument
    if func.attr in ("item", "tolist") and node.keywords or func.attr == "numpy" and not _forced(node):
        return  # (`Tensor.numpy()` refuses a device tensor: its receiver is in host memory)
    if not candidate(ctx, ctx.ancestors):
        return
    recv = func.value
    if func.attr in _ELEMENT_READ_METHODS and _element_of_a_tensor(rule, node, recv, ctx):
        return
    if on_host_already(recv) or not rule._in_covered_loop(ctx.analysis, ctx.ancestors):
        return
    kind = ctx.analysis.values.kind_at(recv, ctx.ancestors)
    if func.attr in TENSOR_ONLY_METHODS:
        if kind not in (TENSOR, None):
            return  # a numpy array, a number, a model (`model.cpu()`), ...
    elif kind != TENSOR:
        return
    if ctx.analysis.host.is_host_tensor(recv, ctx.ancestors):
        return
    if rule._hot(ctx.analysis, node, ctx.ancestors) is None:
        return
    rule.report(ctx, node, expr=_callsnippet(ctx, node))


def _sized_read(rule: HostSyncInLoop, node: ast.Call, ctx) -> None:
    """`torch.arange(lengths.max())` of a device tensor in a hot loop: the
    factory reads its size on the host; reported by `rule`."""
    if candidate(ctx, ctx.ancestors) and rule._in_covered_loop(ctx.analysis, ctx.ancestors) \
            and rule._hot(ctx.analysis, node, ctx.ancestors):
        rule.report(ctx, node, message=(
            f"`{_callsnippet(ctx, node)}` reads its size from a device tensor on the host in a hot loop, "
            "which waits for the GPU every step (host-device sync)"))


def _builtin_read(rule: HostSyncInLoop, node: ast.Call, ctx) -> None:
    """`float(t)`, `int(t)`, `print(t)`, `str(t)`, `min(t)`, `max(best, t)`, ...
    of a device tensor in a hot loop (also `int(idx)` of each element of a
    loop over a tensor): reported by `rule`."""
    func = node.func
    if not candidate(ctx, ctx.ancestors):
        return
    q = ctx.analysis.imports.qualname(func)
    if q in CONVERSIONS and len(node.args) == 1 and not node.keywords and _element_of_a_tensor(rule, node, node.args[0], ctx):
        return  # int(idx) of a tensor's element, in a loop over that tensor: read one by one, or on the host
    if not rule._in_covered_loop(ctx.analysis, ctx.ancestors):
        return
    if q in CONVERSIONS:
        if len(node.args) != 1 or node.keywords or not is_device_tensor(node.args[0], ctx):
            return
    elif q == "builtins.print":
        if not any(is_device_tensor(a, ctx) for a in node.args):
            return
    elif q == "builtins.range":  # `range(bs)` with `bs = coors[-1, 0] + 1`: each bound read with `__index__`
        if node.keywords or not any(is_device_tensor(a, ctx) for a in node.args):
            return
    elif q in _TEXT_CONVERSIONS:
        if len(node.args) != 1 or node.keywords or not is_device_tensor(node.args[0], ctx):
            return
    elif q in _COMPARING_BUILTINS:
        # `max(best, acc)` compares the two (`acc > best`) and takes the truth
        # value of the result; one argument is an iterable, `key=` compares keys
        if (len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
                and is_device_tensor(node.args[0], ctx)):
            # `min(y)` of a device tensor walks its elements on the host, comparing each
            if rule._hot(ctx.analysis, node, ctx.ancestors, per_element=True) is not None:
                name = q.rsplit(".", 1)[-1]
                rule.report(ctx, node, message=(
                    f"`{_callsnippet(ctx, node)}` compares the tensor's elements one by one on the host, one "
                    f"GPU sync per element, every step; use `{snippet(ctx.node_text(node.args[0]))}.{name}()`"))
            return
        if len(node.args) < 2 or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if not any(is_device_tensor(a, ctx) for a in node.args):
            return
    else:
        return
    if rule._hot(ctx.analysis, node, ctx.ancestors) is not None:
        rule.report(ctx, node, expr=_callsnippet(ctx, node))
