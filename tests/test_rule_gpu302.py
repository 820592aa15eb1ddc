"""GPU302 zero-grad-not-set-to-none: in-place zeroing is flagged, except in a
file that captures CUDA graphs, whose replays need the gradient buffers."""

from __future__ import annotations

import pytest
from helpers import codes_of

STEP = "import torch\n{setup}\ndef train_step(batch):\n    optimizer.zero_grad(set_to_none=False)\n"


def test_flagged_without_graphs():
    assert codes_of(STEP.format(setup=""), codes=["GPU302"]) == ["GPU302"]


@pytest.mark.parametrize(
    "setup",
    [
        "from tensordict.nn import CudaGraphModule\nstep = CudaGraphModule(train_step)",
        "g = torch.cuda.CUDAGraph()",
        "graphed = torch.cuda.make_graphed_callables(model, (x,))",
        "compiled = torch.compile(model, mode='reduce-overhead')",
    ],
)
def test_not_flagged_where_the_file_captures_cuda_graphs(setup):
    assert codes_of(STEP.format(setup=setup), codes=["GPU302"]) == []
