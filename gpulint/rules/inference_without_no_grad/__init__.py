from __future__ import annotations

import ast
from textwrap import dedent
from typing import List, Optional

from gpulint.model.control.modes import (EVAL, eval_before, evaluated_at_module_level, forward_model_key, mode_before,
                                         mode_of_switch, model_key)
from gpulint.rules.inference_without_no_grad.grad_mode import (
    evaluated_by_callers,
    grad_explicitly_on,
    is_frozen_model,
    needs_grad_call,
    runs_with_grad_off,
)
from gpulint.model.index.nodes import FUNCS
from gpulint.model.control.options import off_by_default
from gpulint.model.control.repetition import is_once_only_name
from gpulint.model.index.order import end_of, loops_around, scope_nodes, start_of
from gpulint.model.values.devices import default_device_set
from gpulint.rule import MEMORY, NONE, Bench, Example, Rule
from gpulint.workloads import RESNET18


class InferenceWithoutNoGrad(Rule):
    """
    ## What it does
    Flags a model forward call inside a loop (a `for`/`while` loop or a
    comprehension) when the same function switched that model to evaluation
    mode first (`model.eval()` or `model.train(False)`, before the loop or
    inside it) and no `torch.no_grad()` / `torch.inference_mode()` is in
    effect: no enclosing `with` block, no decorator on the function, no
    `torch.set_grad_enabled(False)`. What the function switched is a module,
    whatever its name (`dataset.model.eval()`, then `dataset.model(batch)`).
    A call of its own inference method counts as a forward: `model.encode(img)`,
    `model.predict(u)`, `decode`, `infer`, `inference` and their `_`-suffixed
    forms (`encode_image`), by the method's name; not `generate` or `sample`,
    which libraries and projects usually decorate with `no_grad`, not a
    sub-module named like one (`model.encoder(x)`), and not a method of a
    model a library loads (`AutoModel.from_pretrained(...)`), whose code the
    project does not show. Any other method counts where the project shows
    that it runs the model itself (`self(images)` or `self.forward(x)`, or
    a sub-module it holds, `self.item_encoder(emb)`, with autograd as its
    caller has it) and no backward or optimizer step, directly or through
    its calls: edge-connect's `model.process(images, edges)`, a forward and
    its losses, called per validation batch; S3Rec's `model.finetune(ids)`.
    The switch may also be in the callers:
    a function that never switches the model itself, every call of which in
    the file comes after its caller's `.eval()` on the model it passes (for
    a method, on the same `self` attribute), as in `model.eval()` then
    `predict(model, loader)`, or `self.net.eval()` then
    `self.inference(loader)`. A function the file never calls is read
    through the project: every call of it in the project's other files
    (one at least) hands, for that parameter, a model its caller switched
    to eval mode (`model.eval()` in `main.py`, then `evaluate(model, data)`
    from `utils.py`); a caller's model bound from a project function that
    switches it to eval mode and returns it counts as switched
    (weak-to-strong's `weak = get_model(name)`, then `get_embeddings(weak,
    loader)`). A model of the module switched to eval mode in module
    code (`net.eval()` after loading it) is in eval mode in the top-level
    functions that use it, where nothing in the file switches it back to
    training mode (an evaluation script's `show_performance()` loop over its
    test sets). The forward may be in a method of the
    same class that the loop calls (`pred = self._process_one_batch(batch)`
    in Informer's `vali`, where that method runs `self.model(...)` with no
    `no_grad` of its own and makes no gradient call), or in a function of
    the file that the loop hands the model (SR-GNN's `forward(model, i,
    test_data)`, which runs `model(items, A)` so): the finding is on the
    call.

    It does not flag:
    - loops that need gradients: a `.backward()`, `torch.autograd.grad`,
      Lightning's `manual_backward`, gradient clipping, an optimizer step, a
      call handed the optimizer (`loss_scaler(loss, optimizer)`), or a call of
      a function of the same file that does one of these, in the loop or
      after it (fine-tuning in eval mode, e.g. with frozen BatchNorm
      statistics, is legitimate); a training loop that merely runs before an
      evaluation loop does not count. Except where every use of the
      forward's outputs detaches them (`_, aux = model(x)`, then
      `aux["penultimate"].detach()` fed to linear heads that the loop
      trains, in the loop that steps): no gradient can flow back through this forward, so it is
      flagged, and the message says to run that forward alone under
      `torch.no_grad()`. The same where the forward is a statement of the
      training loop's own body that comes after every gradient call of the
      iteration, and the loop binds its outputs before reading them (PReNet's
      `model.eval()` and second forward after `optimizer.step()`, for a
      printed PSNR): its graph can feed no backward. And except where one loop trains or evaluates by
      a test (egnn's `if partition == "train": model.train() else:
      model.eval()`, every gradient call under `if partition == "train":`):
      the evaluating runs record a graph for nothing, so the forward is
      flagged, with `torch.set_grad_enabled(<the test>)` as the fix (where
      the forward is in branches of a command-line option, one per model
      the user may pick, only the option's default branch is);
    - functions that only run with grad off: decorated with
      `@torch.no_grad()` / `@torch.inference_mode()` or a project wrapper
      named after them (`@smart_inference_mode()`), or called from inside a
      `with torch.no_grad():` / `inference_mode()` block (or from another such
      function) in the same file; or functions every call of which that the
      project makes, in any file, runs so (melgan's `validate()`, called only
      inside `with torch.no_grad():` in its training script);
    - contexts that may turn grad off: `with torch.set_grad_enabled(phase ==
      "train"):`, `with (torch.no_grad() if evaluating else nullcontext()):`
      or a name bound to such a context;
    - models whose parameters were all frozen with `requires_grad_(False)`
      (no graph is recorded for them), also at the end of a chain
      (`sampler.eval().requires_grad_(False)`), in the value the model is
      bound to (`G = Net().train().requires_grad_(False)`), or a
      `copy.deepcopy` of such a model (`G_ema = copy.deepcopy(G).eval()`);
    - dummy forwards while a model is built, in `__init__`, `setup*`,
      `init*` and other functions named to run once;
    - code under an explicit `with torch.enable_grad():`;
    - models in training mode (no `.eval()` seen in the function, as in a
      `training_step`);
    - a model the same code builds (`net = SpeechEmbedder()`) and never
      moves, wraps or hands on (only loads weights into, switches to eval and
      calls): its forward runs on the CPU, where the kept graph costs no GPU
      memory.

    ## Why is this bad?
    `model.eval()` only changes how layers such as dropout and batch norm
    behave; it does not turn autograd off. Every forward pass in the loop
    still records the autograd graph and keeps every intermediate activation
    alive until its outputs are freed, which costs memory (much more than
    inference alone needs, which limits the batch size) and time (graph
    bookkeeping, version counters, view tracking). Evaluation and inference
    loops should run under `torch.inference_mode()` (or `torch.no_grad()` when
    the outputs are later used with autograd).

    ## Fix safety
    No automatic fix (the message names `torch.no_grad()` where the
    project's torch predates `inference_mode`, 1.9). Wrapping the loop in `with torch.inference_mode():`
    changes what the outputs are: tensors created in inference mode cannot be
    used later in autograd-recorded computations, and with `no_grad` they have
    no `grad_fn`. Whether the loop's outputs are used for gradients elsewhere
    (an adversarial attack, a saliency map computed in another function) is
    something the linter cannot see.

    ## References
    - [Autograd mechanics: evaluation mode (nn.Module.eval())](https://pytorch.org/docs/stable/notes/autograd.html#evaluation-mode-nn-module-eval)
    - [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    - [torch.inference_mode](https://pytorch.org/docs/stable/generated/torch.inference_mode.html)
    - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    """

    code = "GPU501"
    name = "inference-without-no-grad"
    message = (
        "`{model}` is in eval mode but this forward runs with autograd on: it records a graph and keeps "
        "activations alive that nothing uses; wrap the loop in `with torch.inference_mode():`"
    )
    fix_safety = NONE
    needles = (".eval(", ".train(")
    reads_table_keys = ("evaluated",)  # (a file whose callers, in other files, switch the model it gets)
    examples = (
        Example(
            bad="""
            import torch

            def evaluate(model, loader, device):
                model.eval()
                correct = 0
                for images, labels in loader:
                    images, labels = images.to(device), labels.to(device)
                    logits = model(images)
                    correct += (logits.argmax(1) == labels).sum().item()
                return correct / len(loader.dataset)
            """,
            good="""
            import torch

            def evaluate(model, loader, device):
                model.eval()
                correct = 0
                with torch.inference_mode():
                    for images, labels in loader:
                        images, labels = images.to(device), labels.to(device)
                        logits = model(images)
                        correct += (logits.argmax(1) == labels).sum().item()
                return correct / len(loader.dataset)
            """,
        ),
        Example(
            title="Hugging Face style evaluation loop",
            bad="""
            def evaluate(model, eval_dataloader, accelerator):
                model.eval()
                losses = []
                for batch in eval_dataloader:
                    outputs = model(**batch)
                    losses.append(accelerator.gather_for_metrics(outputs.loss.repeat(len(batch["input_ids"]))))
                return losses
            """,
            good="""
            import torch

            @torch.no_grad()
            def evaluate(model, eval_dataloader, accelerator):
                model.eval()
                losses = []
                for batch in eval_dataloader:
                    outputs = model(**batch)
                    losses.append(accelerator.gather_for_metrics(outputs.loss.repeat(len(batch["input_ids"]))))
                return losses
            """,
        ),
    )

    bench = Bench(
        setup=dedent("""
            import torch
            from torch import nn

            """)
        + RESNET18
        + dedent("""\
            val_batches = [
                (
                    torch.randn(batch, 3, size, size, device=DEVICE).to(memory_format=torch.channels_last),
                    torch.randint(0, classes, (batch,), device=DEVICE),
                )
                for _ in range(4)
            ]
            """),
        bad="""
        def run(steps):
            model.eval()
            correct = 0
            for step in range(steps):
                images, labels = val_batches[step % len(val_batches)]
                logits = model(images)
                correct += (logits.argmax(1) == labels).sum().item()
            return {"correct": correct, "logits": logits}
        """,
        good="""
        def run(steps):
            model.eval()
            correct = 0
            with torch.inference_mode():
                for step in range(steps):
                    images, labels = val_batches[step % len(val_batches)]
                    logits = model(images)
                    correct += (logits.argmax(1) == labels).sum().item()
            return {"correct": correct, "logits": logits}
        """,
        metric=MEMORY,
        check="allclose",
        rtol=1e-4,
        atol=1e-4,
        note=(
            "evaluation loop of a ResNet-18-sized conv net over 256x3x224x224 batches: with autograd on, each forward"
            " keeps its activations for a graph nothing uses (two batches' worth at the peak, while the next forward runs);"
            " inference mode runs the same kernels, so logits agree up to cuDNN algorithm choice"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        ancestors = ctx.ancestors
        # cheap checks first: tensor inference (is_model_call) costs the most
        key = forward_model_key(node)
        if key is None:
            return
        chain = list(ancestors) + [node]
        loops = loops_around(chain)
        if not loops:
            return
        scope = fa.index.enclosing_scope(ancestors) or fa.tree
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_once_only_name(scope.name):
            return  # a dummy forward while a model is built (`__init__`, `setup`): it runs once
        helper = False
        switched = mode_before(fa, key, node, scope) == EVAL
        if not switched:
            method_of = _inference_method(fa, node, scope)  # `model.encode(img)` after `model.eval()`
            if method_of is not None:
                key, switched = method_of, True
        if not switched and evaluated_at_module_level(fa, key, scope):
            switched = True  # `net.eval()` in an evaluation script's module code, `net(data)` in its function
        if not switched:
            if not eval_before(fa, node, scope):
                if not evaluated_by_callers(fa, scope, key):
                    return  # (no model is in eval mode here: a helper's forward is no evaluation either)
            else:
                key = _helper_forward(fa, node, ancestors)  # `pred = self._process_one_batch(batch)`
                if key is None or mode_before(fa, key, node, scope) != EVAL:
                    return
                helper = True
        if not helper and not (switched or fa.steps.is_model_call(node, ancestors)):
            return  # (`dataset.model.eval()` then `dataset.model(batch)`: what it switched is a module)
        if runs_with_grad_off(fa, ancestors) or grad_explicitly_on(fa, ancestors):
            return
        if self._frozen(fa, key, scope, ancestors) or _built_here_on_cpu(fa, key, scope, ancestors):
            return
        if self._gradients_needed(fa, node, loops, scope):
            trains_when = _trains_only_when(fa, key, node, scope)
            if trains_when is not None:  # `if partition == "train": model.train() else: model.eval()`
                if _off_by_default_branch(fa, node, ancestors, scope):
                    return  # (egnn's `elif args.model == "gnn":` forwards: one per model the user may pick)
                if trains_when == "":  # (the evaluating branch's own forward)
                    return self.report(ctx, node, message=_advised(self.message, key,
                                                                   "; run this forward under `with torch.no_grad():`"))
                return self.report(ctx, node, message=_advised(self.message, key, (
                    f" when the loop does not train (it trains only if `{trains_when}`); run the forward under "
                    f"`with torch.set_grad_enabled({trains_when}):`")))
            if not (isinstance(loops[0], (ast.For, ast.AsyncFor, ast.While))
                    and fa.loops.is_training_step_loop(loops[0])):
                return  # (a per-epoch preview after the steps' loop: once per epoch)
            if _only_detached(fa, node, scope):
                # a linear probe: the loop trains heads, so only this forward goes under `no_grad`
                return self.report(ctx, node, message=_advised(
                    self.message, key, " (its outputs are only used detached); run this forward under `with torch.no_grad():`"))
            if _after_the_step(fa, node, loops[0], scope):  # (PReNet's eval-mode forward for a printed PSNR)
                return self.report(ctx, node, message=_advised(
                    self.message, key, " (it runs after the step's gradient calls and feeds none); run this forward"
                                       " under `with torch.no_grad():`"))
            return
        if ctx.torch_version < _INFERENCE_MODE_SINCE:  # (a project pinned to an older torch: no inference_mode)
            return self.report(ctx, node, message=self.message.format(model=key).replace(
                "torch.inference_mode()", "torch.no_grad()"))
        self.report(ctx, node, model=key)

    @staticmethod
    def _frozen(fa, key: str, scope: ast.AST, ancestors) -> bool:
        if is_frozen_model(fa, key, scope):
            return True
        if key.startswith("self."):
            cls = fa.index.enclosing_class(ancestors)
            if cls is not None:
                return any(
                    is_frozen_model(fa, key, item)
                    for item in cls.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                )
        return False

    @staticmethod
    def _gradients_needed(fa, node: ast.AST, loops: List[ast.AST], scope: ast.AST) -> bool:
        """A gradient call in the forward's innermost loop, or after that loop at
        the same or a shallower loop level (the outputs may feed it)."""
        inner = loops[0]
        fwd_loops = set(map(id, loops))
        scope_anc: List[ast.AST] = [] if isinstance(scope, ast.Module) else [scope]
        for call in scope_nodes(scope):
            if not isinstance(call, ast.Call) or not needs_grad_call(fa, call, scope_anc):
                continue
            call_loops = loops_around(fa.index.ancestors(call) + [call])
            if any(lp is inner for lp in call_loops):
                return True
            if start_of(call) >= end_of(inner) and all(id(lp) in fwd_loops for lp in call_loops):
                return True
        return False


# the rule message's advice, which a forward that only some runs of the loop need without
# autograd replaces (`_advised`)
_LOOP_ADVICE = "; wrap the loop in `with torch.inference_mode():`"


def _advised(message: str, key: str, advice: str) -> str:
    """The rule's message for `key`, with `advice` in place of wrapping the whole loop."""
    return message.format(model=key).replace(_LOOP_ADVICE, advice)


def _trains_only_when(fa, key: str, call: ast.Call, scope: ast.AST) -> Optional[str]:
    """One loop trains or evaluates by a test (egnn's `train(epoch, loader,
    partition)`: `if partition == "train": model.train() ... else:
    model.eval()`, and the backward under `if partition == "train":`): the
    last switch of `key` before the forward is `.eval()` in one branch of an
    `if`, and every gradient call of the scope is in the other branch of an
    `if` with the same test. The condition under which it trains, as
    source; "" where the forward itself is in the evaluating branch of such
    an `if` (not in the training one); else None."""
    start = start_of(call)
    switch = None
    for n in scope_nodes(scope):  # (the last train/eval switch of `key` before the forward, as `mode_before`)
        if isinstance(n, ast.Call) and mode_of_switch(n) is not None and model_key(n.func.value) == key \
                and start_of(n) < start and (switch is None or start_of(n) > start_of(switch)):
            switch = n
    if switch is None or switch.func.attr != "eval":  # (`.eval()`, not `.train(False)`)
        return None
    branch, side = _branch_of(fa, switch)
    if branch is None:
        return None
    test = ast.dump(branch.test)
    grads = [n for n in scope_nodes(scope) if isinstance(n, ast.Call) and needs_grad_call(fa, n, [scope])]
    for g in grads:
        b, s = _branch_of(fa, g, test)
        if b is None or s == side:
            return None
    own, own_side = _branch_of(fa, call, test)
    if own is not None:  # the forward sits in one branch itself: the training one trains,
        return None if own_side != side else ""  # the evaluating one wants `no_grad` only
    cond = ast.unparse(branch.test)
    return cond if side == "orelse" else f"not ({cond})"


def _off_by_default_branch(fa, node: ast.AST, ancestors, scope: ast.AST) -> bool:
    """`node` is in the block of an `if` that compares a command-line option
    with a constant and is false at the option's default (`elif args.model
    == "gnn":` where `--model` defaults to `egnn_vel`)."""
    child = node
    for anc in reversed(ancestors):
        if anc is scope:
            break
        if isinstance(anc, ast.If) and any(child is c for c in anc.body) and off_by_default(
                fa.index, anc.test, fa.facts.option_defaults()):
            return True
        child = anc
    return False


def _branch_of(fa, node: ast.AST, test: Optional[str] = None):
    """(the innermost `if` around `node`, with that test where `test` is
    given, and "body" or "orelse", the branch `node` is in); (None, None)."""
    child = node
    for anc in reversed(fa.index.ancestors(node)):
        if isinstance(anc, FUNCS):
            break
        if isinstance(anc, ast.If) and child is not anc.test and (test is None or ast.dump(anc.test) == test):
            return anc, ("body" if any(child is c for c in anc.body) else "orelse")
        child = anc
    return None, None


def _only_detached(fa, call: ast.Call, scope: ast.AST) -> bool:
    """The forward's outputs are bound to names (`_, aux = model(x)`) and
    every later use of them detaches first (`aux['penultimate'].detach()`,
    `feats.data`): a linear probe trains only the heads it feeds, so the
    backbone's graph is recorded for nothing, whatever backward runs after."""
    parents = fa.index.parents
    stmt = parents.get(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0]
    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    if not all(isinstance(e, ast.Name) for e in elts):
        return False
    names = {e.id for e in elts if e.id != "_"}
    used = False
    for n in scope_nodes(scope):
        if not (isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        while isinstance(up, ast.Subscript) and up.value is not None:
            up = parents.get(up)  # `aux['penultimate']`, `out[0][:, 1]`
        if not (isinstance(up, ast.Attribute) and (up.attr == "data" or up.attr == "detach" and isinstance(
                parents.get(up), ast.Call))):
            return False
        used = True
    return used


def _after_the_step(fa, call: ast.Call, loop: ast.AST, scope: ast.AST) -> bool:
    """The forward is a statement of the training loop's own body (`out, _ =
    model(x)`, names only), every gradient call of the iteration comes before
    it, and each iteration binds its names before reading them: its graph
    can feed no backward, this iteration's or the next's (PReNet's
    `model.eval(); out_train, _ = model(input_train)` after `optimizer.step()`,
    for a printed PSNR)."""
    stmt = fa.index.parents.get(call)
    where = fa.index.slot(stmt) if isinstance(stmt, ast.Assign) and stmt.value is call else None
    if where is None or where[0] is not loop or where[1] != "body":
        return False
    elts = [e for t in stmt.targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
    if not all(isinstance(e, ast.Name) for e in elts):
        return False
    begin = start_of(stmt)
    scope_anc: List[ast.AST] = [] if isinstance(scope, ast.Module) else [scope]
    names = {e.id for e in elts}
    before = False
    first = {}  # name -> (where it is first evaluated in the iteration, that occurrence)
    for n in scope_nodes(loop):
        if isinstance(n, ast.Call) and needs_grad_call(fa, n, scope_anc):
            if start_of(n) >= begin:
                return False
            before = True
        elif isinstance(n, ast.Name) and n.id in names:
            at = _evaluated_at(fa, n)
            if n.id not in first or at < first[n.id][0]:
                first[n.id] = (at, n)
    return before and all(isinstance(first[name][1].ctx, ast.Store) for name in names if name in first)


def _evaluated_at(fa, name: ast.Name):
    """Where `name` is evaluated: a target of an assignment after its value."""
    if isinstance(name.ctx, ast.Store):
        up = fa.index.parents.get(name)
        while isinstance(up, (ast.Tuple, ast.List, ast.Starred)):
            up = fa.index.parents.get(up)
        if isinstance(up, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and up.value is not None:
            return end_of(up.value)
    return start_of(name)


# the torch release that added `torch.inference_mode`; before it, the message says `no_grad`
_INFERENCE_MODE_SINCE = (1, 9)
# what a model built on the CPU may be asked and stay there
_STAYS_PUT = frozenset(("eval", "train", "load_state_dict", "parameters", "named_parameters", "state_dict",
                        "requires_grad_", "zero_grad"))


def _built_here_on_cpu(fa, key: str, scope: ast.AST, ancestors) -> bool:
    """The model `key` is a name the code around builds itself (`net =
    SpeechEmbedder()`) and never moves, wraps or hands on: it is only
    loaded, switched to eval and called. Its forward runs on the CPU
    (a test script that never puts the model on a device), where keeping
    activations for a graph costs no GPU memory."""
    if "." in key or default_device_set(fa, ancestors):
        return False
    built = False
    for n in scope_nodes(scope):
        if not (isinstance(n, ast.Name) and n.id == key):
            continue
        parent = fa.index.parents.get(n)
        if isinstance(n.ctx, ast.Store):
            value = parent.value if isinstance(parent, ast.Assign) and parent.targets == [n] else None
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
                return False  # `net = Net().cuda()`, `net = build(cfg)...`, unpacked: not known
            built = True
        elif isinstance(parent, ast.Call) and parent.func is n:
            continue  # a forward
        elif not (isinstance(parent, ast.Attribute) and parent.attr in _STAYS_PUT
                  and isinstance(fa.index.parents.get(parent), ast.Call)):
            return False  # moved (`.cuda()`), wrapped, handed on: it may live anywhere
    return built


# a model's own inference methods (`model.predict(x)`, `vqvae.encode(img)`, `encode_image`);
# `generate`, `sample` and the like are left out: libraries and projects commonly decorate
# those with `no_grad` themselves (so are sub-modules named like them: `model.encoder(x)`)
_INFERENCE_VERBS = frozenset({"predict", "encode", "decode", "infer", "inference"})


def _inference_method(fa, call: ast.Call, scope: ast.AST) -> Optional[str]:
    """`model.predict(x)` / `model.encode(img)` where the function switched
    `model` to eval mode before, or every caller did before handing it on:
    an inference method of the model, which runs its layers as a forward
    does. The model's key."""
    func = call.func
    if not isinstance(func, ast.Attribute) or (
            func.attr.lower().split("_", 1)[0] not in _INFERENCE_VERBS and not fa.facts.forwards(call)):
        return None  # (a method the project says runs the model: edge-connect's `model.process(images)`)
    receiver = model_key(func.value)
    if receiver is None or receiver in ("self", "cls"):
        return None  # (a model's own method: `_helper_forward`'s)
    if _loaded_pretrained(receiver, scope):
        return None  # (`AutoModel.from_pretrained(..., trust_remote_code=True).encode(...)`: a library's, unseen)
    mode = mode_before(fa, receiver, call, scope)
    if mode == EVAL or (mode is None and evaluated_by_callers(fa, scope, receiver)):
        return receiver  # (switched here, or by every caller before it hands the model on)
    return None


def _loaded_pretrained(key: str, scope: ast.AST) -> bool:
    """`scope` binds the name `key` to a model a library loads
    (`model = AutoModel.from_pretrained(name)`), whose methods it defines."""
    for node in scope_nodes(scope):
        if isinstance(node, ast.Assign) and any(model_key(t) == key for t in node.targets) and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "from_pretrained"
                for c in ast.walk(node.value)):
            return True
    return False


def _helper_forward(fa, call: ast.Call, ancestors) -> Optional[str]:
    """`self.<method>(...)` where the method, of the same class, runs a forward
    of one model of the object (`self.model(...)`) with autograd as its
    caller has it (no `no_grad` of its own) and needs no gradient: that
    model's key. Informer's `vali` puts `self.model` in eval mode and calls
    `self._process_one_batch(...)`, whose forward is the loop's. So does a
    function of the file handed the model, that runs its parameter's
    forward so (SR-GNN's `forward(model, i, test_data)`): the key of the
    model handed to it."""
    func = call.func
    if isinstance(func, ast.Name):
        helper = next((d for d in fa.tree.body if isinstance(d, FUNCS) and d.name == func.id), None)
        if helper is None:
            return None
        param = fa.index.memoized("GPU501.helper_parameter", helper, lambda: _forwarded_parameter(fa, helper))
        arg = _argument_for(call, helper, param) if param is not None else None
        return model_key(arg) if arg is not None else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    cls = fa.index.enclosing_class(ancestors)
    if cls is None:
        return None
    method = next((m for m in cls.body if isinstance(m, FUNCS) and m.name == func.attr), None)
    if method is None:
        return None
    return fa.index.memoized("GPU501.helper_forward", method, lambda: _forwarded_model(fa, method))


def _forwarded_parameter(fa, helper: ast.AST) -> Optional[str]:
    """The parameter of `helper` whose forward it runs (`model(items, A)`)
    with autograd as its caller has it and no gradient call, outside a loop
    of its own (one there is reported there: pose's `infer` over scales);
    None where it runs none, or more than one."""
    params = {a.arg for a in helper.args.posonlyargs + helper.args.args}  # type: ignore[attr-defined]
    return _one_forwarded(fa, helper, params.__contains__, own_loops=True)


def _argument_for(call: ast.Call, helper: ast.AST, param: str) -> Optional[ast.AST]:
    """What `call` hands `helper` for its parameter `param`, by position or keyword."""
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    names = [a.arg for a in helper.args.posonlyargs + helper.args.args]  # type: ignore[attr-defined]
    i = names.index(param)
    if any(isinstance(a, ast.Starred) for a in call.args[: i + 1]) or i >= len(call.args):
        return None
    return call.args[i]


def _forwarded_model(fa, method: ast.AST) -> Optional[str]:
    return _one_forwarded(fa, method, lambda key: key.startswith("self."), own_loops=False)


def _one_forwarded(fa, func: ast.AST, counts, own_loops: bool) -> Optional[str]:
    """The one model key (`counts(key)`) whose forward `func` runs with
    autograd as its caller has it, where `func` makes no gradient call (and,
    with `own_loops`, runs it in no loop of its own); else None."""
    keys = set()
    for node in scope_nodes(func):
        if not isinstance(node, ast.Call):
            continue
        anc = fa.index.ancestors(node)
        if needs_grad_call(fa, node, anc):
            return None
        key = forward_model_key(node)
        if key is not None and counts(key) and fa.steps.is_model_call(node, anc):
            if runs_with_grad_off(fa, anc, own_only=True) or (own_loops and loops_around(anc + [node])):
                return None
            keys.add(key)
    return keys.pop() if len(keys) == 1 else None
