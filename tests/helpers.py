"""Shared test helpers: lint a snippet, read fixture expectations."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Iterable, List, Optional, Set, Tuple

from gpulint.engine.config import LATEST_TORCH
from gpulint.engine.lint import LintOptions, lint_source
from gpulint.fix.apply import fix_source
from gpulint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*([A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)")
TORCH_RE = re.compile(r"#\s*fixture:\s*torch-version\s*=\s*([\d.]+)")


def options(codes: Optional[Iterable[str]] = None, torch_version: Tuple[int, ...] = LATEST_TORCH) -> LintOptions:
    """Every rule (or `codes`), with the preview behaviour of stable rules as
    the suite runs them (`GPULINT_PREVIEW`, set by conftest.py): fixtures
    hold what `gpulint check --preview` reports."""
    return LintOptions(codes=tuple(codes) if codes is not None else tuple(all_rules()), torch_version=torch_version,
                       preview=os.environ.get("GPULINT_PREVIEW") == "1")


def lint(code: str, codes: Optional[Iterable[str]] = None, path: str = "snippet.py", torch_version=LATEST_TORCH):
    return lint_source(code, path, options(codes, torch_version))


def src(code: str) -> str:
    """A snippet written indented in a test, as a file's text."""
    return textwrap.dedent(code).lstrip("\n")


def check_marked(text: str, code: str, path: str = "train.py", marker: str = "# flag") -> None:
    """The lines of `text` marked `marker` are exactly `code`'s findings."""
    want = [i for i, line in enumerate(text.splitlines(), 1) if marker in line]
    assert [f.row for f in lint(text, codes=[code], path=path)] == want


def codes_of(code: str, **kw) -> List[str]:
    return [f.code for f in lint(code, **kw)]


def fix(code: str, codes=None, unsafe=False, path="snippet.py", torch_version=LATEST_TORCH) -> str:
    return fix_source(code, path, options(codes, torch_version), unsafe=unsafe).text


def fixture_expectations(text: str) -> Set[Tuple[int, str]]:
    out = set()
    for i, line in enumerate(text.splitlines(), 1):
        m = EXPECT_RE.search(line)
        if m:
            for c in m.group(1).split(","):
                out.add((i, c.strip()))
    return out


def fixture_torch_version(text: str) -> Tuple[int, ...]:
    m = TORCH_RE.search(text)
    if not m:
        return LATEST_TORCH
    return tuple(int(p) for p in m.group(1).split("."))


# Two helper modules of a project (tests/test_project.py, tests/test_server.py):
# a metric meter whose update reads every tensor it is given on the host, and
# a loss scaler that runs backward and the optimizer step. Whether the read is
# a per-step sync depends on the training loop of another file.
METER_PY = """\
import torch


class Meter:
    def update(self, **values):
        for k, v in values.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            print(k, v)
"""
METER_ITEM_ROW = 8  # the 1-based row of `v.item()`
SCALER_PY = """\
class Scaler:
    def __call__(self, loss, optimizer):
        loss.backward()
        optimizer.step()
"""


# a training loop whose step is in a class of a file it imports (each text
# dedented by the test that writes it; its first line is blank)
STEPPER = {
    "helpers.py": """
        class Stepper:
            def __call__(self, loss, opt):
                loss.backward()
                opt.step()
    """,
    "train.py": """
        import torch
        from helpers import Stepper


        def train(model, loader, opt):
            stepper = Stepper()
            for x in loader:
                loss = model(x.cuda())
                stepper(loss, opt)
                print(loss.item())
    """,
}
