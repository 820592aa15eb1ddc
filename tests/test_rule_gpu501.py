"""GPU501 inference-without-no-grad: which forwards count as eval-mode inference,
and each reason not to flag, checked against a twin that is flagged."""

from __future__ import annotations

from helpers import check_marked, lint, src

CODE = "GPU501"


def check(code: str, path: str = "evaluate.py"):
    """Lines marked `# flag` are exactly the findings."""
    check_marked(src(code), CODE, path)


def test_eval_switch_spellings():
    check(
        """
        import torch
        from torchvision import models

        def a(model, loader):
            model.eval()
            for x in loader:
                model(x)  # flag

        def b(model, loader):
            model.train(False)
            for x in loader:
                model.forward(x)  # flag

        def c(model, loader):
            model.train(mode=False)
            for x in loader:
                model.module(x)  # flag

        def d(model, loader):
            model.module.eval()
            for x in loader:
                model(x)  # flag

        def e(loader):
            net = models.resnet18().cuda().eval()
            for x in loader:
                net(x)  # flag

        def f(model, loader, training):
            model.train(training)
            for x in loader:
                model(x)
        """
    )


def test_last_switch_before_the_forward_decides():
    check(
        """
        def eval_then_train(model, loader):
            model.eval()
            for x in loader:
                model.train()
                model(x)

        def train_then_eval(model, loader):
            model.train()
            model.eval()
            for x in loader:
                model(x)  # flag

        def no_switch(model, loader):
            for x in loader:
                model(x)

        def other_model(teacher, student, loader):
            teacher.eval()
            for x in loader:
                student(x)
        """
    )


def test_only_forwards_in_loops():
    check(
        """
        def once(model, x):
            model.eval()
            return model(x)

        def header(model, batch):
            model.eval()
            for out in model(batch):
                print(out)

        def comprehensions(model, batches):
            model.eval()
            a = [model(b) for b in batches]  # flag
            b = {i: model(x) for i, x in enumerate(batches)}  # flag
            c = list(model(b) for b in batches)  # flag
            return a, b, c
        """
    )


def test_grad_off_contexts_and_their_twins():
    check(
        """
        import contextlib
        import torch
        from utils.torch_utils import smart_inference_mode

        @smart_inference_mode()
        def wrapped(model, loader):
            model.eval()
            for x in loader:
                model(x)

        @smart_inference_mode(False)
        def wrapped_off(model, loader):
            model.eval()
            for x in loader:
                model(x)  # flag

        def conditional(model, loader, train):
            model.train(train)
            model.eval()
            with (contextlib.nullcontext() if train else torch.no_grad()):
                for x in loader:
                    model(x)

        def bound_context(model, loader, train):
            model.eval()
            ctx = torch.no_grad() if not train else contextlib.nullcontext()
            with ctx:
                for x in loader:
                    model(x)

        def inference_mode_off(model, loader):
            model.eval()
            with torch.inference_mode(False):
                for x in loader:
                    model(x)  # flag

        def grad_back_on(model, loader):
            model.eval()
            with torch.no_grad():
                for x in loader:
                    with torch.enable_grad():
                        model(x)

        def statement(model, loader):
            torch.set_grad_enabled(False)
            model.eval()
            for x in loader:
                model(x)
        """
    )


def test_module_level_set_grad_enabled():
    check(
        """
        import torch
        torch.set_grad_enabled(False)
        model.eval()
        for x in loader:
            model(x)
        """
    )


def test_functions_called_under_no_grad_in_the_file():
    check(
        """
        import torch

        def evaluate(model, loader):
            model.eval()
            for x in loader:
                model(x)

        def evaluate_epoch(model, loader):
            return evaluate(model, loader)

        def report(model, loader):
            model.eval()
            for x in loader:
                model(x)  # flag

        class Runner:
            def validate(self, loader):
                self.model.eval()
                for x in loader:
                    self.model(x)

            def fit(self, loader):
                with torch.no_grad():
                    self.validate(loader)

        def main(model, loader):
            with torch.inference_mode():
                evaluate_epoch(model, loader)
            report(model, loader)
        """
    )


