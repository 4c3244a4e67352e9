"""Keeps every list's threads in step with the store, and says what changed.

``ThreadSet.update`` compares, per list and month, the store's fingerprint of
its messages with the one recorded in the thread cache. Unchanged months cost
nothing. For changed months it finds the added and removed messages and
rethreads only the *clusters* they can reach: messages linked by a shared
Message-ID, reference or normalized subject (``threader.cluster_keys``). The
threader's decisions never cross clusters, so the result is exactly what
threading everything from scratch gives; tests check that.

A list the cache holds no threads of (a first build, a rebuilt cache) is threaded
from scratch without holding all of it: its clusters first, from each message's keys
alone (``threadbatch``), then a batch of whole clusters at a time (``BATCH`` messages),
each batch's threads written to the cache before the next is read.

A message that stewards changed under its call number (``Index.revisions``: removed,
or replaced by an edited copy) is rethreaded with its cluster, as its facts changed.

Thread overrides (an operator's "X answers Y" and "X starts its own thread",
``overrides``) are given to ``update`` per list; the cache records the ones the
threads were made with. An attachment links X and Y like a shared key
(``threader.override_keys``). The messages named by an override that was added,
removed or changed since are rethreaded with their clusters, so an edit of the
overrides costs the same as the arrival of a message in those threads.

Each update that changes something gets a new *generation*; threads and months
remember the generation they last changed in, and re-rooted or removed thread
names are remembered with their successor. A renderer asks
``changes_since(epoch, generation)`` with what it saw last and gets exactly the
threads and months to rebuild; a renderer that crashed simply asks again.

This module never writes to the store and never renders.

Length: one class and the cluster walk it drives; the cache bookkeeping and the
rethreading share private state that splitting would have to pass around.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .errors import StoreError
from .forkpool import run_in_child
from .fsutil import acquire_lock, release_lock
from .store.index import (
    FACT_CALL,
    FACT_DATE,
    FACT_FROM_ADDR,
    FACT_FROM_NAME,
    FACT_MONTH,
    FACT_NO_ARCHIVE,
    FACT_PINS,
    FACT_YEAR,
    REMOVED_MARK,
    Index,
    split_pins,
)
from .threadbatch import cluster_calls
from .threadcache import MessageEntry, MonthEntry, ThreadCache, ThreadEntry
from .threader import (
    Overrides,
    Thread,
    ThreadInput,
    cluster_keys,
    forget_threading,
    override_keys,
    reference_chain,
    stand_in_from_text,
    thread_messages,
)
from .values import FAILED, Month

__all__ = ["ThreadChanges", "ThreadSet", "thread_input"]

_FULL_FETCH = 24
"""Changed months above which a list's call numbers are read in one query."""


@dataclass(frozen=True)
class ThreadChanges:
    """What changed in the threads since some generation."""

    epoch: str
    """Name of the cache's life; a different epoch than remembered means: rebuild all."""
    generation: int
    """The cache's generation now; pass it back to ``changes_since`` next time."""
    everything: bool = False
    """True when the caller's generation belongs to another epoch: treat all as changed."""
    threads: frozenset[tuple[str, str]] = frozenset()
    """(list slug, thread id) of threads that are new or whose messages or shape changed."""
    gone: Mapping[tuple[str, str], str | None] = field(default_factory=dict)
    """(list slug, thread id) of names that no longer name a thread -> the thread that
    now holds that root message (it was re-rooted), or None (its messages are gone)."""
    months: frozenset[tuple[str, Month]] = frozenset()
    """(list slug, month) whose thread list changed (including months now empty)."""
    rethreaded: int = 0
    """Messages threaded again by the update that produced this report."""

    @property
    def nothing(self) -> bool:
        """No thread, name or month changed (``everything`` aside)."""
        return not (self.threads or self.gone or self.months)


def thread_input(facts: Sequence[object]) -> ThreadInput:
    """A threader input from an ``Index.thread_facts`` tuple: a removed message's is its
    stand-in (``threader.stand_in``) when its pins keep the digests."""
    call, message_id, in_reply_to, refs, subject, date, raw_hash = facts[:7]
    pins = facts[FACT_PINS]
    if pins is not None and facts[FACT_NO_ARCHIVE] == REMOVED_MARK:
        digests = split_pins(pins)[1]  # type: ignore[arg-type]
        if digests is not None:
            return stand_in_from_text(call, date, raw_hash, digests)  # type: ignore[arg-type]
    return ThreadInput(call, message_id, in_reply_to, tuple(refs.split()) if refs else (), subject, date, raw_hash)  # type: ignore[arg-type,union-attr]


