"""A list's patch series as planning sees them: grouped from index rows and cached
threads (``series.group_series``), their versions linked (``series.link_versions``),
and written to and read from the build state as JSON, a series at a time (an
incremental build regroups only the threads that changed, and links the versions of
only the series it looks at: ``plan.storedseries``). Pure; never reads a message's body
(trailers are the thread page's, collected when it renders).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..patchsubject import parse_subject
from ..series import Posting, Series, group_series, link_versions, version_chain
from ..store.index import Row
from ..threadcache import ThreadEntry

__all__ = [
    "SeriesIndex",
    "SeriesLookup",
    "decode_item",
    "encode_item",
    "encode_series",
    "month_series_label",
    "thread_series",
]


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


class SeriesLookup(ABC):
    """What pages ask of a list's series: a thread's, one by its head, the versions of
    one (its chain) and the newest ones."""

    @abstractmethod
    def of_thread(self, thread_id: str) -> Sequence[Series]:
        """The series of a thread, by (date, head)."""

    @abstractmethod
    def get(self, head: str) -> Series:
        """The series headed by ``head``: one ``of_thread``, ``newest`` or ``chain`` gave."""

    @abstractmethod
    def chain(self, head: str) -> tuple[str, ...]:
        """The heads of every version of the series headed by ``head``, oldest first."""

    @abstractmethod
    def newest(self, count: int) -> list[Series]:
        """The ``count`` latest series by (date, head), latest first."""


class SeriesIndex(SeriesLookup):
    """A list's series, by head and by thread, with their version chains."""

    def __init__(self, series: Iterable[Series]) -> None:
        self.series = sorted(series, key=lambda s: (s.date, s.head))
        self.by_head = {s.head: s for s in self.series}
        self.by_thread: dict[str, list[Series]] = {}
        for found in self.series:
            self.by_thread.setdefault(found.thread, []).append(found)
        self.links = link_versions(self.series)
        self._chains: dict[str, tuple[str, ...]] = {}

    def of_thread(self, thread_id: str) -> Sequence[Series]:
        return self.by_thread.get(thread_id, ())

    def get(self, head: str) -> Series:
        return self.by_head[head]

    def newest(self, count: int) -> list[Series]:
        return self.series[-count:][::-1] if count > 0 else []

    def chain(self, head: str) -> tuple[str, ...]:
        found = self._chains.get(head)
        if found is None:
            found = self._chains[head] = tuple(version_chain(head, self.links))
        return found

    def chains(self) -> dict[str, tuple[str, ...]]:
        """Head -> its chain, for every series with more than one version."""
        return {s.head: chain for s in self.series if len(chain := self.chain(s.head)) > 1}


def encode_item(s: Series) -> list[Any]:
    """A series as the build state keeps it (a JSON array)."""
    return [
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


def decode_item(item: Sequence[Any]) -> Series:
    """What ``encode_item`` made (read back from JSON)."""
    head, thread, title, author, date, version, rfc, resend, tags, total, cover, patches, first = item
    return Series(
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


def encode_series(series: Iterable[Series]) -> str:
    """Series as one JSON text, by (date, head)."""
    return json.dumps([encode_item(s) for s in sorted(series, key=lambda s: (s.date, s.head))], separators=(",", ":"))
