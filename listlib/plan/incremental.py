"""Which jobs an incremental build must look at, from what changed since the last
complete build: O(changes), never O(archive).

The thread cache says which threads and months changed (``ThreadSet.changes_since``);
the build state remembers, from the last complete build, each list's thread order
and month order and the Message-ID bucket and thread of every message. From these
the jobs a change can reach are:

- changed and vanished threads, and threads whose prev/next neighbour changed (the
  neighbours of the changed and vanished threads, then and now, are compared; no
  other thread changes place): their thread and tmbox jobs;
- changed months and months whose prev/next month changed: their month job; their
  messages and mmbox jobs unless the month's *mark* (thread cache: the same messages
  in the same threads) is the one the last build recorded, and their date job unless
  that holds and its prev/next month did not change (a month's messages jobs are one
  per thread: all are described, and only those whose key changed run);
- list, feed and series feed of every list with a change, and the site index;
- the thread pages of the series whose chain of versions changed: the list's series
  are the last build's (the state's ``series``), those of the looked-at threads
  grouped again, and the version chains of the series that share a key with theirs
  compared with the last build's (``plan.storedseries``: no other chain can change);
- the sitemaps of changed months and of the root months of the threads looked at (a
  thread's page count can change with a redacted, hidden or removed message);
- the Message-ID buckets, then and now, of the messages that joined, left or changed
  thread (a message's lookup entry depends on nothing else);
- for each message of a looked-at thread that moved to another page of it (the memory
  keeps the page of every message not on page 1 of its thread, ``plan.paging``; the
  links to the messages of the other threads are to the pages it keeps): the
  messages and date jobs of its month and its bucket, whose links lead to that page. A
  reply at the end of a thread's order moves none; one in the middle moves those after
  it whose page break moved (the thread's own pages all change: each lists the whole
  thread);
- for each message stewards changed under its call number since (``Index.revisions``:
  removed, now a tombstone maybe with the same thread around it, or redacted, now an
  edited copy), its thread and its neighbours' (its subject may be theirs to show),
  every job of its month, and its bucket;
- the legacy redirects (``legacy``) of the changed months (a message hidden, shown
  again or removed changes its month), of the old index pages when the list's months
  changed, and the site's legacy maps when any of those was looked at. (A new legacy
  map or ``legacy`` table changes the site fingerprint: the build enumerates all.)

Each is built with the same builders as a full build (``plan.builders.SiteJobs``); a job
whose builder says it no longer exists is dropped. Nothing outside this scope is
ever dropped. ``Memory`` is what a build leaves for the next one.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..series import Series
from ..store.index import Row
from ..threadset import ThreadChanges
from ..values import Month
from .builders import SiteJobs, mid_bucket, mid_digest
from .jobs import Job, job_id
from .series import decode_item, encode_series, thread_series
from .sources import ListSource, month_of
from .state import BuildState
from .stored import StoredList
from .storedseries import StoredSeries, record_series

__all__ = ["Memory", "dirty_jobs", "full_memory", "load_memory"]

T = TypeVar("T", bound=Hashable)
MonthMarks = Callable[[str, Iterable[Month]], Mapping[tuple[int, int], str]]
"""(list slug, months) -> each month's mark (``ThreadCache.month_marks``)."""


