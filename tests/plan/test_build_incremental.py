"""Incremental planning: after every kind of change, the jobs an incremental build runs
and drops are exactly those a full enumeration of the site would run and drop, with
the same keys; and what cannot be planned incrementally falls back to a full plan."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.build import _load_theme, _plan, compare_plans
from listlib.config import load_config
from listlib.plan import builders
from listlib.plan.builders import SiteJobs
from listlib.plan.jobs import Plan
from listlib.plan.state import BuildState
from listlib.plan.stored import StoredList
from listlib.store.core import Store
from listlib.threadcache import ThreadCache, ThreadEntry
from listlib.values import Month
from listlib.verify import repair_store

from ..build.test_build import T0, add, build, call_of, post, tree
from ..support.helpers import make_message


def assert_same_plan(site: Path) -> Plan:
    """The incremental plan of ``site`` equals the full one; returns it."""
    incremental, full = compare_plans(load_config(site / "listlib.toml"))
    assert incremental is not None, "expected an incremental plan"
    assert {job.id: (job.key, job.weight) for job in incremental.run} == {
        job.id: (job.key, job.weight) for job in full.run
    }
    for job in incremental.run:
        ((twin,),) = ([j for j in full.run if j.id == job.id],)
        assert job.args == twin.args
    assert sorted(incremental.dropped) == sorted(full.dropped)
    return incremental


def remove_message(site: Path, n: int) -> None:
    """Delete a stored message's file, then repair the index (``listlib check --repair``)."""
    _call, path = call_of(site, n)
    (site / "content" / path).unlink()
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)


STEPS: list[tuple[str, list[bytes]]] = [
    ("a reply whose parent is not there yet", [post(2, "Re: Plans", reply_to=1, refs=(1,))]),
    ("a new thread and a reply", [post(4, "Topic B"), post(3, "Re: Plans", reply_to=2, refs=(1, 2))]),
    ("the late root re-roots the thread", [post(1, "Plans")]),
    ("a reply in a new month", [post(5, "Re: Topic B", reply_to=4, refs=(4,), at=timedelta(days=40))]),
    ("a message in a month before all others", [post(8, "Early bird", at=timedelta(days=-70))]),
    (
        "X-No-Archive",
        [post(6, "Topic C", extra={"X-No-Archive": "yes"}), post(7, "Re: Topic B", reply_to=4, refs=(4,))],
    ),
    ("a thread between two others", [post(9, "In between", at=timedelta(days=3, hours=12))]),
    (
        "many threads at once (Message-ID buckets are shared)",
        [post(n, f"Topic {n}", at=timedelta(days=n % 50, minutes=n)) for n in range(100, 170)]
        + [
            post(n, f"Re: Topic {n - 100}", reply_to=n - 100, refs=(n - 100,), at=timedelta(days=60))
            for n in range(200, 230)
        ],
    ),
    (
        "a second list",
        [make_message("Release 1.0", message_id="<a1@example.org>", to="announce@lists.example.org", date=T0)],
    ),
    ("nothing new", []),
]


def test_every_step_plans_the_same_jobs_as_a_full_enumeration(site: Path) -> None:
    add(site, post(20, "Unrelated start"))
    build(site)
    for name, messages in STEPS:
        if messages:
            add(site, *messages)
        plan = assert_same_plan(site)
        if name == "nothing new":
            assert plan.run == () and plan.dropped == ()
        build(site)


def test_removed_messages_drop_exactly_their_jobs(site: Path) -> None:
    add(site, *(post(n, f"Topic {n}") for n in range(1, 6)))
    add(site, post(6, "Re: Topic 1", reply_to=1, refs=(1,), at=timedelta(days=40)))
    add(site, post(7, "Alone in May", at=timedelta(days=45)))
    build(site)
    for n in (6, 7, 3, 1):  # a reply in a month of its own, a lone message, a thread, a root with a reply
        remove_message(site, n)
        plan = assert_same_plan(site)
        assert plan.dropped
        build(site)
    incremental = tree(site / "output")
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    assert tree(site / "output") == incremental


def test_a_changed_description_or_an_interrupted_build_plans_everything(site: Path) -> None:
    add(site, post(1, "Plans"))
    build(site)
    (site / "content" / "dev" / "about.md").write_text("About *dev*.\n")
    assert compare_plans(load_config(site / "listlib.toml"))[0] is None
    build(site)
    add(site, post(2, "Re: Plans", reply_to=1, refs=(1,)))
    assert compare_plans(load_config(site / "listlib.toml"))[0] is not None
    with BuildState(site / ".cache" / "build.sqlite") as state:
        state.set("running", "1")
    assert compare_plans(load_config(site / "listlib.toml"))[0] is None


def test_random_imports_and_removals_plan_the_same_jobs_as_a_full_enumeration(site: Path) -> None:
    rng = random.Random(20240328)
    posted: list[int] = []
    removed: set[int] = set()
    add(site, post(1, "Seed"))
    posted.append(1)
    build(site)
    number = 1
    for _step in range(12):
        batch = []
        for _ in range(rng.randint(1, 6)):
            number += 1
            at = timedelta(days=rng.randint(-90, 120), minutes=number)
            extra = {"X-No-Archive": "yes"} if rng.random() < 0.1 else None
            if rng.random() < 0.6:
                # A reply, sometimes to a message that only arrives later (a late root).
                parent = rng.choice(posted) if rng.random() < 0.8 else number + rng.randint(1, 5)
                batch.append(post(number, f"Re: Topic {parent}", reply_to=parent, refs=(parent,), at=at, extra=extra))
            else:
                batch.append(post(number, f"Topic {number}", at=at, extra=extra))
            posted.append(number)
        add(site, *batch)
        if rng.random() < 0.3:
            victim = rng.choice([n for n in posted if n not in removed])
            remove_message(site, victim)
            removed.add(victim)
        assert_same_plan(site)
        build(site)
    incremental = tree(site / "output")
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    assert tree(site / "output") == incremental


