"""A full build's plan, one shard at a time: every job of the site, with memory flat
in the size of the archive.

The builders (``plan.builders.SiteJobs``) read each list through a
``plan.stored.StoredList``, the source an incremental build uses, which asks the
index and the thread cache for what it is asked and remembers it. The planner asks
for one shard at a time and makes the sources forget between shards, so only one
shard's rows and threads are ever held:

- a list's months, in order: the threads rooted in the month (thread and tmbox jobs,
  their rows and their neighbours' roots read in a few batches), the month's own jobs
  (messages, month, date, mmbox) and its sitemap; the month's Message-ID lookup
  entries go to the build state's spool (temporary tables of its connection, in
  SQLite's temporary file), and the pages of its threads to the build's ``Memory``;
  the patch series of its threads are grouped then, but the thread page of a thread
  that holds one waits for the list's last month (it links the series' other
  versions, which may come later);
- then the thread pages of the list's series threads, read again a few hundred at a
  time, and the list's own pages (list, feed, series feed, legacy redirects);
- then the site's: the site index, the Message-ID lookup buckets (each read back
  from the spool, its rows in one batch for every list), the legacy maps, static files.

What stays in memory across shards is per thread, not per message: each list's thread
order (prev/next links and the list page), its patch series, and in ``Memory`` the
page of each message not on page 1 of its thread. The same builders make the same jobs as an enumeration
over lists held in memory (``SiteJobs.all``); only the order differs.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping

from ..series import Series
from ..values import Month
from .builders import SiteJobs, mid_bucket, mid_digest
from .incremental import Memory
from .jobs import Job, Plan
from .series import encode_series, thread_series
from .sources import month_of
from .state import BuildState
from .stored import StoredList

__all__ = ["BATCH_WEIGHT", "SpooledPlan", "full_shards"]


def full_shards(
    jobs: SiteJobs, state: BuildState, memory: Memory, marks: Mapping[str, Mapping[tuple[int, int], str]]
) -> Iterator[list[Job]]:
    """Every job of the site, a shard at a time (the sources must be ``StoredList``s,
    inside read snapshots of the index and the thread cache). Fills ``memory`` as a
    full build leaves it; the lookup entries go to ``state``'s spool (``start_plan``
    first; ``Memory.save`` adopts them)."""
    for source in jobs.sources.values():
        if not isinstance(source, StoredList):
            raise TypeError("a sharded plan reads its lists through StoredList")
        yield from _list_shards(jobs, source, state, memory)
        slug = source.slug
        memory.orders[slug] = [t.id for t in source.order()]
        memory.months[slug] = source.months()
        memory.marks[slug] = {Month(*m): mark for m, mark in marks.get(slug, {}).items()}
        memory.revisions[slug] = dict(source.revisions())
    yield [jobs.site_index()]
    yield from _mid_shards(jobs, state)
    site = [job for job in (jobs.legacy_maps(), jobs.static()) if job is not None]
    yield site


def _list_shards(jobs: SiteJobs, source: StoredList, state: BuildState, memory: Memory) -> Iterator[list[Job]]:
    slug = source.slug
    by_root = jobs.sitemap_months(slug)
    months = source.months()
    filed = set(months)
    # A month whose every message was removed keeps their tombstones (its messages job).
    emptied = {month_of(row) for row in source.rows(source.removed_calls()).values()} - filed
    pages = memory.pages.setdefault(slug, {})
    series: list[Series] = []
    waiting: list[str] = []
    """The threads that hold a series: their pages are planned once every series is known."""
    # Until then the source knows no series, so the page of a thread without one is planned
    # as it will be (its series section is empty whatever the other threads hold).
    source.use_series([])
    for month in sorted(filed | emptied | by_root.keys()):
        rooted = [t.id for t in by_root.get(month, ())]
        # The threads rooted here, their messages and their neighbours' roots, in a few reads.
        entries = source.threads(rooted)
        neighbours = {n for thread_id in rooted for n in source.neighbours(thread_id) if n is not None}
        rows = source.rows([*(c for e in entries.values() for c, _p, _d in e.messages), *rooted, *neighbours])
        shard: list[Job] = []
        for thread_id in rooted:
            entry = entries.get(thread_id)
            its = thread_series(entry, rows) if entry is not None else []
            if its:
                series.extend(its)
                waiting.append(thread_id)
            else:
                shard.extend(j for j in (jobs.thread(slug, thread_id),) if j is not None)
            shard.extend(j for j in (jobs.tmbox(slug, thread_id),) if j is not None)
        if month in filed:
            made = (
                jobs.messages(slug, month),
                jobs.month(slug, month),
                jobs.date(slug, month),
                jobs.mmbox(slug, month),
            )
            shard.extend(j for j in made if j is not None)
        elif month in emptied:
            shard.extend(j for j in (jobs.messages(slug, month),) if j is not None)
        if rooted:
            shard.extend(jobs.sitemaps(slug, {month: by_root[month]}))
        pages.update((thread_id, found) for thread_id, found in source.thread_pages(rooted).items() if found)
        here = [*source.month_rows(month), *source.removed_rows(month)]
        thread_of = source.thread_of(row.call for row in here)
        members = jobs.mid_members(slug, (row.call for row in here))
        state.spool_mids(
            (row.call, slug, thread_of.get(row.call, ""), mid_bucket(digest), pickle.dumps(members.get(row.call, [])))
            for row in here
            if (digest := mid_digest(row)) is not None
        )
        if source.held() >= _HELD:
            jobs.forget()
        yield shard
    source.use_series(series)
    memory.series[slug] = encode_series(series)
    yield from _series_threads(jobs, source, waiting)
    shard = [jobs.list(slug), jobs.feed(slug), jobs.series_feed(slug)]
    for bucket in jobs.legacy_buckets(slug):
        shard.extend(j for j in (jobs.legacy_pages(slug, bucket),) if j is not None)
    jobs.forget()
    yield shard


def _series_threads(jobs: SiteJobs, source: StoredList, waiting: list[str]) -> Iterator[list[Job]]:
    """The thread jobs of the threads holding a series (``source`` knows every series of
    its list), a few hundred threads at a time."""
    slug = source.slug
    for start in range(0, len(waiting), _SERIES_THREADS):
        chunk = waiting[start : start + _SERIES_THREADS]
        entries = source.threads(chunk)
        neighbours = {n for thread_id in chunk for n in source.neighbours(thread_id) if n is not None}
        source.rows([*(c for e in entries.values() for c, _p, _d in e.messages), *chunk, *neighbours])
        yield [job for thread_id in chunk if (job := jobs.thread(slug, thread_id)) is not None]
        if source.held() >= _HELD:
            jobs.forget()
    jobs.forget()


_SERIES_THREADS = 200
"""Threads holding a series planned together once the list's series are known."""
_MID_SHARD = 64
"""Lookup buckets planned together (4,096 in all)."""
_HELD = 5_000
"""Rows a list's source may hold before it forgets them (between months): a thread
that spans months is then read once, not once per month."""


