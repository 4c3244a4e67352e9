"""Where the builders read a list from: a ``ListSource`` answers the few questions
they ask of a list's rows and threads, and works out the derived ones (thread order,
neighbours, month order, page paths) once.

A full build uses ``LoadedList``, every row and thread held in memory; an incremental
build uses ``plan.stored.StoredList``, which asks the databases for just what the jobs
it looks at need. Never touches the disk itself.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from operator import attrgetter
from typing import NamedTuple

from ..config import ListConfig
from ..series import Series
from ..store.index import REMOVED_TOKEN, Row
from ..threadcache import ThreadEntry, ThreadLine
from ..urls import message_path, thread_page_path
from ..values import Month
from .paging import message_weight, page_numbers
from .series import SeriesIndex, SeriesLookup, thread_series

__all__ = ["ClassLookup", "ListSource", "LoadedList", "PageLookup", "ThreadSummary", "month_of"]

PageLookup = Callable[[Iterable[str]], Mapping[str, dict[str, int]]]
"""Thread ids -> the pages recorded for them (``ListSource.use_pages``; a thread on one
page may be left out)."""
ClassLookup = Callable[[Iterable[str]], Mapping[str, str]]
"""Call numbers -> their messages' classes (``classcache.ClassCache.classes``)."""


def _no_classes(_calls: Iterable[str]) -> Mapping[str, str]:
    return {}


class ThreadSummary(NamedTuple):
    """What list-wide pages need of a thread, without its messages."""

    first: int
    id: str
    last: int
    count: int
    year: int
    """The month of its root message (where its page lives)."""
    month: int


