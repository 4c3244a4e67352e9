"""The store's derived index: one SQLite file that can always be rebuilt from the files.

It maps Message-IDs and content hashes to call numbers (for dedup), and keeps
the header fields threading and rendering need, plus the date each message is
filed under and where that date came from. Rows are written ``pending`` before
a message file is renamed into place and marked ``filed`` after, so a crash in
between is resolved by looking at the file (see ``store``). This module knows
SQL, not files or mail: it never reads a message file and never parses one.

Length: one SQL schema and every query on it; splitting the queries from the schema
would spread one file format over modules.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import NamedTuple

from ..fsutil import fsync_file
from ..sqlbulk import insert_rows, where_in
from ..sqlfile import connect, snapshot, use_wal

__all__ = [
    "FACT_CALL",
    "FACT_DATE",
    "FACT_FROM_ADDR",
    "FACT_FROM_NAME",
    "FACT_MONTH",
    "FACT_NO_ARCHIVE",
    "FACT_PINS",
    "FACT_YEAR",
    "FILED",
    "HIDDEN",
    "PENDING",
    "REMOVED",
    "REMOVED_MARK",
    "REMOVED_TOKEN",
    "SCHEMA_VERSION",
    "THREAD_FACTS",
    "Index",
    "PINS_STAND_IN",
    "pins_as_overrides",
    "Row",
    "split_pins",
]

SCHEMA_VERSION = 5
PENDING = 0
FILED = 1
HIDDEN = 2
"""Filed, and hidden by ``listlib hide`` (the ledger says so): in the store, published nowhere."""
REMOVED = 3
"""Taken down by ``listlib remove`` (the ledger says so): its file is gone. The row keeps
only what refuses a copy (``raw_hash``, ``vitals``, ``mid_hash``) and what keeps its
place (call, list, path, date; ``pins``, with the digests of its threading headers);
its Message-ID, subject, sender and references are blank. Its permanent URL and Message-ID page become tombstones."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    call TEXT PRIMARY KEY,
    list TEXT NOT NULL,
    path TEXT NOT NULL,
    state INTEGER NOT NULL,
    message_id TEXT,
    vitals TEXT NOT NULL,
    raw_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    date INTEGER NOT NULL,
    date_source TEXT NOT NULL,
    year INTEGER NOT NULL,
    month INTEGER NOT NULL,
    subject TEXT NOT NULL,
    from_name TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    in_reply_to TEXT,
    refs TEXT NOT NULL,
    collision INTEGER NOT NULL,
    reason TEXT,
    origin TEXT NOT NULL,
    no_archive INTEGER NOT NULL DEFAULT 0,
    mid_hash TEXT,
    removed_at TEXT,
    pins TEXT,
    edited_at TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_id ON messages (list, message_id);
