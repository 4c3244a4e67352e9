"""A list as an incremental build reads it: a ``plan.sources.ListSource`` that asks the
index and the thread cache for just what the builders of the jobs it runs need.

Answers are remembered for the life of the object (one build, inside read
snapshots), so builders that share rows or threads fetch them once, until ``forget``:
a full build (``plan.full``) plans one list-month at a time and forgets between them,
so that only one shard's rows and threads are held. This module only reads; it never
writes to the store or the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..config import ListConfig
from ..series import Series
from ..store.index import FILED, REMOVED, Index, Row
from ..threadcache import ThreadEntry, ThreadLine
from ..threadset import ThreadSet
from ..values import Month
from .series import SeriesLookup
from .sources import ClassLookup, ListSource, ThreadSummary

__all__ = ["StoredList"]


class StoredList(ListSource):
    """One list, read on demand from the index and the thread cache."""

    def __init__(
        self,
        config: ListConfig,
        description_markdown: str | None,
        index: Index,
        threadset: ThreadSet,
        class_of: ClassLookup | None = None,
    ) -> None:
        super().__init__(config, description_markdown, class_of)
        self._index = index
        self._threadset = threadset
        self._rows: dict[str, Row | None] = {}
        self._threads: dict[str, ThreadEntry | None] = {}
        self._thread_of: dict[str, str | None] = {}
        self._month_totals: dict[Month, tuple[int, int]] | None = None
        self._recent: list[Row] = []
        self._month_rows: dict[Month, list[Row]] = {}
        self._all_series: list[Series] | None = None
        self._summaries: dict[str, ThreadSummary] = {}
        self._root_totals: dict[Month, tuple[int, int]] | None = None

    def use_series(self, series: list[Series] | SeriesLookup) -> None:
        """Give the list's series, all of them or a lookup (``plan.incremental`` reads
        them from the last build's and the changed threads: regrouping every thread is
        O(archive), ``plan.storedseries``)."""
        if isinstance(series, SeriesLookup):
            self._all_series, self._series = None, series
        else:
            self._all_series, self._series = series, None

    def all_series(self) -> list[Series]:
        if self._all_series is None:
            raise RuntimeError(f"the series of list {self.slug} were not given (use_series)")
        return self._all_series

    def forget(self) -> None:
        """Drop the rows and threads remembered so far (the list-wide answers, thread
        order, month totals and thread pages, stay)."""
        self._rows.clear()
        self._threads.clear()
        self._thread_of.clear()
        self._month_rows.clear()

    def let_go(self) -> None:
        """Drop what a full plan worked out for the whole list (its rows and threads, thread
        order, thread pages and series) once the list is planned: the site's own jobs
        after it are answered from the thread cache, as in an incremental plan, and a
        plan holds one list's threads at a time, not the site's."""
        self.forget()
        self._order = self._position = None
        self._pages = {}
        self._series = self._all_series = None
        self._summaries.clear()

    def held(self) -> int:
        """How many rows it remembers."""
        return len(self._rows)

    def rows(self, calls: Iterable[str]) -> Mapping[str, Row]:
        wanted = set(calls)
        missing = [key for key in wanted if key not in self._rows]
        if missing:
            found = {row.call: row for row in self._index.rows_by_call(missing)}
            for call in missing:
                row = found.get(call)
                wanted_row = row is not None and row.list == self.slug and row.state in (FILED, REMOVED)
                self._rows[call] = row if wanted_row else None
        return {call: row for call in wanted if (row := self._rows[call]) is not None}

    def month_rows(self, month: Month) -> list[Row]:
        rows = self._month_rows.get(month)
        if rows is None:
            rows = self._month_rows[month] = self._index.month_rows(self.slug, month.year, month.month)
            self._rows.update((row.call, row) for row in rows)
        return list(rows)

    def removed_rows(self, month: Month) -> list[Row]:
        rows = self._index.removed_month_rows(self.slug, month.year, month.month)
        self._rows.update((row.call, row) for row in rows)
        return rows

    def revisions(self) -> Mapping[str, str]:
        return self._index.revisions(self.slug)

    def _totals(self) -> dict[Month, tuple[int, int]]:
        # From the threads (a few rows per thread), not by counting the index's rows.
        if self._month_totals is None:
            self._month_totals = {Month(*m): n for m, n in self._threadset.cache.month_totals(self.slug).items()}
        return self._month_totals

    def thread_month_counts(self) -> dict[Month, list[int]]:
        """Month -> how many of its messages each thread with messages in it holds (a
        row per thread and month of the thread cache, no message read)."""
        return {
            Month(m.year, m.month): [count for _tid, count in m.threads]
            for m in self._threadset.cache.months(self.slug)
        }

    def month_counts(self) -> Mapping[Month, int]:
        return {month: messages for month, (messages, _threads) in self._totals().items()}

    def month_thread_counts(self) -> Mapping[Month, int]:
        return {month: threads for month, (_messages, threads) in self._totals().items()}

    def month_threads(self, month: Month) -> Mapping[str, int]:
        return dict(self._threadset.month(self.slug, month).threads)

    def threads(self, ids: Iterable[str]) -> Mapping[str, ThreadEntry]:
        wanted = set(ids)
        missing = [key for key in wanted if key not in self._threads]
        if missing:
            found = self._threadset.threads(self.slug, missing)
            for thread_id in missing:
                self._threads[thread_id] = found.get(thread_id)
            # Each message of these threads is in this thread: no query for their thread_of.
            for entry in found.values():
                self._thread_of.update((call, entry.id) for call, _parent, _depth in entry.messages)
        return {tid: entry for tid in wanted if (entry := self._threads[tid]) is not None}

    def thread_lines(self, ids: Iterable[str]) -> Mapping[str, ThreadLine]:
        wanted = list(ids)
        # A thread read whole already holds its line (a full plan reads a month's threads first).
        found = {
            tid: ThreadLine(entry.id, entry.first, entry.last, entry.count, entry.months, entry.authors)
            for tid in wanted
            if (entry := self._threads.get(tid)) is not None
        }
        missing = [tid for tid in wanted if tid not in found]
        if missing:
            found.update(self._threadset.cache.thread_lines(self.slug, missing))
        return found

    def thread_of(self, calls: Iterable[str]) -> Mapping[str, str]:
        wanted = set(calls)
        missing = [key for key in wanted if key not in self._thread_of]
        if missing:
            found = {entry.call: entry.thread for entry in self._threadset.cache.messages_of_calls(self.slug, missing)}
            for call in missing:
                self._thread_of[call] = found.get(call)
        return {call: tid for call in wanted if (tid := self._thread_of[call]) is not None}

    def summaries(self) -> list[ThreadSummary]:
        return list(map(ThreadSummary._make, self._threadset.cache.thread_summaries(self.slug)))

    # Without the whole order (an incremental plan): the thread cache's indexes answer.

    def neighbours(self, thread_id: str) -> tuple[str | None, str | None]:
        if self._order is not None:
            return super().neighbours(thread_id)
        summary = self.summaries_of([thread_id])[thread_id]
        return self._threadset.cache.thread_neighbours(self.slug, summary.first, thread_id)

    def summaries_of(self, ids: Iterable[str]) -> dict[str, ThreadSummary]:
        if self._order is not None:
            return super().summaries_of(ids)
        wanted = set(ids)
        missing = [tid for tid in wanted if tid not in self._summaries]
        for found in self._threadset.cache.summaries_of(self.slug, missing):
            self._summaries[found[1]] = ThreadSummary._make(found)
        return {tid: self._summaries[tid] for tid in wanted if tid in self._summaries}

    def latest(self, count: int) -> list[ThreadSummary]:
        if self._order is not None:
            return super().latest(count)
        return list(map(ThreadSummary._make, self._threadset.cache.latest_threads(self.slug, count)))

    def thread_count(self) -> int:
        if self._order is not None:
            return super().thread_count()
        return sum(count for count, _last in self.root_totals().values())

    def root_totals(self) -> dict[Month, tuple[int, int]]:
        if self._order is not None:
            return super().root_totals()
        if self._root_totals is None:
            totals = self._threadset.cache.root_totals(self.slug)
            self._root_totals = {Month(*month): found for month, found in totals.items()}
        return self._root_totals

    def rooted(self, month: Month) -> list[ThreadSummary]:
        if self._order is not None:
            return super().rooted(month)
        found = self._threadset.cache.rooted_summaries(self.slug, month.year, month.month)
        return list(map(ThreadSummary._make, found))

    def recent(self, count: int) -> list[Row]:
        if len(self._recent) < count:
            self._recent = self._index.newest_rows(self.slug, count)
        return self._recent[:count]
