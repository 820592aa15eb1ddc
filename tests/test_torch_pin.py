"""The project's own torch pin sets the torch version the rules assume: its
lowest allowed version, read from the files a project declares torch in.
The config's `torch-version` beats it; it beats the installed torch."""

from __future__ import annotations

import pytest

from gpulint.engine.config import ConfigResolver
from gpulint.engine.torch_pin import PinFinder, lower_bound, pin_in

from cli_helpers import codes, invoke, write

# GPU302 flags a bare `zero_grad()` only before torch 2.0 (the default changed then), when asked
BARE_ZERO_GRAD = """\
import torch

def step(opt):
    opt.zero_grad()
"""


@pytest.mark.parametrize(
    "requirement, low",
    [
        ("torch", None),
        ("torch<2.0", None),
        ("torch==1.10.*", (1, 10)),
        ("torch>=1.8,<2", (1, 8)),
        ("torch >= 1.7.1", (1, 7, 1)),
        ("Torch~=1.12.0", (1, 12, 0)),
        ("torch!=1.12,>=1.9; python_version > '3.8'", (1, 9)),
        ("torch[opt]>=2.1", (2, 1)),
        ("torch==1.10.0+cu113", (1, 10, 0)),
        ("torch @ https://download.pytorch.org/whl/cu113/torch-1.10.0%2Bcu113-cp39-linux_x86_64.whl", (1, 10, 0)),
        ("torch ^1.13", (1, 13)),  # Poetry's caret
        ("pytorch=1.10.0=py3.9_cuda11.3_cudnn8.2.0_0", (1, 10, 0)),  # conda
        ("pytorch::pytorch=2.0", (2, 0)),
        ("torch 0.4.1", (0, 4, 1)),  # a version alone after the name is that version (TimeSeries' list)
        ("torch 1.10 or newer", None),
        ("torchvision==0.11", None),
        ("torch-geometric>=2.0", None),
        ("torch_scatter>=2", None),
        ("pytorch-cuda=11.8", None),
        ("numpy>=1.20", None),
    ],
)
def test_lower_bound(requirement, low):
    assert lower_bound(requirement) == low