-- Dedup looks messages up by their vitals only among those without a Message-ID (a few):
-- an index of every row's vitals cost a random B-tree insert per message filed.
DROP INDEX IF EXISTS messages_by_vitals;
CREATE INDEX IF NOT EXISTS messages_by_vitals_without_id ON messages (list, vitals) WHERE message_id IS NULL;
CREATE INDEX IF NOT EXISTS messages_by_raw ON messages (list, raw_hash);
CREATE INDEX IF NOT EXISTS messages_by_mid_hash ON messages (list, mid_hash) WHERE mid_hash IS NOT NULL;
-- The few messages stewards changed under their call numbers (Index.revisions, read by every build).
CREATE INDEX IF NOT EXISTS messages_revised ON messages (list) WHERE state = 3 OR edited_at IS NOT NULL;
DROP INDEX IF EXISTS messages_by_month;
CREATE INDEX IF NOT EXISTS messages_by_state_month ON messages (list, state, year, month, call);
-- The newest messages of a list (feeds) without scanning them all.
CREATE INDEX IF NOT EXISTS messages_by_date ON messages (list, state, date, call);
CREATE INDEX IF NOT EXISTS messages_pending ON messages (state) WHERE state = 0;
-- Bumped whenever a month of a list gains or loses a filed message, so that readers
-- (the threader) find changed months without scanning the messages.
-- What redacted messages were before (``listlib redact``): a copy of the original is a
-- duplicate of the edited message.
CREATE TABLE IF NOT EXISTS redactions (
    list TEXT NOT NULL, call TEXT NOT NULL, raw_hash TEXT NOT NULL, vitals TEXT NOT NULL,
    PRIMARY KEY (list, raw_hash, call)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS redactions_by_vitals ON redactions (list, vitals);
CREATE TABLE IF NOT EXISTS month_versions (
    list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (list, year, month)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS month_gains AFTER INSERT ON messages WHEN NEW.state = 1 BEGIN
    INSERT INTO month_versions VALUES (NEW.list, NEW.year, NEW.month, 1)
    ON CONFLICT DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER IF NOT EXISTS month_files AFTER UPDATE OF state ON messages WHEN OLD.state != NEW.state BEGIN
    INSERT INTO month_versions VALUES (NEW.list, NEW.year, NEW.month, 1)
    ON CONFLICT DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER IF NOT EXISTS month_loses AFTER DELETE ON messages WHEN OLD.state = 1 BEGIN
    INSERT INTO month_versions VALUES (OLD.list, OLD.year, OLD.month, 1)
    ON CONFLICT DO UPDATE SET version = version + 1;
END;
"""


class Row(NamedTuple):
    """One message as the index knows it."""

    call: str
    list: str
    path: str
    state: int
    message_id: str | None
    vitals: str
    raw_hash: str
    size: int
    date: int
    date_source: str
    year: int
    month: int
    subject: str
    from_name: str
    from_addr: str
    in_reply_to: str | None
    refs: str
    """Space-separated Message-IDs of the References header, oldest first."""
    collision: int
    """1 when another message in the list has the same Message-ID but different content."""
    reason: str | None
    """Why the message is in ``_failed`` (a short machine-readable code), else None."""
    origin: str
    """The source it was imported from (not kept when the index is rebuilt)."""
    no_archive: int = 0
    """1 when the author asked not to be archived: pages show a placeholder."""
    mid_hash: str | None = None
    """For a removed message: ``urls.message_id_hash`` of its Message-ID (None without one)."""
    removed_at: str | None = None
    """For a removed message: when (UTC, ISO 8601); its ``reason`` is the public reason."""
    pins: str | None = None
    """For a removed message that keeps its place in a thread: the call number of the
    message it answered (``-`` for none), then those of its answers, space-separated;
    the threader holds them there (``Index.removal_pins``). Then, after ``PINS_STAND_IN``,
    the digests of its Message-ID, In-Reply-To, subject and References
    (``threader.stand_in_text``): it is threaded as its stand-in. None: it had no
    thread around it, and is threaded nowhere."""
    edited_at: str | None = None
    """For a redacted message (``listlib redact``: its bytes replaced by an edited copy):
    when (UTC, ISO 8601); its ``reason`` is the public reason."""

    @property
    def removed(self) -> bool:
        return self.state == REMOVED


REMOVED_TOKEN = "removed"
"""A removed message's token in ``Index.revisions``."""
REMOVED_MARK = 2
"""``no_archive`` of a removed message's row: shown as a placeholder, counted nowhere."""

_IN_CHUNK = 500
_FILING_CACHE_KIB = 16 << 10
"""SQLite's page cache while an import files batch after batch (``Index.filing_cache``).
Once a list is large, a batch's rows dirty a page of each hash index (Message-ID, raw
hash) per message, some 2,000 pages of 4 KB for 1,024 messages: the default cache (2 MB)
spills them to the write-ahead log before the commit, writing some twice, and reads
index pages back from the file for every lookup."""

_THREADED = f"(state = {FILED} OR (state = {REMOVED} AND pins IS NOT NULL))"
"""The rows the threader sees: filed messages, and removed ones that keep their place."""
_THREADED_BY_CALL = f"(+state = {FILED} OR (+state = {REMOVED} AND pins IS NOT NULL))"
"""``_THREADED`` where rows are looked up by call number ("+": not by the list's index)."""

THREAD_FACTS = (
    "call",
    "message_id",
    "in_reply_to",
    "refs",
    "subject",
    "date",
    "raw_hash",
    "year",
    "month",
    "from_name",
    "from_addr",
    "no_archive",
    "pins",
)
"""The columns of an ``Index.thread_facts`` tuple, in order: plain tuples (a first
build reads one per message), read by position with the ``FACT_*`` numbers."""
FACT_CALL = THREAD_FACTS.index("call")
FACT_DATE = THREAD_FACTS.index("date")
FACT_YEAR = THREAD_FACTS.index("year")
FACT_MONTH = THREAD_FACTS.index("month")
FACT_FROM_NAME = THREAD_FACTS.index("from_name")
FACT_FROM_ADDR = THREAD_FACTS.index("from_addr")
FACT_NO_ARCHIVE = THREAD_FACTS.index("no_archive")
FACT_PINS = THREAD_FACTS.index("pins")
"""Values per ``IN (...)`` query (SQLite allows 32766 parameters; smaller keeps plans simple)."""
_COLUMNS = ", ".join(Row._fields)


PINS_STAND_IN = " | "
"""Between the calls of ``Row.pins`` and its stand-in's digests (older removals have none)."""


def split_pins(pins: str) -> tuple[str, str | None]:
    """``Row.pins`` as (the pinned calls, the stand-in's digests or None)."""
    calls, mark, digests = pins.partition(PINS_STAND_IN)
    return calls, digests if mark else None


def pins_as_overrides(pinned: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(removed call, its ``Row.pins``) pairs as thread overrides (call -> the call it
    answers): each removed message under the one it answered, its answers under it."""
    overrides: dict[str, str] = {}
    for call, text in pinned:
        parent, *children = split_pins(text)[0].split()
        if parent != "-":
            overrides[call] = parent
        for child in children:
            overrides.setdefault(child, call)
    return overrides


class Index:
    """A connection to the index file; all writes happen in explicit transactions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Shared by a store's filing threads, which take turns (Store._db_lock).
        self.db = connect(path, isolation_level=None, timeout=60, check_same_thread=False)
        # Some file systems cannot hold a WAL (no shared memory): then commits stay FULL.
        self._wal = use_wal(self.db, "FULL")
        self._unsynced = False
        self._drop_old_schema()
        self.db.executescript(_SCHEMA)
        if self.get_meta("epoch") is None:
            self.begin()
            try:
                if self.get_meta("epoch") is None:
                    self.new_epoch()
                self.commit()
            finally:
                self.rollback()

    def _drop_old_schema(self) -> None:
        """An index from another schema version loses its tables (the store then rebuilds
        them from the files): columns may have changed."""
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        if has_meta and self.get_meta("schema_version") not in (None, str(SCHEMA_VERSION)):
            self.db.executescript("DROP TABLE IF EXISTS messages; DROP TABLE IF EXISTS month_versions;")

    def close(self) -> None:
        self.db.close()

    def schema_version(self) -> int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def begin(self, *, synced: bool = True) -> None:
        """Start a write transaction; with ``synced=False`` its commit does not wait for
        the disk (WAL mode keeps the index consistent: a crash may lose that commit,
        never damage the file) and the caller makes it durable, with ``sync`` or one
        sync of the whole file system that it does anyway."""
        if not synced and self._wal:
            self.db.execute("PRAGMA synchronous=NORMAL")  # not allowed inside a transaction
            self._unsynced = True
        try:
            self.db.execute("BEGIN IMMEDIATE")
        finally:
            self._restore_synchronous()

    def commit(self) -> None:
        try:
            self.db.execute("COMMIT")
        finally:
            self._restore_synchronous()

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self._restore_synchronous()

    def _restore_synchronous(self) -> None:
        if self._unsynced and not self.db.in_transaction:
            self.db.execute("PRAGMA synchronous=FULL")
            self._unsynced = False

    def sync(self) -> None:
        """Make every commit so far durable (fsync the write-ahead log)."""
        if self._wal:
            fsync_file(f"{self.path}-wal")

    @contextmanager
    def filing_cache(self) -> Iterator[None]:
        """A larger page cache while many batches are filed (``_FILING_CACHE_KIB``), the
        previous size again after: other readers of the index (a build in the same
        process, say) keep the default, and the pages beyond it are freed."""
        before = int(self.db.execute("PRAGMA cache_size").fetchone()[0])
        self.db.execute(f"PRAGMA cache_size = -{_FILING_CACHE_KIB}")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA cache_size = {before}")

    def insert_many(self, rows: Iterable[Row]) -> None:
        insert_rows(self.db, f"INSERT INTO messages ({_COLUMNS})", len(Row._fields), rows)

    def mark_filed(self, calls: Iterable[str]) -> None:
        where_in(self.db, "UPDATE messages SET state = 1 WHERE call", calls)

    def mark_filed_lazily(self, calls: Iterable[str]) -> None:
        """Mark rows filed in a transaction of its own, without waiting for the disk.

        WAL mode keeps the commit atomic and ordered; if a crash loses it, the rows
        are pending again and recovery resolves them from the files.
        """
        self.begin(synced=False)
        try:
            self.mark_filed(calls)
            self.commit()
        finally:
            self.rollback()

    def set_state(self, calls: Iterable[str], state: int, *, was: int) -> None:
        """Move these rows from state ``was`` to ``state`` (rows in another state stay)."""
        values = list(calls)
        for start in range(0, len(values), _IN_CHUNK):
            chunk = values[start : start + _IN_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            update = f"UPDATE messages SET state = ? WHERE state = ? AND call IN ({marks})"
            self.db.execute(update, (state, was, *chunk))

    def delete(self, calls: Iterable[str]) -> None:
        where_in(self.db, "DELETE FROM messages WHERE call", calls)

    def clear(self) -> None:
        self.db.execute("DELETE FROM messages")
        self.db.execute("DELETE FROM redactions")
        self.db.execute("DELETE FROM month_versions")
        self.new_epoch()

    def max_call(self) -> str | None:
        return self.db.execute("SELECT max(call) FROM messages").fetchone()[0]

    def _rows(self, where: str, params: tuple[object, ...]) -> list[Row]:
        cursor = self.db.execute(f"SELECT {_COLUMNS} FROM messages WHERE {where}", params)
        return [Row._make(values) for values in cursor]

    def find_related(
        self,
        slug: str,
        raw_hashes: Iterable[str],
        message_ids: Iterable[str],
        vitals_without_id: Iterable[str],
        mid_hashes: Iterable[str] = (),
    ) -> list[Row]:
        """Rows of one list with any of these exact-bytes hashes or Message-IDs, or, among
        rows without a Message-ID, any of these vitals, or removed rows with any of these
        Message-ID hashes: what dedup of a batch needs, in a few queries instead of one
        per message. Oldest first, each row once."""
        found: dict[str, Row] = {}
        for column, values, extra in (
            ("raw_hash", list(raw_hashes), ""),
            ("message_id", list(message_ids), ""),
            ("vitals", list(vitals_without_id), " AND message_id IS NULL"),
            ("mid_hash", list(mid_hashes), ""),
        ):
            for start in range(0, len(values), _IN_CHUNK):
                chunk = values[start : start + _IN_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                where = f"list = ? AND {column} IN ({marks}){extra}"
                for row in self._rows(where, (slug, *chunk)):
                    found[row.call] = row
        return sorted(found.values())

    def pending(self) -> list[Row]:
        return self._rows(f"state = {PENDING}", ())

    def iter_rows(self) -> Iterator[Row]:
        cursor = self.db.execute(f"SELECT {_COLUMNS} FROM messages ORDER BY call")
        for values in cursor:
            yield Row(*values)

    def snapshot(self) -> AbstractContextManager[None]:
        """Read a consistent view: writers committing meanwhile are not seen."""
        return snapshot(self.db)

    def slugs(self) -> list[str]:
        """Lists (and pseudo-lists) that have filed messages."""
        # One index seek per list (a loose index scan), not a read of every row.
        cursor = self.db.execute(
            "WITH RECURSIVE lists(slug) AS (SELECT min(list) FROM messages UNION ALL"
            " SELECT (SELECT min(list) FROM messages WHERE list > slug) FROM lists WHERE slug IS NOT NULL)"
            " SELECT slug FROM lists WHERE slug IS NOT NULL"
            f" AND EXISTS (SELECT 1 FROM messages WHERE list = slug AND state = {FILED})"
        )
        return [slug for (slug,) in cursor]

    def month_fingerprints(self, slug: str) -> dict[tuple[int, int], str]:
        """Per month of a list that ever had filed messages, a short text that changes
        whenever its set of filed messages does: the index's epoch (new for every
        index file and rebuild) and the month's version (bumped by triggers)."""
        epoch = self.get_meta("epoch") or ""
        cursor = self.db.execute("SELECT year, month, version FROM month_versions WHERE list = ?", (slug,))
        return {(y, m): f"{epoch}:{version}" for y, m, version in cursor}

    def new_epoch(self) -> None:
        """Name a new life of the index (at creation and on every rebuild)."""
        self.set_meta("epoch", secrets.token_hex(8))

    def calls_by_month(self, slug: str) -> list[tuple[str, int, int]]:
        """(call, year, month) of every message of a list the threader sees (filed, and
        removed ones that keep their place)."""
        return self.db.execute(
            f"SELECT call, year, month FROM messages WHERE list = ? AND {_THREADED}", (slug,)
        ).fetchall()

    def month_calls(self, slug: str, year: int, month: int) -> list[str]:
        """``calls_by_month`` of one month."""
        cursor = self.db.execute(
            f"SELECT call FROM messages WHERE list = ? AND {_THREADED} AND year = ? AND month = ?",
            (slug, year, month),
        )
        return [call for (call,) in cursor]

    def kept_rows(self, slug: str) -> list[Row]:
        """Every message of a list that has a call number on the website: filed, hidden
        (it may be shown again) and removed (a tombstone)."""
        return self._rows(f"list = ? AND state IN ({FILED}, {HIDDEN}, {REMOVED})", (slug,))

    def removed_rows(self, slug: str) -> list[Row]:
        """Every removed message of a list (their tombstones)."""
        return self._rows(f"list = ? AND state = {REMOVED}", (slug,))

    def removed_month_rows(self, slug: str, year: int, month: int) -> list[Row]:
        return self._rows(f"list = ? AND state = {REMOVED} AND year = ? AND month = ?", (slug, year, month))

    def slugs_with_removals(self) -> list[str]:
        """Lists that have removed messages keeping their place in a thread."""
        cursor = self.db.execute(f"SELECT DISTINCT list FROM messages WHERE state = {REMOVED} AND pins IS NOT NULL")
        return [slug for (slug,) in cursor]

    def rows_referring(self, slug: str, message_id: str) -> list[Row]:
        """Filed and hidden messages of a list that name ``message_id`` in In-Reply-To or
        References (a scan of the list: for an operator's command, not for builds)."""
        pattern = "%" + message_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return self._rows(
            f"list = ? AND state IN ({FILED}, {HIDDEN}) AND (in_reply_to = ? OR refs LIKE ? ESCAPE '\\')",
            (slug, message_id, pattern),
        )

    def revisions(self, slug: str) -> dict[str, str]:
        """Call -> a token that changes whenever stewards change the message under its
        call number: ``removed``, or an edited message's content hash. Readers that
        remember what they made from a message (the thread cache, the build) compare
        these, as a message is otherwise immutable."""
        cursor = self.db.execute(
            f"SELECT call, CASE WHEN state = {REMOVED} THEN '{REMOVED_TOKEN}' ELSE raw_hash END FROM messages"
            # Named: without statistics (no ANALYZE) SQLite takes messages_by_date for
            # ``list = ?`` and reads every row of the list (95 ms at 160,000 messages).
            " INDEXED BY messages_revised"
            " WHERE list = ? AND (state = 3 OR edited_at IS NOT NULL)",  # messages_revised's WHERE, as written
            (slug,),
        )
        return dict(cursor.fetchall())

    def has_removals(self) -> bool:
        """Whether any message was removed or redacted (dedup looks for copies of them then)."""
        return (
            self.db.execute("SELECT 1 FROM messages WHERE state = 3 OR edited_at IS NOT NULL LIMIT 1").fetchone()
            is not None
        )

    def add_redaction(self, slug: str, call: str, raw_hash: str, vitals: str) -> None:
        """Remember what a redacted message was (its bytes' and vitals' digests)."""
        self.db.execute("INSERT OR REPLACE INTO redactions VALUES (?, ?, ?, ?)", (slug, call, raw_hash, vitals))

    def find_redacted(self, slug: str, raw_hashes: Iterable[str], vitals: Iterable[str]) -> list[tuple[str, str, str]]:
        """(call, original raw hash, original vitals) of redacted messages of a list that
        were, before, any of these bytes or vitals."""
        found: set[tuple[str, str, str]] = set()
        for column, values in (("raw_hash", list(raw_hashes)), ("vitals", list(vitals))):
            for start in range(0, len(values), _IN_CHUNK):
                chunk = values[start : start + _IN_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                cursor = self.db.execute(
                    f"SELECT call, raw_hash, vitals FROM redactions WHERE list = ? AND {column} IN ({marks})",
                    (slug, *chunk),
                )
                found.update(cursor.fetchall())
        return sorted(found)

    def removal_pins(self, slug: str) -> dict[str, str]:
        """What the removed messages of a list pin (call -> the call it answers): each
        one to the message it answered, and its answers to it. The threader applies
        them like an operator's attachments, so a removal leaves the thread's shape."""
        cursor = self.db.execute(
            f"SELECT call, pins FROM messages WHERE list = ? AND state = {REMOVED} AND pins IS NOT NULL", (slug,)
        )
        return pins_as_overrides(cursor)

    def rows_by_raw_hash(self, raw_hashes: Iterable[str]) -> list[Row]:
        """Rows of any list and state with these exact-bytes hashes, in call order."""
        values = sorted(set(raw_hashes))
        # Every list ever filed to, one index seek each (a loose index scan), then the
        # (list, raw_hash) index for each: no read of every row.
        cursor = self.db.execute(
            "WITH RECURSIVE lists(slug) AS (SELECT min(list) FROM messages UNION ALL"
            " SELECT (SELECT min(list) FROM messages WHERE list > slug) FROM lists WHERE slug IS NOT NULL)"
            " SELECT slug FROM lists WHERE slug IS NOT NULL"
        )
        found: list[Row] = []
        for (slug,) in list(cursor):
            for start in range(0, len(values), _IN_CHUNK):
                chunk = values[start : start + _IN_CHUNK]
                where = f"list = ? AND raw_hash IN ({', '.join('?' for _ in chunk)})"
                found.extend(self._rows(where, (slug, *chunk)))
        found.sort()
        return found

    def rows_by_call(self, calls: Iterable[str]) -> list[Row]:
        """Rows for these call numbers (unknown ones are left out), in call order."""
        values = list(calls)
        found: list[Row] = []
        for start in range(0, len(values), _IN_CHUNK):
            chunk = values[start : start + _IN_CHUNK]
            found.extend(self._rows(f"call IN ({', '.join('?' for _ in chunk)})", tuple(chunk)))
        found.sort()
        return found

    def month_contents(self, slug: str, year: int, month: int) -> Iterator[tuple[str, str, str, str, int, int]]:
        """(call, raw hash, path in the store, list, year, month) of every filed message of
        one month of a list, in call order (an index seek, not a scan): what a cache keyed
        by content (``classcache``) compares with, in one narrow read, as it goes."""
        yield from self.db.execute(
            "SELECT call, raw_hash, path, list, year, month FROM messages"
            f" WHERE list = ? AND state = {FILED} AND year = ? AND month = ? ORDER BY call",
            (slug, year, month),
        )

    def all_month_versions(self) -> dict[tuple[str, int, int], int]:
        """(list, year, month) -> the month's version (``month_fingerprints``), of every
        month of every list that ever had filed messages: with the index's ``epoch``, it
        says which months' filed messages changed since another reading."""
        cursor = self.db.execute("SELECT list, year, month, version FROM month_versions")
        return {(slug, year, month): version for slug, year, month, version in cursor}

    def filed_rows(self, slug: str) -> list[Row]:
        """Every filed message of a list."""
        return self._rows(f"list = ? AND state = {FILED}", (slug,))

    def month_rows(self, slug: str, year: int, month: int) -> list[Row]:
        """Every filed message of one month of a list."""
        return self._rows(f"list = ? AND state = {FILED} AND year = ? AND month = ?", (slug, year, month))

    def newest_rows(self, slug: str, count: int) -> list[Row]:
        """The ``count`` newest filed messages of a list by (date, call), newest first."""
        return self._rows(f"list = ? AND state = {FILED} ORDER BY date DESC, call DESC LIMIT ?", (slug, count))

    def find_rows(
        self,
        states: Iterable[int],
        *,
        slug: str | None = None,
        month: tuple[int, int] | None = None,
        sender: str | None = None,
        message_id: str | None = None,
        mid_hash: str | None = None,
    ) -> list[Row]:
        """Rows in any of these states, of this list, month, sender address (exact, any
        case; or a whole domain: ``@example.org``) and Message-ID, when given; in call order."""
        where = [f"state IN ({', '.join(str(int(state)) for state in states)})"]
        params: list[object] = []
        if slug is not None:
            where.append("list = ?")
            params.append(slug)
        if month is not None:
            where.append("year = ? AND month = ?")
            params.extend(month)
        if sender is not None:
            if sender.startswith("@"):
                where.append("lower(from_addr) LIKE ? ESCAPE '\\'")
                escaped = sender.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                params.append("%" + escaped)
            else:
                where.append("lower(from_addr) = ?")
                params.append(sender.lower())
        if message_id is not None:
            where.append("message_id = ?")
            params.append(message_id)
        if mid_hash is not None:
            where.append("mid_hash = ?")
            params.append(mid_hash)
        return self._rows(" AND ".join(where) + " ORDER BY call", tuple(params))

    def rows_by_message_id(self, slug: str, message_id: str) -> list[Row]:
        return self._rows(f"list = ? AND message_id = ? AND state = {FILED}", (slug, message_id))

    def thread_facts(self, slug: str, calls: Iterable[str] | None = None) -> list[tuple[object, ...]]:
        """What threading needs of a list's filed messages and placed removed ones (all,
        or these call numbers); a removed one has no Message-ID, references, subject or
        sender, and ``no_archive`` 2:
        tuples of the ``THREAD_FACTS`` columns (the last three for the thread's authors)."""
        select = f"SELECT {', '.join(THREAD_FACTS)} FROM messages WHERE "
        if calls is None:
            return self.db.execute(f"{select} list = ? AND {_THREADED}", (slug,)).fetchall()
        values = list(calls)
        found: list[tuple[object, ...]] = []
        for start in range(0, len(values), _IN_CHUNK):
            chunk = values[start : start + _IN_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            # "+": look each call up by its key; SQLite would otherwise scan the list's index.
            where = (
                f"call IN ({marks}) AND +list = ? AND (+state = {FILED} OR (+state = {REMOVED} AND pins IS NOT NULL))"
            )
            found.extend(self.db.execute(select + where, (*chunk, slug)))
        return found

    def iter_thread_facts(self, slug: str) -> Iterator[tuple[object, ...]]:
        """``thread_facts`` of all of a list's messages, one at a time (a first threading
        of a big list keeps only a few of each message's facts)."""
        select = f"SELECT {', '.join(THREAD_FACTS)} FROM messages WHERE list = ? AND {_THREADED}"
        yield from self.db.execute(select, (slug,))

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM messages").fetchone()[0]
