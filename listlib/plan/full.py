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

What stays in memory across shards is per thread of the list being planned, not per
message: its thread order (prev/next links and the list page), its patch series, and
in ``Memory`` the page of each message not on page 1 of its thread. Once the list is
planned they go: ``Memory`` spools its part to the build state (``Memory.spool_list``)
and the source and the builders let go of the rest (``StoredList.let_go``,
``SiteJobs.let_go``); the plan's estimate (``estimate_full``) reads one list at a time
too. The same builders make the same jobs as an enumeration over lists held in memory
(``SiteJobs.all``); only the order differs.
"""

from __future__ import annotations

import itertools
import marshal
import math
import pickle
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack

from ..series import Series
from ..values import Month
from .builders import MID_ITEMS_A_WEIGHT, SITEMAP_SIZE, SiteJobs, mid_bucket, mid_digest
from .incremental import Memory
from .jobs import Job, Plan
from .kinds import MidPages, ThreadPage
from .series import thread_series
from .sources import month_of
from .state import BuildState
from .stored import StoredList

__all__ = ["BATCH_JOBS", "BATCH_WEIGHT", "StreamedPlan", "cut_buckets", "estimate_full", "full_shards"]


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
        memory.orders[slug] = (None, [(t.id, t.first) for t in source.order()])
        memory.months[slug] = source.months()
        memory.marks[slug] = {Month(*m): mark for m, mark in marks.get(slug, {}).items()}
        memory.revisions[slug] = dict(source.revisions())
        memory.spool_list(state, slug)
        source.let_go()
        jobs.let_go(slug)
    yield [jobs.site_index()]
    yield from _mid_shards(jobs, state)
    site = [job for job in (jobs.legacy_maps(), jobs.static()) if job is not None]
    yield site


def estimate_full(jobs: SiteJobs) -> tuple[int, int]:
    """The jobs of the full plan and their summed weight, from counts the thread cache
    holds (a row per thread and per thread and month; no message is read): exact but for
    the messages jobs of removed messages, the legacy jobs and the lookup buckets, whose
    number is the one expected of the messages' count (their Message-IDs are hashed)."""
    count = weight = 0
    messages = 0
    for source in jobs.sources.values():
        if not isinstance(source, StoredList):
            raise TypeError("a sharded plan reads its lists through StoredList")
        order = source.order()
        threads = [t.count for t in order]
        rooted = Counter((t.year, t.month) for t in order)
        del order
        source.let_go()  # its plan reads the order again: the estimate holds one list's at a time
        count += 2 * len(threads)  # thread and tmbox
        weight += sum(2 + n for n in threads) + sum(1 + n // 4 for n in threads)
        for counts in source.thread_month_counts().values():
            here = sum(counts)
            messages += here
            count += len(counts) + 3  # messages (one per thread), month, date, mmbox
            weight += sum(1 + n // 20 for n in counts) + 1 + len(counts) // 10 + 2 + here // 10 + here // 4
        sitemaps = sum(-(-n // SITEMAP_SIZE) for n in rooted.values())
        count += sitemaps + 3  # and the list, feed and series feed
        weight += sitemaps + 1 + 3 + 2
        _prefix, legacy, pages = jobs.legacy.get(source.slug, ("", None, False))
        if legacy is not None and pages:
            for bucket in jobs.legacy_buckets(source.slug):
                redirects = len(legacy.pages) if bucket is None else len(legacy.messages.get(bucket, ()))
                count += 1
                weight += 1 + redirects // 50
    buckets, bucket_weight = _expected_buckets(messages, 2 if jobs.message_id_folder is not None else 1)
    count += 1 + buckets + 1  # the site index, the lookup buckets, the static files
    weight += 1 + bucket_weight + len(jobs.static_files)
    if jobs.legacy:
        redirects = sum(len(found) for _prefix, found, _pages in jobs.legacy.values())
        count += 1
        weight += 1 + redirects // 1000
    return count, weight


_BUCKETS = 4_096
"""The Message-ID lookup buckets (``mid_bucket``)."""


def _expected_buckets(messages: int, members: int) -> tuple[int, int]:
    """How many lookup buckets ``messages`` Message-IDs (hashed: each in a bucket at
    random) are expected to fill, and the expected summed weight of their jobs (``mid_job``:
    a bucket of k messages weighs ``max(1, members * k // MID_ITEMS_A_WEIGHT)``)."""
    if messages == 0:
        return 0, 0
    mean = messages / _BUCKETS
    filled = weight = 0.0
    for k in range(1, int(mean + 12 * math.sqrt(mean) + 30)):
        share = math.exp(k * math.log(mean) - mean - math.lgamma(k + 1))  # Poisson
        filled += share
        weight += share * max(1, members * k // MID_ITEMS_A_WEIGHT)
    return round(_BUCKETS * filled), round(_BUCKETS * weight)


def _list_shards(jobs: SiteJobs, source: StoredList, state: BuildState, memory: Memory) -> Iterator[list[Job]]:
    slug = source.slug
    by_root = jobs.sitemap_months(slug)
    months = source.months()
    filed = set(months)
    # A month whose every message was removed keeps their tombstones (its messages jobs).
    emptied = {month_of(row) for row in source.rows(source.removed_calls()).values()} - filed
    pages = memory.pages.setdefault(slug, (None, {}))[1]
    series: list[Series] = []
    for month in sorted(filed | emptied | by_root.keys()):
        rooted = [t.id for t in by_root.get(month, ())]
        # The month's rows in one read of the index (most of its threads' messages are
        # among them), then the threads rooted here, the rest of their messages and
        # their neighbours' roots, in a few reads.
        here = [*source.month_rows(month), *source.removed_rows(month)]
        entries = source.threads(rooted)
        neighbours = {n for thread_id in rooted for n in source.neighbours(thread_id) if n is not None}
        rows = source.rows([*(c for e in entries.values() for c, _p, _d in e.messages), *rooted, *neighbours])
        shard: list[Job] = []
        for thread_id in rooted:
            entry = entries.get(thread_id)
            its = thread_series(entry, rows) if entry is not None else []
            # The series sections of a thread's page link the series' other versions, which
            # may come later: its record waits, parked, for the list's last month.
            record = jobs.thread_page(slug, thread_id, series=False)
            if record is not None and its:
                series.extend(its)
                state.park(pickle.dumps(record, pickle.HIGHEST_PROTOCOL))
            elif record is not None:
                shard.append(jobs.thread_job(slug, record))
            shard.extend(j for j in (jobs.tmbox(slug, thread_id),) if j is not None)
        if month in filed or month in emptied:
            shard.extend(jobs.messages(slug, month))  # one job per thread
        if month in filed:
            made = (jobs.month(slug, month), jobs.date(slug, month), jobs.mmbox(slug, month))
            shard.extend(j for j in made if j is not None)
        if rooted:
            shard.extend(jobs.sitemaps(slug, {month: by_root[month]}))
        pages.update((thread_id, found) for thread_id, found in source.thread_pages(rooted).items() if found)
        thread_of = source.thread_of(row.call for row in here)
        digests = {row.call: digest for row in here if (digest := mid_digest(row)) is not None}
        members = jobs.mid_members(slug, (row.call for row in here), digests)
        state.spool_mids(
            (call, slug, thread_of.get(call, ""), mid_bucket(digest), marshal.dumps(members.get(call, [])))
            for call, digest in digests.items()
        )
        if source.held() >= _HELD:
            jobs.forget()
        yield shard
    source.use_series(series)
    memory.series[slug] = (None, series)
    yield from _series_threads(jobs, source, state)
    shard = [jobs.list(slug), jobs.feed(slug), jobs.series_feed(slug)]
    for bucket in jobs.legacy_buckets(slug):
        shard.extend(j for j in (jobs.legacy_pages(slug, bucket),) if j is not None)
    jobs.forget()
    yield shard


def _series_threads(jobs: SiteJobs, source: StoredList, state: BuildState) -> Iterator[list[Job]]:
    """The thread jobs of a list's threads that hold a series, from their parked records
    and their series sections (``source`` knows every series of its list now), a few
    hundred at a time, the links to their versions' heads read together."""
    records: list[ThreadPage] = []
    for data in itertools.chain(state.unpark(), [None]):
        if data is not None:
            records.append(pickle.loads(data))
        if records and (data is None or len(records) >= _SERIES_THREADS):
            index = source.series_index()
            heads = {
                head for record in records for found in index.of_thread(record.id) for head in index.chain(found.head)
            }
            source.links(heads)
            yield [jobs.thread_job(source.slug, record, add_series=True) for record in records]
            records = []
            if source.held() >= _HELD:
                jobs.forget()
    jobs.forget()


_SERIES_THREADS = 200
"""Thread jobs given their series sections together."""
_MID_SHARD = 64
"""Lookup buckets planned together at most (4,096 in all)."""
_MID_SHARD_MESSAGES = 2_000
"""Messages whose lookup entries are planned together at most (a bucket with more is
planned alone): a bucket holds more messages as the archive grows (some 20 at 80,000
messages, 250 at 1,000,000), and 64 of them at 10,000,000 would be 160,000 messages'."""
_HELD = 5_000
"""Rows a list's source may hold before it forgets them (between months): a thread
that spans months is then read once, not once per month."""


def _mid_shards(jobs: SiteJobs, state: BuildState) -> Iterator[list[Job]]:
    """The lookup jobs, from what each message put in its bucket when its month was planned."""
    for prefixes in cut_buckets(state.spooled_prefixes(), _MID_SHARD, _MID_SHARD_MESSAGES):
        spooled = state.spooled_members(prefixes)
        made = (
            jobs.mid_job(prefix, (member for blob in blobs for member in marshal.loads(blob)))
            for prefix, blobs in spooled.items()
        )
        yield [job for job in made if job is not None]


def cut_buckets(buckets: Iterable[tuple[str, int]], most: int, messages: int) -> Iterator[list[str]]:
    """The buckets, (name, messages in it) in order, cut in runs of at most ``most``
    buckets and ``messages`` messages (a bigger bucket alone)."""
    shard: list[str] = []
    held = 0
    for name, count in buckets:
        if shard and (len(shard) >= most or held + count > messages):
            yield shard
            shard, held = [], 0
        shard.append(name)
        held += count
    if shard:
        yield shard


BATCH_WEIGHT = 2_000
"""Work (job weights, about one per message shown) planned together and handed to the
renderers heaviest job first: what a full build holds of its plan at a time."""
BATCH_JOBS = 500
"""Jobs planned together at most, whatever their weight: a lookup bucket of a few messages
weighs 1 (``mid_job``), and 2,000 of them held some 5 MB (issue 28: the peak of a full
build grew with the site's messages by that much, at the end, where the buckets are
planned). Bigger buckets weigh more (``builders.MID_ITEMS_A_WEIGHT``)."""
BATCH_ENTRIES = 2_000
"""Lookup entries (a Message-ID's messages and folders, ``kinds.MidPages``) planned together
at most: what a batch of buckets holds is what the planning process holds as rendering
ends (some 1.1 KB an entry), and weight and jobs alone let it grow with the buckets'
size (issue 28: 2,500 entries at 20,000 messages, cut by ``BATCH_JOBS``; 8,000 at 80,000,
8.7 MB, cut by ``BATCH_WEIGHT``)."""


def _entries(job: Job) -> int:
    """The lookup entries a job holds (none but a lookup bucket's)."""
    record = job.args
    if not isinstance(record, MidPages):
        return 0
    return sum(len(group.entries) + len(group.removed) for group in record.entries) + len(record.paths)


class StreamedPlan:
    """A full plan made as it is run: ``batches`` plans the shards as the renderers ask
    for jobs (the workers render while this process plans), and notes every job's id,
    key and whether it runs in the build state's spool; the counts, and the jobs recorded
    before that the plan does not have (``dropped``), are known once every batch is read.
    Holds ``held`` (the read snapshots the shards are planned in) until then or ``close``."""

    def __init__(
        self,
        state: BuildState,
        shards: Iterable[list[Job]],
        held: ExitStack | None = None,
        estimate: tuple[int, int] = (0, 0),
    ) -> None:
        """``state.start_plan`` first; ``estimate``: the jobs of the whole plan and their
        weight (``estimate_full``), for ``expected`` until the plan is made."""
        self.state = state
        self.count = self.weight = self.kept = 0
        self.estimate = estimate
        self.seconds = 0.0
        """Time spent planning (reading the shards and comparing their keys), not counting
        the time the batches are out with the caller."""
        self._seen = self._seen_weight = 0
        """Jobs planned so far, run or kept, and their weight."""
        self.dropped: tuple[str, ...] = ()
        self.complete = False
        self._shards = shards
        self._held = held

    def batches(self) -> Iterator[list[Job]]:
        """The jobs to run, about ``BATCH_WEIGHT`` of work (or ``BATCH_JOBS`` jobs, or
        ``BATCH_ENTRIES`` lookup entries) at a time (read once)."""
        state = self.state
        batch: list[Job] = []
        weight = entries = 0
        started = time.monotonic()
        try:
            for shard in self._shards:
                previous = state.keys_of(job.id for job in shard)
                runs = [previous.get(job.id) != job.key for job in shard]
                state.spool_jobs([(job.id, job.key, run) for job, run in zip(shard, runs, strict=True)])
                for job, run in zip(shard, runs, strict=True):
                    self._seen += 1
                    self._seen_weight += job.weight
                    if run:
                        batch.append(job)
                        weight += job.weight
                        entries += _entries(job)
                        self.count += 1
                        self.weight += job.weight
                    else:
                        self.kept += 1
                if weight >= BATCH_WEIGHT or len(batch) >= BATCH_JOBS or entries >= BATCH_ENTRIES:
                    self.seconds += time.monotonic() - started
                    yield batch
                    started = time.monotonic()
                    batch, weight, entries = [], 0, 0
            self.dropped = tuple(state.unplanned_jobs())
            self.complete = True
            self.seconds += time.monotonic() - started
            if batch:
                yield batch
        finally:
            self.close()

    def expected(self) -> tuple[int, int]:
        """The jobs to run and their weight: those planned to run so far and, until the
        plan is made, the estimate of those not planned yet (as if they all ran); exact
        once ``complete``."""
        if self.complete:
            return self.count, self.weight
        jobs, weight = self.estimate
        return self.count + max(0, jobs - self._seen), self.weight + max(0, weight - self._seen_weight)

    def close(self) -> None:
        """Let go of the snapshots the plan is made in (the plan stops there)."""
        if self._held is not None:
            held, self._held = self._held, None
            held.close()

    def plan(self) -> Plan:
        """The whole plan in memory (for comparisons and ``listlib build --plan``)."""
        run = tuple(job for batch in self.batches() for job in batch)
        spooled = self.state.spooled_keys()
        return Plan(
            run,
            tuple(job_id for job_id, _key, run in spooled if not run),
            self.dropped,
            {job_id: key for job_id, key, _run in spooled},
        )
