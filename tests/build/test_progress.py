"""Progress bars count what users know (a build's jobs, "12 of 78 jobs") and show no
time estimate until there is enough progress to make one."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.cli.common import Progress

from .test_build import add, build, post


def test_a_build_reports_its_jobs_done_and_to_run(site: Path) -> None:
    add(site, *[post(n, f"Topic {n}") for n in range(1, 6)])
    calls: list[tuple[int, ...]] = []
    report = build(site, progress=lambda *args: calls.append(args))
    # A full build plans as it renders: the jobs to run are known once the plan is made.
    assert [call[2] for call in calls] == list(range(1, report.jobs_run + 1))
    known = [call[3] for call in calls if call[3] is not None]
    assert known and set(known) == {report.jobs_run} and calls[-1][3] == report.jobs_run
    assert all(call[3] is None for call in calls[: len(calls) - len(known)])
    work, total = calls[-1][:2]
    assert work == total >= report.jobs_run  # the bar's share is of the work (job weights)
    add(site, post(6, "Re: Topic 1", reply_to=1, refs=(1,)))
    calls.clear()
    report = build(site, progress=lambda *args: calls.append(args))
    assert [call[2:] for call in calls] == [(n, report.jobs_run) for n in range(1, report.jobs_run + 1)]
    work, total = calls[-1][:2]
    assert work == total >= report.jobs_run


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
