"""One file's model: the layers, wired together once per file.

A rule receives it as `ctx.analysis` and asks the layer that knows:

    fa.index      the tree: nodes, parents, ancestors, blocks     (index)
    fa.imports    qualified names through imports                 (names)
    fa.values     what an expression is                           (values)
    fa.host       which tensors live in host memory               (values)
    fa.steps      model forwards, backward calls, optimizer steps (control)
    fa.loops      hot loops, step loops, loops that fetch data    (control)
    fa.contexts   no_grad / autocast / timing contexts            (control)
    fa.facts      what the project knows about calls and callers  (project)

It holds no analysis of its own.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.model.control.contexts import Contexts
from gpulint.model.control.loops import Loops
from gpulint.model.control.steps import Steps
from gpulint.model.index.tree import TreeIndex
from gpulint.model.names import ImportTable
from gpulint.model.values.callfacts import NO_FACTS, CallFacts
from gpulint.model.values.host import HostValues
from gpulint.model.values.values import Values


class FileModel:
    """The layers of one file's model."""

    __slots__ = ("tree", "text", "path", "facts", "index", "imports", "values", "host", "steps", "loops", "contexts")

    def __init__(self, tree: ast.Module, text: str, path: str = "", facts: Optional[CallFacts] = None,
                 like: Optional["FileModel"] = None) -> None:
        """`like`: a model of the same tree read with other facts, whose
        index (the walk of the tree, not its answers) is reused."""
        self.tree = tree
        self.text = text
        self.path = path
        # what the project knows about calls that leave this file's functions
        self.facts = facts if facts is not None else NO_FACTS
        self.index = TreeIndex(tree, text, path, like.index if like is not None else None)
        self.imports = ImportTable(tree)
        self.values = Values(self.index, self.imports, self.facts)
        self.host = HostValues(self.values)
        self.steps = Steps(self.values, self.facts)
        self.loops = Loops(self.values, self.steps)
        self.contexts = Contexts(self.imports)
        self.facts.bind(self)

    def close(self) -> None:
        """Done with the model: the facts forget it (`CallFacts.unbind`) and
        the index its memos (which hold objects that hold the model), which
        breaks the reference cycles through it, so that reference counting
        frees the model and its tree as soon as the caller drops them. Left
        to the cycle collector, they would cost a scan of every node first
        (about a tenth of the time of a file the project reads)."""
        self.facts.unbind()
        self.index.forget()
