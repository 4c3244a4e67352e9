"""What the last builds wrote: every job's key and every output file's owner, digest,
size and modification time (the stat the next build compares with the disk).

Kept in ``<cache_dir>/build.sqlite``. It is derived data: when it is missing, damaged
or from another version, the next build starts from nothing and rewrites only files
whose bytes differ (the writer compares with the disk). A build marks itself running
at the start and done at the end; a build that finds the mark of an interrupted one
sweeps the output for files nobody owns (``render.writer.sweep``).

A complete build also leaves what the next one needs to plan incrementally (see
``plan.incremental``): the thread cache's epoch and generation it saw, a fingerprint of
everything site-wide, each list's thread order (``thread_order``: an incremental plan
asks for the neighbours a thread had) and month order, the page of each message not
on page 1 of its thread (``thread_pages``), the Message-ID
lookup bucket and thread of every message (``mids``), and each list's patch series
(``series``, a JSON item each, with the keys its versions are matched by in
``series_keys``: an incremental plan reads only the series of the threads it looks at
and of their versions, ``plan.storedseries``).

Length: a few lines per record the builds keep (jobs, files, folders, lookup entries,
thread order, series, a full plan's spool), all on one connection and its schema.

``lock_output`` is the lock a build holds while it writes and a publish while it reads
output/ (``<cache_dir>/build.lock``), so neither sees the other's half-done work.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..fsutil import acquire_lock
from ..sqlfile import files_changed, files_stamp, open_derived

__all__ = ["STATE_VERSION", "BuildState", "RecordedFiles", "lock_output"]

STATE_VERSION = "6"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, job TEXT NOT NULL, digest TEXT NOT NULL, size INTEGER, mtime INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS files_by_job ON files (job);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mids (
    call TEXT PRIMARY KEY, slug TEXT NOT NULL, thread TEXT NOT NULL, prefix TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mids_by_prefix ON mids (prefix);
CREATE INDEX IF NOT EXISTS mids_by_thread ON mids (slug, thread);
CREATE TABLE IF NOT EXISTS thread_order (
    slug TEXT NOT NULL, id TEXT NOT NULL, first INTEGER NOT NULL, PRIMARY KEY (slug, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS thread_order_by_first ON thread_order (slug, first, id);
CREATE TABLE IF NOT EXISTS thread_pages (
    slug TEXT NOT NULL, thread TEXT NOT NULL, pages TEXT NOT NULL, PRIMARY KEY (slug, thread)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS series (
    slug TEXT NOT NULL, head TEXT NOT NULL, thread TEXT NOT NULL, date INTEGER NOT NULL, item TEXT NOT NULL,
    PRIMARY KEY (slug, head)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS series_by_thread ON series (slug, thread);
CREATE INDEX IF NOT EXISTS series_by_date ON series (slug, date, head);
CREATE TABLE IF NOT EXISTS series_keys (
    slug TEXT NOT NULL, key TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY (slug, key, head)
) WITHOUT ROWID;
-- A series' keys forgotten by its head (``replace_series``) without a scan of the list's keys.
CREATE INDEX IF NOT EXISTS series_keys_by_head ON series_keys (slug, head);
"""

_PLAN_SCHEMA = """
CREATE TEMP TABLE IF NOT EXISTS plan_jobs (id TEXT PRIMARY KEY, key TEXT NOT NULL, run INTEGER NOT NULL) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS plan_mids (
    call TEXT PRIMARY KEY, slug TEXT NOT NULL, thread TEXT NOT NULL, prefix TEXT NOT NULL, members BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS temp.plan_mids_by_prefix ON plan_mids (prefix);
CREATE TEMP TABLE IF NOT EXISTS produced (path TEXT PRIMARY KEY, job TEXT NOT NULL) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS plan_parked (number INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS plan_memory (slug TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
DELETE FROM plan_jobs;
DELETE FROM plan_parked;
DELETE FROM plan_memory;
DELETE FROM plan_mids;
DELETE FROM produced;
"""
"""A full plan spooled out of memory (``plan.full``) and the files a build made so far:
temporary tables of the connection (in SQLite's temporary file, never in build.sqlite)."""

