"""GPU204 factory-without-device-in-forward: where a factory in `forward`
is flagged, which device expression the fix uses, and when it has none."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint

CODE = "GPU204"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def module(forward_body: str, signature: str = "self, x", extra: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(forward_body).strip("\n"), " " * 8)
    return (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        f"    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n{extra}\n"
        f"    def forward({signature}):\n{body}\n"
    )


def findings(code: str):
    return lint(code, codes=[CODE])


def fixes(code: str):
    return [f.fix.message if f.fix else None for f in findings(code)]


def test_positions_in_forward():
    code = module(
        """
        pos = torch.arange(x.size(1))
        return self.proj(x) + pos[None, :, None]
        """
    )
    [f] = findings(code)
    assert f.row == 11 and f.fix.applicability == "safe"
    assert "pos = torch.arange(x.size(1), device=x.device)" in fix(code, codes=[CODE])


def test_annotated_tensor_parameter():
    code = module("mask = torch.ones(4, 4)\nreturn self.proj(x) * mask", signature="self, hidden: torch.Tensor")
    assert "torch.ones(4, 4, device=hidden.device)" in fix(code, codes=[CODE])


def test_uses_the_forwards_own_device_variable():
    code = module(
        """
        device = input_ids.device if input_ids is not None else inputs_embeds.device
        position_ids = torch.arange(n, dtype=torch.long)
        return position_ids
        """,
        signature="self, input_ids=None, inputs_embeds=None",
    )
    assert "torch.arange(n, dtype=torch.long, device=device)" in fix(code, codes=[CODE], unsafe=True)


def test_no_fix_when_the_first_argument_may_be_none():
    code = module(
        "ids = torch.arange(n)\nreturn self.proj(inputs_embeds) + ids",
        signature="self, input_ids=None, inputs_embeds=None",
    )
    assert fixes(code) == [None]


def test_no_fix_when_the_first_argument_is_a_dict():
    code = module(
        'rel = torch.arange(n)\nreturn self.proj(batch["x"]) + rel',
        signature="self, batch",
    )
    assert fixes(code) == [None]


def test_no_fix_without_tensor_evidence():
    code = module("steps = torch.arange(n_steps * 2)\nreturn steps", signature="self, n_steps")
    assert fixes(code) == [None]


def test_random_and_escaping_factories_get_an_unsafe_fix():
    code = module(
        """
        eps = torch.randn(x.shape)
        return self.proj(x) + eps
        """
    )
    [f] = findings(code)
    assert f.fix.applicability == "unsafe"
    code = module(
        """
        weights = torch.tensor([0.2, 0.8])
        return self.proj(x), weights
        """
    )
    [f] = findings(code)
    assert f.fix.applicability == "unsafe"  # callers see the returned tensor's device


def test_multi_line_factory_with_trailing_comma():
    code = module(
        """
        mask = torch.ones(
            x.size(0),
            x.size(1),
        )
        return self.proj(x) * mask[..., None]
        """
    )
    assert fix(code, codes=[CODE]).endswith(
        "        mask = torch.ones(\n"
        "            x.size(0),\n"
        "            x.size(1),\n"
        "            device=x.device,\n"
        "        )\n"
        "        return self.proj(x) * mask[..., None]\n"
    )


def test_tensor_from_a_literal_list_only():
    code = module(
        """
        a = torch.tensor(3.0)
        b = torch.tensor(lengths)
        c = torch.tensor([1.0, 2.0, 3.0])
        d = torch.as_tensor([len(s) for s in seqs])
        return self.proj(x) * a + b + c + d
        """,
        signature="self, x, lengths, seqs",
    )
    assert [f.row for f in findings(code)] == [13, 14]


def test_not_flagged():
    code = module(
        """
        def helper(n):
            return torch.zeros(n)
        a = torch.zeros(3, device=x.device)
        b = torch.zeros_like(x)
        c = x.new_zeros(3)
        d = torch.zeros(())
        e = torch.arange(3).to(x.device)
        f = torch.arange(3).tolist()
        if torch.rand(1) < 0.5:
            x = x.flip(0)
        for i in torch.arange(3):
            pass
        g = int(torch.randint(0, 10, (1,)))
        lengths = torch.tensor([len(s) for s in seqs])
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        return self.proj(x) + a + b + c + d + e + helper(1)
        """,
        signature="self, x, seqs",
        extra="        self.table = torch.zeros(10)\n",
    )
    assert findings(code) == []


def test_forward_that_works_on_the_host_on_purpose():
    code = module(
        """
        C = self.proj(x).cpu()
        idx = torch.arange(C.shape[0])
        return idx
        """
    )
    assert findings(code) == []


def test_only_nn_module_forwards():
    code = src(
        """
        import torch

        class Sampler:
            def forward(self, x):
                return x + torch.arange(len(x))

        class Model(torch.nn.Module):
            def step(self, x):
                return x + torch.arange(len(x))

            @staticmethod
            def forward(x):
                return x + torch.arange(x.size(0))
        """
    )
    assert findings(code) == []


def test_subclass_of_a_local_module_class():
    code = src(
        """
        import torch
        from torch import nn

        class Base(nn.Module):
            pass

        class Child(Base):
            def forward(self, x):
                return x * torch.ones(x.size(-1))
        """
    )
    assert [f.row for f in findings(code)] == [9]


def test_data_transform_modules_are_skipped_but_transformers_are_not():
    code = src(
        """
        import torch
        from torch import nn

        class RandomNoiseTransform(nn.Module):
            def forward(self, img):
                return img + torch.randn(img.shape)

        class Jitter(nn.Module):
            def forward(self, img):
                return img * torch.rand(img.shape[0])

        class VisionTransformer(nn.Module):
            def forward(self, x):
                return x + torch.arange(x.size(1))

        pipeline = T.Compose([T.ToTensor(), Jitter()])
        """
    )
    assert [f.row for f in findings(code)] == [14]


def test_host_only_branches_are_skipped():
    def body(lines):
        return (
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            + "".join("        " + ln + "\n" for ln in lines)
        )

    cpu_else = body(["if x.is_cuda:", "    m = torch.rand(4, device=x.device)", "else:", "    m = torch.rand(4)", "return x * m"])
    assert lint(cpu_else, codes=["GPU204"]) == []
    not_cuda = body(["if not x.is_cuda:", "    m = torch.ones(4)", "    return x * m", "return x"])
    assert lint(not_cuda, codes=["GPU204"]) == []
    flag = body(["on_gpu = x.is_cuda", "if on_gpu:", "    return x", "else:", "    return x * torch.ones(4)"])
    assert [f.code for f in lint(flag, codes=["GPU204"])] == ["GPU204"]  # an unrelated name: still checked
    named = body(["is_cuda_tensor = x.is_cuda", "if is_cuda_tensor:", "    return x", "else:", "    return x * torch.ones(4)"])
    assert lint(named, codes=["GPU204"]) == []
    tracing = body(["if self.onnx_trace:", "    s = torch.tensor([-1, 4])", "    return x.reshape(s)", "return x"])
    assert lint(tracing, codes=["GPU204"]) == []
    # the CUDA branch and the non-export path are still checked
    cuda_body = body(["if x.is_cuda:", "    m = torch.ones(4)", "    return x * m", "return x"])
    assert [f.code for f in lint(cuda_body, codes=["GPU204"])] == ["GPU204"]
    after = body(["if self.onnx_trace:", "    return x", "m = torch.ones(4)", "return x * m"])
    assert [f.code for f in lint(after, codes=["GPU204"])] == ["GPU204"]


def test_a_safe_fix_is_unsafe_when_another_tensor_of_the_forward_stays_on_the_cpu():
    """diffusers' CogView4 rotary embedding: the float inverse frequencies
    (an unsafe fix) and the int position ranges (safe on their own) meet in
    `torch.outer`. Moving only the ranges would make it mix devices."""
    code = module(
        """
        inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float32) / 8))
        seq = torch.arange(16)
        freqs = torch.outer(seq, inv_freq)
        return x + freqs.to(x.device)[None]
        """
    )
    found = findings(code)
    assert [(f.row, f.fix.applicability) for f in found] == [(11, "unsafe"), (12, "unsafe")]
    assert fix(code, codes=[CODE]) == code  # nothing is applied by default
    both = fix(code, codes=[CODE], unsafe=True)
    assert "torch.arange(0, 8, 2, dtype=torch.float32, device=x.device)" in both
    assert "torch.arange(16, device=x.device)" in both


def test_safe_fixes_that_move_every_cpu_tensor_together_stay_safe():
    code = module(
        """
        rows = torch.arange(4)
        cols = torch.arange(8)
        grid = rows[:, None] * 8 + cols[None, :]
        scalar = torch.zeros(())
        return self.proj(x) + grid.sum() + scalar
        """
    )
    assert [f.fix.applicability for f in findings(code)] == ["safe", "safe"]
    fixed = fix(code, codes=[CODE])
    assert "torch.arange(4, device=x.device)" in fixed and "torch.arange(8, device=x.device)" in fixed


def test_a_cpu_tensor_the_rule_leaves_alone_makes_the_fix_unsafe():
    # built from data, so not flagged, but it stays on the CPU and meets `pos`
    code = module(
        """
        table = torch.tensor(weights)
        pos = torch.arange(4)
        return x + table[pos].to(x.device)
        """,
        signature="self, x, weights",
    )
    [f] = findings(code)
    assert f.row == 12 and f.fix.applicability == "unsafe"


def test_not_flagged_with_a_cpu_generator_or_in_a_test_file():
    code = module("noise = torch.randn(x.shape, generator=self.gen)\nreturn x + noise.to(x.device)")
    assert findings(code) == []
    plain = module("noise = torch.randn(x.shape)\nreturn x + noise.to(x.device)")
    assert [f.code for f in findings(plain)] == [CODE]
    assert lint(plain, codes=[CODE], path="tests/test_model.py") == []


def test_a_random_in_place_fill_makes_the_fix_unsafe():
    """speechbrain's QuasiRNN zoneout: `torch.empty(...).bernoulli_(p)` is random,
    though `empty` is not."""
    code = module("mask = torch.empty(x.shape).bernoulli_(0.9).to(x.device)\nreturn x * mask")
    [f] = findings(code)
    assert f.fix.applicability == "unsafe"
    assert fix(code, codes=[CODE]) == code


@pytest.mark.parametrize(
    "body",
    [
        # slice bounds (speechbrain's SpectrogramDrop / Warping)
        "c = torch.randint(4, 8, (1,))[0]\nreturn x[:, :c]",
        "start = torch.randint(0, 8, (4,))\nfor j in range(4):\n    x[j, start[j]:] = 0\nreturn x",
        # sizes
        "n = torch.randint(1, 4, (1,))\nreturn x.new_zeros(n)",
        "n = torch.randint(1, 4, (1,))\nreturn x + torch.ones(n, device=x.device).sum()",
        "w = torch.randint(4, 8, (1,))[0]\nreturn F.interpolate(x, size=(w, 8))",
        "n = torch.randint(1, 4, (1,))\nreturn x.view(n, -1)",
        "m = torch.randint(1, 4, (3,))\nreturn x[: max(0, 8 - m.max())]",
        # a derived value iterated in Python (speechbrain's DropFreq)
        "freqs = torch.rand(3) * 0.5 + 0.1\nfor f in freqs:\n    x = x * f\nreturn x",
    ],
)
def test_values_read_on_the_host_are_not_flagged(body):
    assert findings(module(body).replace("import torch\n", "import torch\nimport torch.nn.functional as F\n")) == []


def test_a_use_after_the_name_is_rebound_to_a_moved_tensor_is_not_a_host_use():
    """DAC's quantizer dropout: built on the CPU every training step, moved, and
    only compared as an int in eval mode (where the name holds an int)."""
    code = module(
        """
        n_q = torch.ones((x.shape[0],)) * 4 + 1
        n_q = n_q.to(x.device)
        for i in range(4):
            if i >= n_q:
                break
        return x
        """
    )
    assert [f.row for f in findings(code)] == [11]
