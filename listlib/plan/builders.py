"""The pages of a site, described as jobs: a pure function of the configuration, the
index rows of the filed messages and the cached threads.

There is one builder per kind of job (``SiteJobs.thread``, ``SiteJobs.month`` ...,
named by ``plan.kinds.KINDS``); each returns its job with the typed record of its kind
as arguments. Each reads what it needs through a ``ListSource`` (``plan.sources``): a
full build walks every job with a source that holds everything in memory; an
incremental build calls the builders only for the jobs a change can reach, with a
source that asks the databases. The same builders give the same arguments and so the
same keys either way, which keeps incremental output byte-identical to a build from
scratch. This module never touches the disk.

Each job carries exactly the inputs its files depend on (see ``plan.kinds``), so its
key changes when, and only when, one of its files may change.

Length: one builder method per page kind, on purpose (a kind is one registry entry and
one builder here); the shared helpers are the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..config import ListConfig
from ..controls import SUBJECT_CHARS, clean_header_text
from ..display import obfuscate_addresses
from ..legacy.mapfile import MBOX_TARGET, LegacyMap
from ..series import version_label
from ..store.index import Row
from ..urls import (
    feed_path,
    legacy_page_path,
    list_index_path,
    message_id_folder,
    message_id_hash,
    message_path,
    month_index_path,
    month_mbox_path,
    raw_path,
    series_feed_path,
    sitemap_path,
    thread_mbox_path,
    thread_page_path,
)
from ..values import Month
from .jobs import Job, job_id, job_key
from .kinds import (
    KINDS,
    DatePage,
    Download,
    FeedEntry,
    FeedPage,
    LatestThread,
    LegacyMaps,
    LegacyPages,
    LegacyRedirect,
    Link,
    ListInfo,
    ListPage,
    ListSummary,
    MboxItem,
    MessageCopies,
    MessageCopy,
    MidEntry,
    MidGroup,
    MidPages,
    MidPath,
    MonthCount,
    MonthFrame,
    MonthPage,
    Removed,
    SeriesEntry,
    SeriesFeedPage,
    SeriesSection,
    SitemapPage,
    SitePages,
    SiteSettings,
    StaticFile,
    StaticFiles,
    ThreadPage,
    Tombstone,
)
from .series import month_series_label
from .shown import Words, author, participants, subject, words_of
from .sources import ListSource, LoadedList, ThreadSummary, month_of

__all__ = [
    "FEED_SIZE",
    "LATEST_THREADS",
    "MID_ITEMS_A_WEIGHT",
    "MidMember",
    "SERIES_FEED_SIZE",
    "SiteJobs",
    "mid_bucket",
    "mid_digest",
]

MidMember = tuple[str, Any, Any]
"""What a message puts in its lookup bucket: ("entry", digest, ``MidEntry``), ("removed",
digest, (list name, *tombstone)) or ("path", (date, call), ``MidPath``)."""
FEED_SIZE = 30
"""Messages in a list's Atom feed."""
SERIES_FEED_SIZE = 30
"""Patch series in a list's series feed."""
LATEST_THREADS = 10
"""Threads listed as latest on a list's index page."""
MID_ITEMS_A_WEIGHT = 4
"""A lookup bucket weighs one for every this many of its pages (an entry of a Message-ID,
a public-inbox-style folder): more than they cost to render (a message shown costs
about ten times a lookup page), so that a full plan's batch of buckets
(``plan.full.BATCH_WEIGHT``) holds some 8,000 entries whatever the archive's size. At
one for every 20, a batch held 500 buckets of 40 entries at 80,000 messages (12 MB in
the main process, against 3 MB at 20,000: issue 28) and some 40,000 entries at 1,000,000."""
SITEMAP_SIZE = 40_000
"""Thread pages per sitemap file (the protocol allows 50,000): a month with more threads
has several."""


