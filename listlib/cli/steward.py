"""``listlib hide``, ``listlib unhide``, ``listlib remove``, ``listlib redact`` and
``listlib ledger``: take messages off the website and back, take them down for good,
replace one by an edited copy, and show the ledger of what stewards did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..controls import terminal_text
from .build import run_build
from .common import (
    Context,
    build_option,
    check_list_option,
    command_line,
    common_options,
    echo,
    echo_json,
    handle_errors,
)
from .hooks import clock_from_env, fault_from_env

SHOWN = 20
"""Messages listed one per line before the summary (all of them with --dry-run)."""


def _selection_options(func: Any) -> Any:
    for option in reversed(
        [
            click.argument("ids", nargs=-1, metavar="[ID]..."),
            click.option(
                "--from-file",
                type=click.Path(dir_okay=False, path_type=Path),
                metavar="FILE",
                help="Also the IDs in FILE, one per line ('#' starts a comment).",
            ),
            click.option("--query", metavar="QUERY", help="Also every message a search finds (as 'listlib search')."),
            click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only messages of this list."),
            click.option("-m", "--month", metavar="YYYY-MM", help="Only messages filed under this month."),
            click.option("--sender", metavar="ADDRESS", help="Only messages from this address (or @domain)."),
            click.option("-n", "--dry-run", is_flag=True, help="List what would change; change nothing."),
            click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for scripts)."),
            build_option,
        ]
    ):
        func = option(func)
    return func


def _selector(
    ids: tuple[str, ...],
    from_file: Path | None,
    query: str | None,
    list_slug: str | None,
    month: str | None,
    sender: str | None,
) -> Any:
    """The ``stewardship.Selector`` the selection options describe."""
    from ..stewardship import Selector, read_id_file
    from ..threadview import parse_month

    try:
        wanted_month = parse_month(month) if month else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--month") from None
    all_ids = ids + tuple(read_id_file(from_file) if from_file is not None else ())
    return Selector(all_ids, query, list_slug, wanted_month, sender)


def _act(
    obj: Context,
    action: str,
    ids: tuple[str, ...],
    from_file: Path | None,
    query: str | None,
    list_slug: str | None,
    month: str | None,
    sender: str | None,
    dry_run: bool,
    as_json: bool,
    then_build: bool,
    reason: str,
) -> None:
    from ..stewardship import steward

    if then_build and dry_run:
        raise click.UsageError("--build cannot be used with --dry-run")
    selector = _selector(ids, from_file, query, list_slug, month, sender)
    config = obj.load()
    check_list_option(config, list_slug)
    by = command_line()
    report = steward(
        config,
        action,  # type: ignore[arg-type]
        selector,
        reason=reason,
        by=by,
        dry_run=dry_run,
        clock=clock_from_env(),
        fault=fault_from_env(),
    )
    built = run_build(config, quiet=obj.quiet, as_json=as_json) if then_build and report.messages else None
    if as_json:
        data = report.to_dict()
        if built is not None:
            data["build"] = built.to_dict()
        echo_json(data, indent=2, ensure_ascii=False)
        return
    if not obj.quiet:
        limit = None if dry_run else SHOWN
        for row in report.messages[:limit]:
            subject = terminal_text(row.subject)[:70] or "(no subject)"
            echo(f"{row.call}  {row.list}  {subject}  <{terminal_text(row.from_addr)}>")
        if limit is not None and len(report.messages) > limit:
            echo(f"... and {len(report.messages) - limit} more")
    echo(report.summary())
    if report.messages and not dry_run and not then_build:
        echo("Run 'listlib build' to bring the website up to date.")


@click.command()
@_selection_options
@click.option("--reason", required=True, metavar="TEXT", help="Why (kept in the ledger; required).")
@common_options()
@click.pass_obj
@handle_errors
def hide(obj: Context, reason: str, **options: Any) -> None:
    """Take messages off the website; they stay in the store.

    For spam and mistakes: reversible with 'listlib unhide'. ID: a call number
    or a Message-ID. Choose messages by ID, --from-file, --query (a search of
    the last build's index), or --list/--month/--sender alone; --list, --month
    and --sender also narrow IDs and queries. The action is recorded in the
    ledger (content/ledger.jsonl) first; the next build leaves the messages out
    of every page, feed, download and the search index, and a re-import or
    fetch of them is refused. An ID that matches nothing changes nothing.
    """
    _act(obj, "hide", reason=reason, **options)


@click.command()
@_selection_options
@click.option("--reason", default="", metavar="TEXT", help="Why (kept in the ledger).")
@common_options()
@click.pass_obj
@handle_errors
def unhide(obj: Context, reason: str, **options: Any) -> None:
    """Put hidden messages back on the website, exactly as they were.

    Chooses messages as 'listlib hide' does; recorded in the ledger.
    """
    _act(obj, "unhide", reason=reason, **options)


@click.command()
@_selection_options
@click.option(
    "--reason",
    default="",
    metavar="TEXT",
    help="Why (required; kept in the ledger, shown on the tombstone with [site] show_removal_reasons).",
)
@click.option(
    "--show-quotes",
    is_flag=True,
    help="List the messages that quote the chosen ones (to redact them first); remove nothing.",
)
@common_options()
@click.pass_obj
@handle_errors
def remove(obj: Context, reason: str, show_quotes: bool, **options: Any) -> None:
    """Take messages down for good (privacy requests, leaked secrets).

    The message files are deleted from the store; the ledger keeps only
    digests (of the bytes, of sender+subject+text, of the Message-ID) that
    refuse a copy of them at every later import or fetch, where they were
    filed, and their place in their threads. Their posts waiting in the
    delivery queue are deleted, never sent.

    After the next build no page, feed, download or search file holds them:
    their permanent URL and their Message-ID page say "removed on DATE" (and
    --reason, when [site] show_removal_reasons is on), and their replies stay
    where they were.

    Chooses messages as 'listlib hide' does. This cannot be undone; copies
    already mirrored, crawled or delivered are out of reach. To find the
    replies that quote them (and edit those first), run with --show-quotes.
    """
    if show_quotes:
        _show_quotes(obj, **options)
        return
    if not reason.strip():
        raise click.UsageError("--reason is required: say why the messages are removed (it is kept in the ledger)")
    _act(obj, "remove", reason=reason, **options)


def _show_quotes(
    obj: Context,
    ids: tuple[str, ...],
    from_file: Path | None,
    query: str | None,
    list_slug: str | None,
    month: str | None,
    sender: str | None,
    dry_run: bool,
    as_json: bool,
    then_build: bool,
) -> None:
    from ..stewardship import find_quotes

    if then_build:
        raise click.UsageError("--build cannot be used with --show-quotes")
    selector = _selector(ids, from_file, query, list_slug, month, sender)
    config = obj.load()
    check_list_option(config, list_slug)
    quotes = find_quotes(config, selector)
    if as_json:
        echo_json({"quotes": [quote.__dict__ for quote in quotes]}, indent=2, ensure_ascii=False)
        return
    for quote in quotes:
        subject = terminal_text(quote.subject)[:70] or "(no subject)"
        echo(f"{quote.call}  {quote.list}  quotes {quote.quotes} ({quote.lines} lines)  {subject}")
    echo(f"{len(quotes)} {'message quotes' if len(quotes) == 1 else 'messages quote'} the chosen messages")


@click.command()
@click.argument("ident", metavar="ID")
@click.option("--edit", "interactive", is_flag=True, help="Edit a copy in $VISUAL or $EDITOR.")
@click.option(
    "--from-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Take the edited copy from FILE (the whole message, headers and body).",
)
@click.option("--reason", default="", metavar="TEXT", help="Why: the public reason (kept in the ledger; required).")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for scripts).")
@build_option
@common_options()
@click.pass_obj
@handle_errors
def redact(
    obj: Context,
    ident: str,
    interactive: bool,
    from_file: Path | None,
    reason: str,
    dry_run: bool,
    as_json: bool,
    then_build: bool,
) -> None:
    """Replace a message by an edited copy (a phone number, a password, an address out).

    ID: a call number or a Message-ID. The copy keeps the call number, the URL
    and the place in its thread, and must keep the Message-ID and Date; its page
    says it was edited (and why, with [site] show_removal_reasons). The
    original's bytes leave the store; the ledger keeps digests that make a later
    import or fetch of the original a duplicate of the edited message.
    """
    from ..errors import ListlibError
    from ..stewardship import redact as redact_message

    if interactive == (from_file is not None):
        raise click.UsageError("give either --edit or --from-file FILE")
    if then_build and dry_run:
        raise click.UsageError("--build cannot be used with --dry-run")
    if not reason.strip():
        raise click.UsageError("--reason is required: say why the message is edited (it is kept in the ledger)")
    config = obj.load()
    if from_file is not None:
        try:
            raw = from_file.read_bytes()
        except FileNotFoundError:
            raise ListlibError(f"{from_file}: no such file") from None
        except OSError as exc:
            raise ListlibError(f"{from_file}: cannot read ({exc.strerror})") from None
    else:
        raw = _edited_copy(config, ident)
    report = redact_message(
        config,
        ident,
        raw,
        reason=reason,
        by=command_line(),
        dry_run=dry_run,
        clock=clock_from_env(),
        fault=fault_from_env(),
    )
    built = run_build(config, quiet=obj.quiet, as_json=as_json) if then_build else None
    if as_json:
        data = report.to_dict()
        if built is not None:
            data["build"] = built.to_dict()
        echo_json(data, indent=2, ensure_ascii=False)
        return
    echo(report.summary())
    if not dry_run and not then_build:
        echo("Run 'listlib build' to bring the website up to date.")


def _edited_copy(config: Any, ident: str) -> bytes:
    """The message's bytes after the user's editor ran on a private copy (which is
    deleted afterwards: it holds what is being taken out)."""
    import tempfile

    from ..errors import ListlibError
    from ..stewardship import stored_bytes

    row, original = stored_bytes(config, ident)
    with tempfile.TemporaryDirectory(prefix="listlib-redact-") as folder:
        path = Path(folder) / f"{row.call}.eml"
        path.write_bytes(original)
        path.chmod(0o600)
        click.edit(filename=str(path))
        edited = path.read_bytes()
    if edited == original:
        raise ListlibError(f"the copy of {row.call} was not changed; nothing was changed")
    return edited


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@common_options()
@click.pass_obj
@handle_errors
def ledger(obj: Context, as_json: bool) -> None:
    """List the ledger: what stewards did to the archive, when, why and how.

    One entry per 'listlib hide', 'listlib unhide', 'listlib remove',
    'listlib redact' and thread override edit
    ('listlib threads --attach/--detach/--undo'), oldest first, from
    content/ledger.jsonl (which must never be edited by hand).
    """
    from ..store.core import Store

    config = obj.load()
    with Store(config.site.content_dir).open() as store:
        entries = store.ledger()
    if as_json:
        echo_json({"entries": [entry.to_dict() for entry in entries]}, indent=2, ensure_ascii=False)
        return
    for entry in entries:
        calls = " ".join(m.call for m in entry.messages[:8]) + (" ..." if len(entry.messages) > 8 else "")
        reason = f": {terminal_text(entry.reason)}" if entry.reason else ""
        echo(f"{entry.seq:>4}  {entry.at}  {entry.action} {len(entry.messages)}{reason}")
        echo(f"      {calls}")
        echo(f"      by {terminal_text(entry.by)}")
    if not obj.quiet:
        echo(f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}")
