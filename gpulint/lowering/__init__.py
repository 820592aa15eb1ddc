"""Parsing code written for a newer Python than the one running gpulint.

Used only after `ast.parse` has raised SyntaxError. LibCST parses the text;
guided by its node positions, what this Python's grammar lacks (PEP 695 and
696 type parameters and `type`, PEP 701 f-strings, `except*`, `match`) is
rewritten in place into older syntax of the same size, so every line and
UTF-8 column stays where it was; `ast.parse` reads the result, and the
rewritten statements are put back as the nodes a native parse gives (on a
Python without `ast.Match`, `ast.TypeAlias`: stand-ins with their fields).
docs/newer-syntax.md lists each rewrite and what is lost.
"""

from __future__ import annotations

import ast
import warnings
from typing import Optional, Tuple

from gpulint.lowering.errors import RUNNING, CannotLower, NotPython
from gpulint.lowering.statements import Lowering

__all__ = ["RUNNING", "CannotLower", "NotPython", "lower", "parse"]


def parse(text: str, path: str = "<unknown>", target: Optional[Tuple[int, int]] = None) -> ast.Module:
    """The module's tree as a native parse by a Python new enough would give
    it (see the module docstring for what differs). `target`: the grammar to
    lower to (default: this Python's; tests lower further to compare). The
    lowered text is kept as `tree.gpulint_lowered_text`, for tokenize."""
    low = Lowering(text, target or RUNNING)
    lowered = low.run()
    if not low.features and target is None:
        raise NotPython("nothing in it is newer syntax")
    tree = _parse_lowered(lowered, path, low)
    low.reshape(tree)
    tree.gpulint_lowered_text = lowered  # type: ignore[attr-defined]
    return tree


def lower(text: str, target: Optional[Tuple[int, int]] = None) -> str:
    """The text rewritten for this Python's grammar (same lines and columns);
    raises NotPython or CannotLower."""
    low = Lowering(text, target or RUNNING)
    return low.run()


def _parse_lowered(lowered: str, path: str, low: Lowering) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(lowered, filename=path, type_comments=False)
    except SyntaxError as exc:
        loc = (exc.lineno, exc.offset or 0) if exc.lineno else None
        raise CannotLower(f"{exc.msg or 'invalid syntax'} ({low.describe()})", loc)