def _plan_calls_on_work(site: Path) -> int:
    """How often planning the site now says it has work (``on_work``), planning only."""
    config = load_config(site / "listlib.toml")
    calls: list[None] = []
    with BuildState(config.site.cache_dir / "build.sqlite") as state:
        _plan(config, _load_theme(config), state, on_work=lambda: calls.append(None))
    return len(calls)


def test_render_workers_start_only_when_a_build_has_work(site: Path) -> None:
    assert _plan_calls_on_work(site) == 1  # no build yet: every job
    add(site, post(1, "Plans"))
    build(site)
    assert _plan_calls_on_work(site) == 0  # nothing new: no workers forked for nothing
    add(site, post(2, "Re: Plans", reply_to=1, refs=(1,)))
    assert _plan_calls_on_work(site) == 1
    build(site)
    assert _plan_calls_on_work(site) == 0


def test_a_reply_to_an_old_thread_does_not_describe_the_old_months_messages_again(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(site, post(1, "Plans"), post(2, "Other"), post(3, "Re: Plans", reply_to=1, refs=(1,)))
    add(site, post(4, "Later", at=timedelta(days=40)))
    build(site)
    # A reply to the March thread, in June: March's thread line changes (and May's
    # "next month"), but March's messages and their threads do not.
    add(site, post(5, "Re: Plans", reply_to=3, refs=(1, 3), at=timedelta(days=70)))
    assert_same_plan(site)
    described: list[str] = []
    for kind in ("messages", "date", "mmbox"):
        original = getattr(SiteJobs, kind)

        def spy(self: SiteJobs, slug: str, month: Month, _kind: str = kind, _original=original):  # type: ignore[no-untyped-def]
            described.append(f"{_kind}:{month}")
            return _original(self, slug, month)

        monkeypatch.setattr(SiteJobs, kind, spy)
    assert _plan_calls_on_work(site) == 1  # an incremental plan (a full one would describe every month)
    assert sorted(described) == ["date:2024-05", "date:2024-06", "messages:2024-06", "mmbox:2024-06"]


def test_links_to_a_long_thread_the_change_leaves_alone_come_from_its_recorded_pages(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = "x" * 80_000 + "\n"  # two of these fill a thread page: the thread has three
    add(site, post(1, "Logs", body=big))
    add(site, *(post(n, "Re: Logs", reply_to=1, refs=(1,), at=timedelta(minutes=n), body=big) for n in (2, 3, 4)))
    add(site, post(10, "Topic A", at=timedelta(days=5)), post(11, "Topic B", at=timedelta(days=10)))
    build(site)
    # A new thread in the same month: its by-date page links every message of the month,
    # those of the long thread on its pages 2 and 3 included, without reading that thread.
    add(site, post(12, "Topic C", at=timedelta(days=15)))
    plan = assert_same_plan(site)
    assert any(job.kind == "date" for job in plan.run)
    read: list[str] = []
    original = StoredList.threads

    def spy(self: StoredList, ids: Iterable[str]) -> Mapping[str, ThreadEntry]:
        wanted = list(ids)
        read.extend(wanted)
        return original(self, wanted)

    monkeypatch.setattr(StoredList, "threads", spy)
    assert _plan_calls_on_work(site) == 1
    long_thread, _path = call_of(site, 1)
    assert read and long_thread not in read


def test_an_incremental_plan_never_reads_every_thread_of_a_list(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(site, post(1, "Plans"), post(2, "Other", at=timedelta(days=1)), post(3, "Third", at=timedelta(days=2)))
    add(site, post(4, "Later", at=timedelta(days=40)))
    build(site)
    # A thread between two others, a reply, and a thread that took the first place.
    add(site, post(5, "Between", at=timedelta(days=1, hours=1)), post(6, "Re: Plans", reply_to=1, refs=(1,)))
    add(site, post(7, "Earliest", at=timedelta(days=-1)))
    assert_same_plan(site)

    def refuse(self: ThreadCache, slug: str) -> list[tuple[int, str, int, int, int, int]]:
        raise AssertionError("the whole thread order was read")

    monkeypatch.setattr(ThreadCache, "thread_summaries", refuse)
    assert _plan_calls_on_work(site) == 1


@pytest.mark.parametrize("size", [1, 2])
def test_a_month_with_more_threads_than_a_sitemap_holds_plans_the_same_sitemaps(
    site: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(builders, "SITEMAP_SIZE", size)
    add(site, *(post(n, f"Topic {n}", at=timedelta(days=n)) for n in range(1, 6)))
    build(site)
    add(site, post(9, "Topic 9", at=timedelta(days=2, hours=3)), post(10, "Re: Topic 5", reply_to=5, refs=(5,)))
    plan = assert_same_plan(site)
    assert any(job.kind == "site" for job in plan.run)
