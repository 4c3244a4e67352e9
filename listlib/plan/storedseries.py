"""A list's patch series as an incremental plan reads them: from the build state, a
thread or a few versions at a time, never all of them (a list of 50,000 messages has
some 8,000 series; reading and linking all of them for one changed thread cost a
build more than the rest of its plan).

The state holds the series the last complete build knew (``BuildState.series_*``);
the plan regroups the threads it looks at (``plan.series.thread_series``) and gives
their series here, in place of those the state holds for these threads.

Versions are linked by the keys of ``series.link_versions`` only: the previous and next
version of a series, and the tie-breaks between candidates, are all among the series
that share a key with it. So the links of the series in a set that holds, with each of
its series, every series sharing a key with it (its *component*, found by following
keys through the state's ``series_keys``) are those of the whole list: a chain is
worked out from its component alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence

from ..series import Series
from .series import SeriesIndex, SeriesLookup, decode_item, encode_item
from .state import BuildState

__all__ = ["StoredSeries", "record_series"]


def record_series(state: BuildState, slug: str, threads: Iterable[str] | None, series: Iterable[Series]) -> None:
    """Record the series of these threads (None: the list's every series) in the state."""
    state.replace_series(
        slug,
        threads,
        ((s.head, s.thread, s.date, json.dumps(encode_item(s), separators=(",", ":")), sorted(s.keys)) for s in series),
    )


def _decoded(items: Iterable[str]) -> list[Series]:
    return [decode_item(json.loads(item)) for item in items]


class StoredSeries(SeriesLookup):
    """The series of list ``slug``: those the state holds, but for the ``regrouped``
    threads, whose series are ``now`` (the state's were ``before``)."""

    def __init__(
        self, state: BuildState, slug: str, regrouped: Collection[str], before: Iterable[Series], now: Iterable[Series]
    ) -> None:
        self._state, self._slug = state, slug
        self._regrouped = set(regrouped)
        self._before = list(before)
        self._now = sorted(now, key=lambda s: (s.date, s.head))
        self._by_thread: dict[str, list[Series]] = {thread: [] for thread in self._regrouped}
        for found in self._now:
            self._by_thread[found.thread].append(found)
        self._by_head: dict[str, Series] = {s.head: s for s in self._now}
        self._chains: dict[str, tuple[str, ...]] = {}

    def _stored(self, items: Iterable[str]) -> list[Series]:
        """These series of the state, without those of the regrouped threads (remembered by head)."""
        kept = [s for s in _decoded(items) if s.thread not in self._regrouped]
        self._by_head.update((s.head, s) for s in kept)
        return kept

    def _fresh(self, keys: Collection[str]) -> list[Series]:
        """The regrouped threads' series that have any of these keys."""
        return [s for s in self._now if not s.keys.isdisjoint(keys)]

    def of_thread(self, thread_id: str) -> Sequence[Series]:
        found = self._by_thread.get(thread_id)
        if found is None:
            stored = self._stored(self._state.series_of_threads(self._slug, [thread_id]))
            found = self._by_thread[thread_id] = sorted(stored, key=lambda s: (s.date, s.head))
        return found

    def get(self, head: str) -> Series:
        return self._by_head[head]

    def chain(self, head: str) -> tuple[str, ...]:
        found = self._chains.get(head)
        if found is None:
            index = SeriesIndex(
                _component(
                    self.get(head).keys,
                    lambda keys: [*self._stored(self._state.series_with_keys(self._slug, keys)), *self._fresh(keys)],
                )
            )
            self._chains.update((other, index.chain(other)) for other in index.by_head)
            found = self._chains[head]
        return found

    def newest(self, count: int) -> list[Series]:
        if count <= 0:
            return []
        # Enough of the state's newest that ``count`` remain without the regrouped threads'.
        stored = self._stored(self._state.newest_series(self._slug, count + len(self._before)))
        return sorted([*stored, *self._now], key=lambda s: (s.date, s.head), reverse=True)[:count]

    def changed_chains(self) -> set[str]:
        """The threads of the series whose version chain differs from the last build's:
        the chains then and now of the components of the regrouped threads' keys (found
        together: what either has) are compared."""
        then: dict[str, Series] = {}
        now: dict[str, Series] = {}

        def fetch(keys: Collection[str]) -> list[Series]:
            stored = _decoded(self._state.series_with_keys(self._slug, keys))
            then.update((s.head, s) for s in stored)
            now.update((s.head, s) for s in stored if s.thread not in self._regrouped)
            now.update((s.head, s) for s in self._fresh(keys))
            return [*stored, *self._fresh(keys)]

        _component({key for series in (*self._before, *self._now) for key in series.keys}, fetch)
        old, new = SeriesIndex(then.values()).chains(), SeriesIndex(now.values()).chains()
        touched: set[str] = set()
        for head in old.keys() | new.keys():
            if old.get(head) != new.get(head):
                touched.update((*old.get(head, ()), *new.get(head, ())))
        return {now[head].thread for head in touched if head in now}


def _component(keys: Iterable[str], fetch: Callable[[Collection[str]], list[Series]]) -> list[Series]:
    """The series ``fetch`` finds for these keys and, again and again, for the keys of
    what it found, until no new key turns up."""
    found: dict[str, Series] = {}
    known: set[str] = set()
    pending = set(keys)
    while pending:
        known |= pending
        for series in fetch(pending):
            found[series.head] = series
        pending = {key for series in found.values() for key in series.keys} - known
    return list(found.values())
