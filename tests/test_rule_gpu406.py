"""GPU406 per-parameter-update-loop: per-step loops of in-place updates over
a model's tensors; loops that run once, do more than an in-place update, or
sit in tests are left alone; off by default."""

from __future__ import annotations

from cli_helpers import invoke
from helpers import check_marked, lint, src

CODE = "GPU406"


def check(code: str, path: str = "train.py"):
    """Lines marked `# flag` are exactly the findings."""
    check_marked(src(code), CODE, path)


TRAIN = """
    import torch


    def soft_update(target, net, tau):
        for p_t, p in zip(target.parameters(), net.parameters()):  # flag
            p_t.data.copy_(tau * p.data + (1 - tau) * p_t.data)


    def ema_buffers(ema, model):
        for b_ema, b in zip(ema.buffers(), model.buffers()):  # flag
            b_ema.copy_(b)


    def ema_state(ema, model, d):
        for v_ema, v in zip(ema.state_dict().values(), model.state_dict().values()):  # flag
            v_ema.mul_(d).add_(v.detach(), alpha=1 - d)


    def train(net, target, ema, loader, opt):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
            soft_update(target, net, 0.005)
            ema_buffers(ema, net)
            ema_state(ema, net, 0.999)
"""


def test_per_step_in_place_updates_over_a_models_tensors():
    check(TRAIN)


def test_a_project_pinned_below_torch_1_7_has_no_foreach_functions():
    """sweetice's requirements.txt pins `torch==1.0`: no `torch._foreach_*` to use."""
    text = src(TRAIN)
    assert [f.row for f in lint(text, codes=[CODE], path="train.py", torch_version=(1, 0))] == []
    assert len(lint(text, codes=[CODE], path="train.py", torch_version=(1, 7))) == 3


def test_once_other_work_or_foreach_is_not_flagged():
    check(
        """
        import torch


        def hard_update(target, net):
            for p_t, p in zip(target.parameters(), net.parameters()):
                p_t.data.copy_(p.data)


        def masked_update(target, net, tau):
            for (name, p_t), p in zip(target.named_parameters(), net.parameters()):
                if "norm" in name:
                    continue
                p_t.lerp_(p, tau)


        def new_tensors(target, net, tau):
            for p_t, p in zip(target.parameters(), net.parameters()):
                p_t.data = tau * p.data + (1 - tau) * p_t.data


        def foreach_update(target_params, params, tau):
            torch._foreach_lerp_(target_params, params, tau)


        def train(net, target, loader, opt, target_params, params):
            hard_update(target, net)
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                masked_update(target, net, 0.005)
                new_tensors(target, net, 0.005)
                foreach_update(target_params, params, 0.005)
        """
    )


def test_a_test_file_is_skipped():
    text = src(TRAIN)
    assert [f.row for f in lint(text, codes=[CODE], path="tests/test_ema.py")] == []


def test_off_by_default_even_in_preview(tmp_path):
    (tmp_path / "train.py").write_text(src(TRAIN), encoding="utf-8")
    res = invoke(["check", "--no-cache", "--preview", "--output-format", "concise", "train.py"], tmp_path)
    assert CODE not in res.stdout, res.stdout
    res = invoke(["check", "--no-cache", "--select", CODE, "--output-format", "concise", "train.py"], tmp_path)
    assert res.stdout.count(CODE) == 3, res.stdout
