"""The `gpulint` command line."""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional, Tuple

import click

from gpulint import __version__
from gpulint.engine.config import OUTPUT_FORMATS, ConfigError, with_cli_overrides
from gpulint.frontends.config_options import config_options, spec_of
from gpulint.engine.console import split_codes, use_color, validate_codes
from gpulint.rule import Finding

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _parse_selection(select, ignore, extend_select) -> Tuple[List[str], List[str], List[str]]:
    """The three selection options, split on commas and checked."""
    out = []
    for option, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select)):
        codes = split_codes(values)
        validate_codes(option, codes)
        out.append(codes)
    return out[0], out[1], out[2]


def _config_error(exc: ConfigError) -> None:
    """One line on stderr. The config's path and contents come from the linted tree: escaped."""
    from gpulint.frontends.reporters.text import printable

    click.echo(f"gpulint: error: {printable(str(exc))}", err=True)


class _Group(click.Group):
    """`verify`, `doctor` and `server` are imported when they are asked for:
    `check` starts no faster than its imports (and `server` needs pygls, an extra)."""

    LAZY = {"verify": ("gpulint.harness.verify", "verify"), "doctor": ("gpulint.harness.doctor", "doctor"),
            "server": ("gpulint.frontends.server", "server")}

    def get_command(self, ctx, name):
        if name in self.LAZY and name not in self.commands:
            import importlib

            module, attr = self.LAZY[name]
            self.add_command(getattr(importlib.import_module(module), attr))
        return super().get_command(ctx, name)

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.LAZY))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpulint")
def cli() -> None:
    """Find and fix the code patterns that waste GPU time and memory in PyTorch programs."""


def _codes_option(name: str, help_: str):
    return click.option(name, multiple=True, metavar="CODES", help=help_)


_preview_option = click.option(
    "--preview/--no-preview", default=None,
    help="Turn on the rules in preview (those not yet right at first sight on unseen code: see `gpulint rules`)"
         " and the preview behaviour of stable rules; overrides the config's `preview` (also GPULINT_PREVIEW=1).",
)


def _selection_warnings(settings) -> None:
    """As Ruff: a selector whose rules are all in preview says so, once."""
    for line in settings.selection_warnings():
        click.echo(f"gpulint: warning: {line}", err=True)


_stdin_option = click.option(
    "--stdin-filename", type=click.Path(), default=None,
    help="Read the source from stdin and treat it as this file: its config, per-file-ignores and name in the report"
         " (stdin is read when PATHS is `-`, or empty with this option).",
)


def _reads_stdin(paths, stdin_filename) -> bool:
    """Whether to read stdin: PATHS is `-`, or empty with --stdin-filename (as Ruff)."""
    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        return True
    if stdin_filename is not None and paths:
        raise click.UsageError("--stdin-filename reads stdin: give no paths, or `-`")
    return stdin_filename is not None