@pytest.mark.parametrize(
    "name, text",
    [
        ("requirements.txt", "numpy\n# torch==0.4\ntorch==1.10.* \\\n    --hash=sha256:abc\n"),
        ("requirements-train.txt", "-f https://download.pytorch.org/whl/torch_stable.html\ntorch==1.10.0+cu113\n"),
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["numpy", "torch>=1.10,<3"]\n'),
        ("pyproject.toml", '[project]\nname = "x"\n[project.optional-dependencies]\ngpu = ["torch>=1.10,<3"]\n'),
        ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.9"\ntorch = {version = "^1.10", source = "pt"}\n'),
        ("requirements.txt", "numpy 1.14.3\ntorch 1.10.0\n"),
        ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.9"\ntorch = "1.10.0"\n'),
        # lock files: the torch they resolved (MTR's poetry.lock, through its rtdl dependency)
        ("poetry.lock", '[[package]]\nname = "numpy"\nversion = "1.24.0"\n\n[[package]]\nname = "torch"\nversion = "1.10.0"\n'),
        ("uv.lock", 'version = 1\n\n[[package]]\nname = "torch"\nversion = "1.10.0"\nsource = { registry = "https://pypi.org/simple" }\n'),
        ("Pipfile.lock", '{"_meta": {}, "default": {"torch": {"version": "==1.10.0"}}, "develop": {}}'),
        # a conda environment written out: explicit (BRIO's spec-file.txt) or exported
        ("spec-file.txt", "# platform: linux-64\n@EXPLICIT\nhttps://conda.anaconda.org/pytorch/linux-64/"
                          "pytorch-1.10.0-py3.9_cuda11.3_cudnn8.2.0_0.tar.bz2\n"),
        ("requirements.txt", "@EXPLICIT\nhttps://conda.anaconda.org/pytorch/linux-64/pytorch-1.10.0-py3.9_0.tar.bz2\n"),
        ("conda_env.txt", "# platform: linux-64\npython=3.9.7=h12debd9_1\npytorch=1.10.0=py3.9_cuda11.3_cudnn8.2.0_0\n"),
        ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch~=1.10.0\n"),
        ("setup.cfg", "[options.extras_require]\ntrain = torch==1.10.*; wandb\n"),
        ("setup.py", 'from setuptools import setup\nsetup(install_requires=["torch>=1.10,<2", "torchvision"])\n'),
        ("conda_env.yml", "dependencies:\n  - pytorch==1.10.1\n"),
        ("environment.yml", "channels:\n  - pytorch\ndependencies:\n  - python=3.9\n  - pytorch=1.10.0\n  - pip:\n    - tqdm\n"),
        # a conda environment under another name (unleashing-transformers' requirements.yml)
        ("requirements.yml", "name: proj\nchannels:\n  - defaults\ndependencies:\n  - python=3.8.5=h7579374_1\n"
                             "  - pip:\n    - torch==1.10.0+cu110\n"),
        # the set-up a README sends users to: an install script, a Dockerfile
        ("install_req.sh", "# pip install torch==2.4\npip install torch==1.10.0 torchvision --no-cache-dir -U | cat\n"),
        ("setup_env.sh", "conda install -y pytorch==1.10.1 torchvision cudatoolkit=11.3 -c pytorch && pip install -e .\n"),
        ("Dockerfile", "FROM pytorch/pytorch:1.10.0-cuda11.3-cudnn8-runtime\nRUN pip install -r requirements.txt\n"),
        # NVIDIA's NGC image of 21.09 ships torch 1.10
        ("Dockerfile", "FROM nvcr.io/nvidia/pytorch:21.09-py3\nRUN pip install -U numpy\n"),
        ("Dockerfile", "FROM ubuntu:22.04\nRUN apt-get update && pip install --no-cache-dir \\\n    'torch>=1.10,<2' numpy\n"),
        # the README's own set-up commands (NATSpeech: `pip install torch==1.9.0 # torch >= 1.9.0 recommended`)
        ("README.md", "# Install\n\n```bash\npip install torch==1.10.0 # torch >= 1.10.0 recommended\n```\n"),
        ("INSTALL.md", "Run `pip install torch==1.10.1` first.\n"),
        # a README's requirement list written as pins (NCF, NGCF)
        ("README.md", "## Requirements\n\t* python==3.6\n\t* pytorch==1.10.1\n"),
        ("README.md", "## Environment\n- numpy == 1.19\n- torch == 1.10.0\n"),
        # ... each pin a link (GDN: `* [Pytorch==1.5.1](https://pytorch.org/)`)
        ("README.md", "# Requirements\n* [Pytorch==1.10.1](https://pytorch.org/)\n* [PyG: torch-geometric==1.5.0](x)\n"),
        # ... or as requirement lines of their own, in a fenced block (LightGCL)
        ("README.md", "We develop in this environment:\n\n```\nPython version 3.9.12\ntorch==1.10.0+cu113\nnumpy==1.21.5\n```\n"),
        # a wheel index built for one torch (ibot's INSTALL.md, for mmcv-full)
        ("INSTALL.md", "pip3 install -f https://download.openmmlab.com/mmcv/dist/cu110/torch1.10.0/index.html mmcv-full==1.3.9\n"),
    ],
)
def test_each_declaration_file(tmp_path, name, text):
    write(tmp_path, name, text)
    version, source = pin_in(str(tmp_path))
    assert version[:2] == (1, 10)
    assert source.startswith(str(tmp_path / name) + ": ")


