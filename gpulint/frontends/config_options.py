"""The command line's config options, as Ruff's: `--config` takes a config
file or a `KEY = VALUE` pair (TOML, any key of `[tool.gpulint]`), and
`--exclude`, `--extend-exclude`, `--per-file-ignores` and
`--extend-per-file-ignores` set those keys. Everything given here is a layer
over every config file of the run (and over the defaults where there is
none), as Ruff's overrides are."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import click

from gpulint.engine.config import ConfigError, ConfigResolver, tomllib


@dataclass(frozen=True)
class ConfigSpec:
    path: Optional[str] = None  # a config file for every file
    table: Dict[str, object] = field(default_factory=dict)  # the command line's keys

    def resolver(self, cwd: Optional[str] = None) -> ConfigResolver:
        return ConfigResolver(self.path, cwd=cwd, cli=self.table)


def _split(values: Sequence[str]) -> List[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _pairs(values: Sequence[str], option: str) -> Dict[str, List[str]]:
    """`PATTERN:CODES` (codes comma-separated) -> {pattern: codes}."""
    out: Dict[str, List[str]] = {}
    for v in values:
        pattern, sep, codes = v.rpartition(":")
        if not sep or not pattern.strip() or not codes.strip():
            raise click.BadParameter(f"{v!r}: expected PATTERN:CODES, as in 'tests/*:GPU101,GPU201'", param_hint=option)
        out.setdefault(pattern.strip(), []).extend(_split([codes]))
    return out


def build_spec(config: Sequence[str], exclude: Sequence[str], extend_exclude: Sequence[str],
               per_file_ignores: Sequence[str], extend_per_file_ignores: Sequence[str]) -> ConfigSpec:
    path = None
    table: Dict[str, object] = {}
    for value in config:
        if os.path.isfile(value) or value.endswith(".toml") or "=" not in value:
            if path is not None:
                raise click.BadParameter("one config file at most (the others must be KEY = VALUE)",
                                         param_hint="--config")
            path = value
            continue
        try:
            pair = tomllib.loads(value)
        except tomllib.TOMLDecodeError as exc:
            raise click.BadParameter(f"{value!r} is neither a config file nor a TOML `KEY = VALUE`: {exc}",
                                     param_hint="--config")
        table.update(pair)
    if exclude:
        table["exclude"] = _split(exclude)
    if extend_exclude:
        table["extend-exclude"] = list(table.get("extend-exclude") or []) + _split(extend_exclude)
    if per_file_ignores:
        table["per-file-ignores"] = _pairs(per_file_ignores, "--per-file-ignores")
    if extend_per_file_ignores:
        table["extend-per-file-ignores"] = _pairs(extend_per_file_ignores, "--extend-per-file-ignores")
    return ConfigSpec(path, table)


def config_options(func):
    """`--config`, `--exclude`, `--extend-exclude`, `--per-file-ignores` and
    `--extend-per-file-ignores`, handed to the command as one `config_path`
    (a `ConfigSpec`)."""
    @click.option("--config", "config_values", multiple=True, metavar="FILE | KEY=VALUE",
                  help="A config file for every file, or a TOML `KEY = VALUE` of [tool.gpulint] over every config "
                       "(repeatable), e.g. --config 'torch-version = \"2.4\"'.")
    @click.option("--exclude", "exclude_", multiple=True, metavar="PATTERNS",
                  help="File patterns to exclude (comma-separated); replaces the config's exclude.")
    @click.option("--extend-exclude", "extend_exclude_", multiple=True, metavar="PATTERNS",
                  help="File patterns to exclude, on top of the config's.")
    @click.option("--per-file-ignores", "per_file_ignores_", multiple=True, metavar="PATTERN:CODES",
                  help="Rules to ignore in the files a pattern matches; replaces the config's per-file-ignores.")
    @click.option("--extend-per-file-ignores", "extend_per_file_ignores_", multiple=True, metavar="PATTERN:CODES",
                  help="Rules to ignore in the files a pattern matches, on top of the config's.")
    @functools.wraps(func)
    def wrapper(*args, config_values=(), exclude_=(), extend_exclude_=(), per_file_ignores_=(),
                extend_per_file_ignores_=(), **kwargs):
        kwargs["config_path"] = build_spec(config_values, exclude_, extend_exclude_, per_file_ignores_,
                                           extend_per_file_ignores_)
        return func(*args, **kwargs)

    return wrapper


def spec_of(config) -> ConfigSpec:
    """A `ConfigSpec` of what a command was handed (a spec, a path or None)."""
    return config if isinstance(config, ConfigSpec) else ConfigSpec(config)


__all__ = ["ConfigError", "ConfigSpec", "build_spec", "config_options", "spec_of"]
