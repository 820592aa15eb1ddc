"""gpulint as a flake8 plugin, for projects that run flake8.

Declared in pyproject.toml as the `flake8.extension` entry point `GPU`, so an
installed gpulint is found by flake8 with no configuration: `flake8 --select
GPU` reports the same findings as `gpulint check` (code, line and column;
the message without gpulint's `[*]` fix marker).

- Rules: every stable rule that is on by default, and with
  `--gpulint-preview` (or `gpulint-preview = true` in flake8's config,
  `GPULINT_PREVIEW=1`, or `preview = true` in gpulint's) the preview rules
  that are on by default too. Any other rule (preview, or off by default: GPU104) runs when
  flake8's `--select` or `--extend-select` (or the same keys in its config)
  names its exact code, as in gpulint, where a prefix (`GPU`, `GPU1`) never
  turns such a rule on. What is reported is then
  flake8's decision: `--select`, `--ignore`, `--extend-ignore` and
  `--per-file-ignores` work by code prefix as for any plugin.
- Suppressions: flake8 applies `# noqa` and `# noqa: GPU101` itself (on the
  flagged line, by flake8's rules), and `--disable-noqa` turns them off; so
  the engine leaves `# noqa` alone here. gpulint's own
  `# gpulint: ignore[...]` and `# gpulint: skip-file` still work, and
  `--disable-noqa` turns them off too.
- Torch version: `torch-version` from the gpulint config that `gpulint check`
  would use for the file (`[tool.gpulint]` in the closest pyproject.toml, or
  gpulint.toml), else the project's own torch pin, as `gpulint check` reads
  it; `--gpulint-torch-version` (or `gpulint-torch-version =` in flake8's
  config) overrides both.
- The plugin lints the tree and lines flake8 has already read and parsed; it
  never reads the file again. A file gpulint cannot analyse is reported as
  `GPU000` on line 1, and the run goes on.
- The project: flake8 hands a plugin one file at a time, so each file is
  linted as `gpulint check FILE` lints it: the project files it imports (a
  few imports deep, found under the config's root, its `src/` and the
  file's folder) are read for their summaries, and the file is linted with
  the facts they give (a training step in an imported helper, a loader
  returned by a function of another module). Each imported file is read
  once per flake8 process. What it cannot see: callers in files the linted
  one does not import (`gpulint check .` sees those).

Nothing here imports flake8 or torch: flake8 calls the class, and `gpulint`
itself never imports this module.
"""

from __future__ import annotations

import argparse
import ast
import os
from typing import Dict, Iterator, List, Optional, Tuple

from gpulint import __version__
from gpulint.engine.config import ConfigError, ConfigResolver, Settings, parse_version
from gpulint.engine.lint import LintOptions, collector_paused
from gpulint.engine.project import ProjectLinter, project_roots
from gpulint.engine.unreached import Projects, keep_reached
from gpulint.registry import all_rules
from gpulint.rule import INTERNAL_ERROR

ERROR_CODE = "GPU000"  # the file could not be analysed (not a rule)

Result = Tuple[int, int, str, type]


