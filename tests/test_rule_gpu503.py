"""GPU503 deterministic-mode-in-training: spellings, one finding per function,
opt-in switches, training scripts only (and seeding helpers anywhere)."""

from __future__ import annotations

from helpers import check_marked, src

CODE = "GPU503"
TRAINS = """
def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
"""


def check(code: str, path: str = "train.py", trains: bool = True):
    """Lines marked `# flag` are exactly the findings."""
    check_marked(src(code) + ("\n\n" + src(TRAINS) if trains else ""), CODE, path)


def test_import_forms_and_spellings():
    check(
        """
        import torch
        import torch.backends.cudnn as cudnn
        from torch import use_deterministic_algorithms as uda
        from torch.backends import cudnn as cd

        torch.use_deterministic_algorithms(True)  # flag


        def a():
            uda(mode=True, warn_only=True)  # flag


        def b():
            cudnn.deterministic = True  # flag


        def c():
            cd.benchmark = False
            cd.deterministic = True  # flag


        def d():
            torch.backends.cudnn.deterministic = cudnn.benchmark = True  # flag
        """
    )


def test_one_finding_per_function():
    check(
        """
        import torch

        def set_seed(seed):
            torch.manual_seed(seed)
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True  # flag
            torch.use_deterministic_algorithms(True)

        torch.use_deterministic_algorithms(True)  # flag
        torch.backends.cudnn.deterministic = True
        """
    )


def test_only_literal_true_turns_it_on():
    check(
        """
        import torch
        torch.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(args.deterministic)
        torch.use_deterministic_algorithms(mode=cfg.deterministic)
        torch.backends.cudnn.deterministic = False
        torch.backends.cudnn.deterministic = args.deterministic
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(*flags)
        """
    )


def test_options_and_conditions_are_the_users_choice():
    check(
        """
        import torch
        from torch.backends import cudnn

        if args.deterministic:
            torch.use_deterministic_algorithms(True)
        if args.seed is not None:
            cudnn.deterministic = True
            cudnn.benchmark = False
        else:
            cudnn.benchmark = True
        if not args.fast:
            cudnn.deterministic = True
        x = torch.use_deterministic_algorithms(True) if args.repro else None
        if __name__ == "__main__":
            torch.use_deterministic_algorithms(True)  # flag
        """
    )
    check(
        """
        import torch

        def main():
            if torch.cuda.is_available() and torch.backends.cudnn.enabled:
                torch.backends.cudnn.deterministic = True  # flag
        """
    )


def test_opt_in_functions_and_their_callers():
    check(
        """
        import torch

        def enable_full_determinism(seed):
            torch.use_deterministic_algorithms(True)

        def configure_deterministic_mode():
            torch.backends.cudnn.deterministic = True

        def strict():
            torch.use_deterministic_algorithms(True)

        def loose():
            torch.use_deterministic_algorithms(True)  # flag

        def main(args):
            if args.strict:
                strict()
            loose()

        class Runner:
            def _repro(self):
                torch.use_deterministic_algorithms(True)

            def run(self, cfg):
                if cfg.deterministic:
                    self._repro()
        """
    )


def test_only_training_scripts_except_seed_helpers():
    check(
        """
        import torch

        torch.backends.cudnn.deterministic = True

        def configure():
            torch.use_deterministic_algorithms(True)

        def seed_everything(seed):
            torch.manual_seed(seed)
            torch.backends.cudnn.deterministic = True  # flag
        """,
        path="mylib/utils.py",
        trains=False,
    )
    # training evidence: an optimizer class, a trainer's fit, an optimizer step
    for evidence in (
        "optimizer = torch.optim.AdamW(params)",
        "trainer.fit(model)",
        "opt.step()",
    ):
        check(
            f"""
            import torch
            torch.use_deterministic_algorithms(True)  # flag
            {evidence}
            """,
            trains=False,
        )
    check(
        """
        import torch
        torch.use_deterministic_algorithms(True)
        scheduler = torch.optim.lr_scheduler.StepLR(opt, 10)
        """,
        trains=False,
    )


def test_lightning_trainer():
    check(
        """
        import lightning as L
        from pytorch_lightning import Trainer

        def main(cfg):
            L.Trainer(deterministic=True).fit(model)  # flag

        def other(cfg):
            Trainer(max_epochs=3, deterministic="warn")  # flag

        def switched(cfg):
            L.Trainer(deterministic=cfg.deterministic)
            L.Trainer(deterministic=False)
            L.Trainer(benchmark=True)
        """,
        trains=False,
    )


def test_test_files_and_local_lookalikes():
    code = """
        import torch
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        """
    check(code, path="tests/test_repro.py")
    check(code.replace("import torch", "import torch\n        import unittest", 1), path="test_repro.py")
    check(
        """
        import torch

        class Backends:
            deterministic = False

        cudnn = Backends()
        cudnn.deterministic = True
        settings.deterministic = True
        """
    )
