"""GPU203 cpu-tensor-then-moved: what counts as a move to an accelerator,
and the exact `device=` fix, including when it must not be offered."""

from __future__ import annotations

import textwrap

import pytest

from helpers import codes_of, fix, lint

CODE = "GPU203"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


# the rule only flags code that runs repeatedly: single lines are put in a loop
LOOP = "for step in range(10):\n"


def one(line: str, imports: str = "import torch"):
    findings = lint(f"{imports}\n{LOOP}    {line}\n", codes=[CODE])
    return findings


def fixed_line(line: str, unsafe: bool = True, imports: str = "import torch") -> str:
    out = fix(f"{imports}\n{LOOP}    {line}\n", codes=[CODE], unsafe=unsafe)
    body = out.split(LOOP, 1)[1]
    return textwrap.dedent(body).rstrip("\n")


@pytest.mark.parametrize(
    "before,after",
    [
        ("w = torch.ones(10).cuda()", 'w = torch.ones(10, device="cuda")'),
        ("w = torch.ones(10).cuda(1)", 'w = torch.ones(10, device="cuda:1")'),
        ('w = torch.ones(10).cuda("cuda:2")', 'w = torch.ones(10, device="cuda:2")'),
        ("w = torch.ones(10).cuda(non_blocking=True)", 'w = torch.ones(10, device="cuda")'),
        ("p = torch.arange(n).to(device)", "p = torch.arange(n, device=device)"),
        ("p = torch.arange(n).to(device=device)", "p = torch.arange(n, device=device)"),
        ("p = torch.arange(n).to(x.device, non_blocking=True)", "p = torch.arange(n, device=x.device)"),
        ("p = torch.arange(n).to(self.device)", "p = torch.arange(n, device=self.device)"),
        ("p = torch.arange(n).to(args.gpu)", "p = torch.arange(n, device=args.gpu)"),
        ("p = torch.arange(n).to(0)", "p = torch.arange(n, device=0)"),
        ('p = torch.arange(n).to(torch.device("cuda"))', 'p = torch.arange(n, device=torch.device("cuda"))'),
        ('p = torch.arange(n).to(f"cuda:{rank}")', 'p = torch.arange(n, device=f"cuda:{rank}")'),
        ("m = torch.zeros(n, dtype=torch.bool).to(device)", "m = torch.zeros(n, dtype=torch.bool, device=device)"),
        ('i = torch.zeros(n, device="cpu").cuda()', 'i = torch.zeros(n, device="cuda")'),
        ("e = torch.eye(3).to(device, torch.float16)", "e = torch.eye(3, device=device, dtype=torch.float16)"),
        ("e = torch.ones(3).to(device, dtype=x.dtype)", "e = torch.ones(3, device=device, dtype=x.dtype)"),
        ("t = torch.full((b,), 1.0, dtype=x.dtype).to(device)", "t = torch.full((b,), 1.0, dtype=x.dtype, device=device)"),
        ("n = torch.randn(b, z).to(device)", "n = torch.randn(b, z, device=device)"),
        ("r = torch.arange(0, 1, 0.1).cuda()", 'r = torch.arange(0, 1, 0.1, device="cuda")'),
        ("y = (torch.zeros(3).cuda() + 1).sum()", 'y = (torch.zeros(3, device="cuda") + 1).sum()'),
    ],
)
def test_fix(before, after):
    assert [f.code for f in one(before)] == [CODE]
    assert fixed_line(before) == after


@pytest.mark.parametrize(
    "line,why",
    [
        ("n = torch.randn(b, z).to(device)", "random generator"),
        ("n = torch.randperm(b).cuda()", "random generator"),
        ("r = torch.arange(0, 1, 0.1).cuda()", "float range"),
        ("r = torch.arange(n, dtype=torch.float32).cuda()", "float range"),
        ("r = torch.linspace(0, 1, 5).cuda()", "computed floats"),
    ],
)
def test_unsafe_when_the_numbers_may_differ(line, why):
    [finding] = one(line)
    assert finding.fix is not None and finding.fix.applicability == "unsafe", why
    assert fixed_line(line, unsafe=False) == line


