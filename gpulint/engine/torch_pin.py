"""The torch version a project declares: its own pin, read without running it.

A rule that suggests an API (`fused=True`, `torch.amp`, TF32's switch) must
not suggest one that the project's supported torch lacks. Ruff reads
`requires-python` for its target version the same way: the *lowest* version
the project allows is the one its code must run on.

Read, in the nearest directory upward from a file that declares torch (up to
and including the repository's root, the folder holding `.git` or `.hg`):

- pyproject.toml: `[project] dependencies` and `optional-dependencies`, and
  Poetry's `[tool.poetry.*dependencies]` (`torch = "^1.10"`);
- requirements*.txt, and *.txt under a `requirements/` folder (a version
  alone after the name, `torch 0.4.1`, is that version exactly, as Poetry's
  `torch = "1.13.0"` is);
- lock files (`poetry.lock`, `uv.lock`, `pdm.lock`, `Pipfile.lock`): the
  torch they resolved (MTR's `poetry.lock` holds the torch 1.13.0 its
  `rtdl` dependency allows);
- conda environments written out as a spec (a .txt whose name has "spec",
  "conda" or "env" in it, or a requirements file): an explicit one
  (`conda list --explicit`, BRIO's `spec-file.txt`: the URL of
  `pytorch-1.8.0-py3.8_cuda11.1_cudnn8.0.5_0.tar.bz2`) or an export
  (`pytorch=1.8.0=py3.8_cuda11.1_cudnn8.0.5_0`);
- setup.cfg: `[options] install_requires` and `extras_require`;
- setup.py: string literals such as `"torch>=1.8"` (never run);
- conda environment files (environment.yml, env.yaml, conda_env.yml: a .yml
  or .yaml whose name has "env" or "conda" in it, or any other .yml or .yaml
  with a top-level `dependencies:` list and `name:` or `channels:`, as
  unleashing-transformers' `requirements.yml`): `pytorch=1.10` and pip lines;
- a README's or INSTALL page's requirement list written as pins (`*
  pytorch==1.0.1`, NCF's; a line `torch==1.12.0+cu113` of its own,
  LightGCL's, where no other such line names another torch: one
  environment per variant of the code sets none for all); not prose ("tested on PyTorch 1.10", a bare `-
  PyTorch 1.3.1`: what the authors ran, not what the code needs) nor a
  minimum (`PyTorch >= 1.7`);
- shell scripts (`install.sh`, any `*.sh`), Dockerfiles and the README or
  INSTALL page (`README.md`, `INSTALL.rst`): the packages of their `pip
  install` and `conda install` commands (`pip install torch==1.9.0`; a
  wheel index built for one torch, `pip install -f
  https://download.openmmlab.com/mmcv/dist/cu110/torch1.7.1/index.html
  mmcv-full`, is that torch), and a Dockerfile's PyTorch base image (`FROM
  pytorch/pytorch:1.5.1-cuda10.1-cudnn7-runtime` is `torch==1.5.1`, NVIDIA's
  `FROM nvcr.io/nvidia/pytorch:20.12-py3` the torch 1.8 it ships): the
  set-up a project's README sends its users to;
- a requirements file's commented-out torch line (`# torch==2.0.0.dev20230228`
  under "install your own torch nightly"): the torch its authors ran.
  These count only where no
  other declaration file of the folder names torch: a requirement, even a
  bare minimum, says which torch the project takes, and an image is one
  way to run it.

A requirement declares a version only when it bounds torch from above too
(`torch==1.10.*`, `torch>=1.8,<2`, `torch~=1.12`, Poetry's `^1.13`, conda's
`pytorch=1.10`, a wheel's URL): the project says which torch it runs on.
Its version is then the highest of its `==`, `~=`, `>=`, `>`, `^`, `~` and
conda `=` versions, and across requirements and files the lowest wins. A
bare minimum (`torch>=1.8`) says only that any torch from 1.8 on will do; in
research code it is most often stale (PyTorch-GAN's `torch>=0.4.0` beside
`torch.cuda.amp`), and reading it as the version the code runs on cost 75
of the labelled real problems in bench/labels-*: so it declares none, and
the installed or newest torch stands. Without a lower bound (`torch`,
`torch<2`) a requirement declares none either.
Files that cannot be read or parsed declare nothing: they are not gpulint's
config, so they never stop a run.

A file also runs on the torch of its program: the project's call graph
(`ProjectGraph.program_facts`) hands each linted file the lowest pin of the
files it imports, through imports, and of what the files importing it
import, where that is lower than its own (LLaMA-Adapter's `imagebind_LLM`
declares only `torch`, but imports its vendored `ImageBind`, whose
requirements pin `torch==1.13.0`). Only imports that Python could resolve
from the importer's folder count, so a sibling project does not take it.
The code pins too: a file that imports, at its top level and outside a
`try`, a module torch has removed (`from torch._six import inf`, gone in
2.0: MAE's and ConvNeXt's `util/misc.py`) runs on the torch before the
removal (1.13) only, and so does one that imports torchtext's legacy API
(`from torchtext.legacy.data import Field`, gone from the torchtext built
for torch 1.11: torch 1.10 at most), and that pin reaches its program the same way
(`names.torch_ceiling`).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import sys
from typing import Dict, Iterable, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Version = Tuple[int, ...]
# (lowest version allowed, where it was read: "requirements.txt: torch==1.10.*")
Pin = Tuple[Version, str]

MAX_BYTES = 1 << 20  # a declaration file larger than this is not read
_VCS_DIRS = (".git", ".hg")

# a requirement naming torch (not torchvision, torch-geometric, torch_scatter...)
_NAME_RE = re.compile(r"^\s*(?:[\w.-]+::)?(?:py)?torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*(.*)$", re.I)
_SPEC_RE = re.compile(r"(===|==|~=|>=|<=|!=|>|<|\^|~|=)\s*v?(\d+(?:\.\d+)*)")
_URL_VERSION_RE = re.compile(r"torch-(\d+(?:\.\d+)+)")
# a version alone after the name: an exact one (`torch 0.4.1`, `torch = "1.13.0"` in Poetry)
_BARE_VERSION_RE = re.compile(r"^\s*v?\d+(?:\.\d+)+\s*$")
_SETUP_PY_RE = re.compile(r"""["']\s*((?:py)?torch\s*(?:\[[^\]'"]*\])?\s*[<>=!~^][^"']*)["']""", re.I)
_LOWER_OPS = frozenset({"===", "==", "~=", ">=", ">", "^", "~", "="})
# specifiers that bound the version from above too: the project says which
# torch it runs on, not only the oldest it might
_BOUNDING_OPS = frozenset({"===", "==", "~=", "<", "<=", "^", "~", "="})


def lower_bound(requirement: str, bounded_only: bool = False) -> Optional[Version]:
    """The lowest torch version a requirement line allows, or None when it is
    not a torch requirement or has no lower bound; with `bounded_only`, also
    None for a bare minimum (`torch>=1.8`) that bounds nothing above."""
    m = _NAME_RE.match(requirement)
    if not m:
        return None
    rest = m.group(1)
    if rest.startswith("@"):  # a direct reference: torch @ https://.../torch-1.10.0+cu113-...whl
        url = _URL_VERSION_RE.search(rest)
        return _version(url.group(1)) if url else None
    rest = re.split(r"[;#]", rest, maxsplit=1)[0]
    if _BARE_VERSION_RE.match(rest):  # `torch 0.4.1` (a hand-written list), Poetry's `torch = "1.13.0"`
        rest = "==" + rest
    specs = _SPEC_RE.findall(rest)
    lows = [_version(v) for op, v in specs if op in _LOWER_OPS]
    if not lows:
        return None
    if bounded_only and not any(op in _BOUNDING_OPS for op, _ in specs):
        return None  # `torch>=1.8` alone: any torch from 1.8 on, the newest included
    return max(lows)


def _version(text: str) -> Version:
    return tuple(int(p) for p in text.split(".")[:3])


def _read_text(path: str) -> Optional[str]:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def _requirement_lines(text: str) -> Iterable[str]:
    """The requirement lines of a pip requirements file, with `\\` continuations
    joined and options (`-r`, `--hash`, `-f`) left out."""
    for line in text.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            yield re.split(r"\s--?\w", line, maxsplit=1)[0]


def _commented_requirements(text: str) -> Iterable[str]:
    """The commented-out torch lines of a pip requirements file
    (`# torch==2.0.0.dev20230228+cu117`): the torch its authors installed
    by hand."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            line = line.lstrip("#").strip()
            if _NAME_RE.match(line) is not None:
                yield re.split(r"\s--?\w|\s#", line, maxsplit=1)[0]


# a declaration read from comments (`_commented_requirements`): it counts as a set-up script's
COMMENTED = " (commented out)"


def _pyproject_requirements(text: str) -> Iterable[str]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return
    project = data.get("project")
    if isinstance(project, dict):
        yield from _strings(project.get("dependencies"))
        optional = project.get("optional-dependencies")
        if isinstance(optional, dict):
            for group in optional.values():
                yield from _strings(group)
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if isinstance(poetry, dict):
        tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
        groups = poetry.get("group")
        if isinstance(groups, dict):
            tables += [g.get("dependencies") for g in groups.values() if isinstance(g, dict)]
        for table in tables:
            if isinstance(table, dict):
                for name, spec in table.items():
                    for one in spec if isinstance(spec, list) else [spec]:
                        if isinstance(one, dict):
                            one = one.get("version")
                        if isinstance(one, str):
                            yield f"{name} {one}"


def _strings(value) -> Iterable[str]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, str))


def _setup_cfg_requirements(text: str) -> Iterable[str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values += [v for _, v in parser.items("options.extras_require")]
    for value in values:
        for line in re.split(r"[\n;]", value):
            if line.strip():
                yield line.strip()


def _setup_py_requirements(text: str) -> Iterable[str]:
    return (m.group(1) for m in _SETUP_PY_RE.finditer(text))


def _environment_requirements(text: str) -> Iterable[str]:
    for line in text.splitlines():
        m = re.match(r"^\s*-\s*(.+?)\s*$", line)
        if m:
            yield m.group(1).strip("'\"")


# a conda package's file in an explicit spec (`conda list --explicit > spec-file.txt`):
# `https://conda.anaconda.org/pytorch/linux-64/pytorch-1.8.0-py3.8_cuda11.1_cudnn8.0.5_0.tar.bz2`
_CONDA_FILE_RE = re.compile(r"/pytorch-(\d+(?:\.\d+)+)-[^/\s]*\.(?:tar\.bz2|conda)\s*$", re.M)
# the line that opens an explicit spec (`conda list --explicit`)
_EXPLICIT_RE = re.compile(r"^@EXPLICIT\s*$", re.M)


def _conda_spec_requirements(text: str) -> Iterable[str]:
    """A conda environment written out as a spec: an explicit one (`@EXPLICIT`,
    then one package file's URL a line) or an export (`conda list --export`,
    `pytorch=1.8.0=py3.8_cuda11.1_cudnn8.0.5_0` a line)."""
    if _EXPLICIT_RE.search(text):
        for m in _CONDA_FILE_RE.finditer(text):
            yield f"torch=={m.group(1)}"
        return
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and re.match(r"^[\w.-]+=[^=\s]+=\S+$", line):
            yield line


def _lock_requirements(text: str) -> Iterable[str]:
    """The torch a lock file resolved (`poetry.lock`, `uv.lock`, `pdm.lock`:
    a `[[package]]` table named torch; `Pipfile.lock`: JSON): the exact
    environment the project installs, as `torch==<version>`."""
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return
        for group in ("default", "develop"):
            entry = data.get(group, {}).get("torch") if isinstance(data.get(group), dict) else None
            version = entry.get("version") if isinstance(entry, dict) else None
            if isinstance(version, str):
                yield "torch" + version
        return
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return
    packages = data.get("package")
    for package in packages if isinstance(packages, list) else ():
        if isinstance(package, dict) and str(package.get("name", "")).lower() == "torch":
            version = package.get("version")
            if isinstance(version, str):
                yield f"torch=={version}"


# `pip install ...`, `pip3 install`, `python -m pip install`, `conda install ...` (up to `&&`, `;`, `|`)
# a wheel index built for one torch (OpenMMLab's `.../mmcv/dist/cu110/torch1.7.1/index.html`)
_WHEEL_INDEX_RE = re.compile(r"^https?://\S*/torch(\d+\.\d+(?:\.\d+)?)/")
_INSTALL_RE = re.compile(r"\b(?:pip3?|conda|mamba)\s+install\s+([^&;|#\n]*)")
# the official images: `pytorch/pytorch:1.5.1-cuda10.1-cudnn7-runtime`, `pytorch/pytorch:2.4.1-cuda12.4-...`
_IMAGE_RE = re.compile(r"^\s*FROM\s+(?:docker\.io/)?pytorch/pytorch:(\d+\.\d+(?:\.\d+)?)\b", re.I | re.M)


# NVIDIA's NGC images, by release (`nvcr.io/nvidia/pytorch:20.12-py3`): the
# torch they ship, by the month of the release from which it is that one or
# newer (from the NGC PyTorch release notes' support matrix; the images ship
# pre-releases, `1.8.0a0`, read as that version)
_NGC_IMAGE_RE = re.compile(r"^\s*FROM\s+nvcr\.io/nvidia/pytorch:(\d\d)\.(\d\d)\b", re.I | re.M)
_NGC_TORCH = (
    ((19, 1), "1.0"), ((19, 5), "1.1"), ((19, 9), "1.2"), ((19, 10), "1.3"), ((20, 1), "1.4"),
    ((20, 3), "1.5"), ((20, 6), "1.6"), ((20, 9), "1.7"), ((20, 10), "1.8"), ((21, 3), "1.9"),
    ((21, 7), "1.10"), ((21, 11), "1.11"), ((22, 4), "1.12"), ((22, 9), "1.13"), ((23, 1), "1.14"),
    ((23, 5), "2.0"), ((23, 6), "2.1"), ((23, 11), "2.2"), ((24, 2), "2.3"), ((24, 5), "2.4"),
    ((24, 8), "2.5"), ((24, 11), "2.6"), ((25, 3), "2.7"), ((25, 5), "2.8"), ((25, 8), "2.9"),
)


def ngc_torch(year: int, month: int) -> Optional[str]:
    """The torch of NGC's PyTorch image `<year>.<month>` (None before 19.01)."""
    found = None
    for since, version in _NGC_TORCH:
        if (year, month) >= since:
            found = version
    return found


def _installed_requirements(text: str) -> Iterable[str]:
    """The packages a shell script or Dockerfile installs with pip or conda
    (`pip install torch==1.9.0 torchvision`), and a Dockerfile's PyTorch base
    image as `torch==<its version>` (an official `pytorch/pytorch` image, or
    NVIDIA's NGC `nvcr.io/nvidia/pytorch` one)."""
    for m in _IMAGE_RE.finditer(text):
        yield f"torch=={m.group(1)}"
    for m in _NGC_IMAGE_RE.finditer(text):
        version = ngc_torch(int(m.group(1)), int(m.group(2)))
        if version is not None:
            yield f"torch=={version}"
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#"):
            continue
        for m in _INSTALL_RE.finditer(line):
            for word in m.group(1).split():
                word = word.strip("'\"`")
                index = _WHEEL_INDEX_RE.search(word)
                if index is not None:  # `-f https://download.openmmlab.com/mmcv/dist/cu110/torch1.7.1/index.html`
                    yield f"torch=={index.group(1)}"
                elif word and not word.startswith("-"):
                    yield word


# a README's requirement list written as pins (`* pytorch==1.0.1`, `- torch = 1.3.1`, a link
# `* [Pytorch==1.5.1](https://pytorch.org/)`, or a
# requirement line of its own, `torch==1.12.0+cu113` in a fenced block of LightGCL's README):
# the torch the code runs on. Prose does not pin: "tested on PyTorch 1.10" or a bare
# `- PyTorch 1.3.1` says what the authors ran, and users run such code on newer torch
# (labelled real problems in bench/labels-* stand on it: TD3, BLIP, stylegan2-pytorch)
_README_PIN_RE = re.compile(
    r"^[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+[`\[]?(?:py)?[Tt]orch[ \t]*(==|=)|(?:py)?[Tt]orch[ \t]*(==))"
    r"[ \t]*v?(\d+\.\d+(?:\.\d+)?)(?![\d.]*[ \t]*[,;]?[ \t]*[<>])",
    re.I | re.M)


def _readme_requirements(text: str) -> Iterable[str]:
    """What a README or INSTALL page declares: its set-up commands
    (`_installed_requirements`), and a requirement list written as pins
    (`_README_PIN_RE`), as `torch==<version>`."""
    yield from _installed_requirements(text)
    bare = set()
    for m in _README_PIN_RE.finditer(text):
        if m.group(2):  # a requirement line of its own (`torch==1.12.0+cu113`)
            bare.add(m.group(3))
        else:
            yield f"torch=={m.group(3)}"
    if len(bare) == 1:  # (lines naming several: one environment per variant of the code, none for all)
        yield f"torch=={bare.pop()}"


def _is_install_script(name: str) -> bool:
    """A shell script, a Dockerfile, or the README or INSTALL page whose
    set-up commands a user copies (`pip install torch==1.9.0`)."""
    low = name.lower()
    return (low.endswith((".sh", COMMENTED)) or low.startswith("dockerfile") or low.endswith(".dockerfile")
            or _is_readme(low))


def _is_readme(name: str) -> bool:
    """The README or INSTALL page (`README.md`, `INSTALL.rst`)."""
    low = name.lower()
    return low.startswith(("readme", "install")) and low.endswith((".md", ".rst"))


# a conda environment file, whatever its name: a top-level `dependencies:` list, and `name:` or
# `channels:` (`_is_conda_environment`)
_DEPENDENCIES_RE = re.compile(r"^dependencies[ \t]*:[ \t]*$", re.M)
_CONDA_KEY_RE = re.compile(r"^(?:name|channels)[ \t]*:", re.M)


def _is_conda_environment(text: str) -> bool:
    return bool(_DEPENDENCIES_RE.search(text)) and bool(_CONDA_KEY_RE.search(text))


# lock files: the environment a project's tool resolved (`_lock_requirements`)
_LOCK_FILES = frozenset({"poetry.lock", "uv.lock", "pdm.lock", "Pipfile.lock"})


def _declarations(directory: str, names: List[str]) -> Iterable[Tuple[str, Iterable[str]]]:
    """(file name relative to `directory`, its requirement strings) for each
    declaration file in the directory."""
    readers = {
        "pyproject.toml": _pyproject_requirements,
        "setup.cfg": _setup_cfg_requirements,
        "setup.py": _setup_py_requirements,
    }
    for name in sorted(names):
        reader = readers.get(name)
        if reader is None and name.startswith("requirements") and name.endswith(".txt"):
            reader = _requirement_lines
        if reader is None and name.endswith((".yml", ".yaml")) and ("env" in name.lower() or "conda" in name.lower()):
            reader = _environment_requirements
        if reader is None and name.endswith((".yml", ".yaml")) and not name.startswith("."):
            text = _read_text(os.path.join(directory, name))
            if text is not None and _is_conda_environment(text):  # (a conda environment under another name:
                yield name, _environment_requirements(text)  # unleashing-transformers' `requirements.yml`)
            continue
        if reader is None and name in _LOCK_FILES:
            reader = _lock_requirements
        if reader is None and name.endswith(".txt") and any(w in name.lower() for w in ("spec", "conda", "env")):
            reader = _conda_spec_requirements
        if reader is None and _is_install_script(name):
            reader = _readme_requirements if _is_readme(name) else _installed_requirements
        if reader is None:
            continue
        text = _read_text(os.path.join(directory, name))
        if text is not None:
            if reader is _requirement_lines and _EXPLICIT_RE.search(text):
                reader = _conda_spec_requirements  # (`conda list --explicit > requirements.txt`)
            yield name, reader(text)
            if reader is _requirement_lines and "torch" in text:
                yield name + COMMENTED, _commented_requirements(text)
    if "requirements" in names:
        sub = os.path.join(directory, "requirements")
        try:
            inner = sorted(n for n in os.listdir(sub) if n.endswith(".txt"))
        except OSError:
            inner = []
        for name in inner:
            text = _read_text(os.path.join(sub, name))
            if text is not None:
                yield f"requirements/{name}", _requirement_lines(text)


def pin_in(directory: str, names: Optional[List[str]] = None) -> Optional[Pin]:
    """The lowest torch version declared by the files of one directory."""
    return _scan(directory, names)[0]


def _scan(directory: str, names: Optional[List[str]] = None) -> Tuple[Optional[Pin], Optional[str]]:
    """One read of the directory's declaration files: its pin (`pin_in`), and
    the first requirement that bounds torch only from below (`torch>=1.7.0`),
    which is read as no pin: named by `--show-settings`, so a user sees why
    the installed torch stands."""
    if names is None:
        try:
            names = os.listdir(directory)
        except OSError:
            return None, None
    best: Dict[bool, Pin] = {}  # the lowest pin of the requirements (False), of set-up scripts (True)
    declared = False  # a requirement names torch, pinned or not
    bare: Optional[str] = None
    for name, requirements in _declarations(directory, names):
        script = _is_install_script(name)
        for req in requirements:
            declared = declared or (not script and _NAME_RE.match(req) is not None)
            low = lower_bound(req, bounded_only=True)
            if low is not None and (script not in best or low < best[script][0]):
                best[script] = (low, f"{os.path.join(directory, name)}: {' '.join(req.split())}")
            elif low is None and bare is None and not script and lower_bound(req) is not None:
                bare = f"{os.path.join(directory, name)}: {' '.join(req.split())}"
    # a set-up script's or Docker image's torch is the project's only where its
    # requirements say nothing of torch (DETR's `torch>=1.5.0` beside a Dockerfile
    # `FROM pytorch/pytorch:1.5`: any torch from 1.5 on, the image is one of them)
    return best.get(False) if declared else best.get(True), bare


class PinFinder:
    """The nearest torch pin above each directory, each directory read once."""

    def __init__(self) -> None:
        self._by_dir: Dict[str, Optional[Pin]] = {}
        self._bare_by_dir: Dict[str, Optional[str]] = {}

    def bare_minimum(self, directory: str) -> Optional[str]:
        """Where no pin was found above `directory` (`for_dir`), the nearest
        bare minimum passed on the way, if any."""
        return self._bare_by_dir.get(os.path.abspath(directory))

    def for_dir(self, directory: str) -> Optional[Pin]:
        chain = []
        cur = os.path.abspath(directory)
        found: Optional[Pin] = None
        bare: Optional[str] = None
        while True:
            if cur in self._by_dir:
                found = self._by_dir[cur]
                break
            chain.append(cur)
            try:
                names = os.listdir(cur)
            except OSError:
                names = []
            found, bare_here = _scan(cur, names)
            bare = bare or bare_here
            parent = os.path.dirname(cur)
            if found is not None or any(v in names for v in _VCS_DIRS) or parent == cur:
                break
            cur = parent
        if found is None and bare is None and chain and cur in self._by_dir:
            bare = self._bare_by_dir.get(cur)  # (what the directory reached from the cache saw)
        for d in chain:
            self._by_dir[d] = found
            self._bare_by_dir[d] = bare if found is None else None
        return found
