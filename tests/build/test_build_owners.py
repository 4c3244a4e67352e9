"""The check that no two jobs make one file, when the earlier owner of a file is a job
a full plan has not planned yet: reported at the end of the build, after records were
committed, it must leave no wrong owner in the build state.

With real inputs the case does not arise: a job is kept only when its key, and so its
files, are those it made last time, so a file made now by another job would be made by
two jobs in a clean build too (a builder's mistake). It is made here by editing the
build state: a thread page recorded as a file of the static job, which a full plan
plans last and keeps, and the other jobs forgotten so that they run."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.errors import BuildError

from .test_build import add, build, post, tree


def test_a_file_claimed_from_a_job_planned_later_leaves_no_wrong_owner(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough jobs that records are committed (every 500) while the plan is still being
    # made, in small batches: the static job is not planned by then.
    add(site, *[post(n, f"Topic {n}", at=timedelta(days=3 * n)) for n in range(1, 201)])
    monkeypatch.setattr("listlib.plan.full.BATCH_WEIGHT", 50)
    build(site)
    clean = tree(site / "output")
    database = load_config(site / "listlib.toml").site.cache_dir / "build.sqlite"
    with sqlite3.connect(database) as db:
        job, path = db.execute("SELECT job, path FROM files WHERE job LIKE 'thread:dev:%' ORDER BY path").fetchone()
        db.execute("UPDATE files SET job = 'static:static' WHERE path = ?", (path,))
        # Every job but the static one runs again (their records forgotten), the thread's early on.
        db.execute("DELETE FROM jobs WHERE id != 'static:static'")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('running', '1')")  # a full plan
    with pytest.raises(BuildError, match=f"{path}: made by two jobs"):
        build(site)
    with sqlite3.connect(database) as db:
        owners = dict(db.execute("SELECT path, job FROM files WHERE path = ?", (path,)).fetchall())
        recorded = {found for (found,) in db.execute("SELECT id FROM jobs WHERE id IN (?, ?)", (job, "static:static"))}
    # Neither job keeps a record: the next build runs both again and meets the clash, if
    # there still is one, before it records anything.
    assert owners == {} and recorded == set()
    build(site)
    assert tree(site / "output") == clean
    assert build(site).jobs_run == 0
