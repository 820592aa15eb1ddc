"""GPU401 deprecated-cuda-amp: every import form, the fix's exact output, fixpoints."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint

CODE = "GPU401"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def findings(code: str, **kw):
    return [(f.row, f.fix is not None) for f in lint(src(code), codes=[CODE], **kw)]


def fixed(code: str, **kw) -> str:
    return fix(src(code), codes=[CODE], **kw)


def assert_fixed(bad: str, good: str) -> None:
    out = fixed(bad)
    assert out == src(good)
    compile(out, "fixed.py", "exec")
    assert lint(out, codes=[CODE]) == []
    # a fixpoint: fixing again changes nothing
    assert fix(out, codes=[CODE]) == out


def test_several_calls_of_from_imports_move_together():
    bad = """
        from torch.cuda.amp import autocast, GradScaler

        scaler = GradScaler()
        eval_scaler = GradScaler(init_scale=1.0)


        @autocast()
        def forward(model, x):
            return model(x)


        for x, y in loader:
            with autocast():
                loss = forward(model, x)
            with autocast(dtype=torch.bfloat16):
                aux = forward(model, y)
        """
    assert [row for row, _ in findings(bad)] == [3, 4, 7, 13, 15]
    assert all(has_fix for _, has_fix in findings(bad))
    assert_fixed(
        bad,
        """
        from torch.amp import autocast, GradScaler

        scaler = GradScaler("cuda")
        eval_scaler = GradScaler("cuda", init_scale=1.0)


        @autocast("cuda")
        def forward(model, x):
            return model(x)


        for x, y in loader:
            with autocast("cuda"):
                loss = forward(model, x)
            with autocast("cuda", dtype=torch.bfloat16):
                aux = forward(model, y)
        """,
    )


def test_aliased_from_import_and_other_names_are_split_off():
    assert_fixed(
        """
        import torch
        from torch.cuda.amp import autocast as ac, custom_fwd

        with ac(enabled=True):
            y = model(x)
        """,
        """
        import torch
        from torch.cuda.amp import custom_fwd
        from torch.amp import autocast as ac

        with ac("cuda", enabled=True):
            y = model(x)
        """,
    )


def test_module_attribute_forms():
    assert_fixed(
        """
        import torch as th
        import torch.cuda.amp as tamp

        scaler = th.cuda.amp.GradScaler(
            init_scale=2.0**16,
            enabled=True,
        )
        with tamp.autocast(True, th.float16, False):
            pass
        """,
        """
        import torch as th
        import torch.amp as tamp

        scaler = th.amp.GradScaler(
            "cuda",
            init_scale=2.0**16,
            enabled=True,
        )
        with tamp.autocast("cuda", enabled=True, dtype=th.float16, cache_enabled=False):
            pass
        """,
    )


def test_from_torch_cuda_import_amp():
    assert_fixed(
        """
        import torch
        from torch.cuda import amp, nvtx

        scaler = amp.GradScaler(enabled=use_amp)
        with amp.autocast(enabled=use_amp):
            nvtx.range_push("forward")
        """,
        """
        import torch
        from torch.cuda import nvtx
        from torch import amp

        scaler = amp.GradScaler("cuda", enabled=use_amp)
        with amp.autocast("cuda", enabled=use_amp):
            nvtx.range_push("forward")
        """,
    )


def test_positional_autocast_arguments_become_keywords():
    # torch.amp.autocast's second parameter is dtype, not enabled
    assert fixed(
        """
        import torch
        with torch.cuda.amp.autocast(use_amp):
            pass
        """
    ) == src(
        """
        import torch
        with torch.amp.autocast("cuda", enabled=use_amp):
            pass
        """
    )


def test_gradscaler_positional_arguments_keep_their_order():
    assert fixed("import torch\ns = torch.cuda.amp.GradScaler(1024.0, 2.0)\n") == (
        'import torch\ns = torch.amp.GradScaler("cuda", 1024.0, 2.0)\n'
    )


def test_isinstance_check_blocks_the_gradscaler_fix_only():
    code = """
        import torch
        from torch.cuda.amp import GradScaler, autocast

        scaler = GradScaler()
        assert isinstance(scaler, GradScaler)
        with autocast():
            pass
        """
    assert findings(code) == [(4, False), (6, True)]
    assert fixed(code) == src(
        """
        import torch
        from torch.cuda.amp import GradScaler
        from torch.amp import autocast

        scaler = GradScaler()
        assert isinstance(scaler, GradScaler)
        with autocast("cuda"):
            pass
        """
    )


def test_other_uses_of_an_imported_name_keep_the_import():
    code = """
        import torch
        from functools import partial
        from torch.cuda.amp import autocast

        bf16_autocast = partial(autocast, dtype=torch.bfloat16)
        with autocast():
            pass
        """
    assert findings(code) == [(5, False), (6, True)]
    assert fixed(code) == src(
        """
        import torch
        from functools import partial
        from torch.cuda.amp import autocast

        bf16_autocast = partial(autocast, dtype=torch.bfloat16)
        with torch.amp.autocast("cuda"):
            pass
        """
    )


def test_stored_references_are_flagged_without_fix():
    code = """
        import contextlib
        import torch

        amp_autocast = torch.cuda.amp.autocast if use_amp else contextlib.nullcontext
        """
    assert findings(code) == [(4, False)]


def test_star_args_are_flagged_without_fix():
    code = """
        import torch
        with torch.cuda.amp.autocast(*amp_args):
            pass
        with torch.cuda.amp.autocast(**amp_kwargs):
            pass
        """
    assert findings(code) == [(2, False), (4, True)]


def test_no_torch_binding_means_no_fix_for_attribute_forms():
    code = """
        from torch import cuda
        with cuda.amp.autocast():
            pass
        """
    assert findings(code) == [(2, False)]


@pytest.mark.parametrize(
    "code",
    [
        # try/except import shim: the name is bound twice
        """
        try:
            from torch.amp import GradScaler
        except ImportError:
            from torch.cuda.amp import GradScaler
        scaler = GradScaler()
        """,
        # fallback in an except handler
        """
        import torch
        try:
            scaler = torch.amp.GradScaler("cuda")
        except AttributeError:
            scaler = torch.cuda.amp.GradScaler()
        """,
        # version / hasattr switches
        """
        import torch
        if hasattr(torch.amp, "GradScaler"):
            scaler = torch.amp.GradScaler("cuda")
        else:
            scaler = torch.cuda.amp.GradScaler()
        ctx = torch.amp.autocast("cuda") if TORCH_2_4 else torch.cuda.amp.autocast()
        """,
        # early return on new torch, the old API after it
        """
        import torch
        def amp_context(dtype):
            if torch.__version__ >= "2.4":
                return torch.amp.autocast("cuda", dtype=dtype)
            return torch.cuda.amp.autocast(dtype=dtype)
        """,
        # not calls: isinstance, strings, comments
        """
        import torch
        ok = isinstance(scaler, torch.cuda.amp.GradScaler)
        doc = "torch.cuda.amp.autocast() is deprecated"  # torch.cuda.amp.GradScaler()
        """,
        # a local function that shadows the imported name
        """
        from torch.cuda.amp import autocast
        def autocast(enabled=True):
            return None
        with autocast():
            pass
        """,
        # the modern API
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
        """,
    ],
)
def test_not_flagged(code):
    assert findings(code) == []