def _mid_shards(jobs: SiteJobs, state: BuildState) -> Iterator[list[Job]]:
    """The lookup jobs, from what each message put in its bucket when its month was planned."""
    shard: list[Job] = []
    for prefix in state.spooled_prefixes():
        members = (member for blob in state.spooled_members(prefix) for member in pickle.loads(blob))
        job = jobs.mid_job(prefix, members)
        if job is not None:
            shard.append(job)
        if len(shard) >= _MID_SHARD:
            yield shard
            shard = []
    if shard:
        yield shard


BATCH_WEIGHT = 10_000
"""Work (job weights, about one per message shown) spooled and later rendered together:
what a full build holds of its plan at a time."""


class SpooledPlan:
    """A full plan kept out of memory, in the build state's spool: the jobs to run in
    batches (pickled), every job's id, key and whether it runs. Iterate ``batches``
    to read the jobs back one batch at a time."""

    def __init__(self, state: BuildState, shards: Iterable[list[Job]]) -> None:
        """Compare the jobs of ``shards`` with the keys recorded by the last build and
        spool them (``state.start_plan`` first)."""
        self.state = state
        self.count = self.weight = self.kept = self.spooled = 0
        batch: list[Job] = []
        weight = 0
        for shard in shards:
            previous = state.keys_of(job.id for job in shard)
            runs = [previous.get(job.id) != job.key for job in shard]
            state.spool_jobs((job.id, job.key, run) for job, run in zip(shard, runs, strict=True))
            for job, run in zip(shard, runs, strict=True):
                if run:
                    batch.append(job)
                    weight += job.weight
                    self.count += 1
                    self.weight += job.weight
                else:
                    self.kept += 1
            if weight >= BATCH_WEIGHT:
                self._spool(batch)
                batch, weight = [], 0
        if batch:
            self._spool(batch)
        self.dropped = tuple(state.unplanned_jobs())

    def _spool(self, batch: list[Job]) -> None:
        self.state.spool_batch(self.spooled, pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
        self.spooled += 1

    def batches(self) -> Iterator[list[Job]]:
        for number in range(self.spooled):
            yield pickle.loads(self.state.spooled_batch(number))

    def plan(self) -> Plan:
        """The whole plan in memory (for comparisons and ``listlib build --plan``)."""
        spooled = self.state.spooled_keys()
        return Plan(
            tuple(job for batch in self.batches() for job in batch),
            tuple(job_id for job_id, _key, run in spooled if not run),
            self.dropped,
            {job_id: key for job_id, key, _run in spooled},
        )