_IN_CHUNK = 500
LOCK_WAIT = 60.0
"""Seconds a build or publish waits for the one running before giving up."""


def lock_output(cache: Path) -> int:
    """Take the site's build lock (waiting ``LOCK_WAIT`` s); release with ``fsutil.release_lock``.
    One per process: a second call in the process holding it would wait for itself."""
    cache.mkdir(parents=True, exist_ok=True)
    return acquire_lock(cache / "build.lock", LOCK_WAIT, "another listlib build or publish is running for this site")


def _where_in_rows(
    db: sqlite3.Connection, select: str, values: Iterable[str], before: tuple[object, ...] = ()
) -> Iterator[tuple[object, ...]]:
    """Rows of ``select`` (ending in a column name) ``IN`` the values, chunked;
    ``before``: the values of the placeholders ``select`` has itself."""
    values = list(values)
    for start in range(0, len(values), _IN_CHUNK):
        chunk = values[start : start + _IN_CHUNK]
        yield from db.execute(f"{select} IN ({','.join('?' * len(chunk))})", (*before, *chunk))


class RecordedFiles:
    """The recorded files of output/, as a container: ``path in files`` reads the files
    of the path's folder when it is not the folder asked last (``BuildState.recorded``)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._folder: str | None = None
        self._names: set[str] = set()

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        folder, _slash, name = path.rpartition("/")
        if folder != self._folder:
            prefix = f"{folder}/" if folder else ""
            # The range keeps the primary key usable; SQLite drops the files of subfolders.
            cursor = self._db.execute(
                "SELECT substr(path, ?) FROM files WHERE path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0",
                (len(prefix) + 1, prefix, prefix + "\U0010ffff", len(prefix) + 1),
            )
            self._names = {name for (name,) in cursor}
            self._folder = folder
        return name in self._names


class BuildState:
    """The build records of one site."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def open(self) -> BuildState:
        self._db = open_derived(self.path, _SCHEMA, STATE_VERSION)
        return self

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("build state is not open")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> BuildState:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def job_keys(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT id, key FROM jobs"))

    def keys_of(self, job_ids: Iterable[str]) -> dict[str, str]:
        """The recorded keys of these jobs (those never recorded are left out)."""
        found: dict[str, str] = {}
        ids = list(job_ids)
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            found.update(self.db.execute(f"SELECT id, key FROM jobs WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def job_ids_from(self, prefix: str) -> list[str]:
        """Recorded job ids that start with ``prefix``."""
        # The range keeps the primary key usable (LIKE would scan); prefixes end in ':'.
        cursor = self.db.execute("SELECT id FROM jobs WHERE id >= ? AND id < ?", (prefix, prefix + "\U0010ffff"))
        return [job_id for (job_id,) in cursor]

    def job_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM jobs").fetchone()[0])

    def mids_of_threads(self, slug: str, threads: Iterable[str]) -> list[tuple[str, str, str]]:
        """(call, thread, bucket) of the messages these threads held at the last build."""
        found: list[tuple[str, str, str]] = []
        ids = list(threads)
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            select = f"SELECT call, thread, prefix FROM mids WHERE slug = ? AND thread IN ({marks})"
            found.extend(self.db.execute(select, (slug, *chunk)))
        return found

    def mids_in(self, prefix: str) -> list[tuple[str, str]]:
        """(slug, call) of the messages in one bucket at the last build."""
        return self.db.execute("SELECT slug, call FROM mids WHERE prefix = ?", (prefix,)).fetchall()

    def update_mids(self, forget: Iterable[str], add: Iterable[tuple[str, str, str, str]], *, replace: bool) -> None:
        """Forget these calls (or, with ``replace``, all) and add (call, slug, thread, bucket) rows."""
        if replace:
            self.db.execute("DELETE FROM mids")
        else:
            self.db.executemany("DELETE FROM mids WHERE call = ?", ((c,) for c in forget))
        self.db.executemany("INSERT OR REPLACE INTO mids VALUES (?, ?, ?, ?)", add)

    # -- thread order -------------------------------------------------------------------

    def replace_order(self, slug: str, forget: Iterable[str] | None, add: Iterable[tuple[str, int]]) -> None:
        """Forget these threads of list ``slug`` in its recorded thread order (None: all)
        and record (id, first date) ones."""
        if forget is None:
            self.db.execute("DELETE FROM thread_order WHERE slug = ?", (slug,))
        else:
            self.db.executemany("DELETE FROM thread_order WHERE slug = ? AND id = ?", ((slug, t) for t in forget))
        self.db.executemany("INSERT OR REPLACE INTO thread_order VALUES (?, ?, ?)", ((slug, t, f) for t, f in add))

    def order_neighbours(self, slug: str, thread_id: str) -> tuple[str | None, str | None] | None:
        """The threads before and after a thread in the recorded order of list ``slug``
        (by first date, id); None when it is not in it."""
        found = self.db.execute(
            "SELECT first FROM thread_order WHERE slug = ? AND id = ?", (slug, thread_id)
        ).fetchone()
        if found is None:
            return None
        key = (slug, found[0], thread_id)
        before = self.db.execute(
            "SELECT id FROM thread_order WHERE slug = ? AND (first, id) < (?, ?) ORDER BY first DESC, id DESC LIMIT 1",
            key,
        ).fetchone()
        after = self.db.execute(
            "SELECT id FROM thread_order WHERE slug = ? AND (first, id) > (?, ?) ORDER BY first, id LIMIT 1", key
        ).fetchone()
        return (before[0] if before else None, after[0] if after else None)

    def replace_pages(self, slug: str, threads: Iterable[str] | None, pages: Iterable[tuple[str, str]]) -> None:
        """Forget the recorded pages of these threads of list ``slug`` (None: of all) and
        record (thread, its pages) ones."""
        if threads is None:
            self.db.execute("DELETE FROM thread_pages WHERE slug = ?", (slug,))
        else:
            self.db.executemany("DELETE FROM thread_pages WHERE slug = ? AND thread = ?", ((slug, t) for t in threads))
        self.db.executemany("INSERT OR REPLACE INTO thread_pages VALUES (?, ?, ?)", ((slug, t, p) for t, p in pages))

    def pages_of(self, slug: str, threads: Iterable[str]) -> dict[str, str]:
        """Thread -> its recorded pages, for those of these threads of list ``slug`` that have some."""
        select = "SELECT thread, pages FROM thread_pages WHERE slug = ? AND thread"
        return {str(t): str(p) for t, p in _where_in_rows(self.db, select, threads, (slug,))}

    # -- patch series ---------------------------------------------------------------------

    def replace_series(
        self, slug: str, threads: Iterable[str] | None, series: Iterable[tuple[str, str, int, str, Iterable[str]]]
    ) -> None:
        """Forget the series of these threads of list ``slug`` (None: all of its series) and
        record (head, thread, date, item, keys) ones."""
        if threads is None:
            self.db.execute("DELETE FROM series WHERE slug = ?", (slug,))
            self.db.execute("DELETE FROM series_keys WHERE slug = ?", (slug,))
        else:
            select = "SELECT head FROM series WHERE slug = ? AND thread"
            heads = [str(head) for (head,) in _where_in_rows(self.db, select, threads, (slug,))]
            self.db.executemany("DELETE FROM series WHERE slug = ? AND head = ?", ((slug, h) for h in heads))
            self.db.executemany("DELETE FROM series_keys WHERE slug = ? AND head = ?", ((slug, h) for h in heads))
        items = list(series)
        self.db.executemany(
            "INSERT OR REPLACE INTO series VALUES (?, ?, ?, ?, ?)",
            ((slug, head, thread, date, item) for head, thread, date, item, _keys in items),
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO series_keys VALUES (?, ?, ?)",
            ((slug, key, head) for head, _thread, _date, _item, keys in items for key in keys),
        )

    def series_of_threads(self, slug: str, threads: Iterable[str]) -> list[str]:
        """The items of the series of these threads of list ``slug``."""
        select = "SELECT item FROM series WHERE slug = ? AND thread"
        return [str(item) for (item,) in _where_in_rows(self.db, select, threads, (slug,))]

    def series_with_keys(self, slug: str, keys: Iterable[str]) -> list[str]:
        """The items of the series of list ``slug`` matched by any of these keys."""
        heads = {
            str(h)
            for (h,) in _where_in_rows(self.db, "SELECT head FROM series_keys WHERE slug = ? AND key", keys, (slug,))
        }
        select = "SELECT item FROM series WHERE slug = ? AND head"
        return [str(item) for (item,) in _where_in_rows(self.db, select, sorted(heads), (slug,))]

    def newest_series(self, slug: str, count: int) -> list[str]:
        """The items of the ``count`` latest series of list ``slug`` by (date, head), latest first."""
        select = "SELECT item FROM series WHERE slug = ? ORDER BY date DESC, head DESC LIMIT ?"
        return [str(item) for (item,) in self.db.execute(select, (slug, count))]

    # -- a full plan, spooled (temporary tables: gone with the connection) ----------------

    def start_plan(self) -> None:
        """Empty the spool of a full plan (and the files made by a build)."""
        self.db.executescript(_PLAN_SCHEMA)

    def spool_jobs(self, jobs: list[tuple[str, str, bool]]) -> None:
        """Planned jobs: (id, key, whether it runs); a job id planned twice is a ValueError."""
        self.db.execute("SAVEPOINT spool_jobs")
        try:
            self.db.executemany("INSERT INTO plan_jobs VALUES (?, ?, ?)", jobs)
        except sqlite3.IntegrityError:
            self.db.execute("ROLLBACK TO spool_jobs")
            seen = self.spooled(job[0] for job in jobs)
            twice = next(job[0] for job in jobs if job[0] in seen or seen.add(job[0]))  # type: ignore[func-returns-value]
            raise ValueError(f"two jobs are named {twice!r}") from None
        finally:
            self.db.execute("RELEASE spool_jobs")

    def spooled_keys(self) -> list[tuple[str, str, bool]]:
        """Every spooled job: (id, key, whether it runs), by id."""
        return [(i, k, bool(r)) for i, k, r in self.db.execute("SELECT id, key, run FROM plan_jobs ORDER BY id")]

    def park(self, data: bytes) -> None:
        """Keep a blob until ``unpark`` (a full plan's thread pages waiting for their
        list's series)."""
        self.db.execute("INSERT INTO plan_parked (data) VALUES (?)", (data,))

    def unpark(self) -> Iterator[bytes]:
        """The blobs parked, in order; gone once every one is read."""
        numbers = [number for (number,) in self.db.execute("SELECT number FROM plan_parked ORDER BY number")]
        for number in numbers:
            yield self.db.execute("SELECT data FROM plan_parked WHERE number = ?", (number,)).fetchone()[0]
        self.db.execute("DELETE FROM plan_parked")

    def spool_memory(self, slug: str, data: bytes) -> None:
        """Keep what a full plan will record of one list (``Memory.spool_list``) until
        ``spooled_memory``."""
        self.db.execute("INSERT OR REPLACE INTO plan_memory VALUES (?, ?)", (slug, data))

    def spooled_memory(self) -> Iterator[tuple[str, bytes]]:
        """(slug, what ``spool_memory`` kept of it), a list at a time, by slug."""
        slugs = [slug for (slug,) in self.db.execute("SELECT slug FROM plan_memory ORDER BY slug")]
        for slug in slugs:
            yield slug, self.db.execute("SELECT data FROM plan_memory WHERE slug = ?", (slug,)).fetchone()[0]

    def spooled(self, job_ids: Iterable[str]) -> set[str]:
        """Those of these jobs that the spooled plan has (so far: a plan is spooled as it is made)."""
        return {job_id for (job_id,) in _where_in_rows(self.db, "SELECT id FROM plan_jobs WHERE id", job_ids)}

    def spooled_kept(self, job_ids: Iterable[str]) -> set[str]:
        """Those of these jobs that the spooled plan keeps (planned, not run)."""
        select = "SELECT id FROM plan_jobs WHERE run = 0 AND id"
        return {job_id for (job_id,) in _where_in_rows(self.db, select, job_ids)}

    def unplanned_jobs(self) -> list[str]:
        """Jobs recorded by earlier builds that the spooled plan does not have."""
        select = "SELECT id FROM jobs WHERE id NOT IN (SELECT id FROM temp.plan_jobs) ORDER BY id"
        return [job_id for (job_id,) in self.db.execute(select)]

    def spool_mids(self, mids: Iterable[tuple[str, str, str, str, bytes]]) -> None:
        """Message-ID lookup entries of a full plan: (call, slug, thread, bucket, what
        the message puts in the bucket's pages, marshalled: plain tuples of strings and numbers)."""
        self.db.executemany("INSERT OR REPLACE INTO plan_mids VALUES (?, ?, ?, ?, ?)", mids)

    def spooled_prefixes(self) -> list[tuple[str, int]]:
        """(bucket, how many messages put something in it) of the spooled lookup entries, in order."""
        return list(self.db.execute("SELECT prefix, count(*) FROM plan_mids GROUP BY prefix ORDER BY prefix"))

    def spooled_members(self, prefixes: Iterable[str]) -> dict[str, list[bytes]]:
        """What the messages of these buckets put in them (``spool_mids``), by bucket."""
        found: dict[str, list[bytes]] = {prefix: [] for prefix in prefixes}
        for prefix, members in _where_in_rows(self.db, "SELECT prefix, members FROM plan_mids WHERE prefix", found):
            assert isinstance(prefix, str) and isinstance(members, bytes)
            found[prefix].append(members)
        return found

    def adopt_spooled_mids(self) -> None:
        """Make the spooled lookup entries the recorded ones (inside the caller's transaction)."""
        self.db.execute("DELETE FROM mids")
        self.db.execute("INSERT INTO mids SELECT call, slug, thread, prefix FROM temp.plan_mids")

    def add_produced(self, files: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
        """Note files made by this build, (path, job); returns (path, earlier job, job)
        of any made before by another job (the rest are noted)."""
        clashes = []
        for path, job_id in files:
            try:
                self.db.execute("INSERT INTO produced VALUES (?, ?)", (path, job_id))
            except sqlite3.IntegrityError:
                (earlier,) = self.db.execute("SELECT job FROM produced WHERE path = ?", (path,)).fetchone()
                clashes.append((path, earlier, job_id))
        return clashes

    def not_produced(self, paths: Iterable[str]) -> set[str]:
        """Those of these paths that no job of this build made."""
        wanted = set(paths)
        made = {path for (path,) in _where_in_rows(self.db, "SELECT path FROM produced WHERE path", wanted)}
        return wanted - made

    def files_of(self, job_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """For each job: its files and their digests."""
        found: dict[str, dict[str, str]] = {}
        ids = list(job_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for path, job, digest in self.db.execute(
                f"SELECT path, job, digest FROM files WHERE job IN ({marks})", chunk
            ):
                found.setdefault(job, {})[path] = digest
        return found

    def folders(self) -> set[str]:
        """Every folder holding a recorded file ("" for output/ itself), worked out by
        SQLite (a full build has some 150,000 files and a few thousand folders)."""
        cursor = self.db.execute("SELECT DISTINCT rtrim(path, replace(path, '/', '')) FROM files")
        return {folder[:-1] for (folder,) in cursor}

    def all_files(self) -> Iterator[str]:
        """Every recorded path, read as it is used (a million-message site has some 3.5
        million: a set of them took some 450 MB); nothing may write to the state meanwhile."""
        return (path for (path,) in self.db.execute("SELECT path FROM files"))

    def recorded(self) -> RecordedFiles:
        """Whether a path is a recorded file, read a folder at a time (for ``sweep``,
        which walks output/ folder by folder: never every path of the site at once)."""
        return RecordedFiles(self.db)

    def file_stats(self) -> list[tuple[str, tuple[int, int] | None]]:
        """Every file with its recorded (size, mtime_ns), None when none was recorded."""
        return [
            (path, None if size is None or mtime is None else (size, mtime))
            for path, size, mtime in self.db.execute("SELECT path, size, mtime FROM files")
        ]

    def file_stats_in(self, folders: Iterable[str]) -> list[tuple[str, tuple[int, int] | None]]:
        """``file_stats`` of the files directly in these folders ("" is output/ itself)."""
        found: list[tuple[str, tuple[int, int] | None]] = []
        for folder in folders:
            prefix = f"{folder}/" if folder else ""
            cursor = self.db.execute(
                "SELECT path, size, mtime FROM files WHERE path >= ? AND path < ?", (prefix, prefix + "\U0010ffff")
            )
            found.extend(
                (path, None if size is None or mtime is None else (size, mtime))
                for path, size, mtime in cursor
                if "/" not in path[len(prefix) :]
            )
        return found

    def folder_marks(self) -> dict[str, int]:
        """Folder of output/ -> its mtime_ns when the last build finished with it."""
        return dict(self.db.execute("SELECT path, mtime FROM folders"))

    def set_folder_marks(self, marks: dict[str, int | None], *, replace: bool) -> None:
        """Record these folders' mtimes (None: the folder is gone); ``replace``: forget all others."""
        if replace:
            self.db.execute("DELETE FROM folders")
        self.db.executemany("DELETE FROM folders WHERE path = ?", ((p,) for p, m in marks.items() if m is None))
        self.db.executemany(
            "INSERT OR REPLACE INTO folders VALUES (?, ?)", ((p, m) for p, m in marks.items() if m is not None)
        )

    def manifest(self) -> list[tuple[str, str, int | None]]:
        """Every file with its digest and recorded size."""
        return self.db.execute("SELECT path, digest, size FROM files").fetchall()

    def invalidate(self, paths: Iterable[str]) -> set[str]:
        """These files are not what was recorded (deleted, edited): forget their digests
        and make their jobs' keys match nothing, so that the next plan runs those jobs
        and their writer compares with the disk. Returns the jobs."""
        items = list(paths)
        jobs: set[str] = set(self.owner_of(items).values())
        self.db.executemany(
            "UPDATE files SET digest = '', size = NULL, mtime = NULL WHERE path = ?", ((p,) for p in items)
        )
        if items:
            self._files_changed()
        self.db.executemany("UPDATE jobs SET key = '' WHERE id = ?", ((job,) for job in jobs))
        return jobs

    def owner_of(self, paths: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        items = list(paths)
        for start in range(0, len(items), 500):
            chunk = items[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT path, job FROM files WHERE path IN ({marks})", chunk))
        return found

    def begin(self) -> None:
        self.db.execute("BEGIN")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def has_files(self) -> bool:
        return self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None

    def record_many(self, jobs: list[tuple[str, str, dict[str, str], dict[str, tuple[int, int]]]]) -> None:
        """Jobs ran: for each (id, key, files, stats), its key and the files it now owns
        (path -> digest), with their (size, mtime_ns) where known."""
        for start in range(0, len(jobs), 500):
            chunk = [job[0] for job in jobs[start : start + 500]]
            self.db.execute(f"DELETE FROM files WHERE job IN ({','.join('?' * len(chunk))})", chunk)
        self.db.executemany(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
            (
                (path, job_id, digest, *(stats.get(path) or (None, None)))
                for job_id, _key, files, stats in jobs
                for path, digest in files.items()
            ),
        )
        self.db.executemany("INSERT OR REPLACE INTO jobs VALUES (?, ?)", ((job[0], job[1]) for job in jobs))
        if jobs:
            self._files_changed()

    def forget(self, job_ids: Iterable[str]) -> None:
        changed = False
        for job_id in job_ids:
            self.db.execute("DELETE FROM files WHERE job = ?", (job_id,))
            self.db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
            changed = True
        if changed:
            self._files_changed()

    def forget_files(self, paths: Iterable[str]) -> None:
        items = list(paths)
        if items:
            self.db.executemany("DELETE FROM files WHERE path = ?", ((p,) for p in items))
            self._files_changed()

    def clear(self) -> None:
        self.db.executescript(
            "DELETE FROM jobs; DELETE FROM files; DELETE FROM mids; DELETE FROM folders;"
            " DELETE FROM series; DELETE FROM series_keys; DELETE FROM thread_order; DELETE FROM thread_pages;"
        )
        self.db.execute("DELETE FROM meta WHERE key != 'version'")
        self._files_changed()

    def files_stamp(self) -> str | None:
        """See ``sqlfile.files_stamp``."""
        return files_stamp(self.db)

    def _files_changed(self) -> None:
        files_changed(self.db)
