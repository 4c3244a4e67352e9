"""``listlib publish``: copy output/ to S3-compatible object storage, incrementally and
in an order that keeps readers whole; ``run_publish`` is shared with ``build --publish``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..config import Config
from .common import Context, Progress, common_options, echo, echo_json, handle_errors
from .hooks import fault_from_env

if TYPE_CHECKING:
    from ..publish.run import PublishReport


@click.command()
@click.argument("target", required=False, metavar="[s3://BUCKET/PREFIX]")
@click.option("--dry-run", is_flag=True, help="Print what would be uploaded and deleted; change nothing.")
@click.option(
    "--verify",
    is_flag=True,
    help="List the bucket first and upload again what its record names but it lacks (one LIST per 1,000 objects).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--files", "with_files", is_flag=True, help="With --json: list every file uploaded and deleted.")
@common_options(quiet_help="Print nothing unless something was uploaded or deleted.")
@click.pass_obj
@handle_errors
def publish(obj: Context, target: str | None, dry_run: bool, verify: bool, as_json: bool, with_files: bool) -> None:
    """Upload the website in output/ to S3-compatible object storage.

    The bucket is [publish] target in listlib.toml, or TARGET. Only files whose
    content changed since the last publish are uploaded; files a build removed
    are deleted by the publish after the next one, so readers holding an older
    page or search index still find them. Credentials come from the standard
    AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ~/.aws, instance roles).
    """
    config = obj.load()
    report = run_publish(config, target, dry_run=dry_run, verify=verify, quiet=obj.quiet, as_json=as_json)
    if as_json:
        echo_json(report.to_dict(with_files=with_files), indent=2, ensure_ascii=False)
    elif dry_run and not obj.quiet:
        for path in report.uploads:
            echo(f"upload  {path}")
        for path in report.deletes:
            echo(f"delete  {path}")


def run_publish(
    config: Config,
    target: str | None = None,
    *,
    dry_run: bool = False,
    verify: bool = False,
    quiet: bool,
    as_json: bool,
) -> PublishReport:
    """Publish with a progress bar on a terminal; print the summary unless ``as_json``
    (or ``quiet`` and nothing changed)."""
    from ..publish.run import publish_site, publish_target

    where = publish_target(config, target)
    progress = Progress(enabled=not (as_json or quiet or dry_run), unit="files")
    with progress.running("Publishing") as bar:
        report = publish_site(
            config,
            where,
            dry_run=dry_run,
            verify=verify,
            progress=lambda done, total, files: bar(done, total, files),
            fault=fault_from_env(),
        )
    if not as_json and (not quiet or report.uploaded or report.deleted):
        echo(report.summary())
    return report
