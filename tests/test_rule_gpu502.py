"""GPU502 detect-anomaly-enabled: spellings, literal True only, tests and
debug-gated code left alone."""

from __future__ import annotations

import pytest

from helpers import check_marked, lint, src

CODE = "GPU502"


def check(code: str, path: str = "train.py"):
    """Lines marked `# flag` are exactly the findings."""
    check_marked(src(code), CODE, path)


def test_import_forms():
    check(
        """
        import torch
        import torch.autograd as ag
        from torch import autograd
        from torch.autograd import set_detect_anomaly, detect_anomaly as da
        from torch.autograd.anomaly_mode import detect_anomaly

        torch.autograd.set_detect_anomaly(True)  # flag
        ag.set_detect_anomaly(mode=True)  # flag
        set_detect_anomaly(True, check_nan=False)  # flag
        torch.set_anomaly_enabled(True)  # flag
        with autograd.detect_anomaly():  # flag
            pass
        with da(check_nan=False):  # flag
            pass
        with detect_anomaly():  # flag
            pass
        with torch.autograd.set_detect_anomaly(True):  # flag
            pass
        """
    )


def test_only_a_literal_true_turns_it_on():
    check(
        """
        import torch
        torch.autograd.set_detect_anomaly(False)
        torch.autograd.set_detect_anomaly(mode=False)
        torch.autograd.set_detect_anomaly(args.detect_anomaly)
        torch.autograd.set_detect_anomaly(1 == 1)
        torch.set_anomaly_enabled(False)
        with torch.autograd.set_detect_anomaly(cfg.debug):
            pass
        torch.is_anomaly_enabled()
        set_detect_anomaly(True)  # not imported from torch
        """
    )


@pytest.mark.parametrize(
    "path,flagged",
    [
        ("train.py", True),
        ("src/pkg/trainer.py", True),
        ("testing_utils.py", True),
        ("tests/test_grads.py", False),
        ("tests/helpers.py", False),
        ("test/nan_check.py", False),
        ("test_grads.py", False),
        ("grads_test.py", False),
        ("conftest.py", False),
    ],
)
def test_test_files_are_skipped(path, flagged):
    text = "import pytest\nimport torch\ntorch.autograd.set_detect_anomaly(True)\n"
    assert bool(lint(text, codes=[CODE], path=path)) is flagged


def test_a_script_named_like_a_test_without_a_test_framework_is_read():
    text = "import torch\ntorch.autograd.set_detect_anomaly(True)\n"
    assert lint(text, codes=[CODE], path="test_grads.py") and not lint(text, codes=[CODE], path="tests/test_grads.py")


def test_debug_gated_calls_are_opt_in():
    check(
        """
        import os
        import torch

        def setup(args):
            if args.debug:
                torch.autograd.set_detect_anomaly(True)
            if args.detect_anomaly and args.rank == 0:
                torch.autograd.set_detect_anomaly(True)
            if os.environ.get("DEBUG_NAN") == "1":
                torch.autograd.set_detect_anomaly(True)
            if not args.no_anomaly:
                torch.autograd.set_detect_anomaly(True)  # flag
            if args.debug:
                pass
            else:
                torch.autograd.set_detect_anomaly(True)  # flag
            if args.epochs > 1:
                torch.autograd.set_detect_anomaly(True)  # flag
        """
    )


def test_lightning_trainer():
    check(
        """
        import lightning as L
        import pytorch_lightning as pl
        from lightning.pytorch import Trainer

        L.Trainer(detect_anomaly=True)  # flag
        pl.Trainer(max_epochs=3, detect_anomaly=True)  # flag
        Trainer(detect_anomaly=True)  # flag
        Trainer(detect_anomaly=False)
        Trainer(detect_anomaly=args.debug)
        pl.Trainer(max_epochs=3)
        """
    )
    check(
        """
        class Trainer:
            def __init__(self, detect_anomaly=False):
                self.detect_anomaly = detect_anomaly

        Trainer(detect_anomaly=True)
        """
    )


def test_messages():
    text = src(
        """
        import torch
        torch.autograd.set_detect_anomaly(True)
        with torch.autograd.detect_anomaly(check_nan=False):
            pass
        """
    )
    first, second = lint(text, codes=[CODE])
    assert "`set_detect_anomaly(True)`" in first.message and "NaN" in first.message
    assert "`detect_anomaly()`" in second.message and "check_nan=False" in second.message
