"""``listlib deliver``: send queued posts; show the queue, release or drop posts."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from .common import (
    Context,
    Progress,
    common_options,
    echo,
    echo_json,
    handle_errors,
    wait_option,
)
from .hooks import clock_from_env, fault_from_env

# Delivery is imported by the commands that use it, when they run (cron runs of
# 'listlib build' should not load it).
if TYPE_CHECKING:
    from ..delivery.service import QueueListing


@click.command()
@click.option("--status", is_flag=True, help="Print the queue (new, retry, failed, held posts) and send nothing.")
@click.option("--release", metavar="ID", multiple=True, help="Let a held post go out (to new/); repeatable.")
@click.option("--drop", metavar="ID", multiple=True, help="Remove a held, failed or damaged post for good; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (or with --status, the queue) as JSON.")
@wait_option("How long to wait for another 'listlib deliver' before skipping this run.")
@common_options(quiet_help="Print nothing unless something was sent or failed.")
@click.pass_obj
@handle_errors
def deliver(
    obj: Context,
    status: bool,
    release: tuple[str, ...],
    drop: tuple[str, ...],
    as_json: bool,
    wait: float,
) -> None:
    """Send queued posts to the subscribers of their list through the [smtp] server.

    Posts are queued when 'listlib fetch' (or 'listlib import --deliver') files
    mail for a list with deliver = true. New posts go first, then retries that
    are due. Each recipient is marked done, durably, as soon as the server
    accepts it, so a kill or a crash never sends a post to anyone twice (except
    the one transaction in flight). Temporary failures (4xx, server down) are
    retried with a growing wait; permanent ones (5xx) move the post to failed/
    with the reply. A damaged post (a file missing, unreadable or changed) goes
    to failed/ with the reason and is sent to nobody; the others still go out.
    Runs never overlap. With --status, prints the queue.
    """
    from ..delivery.runner import release_or_drop
    from ..delivery.service import deliver_queue, open_outbound, queue_listing

    config = obj.load()
    quiet = obj.quiet
    fault = fault_from_env()
    if status:
        _print_queue(queue_listing(config), as_json)
        return
    if release or drop:
        release_or_drop(open_outbound(config, fault=fault), release, drop, wait=wait, log=echo)
        return
    progress = Progress(enabled=not (as_json or quiet), unit="recipients")
    report = deliver_queue(
        config,
        environ=os.environ,
        wait=wait,
        clock=clock_from_env(),
        fault=fault,
        progress=lambda: progress.running("Delivering"),
    )
    if as_json:
        echo_json(report.to_dict(), indent=2, sort_keys=True)
        return
    if quiet and not report.eventful:
        return
    echo(report.summary())
    for item in report.damaged:
        echo(
            f"warning: post {item['id']} is damaged: {item['reason']}; moved to failed/ and not sent "
            f"('listlib deliver --drop {item['id']}' removes it)",
            err=True,
        )
    if report.error:
        echo(f"warning: {report.error}; the posts stay queued and are retried later", err=True)


def _print_queue(listing: QueueListing, as_json: bool) -> None:
    if as_json:
        echo_json(listing.to_list(), indent=2, sort_keys=True)
        return
    for line in listing.lines():
        echo(line)
