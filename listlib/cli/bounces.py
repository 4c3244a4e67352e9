"""``listlib bounces``: list the subscribers whose mail bounced."""

from __future__ import annotations

import time

import click

from ..values import plural
from .common import (
    Context,
    check_list_option,
    common_options,
    echo,
    echo_json,
    handle_errors,
)


@click.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common_options()
@click.pass_obj
@handle_errors
def bounces(obj: Context, list_slug: str | None, as_json: bool) -> None:
    """List subscribers whose mail bounced: how often, first and last time.

    Bounces are recognised when 'listlib fetch' (or 'import --deliver') files
    them: by their VERP address ([delivery] verp = true) or as a standard
    delivery status notification to the list's bounce address. Nobody is
    unsubscribed automatically.
    """
    from ..delivery.bounce import bounce_report

    config = obj.load()
    check_list_option(config, list_slug)
    rows = bounce_report(config, list_slug)
    if as_json:
        echo_json(rows, indent=2)
        return
    for row in rows:
        first = time.strftime("%Y-%m-%d", time.gmtime(float(row["first"])))  # type: ignore[arg-type]
        last = time.strftime("%Y-%m-%d", time.gmtime(float(row["last"])))  # type: ignore[arg-type]
        bounced = plural(int(row["bounces"]), "bounce")  # type: ignore[call-overload]
        echo(f"{row['list']}  {row['address']}  {bounced} ({first} .. {last})")
    echo(f"{plural(len(rows), 'bouncing subscriber')}")