@pytest.mark.parametrize(
    "line",
    [
        "p = torch.arange(n).cuda()",
        "p = torch.arange(n, dtype=torch.long).cuda()",
        "z = torch.zeros(b, 3).cuda()",
    ],
)
def test_safe_when_the_values_are_exact(line):
    [finding] = one(line)
    assert finding.fix.applicability == "safe"


@pytest.mark.parametrize(
    "line",
    [
        "g = torch.ones(3).cuda(gpu)",  # `.cuda(None)` is the current device; device=None is the CPU
        "a = torch.arange(10).to(device, torch.float32)",  # arange computed in another dtype differs
        "z = torch.zeros(3, dtype=torch.int64).to(device, torch.float16)",  # a second dtype
        "w = torch.zeros(3, requires_grad=True).cuda()",  # the result would become a leaf
        "w = torch.zeros(3, pin_memory=True).cuda()",  # only CPU tensors can be pinned
        "w = torch.zeros(3).to(device, memory_format=torch.channels_last)",
        "w = torch.zeros(3).to(device, dt)",  # an unknown second argument
    ],
)
def test_reported_without_fix(line):
    [finding] = one(line)
    assert finding.fix is None


@pytest.mark.parametrize(
    "line",
    [
        "w = torch.zeros(3, device=device)",
        "w = torch.zeros(3, device=device).cuda()",
        "w = torch.zeros_like(x).cuda()",
        "w = x.new_zeros(3).to(device)",
        "w = torch.zeros(3).to(torch.float16)",
        "w = torch.zeros(3).to(dtype=torch.float16)",
        "w = torch.zeros(3).to('cpu')",
        "w = torch.zeros(3).to(torch.device('cpu'))",
        "w = torch.zeros(3).to(other)",
        "w = torch.from_numpy(a).cuda()",
        # host data: with device= it is still built on the CPU and copied
        "t = torch.tensor([x0, 2.0]).cuda()",
        "t = torch.FloatTensor([1.0, 2.0]).cuda()",  # a legacy constructor given data (issue 19's measurement)
        "t = torch.as_tensor(arr, torch.float32).to(device)",
        "n = torch.tensor(batch_len).cuda()",
        "w = torch.load(p).to(device)",
        "w = np.zeros(3).to(device)",
        "w = zeros(3).cuda()",
        "w = torch.zeros(3, out=buf).cuda()",
        # drawn from a CPU generator: built with device= it would raise (peft's PVeRA, torchrl's VLA env)
        "eps = torch.randn(shape, generator=gen).to(device)",
        "i = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=self._rng).to(self.device)",
    ],
)
def test_not_flagged(line):
    assert one(line, imports="import numpy as np\nimport torch") == []


def test_a_table_of_literals_is_kept_on_the_device_not_copied_every_step():
    """A table of literal numbers copied in a loop is a constant: each copy
    from pageable memory blocks, where a buffer (or a table built once) would
    copy nothing. No `device=` fix: that still copies."""
    for line in ("t = torch.tensor([1.0, 2.0]).cuda()", "k = torch.tensor([[1., 4.], [4., 16.]]).to(x.device)",
                 "i = torch.from_numpy(np.array([1, 0, 0, 1]).astype(np.float32)).cuda()"):
        [finding] = one(line, imports="import numpy as np\nimport torch")
        assert finding.fix is None and "a constant" in finding.message, line


