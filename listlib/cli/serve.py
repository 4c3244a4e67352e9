"""``listlib serve``: the development server (build, serve, watch, rebuild, reload)."""

from __future__ import annotations

import click

from ..config import Config, load_config
from .common import (
    Context,
    common_options,
    echo,
    echo_error,
    handle_errors,
)


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback: only this machine)."
)
@click.option(
    "-p", "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one)."
)
@click.option("--no-reload", is_flag=True, help="Do not watch for changes, rebuild or reload pages; just serve.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a web browser once it is built.")
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="Build worker processes (default: all cores).",
)
@common_options()
@click.pass_obj
@handle_errors
def serve(obj: Context, host: str, port: int, no_reload: bool, open_browser: bool, workers: int | None) -> None:
    """Build the site, serve output/ over HTTP, and rebuild it as you work.

    Watches content/, the site's theme folders and listlib.toml; after each burst
    of changes (an import, a saved template) rebuilds incrementally and every open
    page reloads itself. A failed rebuild keeps the server running and shows the
    error in the browser; fixing the file recovers. Requests wait while a rebuild
    runs, so a half-built site is never served. The reload script is added to
    pages as they are sent: files in output/ are never changed. Ctrl-C stops.
    """
    import webbrowser

    from ..serve import DevServer, ServeOptions

    config = obj.load()

    def load() -> Config:
        fresh = load_config(config.path)
        for warning in fresh.warnings:
            echo(f"warning: {fresh.path}: {warning}", err=True)
        return fresh

    options = ServeOptions(host=host, port=port, live_reload=not no_reload, workers=workers)
    server = DevServer(config, load, options, log=echo, error=echo_error)
    if host not in ("127.0.0.1", "localhost", "::1"):
        echo(f"warning: listening on {host}: anyone who can reach this machine can read the site", err=True)

    def ready(url: str) -> None:
        what = "watching for changes" if options.live_reload else "not watching for changes"
        echo(f"Serving {config.site.output_dir} at {url} ({what}; Ctrl-C to stop)")
        if open_browser and not webbrowser.open(url):
            echo(f"warning: no web browser found; open {url} yourself", err=True)

    try:
        server.run(ready)
    except KeyboardInterrupt:
        echo("Stopped.")
