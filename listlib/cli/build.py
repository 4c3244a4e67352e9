"""``listlib build``: bring the website in output/ up to date; ``run_build`` is shared
with ``import --build`` and ``fetch --build``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..config import Config
from ..config.checks import check_scheduler
from ..values import plural
from .common import (
    Context,
    Progress,
    common_options,
    echo,
    echo_error,
    echo_json,
    handle_errors,
)
from .hooks import fault_from_env

if TYPE_CHECKING:
    from ..build import BuildReport


@click.command()
@click.option("--plan", "plan_only", is_flag=True, help="Print what would be rebuilt; write nothing.")
@click.option(
    "--clean", is_flag=True, help="Delete what the build owns in output/ and its records, then build everything."
)
@click.option(
    "--verify",
    is_flag=True,
    help="Also find files edited in place in output/ (a stat of every file; deleted or replaced ones are always).",
)
@click.option(
    "-j", "--jobs", "workers", type=click.IntRange(min=1), metavar="N", help="Worker processes (default: all cores)."
)
@click.option(
    "--cluster",
    metavar="tcp://HOST:8786",
    help="Render on the workers of this Dask scheduler (default: [build] cluster, else this machine's cores). "
    "Needs pip install 'listlib[cluster]', and the site's folders on a filesystem every worker mounts.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary (and with --plan, the jobs) as JSON.")
@click.option("--files", "with_files", is_flag=True, help="With --json: list every file written and removed.")
@click.option(
    "--publish", "then_publish", is_flag=True, help="Then upload the site as 'listlib publish' does (in this process)."
)
@common_options(quiet_help="Print nothing unless files were written or removed.")
@click.pass_obj
@handle_errors
def build(
    obj: Context,
    plan_only: bool,
    clean: bool,
    verify: bool,
    workers: int | None,
    cluster: str | None,
    as_json: bool,
    with_files: bool,
    then_publish: bool,
) -> None:
    """Build the website in output/ from content/, the theme and listlib.toml.

    Only files whose inputs changed are rewritten, and files that no longer
    belong are removed: a build with nothing new writes nothing. Threads are
    brought up to date first (see 'listlib threads'). Every file is replaced
    atomically, so the site is always readable while it builds.
    """
    from ..build import plan_site

    config = obj.load()
    if plan_only:
        report = plan_site(config)
        if as_json:
            echo_json(report.to_dict(), indent=2)
            return
        for item in report.planned:
            if "remove" in item:
                echo(f"remove  {item['job']}" + "".join(f"\n        {path}" for path in item["remove"]))
            else:
                made = item["files"]
                echo(f"render  {item['job']}" + (f" ({plural(len(made), 'file')})" if made else " (new)"))
        echo(f"{plural(report.jobs_run, 'job')} to run, {report.jobs_kept} unchanged")
        return
    if cluster is not None:
        problem = check_scheduler(cluster)
        if problem:
            raise click.BadParameter(problem, param_hint="--cluster")
    report = run_build(
        config, workers=workers, clean=clean, verify=verify, quiet=obj.quiet, as_json=as_json, cluster=cluster
    )
    if then_publish:
        from .publish import run_publish

        published = run_publish(config, quiet=obj.quiet, as_json=as_json)
        if as_json:
            echo_json({**report.to_dict(with_files=with_files), "publish": published.to_dict()}, indent=2)
        return
    if as_json:
        echo_json(report.to_dict(with_files=with_files), indent=2)


def run_build(
    config: Config,
    *,
    workers: int | None = None,
    clean: bool = False,
    verify: bool = False,
    quiet: bool,
    as_json: bool,
    cluster: str | None = None,
) -> BuildReport:
    """Build the site with a progress bar on a terminal; print the summary unless
    ``as_json`` (or ``quiet`` and nothing changed). ``cluster``: the Dask scheduler to
    render on (default: ``[build] cluster``); without Dask installed, say how to
    install it and exit 2."""
    from ..build import CLUSTER_MISSING, build_site, cluster_installed

    cluster = cluster or config.build.cluster
    if cluster is not None and not cluster_installed():
        echo_error(CLUSTER_MISSING)
        sys.exit(2)

    progress = Progress(enabled=not (as_json or quiet), unit="jobs")
    with progress.running("Building") as bar:
        report = build_site(
            config,
            workers=workers,
            clean=clean,
            verify=verify,
            progress=bar,
            fault=fault_from_env(),
            cluster=cluster,
        )
    if not as_json and (not quiet or report.written or report.removed):
        echo(report.summary())
    return report