@dataclass
class Memory:
    """What a complete build records for the next one to plan from."""

    epoch: str
    generation: int
    fingerprint: str
    orders: dict[str, tuple[set[str] | None, list[tuple[str, int]]]] = field(default_factory=dict)
    """List slug -> (threads, (id, first date) of those that exist now): the thread order
    to record in place of these threads' (None: of every thread of the list)."""
    months: dict[str, list[Month]] = field(default_factory=dict)
    marks: dict[str, dict[Month, str]] = field(default_factory=dict)
    """List slug -> the mark of each month, as its month jobs were planned."""
    revisions: dict[str, dict[str, str]] = field(default_factory=dict)
    """List slug -> its ``Index.revisions``."""
    pages: dict[str, tuple[set[str] | None, dict[str, dict[str, int]]]] = field(default_factory=dict)
    """List slug -> (threads, thread id -> call -> its page, for the messages not on page 1):
    the pages to record in place of these threads' (None: of every thread of the list)."""
    series: dict[str, tuple[set[str] | None, list[Series]]] = field(default_factory=dict)
    """List slug -> (threads, their patch series now): the series to record in place of
    those of these threads (None: of every thread of the list)."""
    forget_mids: set[str] = field(default_factory=set)
    add_mids: list[tuple[str, str, str, str]] = field(default_factory=list)
    replace_mids: bool = False
    spooled_mids: bool = False
    """The lookup entries are those a sharded full plan spooled (``plan.full``)."""
    spooled_lists: bool = False
    """Some lists' parts are in the state's spool (``spool_list``)."""

    def spool_list(self, state: BuildState, slug: str) -> None:
        """Move what it holds of one list to ``state``'s spool (a temporary table), for
        ``save`` to take back: a full plan holds one list's thread order, pages and
        series at a time, not the whole site's (issue 28: 0.4 KB a message in the main
        process at 80,000 messages)."""
        part = {name: found.pop(slug) for name in _PER_LIST if slug in (found := getattr(self, name))}
        state.spool_memory(slug, pickle.dumps(part, pickle.HIGHEST_PROTOCOL))
        self.spooled_lists = True

    def save(self, state: BuildState) -> None:
        """Record it (inside the caller's transaction)."""
        state.set("epoch", self.epoch)
        state.set("generation", str(self.generation))
        state.set("fingerprint", self.fingerprint)
        if self.spooled_lists:
            for slug, data in state.spooled_memory():
                _save_list(state, slug, pickle.loads(data))
        for slug in sorted({slug for name in _PER_LIST for slug in getattr(self, name)}):
            _save_list(state, slug, {name: found[slug] for name in _PER_LIST if slug in (found := getattr(self, name))})
        if self.spooled_mids:
            state.adopt_spooled_mids()
        else:
            state.update_mids(self.forget_mids, self.add_mids, replace=self.replace_mids)


_PER_LIST = ("orders", "months", "marks", "revisions", "pages", "series")
"""The fields of ``Memory`` that are per list (slug -> ...)."""


def _save_list(state: BuildState, slug: str, part: Mapping[str, Any]) -> None:
    """Record ``Memory``'s fields of one list (field name -> its value for the list)."""
    if "orders" in part:
        state.replace_order(slug, *part["orders"])
    if "months" in part:
        state.set(f"months:{slug}", json.dumps([list(m) for m in part["months"]]))
    if "marks" in part:
        state.set(f"marks:{slug}", json.dumps({str(month): mark for month, mark in part["marks"].items()}))
    if "revisions" in part:
        state.set(f"revisions:{slug}", json.dumps(part["revisions"], sort_keys=True))
    if "pages" in part:
        threads, pages = part["pages"]
        encoded = ((tid, json.dumps(found, sort_keys=True)) for tid, found in pages.items() if found)
        state.replace_pages(slug, threads, encoded)
    if "series" in part:
        record_series(state, slug, *part["series"])


def load_memory(state: BuildState) -> tuple[str, int, str] | None:
    """(epoch, generation, fingerprint) of the last complete build, or None when there
    was none or the last one was interrupted."""
    epoch, generation, fingerprint = state.get("epoch"), state.get("generation"), state.get("fingerprint")
    if state.get("running") is not None or epoch is None or generation is None or fingerprint is None:
        return None
    return epoch, int(generation), fingerprint


def _recorded_marks(state: BuildState, slug: str) -> dict[Month, str]:
    recorded: dict[str, str] = json.loads(state.get(f"marks:{slug}") or "{}")
    return {Month(int(text[:4]), int(text[5:])): mark for text, mark in recorded.items()}


def full_memory(
    jobs: SiteJobs, epoch: str, generation: int, fingerprint: str, marks: Mapping[str, Mapping[tuple[int, int], str]]
) -> Memory:
    """What a full build (over ``LoadedList`` sources) leaves behind; ``marks``: every
    list's month marks, read with the threads the build used."""
    memory = Memory(epoch, generation, fingerprint, replace_mids=True)
    for slug, source in jobs.sources.items():
        order = source.order()
        memory.orders[slug] = (None, [(t.id, t.first) for t in order])
        memory.months[slug] = source.months()
        memory.marks[slug] = {Month(*m): mark for m, mark in marks.get(slug, {}).items()}
        memory.revisions[slug] = dict(source.revisions())
        paged = source.thread_pages(t.id for t in order)
        memory.pages[slug] = (None, {tid: pages for tid, pages in paged.items() if pages})
        memory.series[slug] = (None, source.all_series())
    for prefix, members in jobs.all_mid_members().items():
        for slug, call in members:
            memory.add_mids.append((call, slug, jobs.sources[slug].thread_of([call]).get(call, ""), prefix))
    return memory