@pytest.mark.parametrize(
    "line,factory",
    [
        # a cast, arithmetic or an elementwise function between the factory and the move
        ("w = torch.zeros(3).float().cuda()", "zeros"),
        ("w = (torch.ones(n) * i).to(x.device)", "ones"),
        ("w = torch.exp(-k * torch.arange(half) / half).to(device=t.device)", "arange"),
        ("w = torch.arange(n).view(1, n).expand(b, -1).to(x.device)", "arange"),
    ],
)
def test_computed_on_the_cpu_then_moved(line, factory):
    [finding] = one(line, imports="import torch")
    assert finding.code == CODE and finding.fix is None
    assert f"`torch.{factory}()` builds a tensor on the CPU that is computed on there" in finding.message


@pytest.mark.parametrize(
    "line",
    [
        "w = (data * torch.arange(n)).cuda()",  # `data` a tensor of host data: it crosses either way
        "w = torch.arange(n).float().to(torch.float16)",  # a cast only
        "w = (torch.eye(n)[y.cpu()]).to(x.device)",  # the host waits for the GPU here anyway
        "w = torch.cat([torch.arange(n), x]).cuda()",  # x: data
    ],
)
def test_computed_look_alikes_not_flagged(line):
    code = (
        "import torch\n\n\ndef step(data: torch.Tensor, x: torch.Tensor, y, n):\n"
        f"    {line}\n    return w\n\n\nfor b in loader:\n    step(b, b, b, 3)\n"
    )
    assert lint(code, codes=[CODE]) == []
    # the same helper with a factory alone is flagged: the call from the loop makes it per-step code
    assert len(lint(code.replace(line, "w = torch.arange(n).float().cuda()"), codes=[CODE])) == 1


def test_import_forms():
    assert [f.code for f in one("w = zeros(3).cuda()", imports="from torch import zeros")] == [CODE]
    assert [f.code for f in one("w = T.ones(3).to(device)", imports="import torch as T")] == [CODE]


def test_multi_line_factory_with_trailing_comma():
    code = src(
        """
        import torch

        for step in range(10):
            noise = torch.randn(
                batch_size,
                nz,
                1,
                1,
            ).to(device, non_blocking=True)
        """
    )
    [finding] = lint(code, codes=[CODE])
    assert finding.row == 4
    assert fix(code, codes=[CODE], unsafe=True) == src(
        """
        import torch

        for step in range(10):
            noise = torch.randn(
                batch_size,
                nz,
                1,
                1,
                device=device,
            )
        """
    )


def test_move_on_its_own_line():
    code = src(
        """
        import torch

        def make_mask(n):
            return (
                torch.ones(n, n, dtype=torch.bool)
                .cuda()
            )
        """
    )
    assert fix(code, codes=[CODE]) == src(
        """
        import torch

        def make_mask(n):
            return (
                torch.ones(n, n, dtype=torch.bool, device="cuda")
            )
        """
    )


def test_comment_inside_the_removed_part_keeps_it_unfixed():
    code = src(
        """
        import torch

        def forward(self, n):
            return (
                torch.ones(n)  # all ones
                .cuda()
            )
        """
    )
    [finding] = lint(code, codes=[CODE])
    assert finding.fix is None


def test_test_files_are_skipped():
    code = "import torch\nfor i in range(3):\n    expected = torch.arange(4).to(device)\n"
    assert [f.code for f in lint(code, codes=[CODE])] == [CODE]
    assert lint(code, codes=[CODE], path="tests/test_ops.py") == []
    assert lint("import pytest\n" + code, codes=[CODE], path="scripts/test_ops.py") == []