@pytest.mark.parametrize("text", [
    # prose says what the authors ran, not what the code needs (TD3, BLIP, stylegan2-pytorch)
    "This repository is based on PyTorch 0.4.1.\n",
    "The code has been tested with CUDA 10.2/CuDNN 7.6.5, PyTorch 1.9.0 and timm 0.4.9.\n",
    "- PyTorch 1.3.1\n",
    "The agents were trained using [PyTorch 1.2](https://github.com/pytorch/pytorch).\n",
    "* 64-bit Python 3.8 and PyTorch 1.9.0 (or later).\n",
    "- PyTorch >= 1.2\n",
    "| PyTorch 1.6+ |\n",
    "- **PyTorch 1.0:** RPN and Faster R-CNN\n",
    "* pytorch 1.12 and above\n",
    "Then, install PyTorch 1.5+ and torchvision.\n",
    "This code requires PyTorch 1.0 and python 3+.\n",
    "- PyTorch 2.0 or 2.1\n",
    "torch>=1.10\n",  # a minimum on a line of its own
    "Our torch==1.10 results are in the paper, but any torch works.\n",  # not at the start of a line
    # one environment per variant of the code (DRL-Pytorch's gym 0.1x and 0.2x versions): none for all
    "## gym 0.1x\n```\npytorch==1.11.0\n```\n## gym 0.2x\n```\npytorch==2.1.0\n```\n",
])
def test_a_readme_naming_torch_in_prose_or_a_minimum_declares_none(tmp_path, text):
    write(tmp_path, "README.md", text)
    assert pin_in(str(tmp_path)) is None


@pytest.mark.parametrize("name, text", [
    # YAML that is no conda environment: a dataset list, a CI workflow's job (no `name:`/`channels:`
    # beside a top-level `dependencies:`)
    ("datasets.yml", "ffhq: /data/ffhq\ntorch: 1.10.0\n"),
    ("ci.yml", "jobs:\n  test:\n    steps:\n      - torch==1.10.0\n"),
    ("deps.yaml", "dependencies:\n  - torch==1.10.0\n"),
])
def test_yaml_that_is_no_conda_environment_declares_none(tmp_path, name, text):
    write(tmp_path, name, text)
    assert pin_in(str(tmp_path)) is None


def test_a_set_up_script_counts_only_where_no_requirement_names_torch(tmp_path):
    write(tmp_path, "Dockerfile", "FROM pytorch/pytorch:1.5-cuda10.1-cudnn7-runtime\n")
    write(tmp_path, "requirements.txt", "numpy==1.19.2\n")
    assert pin_in(str(tmp_path))[0] == (1, 5)
    write(tmp_path, "requirements.txt", "numpy==1.19.2\ntorch>=1.5.0\n")  # any torch from 1.5 on
    assert pin_in(str(tmp_path)) is None
    write(tmp_path, "requirements.txt", "torch==1.13.1\n")
    assert pin_in(str(tmp_path))[0] == (1, 13, 1)


def test_a_commented_out_torch_requirement_is_the_torch_its_authors_ran(tmp_path):
    # minChatGPT: "# Download your own torch nightly" above `# torch==2.0.0.dev20230228+cu117`
    write(tmp_path, "requirements.txt",
          "numpy==1.24.2\n# Download your own torch nightly\n# torch==2.0.0.dev20230228+cu117\n")
    version, source = pin_in(str(tmp_path))
    assert version[:2] == (2, 0)
    assert source == f"{tmp_path / 'requirements.txt'} (commented out): torch==2.0.0.dev20230228+cu117"
    # a live requirement, even a bare minimum, says which torch the project takes
    write(tmp_path, "requirements.txt", "torch>=1.13\n# torch==2.0.0\n")
    assert pin_in(str(tmp_path)) is None
    # prose that names torch is no requirement
    write(tmp_path, "requirements.txt", "numpy\n# torch is installed by the Dockerfile\n")
    assert pin_in(str(tmp_path)) is None


def test_ngc_images_by_release():
    from gpulint.engine.torch_pin import ngc_torch

    assert ngc_torch(20, 12) == "1.8"  # flowtron's `FROM nvcr.io/nvidia/pytorch:20.12-py3`
    assert ngc_torch(23, 4) == "1.14" and ngc_torch(23, 5) == "2.0"
    assert ngc_torch(24, 1) == "2.2" and ngc_torch(24, 3) == "2.3"
    assert ngc_torch(18, 12) is None


