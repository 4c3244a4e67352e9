"""``listlib search``: query the search index the last build wrote."""

from __future__ import annotations

from datetime import UTC, datetime

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
@click.argument("query", nargs=-1, required=True)
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only messages of this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=10, show_default=True, help="How many hits.")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many hits (paging).")
@click.option(
    "--by-thread",
    is_flag=True,
    help="Group the hits shown by thread: its subject, then its matching messages, oldest first.",
)
@common_options()
@click.pass_obj
@handle_errors
def search(
    obj: Context,
    query: tuple[str, ...],
    list_slug: str | None,
    as_json: bool,
    limit: int,
    offset: int,
    by_thread: bool,
) -> None:
    """Search the archive with the index the last build wrote (output/search/).

    Gives the same answers as the site's search page. QUERY: words (all must
    match), "exact phrases" (quote them for the shell too), -excluded, prefix*,
    from:NAME, subject:WORD, list:SLUG, after:YYYY[-MM[-DD]], before:YYYY[-MM[-DD]],
    is:CLASS (patch, cover, review, vote, announcement, automated, discussion).
    Put -- before a query that excludes words: listlib search -- bitmap -journal

    With --by-thread the hits of the page (--limit, --offset) are grouped by thread,
    each thread where its best hit ranks, as the site's search page shows them.
    """
    from ..search.query import only_excludes
    from ..search.reader import Hit, Source, group_by_thread
    from ..search.reader import search as run_search
    from ..urls import SEARCH_DIR

    config = obj.load()
    check_list_option(config, list_slug)
    results = run_search(
        Source(config.site.output_dir / SEARCH_DIR),
        " ".join(query),
        offset=offset,
        limit=limit,
        lists=[list_slug] if list_slug else None,
    )
    base = config.site.base_url

    def as_dict(hit: Hit) -> dict[str, object]:
        return {
            "message_id": hit.message_id,
            "call": hit.call,
            "list": hit.list,
            "url": base + hit.url,
            "subject": hit.subject,
            "author": hit.author,
            "date": datetime.fromtimestamp(hit.date, UTC).isoformat(),
            "score": hit.score,
        }

    def day(hit: Hit) -> str:
        return datetime.fromtimestamp(hit.date, UTC).strftime("%Y-%m-%d")

    threads = group_by_thread(results.hits) if by_thread else []
    if as_json and by_thread:
        shown = [
            {"subject": t.subject, "url": base + t.first.url, "hits": [as_dict(hit) for hit in t.hits]} for t in threads
        ]
        echo_json({"total": results.total, "threads": shown}, indent=2, ensure_ascii=False)
        return
    if as_json:
        hits = [as_dict(hit) for hit in results.hits]
        echo_json({"total": results.total, "hits": hits}, indent=2, ensure_ascii=False)
        return
    for thread in threads:
        echo(f"{thread.subject or '(no subject)'}  ({plural(len(thread.hits), 'message')})")
        echo(f"    {base + thread.first.url}")
        for hit in thread.hits:
            echo(f"  {day(hit)}  {hit.list}  {hit.author}")
            echo(f"      {base + hit.url}")
    for hit in [] if by_thread else results.hits:
        echo(f"{day(hit)}  {hit.list}  {hit.subject or '(no subject)'}  ({hit.author})")
        echo(f"    {base + hit.url}")
    shown = f"{offset + 1}-{offset + len(results.hits)} of " if results.hits else ""
    echo(shown + plural(results.total, "message"))
    if not results.total and only_excludes(" ".join(query)):
        echo("Only words to leave out: add a word to search for (-word leaves out messages the other words find).")