def test_torch_version_gate():
    code = """
        import torch
        scaler = torch.cuda.amp.GradScaler()
        """
    assert findings(code, torch_version=(2, 3)) == []
    assert findings(code, torch_version=(2, 4)) == [(2, True)]


def test_one_combined_fix_per_import_statement_is_a_fixpoint_with_other_rules():
    """All rules together: the file converges and stays valid."""
    code = src(
        """
        import torch
        from torch.cuda.amp import GradScaler, autocast

        scaler = GradScaler()
        for x, y in loader:
            with autocast():
                loss = criterion(model(x.cuda()), y.cuda())
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """
    )
    out = fix(code, unsafe=True)
    compile(out, "fixed.py", "exec")
    assert "from torch.amp import GradScaler, autocast" in out
    assert 'GradScaler("cuda")' in out and 'autocast("cuda")' in out
    assert CODE not in [f.code for f in lint(out)]


def test_torchscript_functions_are_flagged_without_fix():
    code = """
        import torch

        @torch.jit.script
        def scripted(x: torch.Tensor) -> torch.Tensor:
            with torch.cuda.amp.autocast():
                return x @ x
        with torch.cuda.amp.autocast():
            pass
        """
    assert findings(code) == [(5, False), (7, True)]


def test_custom_autograd_decorators_are_preview_behaviour():
    from gpulint.engine.lint import LintOptions, lint_source
    from helpers import LATEST_TORCH

    code = src("""
        import torch
        from torch.cuda.amp import custom_bwd, custom_fwd


        class F(torch.autograd.Function):
            @staticmethod
            @custom_fwd(cast_inputs=torch.float16)
            def forward(ctx, x):
                return x

            @staticmethod
            @custom_bwd
            def backward(ctx, g):
                return g


        if hasattr(torch.amp, "custom_fwd"):
            deco = torch.amp.custom_fwd(device_type="cuda")
        else:
            @torch.cuda.amp.custom_fwd
            def old(x):
                return x
    """)

    def rows(preview: bool, torch_version=LATEST_TORCH):
        options = LintOptions(codes=(CODE,), torch_version=torch_version, preview=preview)
        return [(f.row, f.fix) for f in lint_source(code, "snippet.py", options)]

    assert rows(preview=False) == []  # stable behaviour: calls of autocast and GradScaler only
    assert rows(preview=True) == [(7, None), (12, None)]  # not the version-guarded fallback
    assert rows(preview=True, torch_version=(2, 3)) == []