def _moved(before: Sequence[T], now: Sequence[T]) -> set[T]:
    """Items of ``now`` whose neighbours differ from those they had in ``before``."""

    def neighbours(items: Sequence[T]) -> dict[T, tuple[T | None, T | None]]:
        last = len(items) - 1
        return {
            item: (items[i - 1] if i > 0 else None, items[i + 1] if i < last else None) for i, item in enumerate(items)
        }

    if before == now:
        return set()
    old = neighbours(before)
    return {item for item, pair in neighbours(now).items() if old.get(item) != pair}


def dirty_jobs(
    jobs: SiteJobs, changes: ThreadChanges, state: BuildState, fingerprint: str, month_marks: MonthMarks
) -> tuple[list[Job], set[str], Memory]:
    """The jobs a change reaches (built), every job id considered (a considered id
    without a job is dropped), and the memory to record after the build."""
    memory = Memory(changes.epoch, changes.generation, fingerprint)
    built: list[Job] = []
    considered: set[str] = set()

    def consider(name: str, *found: Job | None) -> None:
        considered.add(name)
        built.extend(job for job in found if job is not None)

    slugs = {s for s, _ in changes.threads} | {s for s, _ in changes.gone} | {s for s, _ in changes.months}
    revised: dict[str, list[str]] = {}
    """List slug -> its messages stewards changed since the last build."""
    for slug, source in jobs.sources.items():
        now = dict(source.revisions())
        recorded: dict[str, str] = json.loads(state.get(f"revisions:{slug}") or "{}")
        if now != recorded:
            memory.revisions[slug] = now
            revised[slug] = sorted(call for call in now if now[call] != recorded.get(call))
            slugs.add(slug)
    slugs &= jobs.sources.keys()
    forget: set[str] = set()
    """Calls whose bucket entry may have changed."""
    fresh: list[tuple[str, str, str, str]] = []
    prefixes: set[str] = set()
    legacy_looked = False
    for slug in sorted(slugs):
        source = jobs.sources[slug]
        changed = {t for s, t in changes.threads if s == slug}
        altered = changed | {t for s, t in changes.gone if s == slug}
        revised_rows = source.rows(revised.get(slug, ())).values()
        revised_threads = source.thread_of(row.call for row in revised_rows)
        threads = altered | _reordered(source, state, altered, memory) | set(revised_threads.values())
        for call in revised.get(slug, ()):
            if revised_threads.get(call) == call:  # a root: its subject, in its neighbours' links, changed
                threads.update(n for n in source.neighbours(call) if n is not None)
        threads |= _series_changes(source, state, altered | set(revised_threads.values()), memory)
        # The pages of the other threads are the last build's (a thread's pages change only
        # with its messages, or a revised one: it is looked at): links to their messages
        # need none of their rows.
        source.use_pages(lambda ids, slug=slug: _recorded_pages(state, slug, ids), threads)
        for thread_id in sorted(threads):
            consider(job_id("thread", slug, thread_id), jobs.thread(slug, thread_id))
            consider(job_id("tmbox", slug, thread_id), jobs.tmbox(slug, thread_id))
        repaged = _repaged(source, state, threads, memory)
        months = source.months()
        before = [Month(*m) for m in json.loads(state.get(f"months:{slug}") or "[]")]
        moved_months = _moved(before, months)
        relinked = {month_of(row) for row in repaged}
        dirty_months = {m for s, m in changes.months if s == slug} | moved_months | relinked
        revised_months = {month_of(row) for row in revised_rows}
        dirty_months |= revised_months
        # A month's thread lines change with any of its threads; its messages and their
        # links (to their threads' pages) only when its mark does.
        marks = _recorded_marks(state, slug)
        marks_now = {Month(*m): mark for m, mark in month_marks(slug, dirty_months).items()}
        # A messages job (a thread's copies and redirects in a month) changes only with its
        # thread (its messages, their pages) or a message stewards revised: in a month the
        # last build knew, only those are described again.
        groups = threads | set(revised.get(slug, ()))
        for month in sorted(dirty_months):
            same_messages = month in marks_now and marks.get(month) == marks_now[month] and month not in revised_months
            if not same_messages or month in relinked:
                prefix = job_id("messages", slug, month) + ":"
                recorded_copies = state.job_ids_from(prefix)
                if month in marks:
                    copies = jobs.messages(slug, month, groups)  # only those whose record changed run
                    recorded_copies = [i for i in recorded_copies if i[len(prefix) :] in groups]
                else:
                    copies = jobs.messages(slug, month)
                considered.update(recorded_copies)
                built.extend(copies)
                considered.update(job.id for job in copies)
            consider(job_id("month", slug, month), jobs.month(slug, month))
            if not same_messages or month in moved_months or month in relinked:
                consider(job_id("date", slug, month), jobs.date(slug, month))
            if not same_messages:
                consider(job_id("mmbox", slug, month), jobs.mmbox(slug, month))
            marks.pop(month, None)
        marks.update(marks_now)
        if slug in jobs.legacy:
            buckets: list[Month | None] = [m for m in sorted(dirty_months) if m in jobs.legacy[slug][1].messages]
            if before != months:
                buckets.append(None)
            for bucket in buckets:
                consider(job_id("legacy", slug, bucket or "pages"), jobs.legacy_pages(slug, bucket))
                legacy_looked = True
        consider(job_id("list", slug), jobs.list(slug))
        consider(job_id("feed", slug), jobs.feed(slug))
        consider(job_id("series", slug), jobs.series_feed(slug))
        # A month's sitemap lists the pages of the threads rooted in it with their last
        # dates: it changes with its thread list (a thread gone or re-rooted is in the
        # changed months of its messages), when one of those threads changes, or when
        # one's page count does (a redacted, hidden or removed message weighs more or
        # less on its page; the messages it moves may all be in other months).
        roots = source.summaries_of(threads)
        sitemap_months = dirty_months | {Month(t.year, t.month) for t in roots.values()}
        rooted = {month: found for month in sitemap_months if (found := jobs.rooted(slug, month))}
        sitemaps = jobs.sitemaps(slug, rooted)
        built.extend(sitemaps)
        considered.update(job.id for job in sitemaps)
        for month in sitemap_months:
            considered.update(state.job_ids_from(job_id("sitemap", slug, month) + ":"))
        memory.months[slug] = months
        memory.marks[slug] = marks
        _bucket_changes(source, state, changed, altered, forget, fresh, prefixes)
        for row in repaged:  # its lookup entry links to its new page
            digest = mid_digest(row)
            if digest is not None:
                prefixes.add(mid_bucket(digest))
        for row in revised_rows:  # its lookup entry: a tombstone, or the edited copy's
            digest = mid_digest(row)
            if digest is not None and row.call not in forget:
                forget.add(row.call)
                prefixes.add(mid_bucket(digest))
                fresh.append((row.call, slug, revised_threads.get(row.call, ""), mid_bucket(digest)))
    if slugs:
        consider(job_id("site", "site"), jobs.site_index())
    if legacy_looked:
        consider(job_id("legacymap", "site"), jobs.legacy_maps())
    joining: dict[str, list[tuple[str, str]]] = {}
    for call, slug, _thread, prefix in fresh:
        joining.setdefault(prefix, []).append((slug, call))
    for prefix in sorted(prefixes):
        members = [(s, c) for s, c in state.mids_in(prefix) if c not in forget]
        members.extend(joining.get(prefix, ()))
        consider(job_id("mid", prefix), jobs.mid(prefix, members))
    memory.forget_mids = forget
    memory.add_mids = fresh
    return built, considered, memory