def _torch_version(text: str) -> Tuple[int, ...]:
    """argparse type of --gpulint-torch-version (also applied to flake8's config value)."""
    try:
        return parse_version(str(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a version: {text!r} (expected e.g. 2.4)") from None


class Plugin:
    """The flake8 `tree` plugin: flake8 builds one per file and calls run()."""

    name = "gpulint"
    version = __version__

    # set once per flake8 run by parse_options
    _default_on: Tuple[str, ...] = ()
    _explicit: Tuple[str, ...] = ()  # rules outside the default set named by their exact code
    _preview: Optional[bool] = None  # --gpulint-preview; None: gpulint's config decides
    _torch_version: Optional[Tuple[int, ...]] = None
    _disable_noqa: bool = False
    _resolver: Optional[ConfigResolver] = None
    _options_cache: Dict[tuple, LintOptions] = {}
    _project: Optional[ProjectLinter] = None  # the files read for their summaries, once per process
    _reach: Optional[Projects] = None  # the projects' text, for code nothing reaches, once per process

    def __init__(self, tree: ast.AST, lines: List[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    # ----------------------------------------------------------- flake8 hooks
    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--gpulint-torch-version",
            default=None,
            type=_torch_version,
            parse_from_config=True,
            help="The torch release the code targets, e.g. 2.4 (default: gpulint's config, "
            "else the installed torch, else the newest gpulint knows).",
        )
        option_manager.add_option(
            "--gpulint-preview",
            default=False,
            action="store_true",
            parse_from_config=True,
            help="Also run gpulint's preview rules that are on by default (as `gpulint check --preview`).",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        rules = all_rules()
        named = {c.strip().upper() for c in (getattr(options, "select", None) or [])}
        named |= {c.strip().upper() for c in (getattr(options, "extend_select", None) or [])}
        cls._default_on = tuple(code for code, rule in rules.items() if rule.default)
        cls._explicit = tuple(code for code, rule in rules.items() if code in named)
        cls._preview = True if getattr(options, "gpulint_preview", False) else None
        cls._disable_noqa = bool(getattr(options, "disable_noqa", False))
        version = getattr(options, "gpulint_torch_version", None)
        cls._torch_version = _torch_version(version) if isinstance(version, str) else version
        cls._resolver = None
        cls._options_cache = {}
        cls._project = None
        cls._reach = None

    # ------------------------------------------------------------------ run
    def run(self) -> Iterator[Result]:
        cls = type(self)
        if not cls._default_on:  # flake8 always calls parse_options; this is for direct use
            cls.parse_options(None)
        if cls._project is None:
            cls._project = ProjectLinter()
        if cls._reach is None:
            cls._reach = Projects(keep=True)
        try:
            settings = self._settings()
            options = self._lint_options(settings)
            text = "".join(self.lines)
            roots = project_roots([self._path()], [settings])
            with collector_paused():
                res = cls._project.lint(text, self.filename, options, roots, tree=self.tree)
            findings = res.findings
            if res.error is None and self.filename not in ("-", "stdin", ""):
                findings = keep_reached(self.filename, findings, [], {os.path.abspath(self.filename): text},
                                        cls._reach)
        except ConfigError as exc:
            yield 1, 0, f"{ERROR_CODE} gpulint: {exc}", cls
            return
        except Exception as exc:  # a bug in gpulint must not stop flake8's run
            yield 1, 0, f"{ERROR_CODE} gpulint internal error: {type(exc).__name__}: {exc} (please report this)", cls
            return
        if res.error is not None:
            if res.error_code == INTERNAL_ERROR:
                yield 1, 0, f"{ERROR_CODE} gpulint {res.error}", cls
            else:
                yield 1, 0, f"{ERROR_CODE} gpulint could not analyse this file: {res.error}", cls
            return
        for f in findings:
            # gpulint's columns are 1-based; flake8 wants 0-based and prints them + 1
            yield f.row, max(f.col - 1, 0), f"{f.code} {f.message}", cls

    def _path(self) -> str:
        return self.filename if self.filename not in ("-", "stdin", "") else os.path.join(os.getcwd(), "stdin.py")

    def _settings(self) -> Settings:
        cls = type(self)
        if cls._resolver is None:
            cls._resolver = ConfigResolver()
        return cls._resolver.for_path(self._path())

    def _lint_options(self, settings: Settings) -> LintOptions:
        cls = type(self)
        if cls._torch_version is not None:
            version, newest = cls._torch_version, cls._torch_version
        else:
            version, newest = settings.torch_version, settings.torch_newest
        preview = settings.preview_on if cls._preview is None else cls._preview
        options = cls._options_cache.get((version, newest, preview))
        if options is None:
            default = tuple(c for c in cls._default_on if preview or not all_rules()[c].preview)
            options = cls._options_cache[(version, newest, preview)] = LintOptions(
                codes=tuple(dict.fromkeys(default + cls._explicit)),
                preview=preview,
                torch_version=version,
                torch_newest=newest,
                noqa=False,  # flake8 applies `# noqa` itself
                gpulint_comments=not cls._disable_noqa,
            )
        return options
