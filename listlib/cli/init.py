"""``listlib init``: write a new site skeleton."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import CONFIG_NAME
from .common import (
    Context,
    common_options,
    echo,
    handle_errors,
)


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--title", default="Mailing list archive", show_default=True, help="Site title.")
@click.option("--base-url", default="https://lists.example.org/", show_default=True, help="Public URL of the site.")
@common_options(quiet_help="Print only the last line (what to do next).")
@click.pass_obj
@handle_errors
def init(obj: Context, directory: Path, title: str, base_url: str) -> None:
    """Create a new site skeleton in DIRECTORY (default: here).

    Writes a commented listlib.toml, an empty content/ store, a themes/ folder
    for overrides and a .gitignore. Refuses to overwrite an existing listlib.toml.
    (--config does not apply: the new configuration is DIRECTORY/listlib.toml.)
    """
    from ..skeleton import write_skeleton

    if obj.config_path is not None:
        raise click.UsageError(f"init writes DIRECTORY/{CONFIG_NAME}; give the site's folder instead of --config")
    written = write_skeleton(directory, title=title, base_url=base_url)
    for path in written:
        if not obj.quiet:
            echo(f"created {path}")
    echo(f"Next: edit {directory / CONFIG_NAME}, then run 'listlib import MBOX_OR_FOLDER'.")
