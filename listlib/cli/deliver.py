"""``listlib deliver``: send queued posts; show the queue, release or drop posts."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import click

from ..errors import ListlibError, LockTimeoutError
from ..values import plural
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
    from ..delivery.queue import Outbound


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
    from ..delivery.queue import Outbound
    from ..delivery.runner import DeliverReport, Runner, release_or_drop
    from ..delivery.transport import SmtpSession
    from ..delivery.transport import resolve_password as resolve_smtp_password

    config = obj.load()
    quiet = obj.quiet
    assert config.site.queue_dir is not None
    fault = fault_from_env()
    outbound = Outbound(config.site.queue_dir, fault=fault)
    if status:
        _print_queue(outbound, as_json)
        return
    outbound.open()
    if release or drop:
        release_or_drop(outbound, release, drop, wait=wait, log=echo)
        return
    if config.smtp is None:
        raise ListlibError(f"{config.path}: no [smtp] table: 'listlib deliver' needs a server to send through")
    clock = clock_from_env()
    try:
        with outbound.running(wait):
            password = resolve_smtp_password(config.smtp, os.environ)
            progress = Progress(enabled=not (as_json or quiet), unit="recipients")
            with SmtpSession(config.smtp, password) as session, progress.running("Delivering") as bar:
                runner = Runner(
                    outbound,
                    config.delivery,
                    session,
                    max_recipients=config.smtp.max_recipients,
                    clock=clock,
                    fault=fault,
                    progress=bar,
                )
                report = runner.run()
    except LockTimeoutError:
        report = DeliverReport(busy=True)
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


def _print_queue(outbound: Outbound, as_json: bool) -> None:
    from ..delivery.queue import STAGES, QueuedPost

    posts: list[QueuedPost] = []
    if outbound.root.is_dir():
        for stage in STAGES:
            posts.extend(outbound.iter_stage(stage))
    if as_json:
        echo_json([post.to_dict() for post in posts], indent=2, sort_keys=True)
        return
    for post in posts:
        info = post.to_dict()
        line = (
            f"{post.stage:<6}  {post.id}  {post.slug}  {info['message_id'] or '(no Message-ID)'}  "
            f"{plural(info['recipients'], 'recipient')}: {info['done']} done, {info['failed']} failed, "
            f"{info['pending']} pending"
        )
        if post.stage == "retry":
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(post.next_try))
            line += f"; try {post.attempts + 1} at {when}"
        if post.stage == "held":
            line += f"; held: {info['held_reason']}"
        if post.damage is not None:
            line += f"; damaged: {post.damage.reason}"
        echo(line)
        for recipient, reply in list(info["failures"].items())[:20]:
            echo(f"        failed  {recipient}: {reply}")
        for recipient, reply in list(info["temporary"].items())[:5]:
            echo(f"        pending {recipient}: {reply}")
    counts = {stage: sum(1 for p in posts if p.stage == stage) for stage in STAGES}
    echo(f"{plural(len(posts), 'post')} queued: " + ", ".join(f"{counts[s]} {s}" for s in STAGES))