def test_lowest_across_files_and_requirements_folder(tmp_path):
    write(tmp_path, "requirements.txt", "torch>=2.1\n")
    write(tmp_path, "requirements/legacy.txt", "torch==1.13.1\n")
    assert pin_in(str(tmp_path))[0] == (1, 13, 1)


@pytest.mark.parametrize(
    "name, text",
    [
        ("pyproject.toml", "[project\nbroken"),
        ("setup.cfg", "[options\ninstall_requires = torch>=1"),
        ("requirements.txt", "torch\ntorchvision>=0.11\n"),
        ("requirements.txt", "torch>=1.8\n"),  # a bare minimum: any newer torch too
        ("requirements.txt", "torch>=1.8,!=1.12.0\n"),
        ("environment.yml", "dependencies:\n  - pytorch\n"),
        ("install.sh", "pip install torch torchvision\n# pip install torch==1.8.0\n"),  # unpinned; a comment
        ("Dockerfile", "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN pip install torch>=1.8\n"),
        ("train.py", "# pip install torch==1.8.0\n"),  # not a set-up file
        ("Pipfile.lock", '{"default": '),
        ("poetry.lock", '[[package]\nname = "torch"\nversion = "1.8.0"\n'),
        ("uv.lock", '[[package]]\nname = "torchvision"\nversion = "0.9.0"\n'),
        ("spec-file.txt", "@EXPLICIT\nhttps://conda.anaconda.org/pytorch/linux-64/torchvision-0.9.0-py38_cu111.tar.bz2\n"),
        ("notes.txt", "pytorch=1.8.0=py3.8_0\n"),  # not a spec's name
    ],
)
def test_no_pin_from_unreadable_or_unbounded_files(tmp_path, name, text):
    write(tmp_path, name, text)
    assert pin_in(str(tmp_path)) is None


def test_nearest_pin_upward_stopping_at_the_repository_root(tmp_path):
    write(tmp_path, "requirements.txt", "torch==1.8\n")  # outside the repository: never read
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    write(tmp_path, "repo/requirements.txt", "torch~=1.12.0\n")
    write(tmp_path, "repo/tools/sub/setup.py", "setup(name='ext')\n")  # declares nothing: the search goes on
    write(tmp_path, "repo/vendored/requirements.txt", "torch==2.2\n")
    (tmp_path / "other" / ".git").mkdir(parents=True)
    finder = PinFinder()
    assert finder.for_dir(str(tmp_path / "repo" / "tools" / "sub"))[0] == (1, 12, 0)
    assert finder.for_dir(str(tmp_path / "repo" / "vendored"))[0] == (2, 2)
    assert finder.for_dir(str(tmp_path / "other")) is None


DEPRECATED_SCALER = """\
import torch

scaler = torch.cuda.amp.GradScaler()
"""


def test_the_pin_sets_the_version_the_rules_assume(tmp_path):
    # GPU401 rewrites to torch.amp, which the project's oldest torch must have
    (tmp_path / ".git").mkdir()
    write(tmp_path, "a.py", DEPRECATED_SCALER)
    write(tmp_path, "requirements.txt", "torch>=2.4,<3\n")
    assert codes(invoke(["check", "--select", "GPU401"], tmp_path).stdout) == ["GPU401"]
    write(tmp_path, "requirements.txt", "torch>=1.8,<2.6\n")
    assert codes(invoke(["check", "--select", "GPU401"], tmp_path).stdout) == []
    # a bare minimum says any torch from 1.8 on: the installed or newest one stands
    write(tmp_path, "requirements.txt", "torch>=1.8\n")
    assert codes(invoke(["check", "--select", "GPU401"], tmp_path).stdout) == ["GPU401"]
    # the config's torch-version wins over the pin
    write(tmp_path, "pyproject.toml", '[tool.gpulint]\ntorch-version = "2.4"\n')
    assert codes(invoke(["check", "--select", "GPU401"], tmp_path).stdout) == ["GPU401"]


