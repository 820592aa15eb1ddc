"""One file's model: the layers, wired together once per file.

A rule receives it as `ctx.analysis` and asks the layer that knows:

    fa.index      the tree: nodes, parents, ancestors, blocks     (index)
    fa.imports    qualified names through imports                 (names)
    fa.values     what an expression is                           (values)
    fa.host       which tensors live in host memory               (values)
    fa.steps      model forwards, backward calls, optimizer steps (control)
    fa.loops      hot loops, step loops, loops that fetch data    (control)
    fa.contexts   no_grad / autocast / timing contexts            (control)

It holds no analysis of its own.
"""

from __future__ import annotations

import ast

from gpulint.model.control.contexts import Contexts
from gpulint.model.control.loops import Loops
from gpulint.model.control.steps import Steps
from gpulint.model.index.tree import TreeIndex
from gpulint.model.names import ImportTable
from gpulint.model.values.host import HostValues
from gpulint.model.values.values import Values


class FileModel:
    """The layers of one file's model."""

    __slots__ = ("tree", "text", "path", "index", "imports", "values", "host", "steps", "loops", "contexts")

    def __init__(self, tree: ast.Module, text: str, path: str = "") -> None:
        self.tree = tree
        self.text = text
        self.path = path
        self.index = TreeIndex(tree, text, path)
        self.imports = ImportTable(tree)
        self.values = Values(self.index, self.imports)
        self.host = HostValues(self.values)
        self.steps = Steps(self.values)
        self.loops = Loops(self.values, self.steps)
        self.contexts = Contexts(self.imports)
