from __future__ import annotations

import ast
import re
from typing import Optional, Sequence

from gpulint.model.index.nodes import SCOPES
from gpulint.model.names import node_word
from gpulint.rule import NONE, TIME, Bench, Example, Rule
from gpulint.workloads import LANGUAGE_MODEL, LM_TRAIN_LOOP
from gpulint.model.index.walk import walk

SET_ANOMALY = frozenset({"torch.autograd.set_detect_anomaly", "torch.set_anomaly_enabled"})
DETECT_ANOMALY = "torch.autograd.detect_anomaly"
LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)
# `if args.debug:` / `if cfg.detect_anomaly:` / `if os.environ.get("DEBUG_NAN"):`
DEBUG_WORD_RE = re.compile(r"debug|anomal", re.I)

NO_NAN_MESSAGE = (
    "`{call}` turns on autograd anomaly mode: every autograd node records a Python stack trace "
    "(even with `check_nan=False`) on every step; enable it only while debugging"
)


def _literal_true(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _argument(call: ast.Call, name: str, position: int) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def _mentions_debug(test: ast.AST) -> bool:
    """A test that switches on a debug/anomaly option (not its negation)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    if isinstance(test, ast.BoolOp):
        return any(_mentions_debug(v) for v in test.values)
    for n in walk(test):
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return False
        text = node_word(n)
        if text and DEBUG_WORD_RE.search(text):
            return True
    return False


def _debug_gated(chain: Sequence[ast.AST]) -> bool:
    """Inside the body of an `if` on a debug option (in the same def)."""
    for i in range(len(chain) - 2, -1, -1):
        anc, child = chain[i], chain[i + 1]
        if isinstance(anc, SCOPES):
            return False
        if isinstance(anc, ast.If) and any(child is s for s in anc.body) and _mentions_debug(anc.test):
            return True
        if isinstance(anc, ast.IfExp) and child is anc.body and _mentions_debug(anc.test):
            return True
    return False


class DetectAnomalyEnabled(Rule):
    """
    ## What it does
    Flags code that turns on autograd anomaly detection outside tests:
    - `torch.autograd.set_detect_anomaly(True)` (a literal `True`, called as a
      function or used as a `with` block), in any import form, and
      `torch.set_anomaly_enabled(True)`;
    - `torch.autograd.detect_anomaly()` as a `with` block or a call,
      *including* `detect_anomaly(check_nan=False)`: without the NaN
      checks anomaly mode still records a stack trace for every autograd node,
      which is most of its cost;
    - Lightning's `Trainer(detect_anomaly=True)`.

    Not flagged: `set_detect_anomaly(False)` or a non-literal argument
    (`set_detect_anomaly(args.debug)`: a switch, off unless asked for); files
    that are tests (`tests/` or `test/` folders, `test_*.py`, `*_test.py`,
    `conftest.py`); and calls inside an `if` that tests a debug or anomaly
    option (`if args.debug:`, `if cfg.detect_anomaly:`), which only run when
    someone asks for them.

    ## Why is this bad?
    Anomaly mode is a debugging aid. While it is on, every operation recorded
    by autograd captures the Python stack trace of the forward code that
    created it, and (with `check_nan=True`, the default) every output of every
    backward function is checked for NaN, which is an extra kernel plus a
    device-to-host synchronization per autograd node. How much slower a step
    gets depends on the model (more autograd nodes, more cost); the harness
    (`gpulint bench`) is where gpulint measures such costs, not this page.
    Left on in a training script, it silently costs that on every step of
    every run.

    ## Fix safety
    No automatic fix: whether the check is still wanted is the author's call.
    Remove the call, or put it behind a debug option
    (`torch.autograd.set_detect_anomaly(args.debug)`).

    ## References
    - [Autograd: anomaly detection](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
    - [torch.autograd.detect_anomaly](https://pytorch.org/docs/stable/autograd.html#torch.autograd.detect_anomaly)
    - [torch.autograd.set_detect_anomaly](https://pytorch.org/docs/stable/autograd.html#torch.autograd.set_detect_anomaly)
    - [Lightning Trainer: detect_anomaly](https://lightning.ai/docs/pytorch/stable/common/trainer.html#detect-anomaly)
    """

    code = "GPU502"
    name = "detect-anomaly-enabled"
    message = (
        "`{call}` turns on autograd anomaly mode: every autograd node records a Python stack trace and every "
        "backward output is checked for NaN (a sync per node) on every step; enable it only while debugging"
    )
    fix_safety = NONE
    needles = ("anomaly",)
    examples = (
        Example(
            bad="""
            import torch

            torch.autograd.set_detect_anomaly(True)

            def train(model, loader, optimizer):
                for x, y in loader:
                    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            import torch

            def train(model, loader, optimizer):
                for x, y in loader:
                    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Example(
            title="detect_anomaly() around the training step",
            bad="""
            from torch import autograd

            def train_step(model, batch, optimizer):
                with autograd.detect_anomaly():
                    loss = model(**batch).loss
                    loss.backward()
                optimizer.step()
            """,
            good="""
            from torch import autograd

            def train_step(model, batch, optimizer, debug=False):
                with autograd.set_detect_anomaly(debug):
                    loss = model(**batch).loss
                    loss.backward()
                optimizer.step()
            """,
        ),
    )

    bench = Bench(
        setup=LANGUAGE_MODEL,
        bad="torch.autograd.set_detect_anomaly(True)\n\n\n" + LM_TRAIN_LOOP,
        good=LM_TRAIN_LOOP,
        metric=TIME,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "GPT-2-small-sized LM (124M parameters, bf16 autocast, AdamW) on 8x512 tokens with anomaly mode left on:"
            " a Python stack trace per autograd node and a NaN check (with a host sync) per backward output; the"
            " checks do not change the numbers, so the losses agree up to GPU nondeterminism"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func)
        if q is None:
            return
        if q in SET_ANOMALY:
            param = "enabled" if q == "torch.set_anomaly_enabled" else "mode"
            if not _literal_true(_argument(node, param, 0)):
                return
            call = f"{q.rsplit('.', 1)[-1]}(True)"
        elif q == DETECT_ANOMALY:
            call = "detect_anomaly()"
        elif q in LIGHTNING_TRAINERS:
            if not any(kw.arg == "detect_anomaly" and _literal_true(kw.value) for kw in node.keywords):
                return
            call = "Trainer(detect_anomaly=True)"
        else:
            return
        if _debug_gated(list(ctx.ancestors) + [node]):
            return
        check_nan = None if q in LIGHTNING_TRAINERS else _argument(node, "check_nan", 1 if q in SET_ANOMALY else 0)
        no_nan = isinstance(check_nan, ast.Constant) and check_nan.value is False
        template = NO_NAN_MESSAGE if no_nan else self.message
        self.report(ctx, node, message=template.format(call=call))
