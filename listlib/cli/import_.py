"""``listlib import``: file mail from files, folders or standard input into the store;
also the filing reports and delivery intake that ``listlib fetch`` shares."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..config import Config
from ..errors import ListlibError
from ..values import plural
from .build import run_build
from .common import (
    Context,
    Progress,
    build_option,
    check_list_option,
    command_line,
    common_options,
    echo,
    echo_error,
    echo_json,
    handle_errors,
)
from .hooks import clock_from_env, fault_from_env

if TYPE_CHECKING:
    from ..delivery.intake import Intake
    from ..filing import FilingReport
    from ..store.core import Store
    from ..upstream import UpstreamReport


def failure_line(item: dict[str, object]) -> str:
    detail = f" ({item['detail']})" if item.get("detail") else ""
    return f"{item['origin']}: {item['reason']}{detail}"


def _print_report(report: FilingReport, quiet: bool) -> None:
    for warning in report.warnings:
        echo(f"warning: {warning}", err=True)
    if not quiet:
        if report.skipped_files:
            shown = ", ".join(report.skipped_files[:5])
            more = f" and {len(report.skipped_files) - 5} more" if len(report.skipped_files) > 5 else ""
            verb = "is" if len(report.skipped_files) == 1 else "are"
            echo(f"skipped {plural(len(report.skipped_files), 'file')} that {verb} not mail: {shown}{more}", err=True)
        for item in report.collision_details[:20]:
            echo(
                f"Message-ID collision: <{item['message_id']}> from {item['origin']} differs from "
                f"{', '.join(map(str, item['others']))}; kept as {item['call']}",
                err=True,
            )
        if len(report.collision_details) > 20:
            echo(f"... and {len(report.collision_details) - 20} more collisions (see --json)", err=True)
        for item in report.failures[:20]:
            echo(f"failed: {failure_line(item)} (kept as _failed/{item['call']}.eml)", err=True)
    echo(report.summary())


def print_unrouted_hint(count: int, *, dry_run: bool = False) -> None:
    """Mail in _no_list is never shown on the site: say so, and where to look next."""
    if count:
        what = plural(count, "message")
        verb = "would match" if dry_run else "matched"
        echo(f"{what} {verb} no list (kept in _no_list, not published): see 'listlib unrouted'", err=True)


@click.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="File every message under this list, ignoring routing.")
@click.option("-n", "--dry-run", is_flag=True, help="Report what would be filed; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (for scripts and cron).")
@click.option(
    "--mbox-format",
    type=click.Choice(["auto", "mboxo", "mboxrd"]),
    default="auto",
    show_default=True,
    help="How to read '>From ' lines in mbox files; auto means mboxrd for 'From mboxrd@z' files, else mboxo.",
)
@click.option(
    "--deliver",
    "for_delivery",
    is_flag=True,
    help="Also queue the messages of lists with deliver = true for 'listlib deliver' (posts, not old archives).",
)
@click.option(
    "--apply-deletions",
    is_flag=True,
    help="Public-inbox sources: take down (as 'listlib remove' does) the stored copies of messages "
    "deleted upstream; without it they are only reported.",
)
@build_option
@common_options()
@click.pass_obj
@handle_errors
def import_(
    obj: Context,
    sources: tuple[Path, ...],
    list_slug: str | None,
    dry_run: bool,
    as_json: bool,
    mbox_format: str,
    for_delivery: bool,
    apply_deletions: bool,
    then_build: bool,
) -> None:
    """File the mail in SOURCES into the store.

    Each SOURCE is '-' (one message or an mbox on standard input, e.g. from an
    MTA alias), an mbox file (mboxo, mboxrd, mboxcl/cl2; gzip, bzip2 or xz
    compressed), a Pipermail .txt/.txt.gz month or a folder of them, a maildir
    (with sub-folders), a folder of message files, or a public-inbox v2 inbox
    (a folder with git/0.git, git/1.git, ...; or one epoch's .git folder). A
    public-inbox is read from its git history, and each epoch remembers the last
    commit filed, so that the next import reads only new commits (a cron 'git
    fetch' then 'listlib import' keeps a mirror); messages deleted upstream are
    reported, and taken down with --apply-deletions. Mail is routed to lists by
    List-Id, then by To/Cc/Delivered-To addresses; unmatched mail goes to
    _no_list, and mail that cannot be filed to _failed with its reason.
    Importing the same mail again files nothing twice. With --deliver, the
    messages of lists with deliver = true are also queued for their
    subscribers (each message once, however often it is imported).
    With --build, the website is then brought up to date as 'listlib build'
    does, in the same process (an MTA alias publishes each post at once).
    """
    if then_build and dry_run:
        raise click.UsageError("--build cannot be used with --dry-run")
    config = obj.load()
    check_list_option(config, list_slug)
    if for_delivery and not any(lst.delivery for lst in config.lists):
        raise ListlibError(f"{config.path}: --deliver: no list has deliver = true")
    from ..filing import file_sources
    from ..store.core import Store

    progress = Progress(enabled=not (as_json or obj.quiet))
    fault = fault_from_env()
    with Store(config.site.content_dir, fault=fault).open() as store, progress.running("Importing") as bar:
        intake = open_intake(config, store, fault) if for_delivery and not dry_run else None
        report = file_sources(
            store,
            config.lists,
            list(sources),
            forced_list=list_slug,
            dry_run=dry_run,
            mbox_format=mbox_format,  # type: ignore[arg-type]
            progress=bar,
            stdin=sys.stdin.buffer if "-" in map(str, sources) else None,
            after_filing=intake,
        )
    upstream = None
    if report.deleted_upstream:
        from ..upstream import settle_upstream_deletions

        upstream = settle_upstream_deletions(
            config, report, apply=apply_deletions, by=command_line(), clock=clock_from_env(), fault=fault
        )
    if not as_json:
        _print_report(report, obj.quiet)
        if not obj.quiet:
            print_unrouted_hint(report.no_list, dry_run=dry_run)
        if intake is not None:
            print_intake(intake, obj.quiet)
        if upstream is not None:
            print_upstream(upstream, obj.quiet)
    for item in report.unreadable:
        echo_error(f"{item['path']}: {item['reason']}")
    # A file that could not be read: the rest is filed, but the import is not complete.
    built = run_build(config, quiet=obj.quiet, as_json=as_json) if then_build and not report.unreadable else None
    if as_json:
        data = report.to_dict()
        if intake is not None:
            data["delivery"] = asdict(intake.report)
        if upstream is not None:
            data["upstream_deletions"] = upstream.to_dict()
        if built is not None:
            data["build"] = built.to_dict()
        echo_json(data, indent=2, sort_keys=True)
    if report.unreadable:
        sys.exit(1)


def open_intake(config: Config, store: Store, fault: Callable[[str], None] | None) -> Intake | None:
    """The filing hook that queues posts of lists with deliver = true, or None when there are none
    (then delivery is not even imported: a cron fetch of a site without delivery never loads it)."""
    if not any(lst.delivery for lst in config.lists):
        return None
    from ..delivery.intake import open_intake as open_delivery_intake

    return open_delivery_intake(config, store, clock=clock_from_env(), fault=fault)


def print_upstream(upstream: UpstreamReport, quiet: bool) -> None:
    """The messages deleted upstream (a few, one per line), then what became of them."""
    if not quiet:
        for item in upstream.deletions[:20]:
            calls = ", ".join(map(str, item["calls"])) or "not in the store"  # type: ignore[call-overload]
            echo(f"deleted upstream: <{item['message_id']}> {item['subject']!r} ({calls})", err=True)
        if len(upstream.deletions) > 20:
            echo(f"... and {len(upstream.deletions) - 20} more (see --json)", err=True)
        if upstream.removal is not None:
            echo(upstream.removal.summary())
    echo(upstream.summary())


def print_intake(intake: Intake, quiet: bool) -> None:
    report = intake.report
    if quiet and not report.eventful:
        return
    for item in report.held:
        echo(f"held: {item['list']}/{item['id']}: {item['reason']} (see 'listlib deliver --status')", err=True)
    for item in report.loops:
        echo(f"not forwarded: {item['list']}/{item['id']}: {item['reason']}", err=True)
    echo(report.summary())
