"""A file's model is freed by reference counting when the file is done, not
left to the cycle collector: the collector would first scan every node of
the tree and the model (about a tenth of the time of a file the project
reads, docs/performance.md). `FileModel.close()` breaks the links that
made cycles (the project facts bound to the model, analysis memos holding
objects that hold the model); `lint_module` closes the models it makes."""

from __future__ import annotations

import gc
import textwrap

from gpulint.engine.lint import LintOptions, ProjectInput, lint_module
from gpulint.model.file import FileModel
from gpulint.registry import all_rules

TRAIN = textwrap.dedent("""
    import torch


    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model.cuda()
            self.optimizer = optimizer

        def step(self, batch):
            loss = self.model(batch.cuda()).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss

        def fit(self, loader):
            total = 0
            for batch in loader:
                total += self.step(batch)
            return total
""")


def _models_left_in_cycles(**project) -> list:
    options = LintOptions(codes=tuple(all_rules()), preview=True)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = lint_module(TRAIN, "train.py", options, project=ProjectInput(("train",), **project))
        assert result.summary is not None  # the file was read with its summary: a model was made
        gc.collect()
        return [o for o in gc.garbage if isinstance(o, FileModel)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


def test_a_linted_file_leaves_no_model_to_the_cycle_collector():
    assert _models_left_in_cycles() == []


def test_a_file_read_for_its_summary_leaves_none_either():
    assert _models_left_in_cycles(summarize=True) == []


def test_without_close_the_model_would_be_cyclic_garbage(monkeypatch):
    """The check can fail: with `close` a no-op, the model is found in a cycle."""
    monkeypatch.setattr(FileModel, "close", lambda self: None)
    assert _models_left_in_cycles() != []
