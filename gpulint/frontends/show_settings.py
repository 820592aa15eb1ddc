"""`gpulint check --show-settings`: the settings one file is linted with, and
where each came from (as `ruff check --show-settings`)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from gpulint.engine.config import CLI_SOURCE, ConfigResolver, Settings, with_cli_overrides
from gpulint.engine.discovery import discover


def first_file(paths: Sequence[str], resolver: ConfigResolver) -> Optional[tuple]:
    """(file, settings) of the first file a run over `paths` would lint."""
    for found in discover(list(paths), resolver, lambda path, why: None):
        return found
    return None


# where --show-settings says `preview` came from ("config": the config file's path)
_PREVIEW_SOURCES = {"cli": "the command line", "env": "GPULINT_PREVIEW", "default": "the default"}


def render(path: str, settings: Settings, select: Optional[Sequence[str]], ignore: Sequence[str],
           extend_select: Sequence[str], preview: Optional[bool] = None) -> str:
    s = with_cli_overrides(settings, select, ignore, extend_select, preview)
    preview_on, preview_source = s.preview_setting()
    config = s.config_path or "none found: the defaults"
    cli = [f"--select {','.join(select)}"] if select else []
    cli += [f"--ignore {','.join(ignore)}"] if ignore else []
    cli += [f"--extend-select {','.join(extend_select)}"] if extend_select else []
    cli += ["--preview" if preview else "--no-preview"] if preview is not None else []
    lines: List[str] = [
        f"Resolved settings for: {path}",
        f"Settings path: {config}",
        "",
        f"torch-version = \"{'.'.join(map(str, s.torch_version))}\"",
        f"  # from {s.torch_version_source or 'the default'}",
        f"preview = {'true' if preview_on else 'false'}",
        f"  # from {_PREVIEW_SOURCES.get(preview_source, config)}",
        f"rules = [{', '.join(repr(c) for c in s.codes_for(path))}]",
        f"  # from {config}" + (f", then the command line ({' '.join(cli)})" if cli else ""),
        f"root = {s.root!r}",
    ]
    flags = {"select": select, "ignore": ignore, "extend_select": extend_select}
    for name in ("select", "extend_select", "ignore", "per_file_ignores", "exclude", "extend_exclude", "include",
                 "extend_include", "output_format", "fixable", "unfixable", "extend_safe_fixes",
                 "extend_unsafe_fixes"):
        value = getattr(s, name)
        if isinstance(value, tuple) and value and isinstance(value[0], tuple):
            value = {k: list(v) for k, v in value}
        elif isinstance(value, tuple):
            value = list(value)
        key = name.replace("_", "-")
        lines.append(f"{key} = {value!r}")
        source = f"from {s.config_path}" if key in s.explicit else "the default"
        if key in s.cli_keys:
            source = f"from {CLI_SOURCE}"
        if flags.get(name):
            source += f", then the command line (--{key} {','.join(flags[name])})"
        lines.append(f"  # {source}")
    return "\n".join(lines) + "\n"
