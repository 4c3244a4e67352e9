"""``listlib unrouted``: show the mail that matched no list, and refile it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from ..values import plural
from .common import (
    Context,
    common_options,
    echo,
    echo_json,
    handle_errors,
)
from .hooks import fault_from_env

if TYPE_CHECKING:
    from ..unrouted import UnroutedReport


@click.command()
@click.option("--refile", is_flag=True, help="Move the mail the current lists now match out of _no_list into them.")
@click.option("-n", "--dry-run", is_flag=True, help="With --refile: report what would move; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for scripts).")
@common_options(quiet_help="Print only the count and what to do next, not each List-Id and address.")
@click.pass_obj
@handle_errors
def unrouted(obj: Context, refile: bool, dry_run: bool, as_json: bool) -> None:
    """Show the mail that matched no list (_no_list), and what would route it.

    _no_list is not published (mail not sent to a list the site archives may be
    private; [site] publish_unrouted = true publishes it as "Unsorted mail").
    Prints each List-Id and each recipient address (To, Cc, Delivered-To, ...)
    found in it with its number of messages, first and last date, an example
    subject and the listlib.toml lines that would route it. Once a list is
    added, --refile moves the matching mail into it (crash-safe; mail its list
    already has is not filed twice).
    """
    from ..store.core import Store
    from ..unrouted import refile_unrouted, unrouted_report

    if dry_run and not refile:
        raise click.UsageError("--dry-run goes with --refile")
    config = obj.load()
    with Store(config.site.content_dir, fault=fault_from_env()).open() as store:
        if refile:
            moved = refile_unrouted(store, config, dry_run=dry_run)
            if as_json:
                echo_json(moved.to_dict(), indent=2)
            else:
                echo(moved.summary())
            return
        report = unrouted_report(store, config)
    if as_json:
        echo_json(report.to_dict(), indent=2, ensure_ascii=False)
        return
    _print_unrouted(report, obj.quiet)


def _print_unrouted(report: UnroutedReport, quiet: bool) -> None:
    lines = [f"{plural(report.messages, 'message')} in _no_list (not published)"]
    if not quiet:
        for title, routes in (("List-Ids", report.list_ids), ("Recipient addresses", report.addresses)):
            if routes:
                lines.append(f"\n{title}:")
            for route in routes:
                first, last = (time.strftime("%Y-%m-%d", time.gmtime(t)) for t in (route.first, route.last))
                count = plural(route.messages, "message")
                lines.append(f'  {route.value}: {count}, {first} .. {last}, e.g. "{route.example_subject}"')
                if route.routed_to:
                    lines.append(f"    routed to list {route.routed_to} now: 'listlib unrouted --refile' moves them")
                    continue
                where = f" (add to the existing [lists.{route.slug}] table)" if route.slug_exists else ""
                lines.append(f"    listlib.toml{where}:")
                lines.extend(f"      {line}" for line in route.snippet.splitlines())
        if report.unaddressed:
            lines.append(f"\n{plural(report.unaddressed, 'message')} with no List-Id and no recipient address")
    if len(lines) > 1:
        lines.append("")
    for slug, count in sorted(report.routable.items()):
        lines.append(f"{plural(count, 'message')} now match list {slug}: run 'listlib unrouted --refile' to move them")
    if report.messages and not report.routable:
        lines.append("Add a list to listlib.toml, then run 'listlib unrouted --refile' to move its mail.")
    echo("\n".join(lines))
