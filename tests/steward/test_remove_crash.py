"""A take-down survives kill -9: of the build that follows a ``listlib remove`` (at the
build's named points: after a rendering job, before stale files are deleted, after the
search manifest and after the search state, on one core and on two, where the search
update runs in a child beside the rendering; ``search-segment`` and ``search-purge`` are
not reached here, as a removal adds no document and a small segment is rewritten whole),
and of ``listlib remove`` itself at each of its points followed by a killed build. The
next completed build publishes nothing of the removed message and leaves output/ as a
clean build makes it; ``listlib check`` is content; and at no moment are the message's
bytes gone from the store without a ledger entry that removes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.store.core import Store
from listlib.store.index import REMOVED
from listlib.store.ledger import read_ledger

from ..build.test_build import call_of, tree
from ..support.helpers import run_listlib
from ..support.traces import files_holding
from .test_remove import SECRET, SENDER, _clean_build_of, _thread_site

NEEDLES = [SECRET.encode(), SENDER.encode(), b"Dana Private"]

BUILD_POINTS = [
    ("job-done", 1),  # the first point of a build
    ("job-done", 4),
    ("job-done", 9),
    ("job-done", 11),  # the last of the 11 jobs a removal here runs
    ("removing", 1),  # every job recorded, stale files not yet deleted
    ("search-manifest", 1),
    ("search-state", 1),  # the last point: the search cache committed, old segments not yet deleted
]


def _kill(site: Path, *args: str, point: str, count: int = 1) -> None:
    """Run a listlib command that must die by SIGKILL at ``point`` (its ``count``-th time there)."""
    killed = run_listlib(*args, cwd=site, env={"LISTLIB_CRASH_AT": f"{point}:{count}"})
    assert killed.returncode == -9, f"listlib {' '.join(args)} was not killed at {point}:{count}\n{killed.stderr}"


def _removals_in_ledger(site: Path) -> set[str]:
    entries, _size = read_ledger(site / "content")
    return {message.call for entry in entries if entry.action == "remove" for message in entry.messages}


def _assert_taken_down(site: Path, call: str, tmp_path: Path) -> None:
    """After a completed build: the store, output/ and ``listlib check`` agree the message is gone."""
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        assert row.state == REMOVED and not (site / "content" / row.path).exists()
    assert files_holding(site / "output", NEEDLES) == []
    check = run_listlib("check", cwd=site)
    assert check.returncode == 0, check.stderr
    assert tree(site / "output") == _clean_build_of(site, tmp_path)


@pytest.mark.parametrize(
    ("point", "count", "jobs"),
    [
        *((point, count, 1) for point, count in BUILD_POINTS),
        # On two cores the search update runs in a child beside the rendering: its
        # points kill the build there, whatever the rendering has done by then.
        ("search-manifest", 1, 2),
        ("search-state", 1, 2),
        ("job-done", 2, 2),
    ],
)
def test_a_build_killed_after_a_removal_is_finished_by_the_next_one(
    site: Path, tmp_path: Path, point: str, count: int, jobs: int
) -> None:
    call, _mbox = _thread_site(site)
    run_listlib("remove", call, "--reason", "privacy request", cwd=site, check=True)
    _kill(site, "build", "--jobs", str(jobs), point=point, count=count)
    run_listlib("build", cwd=site, check=True)
    _assert_taken_down(site, call, tmp_path)


@pytest.mark.parametrize("build_point", ["job-done", "search-manifest"])
@pytest.mark.parametrize("remove_point", ["ledger-appended", "files-removed", "ledger-applied"])
def test_a_killed_removal_and_a_killed_build_never_lose_bytes_without_a_ledger_entry(
    site: Path, tmp_path: Path, remove_point: str, build_point: str
) -> None:
    call, _mbox = _thread_site(site)
    stored = site / "content" / call_of(site, 3)[1]
    _kill(site, "remove", call, "--reason", "privacy request", point=remove_point)
    # The entry is durable before any byte goes; the bytes go before the entry counts as applied.
    assert call in _removals_in_ledger(site)
    assert stored.exists() == (remove_point == "ledger-appended")
    _kill(site, "build", "--jobs", "1", point=build_point)
    assert not stored.exists()  # whoever opens the store next finishes the removal
    run_listlib("build", cwd=site, check=True)
    _assert_taken_down(site, call, tmp_path)