FLAGGED_CONTEXTS = {
    "loop": "for b in loader:\n    w = torch.zeros(3).cuda()\n",
    "while": "while True:\n    w = torch.zeros(3).cuda()\n",
    "comprehension in a loop": "for b in loader:\n    ws = [torch.zeros(3).cuda() for _ in b]\n",
    "comprehension in forward": "class M:\n    def forward(self, xs):\n        return [torch.zeros(3).cuda() for x in xs]\n",
    "trace under a guard in a per-step function": (
        "def on_batch_end(model, step):\n    x = torch.zeros(3).cuda()\n"
        "    if step == 0:\n        torch.jit.trace(model, x)\n"
    ),
    "forward": "class M:\n    def forward(self, x):\n        return torch.zeros(3).cuda()\n",
    "backward": "class F:\n    @staticmethod\n    def backward(ctx, g):\n        return torch.eye(3).cuda()\n",
    "per-step name": "def training_step(batch):\n    return torch.zeros(3).cuda()\n",
    "mask helper": "def lengths_to_padding_mask(lens):\n    return torch.arange(9).cuda()\n",
    "called from a loop": "def helper():\n    return torch.zeros(3).cuda()\n\nfor b in loader:\n    helper()\n",
    "called from forward": (
        "class M:\n    def pos(self):\n        return torch.arange(3).cuda()\n\n"
        "    def forward(self, x):\n        return x + self.pos()\n"
    ),
}

ONE_OFF_CONTEXTS = {
    # the first pass of a decoding loop only (trlx's generate: `if peft and token == 0:`)
    "first pass of a loop": (
        "def generate(model, x, n, peft):\n    for token in range(n):\n"
        "        if peft and token == 0:\n            m = torch.ones(x.shape[0], 4).to(x.device)\n"
        "        x = model(x)\n    return x\n"
    ),
    "module-level comprehension": "ws = [torch.zeros(3).cuda() for _ in range(4)]\n",
    "comprehension in a plain function": (
        "def profile(model, shapes):\n    xs = [torch.randn(1, *s).cuda() for s in shapes]\n    return model(*xs)\n"
    ),
    "trace function called from a step loop": (
        "def graph(tb, model):\n    x = torch.zeros(1, 3).cuda()\n    with quiet():\n"
        "        tb.add_graph(torch.jit.trace(model, x))\n\n"
        "for step, b in enumerate(loader):\n    if want_graph:\n        graph(tb, model)\n"
    ),
    "trace function called from a per-step callback": (
        "def graph(model):\n    try:\n        x = torch.zeros(1, 3).to(device)\n"
        "        torch.onnx.export(model, x, 'm.onnx')\n    except Exception:\n        pass\n\n"
        "def on_train_batch_end(model, nb):\n    if nb == 0:\n        graph(model)\n"
    ),
    "module level": "w = torch.zeros(3).cuda()\n",
    "plain function": "def build_weights():\n    return torch.zeros(3).cuda()\n",
    "__init__ loop": "class M:\n    def __init__(self):\n        for i in range(3):\n            self.w = torch.zeros(3).cuda()\n",
    "init_*": "def init_buffers():\n    return torch.zeros(3).cuda()\n",
    "setup*": "def setup_step_buffers():\n    return torch.zeros(3).cuda()\n",
    "export*": "def export_model(m):\n    return m(torch.zeros(1, 3).cuda())\n",
    "fuse*": "def fuse_conv_bn(c):\n    return torch.zeros(3).cuda()\n",
    "dummy": "def make_dummy_batch():\n    return torch.zeros(3).cuda()\n",
    "loop iterable": "for x in torch.arange(3).cuda():\n    pass\n",
    "hasattr cache": (
        "class M:\n    def forward(self, x):\n        if not hasattr(self, 'c'):\n"
        "            self.c = torch.zeros(3).cuda()\n        return x\n"
    ),
    "optimizer state": (
        "class O:\n    def step(self):\n        for p in ps:\n            if len(s) == 0:\n"
        "                s['n'] = torch.zeros([]).to(p.device)\n"
    ),
    "called from __init__ loop": (
        "def helper():\n    return torch.zeros(3).cuda()\n\nclass M:\n    def __init__(self):\n"
        "        for i in range(3):\n            helper()\n"
    ),
    "called in a loop of main": "def run():\n    return torch.zeros(3).cuda()\n\ndef main():\n    for w in ws:\n        run()\n",
    # diffusers: a per-step-sounding helper that the pipeline calls once, before its loop
    "per-step name called once here": (
        "class Pipe:\n    def prepare_mask_latents(self, n):\n        return torch.zeros(n).to(self.device)\n\n"
        "    def __call__(self, n, steps):\n        mask = self.prepare_mask_latents(n)\n"
        "        for t in steps:\n            n = self.unet(n, t, mask)\n        return n\n"
    ),
}


