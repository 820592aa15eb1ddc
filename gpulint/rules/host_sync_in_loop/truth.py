"""GPU101's implicit reads: a tensor's truth value taken by `if`, `while`,
`assert` or `x if t else y` in a hot loop. A mixin of the rule class, which
provides `_in_covered_loop`, `_hot` and `report`."""

from __future__ import annotations

import ast

from gpulint.model.control.syncs import truth_operands
from gpulint.model.values.narrowing import keyed_by_text
from gpulint.rules.host_sync_in_loop.reads import candidate, is_device_tensor, snippet


class TruthTests:
    def visit_If(self, node: ast.If, ctx) -> None:
        self._truth_test(node, node.test, ctx.ancestors, ctx, "if {test}:")

    def visit_While(self, node: ast.While, ctx) -> None:
        # the test runs every iteration of this loop (and of the loop around it)
        self._truth_test(node, node.test, list(ctx.ancestors) + [node], ctx, "while {test}:")

    def visit_Assert(self, node: ast.Assert, ctx) -> None:
        # the test runs every time (the message only when it fails)
        self._truth_test(node, node.test, ctx.ancestors, ctx, "assert {test}")

    def visit_IfExp(self, node: ast.IfExp, ctx) -> None:
        # `best = loss if loss < best else best`: the test runs every time
        self._truth_test(node, node.test, list(ctx.ancestors) + [node], ctx, "... if {test} else ...")

    def _truth_test(self, stmt, test, ancestors, ctx, form: str) -> None:
        if not candidate(ctx, ancestors) or not self._in_covered_loop(ctx.analysis, ancestors):
            return
        analysis = ctx.analysis
        if not any(
            (is_device_tensor(t, ctx) and self._hot(analysis, t, analysis.index.ancestors(t)) is not None)
            or (_element_of_a_device_tensor(t, analysis)  # (one read per element, however little is queued)
                and self._hot(analysis, t, analysis.index.ancestors(t), per_element=True) is not None)
            for t in truth_operands(test) if not keyed_by_text(t, analysis)  # (a batch dict: its emptiness)
        ):
            return  # (each operand on its own: `step % 10 == 0 and torch.isnan(loss)` is periodic)
        if isinstance(stmt, ast.IfExp):
            span: ast.AST = test  # the condition inside the expression
        else:
            # the finding spans the header `if <test>`, not the whole block
            span = ast.Pass(
                lineno=stmt.lineno,
                col_offset=stmt.col_offset,
                end_lineno=test.end_lineno,
                end_col_offset=test.end_col_offset,
            )
        self.report(
            ctx,
            span,
            message=(
                f"`{form.format(test=snippet(ctx.node_text(test)))}` takes a tensor's truth value in a hot loop, "
                "which waits for the GPU every step (host-device sync)"
            ),
        )


def _element_of_a_device_tensor(t: ast.AST, analysis) -> bool:
    """An element a loop or comprehension takes from a device tensor (varibad's
    `[[0.0] if done_ else [1.0] for done_ in done]` over the CUDA `done`)."""
    return isinstance(t, ast.Name) and analysis.host.tensor_loop_element(t, analysis.index.ancestors(t)) is not None
