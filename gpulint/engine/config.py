"""Configuration: `[tool.gpulint]` in pyproject.toml, or a gpulint.toml.

Each file uses the closest config file above it, as Ruff does; `--config`
overrides that for every file. Unknown keys, unknown rule codes and invalid
TOML are errors that name the file and the key.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Sequence, Tuple, cast

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from gpulint.engine.globs import PatternSet
from gpulint.engine.torch_pin import Pin, PinFinder
from gpulint.fsutil import nearest_above
from gpulint.registry import all_rules
from gpulint.rule import LATEST_TORCH

CONFIG_FILES = ("gpulint.toml", ".gpulint.toml", "pyproject.toml")
OUTPUT_FORMATS = ("text", "concise", "full", "json", "json-lines", "junit", "gitlab", "sarif", "github")

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv", ".gpulint_cache",
)

# files that directory walks lint (Ruff's default, less its pyproject.toml check)
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")

KNOWN_KEYS = {
    "extend": str,  # another config file this one builds on (resolved by `load_table`)
    "select": list,
    "ignore": list,
    "extend-select": list,
    "per-file-ignores": dict,
    "extend-per-file-ignores": dict,
    "exclude": list,
    "extend-exclude": list,
    "include": list,
    "extend-include": list,
    "torch-version": str,
    "output-format": str,
    "fixable": list,
    "unfixable": list,
    "extend-safe-fixes": list,
    "extend-unsafe-fixes": list,
    "preview": bool,
}


class ConfigError(Exception):
    """A one-line configuration problem (exit 2)."""


@dataclass(frozen=True)
class Settings:
    root: str  # directory that relative patterns are resolved against
    config_path: Optional[str] = None
    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    include: Tuple[str, ...] = DEFAULT_INCLUDE
    extend_include: Tuple[str, ...] = ()
    torch_version: Tuple[int, ...] = LATEST_TORCH
    # where torch_version came from; None until resolved for a file's
    # directory (the config's `torch-version` sets it at once)
    torch_version_source: Optional[str] = None
    # the newest torch the project may run on (None: the same as torch_version,
    # as a configured or installed version says); a project's pin leaves it
    # open: the newest known
    torch_newest: Optional[Tuple[int, ...]] = None
    output_format: Optional[str] = None
    # the command line's selection, applied as a layer on top of the config's (as Ruff does)
    cli_select: Optional[Tuple[str, ...]] = None
    cli_ignore: Tuple[str, ...] = ()
    cli_extend_select: Tuple[str, ...] = ()
    # which fixes may be applied, and changes to their safety (Ruff's keys)
    fixable: Tuple[str, ...] = ("ALL",)
    unfixable: Tuple[str, ...] = ()
    extend_safe_fixes: Tuple[str, ...] = ()
    extend_unsafe_fixes: Tuple[str, ...] = ()
    # preview rules and preview behaviour of stable rules (`preview = true`);
    # the command line's --preview / --no-preview wins over the config's
    preview: bool = False
    cli_preview: Optional[bool] = None
    # the keys the config file set (the others are defaults), as the file spells them,
    # and those the command line set over it
    explicit: FrozenSet[str] = frozenset()
    cli_keys: FrozenSet[str] = frozenset()

    @property
    def preview_on(self) -> bool:
        return self.preview_setting()[0]

    def preview_setting(self) -> Tuple[bool, str]:
        """(preview on?, where that came from): --preview / --no-preview
        ("cli"), else GPULINT_PREVIEW ("env"), else the config's `preview`
        ("config", or "default" where it does not say)."""
        if self.cli_preview is not None:
            return self.cli_preview, "cli"
        env = preview_from_env()
        if env is not None:
            return env, "env"
        return self.preview, "config" if self.preview else "default"

    def fix_policy(self) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
        """(codes whose fixes are dropped, codes promoted to safe, codes demoted to unsafe).
        For each rule the most specific selector wins, as for select/ignore; at
        equal specificity `unfixable` beats `fixable` and unsafe beats safe."""
        meta = _rule_meta()

        def winner(code, on_list, off_list):
            best = None
            for sel, on in [(x, True) for x in on_list] + [(x, False) for x in off_list]:
                if code in expand_selector(sel):
                    spec = _specificity(sel)
                    if best is None or spec > best[0] or (spec == best[0] and not on):
                        best = (spec, on)
            return best

        dropped, safe, unsafe = [], [], []
        for code in meta:
            fx = winner(code, self.fixable, self.unfixable)
            if fx is None or not fx[1]:
                dropped.append(code)
            sf = winner(code, self.extend_safe_fixes, self.extend_unsafe_fixes)
            if sf is not None:
                (safe if sf[1] else unsafe).append(code)
        return tuple(dropped), tuple(safe), tuple(unsafe)

    def enabled_codes(self) -> Tuple[str, ...]:
        # asked once per linted file: the resolution itself is cached
        return _resolve_selection_cached(
            self.select, self.extend_select, self.ignore, (self.cli_select, self.cli_extend_select, self.cli_ignore),
            self.preview_on,
        )

    def selection_warnings(self) -> Tuple[str, ...]:
        """One line per selector that selects nothing because its rules are
        in preview and preview is off (as Ruff warns)."""
        if self.preview_on:
            return ()
        out = []
        for sel in tuple(self.select or ()) + self.extend_select + tuple(self.cli_select or ()) + self.cli_extend_select:
            if not expand_selector(sel, for_select=True) and expand_selector(sel, for_select=True, preview=True):
                out.append(f"selection `{sel}` has no effect because preview is not enabled: its rules are in "
                           "preview (add --preview, or `preview = true` in the config)")
        if not self.enabled_codes():
            if not out and not resolve_selection(None, (), ()):  # nothing chosen, and no stable rule to run
                out.append("no rule is stable yet (every rule is in preview, see `gpulint rules`), so a plain check runs"
                           " none: add --preview, or `preview = true` in the config")
            out.append("no rule is selected: nothing is checked")
        return tuple(dict.fromkeys(out))

    def codes_for(self, path: str) -> Tuple[str, ...]:
        codes = self.enabled_codes()
        if not self.per_file_ignores:
            return codes
        ignored = self.per_file_ignore_patterns.ignored(_relpath(path, self.root), os.path.basename(path))
        return tuple(c for c in codes if c not in ignored) if ignored else codes

    # the patterns, compiled once per Settings object (there may be 100,000)
    @cached_property
    def exclude_patterns(self) -> Optional[PatternSet]:
        """`exclude` + `extend-exclude`, or None when both are empty."""
        patterns = tuple(self.exclude) + tuple(self.extend_exclude)
        return PatternSet(patterns) if patterns else None

    @cached_property
    def include_patterns(self) -> PatternSet:
        return PatternSet(tuple(self.include) + tuple(self.extend_include))

    @cached_property
    def per_file_ignore_patterns(self) -> "PerFileIgnores":
        return PerFileIgnores(self.per_file_ignores)


class PerFileIgnores:
    """`per-file-ignores`, compiled: each pattern that matches a file's path
    from the config's root, or its name, ignores its codes there (the union
    over the patterns). A negated pattern (`"!src/**"`), as in Ruff, ignores
    its codes in every file it does not match."""

    def __init__(self, table: Tuple[Tuple[str, Tuple[str, ...]], ...]) -> None:
        plain = [(p, codes) for p, codes in table if not p.startswith("!")]
        negated = [(p[1:], codes) for p, codes in table if p.startswith("!")]
        self.patterns = PatternSet(p for p, _ in plain)
        self._selectors = [codes for _, codes in plain]
        self.negated = PatternSet(p for p, _ in negated) if negated else None
        self._negated_selectors = [codes for _, codes in negated]
        self._expanded: Dict[Tuple[str, ...], frozenset] = {}  # few distinct code lists, however many patterns

    def ignored(self, rel: str, name: str) -> frozenset:
        hits = set(self.patterns.matching(rel))
        hits.update(self.patterns.matching(name))
        chosen = [self._selectors[i] for i in hits]
        if self.negated is not None:
            matched = set(self.negated.matching(rel)) | set(self.negated.matching(name))
            chosen += [sel for i, sel in enumerate(self._negated_selectors) if i not in matched]
        out: frozenset = frozenset()
        for selectors in chosen:
            codes = self._expanded.get(selectors)
            if codes is None:
                codes = self._expanded[selectors] = frozenset(c for sel in selectors for c in expand_selector(sel))
            out = out | codes
        return out


def _relpath(path: str, root: str) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


# ------------------------------------------------------------------ selection
def _rule_meta():
    """{code: (name, on by default, stable)}."""
    return {code: (cls.name, cls.default, not cls.preview) for code, cls in all_rules().items()}


def is_valid_selector(sel: str) -> bool:
    sel_u = sel.upper()
    if sel_u == "ALL":
        return True
    for code, (name, _, _) in _rule_meta().items():
        if code.startswith(sel_u) or name == sel:
            return True
    return False


def expand_selector(sel: str, for_select: bool = False, preview: bool = False) -> Tuple[str, ...]:
    """Codes a selector names, as Ruff reads them. To select, a prefix or ALL
    names every stable rule, and with preview every rule; an exact code or
    name selects its rule whatever its status. To ignore, a selector names
    every rule it matches."""
    sel_u = sel.upper()
    out = []
    for code, (name, _, stable) in _rule_meta().items():
        exact = code == sel_u or name == sel
        prefix = sel_u == "ALL" or code.startswith(sel_u)
        if exact or (prefix and (stable or preview or not for_select)):
            out.append(code)
    return tuple(out)


def _specificity(sel: str) -> int:
    sel_u = sel.upper()
    if sel_u == "ALL":
        return 0
    if re.match(r"^[A-Z]+\d{3}$", sel_u) or not re.match(r"^[A-Z]+\d*$", sel_u):
        return 100  # an exact code or a rule name
    return len(sel_u)


def _apply_layer(current, select, extend_select, ignore, meta, preview: bool = False) -> set:
    """One layer of selection (the config's, then the command line's).

    Within a layer the most specific selector wins for each rule, and at equal
    specificity an ignore beats a select. A layer with a `select` replaces the
    selection so far; a layer without one only adds (extend-select) and
    removes (ignore)."""
    selectors = [(s, True) for s in (select or ())]
    selectors += [(s, True) for s in extend_select]
    selectors += [(s, False) for s in ignore]
    expanded = [(set(expand_selector(s, for_select=on, preview=preview)), _specificity(s), on) for s, on in selectors]
    updates: Dict[str, bool] = {}
    for code in meta:
        best = None
        for codes, spec, on in expanded:
            if code in codes and (best is None or spec > best[0] or (spec == best[0] and not on)):
                best = (spec, on)
        if best is not None:
            updates[code] = best[1]
    if select is not None:
        return {c for c, on in updates.items() if on}
    out = set(current)
    for c, on in updates.items():
        if on:
            out.add(c)
        else:
            out.discard(c)
    return out


@lru_cache(maxsize=None)
def _resolve_selection_cached(select, extend_select, ignore, cli, preview) -> Tuple[str, ...]:
    return resolve_selection(select, extend_select, ignore, cli=cli, preview=preview)


def resolve_selection(select, extend_select, ignore, cli=None, preview: bool = False) -> Tuple[str, ...]:
    """The enabled rule codes. Ruff's rule: the default rules, then the
    config's layer, then the command line's layer (see `_apply_layer`): so
    `--select GPU001` enables GPU001 even when the config ignores it, and
    `--ignore GPU1` drops a prefix the config selected. The default rules
    are the stable rules that are on by default, and with `preview` the
    preview rules that are on by default too."""
    meta = _rule_meta()
    enabled = {c for c, (_, d, stable) in meta.items() if d and (stable or preview)}
    enabled = _apply_layer(enabled, select, extend_select, ignore, meta, preview)
    if cli is not None:
        cli_select, cli_extend, cli_ignore = cli
        if cli_select is not None or cli_extend or cli_ignore:
            enabled = _apply_layer(enabled, cli_select, cli_extend, cli_ignore, meta, preview)
    return tuple(c for c in meta if c in enabled)


# --------------------------------------------------------------- torch version
def parse_version(text: str) -> Tuple[int, ...]:
    m = re.match(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    if not m:
        raise ValueError(text)
    return tuple(int(g) for g in m.groups() if g is not None)


_DIST_INFO_RE = re.compile(r"^torch-([0-9][^-]*?)\.(?:dist-info|egg-info)$", re.I)


def installed_torch_version(missing: Optional[Tuple[int, ...]] = LATEST_TORCH) -> Optional[Tuple[int, ...]]:
    """The installed torch's version from its package metadata folder
    (`torch-2.5.1.dist-info` on sys.path): never imports torch, and a folder
    listing costs less than importlib.metadata's import and search."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            m = _DIST_INFO_RE.match(name)
            if m:
                try:
                    return parse_version(m.group(1))
                except ValueError:
                    return missing
    return missing