def test_gradients_needed():
    check(
        """
        import torch
        import torch.nn.functional as F

        def finetune_frozen_bn(model, loader, optimizer):
            model.eval()
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()

        def inner_loop_feeds_backward(model, groups):
            model.eval()
            for group in groups:
                outs = [model(x) for x in group]
                torch.stack(outs).sum().backward()

        def backward_after_the_loop(model, xs):
            model.eval()
            outs = [model(x) for x in xs]
            sum(o.sum() for o in outs).backward()

        def input_gradients(model, xs):
            model.eval()
            for x in xs:
                x.requires_grad_()
                (g,) = torch.autograd.grad(model(x).sum(), x)

        def step(model, batch, optimizer):
            model(batch).mean().backward()
            optimizer.step()

        def via_helper(model, loader, optimizer):
            model.eval()
            for batch in loader:
                step(model, batch, optimizer)
                model(batch)

        def timm_style_scaler(model, loader, optimizer, loss_scaler):
            model.eval()
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                loss_scaler(loss, optimizer, clip_grad=1.0)

        def sibling_train_loop_does_not_count(model, train_loader, val_loader, optimizer):
            for epoch in range(3):
                model.train()
                for x, y in train_loader:
                    F.mse_loss(model(x), y).backward()
                    optimizer.step()
                model.eval()
                for x, y in val_loader:
                    model(x)  # flag

        def periodic_eval_in_step_loop(model, loader, val_batches, optimizer):
            for step, (x, y) in enumerate(loader):
                model.train()
                F.mse_loss(model(x), y).backward()
                optimizer.step()
                if step % 1000 == 0:
                    model.eval()
                    for vx in val_batches:
                        model(vx)  # flag
        """
    )


def test_frozen_models():
    check(
        """
        def frozen(model, batches):
            model.eval()
            model.requires_grad_(False)
            return [model(b) for b in batches]

        def frozen_loop(model, batches):
            model.eval()
            for name, p in model.named_parameters():
                p.requires_grad = False
            return [model(b) for b in batches]

        def frozen_other(model, encoder, batches):
            model.eval()
            encoder.requires_grad_(False)
            return [model(b) for b in batches]  # flag

        class Scorer:
            def __init__(self, model):
                self.model = model
                self.model.requires_grad_(False)

            def score(self, batches):
                self.model.eval()
                return [self.model(b) for b in batches]
        """
    )


def test_message_names_the_model():
    text = src(
        """
        def predict(self, loader):
            self.net.eval()
            for x in loader:
                self.net(x)
        """
    )
    (finding,) = lint(text, codes=[CODE])
    assert "`self.net`" in finding.message and "inference_mode" in finding.message


def test_a_function_every_caller_of_another_file_calls_under_no_grad(tmp_path):
    """melgan: `validate()` in utils/validation.py runs the models in eval mode
    with no `no_grad` of its own; its only caller, in utils/train.py, calls it
    inside `with torch.no_grad():`. The project's call graph says so
    (`entered_grad_off`). One more caller without `no_grad` brings the
    finding back."""
    from test_project import check as check_project, write

    validation = """
        import torch


        def validate(generator, loader):
            generator.eval()
            total = 0.0
            for mel, audio in loader:
                fake = generator(mel.cuda())
                total += torch.nn.functional.l1_loss(fake, audio.cuda()).item()
            generator.train()
            return total
    """
    train = """
        import torch
        from utils.validation import validate


        def train(generator, opt, loader, valloader, epochs):
            for epoch in range(epochs):
                for mel, audio in loader:
                    loss = (generator(mel.cuda()) - audio.cuda()).abs().mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                with torch.no_grad():
                    validate(generator, valloader)
    """
    write(tmp_path / "a", {"utils/__init__.py": "", "utils/validation.py": validation, "utils/train.py": train})
    assert check_project(tmp_path / "a", "--no-cache", "--select", CODE, ".") == set()
    again = train + """

        def report(generator, valloader):
            return validate(generator, valloader)
    """
    write(tmp_path / "b", {"utils/__init__.py": "", "utils/validation.py": validation, "utils/train.py": again})
    assert check_project(tmp_path / "b", "--no-cache", "--select", CODE, ".") == {("validation.py", 9, CODE)}


def test_the_message_names_no_grad_where_the_torch_predates_inference_mode():
    code = src("""
        import torch

        def evaluate(model, loader):
            model.eval()
            for x in loader:
                print(model(x.cuda()).sum())
    """)
    [new] = lint(code, codes=["GPU501"])
    [old] = lint(code, codes=["GPU501"], torch_version=(1, 8))
    assert "torch.inference_mode()" in new.message
    assert "torch.no_grad()" in old.message and "inference_mode" not in old.message
