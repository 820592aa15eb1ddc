"""What the command-line front ends and the harness share: rule codes given
as options, and whether to colour a stream. Below the CLI, so the harness
(`verify`, `doctor`) uses them without importing the command line."""

from __future__ import annotations

import os
from typing import List, Tuple

import click

from gpulint.engine.config import is_valid_selector


def split_codes(values: Tuple[str, ...]) -> List[str]:
    out: List[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def validate_codes(option: str, codes: List[str]) -> None:
    for c in codes:
        if not is_valid_selector(c):
            raise click.UsageError(f"{option}: unknown rule code or prefix '{c}' (see `gpulint rules`)")


def use_color(no_color: bool, stream) -> bool:
    if no_color or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