def _reordered(source: ListSource, state: BuildState, altered: set[str], memory: Memory) -> set[str]:
    """The threads whose prev/next neighbour in the thread order (by first date, id)
    differs from the last build's, found from the ``altered`` threads alone: the others
    keep their place, so a thread with another neighbour has an altered one either as
    its neighbour now or as the one it had. Records the altered threads' places in
    ``memory``."""
    slug = source.slug
    summaries = source.summaries_of(altered)
    candidates = set(altered)
    then: dict[str, tuple[str | None, str | None] | None] = {}
    now: dict[str, tuple[str | None, str | None]] = {}
    for thread_id in altered:
        then[thread_id] = state.order_neighbours(slug, thread_id)
        candidates.update(n for n in then[thread_id] or () if n is not None)
        if thread_id in summaries:
            now[thread_id] = source.neighbours(thread_id)
            candidates.update(n for n in now[thread_id] if n is not None)
    present = source.summaries_of(candidates)
    moved = set()
    for thread_id in candidates:
        if thread_id not in present:
            continue  # gone
        if thread_id not in then:
            then[thread_id] = state.order_neighbours(slug, thread_id)
        if thread_id not in now:
            now[thread_id] = source.neighbours(thread_id)
        if then[thread_id] != now[thread_id]:
            moved.add(thread_id)
    if altered:
        memory.orders[slug] = (set(altered), [(t.id, t.first) for t in summaries.values()])
    return moved