def mid_bucket(digest: str) -> str:
    """The Message-ID lookup bucket (``mid`` job id) of the Message-ID whose
    ``message_id_hash`` is ``digest``: 4,096 of them, so that a new message re-renders a
    dozen lookup pages at 50,000 messages, not two hundred. (Only the job is finer than
    the ``mid/<h[0:2]>/`` folders of the URLs.)"""
    return digest[:3]


def _list_info(config: ListConfig) -> ListInfo:
    return ListInfo(config.slug, config.name, config.addresses[0] if config.addresses else "")


class SiteJobs:
    """The builders of every kind of job. Each returns the job, or None when it does
    not exist (any more): a thread that is gone, a month left empty, an empty bucket.
    (Per-message items are plain tuples in the layouts of ``plan.kinds``.)"""

    def __init__(
        self,
        site: SiteSettings,
        fingerprints: Mapping[str, str],
        sources: Sequence[ListSource],
        static_files: Sequence[StaticFile],
        code: str,
        legacy: Mapping[str, tuple[str, LegacyMap, bool]] | None = None,
        message_id_folder: str | None = None,
        words: Words | None = None,
    ) -> None:
        """``fingerprints``: template name -> fingerprint, for every template of
        ``plan.kinds``, and ``texts:<kind>`` -> the fingerprint of the strings a kind's
        code uses (``Kind.texts``); ``static_files``: the theme's static files; ``code``: the digest
        of the code that renders (``codedigest.render_digest``), part of every key:
        other code may make other bytes from the same arguments; ``legacy``: list slug
        -> (the old archive's path, its map, whether to write a page per old URL), for
        the lists that had one; ``message_id_folder``: ``[site] message_id_folder`` with
        ``message_id_paths`` on, None with it off; ``words``: what stands for a subject or
        sender that cannot be shown, in the site's language (English when None)."""
        self.site = site
        self.message_id_folder = message_id_folder
        self.hide = site.obfuscate_addresses
        self.words = words or words_of()
        # "texts:<kind>": the strings its code uses besides its templates' (Kind.texts).
        self.fingerprints = {
            name: ",".join(
                [code, *(fingerprints[template] for template in kind.templates), fingerprints.get(f"texts:{name}", "")]
            )
            for name, kind in KINDS.items()
        }
        self.sources = {source.slug: source for source in sources}
        self.static_files = tuple(static_files)
        self._sitemap_months: dict[str, dict[Month, list[ThreadSummary]]] = {}
        self._subjects: dict[str, str] = {}
        self._names: dict[tuple[str, str], str] = {}
        """(name, address) -> the name shown for it (``shown.participants``)."""
        self._mid_members: dict[str, list[tuple[str, str]]] | None = None
        self._mid_digests: dict[str, str] = {}
        """call -> its Message-ID's digest, kept by ``all_mid_members`` for ``mid``."""
        self.legacy = {slug: found for slug, found in (legacy or {}).items() if slug in self.sources}
        self._legacy_redirects: dict[tuple[str, Month | None], tuple[LegacyRedirect, ...]] = {}

    def forget(self) -> None:
        """Drop what was remembered of messages (shown subjects) and the sources' rows
        and threads: a full build (``plan.full``) calls it between shards."""
        self._subjects.clear()
        self._mid_digests.clear()
        for source in self.sources.values():
            source.forget()

    def let_go(self, slug: str) -> None:
        """Drop what is remembered of list ``slug``'s threads (its threads by the month of
        their root) once a full plan has planned it: ``rooted`` then asks the source."""
        self._sitemap_months.pop(slug, None)

    def make(self, kind: str, of: tuple[object, ...], record: tuple[object, ...], weight: int = 1) -> Job:
        """The job of kind ``kind`` named by ``of`` (``job_id``), with its record."""
        return Job(job_id(kind, *of), kind, job_key(kind, self.fingerprints[kind], record), record, weight)

    # -- the whole site -----------------------------------------------------------------

    def all(self) -> Iterator[Job]:
        """Every job of the site (the sources should hold everything in memory)."""
        for source in self.sources.values():
            slug = source.slug
            for summary in source.order():
                yield from _present(self.thread(slug, summary.id), self.tmbox(slug, summary.id))
            months = source.months()
            for month in months:
                yield from self.messages(slug, month)
                yield from _present(self.month(slug, month), self.date(slug, month), self.mmbox(slug, month))
            # A month whose every message was removed keeps their tombstones (its messages jobs).
            emptied = {month_of(row) for row in source.rows(source.removed_calls()).values()}.difference(months)
            for month in sorted(emptied):
                yield from self.messages(slug, month)
            yield self.list(slug)
            yield self.feed(slug)
            yield self.series_feed(slug)
            yield from self.sitemaps(slug, self.sitemap_months(slug))
            for bucket in self.legacy_buckets(slug):
                yield from _present(self.legacy_pages(slug, bucket))
        yield self.site_index()
        for prefix, members in sorted(self.all_mid_members().items()):
            yield from _present(self.mid(prefix, members))
        yield from _present(self.legacy_maps())
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
                digest = mid_digest(row)
                if digest is not None:
                    digests[row.call] = digest
                    members[mid_bucket(digest)].append((source.slug, row.call))
        self._mid_members = members
        return members

    def _title(self, title: str) -> str:
        """A series' title as pages show it: cleaned and cut like a subject (``shown``)."""
        text = clean_header_text(" ".join(title.split()), SUBJECT_CHARS) or "(no subject)"
        return obfuscate_addresses(text) if self.hide else text

    def _subject(self, row: Row) -> str:
        """``shown.subject`` of a message, worked out once per build plan (a full plan shows
        each subject about four times: thread, month, date and lookup pages)."""
        found = self._subjects.get(row.call)
        if found is None:
            found = self._subjects[row.call] = subject(self.hide, row, self.words)
        return found

    # -- threads ------------------------------------------------------------------------

    def thread(self, slug: str, thread_id: str) -> Job | None:
        record = self.thread_page(slug, thread_id)
        return None if record is None else self.thread_job(slug, record)

    def thread_job(self, slug: str, record: ThreadPage, *, add_series: bool = False) -> Job:
        """The job of a thread's page record; ``add_series``: with its series sections
        (a record made without them, ``thread_page``)."""
        if add_series:
            record = record._replace(series=self._series_sections(self.sources[slug], record.id))
        return self.make("thread", (slug, record.id), record, weight=2 + len(record.messages))

    def thread_page(self, slug: str, thread_id: str, *, series: bool = True) -> ThreadPage | None:
        """The record of a thread's pages; without ``series``, with no series sections
        (a full plan knows a list's series only at its end: ``thread_job`` adds them)."""
        source = self.sources[slug]
        entry = source.threads([thread_id]).get(thread_id)
        if entry is None:
            return None
        before, after = source.neighbours(thread_id)
        rows = source.rows([*(c for c, _p, _d in entry.messages), thread_id, *(n for n in (before, after) if n)])
        root = rows[thread_id]
        prev, next_ = (
            None if other is None else Link(source.page(other, rows[other]), self._subject(rows[other]))
            for other in (before, after)
        )
        pages = source.thread_pages([thread_id])[thread_id]
        messages = []
        for call, parent, depth in entry.messages:
            row = rows[call]
            messages.append(
                (
                    call,
                    parent,
                    depth,
                    month_of(row),
                    row.path,
                    row.raw_hash,
                    row.no_archive,
                    row.message_id,
                    row.refs,
                    self._tombstone(row) if row.removed else None,
                    self._edit_note(row) if row.edited_at else None,
                    pages.get(call, 1),
                )
            )
        record = ThreadPage(
            site=self.site,
            list=_list_info(source.config),
            id=thread_id,
            month=month_of(root),
            page=source.page(thread_id, root),
            subject=self._subject(root),
            missing_root=entry.missing_root,
            messages=tuple(messages),
            prev=prev,
            next=next_,
            series=self._series_sections(source, thread_id) if series else (),
        )
        return record

    def _series_sections(self, source: ListSource, thread_id: str) -> tuple[SeriesSection, ...]:
        """The patch series of a thread, each with links to its other versions."""
        index = source.series_index()
        found = index.of_thread(thread_id)
        if not found:
            return ()
        chains = {series.head: index.chain(series.head) for series in found}
        links, _thread_of = source.links({head for chain in chains.values() for head in chain})
        sections = []
        for series in found:
            versions = tuple(
                (version_label(index.get(head)), links.get(head, ""), head == series.head)
                for head in chains[series.head]
            )
            sections.append(
                SeriesSection(
                    series.head,
                    version_label(series),
                    self._title(series.title),
                    series.total,
                    series.cover,
                    series.patches,
                    versions,
                )
            )
        return tuple(sections)

    def tmbox(self, slug: str, thread_id: str) -> Job | None:
        source = self.sources[slug]
        entry = source.threads([thread_id]).get(thread_id)
        if entry is None:
            return None
        rows = source.rows([thread_id, *(c for c, _p, _d in entry.messages)])
        by_date = sorted(entry.messages, key=lambda m: (rows[m[0]].date, m[0]))
        record = Download(
            self.site,
            thread_mbox_path(slug, month_of(rows[thread_id]), thread_id),
            tuple(_mbox_item(rows[c]) for c, _p, _d in by_date if not rows[c].no_archive),
        )
        return self.make("tmbox", (slug, thread_id), record, weight=1 + entry.count // 4)

    # -- months -------------------------------------------------------------------------

    def _tombstone(self, row: Row) -> Removed:
        """What the tombstone of a removed message says: when, and why if the site shows it."""
        return (row.removed_at or "", (row.reason or "") if self.site.show_removal_reasons else "")

    def _edit_note(self, row: Row) -> Removed:
        """What the page of a redacted message says of it: when, and why if the site shows it."""
        return (row.edited_at or "", (row.reason or "") if self.site.show_removal_reasons else "")

    def _month_rows(self, source: ListSource, month: Month) -> list[Row]:
        return sorted(source.month_rows(month), key=lambda r: (r.date, r.call))

    def messages(self, slug: str, month: Month, groups: Collection[str] | None = None) -> list[Job]:
        """The month's messages jobs: one per thread its messages are in (a removed
        message in no thread has one of its own), so that a message hidden, shown again
        or removed makes only its thread's copies and redirects again, not the month's.
        ``groups``: only the jobs of these threads (and removed messages in none), when
        the caller knows no other can have changed."""
        source = self.sources[slug]
        month_rows = self._month_rows(source, month)
        removed = sorted(source.removed_rows(month))
        if groups is not None:
            thread_of = source.thread_of([*(r.call for r in month_rows), *(r.call for r in removed)])
            month_rows = [r for r in month_rows if thread_of[r.call] in groups]
            removed = [r for r in removed if thread_of.get(r.call, r.call) in groups]
        if not month_rows and not removed:
            return []
        links, thread_of = source.links([*(r.call for r in month_rows), *(r.call for r in removed)])
        tombstones: dict[str, list[Tombstone]] = defaultdict(list)
        for r in removed:
            thread = thread_of.get(r.call)
            if thread != r.call:  # the root of a thread: the thread page is there
                tombstones[thread or r.call].append(
                    (r.call, message_path(slug, month, r.call), links.get(r.call), *self._tombstone(r))
                )
        copies: dict[str, list[MessageCopy]] = defaultdict(list)
        for r in month_rows:
            thread = thread_of[r.call]
            copies[thread].append(
                (
                    r.call,
                    r.path,
                    r.raw_hash,
                    None if r.no_archive else raw_path(slug, month, r.call),
                    message_path(slug, month, r.call),
                    None if thread == r.call else links[r.call],
                    self._subject(r),
                )
            )
        jobs = []
        for group in sorted(copies.keys() | tombstones.keys()):
            here = copies.get(group, ())
            record = MessageCopies(self.site, tuple(here), tuple(tombstones.get(group, ())))
            jobs.append(self.make("messages", (slug, month, group), record, weight=1 + len(here) // 20))
        return jobs

    def month(self, slug: str, month: Month) -> Job | None:
        source = self.sources[slug]
        here = source.month_threads(month)
        if not here:
            return None
        entries = source.thread_lines(here)
        rows = source.rows(here)
        classes = source.classes(here)
        thread_lines = []
        for thread_id, count in sorted(here.items(), key=lambda item: (entries[item[0]].first, item[0])):
            entry = entries[thread_id]
            names, more = participants(entry, self.hide, self.words, self._names)
            thread_lines.append(
                (
                    source.page(thread_id, rows[thread_id]),
                    self._subject(rows[thread_id]),
                    names,
                    more,
                    count,
                    entry.count,
                    entry.first,
                    entry.last,
                    (entry.months[0][0], entry.months[0][1]) < month,
                    (entry.months[-1][0], entry.months[-1][1]) > month,
                    classes.get(thread_id),
                    month_series_label(rows[thread_id]),
                )
            )
        record = MonthPage(self.site, self._month_frame(source, month), tuple(thread_lines))
        return self.make("month", (slug, month), record, weight=1 + len(here) // 10)

    def date(self, slug: str, month: Month) -> Job | None:
        """The month's messages by date: a job of its own, as a reply to an old thread
        changes the thread lines of that thread's months but not their messages."""
        source = self.sources[slug]
        month_rows = self._month_rows(source, month)
        if not month_rows:
            return None
        links, _thread_of = source.links(r.call for r in month_rows)
        classes = source.classes(r.call for r in month_rows)
        messages = tuple(
            (links[r.call], self._subject(r), author(self.hide, r, self.words), r.date, classes.get(r.call))
            for r in month_rows
        )
        record = DatePage(self.site, self._month_frame(source, month), messages)
        return self.make("date", (slug, month), record, weight=1 + len(month_rows) // 10)

    @staticmethod
    def _month_frame(source: ListSource, month: Month) -> MonthFrame:
        prev, next_ = source.month_neighbours(month)
        return MonthFrame(_list_info(source.config), month, prev, next_, month_mbox_path(source.slug, month))

    def mmbox(self, slug: str, month: Month) -> Job | None:
        month_rows = self._month_rows(self.sources[slug], month)
        if not month_rows:
            return None
        record = Download(
            self.site,
            month_mbox_path(slug, month),
            tuple(_mbox_item(r) for r in month_rows if not r.no_archive),
        )
        return self.make("mmbox", (slug, month), record, weight=1 + len(month_rows) // 4)

    # -- a list's own pages ---------------------------------------------------------------

    def list(self, slug: str) -> Job:
        source = self.sources[slug]
        counts = source.month_counts()
        thread_counts = source.month_thread_counts()
        latest = source.latest(LATEST_THREADS)
        roots = source.rows(t.id for t in latest)
        record = ListPage(
            site=self.site,
            list=_list_info(source.config),
            description=source.config.description,
            markdown=source.description_markdown,
            months=tuple(MonthCount(m, counts[m], thread_counts.get(m, 0)) for m in source.months()),
            latest=tuple(
                LatestThread(source.page(t.id, roots[t.id]), self._subject(roots[t.id]), t.last, t.count)
                for t in latest
            ),
            messages=sum(counts.values()),
            threads=source.thread_count(),
        )
        return self.make("list", (slug,), record)

    def feed(self, slug: str) -> Job:
        source = self.sources[slug]
        recent = source.recent(FEED_SIZE)
        links, thread_of = source.links(r.call for r in recent)
        entries = tuple(
            FeedEntry(
                r.call,
                r.path,
                r.raw_hash,
                links[r.call],
                message_path(slug, month_of(r), r.call),
                self._subject(r),
                author(self.hide, r, self.words),
                r.date,
                r.no_archive,
                thread_of[r.call] == r.call,
            )
            for r in recent
        )
        record = FeedPage(self.site, _list_info(source.config), feed_path(slug), entries)
        return self.make("feed", (slug,), record, weight=3)

    def series_feed(self, slug: str) -> Job:
        """The list's newest patch series (by the date of their heads)."""
        source = self.sources[slug]
        newest = source.series_index().newest(SERIES_FEED_SIZE)
        heads = [series.head for series in newest]
        rows = source.rows(heads)
        links, _thread_of = source.links(heads)
        entries = tuple(
            SeriesEntry(
                series.head,
                links.get(series.head, ""),
                message_path(slug, month_of(rows[series.head]), series.head),
                self._title(series.title),
                version_label(series),
                series.total,
                author(self.hide, rows[series.head], self.words),
                series.date,
            )
            for series in newest
            if series.head in rows
        )
        record = SeriesFeedPage(self.site, _list_info(source.config), series_feed_path(slug), entries)
        return self.make("series", (slug,), record, weight=2)

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

    def rooted(self, slug: str, month: Month) -> Sequence[ThreadSummary]:
        """The threads rooted in a month, in thread order (a month of ``sitemap_months``)."""
        if slug in self._sitemap_months:
            return self._sitemap_months[slug].get(month, ())
        return self.sources[slug].rooted(month)

    def sitemaps(self, slug: str, months: Mapping[Month, Sequence[ThreadSummary]]) -> list[Job]:
        """The sitemap jobs of these months (``sitemap_months``, or a part of it)."""
        jobs = []
        source = self.sources[slug]
        for month, summaries in sorted(months.items()):
            paged = source.thread_pages(t.id for t in summaries)
            for number, part in enumerate(_sitemap_parts(summaries), start=1):
                pages = tuple(
                    (thread_page_path(slug, month, t.id, k), t.last)
                    for t in part
                    for k in range(1, max(paged[t.id].values(), default=1) + 1)
                )
                record = SitemapPage(self.site, sitemap_path(slug, month, number), pages)
                jobs.append(self.make("sitemap", (slug, month, number), record))
        return jobs

    # -- site-wide pages -----------------------------------------------------------------

    def site_index(self) -> Job:
        summaries = []
        for source in self.sources.values():
            config, slug = source.config, source.slug
            recent = source.recent(1)
            sitemaps = []
            for month, (count, last) in sorted(source.root_totals().items()):
                if count <= SITEMAP_SIZE:  # one part: its latest thread is the month's
                    sitemaps.append((sitemap_path(slug, month, 1), last))
                    continue
                parts = _sitemap_parts(self.rooted(slug, month))
                sitemaps.extend(
                    (sitemap_path(slug, month, number), max(t.last for t in part))
                    for number, part in enumerate(parts, start=1)
                )
            summaries.append(
                ListSummary(
                    slug=slug,
                    name=config.name,
                    description=config.description,
                    messages=sum(source.month_counts().values()),
                    threads=source.thread_count(),
                    last=recent[0].date if recent else 0,
                    path=list_index_path(slug),
                    sitemaps=tuple(sitemaps),
                    feed=feed_path(slug),
                )
            )
        return self.make("site", ("site",), SitePages(self.site, tuple(summaries)))

    def mid(self, prefix: str, members: Iterable[tuple[str, str]]) -> Job | None:
        """The lookup pages of one bucket; ``members``: (slug, call) of its messages."""
        calls_of: dict[str, list[str]] = defaultdict(list)
        for slug, call in members:
            calls_of[slug].append(call)
        found = (
            entry
            for slug, calls in calls_of.items()
            for entries in self.mid_members(slug, calls).values()
            for entry in entries
        )
        return self.mid_job(prefix, found)

    def mid_members(
        self, slug: str, calls: Iterable[str], digests: Mapping[str, str] | None = None
    ) -> dict[str, list[MidMember]]:
        """Call -> what each of these messages of list ``slug`` puts in its lookup bucket
        (``mid_job`` puts a bucket's together): a pure function of the message and the
        page of its thread that shows it, so a full plan works it out with its month
        (``digests``: the ``mid_digest`` of those it knows already)."""
        digests = digests or self._mid_digests
        source = self.sources[slug]
        rows = source.rows(calls)
        links, thread_of = source.links(rows)
        found: dict[str, list[MidMember]] = defaultdict(list)
        if self.message_id_folder is not None:
            paths: dict[str, tuple[tuple[int, str], MidPath]] = {}
            self._mid_paths(slug, rows.values(), links, thread_of, paths)
            for order, path in paths.values():
                found[order[1]].append(("path", order, path))
        for row in rows.values():
            if row.removed and row.mid_hash:
                found[row.call].append(("removed", row.mid_hash, (source.config.name, *self._tombstone(row))))
            elif row.message_id:
                digest = digests.get(row.call) or message_id_hash(row.message_id)
                entry = (
                    clean_header_text(row.message_id),
                    slug,
                    source.config.name,
                    links[row.call],
                    self._subject(row),
                    str(row.date),
                )
                found[row.call].append(("entry", digest, entry))
        return found

    def mid_job(self, prefix: str, members: Iterable[MidMember]) -> Job | None:
        """The lookup pages of one bucket from what its messages put in it (``mid_members``)."""
        entries: dict[str, list[MidEntry]] = defaultdict(list)
        removed: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        paths: dict[str, tuple[tuple[int, str], MidPath]] = {}
        """Message-ID folder -> (date, call) of the message it leads to, and its paths."""
        for kind, key, data in members:
            if kind == "entry":
                entries[key].append(data)
            elif kind == "removed":
                removed[key].append(data)
            else:
                folder = data[0]
                if folder not in paths or key < paths[folder][0]:
                    paths[folder] = (key, data)
        if not entries and not removed:
            return None
        groups = tuple(
            MidGroup(digest, tuple(sorted(entries.get(digest, ()))), tuple(sorted(removed.get(digest, ()))))
            for digest in sorted(entries.keys() | removed.keys())
        )
        record = MidPages(self.site, groups, tuple(sorted(path for _order, path in paths.values())))
        return self.make("mid", (prefix,), record, weight=max(1, (len(groups) + len(paths)) // MID_ITEMS_A_WEIGHT))

    def _mid_paths(
        self,
        slug: str,
        rows: Iterable[Row],
        links: Mapping[str, str],
        thread_of: Mapping[str, str],
        paths: dict[str, tuple[tuple[int, str], MidPath]],
    ) -> None:
        """Add the public-inbox-style folders of these messages of list ``slug`` to
        ``paths``. Not for a removed, unarchived (``X-No-Archive``) or threadless message,
        nor a Message-ID ``urls.message_id_folder`` refuses (hidden messages are in no
        source); of two messages with one Message-ID in a list, the earlier one's."""
        assert self.message_id_folder is not None
        wanted = [r for r in rows if not r.removed and not r.no_archive and r.message_id and r.call in thread_of]
        roots = self.sources[slug].rows({thread_of[r.call] for r in wanted})
        for row in wanted:
            folder = message_id_folder(slug, self.message_id_folder, row.message_id or "")
            if folder is None:
                continue
            order = (row.date, row.call)
            if folder in paths and paths[folder][0] <= order:
                continue
            thread_id = thread_of[row.call]
            paths[folder] = (
                order,
                (
                    folder,
                    links[row.call],
                    raw_path(slug, month_of(row), row.call),
                    thread_mbox_path(slug, month_of(roots[thread_id]), thread_id),
                    self._subject(row),
                ),
            )

    # -- an old archive's URLs -----------------------------------------------------------

    def legacy_buckets(self, slug: str) -> list[Month | None]:
        """The legacy jobs of a list: one per month its mapped messages are filed under,
        and None for its old index pages."""
        found = self.legacy.get(slug)
        if found is None:
            return []
        return [*sorted(found[1].messages), None]

    def legacy_redirects(self, slug: str, bucket: Month | None) -> tuple[LegacyRedirect, ...]:
        """The redirects of one legacy job: a message's old URLs lead to its permanent URL
        (its thread page, the redirect into it, or its tombstone); a hidden message's
        lead nowhere while it is hidden. Old index pages lead to their month's page, old
        month downloads to its mbox (the list's index when that month has no messages)."""
        key = (slug, bucket)
        found = self._legacy_redirects.get(key)
        if found is not None:
            return found
        prefix, legacy, _pages = self.legacy[slug]
        source = self.sources[slug]
        redirects: list[LegacyRedirect] = []
        if bucket is None:
            months = set(source.months())
            for old, kind, month in legacy.pages:
                if month is None or month not in months:
                    target = list_index_path(slug)
                elif kind == MBOX_TARGET:
                    target = month_mbox_path(slug, month)
                else:
                    target = month_index_path(slug, month)
                redirects.append((legacy_page_path(prefix, old), _joined(prefix, old), target))
        else:
            entries = legacy.messages.get(bucket, ())
            rows = source.rows(call for _old, call in entries)
            for old, call in entries:
                row = rows.get(call)
                if row is not None:
                    target = message_path(slug, month_of(row), call)
                    redirects.append((legacy_page_path(prefix, old), _joined(prefix, old), target))
        found = self._legacy_redirects[key] = tuple(sorted(redirects))
        return found

    def legacy_pages(self, slug: str, bucket: Month | None) -> Job | None:
        """A legacy job's redirect pages (None with ``pages = false``: the maps still list them)."""
        redirects = self.legacy_redirects(slug, bucket)
        if not redirects or not self.legacy[slug][2]:
            return None
        record = LegacyPages(self.site, redirects)
        return self.make("legacy", (slug, bucket or "pages"), record, weight=1 + len(redirects) // 50)

    def legacy_maps(self) -> Job | None:
        """Every legacy redirect of the site in one job: its files list them all."""
        redirects = sorted(
            (url, target)
            for slug in self.legacy
            for bucket in self.legacy_buckets(slug)
            for _page, url, target in self.legacy_redirects(slug, bucket)
        )
        if not redirects:
            return None
        record = LegacyMaps(self.site, tuple(redirects))
        return self.make("legacymap", ("site",), record, weight=1 + len(redirects) // 1000)

    def static(self) -> Job:
        record = StaticFiles(self.site, self.static_files)
        return self.make("static", ("static",), record, weight=len(self.static_files))


def _present(*jobs: Job | None) -> Iterator[Job]:
    return (job for job in jobs if job is not None)


def _sitemap_parts(summaries: Sequence[ThreadSummary]) -> list[Sequence[ThreadSummary]]:
    return [summaries[start : start + SITEMAP_SIZE] for start in range(0, len(summaries), SITEMAP_SIZE)]


def mid_digest(row: Row) -> str | None:
    """The ``message_id_hash`` of a message's Message-ID (kept by a removed one)."""
    if row.removed:
        return row.mid_hash
    return message_id_hash(row.message_id) if row.message_id else None


def _joined(prefix: str, old: str) -> str:
    return f"{prefix}/{old}" if prefix else old


def _mbox_item(row: Row) -> MboxItem:
    return (row.path, row.raw_hash, row.from_addr, row.date)
