"""The sharded full plan (``plan.full``: one list-month at a time through ``StoredList``,
spooled to the build state) describes the same jobs, with the same keys and records,
and leaves the same memory for the next build, as an enumeration over lists held in
memory (``SiteJobs.all`` over ``LoadedList``s, ``incremental.full_memory``): on a site
with patch series and their versions, threads across months, a removed and a withheld
message and two lists, with the sources made to forget after every month."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from listlib import build as build_module
from listlib.build import _load_theme, _plan, _whole
from listlib.config import load_config
from listlib.plan import full
from listlib.plan.builders import SiteJobs
from listlib.plan.incremental import Memory, full_memory
from listlib.plan.jobs import Job
from listlib.plan.sources import LoadedList
from listlib.plan.state import BuildState
from listlib.plan.stored import StoredList

from ..build.test_build import T0, add, build, call_of, post, tree
from ..build.test_series_pages import V1, V2, patch, review
from ..support.helpers import make_message, run_listlib


def _loaded(source: StoredList) -> LoadedList:
    """The list of ``source`` held in memory, as full builds loaded it before ``plan.full``."""
    index, threadset, slug = source._index, source._threadset, source.slug
    rows = {row.call: row for row in index.filed_rows(slug)}
    removed = index.removed_rows(slug)
    entries = threadset.threads(slug, threadset.thread_ids(slug)) if rows or removed else {}
    revisions = index.revisions(slug)
    return LoadedList(
        source.config, rows, entries.values(), source.description_markdown, removed, revisions, source._class_of
    )


def _populate(site: Path) -> None:
    add(site, *V1, *V2)
    add(site, review(13, "Re: [PATCH v2 1/2] md: part one", 11, (10, 11), "Reviewed-by: Person 1 <p1@example.org>"))
    add(site, patch(20, "[PATCH v3 0/2] md: fix the resync", days=45), patch(21, "[PATCH v3 1/2] md: one", 20, 45))
    add(
        site,
        post(30, "Plans"),
        post(31, "Re: Plans", reply_to=30, refs=(30,), at=timedelta(days=40)),
        post(32, "Re: Plans", reply_to=31, refs=(30, 31), at=timedelta(days=80)),
        post(33, "Withheld", extra={"X-No-Archive": "yes"}),
        post(34, "Gone soon", at=timedelta(days=100)),
        *(post(n, f"Topic {n}", at=timedelta(days=n % 90, minutes=n)) for n in range(100, 130)),
        make_message("Release 1.0", message_id="<a1@example.org>", to="announce@lists.example.org", date=T0),
    )
    build(site)
    call, _path = call_of(site, 34)
    run_listlib("remove", call, "--reason", "spam", cwd=site, check=True)


def test_the_sharded_plan_makes_the_jobs_and_memory_of_a_full_enumeration(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _populate(site)
    made: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    expected: dict[str, Any] = {}

    def recording(*args: Any, **kwargs: Any) -> SiteJobs:
        made.append((args, kwargs))
        return SiteJobs(*args, **kwargs)

    sharded = full.full_shards

    def both(
        jobs: SiteJobs, state: BuildState, memory: Memory, marks: Mapping[str, Mapping[tuple[int, int], str]]
    ) -> Iterator[list[Job]]:
        shards = list(sharded(jobs, state, memory, marks))
        args, kwargs = made[-1]
        twin = SiteJobs(args[0], args[1], [_loaded(s) for s in args[2]], *args[3:], **kwargs)
        expected["jobs"] = list(twin.all())
        expected["memory"] = full_memory(twin, memory.epoch, memory.generation, memory.fingerprint, marks)
        yield from shards

    monkeypatch.setattr(build_module, "SiteJobs", recording)
    monkeypatch.setattr(build_module, "full_shards", both)
    monkeypatch.setattr(full, "_HELD", 0)  # forget after every month
    monkeypatch.setattr(full, "_SERIES_THREADS", 1)
    config = load_config(site / "listlib.toml")
    with BuildState(config.site.cache_dir / "build.sqlite") as state:
        planned = _plan(config, _load_theme(config), state, full=True)
        plan = _whole(planned.plan)
        spooled_mids = sorted(state.db.execute("SELECT call, slug, thread, prefix FROM temp.plan_mids"))
        memory: Memory = planned.memory
        # Each list's part went to the spool once the list was planned: none is left in memory.
        assert not (memory.orders or memory.months or memory.pages or memory.series)
        for slug, data in state.spooled_memory():
            for name, value in pickle.loads(data).items():
                getattr(memory, name)[slug] = value
    jobs: list[Job] = expected["jobs"]
    assert sorted(plan.keys) == sorted(job.id for job in jobs)
    assert {job.id for job in plan.run} | set(plan.kept) == {job.id for job in jobs}
    for job in jobs:
        assert plan.keys[job.id] == job.key, job.id
    ran = {job.id: job for job in plan.run}
    for job in jobs:
        if job.id in ran:
            assert (ran[job.id].args, ran[job.id].weight) == (job.args, job.weight), job.id
    assert any(job.kind == "thread" and job.args.series for job in jobs), "no series section planned"
    want: Memory = expected["memory"]
    assert memory.orders == want.orders
    assert memory.months == want.months
    assert memory.marks == want.marks
    assert memory.revisions == want.revisions
    assert memory.pages == want.pages
    assert memory.series == want.series
    assert spooled_mids == sorted(want.add_mids)


def test_a_full_build_renders_its_first_jobs_before_the_plan_is_made_and_makes_the_same_site(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _populate(site)
    events: list[str] = []
    sharded = full.full_shards

    def noting(*args: Any) -> Iterator[list[Job]]:
        for shard in sharded(*args):
            events.append("planned")
            yield shard

    monkeypatch.setattr(build_module, "full_shards", noting)
    monkeypatch.setattr(full, "BATCH_WEIGHT", 1)  # every shard a batch of its own
    report = build(site, clean=True, fault=lambda point: events.append(point) if point == "job-done" else None)
    assert report.jobs_run == events.count("job-done") > 0
    last_planned = len(events) - 1 - events[::-1].index("planned")
    assert events.index("job-done") < last_planned, "the first jobs rendered before the last shard was planned"
    streamed = tree(site / "output")
    monkeypatch.setattr(full, "BATCH_WEIGHT", 10**9)  # the whole plan one batch
    monkeypatch.setattr(full, "BATCH_JOBS", 10**9)
    monkeypatch.setattr(full, "BATCH_ENTRIES", 10**9)
    events.clear()
    again = build(site, clean=True, fault=lambda point: events.append(point) if point == "job-done" else None)
    last_planned = len(events) - 1 - events[::-1].index("planned")
    assert events.index("job-done") > last_planned, "one batch: planned whole before rendering"
    assert (again.jobs_run, again.jobs_kept) == (report.jobs_run, report.jobs_kept)
    assert tree(site / "output") == streamed


def test_a_batch_of_lookup_buckets_holds_about_as_many_entries_whatever_the_buckets_size(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bucket's weight grows with its entries, so that a full plan's batch of buckets
    # (BATCH_WEIGHT, BATCH_JOBS) holds a bounded number of them: the main process's
    # peak at the end of a full plan stays flat as the archive (and each bucket) grows.
    add(site, post(1, "Hello"))
    made: list[SiteJobs] = []

    def recording(*args: Any, **kwargs: Any) -> SiteJobs:
        made.append(SiteJobs(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(build_module, "SiteJobs", recording)
    config = load_config(site / "listlib.toml")
    with BuildState(config.site.cache_dir / "build.sqlite") as state:
        _whole(_plan(config, _load_theme(config), state, full=True).plan)
    held = []
    for size in (1, 2, 3, 7, 10, 20, 40, 41, 100, 244, 488, 1_000, 5_000):
        members = [
            ("entry", f"{k:040x}", (f"<m{k}@x>", "dev", "Dev", f"dev/2020/01/{k}.html", "Subject", "0"))
            for k in range(size)
        ]
        job = made[-1].mid_job("ab", members)
        assert job is not None
        per_batch = min(full.BATCH_JOBS, -(-full.BATCH_WEIGHT // job.weight))
        held.append(per_batch * size)
    assert max(held) <= 5 * full.BATCH_WEIGHT, held


def test_a_batch_holds_a_bounded_number_of_lookup_entries(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a batch of buckets holds is what the planning process holds as rendering
    # ends. Weight and jobs alone let it grow with the buckets' size (at 80,000 messages,
    # 8,000 entries in a batch; at 20,000, 2,500): BATCH_ENTRIES bounds it.
    add(site, *(post(n, f"Topic {n}", at=timedelta(minutes=n)) for n in range(1, 41)))
    monkeypatch.setattr(full, "BATCH_ENTRIES", 5)
    monkeypatch.setattr(full, "_MID_SHARD", 2)  # buckets planned two at a time
    config = load_config(site / "listlib.toml")
    with BuildState(config.site.cache_dir / "build.sqlite") as state:
        batches = list(_plan(config, _load_theme(config), state, full=True).plan.batches())
    held = [sum(map(full._entries, batch)) for batch in batches]
    assert sum(held) == 40, "every message's entry, in some batch"
    most = max(full._entries(job) for batch in batches for job in batch)
    assert max(held) <= 5 - 1 + 2 * most, held  # the bound, reached by the last run of buckets


@given(
    st.lists(st.integers(min_value=1, max_value=3_000), max_size=200),
    st.integers(min_value=1, max_value=70),
    st.integers(min_value=1, max_value=5_000),
)
def test_lookup_buckets_are_planned_in_runs_bounded_in_buckets_and_messages(
    sizes: list[int], most: int, messages: int
) -> None:
    # A bucket holds more messages as the archive grows: a run of a fixed count of them
    # would grow with it (64 buckets at 10,000,000 messages: 160,000 messages' entries).
    buckets = [(f"{number:03x}", size) for number, size in enumerate(sizes)]
    runs = list(full.cut_buckets(buckets, most, messages))
    assert [name for run in runs for name in run] == [name for name, _size in buckets]
    size_of = dict(buckets)
    for run in runs:
        assert 1 <= len(run) <= most
        assert len(run) == 1 or sum(size_of[name] for name in run) <= messages
    for run, following in itertools.pairwise(runs):  # each run is as long as the bounds let it be
        held = sum(size_of[name] for name in run)
        assert len(run) == most or held + size_of[following[0]] > messages
