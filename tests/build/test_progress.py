"""Progress bars count what users know (a build's jobs, "12 of 78 jobs") and show no
time estimate until there is enough progress to make one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.cli.common import Progress
from listlib.plan.jobs import Job

from .test_build import add, build, post


def test_a_build_reports_its_jobs_done_and_to_run(site: Path) -> None:
    add(site, *[post(n, f"Topic {n}") for n in range(1, 6)])
    calls: list[tuple[int, ...]] = []
    report = build(site, progress=lambda *args: calls.append(args))
    assert [call[2:] for call in calls] == [(n, report.jobs_run) for n in range(1, report.jobs_run + 1)]
    work, total = calls[-1][:2]
    assert work == total >= report.jobs_run  # the bar's share is of the work (job weights)


def test_a_full_build_knows_its_jobs_from_the_start(site: Path) -> None:
    # Threads across months, replies, a hidden message: the full plan's jobs are counted
    # before it is made, not as its shards are planned.
    day = timedelta(days=1)
    add(
        site,
        *[post(n, f"Topic {n}", at=n * 20 * day) for n in range(1, 7)],
        *[post(10 + n, f"Re: Topic {n}", reply_to=n, refs=(n,), at=(n * 20 + 45) * day) for n in (1, 2, 4)],
        post(20, "Re: Re: Topic 1", reply_to=11, refs=(1, 11), at=100 * day),
        post(21, "Private", at=30 * day, extra={"X-No-Archive": "yes"}),
    )
    build(site)
    calls: list[tuple[int, ...]] = []
    report = build(site, clean=True, progress=lambda *args: calls.append(args))
    assert report.jobs_run > 20
    assert [call[2:] for call in calls] == [(n, report.jobs_run) for n in range(1, report.jobs_run + 1)]
    assert {call[1] for call in calls} == {calls[-1][0]}  # the work, from the first job


def test_the_bar_never_goes_back_when_its_total_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    progress = Progress(enabled=False, unit="jobs")
    progress.enabled = True
    with progress.running("Building") as bar:
        bar(50, 100, 10, 20)
        bar(60, 150, 12, 30)  # an estimate corrected up: 40% would be a step back from 50%
        assert progress.bar.length == 120
        bar(140, 150, 28, 30)
        assert progress.bar.length == 150
        bar(150, 150, 30, 30)
        assert progress.bar.pos == progress.bar.length == 150


def test_the_build_bar_says_jobs_and_waits_to_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    progress = Progress(enabled=False, unit="jobs")
    progress.enabled = True  # a bar drawn to a file that is not a terminal draws nothing
    clock = [100.0]
    monkeypatch.setattr("listlib.cli.common.time.monotonic", lambda: clock[0])
    with progress.running("Building") as bar:
        bar(1, 1000, 1, 78)
        assert progress.bar.item_show_func(None) == "1 of 78 jobs"
        assert not progress.bar.show_eta  # one job in: an estimate would be start-up time
        clock[0] += 10
        bar(20, 1000, 3, 78)
        assert not progress.bar.show_eta  # 2% of the work
        bar(100, 1000, 12, 78)
        assert progress.bar.show_eta
        assert progress.bar.item_show_func(None) == "12 of 78 jobs"


def test_a_full_builds_plan_seconds_count_the_planning_of_its_shards(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full plan is made as it is rendered: its planning time is not over when rendering starts.
    from listlib import build as build_module

    shards = build_module.full_shards

    def slow(*args: object) -> Iterator[list[Job]]:
        for shard in shards(*args):  # type: ignore[arg-type]
            time.sleep(0.2)
            yield shard

    monkeypatch.setattr(build_module, "full_shards", slow)
    add(site, *[post(n, f"Topic {n}", at=timedelta(days=40 * n)) for n in range(1, 4)])
    report = build(site)
    assert report.plan_seconds >= 0.2 * 4  # a shard per month, and the site's
    assert report.plan_seconds <= report.seconds