FLAGGED_CONTEXTS["per-step name called in the loop here"] = (
    "class Pipe:\n    def prepare_mask_latents(self, n):\n        return torch.zeros(n).to(self.device)\n\n"
    "    def __call__(self, n, steps):\n        for t in steps:\n            mask = self.prepare_mask_latents(n)\n"
    "            n = self.unet(n, t, mask)\n        return n\n"
)
FLAGGED_CONTEXTS["per-step name never called here"] = (
    "class Pipe:\n    def prepare_mask_latents(self, n):\n        return torch.zeros(n).to(self.device)\n"
)
FLAGGED_CONTEXTS["per-step name called once from a loop-less method"] = (
    # stable-baselines3's gSDE: built once here, but other files call sample_weights per rollout
    "class D:\n    def sample_weights(self, s):\n        return torch.ones(3).to(s.device)\n\n"
    "    def build_net(self, s):\n        self.sample_weights(s)\n"
)
FLAGGED_CONTEXTS["forward called once here"] = (
    "class M:\n    def forward(self, x):\n        return x + torch.zeros(3).cuda()\n\n"
    "    def export(self):\n        return self.forward(1)\n"
)


@pytest.mark.parametrize("where", sorted(FLAGGED_CONTEXTS))
def test_flagged_where_it_runs_repeatedly(where):
    assert codes_of("import torch\n" + FLAGGED_CONTEXTS[where], codes=[CODE]) == [CODE], where


@pytest.mark.parametrize("where", sorted(ONE_OFF_CONTEXTS))
def test_not_flagged_where_it_runs_once(where):
    assert lint("import torch\n" + ONE_OFF_CONTEXTS[where], codes=[CODE]) == [], where


# --------------------------------------------------- legacy typed constructors
@pytest.mark.parametrize(
    "line,suggestion",
    [
        ("a = torch.FloatTensor(3, 4).cuda()", 'torch.empty(3, 4, dtype=torch.float32, device="cuda")'),
        ("a = torch.LongTensor(1).cuda().fill_(5)", 'torch.empty(1, dtype=torch.int64, device="cuda")'),
        ("a = torch.Tensor(x.size()).to(device)", "torch.empty(x.size(), device=device)"),
        ("a = torch.Tensor(*shape).to(x.device)", "torch.empty(*shape, device=x.device)"),
        ("a = torch.ByteTensor(len(xs)).to(device, non_blocking=True)", "torch.empty(len(xs), dtype=torch.uint8, device=device)"),
        ("a = torch.HalfTensor(2, x.size(0) * 2).to(device, torch.float32)", "torch.empty(2, x.size(0) * 2, dtype=torch.float32, device=device)"),
        ("a = torch.IntTensor(3).cuda(1)", 'torch.empty(3, dtype=torch.int32, device="cuda:1")'),
        ("a = torch.BoolTensor(int(k)).to(device)", "torch.empty(int(k), dtype=torch.bool, device=device)"),
        ("a = torch.DoubleTensor(b, n).to(device)", "torch.empty(b, n, dtype=torch.float64, device=device)"),
        ("a = torch.BFloat16Tensor(x.shape[0]).to(device)", "torch.empty(x.shape[0], dtype=torch.bfloat16, device=device)"),
        ("a = torch.CharTensor(x.numel()).to(device=device)", "torch.empty(x.numel(), dtype=torch.int8, device=device)"),
        ("a = torch.ShortTensor(x.shape).to(device)", "torch.empty(x.shape, dtype=torch.int16, device=device)"),
    ],
)
def test_legacy_constructor_with_sizes(line, suggestion):
    code = f"import torch\ndef step(x, device, b, n, k, xs, shape):\n    x = torch.relu(x)\n    for i in range(3):\n        {line}\n"
    findings = lint(code, codes=[CODE])
    assert [f.code for f in findings] == [CODE]
    assert f"use `{suggestion}` instead" in findings[0].message
    assert "uninitialised" in findings[0].message
    assert findings[0].fix is None  # reported without a fix
    assert fix(code, codes=[CODE], unsafe=True) == code