def _read_stdin() -> bytes:
    from gpulint.engine.lint import MAX_FILE_BYTES

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        click.echo(f"gpulint: error: stdin: input is too large to lint (over {MAX_FILE_BYTES // (1024 * 1024)} MB)",
                   err=True)
        sys.exit(EXIT_ERROR)
    return data


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_codes_option("--select", "Rules to enable (codes, prefixes such as GPU1, names, or ALL); replaces the config's select.")
@_codes_option("--ignore", "Rules to disable.")
@_codes_option("--extend-select", "Rules to enable on top of the selection.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None, help="Output format (default: text).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report to this file.")
@config_options
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary.")
@click.option("--no-color", is_flag=True, help="Never colour the output (also NO_COLOR=1).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="GPULINT_CACHE_DIR", default=None,
              help="Keep the cache here (default: .gpulint_cache in the project root; also GPULINT_CACHE_DIR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core).")
@click.option("--force-exclude", is_flag=True,
              help="Apply the config's exclude / extend-exclude even to files named on the command line (for pre-commit).")
@click.option("--diff", is_flag=True, help="Print the diff of the fixes instead of the findings (as `gpulint fix`).")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix or --diff: include unsafe fixes; otherwise count them as fixable.")
@click.option("--fix", "fix_", is_flag=True, help="Write the fixes (as `gpulint fix --apply`), then report what is left.")
@click.option("--fix-only", is_flag=True, help="Write the fixes and report nothing else; exit 0 unless a file failed.")
@click.option("--show-fixes", is_flag=True, help="With --fix: also list the fixes written, per file and rule.")
@click.option("--add-noqa", is_flag=True,
              help="Add a `# noqa: CODE` comment for every finding (adopt gpulint on existing code), then exit.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings the first file is linted with, and where each came from (torch-version: "
                   "the config, the project's torch pin, the installed torch or the newest), then exit.")
@click.option("--watch", is_flag=True, help="Lint again whenever a file under PATHS changes, until Ctrl-C.")
@click.option("--show-files", is_flag=True,
              help="Print the files a run would lint (excludes, include patterns and .gitignore applied), then exit.")
@_preview_option
@_stdin_option
def check(paths, select, ignore, extend_select, output_format, output_file, config_path, statistics,
          exit_zero, quiet, no_color, no_cache, cache_dir, jobs, force_exclude, diff=False, unsafe_fixes=False,
          add_noqa=False, show_settings=False, stdin_filename=None, preview=None, fix_=False, fix_only=False,
          show_fixes=False, show_files=False, watch=False) -> None:
    """Lint PATHS (default: the current directory); `-` reads the source from stdin."""
    if watch:
        _watch(click.get_current_context(), paths, stdin_filename, add_noqa)
        return
    if show_settings:
        _show_settings(paths, select, ignore, extend_select, config_path, stdin_filename, preview)
        return
    if show_files:
        _show_files(paths, config_path, force_exclude)
        return
    if diff and add_noqa:
        raise click.UsageError("--diff and --add-noqa cannot be used together")
    fixing_asked = fix_ or fix_only
    if fixing_asked and (diff or add_noqa):
        raise click.UsageError(f"--{'fix' if fix_ else 'fix-only'} and --{'diff' if diff else 'add-noqa'} "
                               "cannot be used together")
    if fixing_asked and _reads_stdin(paths, stdin_filename):
        # as `ruff check --fix -`: the fixed source goes to stdout
        click.get_current_context().invoke(
            fix, paths=paths, apply_=True, unsafe_fixes=unsafe_fixes, select=select, ignore=ignore,
            extend_select=extend_select, config_path=config_path, no_color=no_color, no_cache=no_cache,
            cache_dir=cache_dir, jobs=jobs, force_exclude=force_exclude, stdin_filename=stdin_filename,
            preview=preview, fix_only=fix_only,
        )
        return
    if diff:
        click.get_current_context().invoke(
            fix, paths=paths, apply_=False, unsafe_fixes=unsafe_fixes, select=select, ignore=ignore,
            extend_select=extend_select, config_path=config_path, no_color=no_color, no_cache=no_cache,
            cache_dir=cache_dir, jobs=jobs, force_exclude=force_exclude, stdin_filename=stdin_filename,
            preview=preview,
        )
        return
    from gpulint.frontends.reporters import ReportContext, get_reporter
    from gpulint.engine.runner import run, run_stdin

    stdin = _reads_stdin(paths, stdin_filename)
    if stdin and add_noqa:
        raise click.UsageError("--add-noqa edits files: it cannot read from stdin")
    select_l, ignore_l, extend_l = _parse_selection(select, ignore, extend_select)
    try:
        resolver = spec_of(config_path).resolver()
        s = resolver.override or resolver.for_path(stdin_filename or (paths[0] if paths and not stdin else "."))
        chosen = with_cli_overrides(s, select_l or None, ignore_l, extend_l, preview)
        _selection_warnings(chosen)
        if stdin:
            result = run_stdin(_read_stdin(), stdin_filename, resolver, select=select_l or None, ignore=ignore_l,
                               extend_select=extend_l, force_exclude=force_exclude, preview=preview)
        else:
            result = run(
                list(paths) or ["."],
                resolver,
                select=select_l or None,
                ignore=ignore_l,
                extend_select=extend_l,
                jobs=jobs,
                use_cache=not no_cache and not os.environ.get("GPULINT_NO_CACHE"),
                cache_dir=cache_dir,
                force_exclude=force_exclude,
                preview=preview,
            )
        fmt = output_format or s.output_format or "text"
    except ConfigError as exc:
        _config_error(exc)
        sys.exit(EXIT_ERROR)

    findings = result.findings
    errors = result.all_errors
    fixed_count, fixed_lines = 0, []
    if fixing_asked:
        from gpulint.frontends.fixing import fix_run, fixes_shown

        fixing = fix_run(result, paths, unsafe_fixes, apply=True)
        findings, errors, fixed_count = fixing.remaining, fixing.errors, fixing.fixed_count
        fixed_lines = fixes_shown(fixing) if show_fixes and not quiet else []
        if fix_only:
            from gpulint.frontends.reporters.text import error_line

            for path, why in errors:
                click.echo(error_line(path, why, use_color(no_color, sys.stderr)), err=True)
            if not quiet:
                click.echo(f"Fixed {fixed_count} problem{'s' if fixed_count != 1 else ''}.")
            for line in fixed_lines:
                click.echo(line)
            sys.exit(EXIT_FINDINGS if errors and not exit_zero else EXIT_OK)
    if add_noqa:
        _add_noqa(result, list(paths) or ["."], no_color)
    if result.nothing_found and not stdin:
        _warn_nothing_found()
    color = output_file is None and use_color(no_color, sys.stdout)
    rctx = ReportContext(color=color, statistics=statistics, linted=result.linted_count, quiet=quiet,
                         unsafe_fixes=unsafe_fixes, fixed=fixed_count,
                         errors_count=len(errors), rules_selected=bool(chosen.enabled_codes()))
    # a file that could not be checked is a diagnostic in every format (`invalid-syntax`, `io-error`)
    shown = sorted(findings + result.diagnostics, key=Finding.sort_key)
    # the formats read by people print the files that could not be checked themselves
    textual = fmt in ("text", "concise", "full") or (statistics and fmt not in ("json", "json-lines"))
    report = get_reporter(fmt, statistics)(shown, [] if textual else errors, rctx)
    # and one line on stderr, unless the terminal shows the text report already
    if not textual or output_file:
        from gpulint.frontends.reporters.text import error_line

        for path, why in errors:
            click.echo(error_line(path, why, use_color(no_color, sys.stderr)), err=True)
    if output_file:
        _write_output_or_exit(output_file, report.encode("utf-8"), "the report")
    else:
        click.echo(report, nl=False, color=color)
    for line in fixed_lines:  # (--show-fixes: after the report, as Ruff prints them)
        click.echo(line, err=not textual)

    if (findings or errors) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


def _show_settings(paths, select, ignore, extend_select, config_path, stdin_filename, preview=None) -> None:
    from gpulint.frontends.show_settings import first_file, render

    select_l, ignore_l, extend_l = _parse_selection(select, ignore, extend_select)
    try:
        resolver = spec_of(config_path).resolver()
        if _reads_stdin(paths, stdin_filename):
            name = stdin_filename or os.path.join(os.getcwd(), "stdin.py")
            found = (name, resolver.for_path(name))
        else:
            found = first_file(list(paths) or ["."], resolver)
    except ConfigError as exc:
        _config_error(exc)
        sys.exit(EXIT_ERROR)
    if found is None:
        click.echo("error: no Python files found to show the settings of", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(render(found[0], found[1], select_l or None, ignore_l, extend_l, preview), nl=False)


def _show_files(paths, config_path, force_exclude: bool) -> None:
    """`--show-files`: what a run over PATHS would lint, sorted, one per line
    (as `ruff check --show-files`); a path that cannot be read is an error line."""
    from gpulint.engine.discovery import discover
    from gpulint.frontends.reporters.text import error_line, printable

    errors = []
    try:
        found = sorted({os.path.abspath(p) for p, _ in discover(
            list(paths) or ["."], spec_of(config_path).resolver(), lambda p, why: errors.append((p, why)),
            force_exclude=force_exclude)})
    except ConfigError as exc:
        _config_error(exc)
        sys.exit(EXIT_ERROR)
    for path, why in errors:
        click.echo(error_line(path, why, False), err=True)
    for path in found:
        click.echo(printable(path))
    if not found and not errors:
        _warn_nothing_found()
    sys.exit(EXIT_ERROR if errors else EXIT_OK)


def _watch(ctx, paths, stdin_filename, add_noqa) -> None:
    """`check --watch`: the same check, run again on every change."""
    from gpulint.frontends.watch import watch_loop

    if _reads_stdin(paths, stdin_filename) or add_noqa:
        raise click.UsageError(f"--watch cannot be used with {'--add-noqa' if add_noqa else 'stdin'}")

    def run_once() -> int:
        try:
            ctx.invoke(check, **dict(ctx.params, watch=False))
        except SystemExit as exc:  # every run ends in sys.exit: keep watching
            return int(exc.code or 0)
        return EXIT_OK

    watch_loop(run_once, paths)


def _warn_nothing_found() -> None:
    """As Ruff does: a run that found no file to lint says so (a CI job that
    lints nothing must not pass silently); the exit status stays 0."""
    click.echo("gpulint: warning: No Python files found under the given path(s)", err=True)


def _write_output_or_exit(path: str, data: bytes, what: str) -> None:
    """Write what the user asked for to the path they named (see
    `fsutil.write_output`), or one line and exit 2."""
    from gpulint.fsutil import write_output
    from gpulint.frontends.reporters.text import printable

    try:
        write_output(path, data)
    except OSError as exc:
        click.echo(f"gpulint: error: {printable(path)}: cannot write {what}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--apply", "apply_", is_flag=True, help="Write the fixes (default: only show their diff).")
@click.option("--unsafe-fixes", is_flag=True, help="Include fixes that may change behaviour (see each rule's Fix safety).")
@_codes_option("--select", "Rules to enable (codes, prefixes, names, or ALL).")
@_codes_option("--ignore", "Rules to disable.")
@_codes_option("--extend-select", "Rules to enable on top of the selection.")
@config_options
@click.option("--no-color", is_flag=True, help="Never colour the output (also NO_COLOR=1).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="GPULINT_CACHE_DIR", default=None,
              help="Keep the cache here (default: .gpulint_cache in the project root; also GPULINT_CACHE_DIR).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core).")
@click.option("--force-exclude", is_flag=True, help="Apply exclusions to paths named on the command line too.")
@click.option("--fix-only", is_flag=True,
              help="With --apply: neither list the findings left over nor fail for them (as Ruff's --fix-only;"
                   " the gpulint-fix pre-commit hook, which runs before `gpulint check`).")
@_preview_option
@_stdin_option
def fix(paths, apply_, unsafe_fixes, select, ignore, extend_select, config_path, no_color, no_cache, cache_dir, jobs,
        force_exclude, stdin_filename=None, fix_only=False, preview=None) -> None:
    """Show the diff of every fix for PATHS, or write them with --apply.

    With `-` (or --stdin-filename), the source is read from stdin: the diff is
    printed, or with --apply the fixed source is written to stdout."""
    from gpulint.fix.files import unified_diff
    from gpulint.frontends.fixing import fix_run
    from gpulint.frontends.reporters.text import error_line, finding_line
    from gpulint.engine.runner import run

    select_l, ignore_l, extend_l = _parse_selection(select, ignore, extend_select)
    if _reads_stdin(paths, stdin_filename):
        _fix_stdin(stdin_filename, config_path, select_l, ignore_l, extend_l, apply_, unsafe_fixes, no_color,
                   force_exclude, preview)
    try:
        resolver = spec_of(config_path).resolver()
        _selection_warnings(with_cli_overrides(resolver.override or resolver.for_path(paths[0] if paths else "."),
                                               select_l or None, ignore_l, extend_l, preview))
        result = run(
            list(paths) or ["."], resolver, select=select_l or None, ignore=ignore_l, extend_select=extend_l,
            jobs=jobs, use_cache=not no_cache and not os.environ.get("GPULINT_NO_CACHE"), cache_dir=cache_dir,
            force_exclude=force_exclude, preview=preview,
        )
    except ConfigError as exc:
        _config_error(exc)
        sys.exit(EXIT_ERROR)
    if result.nothing_found:
        _warn_nothing_found()
    fixing = fix_run(result, paths, unsafe_fixes, apply_)
    fr, remaining, held, errors = fixing.run, fixing.remaining, fixing.held, fixing.errors
    color_err = use_color(no_color, sys.stderr)
    changed = fr.changed
    n_fixed = fr.fixed_count
    if not apply_:
        for ff in changed:
            click.echo(unified_diff(ff), nl=False)
    for path, why in errors:
        click.echo(error_line(path, why, color_err), err=True)
    color_out = use_color(no_color, sys.stdout)
    if apply_:
        written = [ff for ff in changed if ff.written]
        if not fix_only:
            for f in remaining:
                click.echo(finding_line(f, color_out), color=color_out)
        click.echo(
            f"Fixed {n_fixed} problem{'s' if n_fixed != 1 else ''} in {len(written)} file{'s' if len(written) != 1 else ''}"
            + ("." if fix_only else f" ({len(remaining)} remaining).")
        )
        if fix_only:
            remaining, held = [], 0
    else:
        msg = (
            f"Would fix {n_fixed} problem{'s' if n_fixed != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}"
            f" ({len(remaining)} remaining); run with --apply to write."
            if n_fixed
            else "Nothing to fix."
        )
        click.echo(msg, err=True)
    _end_fix(apply_, n_fixed, bool(remaining), held, bool(errors))


def _end_fix(apply_: bool, n_fixed: int, remaining: bool, held: int, errors: bool = False) -> None:
    """The held-back note and the exit status of `gpulint fix`, from files or stdin."""
    if held:
        click.echo(f"{held} unsafe fix{'es' if held != 1 else ''} held back; add --unsafe-fixes to include them.", err=True)
    if errors:
        sys.exit(EXIT_FINDINGS)
    if not apply_:
        sys.exit(EXIT_FINDINGS if n_fixed else EXIT_OK)
    sys.exit(EXIT_FINDINGS if remaining else EXIT_OK)


def _fix_stdin(stdin_filename, config_path, select_l, ignore_l, extend_l, apply_, unsafe_fixes, no_color,
               force_exclude, preview=None) -> None:
    """`gpulint fix -`: the diff on stdout, or with --apply the fixed source.
    Whatever goes wrong, --apply writes the input back unchanged: an editor
    that replaces its buffer with gpulint's output never loses it."""
    from gpulint.engine.lint import LintError
    from gpulint.fix.files import fix_bytes, unified_diff
    from gpulint.fix.apply import FixError
    from gpulint.frontends.reporters.text import error_line, finding_line
    from gpulint.engine.runner import STDIN_NAME, run_stdin

    data = _read_stdin()
    out = sys.stdout.buffer
    try:
        resolver = spec_of(config_path).resolver()
        result = run_stdin(data, stdin_filename, resolver, select=select_l or None, ignore=ignore_l,
                           extend_select=extend_l, force_exclude=force_exclude, preview=preview)
    except ConfigError as exc:
        if apply_:
            out.write(data)
        _config_error(exc)
        sys.exit(EXIT_ERROR)
    name = stdin_filename or STDIN_NAME
    color_err = use_color(no_color, sys.stderr)
    if not result.results:  # excluded by the config under --force-exclude
        if apply_:
            out.write(data)
        sys.exit(EXIT_OK)
    why = result.results[0].error
    if why is None:
        try:
            ff, fixed = fix_bytes(data, name, result.options[name], unsafe_fixes)
        except (LintError, FixError) as exc:
            why = str(exc)
        except Exception as exc:  # a bug in a fix must not lose the input
            why = f"internal error while fixing: {type(exc).__name__}: {exc} (please report this)"
    if why is not None:
        if apply_:
            out.write(data)
        click.echo(error_line(name, why, color_err), err=True)
        sys.exit(EXIT_FINDINGS)
    n = ff.fixed_count
    if apply_:
        out.write(fixed)
        out.flush()
        for f in ff.remaining:
            click.echo(finding_line(f, color_err), err=True, color=color_err)
        click.echo(f"Fixed {n} problem{'s' if n != 1 else ''} ({len(ff.remaining)} remaining).", err=True)
    elif ff.changed:
        click.echo(unified_diff(ff), nl=False)
        click.echo(f"Would fix {n} problem{'s' if n != 1 else ''} ({len(ff.remaining)} remaining);"
                   " run with --apply to print the fixed source.", err=True)
    else:
        click.echo("Nothing to fix.", err=True)
    _end_fix(apply_, n, bool(ff.remaining), ff.held_back_unsafe)


def _add_noqa(result, roots: List[str], no_color: bool) -> None:
    from gpulint.fix.noqa import run_add_noqa
    from gpulint.frontends.reporters.text import error_line, finding_line

    by_path: Dict[str, list] = {}
    for f in result.findings:
        by_path.setdefault(f.path, []).append(f)
    todo = [(p, result.options[p], fs) for p, fs in sorted(by_path.items()) if p in result.options]
    nr = run_add_noqa(todo, write_roots=roots)
    color_out, color_err = use_color(no_color, sys.stdout), use_color(no_color, sys.stderr)
    for path, why in list(result.all_errors) + nr.errors:
        click.echo(error_line(path, why, color_err), err=True)
    for f in nr.unplaceable:  # still reported: no line of theirs can take a comment
        click.echo(finding_line(f, color_out), color=color_out)
    n, k = nr.added, nr.files
    click.echo(f"Added noqa comments for {n} finding{'s' if n != 1 else ''} in {k} file{'s' if k != 1 else ''}.")
    if nr.unplaceable:
        click.echo(f"{len(nr.unplaceable)} finding{'s' if len(nr.unplaceable) != 1 else ''} could not take a comment"
                   " (the line ends inside a string or with a backslash).", err=True)
    failed = result.all_errors or nr.errors or nr.unplaceable
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@cli.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rules_cmd(output_format: str) -> None:
    """List every rule: code, name, status (stable or preview), default on/off, fix availability and safety.

    A preview rule runs with --preview, or when selected by its exact code;
    `default` says whether it runs without a selection (a preview rule: with
    --preview)."""
    from gpulint.registry import all_rules

    rules = all_rules()
    if output_format == "json":
        import json

        click.echo(json.dumps([
            {"code": c, "name": r.name, "status": "preview" if r.preview else "stable", "preview": r.preview,
             "default": r.default, "fix": r.fix_safety, "message": r.message}
            for c, r in rules.items()
        ], indent=2))
        return
    w = max(len(r.name) for r in rules.values())
    click.echo(f"{'code':<7} {'name':<{w}}  {'status':<7}  {'default':<7}  fix")
    for code, r in rules.items():
        status = "preview" if r.preview else "stable"
        click.echo(f"{code:<7} {r.name:<{w}}  {status:<7}  {'on' if r.default else 'off':<7}  {r.fix_safety}")


@cli.command()
@click.argument("rule")
def explain(rule: str) -> None:
    """Print the documentation of RULE (a code such as GPU101, or a name)."""
    from gpulint.frontends.docs import load_speedups, render_markdown
    from gpulint.registry import rule_by_code_or_name

    cls = rule_by_code_or_name(rule)
    if cls is None:
        raise click.UsageError(f"unknown rule '{rule}' (see `gpulint rules`)")
    click.echo(render_markdown(cls, load_speedups()), nl=False)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="GPULINT_CACHE_DIR", default=None,
              help="Also remove this cache folder (also GPULINT_CACHE_DIR).")
@click.option("--config", "config_path", type=click.Path(), default=None, help="The config that sets the project root.")
def clean(paths, cache_dir, config_path) -> None:
    """Remove the cache of the projects PATHS belong to (default: the current directory)."""
    import shutil

    from gpulint.engine.cache import CACHE_DIR

    try:
        resolver = spec_of(config_path).resolver()
        roots = {(resolver.override or resolver.for_path(p)).root for p in (list(paths) or ["."])}
    except ConfigError as exc:
        _config_error(exc)
        sys.exit(EXIT_ERROR)
    folders = sorted({os.path.join(r, CACHE_DIR) for r in roots} | ({cache_dir} if cache_dir else set()))
    removed = 0
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        try:
            shutil.rmtree(folder)
            removed += 1
            click.echo(f"Removed {folder}")
        except OSError as exc:
            click.echo(f"gpulint: error: cannot remove {folder}: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_ERROR)
    if not removed:
        click.echo("No cache to remove.")


@cli.command()
@click.argument("codes", nargs=-1, metavar="[CODES]...")
@click.option("--device", default="cuda", show_default=True,
              help="Where to measure: cuda (or cuda:N), or cpu (every figure is then labelled CPU).")
@click.option("--reps", type=click.IntRange(min=2), default=10, show_default=True,
              help="Timed repetitions of each side, interleaved bad, good, bad, good, ... (a verdict needs 3 or more).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Whole steps per repetition (default: each workload's own).")
@click.option("--small", is_flag=True, help="Tiny sizes: a smoke test of the workloads; the figures mean nothing.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write every figure to FILE.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw the ratios to FILE.png (needs matplotlib, part of the harness extra).")
@click.option("--timeout", type=click.FloatRange(min=1), default=900, show_default=True,
              help="Seconds one workload may take before it is stopped.")
@click.option("--gpus", "gpu_counts", default=None, metavar="N[,N...]",
              help="Instead of the rules' workloads, run GPU001's multi-GPU study: nn.DataParallel against "
                   "DistributedDataParallel under torchrun on N GPUs (e.g. 2,4,8).")
@click.option("--global-batch", type=click.IntRange(min=1), default=None,
              help="Global batch of the --gpus study (default 512).")
def bench(codes, device, reps, steps, small, json_path, plot_path, timeout, gpu_counts, global_batch) -> None:
    """Time each rule's bad and good workload on the GPU and report what the fix buys.

    CODES select rules as --select does (codes, prefixes, names, ALL); by
    default every rule with a workload. Exit 0 when every workload ran and
    agreed, 1 when one failed or the good side computed something else, 2
    when the harness cannot run (no torch, no CUDA).
    """
    from gpulint.engine.config import expand_selector
    from gpulint.harness import bench as bench_mod
    from gpulint.harness.probe import describe
    from gpulint.registry import all_rules

    if gpu_counts is not None:
        if codes or plot_path:
            raise click.UsageError("--gpus runs GPU001's multi-GPU study: it takes no CODES and no --plot")
        _bench_gpus(gpu_counts, device, reps, steps, small, json_path, timeout, global_batch)
        return
    if global_batch is not None:
        raise click.UsageError("--global-batch is for the --gpus study")
    wanted = split_codes(codes) or ["ALL"]
    validate_codes("CODES", wanted)
    selected = sorted({c for sel in wanted for c in expand_selector(sel)})
    rules = [all_rules()[c] for c in selected if all_rules()[c].bench is not None]
    # (a rule about gpulint's own comments, unused-noqa, has none to have: ALL leaves it out)
    missing = [c for c in selected if all_rules()[c].bench is None and not all_rules()[c].judges_suppressions]
    if not rules:
        raise click.UsageError(f"no workload for {', '.join(selected)}")
    info = _probe_or_exit(device)
    where = describe(info, device)
    report = {"where": where, "device": device, "small": small, "repetitions": reps, "env": info, "rules": []}
    click.echo(f"gpulint bench on {where}" + ("  [--small: smoke test, figures mean nothing]" if small else ""), err=True)
    for code in missing:
        click.echo(f"{code}: no workload yet, skipped", err=True)
    tty = use_color(False, sys.stderr)
    failed = False
    for i, rule in enumerate(rules, 1):
        prefix = f"[{i}/{len(rules)}] {rule.code} {rule.name}"

        def progress(msg, prefix=prefix):
            if tty:
                click.echo(f"\r\033[K{prefix}: {msg}", err=True, nl=False)

        if not tty:
            click.echo(f"{prefix} ...", err=True)
        try:
            rec = bench_mod.measure(rule, device, small, reps, steps, timeout=timeout, progress=progress)
        except bench_mod.WorkloadError as e:
            rec = {"code": rule.code, "name": rule.name, "error": str(e)}
        if tty:
            click.echo("\r\033[K", err=True, nl=False)
        if "error" in rec:
            failed = True
            click.echo(f"{prefix}: workload failed: {rec['error']}", err=True)
        elif not rec["check"].get("ok", True):
            failed = True
        report["rules"].append(rec)
        if json_path:  # after every rule: a run stopped part-way keeps what it measured
            _write_output_or_exit(json_path, (json.dumps(report, indent=1) + "\n").encode("utf-8"), "the JSON")
    click.echo(f"gpulint bench · {where}" + (" · --small (figures mean nothing)" if small else ""))
    click.echo(bench_mod.render_table(report))
    if plot_path:
        try:
            bench_mod.plot(report, plot_path)
        except ImportError:
            click.echo("gpulint bench: --plot needs matplotlib: pip install 'gpulint[harness]'", err=True)
            sys.exit(EXIT_ERROR)
        except bench_mod.WorkloadError as e:
            click.echo(f"gpulint bench: {e}", err=True)
            failed = True
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def _probe_or_exit(device: str) -> dict:
    """What the harness runs on (torch, CUDA, GPU), or a one-line reason and exit 2."""
    from gpulint.harness.probe import HarnessUnavailable, probe, require_device

    try:
        info = probe()
        require_device(info, device)
    except HarnessUnavailable as e:
        click.echo(f"gpulint bench: {e}", err=True)
        sys.exit(EXIT_ERROR)
    return info


def _bench_gpus(counts_text, device, reps, steps, small, json_path, timeout, global_batch) -> None:
    from gpulint.harness import multigpu
    from gpulint.harness.probe import describe

    try:
        counts = multigpu.parse_counts(counts_text)
    except multigpu.StudyError as e:
        raise click.UsageError(str(e))
    info = _probe_or_exit(device)
    where = describe(info, device)
    visible = int(info.get("gpu_count") or 0)
    click.echo(f"gpulint bench --gpus {counts_text} on {where} ({visible} GPUs visible)", err=True)
    try:
        report = multigpu.study(
            counts, device, visible, global_batch=global_batch or multigpu.DEFAULT_GLOBAL_BATCH,
            reps=reps, small=small, timeout=timeout, progress=lambda msg: click.echo(f"  {msg} ...", err=True),
            **({"steps": steps} if steps else {}),
        )
    except multigpu.StudyError as e:
        click.echo(f"gpulint bench: {e}", err=True)
        sys.exit(EXIT_FINDINGS)
    report = {"where": where, "env": info, **report}
    if json_path:
        _write_output_or_exit(json_path, (json.dumps(report, indent=1) + "\n").encode("utf-8"), "the JSON")
    click.echo(f"gpulint bench --gpus · GPU001 data-parallel · {where}" + (" · --small (figures mean nothing)" if small else ""))
    click.echo(multigpu.render_table(report))
    sys.exit(EXIT_OK)


def main(argv: Optional[List[str]] = None) -> None:
    try:
        cli.main(args=argv, prog_name="gpulint")
    except KeyboardInterrupt:  # pragma: no cover
        click.echo("gpulint: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug in gpulint: one line (exit 2), the traceback only when asked
        if os.environ.get("GPULINT_DEBUG"):
            raise
        click.echo(
            f"gpulint: internal error: {type(exc).__name__}: {exc} "
            "(please report this; set GPULINT_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(EXIT_ERROR)