def _series_changes(source: ListSource, state: BuildState, regroup: set[str], memory: Memory) -> set[str]:
    """The threads whose series' version chains changed: the last build's series, those of
    the ``regroup`` threads grouped again. Gives the list's series to ``source`` and
    records those of ``regroup`` in ``memory`` when they changed."""
    slug = source.slug
    before = [decode_item(json.loads(item)) for item in state.series_of_threads(slug, regroup)]
    entries = source.threads(regroup)
    rows = source.rows(call for entry in entries.values() for call, _p, _d in entry.messages)
    now = [series for entry in entries.values() for series in thread_series(entry, rows)]
    lookup = StoredSeries(state, slug, regroup, before, now)
    if isinstance(source, StoredList):
        source.use_series(lookup)
    if encode_series(before) == encode_series(now):
        return set()  # no series changed: no chain did (the common case: a reply to a discussion)
    memory.series[slug] = (set(regroup), now)
    return lookup.changed_chains()


def _recorded_pages(state: BuildState, slug: str, threads: Iterable[str]) -> dict[str, dict[str, int]]:
    """The pages the last build recorded for these threads (those on one page have none)."""
    return {tid: json.loads(pages) for tid, pages in state.pages_of(slug, threads).items()}


def _repaged(source: ListSource, state: BuildState, threads: Iterable[str], memory: Memory) -> list[Row]:
    """The rows of the messages of these threads whose page (``ListSource.thread_pages``)
    differs from the one the last build recorded; records the new pages in ``memory``."""
    slug = source.slug
    wanted = set(threads)
    recorded = _recorded_pages(state, slug, wanted)
    moved: set[str] = set()
    changed: dict[str, dict[str, int]] = {}
    for thread_id, now in source.thread_pages(wanted).items():
        was = recorded.get(thread_id, {})
        if was != now:
            changed[thread_id] = now
            moved.update(call for call in was.keys() | now.keys() if was.get(call, 1) != now.get(call, 1))
    if changed:
        memory.pages[slug] = (set(changed), changed)
    return sorted(source.rows(moved).values())


def _bucket_changes(
    source: ListSource,
    state: BuildState,
    changed: set[str],
    altered: Iterable[str],
    forget: set[str],
    fresh: list[tuple[str, str, str, str]],
    prefixes: set[str],
) -> None:
    """Collect the messages whose lookup entry changed, and their buckets then and now.

    An entry is a pure function of the message (immutable under its call number) and
    its thread (its link): only messages that were or are in a changed or vanished
    thread can have a new entry, and only those whose thread or presence differs do."""
    before = {call: (thread, prefix) for call, thread, prefix in state.mids_of_threads(source.slug, altered)}
    entries = source.threads(changed)
    rows = source.rows(call for entry in entries.values() for call, _p, _d in entry.messages)
    now: dict[str, tuple[str, str]] = {}
    for entry in entries.values():
        for call, _p, _d in entry.messages:
            row = rows.get(call)
            digest = None if row is None else mid_digest(row)
            if digest is not None:
                now[call] = (entry.id, mid_bucket(digest))
    # A removed message that left every thread keeps its lookup entry (a tombstone).
    gone = [call for call in before if call not in now]
    for row in source.rows(gone).values():
        if row.removed and row.mid_hash:
            now[row.call] = ("", mid_bucket(row.mid_hash))
    for call in before.keys() | now.keys():
        was, is_now = before.get(call), now.get(call)
        if was == is_now:
            continue
        forget.add(call)
        if was is not None:
            prefixes.add(was[1])
        if is_now is not None:
            prefixes.add(is_now[1])
            fresh.append((call, source.slug, *is_now))
