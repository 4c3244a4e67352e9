"""``listlib threads``: print thread trees, as text or JSON; correct them with
``--attach ID --to PARENT``, ``--detach ID`` and ``--undo ID`` (``threadedit``)."""

from __future__ import annotations

import click

from ..classify import CLASSES
from ..errors import ListlibError
from .common import (
    Context,
    check_list_option,
    command_line,
    common_options,
    echo,
    echo_json,
    echo_json_text,
    handle_errors,
)


@click.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("-m", "--month", metavar="YYYY-MM", help="Only threads with messages in this month.")
@click.option("--message", metavar="CALL|MESSAGE-ID", help="Only the thread holding this message.")
@click.option(
    "--class",
    "message_class",
    type=click.Choice(CLASSES),
    help="Only threads holding a message of this class; shows every message's class.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the trees (or the edit's report) as JSON.")
@click.option("--attach", metavar="ID", help="Override: this message answers the message given with --to.")
@click.option("--to", "parent", metavar="PARENT", help="The message --attach makes it answer.")
@click.option("--detach", metavar="ID", help="Override: this message starts its own thread.")
@click.option("--undo", metavar="ID", help="Remove this message's override: its headers thread it again.")
@click.option("--reason", default="", metavar="TEXT", help="Why (kept in the ledger with the edit).")
@click.option("-n", "--dry-run", is_flag=True, help="Check the edit and say what it would do; change nothing.")
@common_options()
@click.pass_obj
@handle_errors
def threads(
    obj: Context,
    list_slug: str | None,
    month: str | None,
    message: str | None,
    message_class: str | None,
    as_json: bool,
    attach: str | None,
    parent: str | None,
    detach: str | None,
    undo: str | None,
    reason: str,
    dry_run: bool,
) -> None:
    """Print thread trees: call number, date, subject and Message-ID of each
    message, answers indented under what they answer.

    Brings the thread cache up to date first (only months whose messages
    changed are threaded again). A placeholder line stands for a message that
    several answers refer to but the archive does not have.

    Correct a thread the headers got wrong with --attach ID --to PARENT (ID
    answers PARENT), --detach ID (ID starts its own thread) or --undo ID (remove
    ID's override). ID and PARENT: a call number, or a Message-ID naming one
    message (--list picks the list). The overrides live in content/threads.toml
    (also editable by hand); each edit is recorded in the ledger. Run 'listlib
    build' afterwards: only the threads and months the edit touches are rebuilt,
    and every message keeps its URL.

    --class CLASS (patch, cover, review, vote, announcement, automated,
    discussion) keeps the threads holding at least one message of that class
    and shows each message's class; classes follow the [classes] rules of
    listlib.toml and are worked out once per message (kept in the cache folder).
    """
    edits = [(name, value) for name, value in (("attach", attach), ("detach", detach), ("undo", undo)) if value]
    if edits or parent is not None or dry_run or reason:
        if message_class is not None:
            raise click.UsageError("--class only selects threads to print; it does not go with an edit")
        _edit(obj, edits, parent, list_slug, month, message, as_json, reason, dry_run)
        return
    from ..classcache import ClassCache
    from ..overrides import threading_overrides
    from ..store.core import Store
    from ..threadset import ThreadSet
    from ..threadview import dumps_json, format_thread, parse_month, select_threads, thread_view

    config = obj.load()
    check_list_option(config, list_slug)
    try:
        wanted_month = parse_month(month) if month else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--month") from None
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index, threading_overrides(store.root, store.index, [lst.slug for lst in config.lists]))
        slugs = threadset.slugs()
        if list_slug is not None:
            if list_slug not in slugs:
                raise click.BadParameter(f"no threaded messages in list {list_slug!r}", param_hint="--list")
            slugs = [list_slug]
        classes: dict[str, str] | None = None
        if message_class is not None:
            with ClassCache(config.site.cache_dir, config.classes.rules) as cache:
                cache.update(store.index, store.root)
                classes = cache.all()
        found = []
        for slug in slugs:
            ids = select_threads(threadset, store.index, slug, wanted_month, message)
            entries = threadset.threads(slug, ids)
            if classes is not None:
                entries = {
                    i: e for i, e in entries.items() if any(classes.get(c) == message_class for c, _, _ in e.messages)
                }
            rows = {
                row.call: row for row in store.index.rows_by_call(c for e in entries.values() for c, _, _ in e.messages)
            }
            ordered = sorted(entries, key=lambda i: entries[i].first)
            found.extend(thread_view(slug, entries[i], rows, classes) for i in ordered)
    if message is not None and not found:
        raise ListlibError(f"no filed message has call number or Message-ID {message!r}")
    if as_json:
        echo_json_text(dumps_json({"threads": found}))  # json.dumps recurses once per reply
        return
    for view in found:
        echo(format_thread(view))


def _edit(
    obj: Context,
    edits: list[tuple[str, str]],
    parent: str | None,
    list_slug: str | None,
    month: str | None,
    message: str | None,
    as_json: bool,
    reason: str,
    dry_run: bool,
) -> None:
    from ..threadedit import edit_override
    from .hooks import clock_from_env

    if len(edits) != 1:
        raise click.UsageError("give one of --attach ID --to PARENT, --detach ID or --undo ID")
    ((name, ident),) = edits
    if (name == "attach") != (parent is not None):
        raise click.UsageError("--attach needs --to PARENT, and --to goes only with --attach")
    if month is not None or message is not None:
        raise click.UsageError("--month and --message only choose threads to print; not with --attach/--detach/--undo")
    action = {"attach": "attach", "detach": "detach", "undo": "undo-override"}[name]
    config = obj.load()
    check_list_option(config, list_slug)
    report = edit_override(
        config,
        action,  # type: ignore[arg-type]
        ident,
        parent=parent,
        slug=list_slug,
        reason=reason,
        by=command_line(),
        dry_run=dry_run,
        clock=clock_from_env(),
    )
    if as_json:
        echo_json(report.to_dict(), indent=2)
        return
    echo(report.summary())
    if report.changed and not dry_run and not obj.quiet:
        echo("Run 'listlib build' to bring the website up to date.")
