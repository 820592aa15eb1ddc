"""`gpulint check --watch`: lint, then lint again whenever a Python file, a
notebook or a config file under the paths changes, until Ctrl-C (as `ruff
check --watch`). Change notification comes from `watchfiles` (inotify,
FSEvents, ReadDirectoryChangesW), not from polling; re-runs read the cache,
so only what changed is linted again."""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Optional, Sequence

import click

# what a change of which means a re-run
WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb", ".toml", ".gitignore", ".cfg", ".txt")


def _relevant(change, path: str) -> bool:
    return path.endswith(WATCHED_SUFFIXES) and f"{os.sep}.gpulint_cache{os.sep}" not in path


def watch_loop(run_once: Callable[[], int], paths: Sequence[str],
               changes: Optional[Iterable] = None, echo: Callable[[str], None] = click.echo) -> None:
    """Run `run_once`, then again after each batch of relevant changes.
    `changes`: the batches (default: `watchfiles.watch` over `paths`)."""
    echo("Starting gpulint in watch mode...")
    run_once()
    echo(f"[{time.strftime('%H:%M:%S')}] Watching for file changes.")
    if changes is None:
        import watchfiles

        changes = watchfiles.watch(*(list(paths) or ["."]), watch_filter=_relevant, raise_interrupt=False)
    for batch in changes:
        names = sorted({os.path.relpath(p) for _, p in batch})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        echo(f"\n[{time.strftime('%H:%M:%S')}] File change detected ({shown}): linting again.")
        run_once()
        echo(f"[{time.strftime('%H:%M:%S')}] Watching for file changes.")
