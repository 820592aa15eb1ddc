"""The torch version a project declares: its own pin, read without running it.

A rule that suggests an API (`fused=True`, `torch.amp`, TF32's switch) must
not suggest one that the project's supported torch lacks. Ruff reads
`requires-python` for its target version the same way: the *lowest* version
the project allows is the one its code must run on.

Read, in the nearest directory upward from a file that declares torch (up to
and including the repository's root, the folder holding `.git` or `.hg`):

- pyproject.toml: `[project] dependencies` and `optional-dependencies`, and
  Poetry's `[tool.poetry.*dependencies]` (`torch = "^1.10"`);
- requirements*.txt, and *.txt under a `requirements/` folder;
- setup.cfg: `[options] install_requires` and `extras_require`;
- setup.py: string literals such as `"torch>=1.8"` (never run);
- conda environment files (environment.yml, env.yaml, conda_env.yml: a .yml
  or .yaml whose name has "env" or "conda" in it): `pytorch=1.10` and pip lines.

Each requirement's lower bound is the highest of its `==`, `~=`, `>=`, `>`,
`^`, `~` and conda `=` versions; across requirements and files the lowest
wins. A requirement without a lower bound (`torch`, `torch<2`) declares none.
The newest version allowed is kept too: a rule whose cost exists only on old
torch (a default that later changed) flags only when every allowed version is
old.
Files that cannot be read or parsed declare nothing: they are not gpulint's
config, so they never stop a run.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from typing import Dict, Iterable, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Version = Tuple[int, ...]
# (lowest version allowed, newest version allowed or None when unbounded,
#  where the lowest was read: "requirements.txt: torch==1.10.*")
Pin = Tuple[Version, Optional[Version], str]
# a version part above any real one: `<2.0` allows up to (1, ANY)
ANY = 9999

MAX_BYTES = 1 << 20  # a declaration file larger than this is not read
_VCS_DIRS = (".git", ".hg")

# a requirement naming torch (not torchvision, torch-geometric, torch_scatter...)
_NAME_RE = re.compile(r"^\s*(?:[\w.-]+::)?(?:py)?torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*(.*)$", re.I)
_SPEC_RE = re.compile(r"(===|==|~=|>=|<=|!=|>|<|\^|~|=)\s*v?(\d+(?:\.\d+)*)")
_URL_VERSION_RE = re.compile(r"torch-(\d+(?:\.\d+)+)")
_SETUP_PY_RE = re.compile(r"""["']\s*((?:py)?torch\s*(?:\[[^\]'"]*\])?\s*[<>=!~^][^"']*)["']""", re.I)
_LOWER_OPS = frozenset({"===", "==", "~=", ">=", ">", "^", "~", "="})


def lower_bound(requirement: str) -> Optional[Version]:
    """The lowest torch version a requirement line allows, or None when it is
    not a torch requirement or has no lower bound."""
    found = bounds(requirement)
    return found[0] if found else None


def bounds(requirement: str) -> Optional[Tuple[Version, Optional[Version]]]:
    """(lowest, newest or None when unbounded) torch versions a requirement
    line allows; None when it is not a torch requirement or has no lower bound."""
    m = _NAME_RE.match(requirement)
    if not m:
        return None
    rest = m.group(1)
    if rest.startswith("@"):  # a direct reference: torch @ https://.../torch-1.10.0+cu113-...whl
        url = _URL_VERSION_RE.search(rest)
        return (_version(url.group(1)),) * 2 if url else None
    rest = re.split(r"[;#]", rest, maxsplit=1)[0]
    specs = _SPEC_RE.findall(rest)
    lows = [_version(v) for op, v in specs if op in _LOWER_OPS]
    if not lows:
        return None
    highs = [h for h in (_newest(op, v, rest) for op, v in specs) if h is not None]
    return max(lows), (min(highs) if highs else None)


def _newest(op: str, text: str, spec: str) -> Optional[Version]:
    """The newest version one specifier allows, or None when it sets no upper bound."""
    v = _version(text)
    if op in ("==", "===", "=", "<="):
        wildcard = op != "<=" and (f"{text}.*" in spec or (op == "=" and len(v) < 3))
        return v + (ANY,) if wildcard else v
    if op == "<":  # the version before: <2.0 allows (1, ANY), <2.1 allows (2, 0, ANY)
        trimmed = v
        while trimmed and trimmed[-1] == 0:
            trimmed = trimmed[:-1]
        if not trimmed:
            return None
        return trimmed[:-1] + (trimmed[-1] - 1, ANY)
    if op in ("~=", "~") and len(v) >= 2:
        return v[:-1] + (ANY,) if op == "~=" else v[:2] + (ANY,)
    if op == "^":  # Poetry: ^1.10 allows <2.0; ^0.4 allows <0.5
        head = next((i for i, p in enumerate(v) if p), len(v) - 1)
        return v[: head + 1] + (ANY,)
    return None


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
        if reader is None:
            continue
        text = _read_text(os.path.join(directory, name))
        if text is not None:
            yield name, reader(text)
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
    if names is None:
        try:
            names = os.listdir(directory)
        except OSError:
            return None
    low: Optional[Version] = None
    source = ""
    highs: List[Optional[Version]] = []
    for name, requirements in _declarations(directory, names):
        for req in requirements:
            found = bounds(req)
            if found is None:
                continue
            highs.append(found[1])
            if low is None or found[0] < low:
                low, source = found[0], f"{os.path.join(directory, name)}: {' '.join(req.split())}"
    if low is None:
        return None
    high = None if any(h is None for h in highs) else max(h for h in highs if h is not None)
    return low, high, source


class PinFinder:
    """The nearest torch pin above each directory, each directory read once."""

    def __init__(self) -> None:
        self._by_dir: Dict[str, Optional[Pin]] = {}

    def for_dir(self, directory: str) -> Optional[Pin]:
        chain = []
        cur = os.path.abspath(directory)
        found: Optional[Pin] = None
        while True:
            if cur in self._by_dir:
                found = self._by_dir[cur]
                break
            chain.append(cur)
            try:
                names = os.listdir(cur)
            except OSError:
                names = []
            found = pin_in(cur, names)
            parent = os.path.dirname(cur)
            if found is not None or any(v in names for v in _VCS_DIRS) or parent == cur:
                break
            cur = parent
        for d in chain:
            self._by_dir[d] = found
        return found
