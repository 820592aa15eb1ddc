"""What a file's program tells it beyond the torch its folders pin: a
module torch has removed that a file imports (`from torch._six import inf`,
gone in 2.0) pins the program to the torch before the removal, and the
opt-in command-line flags one file defines (`params.py`) guard the loops of
the other files of the same program (`train.py`)."""

from __future__ import annotations

import json
import os

from cli_helpers import invoke, write

from gpulint.model.names import torch_ceiling

AMP = """\
import torch

def step(model, x):
    with torch.cuda.amp.autocast():
        return model(x.cuda())
"""


def _flagged(tmp_path, select: str) -> list:
    res = invoke(["check", "--preview", "--select", select, "--output-format", "json", "."], tmp_path)
    return sorted((os.path.relpath(d["filename"], tmp_path).replace("\\", "/"), d["location"]["row"])
                  for d in json.loads(res.stdout))


def test_a_removed_torch_module_pins_its_program_before_the_removal(tmp_path):
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "video/utils.py", "import torch\nfrom torch._six import inf\n\ndef norm(x):\n    return x.max() == inf\n")
    write(tmp_path, "video/engine.py", "import utils\n" + AMP)  # imports the module that needs torch < 2
    write(tmp_path, "video/main.py", "from engine import step\nimport utils\n\nstep(None, None)\n")
    write(tmp_path, "other/engine.py", AMP)  # a sibling that runs on the newest torch
    write(tmp_path, "other/main.py", "from engine import step\n\nstep(None, None)\n")
    flagged = _flagged(tmp_path, "GPU401")
    assert [f for f, _ in flagged if f.startswith("video")] == []
    assert [f for f, _ in flagged if f.startswith("other")] == ["other/engine.py"]


def test_only_a_top_level_unguarded_import_pins():
    import ast

    def ceiling(text):
        return torch_ceiling(ast.parse(text), text)

    assert ceiling("from torch._six import inf\n") == (1, 13)
    assert ceiling("import torch._six\n") == (1, 13)
    assert ceiling("from torch import _six\n") == (1, 13)
    assert ceiling("try:\n    from torch._six import inf\nexcept ImportError:\n    from math import inf\n") is None
    assert ceiling("def f():\n    from torch._six import inf\n") is None
    assert ceiling("from six import moves\n") is None


TRAIN = """\
import torch

def train(model, loader, opt, args):
    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        opt.step()
        if args.log_logit_mean:
            print(loss.mean().item())
"""
PARAMS = """\
import argparse

def parse_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--log-logit-mean", default=False, action="store_true", help="log the logit mean")
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args(argv)
"""


def test_an_opt_in_flag_of_another_file_of_the_program_guards_the_loop(tmp_path):
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "lm/params.py", PARAMS)
    write(tmp_path, "lm/train.py", TRAIN)
    write(tmp_path, "lm/main.py", "import sys\nfrom params import parse_args\nfrom train import train\n\n"
                                  "train(None, [], None, parse_args(sys.argv[1:]))\n")
    # a sibling program whose flag of the same name is not defined anywhere it runs
    write(tmp_path, "rl/train.py", TRAIN)
    write(tmp_path, "rl/main.py", "from train import train\n\ntrain(None, [], None, None)\n")
    flagged = _flagged(tmp_path, "GPU101")
    assert [f for f, _ in flagged if f.startswith("lm")] == []
    assert flagged == [("rl/train.py", 9)]


def test_the_flag_must_be_off_by_default_and_name_logging(tmp_path):
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "lm/params.py", PARAMS.replace('default=False, action="store_true"', 'default=True, action="store_true"'))
    write(tmp_path, "lm/train.py", TRAIN)
    write(tmp_path, "lm/main.py", "import sys\nfrom params import parse_args\nfrom train import train\n\n"
                                  "train(None, [], None, parse_args(sys.argv[1:]))\n")
    assert _flagged(tmp_path, "GPU101") == [("lm/train.py", 9)]


def test_a_file_gets_only_the_flags_its_tests_could_name():
    """The program's flags reach a file only where one of its `if` tests
    names one (`tests_flags`): a file that tests none is not read again
    for flags it never tests."""
    from gpulint.model.project.programs import Programs

    files = {
        "lm/params.py": (["params"], {"imports": [], "flags": ["log_logit_mean", "debug"]}),
        "lm/train.py": (["train"], {"imports": [], "tests_flags": ["log_logit_mean", "save_images"]}),
        "lm/model.py": (["model"], {"imports": []}),
        "lm/main.py": (["main"], {"imports": ["params", "train", "model"]}),
    }
    programs = Programs(files)
    assert programs.facts("lm/train.py") == {"opt_in": ["log_logit_mean"]}
    assert programs.facts("lm/model.py") == {}
    assert programs.facts("lm/params.py") == {}  # its own flags: read from its own text


MODEL_WITH_SELF_TEST = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        shift = torch.zeros((1, x.shape[1], 1)).type_as(x)
        return self.proj(x + shift)


if __name__ == "__main__":
    model = Block()
    print(sum(p.numel() for p in model.parameters()))
"""


def test_a_self_test_block_of_an_imported_module_does_not_make_it_a_cpu_program(tmp_path):
    """Uformer's `model.py` prints its model's size on the CPU in a `__main__`
    block that takes no input; `train.py` imports the model and trains it on
    the GPU. Alone, the file is a CPU program; in its project, the block is
    a self-test and the forward's factory builds on the CPU every call."""
    write(tmp_path, "model.py", MODEL_WITH_SELF_TEST)
    assert _flagged(tmp_path, "GPU204") == []
    write(tmp_path, "train.py", "import torch\nfrom model import Block\n\nmodel = Block().cuda()\n")
    assert _flagged(tmp_path, "GPU204") == [("model.py", 11)]
