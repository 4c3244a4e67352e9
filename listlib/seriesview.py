"""What ``listlib series`` shows: a list's patch series (``series``) with their versions,
patches and the trailers their replies gave (``trailers``), as plain data and as text.
Reads the store and the thread cache; never writes to them (the caller brings the
thread cache up to date)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .fsutil import read_file
from .plan.series import SeriesIndex, thread_series
from .series import version_label
from .store.index import Index, Row
from .threadcache import ThreadEntry
from .threadset import ThreadSet
from .trailers import Reply, Review, collect_reviews, reply_text, reply_trailers

__all__ = ["format_series", "list_series"]


def list_series(content: Path, index: Index, threadset: ThreadSet, slug: str) -> list[dict[str, Any]]:
    """Every series of list ``slug``, oldest first, as plain data (``format_series``)."""
    ids = threadset.thread_ids(slug)
    entries = threadset.threads(slug, ids)
    rows = {row.call: row for row in index.rows_by_call(c for e in entries.values() for c, _p, _d in e.messages)}
    found = [series for entry in entries.values() for series in thread_series(entry, rows)]
    series_index = SeriesIndex(found)
    reviews: dict[str, Review] = {}
    for thread_id, in_thread in series_index.by_thread.items():
        replies = list(_replies(content, entries[thread_id], rows, {c for s in in_thread for c in s.calls}))
        given = reply_trailers(replies)
        for series in in_thread:
            reviews.update(collect_reviews(series, replies, given))
    listed = []
    for series in series_index.series:
        before, after = series_index.links.get(series.head, (None, None))
        patches = []
        for number, call in series.patches:
            review = reviews.get(call) or Review((), ())
            patches.append(
                {
                    "number": number,
                    "call": call,
                    "message_id": rows[call].message_id,
                    "subject": rows[call].subject,
                    "state": review.state,
                    "replies": len(review.replies),
                    "trailers": [f"{t.name}: {t.value}" for t in review.trailers],
                }
            )
        names = Counter(t.split(":", 1)[0] for patch in patches for t in patch["trailers"])
        listed.append(
            {
                "list": slug,
                "head": series.head,
                "message_id": rows[series.head].message_id,
                "thread": series.thread,
                "title": series.title,
                "version": series.version,
                "label": version_label(series),
                "rfc": series.rfc,
                "resend": series.resend,
                "tags": list(series.tags),
                "author": series.author,
                "date": datetime.fromtimestamp(series.date, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "cover": series.cover,
                "total": series.total,
                "found": len(series.patches),
                "previous_version": before,
                "next_version": after,
                "versions": list(series_index.chain(series.head)),
                "trailers": dict(sorted(names.items())),
                "patches": patches,
            }
        )
    return listed


def _replies(content: Path, entry: ThreadEntry, rows: Mapping[str, Row], taken: set[str]) -> Iterator[Reply]:
    for call, parent, _depth in entry.messages:
        row = rows.get(call)
        if call in taken or row is None or row.removed or row.no_archive:
            continue
        yield Reply(call, parent, row.from_name, row.from_addr, reply_text(read_file(content / row.path)))


def format_series(series: dict[str, Any]) -> str:
    """One series as text: a line for it, one per patch with its review, the trailers
    indented under their patch."""
    versions = ""
    if series["previous_version"] or series["next_version"]:
        versions = f"  (versions: {' '.join(series['versions'])})"
    lines = [
        f"{series['date'][:10]}  {series['head']}  [{series['label']}] {series['title']}  "
        f"{series['found']}/{series['total']}  {series['author']}{versions}"
    ]
    for patch in series["patches"]:
        replies = f", {patch['replies']} repl{'y' if patch['replies'] == 1 else 'ies'}" if patch["replies"] else ""
        lines.append(f"  {patch['number']:>3}  {patch['call']}  {patch['state']}{replies}")
        lines.extend(f"         {trailer}" for trailer in patch["trailers"])
    return "\n".join(lines)