@pytest.mark.parametrize(
    "line,use",
    [
        ("a = torch.FloatTensor(3, 4).zero_().cuda()", "torch.zeros(3, 4, dtype=torch.float32, device=...)"),
        ("a = torch.FloatTensor(b, n).fill_(0).to(device)", "torch.zeros(b, n, dtype=torch.float32, device=...)"),
        ("a = torch.LongTensor(x.size(0)).fill_(k).to(device)",
         "torch.full((x.size(0),), k, dtype=torch.int64, device=...)"),
        ("a = torch.LongTensor(b).fill_(k).to(device)", None),  # one parameter: data or a size, left alone
        ("a = torch.Tensor(b, n).fill_(0.5).cuda()", "torch.full((b, n), 0.5, device=...)"),
        # drawn at random on the CPU (CQL's random actions): drawn on the GPU instead, from its
        # own generator (other numbers, so no fix)
        ("a = torch.FloatTensor(3, 4).normal_().cuda()", "torch.empty(3, 4, dtype=torch.float32, device=...).normal_()"),
        ("a = torch.FloatTensor(b * 10, n).uniform_(-1, 1).to(device)",
         "torch.empty(b * 10, n, dtype=torch.float32, device=...).uniform_(...)"),
    ],
)
def test_legacy_constructor_filled_then_moved(line, use):
    # deep-text-recognition-benchmark's attention decoder, on every forward
    code = f"import torch\ndef step(x, device, b, n, k):\n    for i in range(3):\n        {line}\n"
    findings = lint(code, codes=[CODE])
    if use is None:
        assert findings == []
        return
    assert [f.code for f in findings] == [CODE]
    assert f"use `{use}` instead" in findings[0].message
    assert findings[0].fix is None


def test_legacy_constructor_sizes_from_names_bound_in_the_function():
    code = src(
        """
        import torch

        def forward(x, batch_size):
            n = x.size(0)
            m = len(x) * 2
            for _ in range(3):
                a = torch.FloatTensor(n).cuda()
                b = torch.FloatTensor(m).cuda()
                c = torch.FloatTensor(batch_size).cuda()
        """
    )
    assert [f.row for f in lint(code, codes=[CODE])] == [7, 8]


@pytest.mark.parametrize(
    "line",
    [
        "a = torch.FloatTensor([1, 2]).cuda()",  # data: crosses from the host anyway
        "a = torch.Tensor((3, 4)).cuda()",  # a tuple is data, not a size
        "a = torch.LongTensor([[0, 1], [1, 2]]).to(device)",
        "a = torch.Tensor([v * 2 for v in xs]).cuda()",
        "a = torch.Tensor(np.zeros(3)).to(device)",
        "a = torch.Tensor(arr).cuda()",  # a name that could be data or a size
        "a = torch.ByteTensor(buffer.getbuffer()).to(device)",
        "a = torch.Tensor(np.zeros((2, 3)).shape).cuda()",  # a numpy shape is a tuple: data
        "a = torch.LongTensor().to(device)",  # empty: nothing copied
        "a = torch.FloatTensor(0).cuda()",
        "a = torch.FloatTensor(0, 3).cuda()",
        "a = torch.cuda.FloatTensor(3, 4)",  # built on the GPU
        "a = torch.FloatTensor(3, 4)",
        "a = torch.FloatTensor(3, 4).to(torch.float16)",
        "a = torch.FloatTensor(3, 4).to(x)",
        "a = torch.FloatTensor(3, 4).cpu()",
        "a = torch.FloatTensor(3, 4).pin_memory()",
        "a = torch.FloatTensor([1, 2]).fill_(0).cuda()",  # data, filled: crosses from the host anyway
    ],
)
def test_legacy_constructor_not_flagged(line):
    code = f"import torch\nimport numpy as np\ndef step(x, device, arr, xs, buffer):\n    for i in range(3):\n        {line}\n"
    assert lint(code, codes=[CODE]) == []


