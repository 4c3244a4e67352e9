"""Opening listlib's SQLite files: every connection knows the file it belongs to.
Knows how a file is opened, versioned and read consistently; never what it holds.

SQLite reports a full disk or a failing one as ``database or disk is full`` /
``disk I/O error`` without saying which file; a user seeing that from a cron job
cannot tell the store from the cache. Connections made by ``connect`` turn those
errors into ``DiskError`` naming the file, on every statement and commit. Other
SQLite errors (a damaged cache file, say) pass through unchanged: callers that
rebuild a damaged derived file rely on seeing them.

Every file is opened in autocommit mode (``isolation_level=None``: transactions are
explicit) with a write-ahead log (``use_wal``), so that readers never wait for a
writer. A file of *derived* data (``open_derived``: the build records, the search
state) can be thrown away and rebuilt: its version sits in its ``meta`` table, tables
of another version are made again empty, and a damaged file is deleted with its
journals (``discard``) and made again. The thread cache is derived too but shared by
processes, so its owner discards it under its lock. The store's index is not derived
data: nothing here discards it (only ``check --repair`` does, to rebuild it from the
message files). ``snapshot`` reads a consistent view of any of them.

Every connection's page cache is ``CACHE_KIB`` for its file and as much for its
temporary tables: SQLite's default (2,000 KiB each) filled with the archive, so that a
build of 8,400 messages held some 5 MB more of it than one of 2,100. And each keeps
``CACHED_STATEMENTS`` prepared statements, not Python's default 128: a query for
``call IN (?, ?, ...)`` is a statement of its own for each count of values, as big as
its values, and a full build filled the cache with them as the archive grew.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import DiskError

__all__ = [
    "CACHED_STATEMENTS",
    "CACHE_KIB",
    "connect",
    "discard",
    "files_changed",
    "files_stamp",
    "open_derived",
    "snapshot",
    "use_wal",
]

CACHED_STATEMENTS = 32
"""Prepared statements a connection keeps (Python's ``sqlite3`` keeps 128). Measured on
a full build of 80,016 generated messages stopped where rendering ends (2026-11-28):
SQLite's memory in the main process 11.5 MB with 128, 3.6 MB with 16; the main
process's peak 68 MB with 128, 60 with 32, 58 with 16; 91, 90 and 81 s."""
CACHE_KIB = 512
"""SQLite's page cache of a connection, per schema (the file, its temporary tables).
Most reads stream (a month's rows, the plan's temporary tables, a page's build record):
a full build of 5,000 generated messages took the same CPU time (11.8 s) with 512 KiB
as with the default 2,000, and 20 to 30 MB less at its peak. A bound full before 2,000
messages, so that memory does not grow with the archive. Bulk writers that need more
ask for it while they write (``Index.filing_cache``)."""

# Primary result codes (the low byte of an extended code): the disk, not the data.
_DISK_CODES = {sqlite3.SQLITE_FULL: "no space left on the disk", sqlite3.SQLITE_IOERR: "disk I/O error"}


def _disk_error(path: str, exc: sqlite3.Error) -> DiskError | None:
    code = getattr(exc, "sqlite_errorcode", None)
    reason = _DISK_CODES.get(code & 0xFF) if isinstance(code, int) else None
    return DiskError(f"{path}: cannot write: {reason}") if reason else None


class _Connection(sqlite3.Connection):
    """A connection whose disk errors name its file."""

    path = ""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.OperationalError as exc:
            raise _disk_error(self.path, exc) or exc from exc

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.OperationalError as exc:
            raise _disk_error(self.path, exc) or exc from exc

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(sql_script)
        except sqlite3.OperationalError as exc:
            raise _disk_error(self.path, exc) or exc from exc

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.OperationalError as exc:
            raise _disk_error(self.path, exc) or exc from exc


def connect(path: Path | str, **options: Any) -> sqlite3.Connection:
    """``sqlite3.connect`` for a listlib file: a full or failing disk is a ``DiskError``."""
    db = sqlite3.connect(path, factory=_Connection, cached_statements=CACHED_STATEMENTS, **options)
    db.path = str(path)  # type: ignore[attr-defined]
    db.execute(f"PRAGMA main.cache_size = -{CACHE_KIB}")
    db.execute(f"PRAGMA temp.cache_size = -{CACHE_KIB}")
    return db


def use_wal(db: sqlite3.Connection, synchronous: str) -> bool:
    """Journal into a write-ahead log, syncing as ``synchronous`` says (``NORMAL``: a
    crash may lose the last commits, never consistency; ``FULL``: commits are durable).
    False when the file system cannot hold a WAL (no shared memory): the file keeps a
    rollback journal."""
    wal = bool(db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return wal


def discard(path: Path) -> None:
    """Delete a SQLite file and its journals."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def open_derived(path: Path, schema: str, version: str) -> sqlite3.Connection:
    """Open (or create) a file of derived data, ready for use.

    ``schema``: ``CREATE ... IF NOT EXISTS`` statements, including a ``meta`` table of
    (key, value) text rows, where ``version`` is kept. A file of another version loses
    every table (columns may differ) and gets the schema again, empty; a damaged file
    (``sqlite3.DatabaseError``) is discarded and made again. Commits are not synced
    (``synchronous=NORMAL``): a crash loses at most the last ones, which are derived."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _open_derived(path, schema, version)
    except sqlite3.DatabaseError:
        discard(path)
        return _open_derived(path, schema, version)


def _open_derived(path: Path, schema: str, version: str) -> sqlite3.Connection:
    db = connect(path, isolation_level=None)
    try:
        use_wal(db, "NORMAL")
        db.executescript(schema)
        found = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if found is None or found[0] != version:
            tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
            db.executescript("".join(f'DROP TABLE "{name}";' for (name,) in tables.fetchall()))
            db.executescript(schema)
            db.execute("INSERT INTO meta (key, value) VALUES ('version', ?)", (version,))
    except BaseException:
        db.close()
        raise
    return db


def files_changed(db: sqlite3.Connection) -> None:
    """Note in a derived file's ``meta`` that the output files it records changed: a new
    random token, so that a file made anew (whose counter would start again) never
    repeats one."""
    db.execute("INSERT OR REPLACE INTO meta VALUES ('files_stamp', ?)", (secrets.token_hex(8),))


def files_stamp(db: sqlite3.Connection) -> str | None:
    """The token ``files_changed`` left last (None before the first): the same token,
    the same files recorded."""
    row = db.execute("SELECT value FROM meta WHERE key = 'files_stamp'").fetchone()
    return row[0] if row else None


@contextmanager
def snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """Read a consistent view (a deferred read transaction on an autocommit
    connection): writers committing meanwhile are not seen. Ends with COMMIT, which for
    a reader only ends the transaction, on leaving by an exception too."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")
