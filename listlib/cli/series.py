"""``listlib series``: list the patch series of the archive (``seriesview``), as text or JSON."""

from __future__ import annotations

import json

import click

from .common import Context, check_list_option, common_options, echo, echo_json_text, handle_errors


@click.command()
@click.option("-l", "--list", "list_slug", metavar="SLUG", help="Only this list.")
@click.option("--json", "as_json", is_flag=True, help="Print the series as JSON.")
@common_options()
@click.pass_obj
@handle_errors
def series(obj: Context, list_slug: str | None, as_json: bool) -> None:
    """List patch series: each version of each series ([PATCH vN M/K] subjects),
    oldest first, with its patches found of its size, its other versions, and per
    patch its review state (new, discussed, reviewed) and the trailers
    (Reviewed-by, Acked-by, Tested-by, Fixes ...) its replies gave, collected the
    way b4 collects them (a reply to the cover letter counts for every patch).

    A series is a cover letter (0/K) or a first patch and the patches answering
    it in its thread. Versions are linked by the series' title (the cover
    letter's, or the first patch's) and author: a series' previous version is the
    latest earlier one of a lower version. Brings the thread cache up to date
    first.
    """
    from ..overrides import threading_overrides
    from ..seriesview import format_series, list_series
    from ..store.core import Store
    from ..threadset import ThreadSet

    config = obj.load()
    check_list_option(config, list_slug)
    slugs = [lst.slug for lst in config.lists if list_slug is None or lst.slug == list_slug]
    found = []
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index, threading_overrides(store.root, store.index, [lst.slug for lst in config.lists]))
        known = set(threadset.slugs())
        for slug in slugs:
            if slug in known:
                found.extend(list_series(store.root, store.index, threadset, slug))
    if as_json:
        echo_json_text(json.dumps({"series": found}, indent=2, ensure_ascii=False))
        return
    for item in found:
        echo(format_series(item))
    if not obj.quiet:
        patches = sum(item["found"] for item in found)
        echo(f"{len(found)} series, {patches} patches")