def test_legacy_constructor_in_one_off_code_and_test_files():
    once = "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        self.b = torch.FloatTensor(3).cuda()\n"
    assert lint(once, codes=[CODE]) == []
    looped = "import torch\nfor i in range(3):\n    b = torch.FloatTensor(3).cuda()\n"
    assert codes_of(looped, codes=[CODE]) == [CODE]
    assert lint(looped, codes=[CODE], path="tests/test_buffers.py") == []


def test_generator_none_is_no_generator():
    assert [f.code for f in one("n = torch.randn(b, z, generator=None).to(device)")] == [CODE]


@pytest.mark.parametrize(
    "before,after",
    [
        # diffusers' VQModel.decode: a size in redundant parentheses
        ("c = torch.zeros((h.shape[0])).to(h.device)", "c = torch.zeros((h.shape[0]), device=h.device)"),
        ("c = torch.zeros(((n))).cuda()", 'c = torch.zeros(((n)), device="cuda")'),
        ("c = torch.zeros((n),).cuda()", 'c = torch.zeros((n), device="cuda",)'),
        ("c = torch.zeros((n, 2)).cuda()", 'c = torch.zeros((n, 2), device="cuda")'),
    ],
)
def test_fix_after_a_parenthesised_argument(before, after):
    assert fixed_line(before) == after


def test_fix_after_a_parenthesised_argument_and_a_comment():
    code = "import torch\nfor step in range(10):\n    c = torch.zeros(\n        (n)  # rows\n    ).cuda()\n"
    out = fix(code, codes=[CODE], unsafe=True)
    assert "(n), device=\"cuda\"  # rows" in out
    compile(out, "x.py", "exec")


def test_a_check_script_run_once_or_over_a_few_literal_sizes_is_not_per_step_code():
    # Deformable-DETR's models/ops/test.py: named like per-step code ("forward"), but the
    # script calls it once, and the gradient check runs over a hand-written list of sizes
    text = src("""
        import torch

        def check_forward_equal_with_pytorch_double():
            value = torch.rand(1, 8).cuda()
            return value.sum()

        def check_gradient_numerical(channels):
            value = torch.rand(1, channels).cuda()
            return value.sum()

        def sample_noise(n):
            return torch.randn(n, 8).cuda()  # a per-step name that nothing in the file calls

        if __name__ == "__main__":
            check_forward_equal_with_pytorch_double()
            for channels in [30, 32, 64, 71, 1025, 2048, 3096]:
                check_gradient_numerical(channels)
            for step in range(1000):
                check_gradient_numerical(step)  # a real loop repeats it
    """)
    assert [f.row for f in lint(text, codes=[CODE])] == [8, 12]
    swept = text.replace("    for step in range(1000):\n        check_gradient_numerical(step)  # a real loop repeats it\n", "")
    assert swept != text
    assert [f.row for f in lint(swept, codes=[CODE])] == [12]


def test_a_later_pass_of_a_loop_still_repeats():
    code = (
        "import torch\n\n\ndef generate(model, x, n):\n    for token in range(n):\n"
        "        if token % 2 == 0:\n            m = torch.ones(x.shape[0], 4).to(x.device)\n"
        "        x = model(x)\n    return x\n"
    )
    assert len(lint(code, codes=[CODE])) == 1
