"""The fix layer: turning findings' edits into changed files.

- `apply`: a source's fixes applied to a fixpoint, each round checked to parse;
- `notebook`: the same for a notebook's code cells, written back into its JSON;
- `files`: `gpulint fix` over files on disk (diffs, atomic writes, encodings);
- `noqa`: `gpulint check --add-noqa`, which writes suppression comments.

Below the front ends and the harness, above the engine (it lints to find
what to fix). The edits themselves are made by the rules (gpulint/edits.py).
"""
