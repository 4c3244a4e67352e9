"""``listlib threads``: print thread trees, as text or JSON."""

from __future__ import annotations

import click

from ..errors import ListlibError
from .common import (
    Context,
    common_options,
    echo,
    echo_json_text,
    handle_errors,
)


@click.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("-m", "--month", metavar="YYYY-MM", help="Only threads with messages in this month.")
@click.option("--message", metavar="CALL|MESSAGE-ID", help="Only the thread holding this message.")
@click.option("--json", "as_json", is_flag=True, help="Print the trees as JSON.")
@common_options()
@click.pass_obj
@handle_errors
def threads(obj: Context, list_slug: str | None, month: str | None, message: str | None, as_json: bool) -> None:
    """Print thread trees: call number, date, subject and Message-ID of each
    message, answers indented under what they answer.

    Brings the thread cache up to date first (only months whose messages
    changed are threaded again). A placeholder line stands for a message that
    several answers refer to but the archive does not have.
    """
    from ..store.core import Store
    from ..threadset import ThreadSet
    from ..threadview import dumps_json, format_thread, parse_month, select_threads, thread_view

    config = obj.load()
    try:
        wanted_month = parse_month(month) if month else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--month") from None
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index)
        slugs = threadset.slugs()
        if list_slug is not None:
            if list_slug not in slugs:
                raise click.BadParameter(f"no threaded messages in list {list_slug!r}", param_hint="--list")
            slugs = [list_slug]
        found = []
        for slug in slugs:
            ids = select_threads(threadset, store.index, slug, wanted_month, message)
            entries = threadset.threads(slug, ids)
            rows = {
                row.call: row for row in store.index.rows_by_call(c for e in entries.values() for c, _, _ in e.messages)
            }
            found.extend(thread_view(slug, entries[i], rows) for i in sorted(entries, key=lambda i: entries[i].first))
    if message is not None and not found:
        raise ListlibError(f"no filed message has call number or Message-ID {message!r}")
    if as_json:
        echo_json_text(dumps_json({"threads": found}))  # json.dumps recurses once per reply
        return
    for view in found:
        echo(format_thread(view))