_DEFAULT_TORCH: Optional[Tuple[Tuple[int, ...], str]] = None


def default_torch() -> Tuple[Tuple[int, ...], str]:
    """The torch version of a project that pins none, and why: the installed
    torch's, else the newest that gpulint knows."""
    global _DEFAULT_TORCH
    if _DEFAULT_TORCH is None:
        found = installed_torch_version(missing=None)
        if found is None:
            _DEFAULT_TORCH = (LATEST_TORCH, "the newest torch gpulint knows (no torch pin found, none installed)")
        else:
            _DEFAULT_TORCH = (found, "the installed torch (no torch pin found)")
    return _DEFAULT_TORCH


def default_torch_version() -> Tuple[int, ...]:
    return default_torch()[0]


# ----------------------------------------------------------------- loading
def _suggest(key: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


# how deep `extend` may chain (a config that extends itself, directly or not, is an error)
MAX_EXTEND_DEPTH = 16


def load_table(path: str, _chain: Tuple[str, ...] = ()) -> Optional[dict]:
    """The gpulint table of a config file, with what its `extend` names under
    it (as Ruff resolves `extend`: the named file's settings, the path relative
    to this file, then this file's keys over them; `extend-*` lists and tables
    add to the named file's); None for a pyproject.toml without a table."""
    table = _own_table(path)
    if table is None or "extend" not in table:
        return table
    target = table["extend"]
    if not isinstance(target, str):
        raise ConfigError(f"{path}: 'extend' must be a string (a path to another config file)")
    base_path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(target)))
    chain = _chain + (os.path.abspath(path),)
    if base_path in chain:
        raise ConfigError(f"{path}: 'extend' makes a cycle: {' -> '.join(chain + (base_path,))}")
    if len(chain) > MAX_EXTEND_DEPTH:
        raise ConfigError(f"{path}: 'extend' chains more than {MAX_EXTEND_DEPTH} config files")
    if not os.path.isfile(base_path):
        raise ConfigError(f"{path}: 'extend': no such config file: {base_path}")
    base = load_table(base_path, chain)
    if base is None:
        raise ConfigError(f"{path}: 'extend': {base_path} has no [tool.gpulint] table")
    merged = {k: v for k, v in base.items() if k != "extend"}
    for key, value in table.items():
        if key == "extend":
            continue
        if key.startswith("extend-") and key in merged and isinstance(value, list) and isinstance(merged[key], list):
            merged[key] = merged[key] + value
        elif key.startswith("extend-") and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _own_table(path: str) -> Optional[dict]:
    """The gpulint table of one config file, as written."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}")
    tool = data.get("tool")
    if os.path.basename(path) == "pyproject.toml":
        table = tool.get("gpulint") if isinstance(tool, dict) else None
        if table is None:
            return None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.gpulint] must be a table")
        return table
    # gpulint.toml: either top-level keys or a [tool.gpulint] table
    if isinstance(tool, dict) and "gpulint" in tool:
        if not isinstance(tool["gpulint"], dict):
            raise ConfigError(f"{path}: [tool.gpulint] must be a table")
        return tool["gpulint"]
    return data


def settings_from_table(table: dict, path: str) -> Settings:
    where = f"{path}: " + ("[tool.gpulint]" if path.endswith("pyproject.toml") else "")
    where = where.rstrip()
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where} unknown key '{key}'{_suggest(key, KNOWN_KEYS)}")
        typ = KNOWN_KEYS[key]
        if not isinstance(value, typ):
            what = {list: "list", dict: "table", bool: "boolean (true or false)"}.get(typ, "string")
            raise ConfigError(f"{where} '{key}' must be a {what}")
    kw: dict = {"root": os.path.dirname(os.path.abspath(path)), "config_path": path}

    def codes(key: str) -> Tuple[str, ...]:
        vals = table[key]
        for v in vals:
            if not isinstance(v, str):
                raise ConfigError(f"{where} '{key}' must be a list of strings")
            if not is_valid_selector(v):
                raise ConfigError(f"{where} '{key}': unknown rule code or prefix '{v}'")
        return tuple(vals)

    if "select" in table:
        kw["select"] = codes("select")
    if "ignore" in table:
        kw["ignore"] = codes("ignore")
    if "extend-select" in table:
        kw["extend_select"] = codes("extend-select")
    for key in ("fixable", "unfixable", "extend-safe-fixes", "extend-unsafe-fixes"):
        if key in table:
            kw[key.replace("-", "_")] = codes(key)
    pfi = []
    valid: Dict[str, bool] = {}  # each selector checked once: there may be 100,000 patterns
    for key in ("per-file-ignores", "extend-per-file-ignores"):  # (as Ruff: the second adds to the first)
        for pattern, vals in table.get(key, {}).items():
            if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
                raise ConfigError(f"{where} '{key}.\"{pattern}\"' must be a list of codes")
            for v in vals:
                ok = valid.get(v)
                if ok is None:
                    ok = valid[v] = is_valid_selector(v)
                if not ok:
                    raise ConfigError(f"{where} '{key}.\"{pattern}\"': unknown rule code or prefix '{v}'")
            pfi.append((pattern, tuple(vals)))
    if pfi:
        kw["per_file_ignores"] = tuple(pfi)
    for key, attr in (("exclude", "exclude"), ("extend-exclude", "extend_exclude"), ("include", "include"),
                      ("extend-include", "extend_include")):
        if key in table:
            if not all(isinstance(v, str) for v in table[key]):
                raise ConfigError(f"{where} '{key}' must be a list of strings")
            negated = next((v for v in table[key] if v.startswith("!")), None)
            if negated is not None:  # as in Ruff: only per-file-ignores negates
                raise ConfigError(f"{where} '{key}': negated patterns such as {negated!r} are not supported here; "
                                  "list what to match instead (per-file-ignores takes a negated pattern)")
            kw[attr] = tuple(table[key])
    if "torch-version" in table:
        try:
            kw["torch_version"] = parse_version(table["torch-version"])
        except ValueError:
            raise ConfigError(f"{where} 'torch-version': not a version: {table['torch-version']!r}")
        kw["torch_version_source"] = f"{path}: torch-version = {table['torch-version']!r}"
    else:
        kw["torch_version"] = default_torch_version()
    if "preview" in table:
        kw["preview"] = table["preview"]
    if "output-format" in table:
        fmt = table["output-format"]
        if fmt not in OUTPUT_FORMATS:
            raise ConfigError(f"{where} 'output-format': unknown format '{fmt}' (one of {', '.join(OUTPUT_FORMATS)})")
        kw["output_format"] = fmt
    kw["explicit"] = frozenset(table)  # (what --show-settings says came from the file)
    return Settings(**kw)


def default_settings(root: str) -> Settings:
    return Settings(root=os.path.abspath(root), torch_version=default_torch_version())


def settings_from_file(path: str) -> Settings:
    table = load_table(path)
    if table is None:
        return default_settings(os.path.dirname(os.path.abspath(path)))
    return settings_from_table(table, path)


# where a setting given on the command line (`--config KEY=VALUE`, `--exclude`, ...) is said to come from
CLI_SOURCE = "the command line"


class ConfigResolver:
    """Finds and caches the closest config for each directory. `cli`: settings
    given on the command line (a table of config keys: `--config KEY=VALUE`,
    `--exclude`, `--per-file-ignores`, ...), a layer over every config file
    and over the defaults, as Ruff's `--config` overrides are."""

    def __init__(self, override: Optional[str] = None, cwd: Optional[str] = None,
                 cli: Optional[dict] = None) -> None:
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._by_dir: Dict[str, Settings] = {}
        self._loaded: Dict[str, Settings] = {}
        self.override: Optional[Settings] = None
        self._pins = PinFinder()
        self._pinned: Dict[Tuple[int, Optional[Pin]], Settings] = {}
        self.cli = dict(cli or {})
        if self.cli:
            settings_from_table(self.cli, CLI_SOURCE)  # a bad value is an error now, naming the command line
        if override is not None:
            if not os.path.isfile(override):
                raise ConfigError(f"{override}: config file not found")
            self.override = self._layered(load_table(override), override, os.path.dirname(os.path.abspath(override)))

    def _layered(self, table: Optional[dict], path: Optional[str], root: str) -> Settings:
        """The settings of a config file's table (None: no config, the defaults)
        with the command line's over it."""
        if not self.cli:
            return settings_from_table(table, path) if table is not None and path else default_settings(root)
        merged = dict(table or {})
        merged.update(self.cli)
        s = settings_from_table(merged, path or os.path.join(root, CLI_SOURCE))
        if "torch-version" in self.cli:
            s = replace(s, torch_version_source=f"{CLI_SOURCE}: torch-version = {self.cli['torch-version']!r}")
        return replace(s, config_path=path if table is not None else None,
                       explicit=frozenset(table or ()) - set(self.cli), cli_keys=frozenset(self.cli))

    def for_path(self, path: str) -> Settings:
        d = os.path.abspath(path)
        if not os.path.isdir(d):
            d = os.path.dirname(d)
        return self._with_torch(self.override if self.override is not None else self._for_dir(d), d)

    def _with_torch(self, settings: Settings, d: str) -> Settings:
        """The settings with the torch version of the directory's project: the
        config's `torch-version`, else the project's own pin, else the
        installed torch's, else the newest known."""
        if settings.torch_version_source is not None:
            return settings
        pin = self._pins.for_dir(d)
        bare = self._pins.bare_minimum(d) if pin is None else None
        key = (id(settings), pin, bare)
        done = self._pinned.get(key)
        if done is None:
            if pin is not None:
                # a pin sets the oldest torch the code must run on; what it may
                # run on is left open (see `torch_newest`)
                version, newest, source = pin[0], max(pin[0], LATEST_TORCH), f"the project's torch pin ({pin[1]})"
            else:
                version, source = default_torch()
                newest = version
                if bare is not None:
                    source = f"{source}; {bare} bounds torch only from below, which is read as no pin"
            # `settings` is kept alive by the resolver's caches, so its id is not reused
            done = self._pinned[key] = replace(
                settings, torch_version=version, torch_newest=newest, torch_version_source=source
            )
        return done

    def _for_dir(self, d: str) -> Settings:
        # never None: a folder with no config gets the defaults
        return cast(Settings, nearest_above(d, self._by_dir, self._settings_in,  # type: ignore[arg-type]
                                            lambda: self._layered(None, None, self.cwd)))

    def _settings_in(self, d: str) -> Optional[Settings]:
        for name in CONFIG_FILES:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                if p in self._loaded:
                    return self._loaded[p]
                table = load_table(p)
                if table is None:
                    continue  # a pyproject.toml without [tool.gpulint]
                s = self._layered(table, p, d)
                self._loaded[p] = s
                return s
        return None


def preview_from_env() -> Optional[bool]:
    """GPULINT_PREVIEW, read as Click reads a boolean flag's variable (the
    command line's --preview has it): None when unset or empty."""
    value = os.environ.get("GPULINT_PREVIEW", "").strip().lower()
    if value in ("1", "true", "t", "yes", "y", "on"):
        return True
    if value in ("0", "false", "f", "no", "n", "off"):
        return False
    return None


def with_cli_overrides(
    settings: Settings,
    select: Optional[Sequence[str]] = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    preview: Optional[bool] = None,
) -> Settings:
    """The settings with the command line's selection (and --preview or
    --no-preview) as a layer on top."""
    if not select and not ignore and not extend_select and preview is None:
        return settings
    return replace(
        settings,
        cli_select=tuple(select) if select else None,
        cli_ignore=tuple(ignore),
        cli_extend_select=tuple(extend_select),
        cli_preview=preview,
    )