class ThreadSet:
    """The thread cache of one site, opened for reading and updating."""

    def __init__(self, folder: Path, *, lock_timeout: float = 60.0, batch: int | None = None) -> None:
        """``batch``: messages threaded at once when a list is threaded from scratch
        (``BATCH`` when None; tests give small ones)."""
        self.folder = folder
        self.batch = batch or BATCH
        self.path = folder / "threads.sqlite"
        self.lock_timeout = lock_timeout
        self._cache: ThreadCache | None = None

    def open(self) -> ThreadSet:
        """Open the cache, creating it, or rebuilding it silently when stale or damaged."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.folder}: cannot create the cache folder: {exc.strerror}") from exc
        try:
            self._cache = ThreadCache(self.path)
        except sqlite3.DatabaseError:
            with self._locked():
                ThreadCache.discard(self.path)
                self._cache = ThreadCache(self.path)
        return self

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> ThreadSet:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cache(self) -> ThreadCache:
        if self._cache is None:
            raise RuntimeError("the thread set is not open")
        return self._cache

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = acquire_lock(
            self.folder / "threads.lock",
            self.lock_timeout,
            f"{self.folder}: another listlib process has been updating the threads for "
            f"{self.lock_timeout:.0f} s; try again later",
        )
        try:
            yield
        finally:
            release_lock(fd)

    # -- updating ---------------------------------------------------------------------

    def update(self, index: Index, overrides: Mapping[str, Overrides] | None = None) -> ThreadChanges:
        """Bring the cache up to date with the store's filed messages and the thread
        overrides (list slug -> call -> parent call or None); report what changed."""
        wanted = {slug: dict(items) for slug, items in (overrides or {}).items()}
        with self._locked(), _without_gc():
            try:
                return self._update(index, wanted)
            except sqlite3.DatabaseError:
                # A damaged cache is only a cache: start over (a new epoch tells readers).
                self.close()
                ThreadCache.discard(self.path)
                self._cache = ThreadCache(self.path)
                return self._update(index, wanted)

    def _update(self, index: Index, overrides: dict[str, dict[str, str | None]]) -> ThreadChanges:
        cache = self.cache
        generation = cache.generation + 1
        report = _Report()
        with index.snapshot():
            slugs = set(index.slugs()) - {FAILED}
            for slug in sorted(slugs | set(cache.slugs())):
                fresh = index.month_fingerprints(slug) if slug in slugs else {}
                rethreaded = report.rethreaded
                with cache.transaction():
                    _update_list(index, cache, slug, fresh, overrides.get(slug, {}), generation, report, self.batch)
                    if report.touched:
                        cache.set_generation(generation)
                if report.rethreaded != rethreaded:
                    # The collector is paused: free this list's linked nodes before the next
                    # list's (else a site of many lists holds all of them until the end). The
                    # youngest generation only: with the collector paused, everything made
                    # since the last collection is in it; a full collection walks the whole
                    # heap, each list again (27 ms a list in the test process).
                    gc.collect(0)
                    # The threader's caches hold this list's Message-IDs and subjects (up to
                    # 16,384 each, some 4 MB): a list's messages rarely name another's.
                    forget_threading()
        return ThreadChanges(
            epoch=cache.epoch,
            generation=cache.generation,
            threads=frozenset(report.threads),
            gone=report.gone,
            months=frozenset(report.months),
            rethreaded=report.rethreaded,
        )

    # -- reading ----------------------------------------------------------------------

    def changes_since(self, epoch: str, generation: int) -> ThreadChanges:
        """Threads and months changed after ``generation`` of ``epoch``."""
        cache = self.cache
        with cache.snapshot():
            now = cache.generation
            if epoch != cache.epoch:
                return ThreadChanges(epoch=cache.epoch, generation=now, everything=True)
            threads, gone, months = cache.changed_since(generation)
        return ThreadChanges(
            epoch=cache.epoch,
            generation=now,
            threads=frozenset(threads),
            gone=gone,
            months=frozenset((s, Month(y, m)) for s, y, m in months),
        )

    def slugs(self) -> list[str]:
        return self.cache.slugs()

    def months(self, slug: str) -> list[MonthEntry]:
        return self.cache.months(slug)

    def month(self, slug: str, month: Month) -> MonthEntry:
        return self.cache.month(slug, month.year, month.month)

    def thread(self, slug: str, thread_id: str) -> ThreadEntry | None:
        return self.cache.thread(slug, thread_id)

    def threads(self, slug: str, thread_ids: Iterable[str]) -> dict[str, ThreadEntry]:
        return self.cache.threads_by_id(slug, thread_ids)

    def thread_ids(self, slug: str) -> list[str]:
        return self.cache.thread_ids(slug)

    def thread_of(self, slug: str, call: str) -> str | None:
        return self.cache.thread_of(slug, call)

    def gone(self, slug: str) -> dict[str, str | None]:
        return self.cache.gone(slug)


@contextmanager
def _without_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: threading creates tens of thousands of
    linked nodes, and collections triggered midway cost a third of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Report:
    def __init__(self) -> None:
        self.threads: set[tuple[str, str]] = set()
        self.gone: dict[tuple[str, str], str | None] = {}
        self.months: set[tuple[str, Month]] = set()
        self.rethreaded = 0
        self.touched = False


def _update_list(
    index: Index,
    cache: ThreadCache,
    slug: str,
    fresh: dict[tuple[int, int], str],
    overrides: dict[str, str | None],
    generation: int,
    report: _Report,
    batch: int,
) -> None:
    recorded = cache.fingerprints(slug)
    known = {month: fp for month, (fp, _) in recorded.items()}
    held = {month for month, (_, empty) in recorded.items() if not empty}
    changed = [month for month in fresh.keys() | known.keys() if fresh.get(month) != known.get(month)]
    was = cache.overrides(slug)
    named = _named_by_changes(was, overrides)
    # Messages stewards changed under their call numbers (removed, redacted) since.
    revisions, revised = index.revisions(slug), cache.revisions(slug)
    changed_facts = {call for call in revisions.keys() | revised.keys() if revisions.get(call) != revised.get(call)}
    if not changed and not named and not changed_facts:
        return
    full = not known or len(changed) > _FULL_FETCH
    added, removed, filled = (
        _changed_calls(index, cache, slug, changed, full=full) if changed else (set[str](), set[str](), set())
    )
    # A message whose facts changed leaves its cluster and joins those of its new keys.
    added, removed = added | changed_facts, removed | changed_facts
    if added or removed or (named and held):
        report.touched = True
        touched_months = _rethread(
            index, cache, slug, added, removed, named, overrides, generation, report, everything=not held, batch=batch
        )
    else:
        touched_months = set()
    if was != overrides:
        cache.set_overrides(slug, overrides)
    if revisions != revised:
        cache.set_revisions(slug, revisions)
    emptied = {month for month in changed if month not in filled and month in held}
    for month in changed:
        # A month that lost its last message stays as an empty tombstone, so that
        # readers learn its page must go.
        is_news = month in touched_months or month in emptied or (month in filled and month not in held)
        cache.set_month(slug, *month, fresh.get(month, ""), generation if is_news else None, empty=month not in filled)
    for month in touched_months - set(changed):
        cache.set_month(slug, *month, known[month], generation)
    report.months.update((slug, Month(*month)) for month in touched_months | emptied)


def _named_by_changes(was: dict[str, str | None], now: dict[str, str | None]) -> set[str]:
    """The messages named by overrides added, removed or changed between two sets."""
    named: set[str] = set()
    for call in was.keys() | now.keys():
        before, after = was.get(call, ""), now.get(call, "")
        if before != after:
            named.add(call)
            named.update(parent for parent in (before, after) if parent)
    return named


def _changed_calls(
    index: Index, cache: ThreadCache, slug: str, months: list[tuple[int, int]], *, full: bool
) -> tuple[set[str], set[str], set[tuple[int, int]]]:
    """Added and removed call numbers in these months, and which of them hold messages."""
    wanted = set(months)
    fresh: set[str] = set()
    filled: set[tuple[int, int]] = set()
    if full:
        for call, year, month in index.calls_by_month(slug):
            if (year, month) in wanted:
                fresh.add(call)
                filled.add((year, month))
    else:
        for year, month in months:
            calls = index.month_calls(slug, year, month)
            fresh.update(calls)
            if calls:
                filled.add((year, month))
    cached: set[str] = set()
    for year, month in months:
        cached.update(cache.month_calls(slug, year, month))
    return fresh - cached, cached - fresh, filled


def _rethread(
    index: Index,
    cache: ThreadCache,
    slug: str,
    added: set[str],
    removed: set[str],
    named: set[str],
    overrides: dict[str, str | None],
    generation: int,
    report: _Report,
    *,
    everything: bool,
    batch: int,
) -> set[tuple[int, int]]:
    """Rethread the clusters that added and removed messages, and those named by
    changed overrides, reach (``everything``: the cache holds none of the list's
    threads); returns the months whose thread list changed."""
    if everything:
        return _thread_all(index, cache, slug, added, overrides, generation, report, batch)
    work = _Closure(index, cache, slug, added, removed, named, overrides)

    def thread_entries() -> list[ThreadEntry]:
        threads = thread_messages(work.inputs, work.chains, overrides)
        return [_entry(t, work.facts_of) for t in threads]

    # Big closures (a first build) are threaded in a child process on the other core
    # while this one computes clusters and writes the keys.
    join = run_in_child(thread_entries, big=len(work.inputs) >= _FORK_AT)
    cluster_of = _clusters(work.keys_of)
    cache.add_keys(slug, {key: cluster_of[call] for call, keys in work.keys_of.items() for key in keys}.items())
    entries = {entry.id: entry for entry in join()}
    report.rethreaded += len(work.inputs)
    old_thread_ids = {entry.thread for entry in work.old_entries}
    old_threads = cache.threads_by_id(slug, old_thread_ids) if old_thread_ids else {}
    changed = {tid for tid, entry in entries.items() if old_threads.get(tid) != entry}
    vanished = old_thread_ids - entries.keys()

    thread_of_call = {call: entry.id for entry in entries.values() for call, _parent, _depth in entry.messages}
    touched_months: set[tuple[int, int]] = set()
    for tid in changed:
        touched_months.update((y, m) for y, m, _ in entries[tid].months)
        report.threads.add((slug, tid))
    for tid in changed | vanished:
        if tid in old_threads:
            touched_months.update((y, m) for y, m, _ in old_threads[tid].months)
    for tid in vanished:
        successor = thread_of_call.get(tid)
        report.gone[(slug, tid)] = successor
        cache.set_gone(slug, tid, successor, generation)
    cache.unset_gone(slug, changed)
    cache.forget(slug, [e.call for e in work.old_entries], (changed | vanished) & old_thread_ids)

    cache.add_messages(
        slug,
        (
            (call, f[FACT_YEAR], f[FACT_MONTH], cluster_of[call], thread_of_call[call])
            for call, f in work.facts_of.items()
        ),
    )
    cache.add_threads(slug, (entries[tid] for tid in sorted(changed)), dict.fromkeys(changed, generation))
    return touched_months


_FORK_AT = 4000
"""Messages to thread from which a child process does the threading."""

BATCH = 5000
"""Messages threaded at once when a list is threaded from scratch (whole clusters:
one bigger cluster is threaded alone). Each costs some 5 KB while it is threaded."""


def _thread_all(
    index: Index,
    cache: ThreadCache,
    slug: str,
    added: set[str],
    overrides: dict[str, str | None],
    generation: int,
    report: _Report,
    batch: int,
) -> set[tuple[int, int]]:
    """Thread a list whose cache holds no threads: its clusters from each message's keys
    (a few bytes a message), then a batch of clusters at a time, each written to the
    cache before the next is read; returns the months whose thread list changed."""
    extra_keys = override_keys(overrides)

    def keys() -> Iterator[tuple[str, list[str]]]:
        for facts in index.iter_thread_facts(slug):
            call = facts[FACT_CALL]
            if call in added:
                keys = cluster_keys(thread_input(facts))
                yield call, keys + extra_keys[call] if call in extra_keys else keys  # type: ignore[misc,index]

    clusters = cluster_calls(keys())
    cache.add_keys(slug, clusters.key_clusters())
    clusters.forget_keys()
    touched_months: set[tuple[int, int]] = set()
    for numbers in clusters.batches(batch):
        facts_of: dict[str, tuple[object, ...]] = {
            f[FACT_CALL]: f  # type: ignore[misc]
            for f in index.thread_facts(slug, [clusters.calls[number] for number in numbers])
        }
        entries = [_entry(t, facts_of) for t in thread_messages(map(thread_input, facts_of.values()), None, overrides)]
        thread_of_call = {call: entry.id for entry in entries for call, _parent, _depth in entry.messages}
        for entry in entries:
            touched_months.update((y, m) for y, m, _ in entry.months)
            report.threads.add((slug, entry.id))
        cache.add_messages(
            slug,
            (
                (
                    call,
                    facts_of[call][FACT_YEAR],
                    facts_of[call][FACT_MONTH],
                    clusters.name(number),
                    thread_of_call[call],
                )
                for number in numbers
                for call in (clusters.calls[number],)
            ),
        )
        cache.add_threads(slug, entries, {entry.id: generation for entry in entries})
        report.rethreaded += len(numbers)
        del facts_of, entries, thread_of_call
        # Threading's nodes link both ways; the collector is paused (``_without_gc``):
        # free this batch's before the next is read.
        gc.collect(0)
    return touched_months


class _Closure:
    """The messages an update must rethread: the added ones, plus every kept message
    of the clusters that the added and removed ones, and those ``named`` by changed
    overrides, reach."""

    def __init__(
        self,
        index: Index,
        cache: ThreadCache,
        slug: str,
        added: set[str],
        removed: set[str],
        named: set[str],
        overrides: dict[str, str | None],
    ) -> None:
        facts = index.thread_facts(slug, added)
        new_facts = [f for f in facts if f[FACT_CALL] in added]
        self.inputs = [thread_input(f) for f in new_facts]
        self.chains: dict[str, list[str]] = {}
        self.keys_of: dict[str, list[str]] = {}
        self.extra_keys = override_keys(overrides)
        self._add_keys(self.inputs)
        self.old_entries: list[MessageEntry] = []
        clusters = cache.clusters_of_keys(slug, {k for keys in self.keys_of.values() for k in keys})
        clusters.update(entry.cluster for entry in cache.messages_of_calls(slug, removed | named))
        self.old_entries = cache.messages_of_clusters(slug, clusters)
        kept_facts = index.thread_facts(slug, [e.call for e in self.old_entries if e.call not in removed])
        kept_inputs = [thread_input(f) for f in kept_facts]
        self._add_keys(kept_inputs)
        self.inputs.extend(kept_inputs)
        # The facts themselves (months, dates, authors), not tuples made from them: a big
        # closure holds every message's, and more objects alive make each collection slower.
        self.facts_of: dict[str, tuple[object, ...]] = {f[FACT_CALL]: f for f in new_facts + kept_facts}  # type: ignore[misc]

    def _add_keys(self, inputs: list[ThreadInput]) -> None:
        for message in inputs:
            chain = self.chains[message.call] = reference_chain(message)
            self.keys_of[message.call] = cluster_keys(message, chain) + self.extra_keys.get(message.call, [])


def _entry(thread: Thread, facts_of: dict[str, tuple[object, ...]]) -> ThreadEntry:
    """A thread as the cache keeps it; ``facts_of``: call -> its ``Index.thread_facts`` tuple."""
    facts = [facts_of[p.call] for p in thread.messages]
    counts: dict[tuple[int, int], int] = {}
    for f in facts:
        if f[FACT_NO_ARCHIVE] == REMOVED_MARK:
            continue  # a placeholder: in the thread, not counted among a month's messages
        month = (f[FACT_YEAR], f[FACT_MONTH])
        counts[month] = counts.get(month, 0) + 1  # type: ignore[index]
    dates = [f[FACT_DATE] for f in facts]
    root = facts_of[thread.id]
    return ThreadEntry(
        id=thread.id,
        missing_root=thread.missing_root,
        messages=tuple((p.call, p.parent, p.depth) for p in thread.messages),
        first=min(dates),  # type: ignore[type-var]
        last=max(dates),  # type: ignore[type-var]
        months=tuple((y, m, n) for (y, m), n in sorted(counts.items())),
        authors=tuple(dict.fromkeys([(f[FACT_FROM_NAME], f[FACT_FROM_ADDR]) for f in facts if not f[FACT_NO_ARCHIVE]])),  # type: ignore[misc]
        root=(root[FACT_YEAR], root[FACT_MONTH]),  # type: ignore[arg-type]
    )


def _clusters(keys_of: dict[str, list[str]]) -> dict[str, str]:
    """Call number -> its cluster's name (the smallest call number in it)."""
    calls = list(keys_of)
    parent = list(range(len(calls)))
    holder: dict[str, int] = {}
    """Key -> the first message seen with it."""

    def find(item: int) -> int:
        root = item
        while parent[root] != root:
            root = parent[root]
        while parent[item] != root:
            parent[item], item = root, parent[item]
        return root

    for number, call in enumerate(calls):
        for key in keys_of[call]:
            other = holder.setdefault(key, number)
            if other != number:
                a, b = find(other), find(number)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    smallest: dict[int, str] = {}
    for number, call in enumerate(calls):
        root = find(number)
        if call < smallest.get(root, "~"):
            smallest[root] = call
    return {call: smallest[find(number)] for number, call in enumerate(calls)}
