"""An incremental plan reads a list's patch series from the build state, a thread or a
version chain at a time (``plan.storedseries``): what it finds must be what linking
every series of the list finds (``plan.series.SeriesIndex``), for any list and any
threads regrouped."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from listlib.plan.series import SeriesIndex
from listlib.plan.state import BuildState
from listlib.plan.storedseries import StoredSeries, record_series
from listlib.series import Series

TITLES = ["md: fix the resync", "md: part one", "net: drop the lock", "net: drop the lock.", "mm: faster"]
AUTHORS = ["ann@example.org", "bob@example.org"]


def _random_series(rng: random.Random, head: str, thread: str) -> Series:
    """A series whose keys (title, first title, author) collide often with others'."""
    return Series(
        head=head,
        thread=thread,
        title=rng.choice(TITLES),
        author=rng.choice(AUTHORS),
        date=rng.randrange(50),
        version=rng.randrange(1, 4),
        rfc=rng.random() < 0.2,
        resend=rng.random() < 0.1,
        tags=(),
        total=rng.randrange(1, 4),
        cover=head if rng.random() < 0.5 else None,
        patches=((1, f"{head}p"),),
        first_title=rng.choice(["", *TITLES]),
    )


def _list(rng: random.Random, threads: int, prefix: str) -> list[Series]:
    found = []
    for number in range(threads):
        for index in range(rng.randrange(0, 3)):
            found.append(_random_series(rng, f"{prefix}{number}-{index}", f"t{number}"))
    return found


@pytest.mark.parametrize("seed", range(12))
def test_chains_feed_and_thread_series_read_from_the_state_are_those_of_the_whole_list(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    before = _list(rng, 30, "h")
    regrouped = set(rng.sample([f"t{n}" for n in range(30)], 5)) | {"t99"}  # and a new thread
    fresh = [s for s in _list(rng, 100, "n") if s.thread in regrouped]
    now = [s for s in before if s.thread not in regrouped] + fresh
    whole = SeriesIndex(now)
    with BuildState(tmp_path / "build.sqlite") as state:
        record_series(state, "dev", None, before)
        lookup = StoredSeries(state, "dev", regrouped, [s for s in before if s.thread in regrouped], fresh)
        for thread in {s.thread for s in before + fresh}:
            assert list(lookup.of_thread(thread)) == list(whole.of_thread(thread))
        for series in now:
            assert lookup.chain(series.head) == whole.chain(series.head), series.head
            assert lookup.get(series.head) == series
        for count in (1, 3, len(now) + 2):
            assert lookup.newest(count) == whole.newest(count)


@pytest.mark.parametrize("seed", range(12))
def test_the_threads_whose_chains_changed_are_those_linking_the_whole_list_finds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    before = _list(rng, 30, "h")
    regrouped = set(rng.sample([f"t{n}" for n in range(30)], 3))
    fresh = [s for s in _list(rng, 100, "n") if s.thread in regrouped]
    now = [s for s in before if s.thread not in regrouped] + fresh
    old, new = SeriesIndex(before).chains(), SeriesIndex(now).chains()
    touched = {
        head for h in old.keys() | new.keys() if old.get(h) != new.get(h) for head in (*old.get(h, ()), *new.get(h, ()))
    }
    expected = {s.thread for s in now if s.head in touched}
    with BuildState(tmp_path / "build.sqlite") as state:
        record_series(state, "dev", None, before)
        lookup = StoredSeries(state, "dev", regrouped, [s for s in before if s.thread in regrouped], fresh)
        assert lookup.changed_chains() == expected


def test_recorded_series_replace_only_those_of_their_threads_and_lists(tmp_path: Path) -> None:
    rng = random.Random(1)
    first = [_random_series(rng, f"a{n}", f"t{n % 3}") for n in range(6)]
    other = [_random_series(rng, "b0", "t0")]
    with BuildState(tmp_path / "build.sqlite") as state:
        record_series(state, "dev", None, first)
        record_series(state, "ops", None, other)
        again = [_random_series(rng, "c0", "t1")]
        record_series(state, "dev", {"t1"}, again)
        lookup = StoredSeries(state, "dev", (), (), ())
        assert list(lookup.of_thread("t1")) == again
        assert list(lookup.of_thread("t0")) == SeriesIndex(first).by_thread["t0"]
        assert lookup.newest(10) == SeriesIndex([s for s in first if s.thread != "t1"] + again).newest(10)
        assert list(StoredSeries(state, "ops", (), (), ()).of_thread("t0")) == other
