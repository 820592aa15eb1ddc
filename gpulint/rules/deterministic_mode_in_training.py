from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Sequence

from gpulint.model.index.nodes import FUNCS, SCOPES
from gpulint.model.control.distributed import conditions_in_scope
from gpulint.model.names import last_name

from gpulint.rule import NONE, TIME, Bench, Example, Rule

USE_DETERMINISTIC = "torch.use_deterministic_algorithms"
CUDNN_DETERMINISTIC = "torch.backends.cudnn.deterministic"
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
# a function whose name says it is the switch (`enable_full_determinism`,
# `configure_deterministic_mode`, `make_reproducible`): calling it is the choice
OPT_IN_FUNCTION_RE = re.compile(r"determinis|reproducib", re.I)
# a seeding helper (`set_seed`, `seed_everything`, `init_seeds`): whoever calls
# it asked for a seed, not for deterministic kernels, wherever it is defined
SEED_HELPER_RE = re.compile(r"seed", re.I)
# tests that only ask about the platform, not about what the user wants
PLATFORM_CALLS = frozenset({"torch.cuda.is_available", "torch.backends.cudnn.is_available"})
PLATFORM_ATTRS = frozenset({"torch.backends.cudnn.enabled"})


def _is_platform_test(fa, test: ast.AST) -> bool:
    """`__name__ == "__main__"`, `torch.cuda.is_available()`, `cudnn.enabled`
    (and `and`s of them): conditions that hold on every GPU run."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_is_platform_test(fa, v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        sides = [test.left] + list(test.comparators)
        names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
        consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
        return bool(names and consts)
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        return fa.imports.qualname(test.func) in PLATFORM_CALLS
    if isinstance(test, ast.Attribute):
        return fa.imports.qualname(test) in PLATFORM_ATTRS
    return False


def _gated(fa, chain: Sequence[ast.AST]) -> bool:
    """Runs only when some condition of the same def holds (`if args.deterministic:`,
    `if seed is not None:`, either branch), other than a platform check."""
    return any(not _is_platform_test(fa, t) for t in conditions_in_scope(chain))


def _argument(call: ast.Call, name: str, position: int) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def _is_true(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _trains(fa) -> bool:
    """The file trains a model: it calls `.backward()` or an optimizer step,
    builds a `torch.optim` optimizer, or fits a Lightning-style trainer."""

    def build():
        for call in fa.index.nodes(ast.Call):
            func = call.func
            if fa.steps.is_backward_call(call) or (isinstance(func, ast.Attribute) and func.attr == "manual_backward"):
                return True
            if isinstance(func, ast.Attribute):
                if func.attr == "fit" and "trainer" in (last_name(func.value) or "").lower():
                    return True
                if func.attr == "step" and fa.steps.is_optimizer_step(call, fa.index.ancestors(call)):
                    return True
            q = fa.imports.qualname(func) or ""
            if q in LIGHTNING_TRAINERS:
                return True
            if q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler"):
                if q.rsplit(".", 1)[-1][:1].isupper():  # an optimizer class
                    return True
        return False

    return bool(fa.index.memoized("placement", "gpu503_trains", build))


def _call_sites(fa, fn: ast.AST) -> List[ast.Call]:
    """Calls of `fn` in the file: `name(...)` for a module-level function,
    `self.name(...)` in its class for a method."""
    sites: Dict[str, List[ast.Call]] = fa.index.memoized("gpu503", "calls_by_name", lambda: _calls_by_name(fa))
    name = fn.name  # type: ignore[attr-defined]
    cls = fa.index.enclosing_class(fa.index.ancestors(fn))
    out = []
    for call in sites.get(name, []):
        func = call.func
        if cls is None and isinstance(func, ast.Name):
            out.append(call)
        elif (
            cls is not None
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and fa.index.enclosing_class(fa.index.ancestors(call)) is cls
        ):
            out.append(call)
    return out


def _function_of(chain: Sequence[ast.AST]) -> Optional[ast.AST]:
    """The def that the last node of `chain` runs in (None at module level or in a class body)."""
    for anc in reversed(chain[:-1]):
        if isinstance(anc, SCOPES):
            return anc if isinstance(anc, FUNCS) else None
    return None


def _call_site_opts_in(fa, call: ast.Call) -> bool:
    """The call runs only when asked: under a condition, or in an opt-in function."""
    chain = fa.index.ancestors(call) + [call]
    if _gated(fa, chain):
        return True
    fn = _function_of(chain)
    return fn is not None and bool(OPT_IN_FUNCTION_RE.search(fn.name))  # type: ignore[attr-defined]


def _calls_by_name(fa) -> Dict[str, List[ast.Call]]:
    out: Dict[str, List[ast.Call]] = {}
    for call in fa.index.nodes(ast.Call):
        name = last_name(call.func)  # type: ignore[attr-defined]
        if name:
            out.setdefault(name, []).append(call)  # type: ignore[arg-type]
    return out


class DeterministicModeInTraining(Rule):
    """
    ## What it does
    Flags a training script that turns on deterministic mode unconditionally:
    - `torch.use_deterministic_algorithms(True)` (also with `warn_only=True`),
    - `torch.backends.cudnn.deterministic = True` (usually next to
      `cudnn.benchmark = False`, which is part of the same pattern and not
      flagged on its own),
    - Lightning's `Trainer(deterministic=True)` (or `"warn"`),

    in any import form. One finding per function (or module body): a seeding
    helper that sets all three is reported once.

    A *training script* is a file that trains: it calls `.backward()` or an
    optimizer step, builds a `torch.optim` optimizer, or fits a trainer. A
    seeding helper (a function whose name contains `seed`: `set_seed`,
    `seed_everything`, `init_seeds`) that turns deterministic mode on
    unconditionally is flagged in any file: whoever calls `set_seed(0)` asks
    for a seed, not for slower kernels.

    Not flagged, because then deterministic mode is something the user asked
    for: code under an `if` (or a conditional expression) of the same
    function, other than `if __name__ == "__main__":` or
    `torch.cuda.is_available()` (`if args.deterministic:`,
    `if args.seed is not None:`, `if cfg.reproducible:`); a non-literal
    argument (`torch.use_deterministic_algorithms(args.deterministic)`,
    `Trainer(deterministic=cfg.deterministic)`); a function whose name says it
    is the switch (`enable_full_determinism()`,
    `configure_deterministic_mode()`, `make_reproducible()`); a function of
    the file that is only called under such an `if`; other functions and
    module code of files that train nothing (a library's
    `seed_everything(seed, deterministic=False)` runs it only when asked
    anyway); test files; `False`. Nor is `torch.backends.cudnn.deterministic
    = True` where no file of the program names a convolution, a recurrent
    layer or a library of such models (`torchvision`, `timm`, `resnet`) and
    the models it builds are the project's own (MLP actors and critics, a
    recommender's MLPs, a transformer of `nn.Linear` layers): the flag only
    restricts cuDNN's algorithms, and cuDNN runs none of that code's math
    (`torch.use_deterministic_algorithms(True)`, which also changes atomic
    kernels, stays flagged).

    Off by default: in the labelled corpus (docs/accuracy.md) the libraries
    switch deterministic mode on only when asked, and the rule has a single
    finding there (a seeding helper), too few to measure its precision (it
    needs 10 at 95% to be on by default). Turn it on with `--select GPU503`
    to audit training scripts and their seeding helpers.

    ## Why is this bad?
    Deterministic mode trades speed for bit-for-bit reproducibility on every
    step of every run:
    - cuDNN may only use its deterministic convolution algorithms, which
      excludes many of the fastest ones (notably for the weight and input
      gradients of the backward pass), and `cudnn.benchmark = False` stops it
      from searching for the fastest algorithm per shape;
    - operations that accumulate with atomics on the GPU (`index_add_`,
      `scatter_add_`, `index_put_(accumulate=True)`, the backward of
      `gather`, embedding bags, interpolation, ...) switch to slower
      sort-based or serialised implementations, and some raise an error;
    - cuBLAS needs a restricted workspace (`CUBLAS_WORKSPACE_CONFIG`), and
      every uninitialised tensor (`torch.empty`) is filled with NaN
      (`torch.utils.deterministic.fill_uninitialized_memory`), one extra
      kernel per allocation.

    Reproducibility is worth it while debugging or for a paper's final runs;
    left on unconditionally, every training run pays for it.

    ## Fix safety
    No automatic fix: whether a run needs bit-for-bit reproducibility is the
    author's call. Put deterministic mode behind an option that is off by
    default (`--deterministic`), and keep seeding (`torch.manual_seed`) on:
    seeds give reproducible initialisation and data order at no cost.

    ## References
    - [Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    - [torch.use_deterministic_algorithms](https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html)
    - [torch.backends.cudnn](https://pytorch.org/docs/stable/backends.html#torch-backends-cudnn)
    - [torch.utils.deterministic.fill_uninitialized_memory](https://pytorch.org/docs/stable/deterministic.html)
    - [Lightning Trainer: deterministic](https://lightning.ai/docs/pytorch/stable/common/trainer.html#deterministic)
    """

    code = "GPU503"
    name = "deterministic-mode-in-training"
    message = (
        "`{what}` turns on deterministic mode for every run: slower cuDNN convolutions and sort-based "
        "replacements for atomic-add kernels on every step; put it behind an option that is off by default"
    )
    fix_safety = NONE
    default = False
    needles = ("deterministic",)
    examples = (
        Example(
            bad="""
            import torch

            def main(args):
                torch.manual_seed(args.seed)
                torch.backends.cudnn.deterministic = True
                torch.backends.cudnn.benchmark = False
                model, loader, optimizer = build(args)
                for images, labels in loader:
                    loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
            good="""
            import torch

            def main(args):
                torch.manual_seed(args.seed)
                if args.deterministic:  # opt-in: bit-for-bit reproducible, slower
                    torch.backends.cudnn.deterministic = True
                    torch.backends.cudnn.benchmark = False
                model, loader, optimizer = build(args)
                for images, labels in loader:
                    loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Example(
            title="use_deterministic_algorithms in a seeding helper",
            bad="""
            import random

            import numpy as np
            import torch

            def set_seed(seed):
                random.seed(seed)
                np.random.seed(seed)
                torch.manual_seed(seed)
                torch.use_deterministic_algorithms(True)

            set_seed(0)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
            """,
            good="""
            import random

            import numpy as np
            import torch

            def set_seed(seed, deterministic=False):
                random.seed(seed)
                np.random.seed(seed)
                torch.manual_seed(seed)
                if deterministic:
                    torch.use_deterministic_algorithms(True)

            set_seed(0)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
            """,
        ),
    )
    bench = Bench(
        setup='''
            import os

            # cuBLAS needs a fixed workspace in deterministic mode; set before CUDA is initialised (both sides)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

            import torch
            import torch.nn.functional as F
            from torch import nn

            # ResNet-style classifier on 128 64x64 images whose final feature map is also pooled into 16 regions
            # per image with index_add_ (a segment sum, as in superpixel or graph readouts)
            batch_size, size, width, classes, regions = (4, 16, 8, 10, 4) if SMALL else (128, 64, 64, 1000, 16)
            torch.manual_seed(0)


            def block(cin, cout, stride=1):
                conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                return nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


            backbone = nn.Sequential(
                block(3, width), block(width, width),
                block(width, 2 * width, 2), block(2 * width, 2 * width),
                block(2 * width, 4 * width, 2), block(4 * width, 4 * width),
                block(4 * width, 8 * width, 2), block(8 * width, 8 * width),
            ).to(DEVICE)
            head = nn.Linear(8 * width + regions * 8 * width, classes).to(DEVICE)
            optimizer = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
            images = torch.randn(batch_size, 3, size, size, device=DEVICE)
            labels = torch.randint(0, classes, (batch_size,), device=DEVICE)
            side = size // 8
            # each pixel of the final feature map belongs to one of `regions` regions of its image
            region_of_pixel = torch.randint(0, regions, (batch_size, side * side), device=DEVICE)
            segment = (region_of_pixel + regions * torch.arange(batch_size, device=DEVICE)[:, None]).flatten()


            def forward(x):
                feats = backbone(x)  # (B, C, side, side)
                c = feats.shape[1]
                pixels = feats.flatten(2).transpose(1, 2).reshape(-1, c)  # (B*side*side, C)
                pooled = torch.zeros(batch_size * regions, c, device=DEVICE).index_add_(0, segment, pixels)
                return head(torch.cat([feats.mean((2, 3)), pooled.view(batch_size, regions * c)], 1))
        ''',
        bad='''
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False


            def run(steps):
                for step in range(steps):
                    loss = F.cross_entropy(forward(images), labels)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach()
        ''',
        good='''
            deterministic = os.environ.get("DETERMINISTIC") == "1"  # opt-in, off by default
            if deterministic:
                torch.use_deterministic_algorithms(True)
                torch.backends.cudnn.deterministic = True
                torch.backends.cudnn.benchmark = False


            def run(steps):
                for step in range(steps):
                    loss = F.cross_entropy(forward(images), labels)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                return loss.detach()
        ''',
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "Training step of a ResNet-style classifier on 128 64x64 images whose final feature map is also "
            "segment-summed into 16 regions per image with index_add_, with deterministic mode on (bad: "
            "use_deterministic_algorithms, cudnn.deterministic, no cudnn.benchmark) or off (good: the option is off; "
            "both leave cudnn.benchmark at its default). Both compute the same maths with different kernels and "
            "summation orders: the losses after two steps agree to rounding (rtol 1e-3)"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._reported: set = set()

    def _flag(self, ctx, node: ast.AST, what: str) -> None:
        fa = ctx.analysis
        chain = list(ctx.ancestors) + [node]
        if _gated(fa, chain):
            return
        fn = _function_of(chain)
        if fn is not None:
            if OPT_IN_FUNCTION_RE.search(fn.name):  # type: ignore[attr-defined]
                return
            sites = _call_sites(fa, fn)
            if sites and all(_call_site_opts_in(fa, s) for s in sites):
                return
        if not (_trains(fa) or (fn is not None and SEED_HELPER_RE.search(fn.name))):  # type: ignore[attr-defined]
            return
        # one finding per def (or module body): a helper that sets all the switches is one problem
        key = fn if fn is not None else ctx.analysis.index.enclosing_class(ctx.ancestors) or fa.tree
        if key in self._reported:
            return
        self._reported.add(key)
        self.report(ctx, node, what=what)

    def visit_Call(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func)
        if q == USE_DETERMINISTIC:
            if _is_true(_argument(node, "mode", 0)):
                self._flag(ctx, node, "torch.use_deterministic_algorithms(True)")
        elif q in LIGHTNING_TRAINERS:
            for kw in node.keywords:
                if kw.arg == "deterministic" and (
                    _is_true(kw.value) or (isinstance(kw.value, ast.Constant) and kw.value.value == "warn")
                ):
                    self._flag(ctx, node, f"Trainer(deterministic={kw.value.value!r})")

    def visit_Assign(self, node: ast.Assign, ctx) -> None:
        if not _is_true(node.value):
            return
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "deterministic":
                if ctx.qualname(target) == CUDNN_DETERMINISTIC:
                    if ctx.analysis.facts.cudnn_free():
                        return  # (no convolution or recurrent layer in the program: cuDNN runs nothing)
                    self._flag(ctx, node, "torch.backends.cudnn.deterministic = True")
                    return

