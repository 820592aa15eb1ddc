"""`gpulint server`: a Language Server over stdio (needs the `server` extra,
`pip install 'gpulint[server]'`, which brings pygls). This module imports
neither pygls nor the engine: `gpulint --help` and `gpulint check` stay as
fast as without it."""

from __future__ import annotations

import logging
import sys

import click

INSTALL_HINT = "gpulint server: needs pygls; install it with: pip install 'gpulint[server]'"


@click.command()
@click.option("--config", "config_path", type=click.Path(), default=None,
              help="Use this config file for every document (default: the closest one, as `check`).")
@click.option("--stdio", is_flag=True, help="Talk over stdin and stdout (the default and only transport; "
              "editors' clients pass it).")
def server(config_path, stdio=False) -> None:
    """Run the Language Server over stdio (for editors: diagnostics and quick fixes)."""
    try:
        import lsprotocol.types  # noqa: F401
        import pygls.lsp.server  # noqa: F401
    except ImportError:
        click.echo(INSTALL_HINT, err=True)
        sys.exit(2)
    from gpulint.engine.config import ConfigError, ConfigResolver

    if config_path is not None:
        try:
            ConfigResolver(config_path)  # a bad --config fails now, in one line, not per document
        except ConfigError as exc:
            from gpulint.frontends.reporters.text import printable

            click.echo(f"gpulint: error: {printable(str(exc))}", err=True)
            sys.exit(2)
    from gpulint.frontends.server.protocol import create_server

    # stdout carries the protocol: anything else printed must go to stderr
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="gpulint server: %(levelname)s: %(message)s")
    ls = create_server(config_path)
    ls.start_io(stdin, stdout)
    # LSP: exit code 0 after a shutdown request, 1 when the client went away without one
    sys.exit(0 if ls.shutdown_requested else 1)
