"""A list's patch series as planning sees them: grouped from index rows and cached
threads (``series.group_series``), their versions linked (``series.link_versions``),
and written to and read from the build state as JSON (an incremental build regroups
only the threads that changed). Pure; never reads a message's body (trailers are
the thread page's, collected when it renders).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ..patchsubject import parse_subject
from ..series import Posting, Series, group_series, link_versions, version_chain
from ..store.index import Row
from ..threadcache import ThreadEntry

__all__ = ["SeriesIndex", "decode_series", "encode_series", "month_series_label", "thread_series"]


def thread_series(entry: ThreadEntry, rows: Mapping[str, Row]) -> list[Series]:
    """The series of one thread. Removed and withheld (``X-No-Archive``) messages are
    left out: their subjects are not to be shown."""
    if not any("[" in row.subject for call, _p, _d in entry.messages if (row := rows.get(call)) is not None):
        return []
    postings = []
    for call, parent, _depth in entry.messages:
        row = rows.get(call)
        if row is None or row.removed or row.no_archive:
            continue
        postings.append(Posting(call, parent, row.subject, row.from_addr, row.date, entry.id))
    return group_series(postings)


def month_series_label(row: Row) -> tuple[str, int] | None:
    """What a month page says of a thread whose root is a patch: its version label
    (``RFC v3``) and size (``v3, 7 patches`` in English), from the root's subject alone;
    else None."""
    if row.no_archive or "[" not in row.subject:
        return None
    parsed = parse_subject(row.subject)
    if not parsed.is_patch or parsed.reply:
        return None
    words = [*(["RFC"] if parsed.rfc else []), f"v{parsed.version}"]
    return " ".join(words), parsed.total or 1


class SeriesIndex:
    """A list's series, by head and by thread, with their version chains."""

    def __init__(self, series: Iterable[Series]) -> None:
        self.series = sorted(series, key=lambda s: (s.date, s.head))
        self.by_head = {s.head: s for s in self.series}
        self.by_thread: dict[str, list[Series]] = {}
        for found in self.series:
            self.by_thread.setdefault(found.thread, []).append(found)
        self.links = link_versions(self.series)
        self._chains: dict[str, tuple[str, ...]] = {}

    def chain(self, head: str) -> tuple[str, ...]:
        """The heads of every version of the series headed by ``head``, oldest first."""
        found = self._chains.get(head)
        if found is None:
            found = self._chains[head] = tuple(version_chain(head, self.links))
        return found

    def chains(self) -> dict[str, tuple[str, ...]]:
        """Head -> its chain, for every series with more than one version."""
        return {s.head: chain for s in self.series if len(chain := self.chain(s.head)) > 1}


def encode_series(series: Iterable[Series]) -> str:
    """Series as the build state keeps them."""
    return json.dumps(
        [
            [
                s.head,
                s.thread,
                s.title,
                s.author,
                s.date,
                s.version,
                s.rfc,
                s.resend,
                list(s.tags),
                s.total,
                s.cover,
                [list(p) for p in s.patches],
                s.first_title,
            ]
            for s in sorted(series, key=lambda s: (s.date, s.head))
        ],
        separators=(",", ":"),
    )


def decode_series(text: str | None) -> list[Series]:
    """What ``encode_series`` wrote (nothing for None)."""
    found = []
    for item in json.loads(text or "[]"):
        head, thread, title, author, date, version, rfc, resend, tags, total, cover, patches, first = item
        found.append(
            Series(
                head,
                thread,
                title,
                author,
                date,
                version,
                rfc,
                resend,
                tuple(tags),
                total,
                cover,
                tuple((int(n), str(c)) for n, c in patches),
                first,
            )
        )
    return found
