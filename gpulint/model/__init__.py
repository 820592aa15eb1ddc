"""The semantic model of the code being linted, in layers.

Each layer imports only from the layers below it (an import-linter contract in
CI keeps it so; see docs/architecture.md):

1. `index`: the source and its tree, walked once: every node, parents, the
   statement blocks, source order.
2. `names`: imports and qualified names (`nn.DataParallel` is
   `torch.nn.DataParallel`).
3. `values`: what an expression is: a tensor (and where it lives), a Python
   number, a model, a DataLoader, an optimizer, ...
4. `control`: loops and what runs every step, guards, and the
   `no_grad` / `autocast` / timing contexts.
5. `project`: what crosses functions: the call graph and summaries.

`gpulint.model.file.FileModel` wires one file's layers together; it is what a
rule receives as `ctx.analysis`. Everything is computed lazily and cached per
file. Nothing here imports torch.
"""
