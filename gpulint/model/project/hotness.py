"""Which loops of a file step over data (`Hotness`), by tests that need no
type inference: what the project's summaries ask of each loop and call of
a file (`summary.summarize`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set

from gpulint.model.control.loops import over_optimizers
from gpulint.model.control.sweeps import is_literal_sweep
from gpulint.model.index.nodes import LOOPS, SCOPES
from gpulint.model.index.walk import walk
from gpulint.model.project.refs import FileRefs
from gpulint.model.values.kinds import LOADER, LOADER_NAME_RE, kind_from_name

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.model.file import FileModel

TRAIN, EVAL = "train", "eval"
# the words of a step itself: without one, and without facts, no loop of a file trains (`Hotness.may_step`)
STEP_WORDS = ("backward", ".step(")


def mentions_any(fa: "FileModel", words: Sequence[str]) -> bool:
    """The file's text holds one of `words` (what `Hotness` and `summary_stands` read alike)."""
    return any(fa.index.mentions(w) for w in words)


class Hotness:
    """Which loops step over data, by tests that need no type inference (the
    call graph reads every call of every file, where the rules read only
    the loops they look at): a loop is a training loop when its own body
    calls `.backward()`, `manual_backward`, `<optimizer or scaler>.step()`
    or a function that steps; an evaluation loop when it iterates a
    DataLoader (`loader`, `val_loader`, `DataLoader(...)`, through
    `enumerate`, `tqdm` and generators that yield their argument, or a call
    the project knows returns one)."""

    def __init__(self, fa: "FileModel", refs: FileRefs, light: bool = False) -> None:
        self.fa = fa
        self.refs = refs
        # no word of a loop that steps over data in the file, and no facts from elsewhere:
        # no loop of it can be hot, and its calls are read without looking at loops
        self.light = light
        self._kinds: Dict[ast.AST, Optional[str]] = {}
        self.with_facts = not fa.facts.empty
        self.may_step = self.with_facts or mentions_any(fa, STEP_WORDS)
        self._contains: Dict[ast.AST, bool] = {}
        # found once per file from the index, not by walking each loop's body
        self._step_loops: Optional[Set[ast.AST]] = None  # loops whose own code calls a step
        self._every_pass_step_loops: Optional[Set[ast.AST]] = None  # ... on every pass
        self._drive_loops: Optional[Set[ast.AST]] = None  # loops whose own code calls a function that drives one
        self._inner: Optional[Dict[ast.AST, List[ast.AST]]] = None  # loop -> the loops inside it
        self._stepping_scopes: Optional[Set[ast.AST]] = None  # the defs with a loop that steps

    def in_model_class(self, scope: ast.AST) -> bool:
        """`scope` is a method of an `nn.Module` subclass of this file, and
        no loop of its own steps (a solver that subclasses `nn.Module` to
        hold its networks, whose `train(loaders)` runs the training loop, is
        a trainer, not a model)."""
        cls = self.fa.index.parents.get(scope)
        if not (isinstance(cls, ast.ClassDef) and self.fa.values.is_module_class(cls)):
            return False
        if self._stepping_scopes is None:
            index = self.fa.index
            self._stepping_scopes = {index.enclosing_scope(index.ancestors(loop))
                                     for loop in self._loops_calling(self.own_step, "_step_loops")} \
                if self.may_step else set()
        return scope not in self._stepping_scopes

    def own_step(self, call: ast.Call) -> bool:
        func = call.func
        if not isinstance(func, ast.Attribute):
            return self.fa.steps.helper_steps(call)
        if func.attr in ("backward", "manual_backward"):
            return True
        if func.attr == "step" and self.fa.steps.named_optimizer_step(call):
            return True
        return self.fa.steps.helper_steps(call)  # (`self.step(batch)`: a trainer's own method that steps)

    def kind(self, loop: ast.AST) -> Optional[str]:
        if loop not in self._kinds:
            found: Optional[str] = None
            if self.may_step and loop in self._loops_calling(self.own_step, "_step_loops"):
                found = TRAIN
            elif isinstance(loop, (ast.For, ast.AsyncFor)):
                base, _ = self.fa.values.unwrap(loop.iter)
                if self._loader(base, loop):
                    found = EVAL
            if found is not None and is_literal_sweep(loop, self.fa.index, self.fa.index.ancestors(loop)):
                found = None  # `for n in [2048, 4096]: check(n)`: a handful of passes set by hand, not steps
            elif found == TRAIN and isinstance(loop, (ast.For, ast.AsyncFor)) and over_optimizers(loop):
                found = None  # `for opt in self.optimizer: opt.step()`: one step's optimizers, not steps
            self._kinds[loop] = found
        return self._kinds[loop]

    def _loader(self, expr: ast.AST, loop: ast.AST) -> bool:
        fa = self.fa
        if isinstance(expr, ast.Call):
            return fa.values.is_loader(expr, {})
        if isinstance(expr, ast.Attribute):  # by its name, also `self.<attr>`: no class inference here
            return LOADER_NAME_RE.match(expr.attr) is not None
        if isinstance(expr, ast.Name):
            if kind_from_name(expr.id) == LOADER:
                return True
            # a name bound once, in the function or the module, to `DataLoader(...)`
            scope = fa.index.enclosing_scope(fa.index.ancestors(loop))
            held = self.refs.instance_of(expr.id, scope)
            return held is not None and held.rsplit(".", 1)[-1] in ("DataLoader", "StatefulDataLoader")
        return False

    def block_steps(self, node: ast.If) -> bool:
        """The `if`'s body calls a step (`if (i + 1) % accum == 0:` around
        `optimizer.step()` ends each training step; its body runs every step)."""
        if not self.may_step:
            return False
        return any(isinstance(n, ast.Call) and self.own_step(n) for stmt in node.body for n in walk(stmt))

    def is_hot(self, loop: ast.AST) -> bool:
        return self.kind(loop) is not None and (not self.contains_hot(loop) or self._steps_itself(loop))

    def _steps_itself(self, loop: ast.AST) -> bool:
        """A loop around a hot loop is hot itself when its own code runs a step
        on every pass (gradient accumulation: micro-batches inside, the step
        after them), not only under an `if` (poutyne's last step of an epoch
        whose batch count did not divide evenly), or when it iterates a loader."""
        if self.kind(loop) == TRAIN:
            return loop in self._loops_calling(self._unconditional_step, "_every_pass_step_loops")
        return isinstance(loop, (ast.For, ast.AsyncFor)) and self.kind(loop) == EVAL

    def _unconditional_step(self, call: ast.Call) -> bool:
        """`call` steps and nothing between it and its loop makes it conditional."""
        if not self.own_step(call):
            return False
        parents = self.fa.index.parents
        p = parents.get(call)
        while p is not None and not isinstance(p, LOOPS + SCOPES):
            if isinstance(p, (ast.If, ast.IfExp, ast.ExceptHandler, ast.BoolOp)):
                return False
            p = parents.get(p)
        return True

    def contains_hot(self, loop: ast.AST) -> bool:
        if loop not in self._contains:
            facts = self.fa.facts
            self._contains[loop] = any(self.kind(inner) is not None for inner in self._inner_loops().get(loop, ())) or (
                self.with_facts and loop in self._loops_calling(facts.drives, "_drive_loops")
            )
        return self._contains[loop]


    def _loops_calling(self, test: Callable[[ast.Call], bool], slot: str) -> Set[ast.AST]:
        """The loops with a call that passes `test` in their own code
        (`order.own_nodes`: their body and `else`, not nested loops, defs or
        lambdas), from one pass over the file's calls."""
        found = getattr(self, slot)
        if found is None:
            found = set()
            for call in self.fa.index.nodes_of(ast.Call):
                if test(call):
                    loop = self._own_loop(call)
                    while loop is not None:
                        found.add(loop)
                        # a hand-written sweep (`for optimizer_idx in [0, 1]:`, a GAN's two
                        # updates) is no loop of steps itself: the loop around it steps
                        loop = self._own_loop(loop) if is_literal_sweep(
                            loop, self.fa.index, self.fa.index.ancestors(loop)) else None
            setattr(self, slot, found)
        return found

    def _own_loop(self, node: ast.AST) -> Optional[ast.AST]:
        """The loop whose own code `node` is: the innermost loop around it,
        where `node` is in its body or `else` (not its header), with no def,
        lambda or class between."""
        parents = self.fa.index.parents
        child, p = node, parents.get(node)
        while p is not None:
            if isinstance(p, LOOPS):
                header = (p.test,) if isinstance(p, ast.While) else (p.target, p.iter)  # type: ignore[attr-defined]
                return None if any(child is h for h in header) else p
            if isinstance(p, SCOPES):
                return None
            child, p = p, parents.get(p)
        return None

    def _inner_loops(self) -> Dict[ast.AST, List[ast.AST]]:
        """loop -> the loops inside it at any depth (`order.nested_loops`)."""
        if self._inner is None:
            inner: Dict[ast.AST, List[ast.AST]] = {}
            parents = self.fa.index.parents
            for loop in self.fa.index.nodes_of(*LOOPS):
                p = parents.get(loop)
                while p is not None and not isinstance(p, SCOPES):
                    if isinstance(p, LOOPS):
                        inner.setdefault(p, []).append(loop)
                    p = parents.get(p)
            self._inner = inner
        return self._inner