def test_pin_applies_with_an_explicit_config_file(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, "a.py", BARE_ZERO_GRAD)
    write(tmp_path, "requirements.txt", "torch==1.13.1\n")
    write(tmp_path, "conf/gpulint.toml", 'select = ["GPU302"]\n')
    resolver = ConfigResolver(str(tmp_path / "conf" / "gpulint.toml"))
    s = resolver.for_path(str(tmp_path / "a.py"))
    assert s.torch_version == (1, 13, 1)
    assert "requirements.txt: torch==1.13.1" in s.torch_version_source
    assert resolver.for_path(str(tmp_path / "a.py")) is s  # one object per directory and pin


def test_show_settings_names_the_torch_source(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, "src/a.py", BARE_ZERO_GRAD)
    write(tmp_path, "setup.cfg", "[options]\ninstall_requires =\n    torch~=1.9\n")
    res = invoke(["check", "--show-settings", "src"], tmp_path)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.startswith("Resolved settings for: " + str(tmp_path / "src" / "a.py").replace(str(tmp_path) + "/", ""))
    assert 'torch-version = "1.9"' in out
    assert "the project's torch pin (" + str(tmp_path / "setup.cfg") + ": torch~=1.9)" in out
    write(tmp_path, "gpulint.toml", 'torch-version = "2.3"\n')
    out = invoke(["check", "--show-settings", "src"], tmp_path).stdout
    assert 'torch-version = "2.3"' in out and "gpulint.toml: torch-version = '2.3'" in out


def test_show_settings_says_a_bare_minimum_is_read_as_no_pin(tmp_path):
    """yolov9's `torch>=1.7.0` bounds nothing above: the installed torch
    stands, and --show-settings names the requirement it passed over."""
    (tmp_path / ".git").mkdir()
    write(tmp_path, "src/a.py", BARE_ZERO_GRAD)
    write(tmp_path, "requirements.txt", "numpy>=1.18\ntorch>=1.7.0\n")
    out = invoke(["check", "--show-settings", "src"], tmp_path).stdout
    assert "no torch pin found" in out
    assert str(tmp_path / "requirements.txt") + ": torch>=1.7.0 bounds torch only from below, which is read as no pin" in out
    write(tmp_path, "src/sub/b.py", BARE_ZERO_GRAD)  # a deeper directory reaches the same answer through the cache
    resolver = ConfigResolver(None)
    first = resolver.for_path(str(tmp_path / "src" / "a.py")).torch_version_source
    assert "torch>=1.7.0" in first
    assert "torch>=1.7.0" in resolver.for_path(str(tmp_path / "src" / "sub" / "b.py")).torch_version_source
    write(tmp_path, "setup.cfg", "[options]\ninstall_requires =\n    torch~=1.9\n")  # a real pin says nothing of it
    assert "bounds torch only" not in ConfigResolver(None).for_path(str(tmp_path / "src" / "a.py")).torch_version_source


def test_show_settings_without_files_is_an_error(tmp_path):
    res = invoke(["check", "--show-settings", "."], tmp_path)
    assert res.exit_code == 2
    assert "no Python files found" in res.stderr


@pytest.mark.parametrize("requirement", ["torch>=1.8", "torch>=1.8,<2", "torch==1.13.*"])
def test_a_pin_never_turns_on_the_bare_zero_grad_variant(tmp_path, requirement):
    # a pin sets the oldest torch, not the newest; the change measured no gain
    (tmp_path / ".git").mkdir()
    write(tmp_path, "a.py", BARE_ZERO_GRAD)
    write(tmp_path, "requirements.txt", requirement + "\n")
    assert codes(invoke(["check", "--select", "GPU302"], tmp_path).stdout) == []
    write(tmp_path, "gpulint.toml", 'torch-version = "1.13"\n')  # asked for: flagged
    assert codes(invoke(["check", "--select", "GPU302"], tmp_path).stdout) == ["GPU302"]
    write(tmp_path, "gpulint.toml", 'torch-version = "1.6"\n')  # no set_to_none before 1.7
    assert codes(invoke(["check", "--select", "GPU302"], tmp_path).stdout) == []
