"""The pages of a site, described as jobs: a pure function of the configuration, the
index rows of the filed messages and the cached threads.

There is one builder per kind of job (``SiteJobs.thread``, ``SiteJobs.month`` ...).
Each reads what it needs through a ``ListSource``, a small per-list view of the rows
and threads: a full build walks every job with a source that holds everything in
memory; an incremental build calls the builders only for the jobs a change can reach,
with a source that asks the databases. The same builders give the same arguments and
so the same keys either way, which keeps incremental output byte-identical to a build
from scratch. This module never touches the disk.

Each job carries exactly the inputs its files depend on (see ``plan``), so its key
changes when, and only when, one of its files may change:

========  ==========================================  ======================================
kind      files                                       inputs (besides templates and site)
========  ==========================================  ======================================
thread    thread page + attachments of its messages   the tree, content hashes, prev/next
tmbox     the thread's ``.mbox.gz``                   its messages
messages  a month's ``.eml`` copies and the redirect  the month's messages and their threads
          pages of its non-root messages
month     month page (the threads active in it)       those threads, prev/next month
date      the month's by-date page                    the month's messages, prev/next month
mmbox     the month's ``.mbox.gz``                    its messages
list      list index                                  months, counts, latest threads
feed      Atom feed                                   the latest messages
sitemap   a month's sitemap: the thread pages rooted  those threads and their last dates
          in it
site      site index, 404 page, robots.txt, sitemap   every list's summary and sitemaps
          index
mid       Message-ID lookup pages for one hash prefix those messages' pages
static    the theme's static files                    their digests
========  ==========================================  ======================================
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from .config import ListConfig
from .controls import SUBJECT_CHARS, clean_header_text
from .display import obfuscate_addresses
from .plan import Job, job_key
from .store.index import Row
from .threadcache import ThreadEntry, ThreadLine
from .urls import (
    feed_path,
    list_index_path,
    message_id_hash,
    message_path,
    month_mbox_path,
    raw_path,
    sitemap_path,
    thread_mbox_path,
)
from .values import Month

__all__ = [
    "FEED_SIZE",
    "LATEST_THREADS",
    "TEMPLATES",
    "ListSource",
    "LoadedList",
    "SiteInputs",
    "SiteJobs",
    "ThreadSummary",
    "mid_prefix",
]

FEED_SIZE = 30
"""Messages in a list's Atom feed."""
LATEST_THREADS = 10
"""Threads listed as latest on a list's index page."""
PARTICIPANTS_SHOWN = 4
SITEMAP_SIZE = 40_000
"""Thread pages per sitemap file (the protocol allows 50,000): a month with more threads
has several."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "thread": ("thread.html",),
    "tmbox": (),
    "messages": ("redirect.html",),
    "month": ("month.html",),
    "date": ("date.html",),
    "mmbox": (),
    "list": ("list.html",),
    "feed": ("feed.atom",),
    "sitemap": ("sitemap.xml",),
    "site": ("index.html", "404.html", "robots.txt", "sitemap-index.xml", "search.html"),
    "mid": ("redirect.html", "mid.html"),
    "static": (),
}
"""The templates each kind of job renders with (their fingerprints are part of its key)."""

NOT_ARCHIVED = "(not archived)"


@dataclass(frozen=True)
class SiteInputs:
    """Site-wide settings every page depends on."""

    title: str
    base_url: str
    obfuscate_addresses: bool
    load_remote_images: bool

    def as_tuple(self) -> tuple[object, ...]:
        return (self.title, self.base_url, self.obfuscate_addresses, self.load_remote_images)


class ThreadSummary(NamedTuple):
    """What list-wide pages need of a thread, without its messages."""

    first: int
    id: str
    last: int
    count: int
    year: int
    """The month of its root message (where its page lives)."""
    month: int


def mid_prefix(message_id: str) -> str:
    """The Message-ID lookup bucket (``mid`` job id) a Message-ID belongs to: 4,096 of
    them, so that a new message re-renders a dozen lookup pages at 50,000 messages, not
    two hundred. (Only the job is finer than the ``mid/<h[0:2]>/`` folders of the URLs.)"""
    return _bucket(message_id_hash(message_id))


def _bucket(digest: str) -> str:
    """``mid_prefix`` of the Message-ID whose ``message_id_hash`` is ``digest``."""
    return digest[:3]


class ListSource(ABC):
    """One list's rows and threads, as the builders read them. Implementations answer
    the few primitive questions; the derived ones are answered here, once."""

    def __init__(self, config: ListConfig, description_markdown: str | None) -> None:
        self.config = config
        self.description_markdown = description_markdown
        self._order: list[ThreadSummary] | None = None
        self._position: dict[str, int] | None = None
        self._months: list[Month] | None = None

    # -- primitives -------------------------------------------------------------------

    @abstractmethod
    def rows(self, calls: Iterable[str]) -> Mapping[str, Row]:
        """Filed rows of these call numbers (unknown ones are left out)."""

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

    # -- derived ----------------------------------------------------------------------

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

    def page(self, thread_id: str, root: Row) -> str:
        return message_path(self.slug, _month(root), thread_id)

    def links(self, calls: Iterable[str]) -> tuple[dict[str, str], Mapping[str, str]]:
        """(call -> the message's anchor on its thread page, call -> its thread id)."""
        wanted = list(calls)
        thread_of = self.thread_of(wanted)
        roots = self.rows(set(thread_of.values()))
        pages = {tid: self.page(tid, root) for tid, root in roots.items()}
        return {call: f"{pages[thread_of[call]]}#{call}" for call in wanted}, thread_of


class LoadedList(ListSource):
    """A list held in memory: the rows and every thread (what a full build reads)."""

    def __init__(
        self,
        config: ListConfig,
        rows: Mapping[str, Row],
        threads: Iterable[ThreadEntry],
        description_markdown: str | None = None,
    ) -> None:
        super().__init__(config, description_markdown)
        self._rows = rows
        self._threads = {entry.id: entry for entry in threads}
        self._thread_of = {call: entry.id for entry in self._threads.values() for call, _p, _d in entry.messages}
        self._by_month: dict[Month, list[Row]] = defaultdict(list)
        for row in rows.values():
            self._by_month[_month(row)].append(row)
        self._month_threads: dict[Month, dict[str, int]] = defaultdict(dict)
        for entry in self._threads.values():
            for year, month, count in entry.months:
                self._month_threads[Month(year, month)][entry.id] = count

    def rows(self, calls: Iterable[str]) -> Mapping[str, Row]:
        return {call: self._rows[call] for call in calls if call in self._rows}

    def all_rows(self) -> Iterable[Row]:
        return self._rows.values()

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
            root = _month(self._rows[entry.id])
            found.append(ThreadSummary(entry.first, entry.id, entry.last, entry.count, root.year, root.month))
        return found

    def recent(self, count: int) -> list[Row]:
        return sorted(self._rows.values(), key=lambda r: (r.date, r.call), reverse=True)[:count]


def _month(row: Row) -> Month:
    return Month(row.year, row.month)


def _subject(hide: bool, row: Row) -> str:
    """A subject for index pages, cleaned and cut as display does (``controls``); ``hide``:
    obfuscate the addresses in it, as display does."""
    if row.no_archive:
        return NOT_ARCHIVED
    subject = clean_header_text(" ".join(row.subject.split()), SUBJECT_CHARS) or "(no subject)"
    return obfuscate_addresses(subject) if hide else subject


def _author(hide: bool, row: Row) -> str:
    """An author's name for index pages; nothing for a withheld message."""
    return "" if row.no_archive else _author_name(hide, row.from_name, row.from_addr)


def _author_name(hide: bool, from_name: str, from_addr: str) -> str:
    """A name to show for a sender (never an address unless the name is one), cleaned as
    display cleans it (``controls``)."""
    name = clean_header_text(from_name)
    if name:
        return obfuscate_addresses(name) if hide else name
    return clean_header_text(from_addr.split("@")[0]) or "(unknown)"


def _list_info(config: ListConfig) -> tuple[str, str, str]:
    return (config.slug, config.name, config.addresses[0] if config.addresses else "")


class SiteJobs:
    """The builders of every kind of job. Each returns the job, or None when it does
    not exist (any more): a thread that is gone, a month left empty, an empty bucket."""

    def __init__(
        self,
        site: SiteInputs,
        fingerprints: Mapping[str, str],
        sources: Sequence[ListSource],
        static_files: Sequence[tuple[str, str, str]],
        code: str,
    ) -> None:
        """``fingerprints``: template name -> fingerprint, for every template in
        ``TEMPLATES``; ``static_files``: (path under static/, source, digest); ``code``:
        the digest of the code that renders (``codedigest.render_digest``), part of
        every key: other code may make other bytes from the same arguments."""
        self.site = site.as_tuple()
        self.hide = site.obfuscate_addresses
        self.fingerprints = {
            kind: ",".join([code, *(fingerprints[name] for name in names)]) for kind, names in TEMPLATES.items()
        }
        self.sources = {source.slug: source for source in sources}
        self.static_files = tuple(static_files)
        self._sitemap_months: dict[str, dict[Month, list[ThreadSummary]]] = {}
        self._subjects: dict[str, str] = {}
        self._mid_members: dict[str, list[tuple[str, str]]] | None = None
        self._mid_digests: dict[str, str] = {}
        """call -> its Message-ID's digest, kept by ``all_mid_members`` for ``mid``."""

    def make(self, kind: str, job_id: str, args: dict[str, object], weight: int = 1) -> Job:
        args["site"] = self.site
        return Job(f"{kind}:{job_id}", kind, job_key(kind, self.fingerprints[kind], args), args, weight)

    # -- the whole site -----------------------------------------------------------------

    def all(self) -> Iterator[Job]:
        """Every job of the site (the sources should hold everything in memory)."""
        for source in self.sources.values():
            slug = source.slug
            for summary in source.order():
                yield from _present(self.thread(slug, summary.id), self.tmbox(slug, summary.id))
            for month in source.months():
                yield from _present(
                    self.messages(slug, month), self.month(slug, month), self.date(slug, month), self.mmbox(slug, month)
                )
            yield self.list(slug)
            yield self.feed(slug)
            yield from self.sitemaps(slug, self.sitemap_months(slug))
        yield self.site_index()
        for prefix, members in sorted(self.all_mid_members().items()):
            yield from _present(self.mid(prefix, members))
        yield self.static()

    def all_mid_members(self) -> dict[str, list[tuple[str, str]]]:
        """Bucket -> (slug, call) of every message with a Message-ID (needs ``LoadedList``s);
        worked out once (a full build asks for its jobs and again for its memory)."""
        if self._mid_members is not None:
            return self._mid_members
        members: dict[str, list[tuple[str, str]]] = defaultdict(list)
        digests = self._mid_digests
        for source in self.sources.values():
            if not isinstance(source, LoadedList):
                raise TypeError("enumerating every Message-ID needs the lists loaded in memory")
            for row in source.all_rows():
                if row.message_id:
                    digest = digests[row.call] = message_id_hash(row.message_id)
                    members[_bucket(digest)].append((source.slug, row.call))
        self._mid_members = members
        return members

    def _subject(self, row: Row) -> str:
        """``_subject`` of a message, worked out once per build plan (a full plan shows
        each subject about four times: thread, month, date and lookup pages)."""
        found = self._subjects.get(row.call)
        if found is None:
            found = self._subjects[row.call] = _subject(self.hide, row)
        return found

    # -- threads ------------------------------------------------------------------------

    def thread(self, slug: str, thread_id: str) -> Job | None:
        source = self.sources[slug]
        entry = source.threads([thread_id]).get(thread_id)
        if entry is None:
            return None
        before, after = source.neighbours(thread_id)
        rows = source.rows([*(c for c, _p, _d in entry.messages), thread_id, *(n for n in (before, after) if n)])
        root = rows[thread_id]
        neighbours = [
            None if other is None else (source.page(other, rows[other]), self._subject(rows[other]))
            for other in (before, after)
        ]
        messages = []
        for call, parent, depth in entry.messages:
            row = rows[call]
            month = _month(row)
            messages.append(
                (
                    call,
                    parent,
                    depth,
                    month.year,
                    month.month,
                    row.path,
                    row.raw_hash,
                    row.no_archive,
                    row.message_id,
                    row.refs,
                )
            )
        return self.make(
            "thread",
            f"{slug}:{thread_id}",
            {
                "list": _list_info(source.config),
                "id": thread_id,
                "page": source.page(thread_id, root),
                "subject": self._subject(root),
                "missing_root": entry.missing_root,
                "messages": tuple(messages),
                "prev": neighbours[0],
                "next": neighbours[1],
            },
            weight=2 + entry.count,
        )

    def tmbox(self, slug: str, thread_id: str) -> Job | None:
        source = self.sources[slug]
        entry = source.threads([thread_id]).get(thread_id)
        if entry is None:
            return None
        rows = source.rows([thread_id, *(c for c, _p, _d in entry.messages)])
        by_date = sorted(entry.messages, key=lambda m: (rows[m[0]].date, m[0]))
        return self.make(
            "tmbox",
            f"{slug}:{thread_id}",
            {
                "path": thread_mbox_path(slug, _month(rows[thread_id]), thread_id),
                "messages": tuple(_mbox_item(rows[c]) for c, _p, _d in by_date if not rows[c].no_archive),
            },
            weight=1 + entry.count // 4,
        )

    # -- months -------------------------------------------------------------------------

    def _month_rows(self, source: ListSource, month: Month) -> list[Row]:
        return sorted(source.month_rows(month), key=lambda r: (r.date, r.call))

    def messages(self, slug: str, month: Month) -> Job | None:
        source = self.sources[slug]
        month_rows = self._month_rows(source, month)
        if not month_rows:
            return None
        links, thread_of = source.links(r.call for r in month_rows)
        return self.make(
            "messages",
            f"{slug}:{month}",
            {
                "messages": tuple(
                    (
                        r.call,
                        r.path,
                        r.raw_hash,
                        None if r.no_archive else raw_path(slug, month, r.call),
                        message_path(slug, month, r.call),
                        None if thread_of[r.call] == r.call else links[r.call],
                        self._subject(r),
                    )
                    for r in month_rows
                ),
            },
            weight=1 + len(month_rows) // 20,
        )

    def month(self, slug: str, month: Month) -> Job | None:
        source = self.sources[slug]
        here = source.month_threads(month)
        if not here:
            return None
        entries = source.thread_lines(here)
        rows = source.rows(here)
        thread_lines = []
        for thread_id, count in sorted(here.items(), key=lambda item: (entries[item[0]].first, item[0])):
            entry = entries[thread_id]
            thread_lines.append(
                (
                    source.page(thread_id, rows[thread_id]),
                    self._subject(rows[thread_id]),
                    _participants(entry, self.hide),
                    count,
                    entry.count,
                    entry.first,
                    entry.last,
                    (entry.months[0][0], entry.months[0][1]) < month,
                    (entry.months[-1][0], entry.months[-1][1]) > month,
                )
            )
        args = {**self._month_frame(source, month), "threads": tuple(thread_lines)}
        return self.make("month", f"{slug}:{month}", args, weight=1 + len(here) // 10)

    def date(self, slug: str, month: Month) -> Job | None:
        """The month's messages by date: a job of its own, as a reply to an old thread
        changes the thread lines of that thread's months but not their messages."""
        source = self.sources[slug]
        month_rows = self._month_rows(source, month)
        if not month_rows:
            return None
        links, _thread_of = source.links(r.call for r in month_rows)
        messages = tuple((links[r.call], self._subject(r), _author(self.hide, r), r.date) for r in month_rows)
        args = {**self._month_frame(source, month), "messages": messages}
        return self.make("date", f"{slug}:{month}", args, weight=1 + len(month_rows) // 10)

    @staticmethod
    def _month_frame(source: ListSource, month: Month) -> dict[str, object]:
        """What both month pages show around their lists: names, neighbours, download."""
        prev_month, next_month = source.month_neighbours(month)
        return {
            "list": _list_info(source.config),
            "month": tuple(month),
            "prev": tuple(prev_month) if prev_month else None,
            "next": tuple(next_month) if next_month else None,
            "mbox": month_mbox_path(source.slug, month),
        }

    def mmbox(self, slug: str, month: Month) -> Job | None:
        month_rows = self._month_rows(self.sources[slug], month)
        if not month_rows:
            return None
        return self.make(
            "mmbox",
            f"{slug}:{month}",
            {
                "path": month_mbox_path(slug, month),
                "messages": tuple(_mbox_item(r) for r in month_rows if not r.no_archive),
            },
            weight=1 + len(month_rows) // 4,
        )

    # -- a list's own pages ---------------------------------------------------------------

    def list(self, slug: str) -> Job:
        source = self.sources[slug]
        counts = source.month_counts()
        thread_counts = source.month_thread_counts()
        order = source.order()
        latest = heapq.nlargest(LATEST_THREADS, order, key=attrgetter("last", "id"))
        roots = source.rows(t.id for t in latest)
        return self.make(
            "list",
            slug,
            {
                "list": _list_info(source.config),
                "description": source.config.description,
                "markdown": source.description_markdown,
                "months": tuple((m.year, m.month, counts[m], thread_counts.get(m, 0)) for m in source.months()),
                "latest": tuple(
                    (source.page(t.id, roots[t.id]), self._subject(roots[t.id]), t.last, t.count) for t in latest
                ),
                "messages": sum(counts.values()),
                "threads": len(order),
            },
        )

    def feed(self, slug: str) -> Job:
        source = self.sources[slug]
        recent = source.recent(FEED_SIZE)
        links, thread_of = source.links(r.call for r in recent)
        return self.make(
            "feed",
            slug,
            {
                "list": _list_info(source.config),
                "path": feed_path(slug),
                "entries": tuple(
                    (
                        r.call,
                        r.path,
                        r.raw_hash,
                        links[r.call],
                        message_path(slug, _month(r), r.call),
                        self._subject(r),
                        _author(self.hide, r),
                        r.date,
                        r.no_archive,
                        thread_of[r.call] == r.call,
                    )
                    for r in recent
                ),
            },
            weight=3,
        )

    def sitemap_months(self, slug: str) -> Mapping[Month, list[ThreadSummary]]:
        """The threads of a list by the month of their root (where their pages live), in
        thread order; months without a root are absent."""
        by_month = self._sitemap_months.get(slug)
        if by_month is None:
            grouped: dict[tuple[int, int], list[ThreadSummary]] = defaultdict(list)
            for summary in self.sources[slug].order():
                grouped[summary.year, summary.month].append(summary)
            by_month = self._sitemap_months[slug] = {Month(*key): group for key, group in grouped.items()}
        return by_month

    def sitemaps(self, slug: str, months: Mapping[Month, Sequence[ThreadSummary]]) -> list[Job]:
        """The sitemap jobs of these months (``sitemap_months``, or a part of it)."""
        jobs = []
        for month, summaries in sorted(months.items()):
            for number, part in enumerate(_sitemap_parts(summaries), start=1):
                pages = tuple((message_path(slug, month, t.id), t.last) for t in part)
                args = {"path": sitemap_path(slug, month, number), "pages": pages}
                jobs.append(self.make("sitemap", f"{slug}:{month}:{number}", args))
        return jobs

    # -- site-wide pages -----------------------------------------------------------------

    def site_index(self) -> Job:
        summaries = []
        for source in self.sources.values():
            config, slug = source.config, source.slug
            recent = source.recent(1)
            threads = len(source.order())
            sitemaps = tuple(
                (sitemap_path(slug, month, number), max(t.last for t in part))
                for month, summaries in sorted(self.sitemap_months(slug).items())
                for number, part in enumerate(_sitemap_parts(summaries), start=1)
            )
            summaries.append(
                (
                    slug,
                    config.name,
                    config.description,
                    sum(source.month_counts().values()),
                    threads,
                    recent[0].date if recent else 0,
                    list_index_path(slug),
                    sitemaps,
                    feed_path(slug),
                )
            )
        return self.make("site", "site", {"lists": tuple(summaries)})

    def mid(self, prefix: str, members: Iterable[tuple[str, str]]) -> Job | None:
        """The lookup pages of one bucket; ``members``: (slug, call) of its messages."""
        calls_of: dict[str, list[str]] = defaultdict(list)
        for slug, call in members:
            calls_of[slug].append(call)
        entries: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for slug, calls in calls_of.items():
            source = self.sources[slug]
            rows = source.rows(calls)
            links, _thread_of = source.links(rows)
            for row in rows.values():
                if row.message_id:
                    digest = self._mid_digests.get(row.call) or message_id_hash(row.message_id)
                    entries[digest].append(
                        (
                            clean_header_text(row.message_id),
                            slug,
                            source.config.name,
                            links[row.call],
                            self._subject(row),
                            str(row.date),
                        )
                    )
        if not entries:
            return None
        bucket = tuple((digest, tuple(sorted(entries[digest]))) for digest in sorted(entries))
        return self.make("mid", prefix, {"entries": bucket}, weight=max(1, len(bucket) // 20))

    def static(self) -> Job:
        return self.make("static", "static", {"files": self.static_files}, weight=len(self.static_files))


def _present(*jobs: Job | None) -> Iterator[Job]:
    return (job for job in jobs if job is not None)


def _sitemap_parts(summaries: Sequence[ThreadSummary]) -> list[Sequence[ThreadSummary]]:
    return [summaries[start : start + SITEMAP_SIZE] for start in range(0, len(summaries), SITEMAP_SIZE)]


def _mbox_item(row: Row) -> tuple[str, str, str, int]:
    return (row.path, row.raw_hash, row.from_addr, row.date)


def _participants(entry: ThreadLine, hide: bool) -> tuple[tuple[str, ...], int]:
    names: list[str] = []
    seen: set[str] = set()
    for from_name, from_addr in entry.authors:  # withheld messages are not among them
        name = _author_name(hide, from_name, from_addr)
        key = name.casefold()
        if name and key not in seen:
            seen.add(key)
            names.append(name)
    return tuple(names[:PARTICIPANTS_SHOWN]), max(0, len(names) - PARTICIPANTS_SHOWN)
