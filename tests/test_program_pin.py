"""The torch a program runs on: a module that runs with a vendored package
pinned to an old torch runs on that torch, so what needs a newer one is not
suggested there (LLaMA-Adapter's `imagebind_LLM`, which imports `ImageBind`,
whose requirements pin torch 1.13.0; `torch.amp.GradScaler("cuda")` needs
2.3). The pin reaches the files its package is imported by, through
imports either way, and no further: a sibling project that happens to
import a module of the same name does not take it."""

from __future__ import annotations

import json

from cli_helpers import invoke, write

AMP = """\
import torch

def step(model, x):
    with torch.cuda.amp.autocast():
        return model(x.cuda())
"""
SCALER = """\
import torch

class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()
"""


def _project(tmp_path):
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "requirements.txt", "torch\n")  # no version: the installed or newest torch
    write(tmp_path, "mm/ImageBind/requirements.txt", "torch==1.13.0\n")
    write(tmp_path, "mm/ImageBind/__init__.py", "")
    write(tmp_path, "mm/ImageBind/data.py", "import torch\n\ndef load(p):\n    return torch.load(p)\n")
    write(tmp_path, "mm/ImageBind/models.py", "import torch\n\ndef encoder():\n    return torch.nn.Linear(4, 4)\n")
    write(tmp_path, "mm/llama/__init__.py", "from .adapter import step\n")
    write(tmp_path, "mm/llama/adapter.py", "from ImageBind.models import encoder\n" + AMP)
    write(tmp_path, "mm/util/misc.py", SCALER)  # imports nothing pinned itself
    write(tmp_path, "mm/main.py", "import util.misc as misc\nfrom llama import step\n\n"
                                  "step(torch.nn.Linear(4, 4), torch.ones(4))\nmisc.NativeScaler()\n")
    # a sibling project, unpinned, that imports a `data` module of its own (absent here)
    write(tmp_path, "other/engine.py", AMP)
    write(tmp_path, "other/main.py", "from data.data import Dataset\nfrom engine import step\n\nstep(Dataset(), None)\n")


def test_a_program_runs_on_the_torch_its_vendored_package_pins(tmp_path):
    _project(tmp_path)
    res = invoke(["check", "--select", "GPU401", "--output-format", "json", "."], tmp_path)
    flagged = sorted((d["filename"].replace("\\", "/").split("/", 1)[-1] if "/" in d["filename"] else d["filename"])
                     for d in json.loads(res.stdout))
    assert [f for f in flagged if f.startswith("mm")] == []  # adapter, and misc through main
    assert any(f.endswith("other/engine.py") for f in flagged), flagged  # the sibling keeps the newest torch


def test_the_file_alone_keeps_the_newest_torch(tmp_path):
    """Without its program (the pinned package not linted with it), a file
    is judged by its own folders' pins, as before."""
    _project(tmp_path)
    res = invoke(["check", "--select", "GPU401", "--output-format", "concise", "mm/util/misc.py"], tmp_path)
    assert "GPU401" in res.stdout