class ListSource(ABC):
    """One list's rows and threads, as the builders read them. Implementations answer
    the few primitive questions; the derived ones are answered here, once."""

    def __init__(
        self, config: ListConfig, description_markdown: str | None, class_of: ClassLookup | None = None
    ) -> None:
        """``class_of``: the messages' classes (none: pages show no class)."""
        self.config = config
        self.description_markdown = description_markdown
        self._class_of = class_of or _no_classes
        self._order: list[ThreadSummary] | None = None
        self._position: dict[str, int] | None = None
        self._months: list[Month] | None = None
        self._pages: dict[str, dict[str, int]] = {}
        self._known_pages: PageLookup | None = None
        self._unknown_pages: Collection[str] = ()
        self._series: SeriesLookup | None = None

    # -- primitives -------------------------------------------------------------------

    @abstractmethod
    def rows(self, calls: Iterable[str]) -> Mapping[str, Row]:
        """Filed and removed rows of these call numbers (unknown ones are left out)."""

    @abstractmethod
    def removed_rows(self, month: Month) -> list[Row]:
        """The removed messages filed under a month (their tombstones)."""

    @abstractmethod
    def revisions(self) -> Mapping[str, str]:
        """``Index.revisions`` of the list: the messages stewards changed under their call
        numbers (removed or redacted), with a token that changes with each change."""

    def removed_calls(self) -> list[str]:
        """The call numbers of the list's removed messages."""
        return sorted(call for call, token in self.revisions().items() if token == REMOVED_TOKEN)

    @abstractmethod
    def month_rows(self, month: Month) -> list[Row]:
        """Every filed row of a month, in any order."""

    @abstractmethod
    def month_counts(self) -> Mapping[Month, int]:
        """Messages per month, for every month with messages."""

    @abstractmethod
    def month_thread_counts(self) -> Mapping[Month, int]:
        """Threads with messages in each month."""

    @abstractmethod
    def month_threads(self, month: Month) -> Mapping[str, int]:
        """Thread id -> its messages in this month, for the threads active in it."""

    @abstractmethod
    def threads(self, ids: Iterable[str]) -> Mapping[str, ThreadEntry]:
        """Thread entries by id (unknown ids are left out)."""

    @abstractmethod
    def thread_lines(self, ids: Iterable[str]) -> Mapping[str, ThreadLine]:
        """Threads by id without their messages (unknown ids are left out)."""

    @abstractmethod
    def thread_of(self, calls: Iterable[str]) -> Mapping[str, str]:
        """Call number -> the id of the thread that holds it."""

    @abstractmethod
    def summaries(self) -> list[ThreadSummary]:
        """Every thread, in any order."""

    @abstractmethod
    def recent(self, count: int) -> list[Row]:
        """The ``count`` newest rows by (date, call), newest first."""

    @abstractmethod
    def all_series(self) -> list[Series]:
        """Every patch series of the list (``plan.series.thread_series`` of each thread)."""

    @abstractmethod
    def forget(self) -> None:
        """Drop the rows and threads remembered so far (``StoredList``; a ``LoadedList``
        keeps what it holds). The thread pages worked out stay: a few bytes per thread,
        and a thread across months would else be read again for them in each month."""

    # -- derived ----------------------------------------------------------------------

    def series_index(self) -> SeriesLookup:
        """The list's series with their version chains, worked out once."""
        if self._series is None:
            self._series = SeriesIndex(self.all_series())
        return self._series

    @property
    def slug(self) -> str:
        return self.config.slug

    def order(self) -> list[ThreadSummary]:
        """Every thread by (first date, id): the order of prev/next links."""
        if self._order is None:
            self._order = sorted(self.summaries())
        return self._order

    def neighbours(self, thread_id: str) -> tuple[str | None, str | None]:
        order = self.order()
        if self._position is None:
            self._position = {summary.id: position for position, summary in enumerate(order)}
        position = self._position[thread_id]
        before = order[position - 1].id if position > 0 else None
        after = order[position + 1].id if position + 1 < len(order) else None
        return before, after

    def summaries_of(self, ids: Iterable[str]) -> dict[str, ThreadSummary]:
        """Thread id -> its summary, for those of these threads that exist."""
        order = self.order()
        if self._position is None:
            self._position = {summary.id: position for position, summary in enumerate(order)}
        return {tid: order[self._position[tid]] for tid in ids if tid in self._position}

    def latest(self, count: int) -> list[ThreadSummary]:
        """The ``count`` threads with the latest (last date, id), latest first."""
        return heapq.nlargest(count, self.order(), key=attrgetter("last", "id"))

    def thread_count(self) -> int:
        return len(self.order())

    def root_totals(self) -> dict[Month, tuple[int, int]]:
        """Month -> (threads rooted in it, their latest last date), for the months that
        hold a thread's root."""
        found: dict[Month, tuple[int, int]] = {}
        for summary in self.order():
            month = _month(summary.year, summary.month)
            count, last = found.get(month, (0, summary.last))
            found[month] = (count + 1, max(last, summary.last))
        return found

    def rooted(self, month: Month) -> list[ThreadSummary]:
        """The threads rooted in a month, in thread order."""
        return [summary for summary in self.order() if (summary.year, summary.month) == month]

    def months(self) -> list[Month]:
        if self._months is None:
            self._months = sorted(self.month_counts())
        return self._months

    def month_neighbours(self, month: Month) -> tuple[Month | None, Month | None]:
        months = self.months()
        position = months.index(month)
        return (
            months[position - 1] if position > 0 else None,
            months[position + 1] if position + 1 < len(months) else None,
        )

    def classes(self, calls: Iterable[str]) -> Mapping[str, str]:
        """Call -> its message's class (``classify``), for those of the calls that have one."""
        return self._class_of(calls)

    def page(self, thread_id: str, root: Row) -> str:
        return message_path(self.slug, month_of(root), thread_id)

    def use_pages(self, known: PageLookup, unknown: Collection[str]) -> None:
        """Take the ``thread_pages`` of every thread but the ``unknown`` ones from ``known``
        (the last build's: ``plan.incremental``), instead of reading their messages."""
        self._known_pages, self._unknown_pages = known, set(unknown)

    def thread_pages(self, ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """Thread id -> call -> the page of the thread that shows it (``plan.paging``),
        for the messages not on page 1 (a thread on one page maps to nothing); worked
        out once per thread (or given: ``use_pages``)."""
        wanted = set(ids)
        missing = [key for key in wanted if key not in self._pages]
        if missing and self._known_pages is not None:
            unknown = self._unknown_pages
            known = [key for key in missing if key not in unknown]
            found = self._known_pages(known)
            self._pages.update((key, found.get(key, {})) for key in known)
            missing = [key for key in missing if key in unknown]
        if missing:
            entries = self.threads(missing)
            long = [e for e in entries.values() if e.count > 1]
            rows = self.rows(call for entry in long for call, _p, _d in entry.messages)
            for thread_id in missing:
                self._pages[thread_id] = {}
            for entry in long:
                calls = [call for call, _p, _d in entry.messages]
                weights = (
                    message_weight(row.size, row.removed or bool(row.no_archive))
                    if (row := rows.get(call)) is not None
                    else message_weight(0, True)
                    for call in calls
                )
                self._pages[entry.id] = {c: n for c, n in zip(calls, page_numbers(weights), strict=True) if n > 1}
        return {tid: self._pages[tid] for tid in wanted}

    def links(self, calls: Iterable[str]) -> tuple[dict[str, str], Mapping[str, str]]:
        """(call -> the message's anchor on the page of its thread that shows it, call ->
        its thread id), for those of the calls that are in a thread (a removed message
        may be in none)."""
        wanted = list(calls)
        thread_of = self.thread_of(wanted)
        thread_ids = set(thread_of.values())
        roots = self.rows(thread_ids)
        pages = self.thread_pages(thread_ids)
        links = {}
        for call in wanted:
            thread_id = thread_of.get(call)
            if thread_id is None:
                continue
            number = pages[thread_id].get(call, 1)
            links[call] = f"{thread_page_path(self.slug, month_of(roots[thread_id]), thread_id, number)}#{call}"
        return links, thread_of


class LoadedList(ListSource):
    """A list held in memory: the rows and every thread (what a full build reads)."""

    def __init__(
        self,
        config: ListConfig,
        rows: Mapping[str, Row],
        threads: Iterable[ThreadEntry],
        description_markdown: str | None = None,
        removed: Iterable[Row] = (),
        revisions: Mapping[str, str] | None = None,
        class_of: ClassLookup | None = None,
    ) -> None:
        """``rows``: the filed messages; ``removed``: the removed ones; ``revisions``: the
        list's ``Index.revisions``; ``class_of``: the messages' classes."""
        super().__init__(config, description_markdown, class_of)
        self._rows = rows
        self._removed = {row.call: row for row in removed}
        self._revisions = dict(revisions or {})
        self._removed_by_month: dict[Month, list[Row]] = defaultdict(list)
        for row in self._removed.values():
            self._removed_by_month[month_of(row)].append(row)
        self._threads = {entry.id: entry for entry in threads}
        self._thread_of = {call: entry.id for entry in self._threads.values() for call, _p, _d in entry.messages}
        self._by_month: dict[Month, list[Row]] = defaultdict(list)
        for row in rows.values():
            self._by_month[month_of(row)].append(row)
        self._month_threads: dict[Month, dict[str, int]] = defaultdict(dict)
        for entry in self._threads.values():
            for year, month, count in entry.months:
                self._month_threads[Month(year, month)][entry.id] = count

    def rows(self, calls: Iterable[str]) -> Mapping[str, Row]:
        found = {}
        for call in calls:
            row = self._rows.get(call) or self._removed.get(call)
            if row is not None:
                found[call] = row
        return found

    def all_rows(self) -> Iterable[Row]:
        """The filed messages, then the removed ones."""
        return itertools.chain(self._rows.values(), self._removed.values())

    def removed_rows(self, month: Month) -> list[Row]:
        return list(self._removed_by_month.get(month, ()))

    def revisions(self) -> Mapping[str, str]:
        return self._revisions

    def month_rows(self, month: Month) -> list[Row]:
        return list(self._by_month.get(month, ()))

    def month_counts(self) -> Mapping[Month, int]:
        return {month: len(rows) for month, rows in self._by_month.items()}

    def month_thread_counts(self) -> Mapping[Month, int]:
        return {month: len(threads) for month, threads in self._month_threads.items()}

    def month_threads(self, month: Month) -> Mapping[str, int]:
        return self._month_threads.get(month, {})

    def threads(self, ids: Iterable[str]) -> Mapping[str, ThreadEntry]:
        return {tid: self._threads[tid] for tid in ids if tid in self._threads}

    def thread_lines(self, ids: Iterable[str]) -> Mapping[str, ThreadLine]:
        return {
            tid: ThreadLine(entry.id, entry.first, entry.last, entry.count, entry.months, entry.authors)
            for tid, entry in self.threads(ids).items()
        }

    def thread_of(self, calls: Iterable[str]) -> Mapping[str, str]:
        return {call: self._thread_of[call] for call in calls if call in self._thread_of}

    def summaries(self) -> list[ThreadSummary]:
        found = []
        for entry in self._threads.values():
            root = month_of(self._rows.get(entry.id) or self._removed[entry.id])
            found.append(ThreadSummary(entry.first, entry.id, entry.last, entry.count, root.year, root.month))
        return found

    def recent(self, count: int) -> list[Row]:
        return sorted(self._rows.values(), key=lambda r: (r.date, r.call), reverse=True)[:count]

    def forget(self) -> None:
        pass  # it holds the list whatever is asked

    def all_series(self) -> list[Series]:
        found: list[Series] = []
        for entry in self._threads.values():
            found.extend(thread_series(entry, self._rows))
        return found


def month_of(row: Row) -> Month:
    """The month a row is filed under (one ``Month`` per month: a plan asks 250,000 times)."""
    return _month(row.year, row.month)


_month = functools.lru_cache(maxsize=4096)(Month)
