"""Contexts: `no_grad` / `inference_mode` / `set_grad_enabled`, `autocast`,
and code that measures time."""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence

from gpulint.model.index.nodes import FUNCS, SCOPES
from gpulint.model.names import ImportTable
from gpulint.model.index.walk import child_nodes

CLOCK_FUNCS = frozenset(
    {
        "time.time",
        "time.perf_counter",
        "time.monotonic",
        "time.process_time",
        "time.time_ns",
        "time.perf_counter_ns",
        "time.monotonic_ns",
        "timeit.default_timer",
    }
)


class Contexts:
    """The grad, autocast and timing contexts of one file."""

    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports

    def grad_disabled(self, ancestors: Sequence[ast.AST]) -> bool:
        """Inside `torch.no_grad()` / `inference_mode()` / `set_grad_enabled(...)`,
        or a function decorated with them (or that turns grad off itself)."""
        for anc in ancestors:
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    if self.is_grad_off_ctx(item.context_expr):
                        return True
            elif isinstance(anc, FUNCS):
                for dec in anc.decorator_list:
                    if self.is_grad_off_ctx(dec):
                        return True
                for n in anc.body:
                    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
                        q = self.imports.call_qualname(n.value)
                        if q == "torch.set_grad_enabled":
                            return True
        return False

    def is_grad_off_ctx(self, expr: ast.AST) -> bool:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.imports.qualname(target)
        if q in ("torch.no_grad", "torch.inference_mode"):
            if q == "torch.inference_mode" and isinstance(expr, ast.Call) and expr.args:
                a = expr.args[0]
                return not (isinstance(a, ast.Constant) and a.value is False)
            return True
        if q == "torch.set_grad_enabled" and isinstance(expr, ast.Call):
            a = expr.args[0] if expr.args else None
            # a literal True turns grad on; anything else (False, `phase == "train"`) may turn it off
            return not (isinstance(a, ast.Constant) and a.value is True)
        return False

    def autocast_block(self, ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        """The innermost enclosing `with <autocast>` statement (not crossing a def)."""
        for anc in reversed(ancestors):
            if isinstance(anc, SCOPES):
                return None
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    if self.is_autocast_expr(item.context_expr):
                        return anc
        return None

    def is_autocast_expr(self, expr: ast.AST) -> bool:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.imports.qualname(target) or ""
        return q in ("torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast")

    def is_clock_call(self, call: ast.AST) -> bool:
        return isinstance(call, ast.Call) and self.imports.call_qualname(call) in CLOCK_FUNCS

    def is_timing_read(self, call: ast.AST) -> bool:
        """A host clock read (`is_clock_call`) or `start.elapsed_time(end)` on
        CUDA events: code that measures time."""
        if self.is_clock_call(call):
            return True
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "elapsed_time"
        )

    def timing_reads(self, node: ast.AST) -> List[ast.Call]:
        """The timing reads (`is_timing_read`) in `node`'s code, not looking
        into nested defs, lambdas or classes."""
        out: List[ast.Call] = []
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, ast.Call) and self.is_timing_read(cur):
                out.append(cur)
            for child in child_nodes(cur):
                if not isinstance(child, SCOPES):
                    stack.append(child)
        return out
