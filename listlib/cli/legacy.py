"""``listlib legacy import``: map lists' old archives (MHonArc, HyperKitty, Pipermail)
onto the store, so that the build redirects their old URLs."""

from __future__ import annotations

import click

from .common import Context, common_options, echo, echo_json, handle_errors

SHOWN = 20
"""Unmatched old pages listed on a terminal (--json lists them all)."""


@click.group()
@common_options()
def legacy() -> None:
    """Keep the links of a list's old archive working (see [lists.<slug>.legacy])."""


@legacy.command("import")
@click.argument("slugs", nargs=-1, metavar="[SLUG]...")
@click.option("--dry-run", is_flag=True, help="Match and report, but write no map.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON (every unmatched page).")
@common_options()
@click.pass_obj
@handle_errors
def import_(obj: Context, slugs: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Map the old archive of each list SLUG (default: every list with a
    [lists.<slug>.legacy] table) onto its stored messages, and write the map to
    content/<slug>/legacy.tsv; the next 'listlib build' writes a redirect for every
    old URL. Run it again after importing more of the old mail.

    MHonArc pages are matched by the Message-ID each one records, HyperKitty URLs are
    computed from the stored Message-IDs, Pipermail pages are matched by the date,
    author, subject and text they show. Old pages that match no message are listed
    with the reason.
    """
    from ..legacy.importer import import_legacy

    config = obj.load()
    reports = import_legacy(config, slugs, dry_run=dry_run)
    if as_json:
        echo_json([report.to_dict() for report in reports], indent=2, ensure_ascii=False)
        return
    for report in reports:
        for url, reason in report.unmatched[:SHOWN]:
            echo(f"not matched: {url}: {reason}", err=True)
        if len(report.unmatched) > SHOWN:
            echo(f"... and {len(report.unmatched) - SHOWN} more not matched (--json lists them all)", err=True)
        for note in report.notes:
            echo(f"note: {note}", err=True)
        echo(report.summary() + (" (dry run: nothing written)" if dry_run else ""))
    if not dry_run and not obj.quiet:
        echo("Run 'listlib build' to write the redirects.")
