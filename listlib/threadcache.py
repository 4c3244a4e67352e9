"""The thread cache: one SQLite file holding every list's threads, by month (derived data).

Tables::

    meta          cache version, epoch (a random name for this cache file's life),
                  generation (incremented by every update that changed something)
    months        per list and month: the store's fingerprint of its messages when
                  last threaded, whether it was empty, and the generation its thread
                  list last changed in
    messages      per message: month, cluster, thread, parent, depth
    keys          per list: every threading key -> the cluster of messages that share it
    threads       per thread: its messages in display order, its authors, its root
                  message's month, counts and dates
    thread_months per thread and month: how many of its messages are in that month
    gone          thread names that no longer exist, with the thread that now holds
                  their old root message (re-rooted) or none (removed)
    overrides     per list: the thread overrides (``content/threads.toml``) the threads
                  were made with: call -> the call it answers, or NULL (detached)

The cache is thrown away and rebuilt when its version differs or it is damaged;
a new file gets a new epoch, so readers that remember a generation know to start
over. This module knows SQL, not mail, threading rules or the store.

The threads are indexed by their order (first date, id), last date and root month, so
an incremental plan asks for a thread's neighbours, the latest threads and a month's
threads without reading every thread of a list.

Length: the schema, its writes and one query per question the planners ask; splitting
the queries from the schema they depend on would scatter the SQL of one file.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .sqlfile import connect, discard, snapshot, use_wal

__all__ = ["CACHE_VERSION", "MessageEntry", "MonthEntry", "ThreadCache", "ThreadEntry", "ThreadLine"]

CACHE_VERSION = 7

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS months (
    list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL,
    fingerprint TEXT NOT NULL, changed INTEGER NOT NULL, empty INTEGER NOT NULL,
    PRIMARY KEY (list, year, month)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    call TEXT PRIMARY KEY, list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL,
    cluster TEXT NOT NULL, thread TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_by_cluster ON messages (list, cluster);
CREATE INDEX IF NOT EXISTS messages_by_month ON messages (list, year, month);
CREATE TABLE IF NOT EXISTS keys (
    list TEXT NOT NULL, key TEXT NOT NULL, cluster TEXT NOT NULL,
    PRIMARY KEY (list, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS threads (
    list TEXT NOT NULL, id TEXT NOT NULL, root_year INTEGER NOT NULL, root_month INTEGER NOT NULL,
    count INTEGER NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL, changed INTEGER NOT NULL,
    missing_root TEXT, messages TEXT NOT NULL, authors TEXT NOT NULL,
    PRIMARY KEY (list, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS threads_in_order ON threads (list, first, id);
CREATE INDEX IF NOT EXISTS threads_by_last ON threads (list, last, id);
CREATE INDEX IF NOT EXISTS threads_by_root ON threads (list, root_year, root_month, first, id, last, count);
CREATE TABLE IF NOT EXISTS thread_months (
    list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL, thread TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (list, year, month, thread)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS thread_months_by_thread ON thread_months (list, thread);
CREATE TABLE IF NOT EXISTS overrides (
    list TEXT NOT NULL, call TEXT NOT NULL, parent TEXT,
    PRIMARY KEY (list, call)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS revisions (
    list TEXT NOT NULL, call TEXT NOT NULL, token TEXT NOT NULL,
    PRIMARY KEY (list, call)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gone (
    list TEXT NOT NULL, id TEXT NOT NULL, successor TEXT, changed INTEGER NOT NULL,
    PRIMARY KEY (list, id)
) WITHOUT ROWID;
"""

_IN_CHUNK = 500
_to_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
"""Compact JSON (one encoder for every thread written: ``json.dumps`` makes one per call)."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class MessageEntry(NamedTuple):
    """A message as the cache files it."""

    call: str
    year: int
    month: int
    cluster: str
    thread: str


@dataclass(frozen=True, slots=True)
class ThreadEntry:
    """A thread as the cache keeps it."""

    id: str
    missing_root: str | None
    messages: tuple[tuple[str, str | None, int], ...]
    """(call, parent call, depth) in display order."""
    first: int
    """Date of its earliest message (seconds)."""
    last: int
    months: tuple[tuple[int, int, int], ...]
    """(year, month, messages in that month), oldest first."""
    authors: tuple[tuple[str, str], ...]
    """Each distinct (From name, From address) of its messages that may be archived
    (not ``X-No-Archive``), in the order they first appear in ``messages``: month
    pages list participants from it."""
    root: tuple[int, int]
    """(year, month) of its root message: where its page lives."""

    @property
    def count(self) -> int:
        return len(self.messages)


class ThreadLine(NamedTuple):
    """A thread as a month page lists it: everything but its messages."""

    id: str
    first: int
    last: int
    count: int
    months: tuple[tuple[int, int, int], ...]
    authors: tuple[tuple[str, str], ...]


class MonthEntry(NamedTuple):
    """One month of a list: its threads and how many of its messages each holds."""

    year: int
    month: int
    threads: tuple[tuple[str, int], ...]
    """(thread id, messages of the thread in this month)."""


class ThreadCache:
    """A connection to the cache file. Writes happen inside ``transaction()``."""

    def __init__(self, path: Path) -> None:
        """Open (or create) the cache; raises sqlite3.DatabaseError when it is damaged."""
        self.path = path
        self.db = connect(path, isolation_level=None, timeout=60)
        try:
            use_wal(self.db, "NORMAL")
            version = self._meta("version") if self._has_meta() else None
            if version is not None and version != str(CACHE_VERSION):
                raise sqlite3.DatabaseError(f"cache version {version}, expected {CACHE_VERSION}")
            self.db.executescript(_SCHEMA)
            if version is None:
                with self.transaction():
                    self._set_meta("version", str(CACHE_VERSION))
                    self._set_meta("epoch", secrets.token_hex(8))
                    self._set_meta("generation", "0")
            self.epoch = self._meta("epoch") or ""
        except sqlite3.DatabaseError:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @staticmethod
    def discard(path: Path) -> None:
        """Remove a cache file and its journals."""
        discard(path)

    # -- meta ---------------------------------------------------------------------------

    def _has_meta(self) -> bool:
        row = self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        return row is not None

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self._meta("generation") or 0)

    def set_generation(self, generation: int) -> None:
        self._set_meta("generation", str(generation))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def snapshot(self) -> AbstractContextManager[None]:
        """Read a consistent view: updates committed meanwhile are not seen."""
        return snapshot(self.db)

    # -- reading ------------------------------------------------------------------------

    def slugs(self) -> list[str]:
        cursor = self.db.execute("SELECT DISTINCT list FROM months WHERE empty = 0 ORDER BY list")
        return [slug for (slug,) in cursor]

    def fingerprints(self, slug: str) -> dict[tuple[int, int], tuple[str, bool]]:
        """Month -> (fingerprint when last threaded, whether it was empty then)."""
        cursor = self.db.execute("SELECT year, month, fingerprint, empty FROM months WHERE list = ?", (slug,))
        return {(y, m): (fingerprint, bool(empty)) for y, m, fingerprint, empty in cursor}

    def month_calls(self, slug: str, year: int, month: int) -> list[str]:
        cursor = self.db.execute(
            "SELECT call FROM messages WHERE list = ? AND year = ? AND month = ?", (slug, year, month)
        )
        return [call for (call,) in cursor]

    def _in(self, select: str, slug: str, values: Iterable[str]) -> list[tuple[object, ...]]:
        items = list(values)
        found: list[tuple[object, ...]] = []
        for start in range(0, len(items), _IN_CHUNK):
            chunk = items[start : start + _IN_CHUNK]
            found.extend(self.db.execute(select.format(", ".join("?" for _ in chunk)), (slug, *chunk)))
        return found

    def clusters_of_keys(self, slug: str, keys: Iterable[str]) -> set[str]:
        return {str(c) for (c,) in self._in("SELECT cluster FROM keys WHERE list = ? AND key IN ({})", slug, keys)}

    def messages_of_calls(self, slug: str, calls: Iterable[str]) -> list[MessageEntry]:
        # "+list": with many calls SQLite would otherwise pick the (list, ...) month index
        # and scan the whole list instead of looking each call up by primary key.
        select = "SELECT call, year, month, cluster, thread FROM messages WHERE +list = ? AND call IN ({})"
        return [MessageEntry(*row) for row in self._in(select, slug, calls)]  # type: ignore[arg-type]

    def messages_of_clusters(self, slug: str, clusters: Iterable[str]) -> list[MessageEntry]:
        select = "SELECT call, year, month, cluster, thread FROM messages WHERE list = ? AND cluster IN ({})"
        return [MessageEntry(*row) for row in self._in(select, slug, clusters)]  # type: ignore[arg-type]

    def _thread_months(self, slug: str, ids: list[str]) -> dict[str, tuple[tuple[int, int, int], ...]]:
        # Without the hint SQLite reads all of the list's months (the primary key's prefix).
        select = (
            "SELECT thread, year, month, count FROM thread_months INDEXED BY thread_months_by_thread"
            " WHERE list = ? AND thread IN ({})"
        )
        months: dict[str, list[tuple[int, int, int]]] = {}
        for thread_id, year, month, count in sorted(self._in(select, slug, ids)):  # type: ignore[type-var]
            months.setdefault(thread_id, []).append((year, month, count))  # type: ignore[call-overload,arg-type]
        return {thread_id: tuple(items) for thread_id, items in months.items()}

    def threads_by_id(self, slug: str, ids: Iterable[str]) -> dict[str, ThreadEntry]:
        wanted = list(ids)
        months = self._thread_months(slug, wanted)
        select = (
            "SELECT id, missing_root, messages, authors, first, last, root_year, root_month"
            " FROM threads WHERE list = ? AND id IN ({})"
        )
        found = {}
        for thread_id, missing_root, messages, authors, first, last, year, month in self._in(select, slug, wanted):
            found[thread_id] = ThreadEntry(
                id=thread_id,  # type: ignore[arg-type]
                missing_root=missing_root,  # type: ignore[arg-type]
                messages=tuple(map(tuple, json.loads(messages))),  # type: ignore[arg-type]
                first=first,  # type: ignore[arg-type]
                last=last,  # type: ignore[arg-type]
                months=months.get(thread_id, ()),  # type: ignore[call-overload]
                authors=tuple(map(tuple, json.loads(authors))),  # type: ignore[arg-type]
                root=(year, month),  # type: ignore[arg-type]
            )
        return found

    def thread_lines(self, slug: str, ids: Iterable[str]) -> dict[str, ThreadLine]:
        """Threads without their messages (what month pages show: cheaper than ``threads_by_id``)."""
        wanted = list(ids)
        months = self._thread_months(slug, wanted)
        select = "SELECT id, first, last, count, authors FROM threads WHERE list = ? AND id IN ({})"
        return {
            thread_id: ThreadLine(
                thread_id,  # type: ignore[arg-type]
                first,  # type: ignore[arg-type]
                last,  # type: ignore[arg-type]
                count,  # type: ignore[arg-type]
                months.get(thread_id, ()),  # type: ignore[call-overload]
                tuple(map(tuple, json.loads(authors))),  # type: ignore[arg-type]
            )
            for thread_id, first, last, count, authors in self._in(select, slug, wanted)
        }

    def thread(self, slug: str, thread_id: str) -> ThreadEntry | None:
        return self.threads_by_id(slug, [thread_id]).get(thread_id)

    def thread_of(self, slug: str, call: str) -> str | None:
        row = self.db.execute("SELECT thread FROM messages WHERE list = ? AND call = ?", (slug, call)).fetchone()
        return row[0] if row else None

    def thread_ids(self, slug: str) -> list[str]:
        return [t for (t,) in self.db.execute("SELECT id FROM threads WHERE list = ? ORDER BY id", (slug,))]

    def thread_summaries(self, slug: str) -> list[tuple[int, str, int, int, int, int]]:
        """(first, id, last, count, root year, root month) of every thread of a list
        (the table's first columns: no message list is read)."""
        cursor = self.db.execute(
            "SELECT first, id, last, count, root_year, root_month FROM threads WHERE list = ?", (slug,)
        )
        return cursor.fetchall()

    def summaries_of(self, slug: str, ids: Iterable[str]) -> list[tuple[int, str, int, int, int, int]]:
        """``thread_summaries`` of these threads (unknown ones are left out)."""
        select = "SELECT first, id, last, count, root_year, root_month FROM threads WHERE list = ? AND id IN ({})"
        return self._in(select, slug, ids)  # type: ignore[return-value]

    def thread_neighbours(self, slug: str, first: int, thread_id: str) -> tuple[str | None, str | None]:
        """The threads before and after (first, id) in the list's order by (first date, id)."""
        before = self.db.execute(
            "SELECT id FROM threads INDEXED BY threads_in_order WHERE list = ? AND (first, id) < (?, ?)"
            " ORDER BY first DESC, id DESC LIMIT 1",
            (slug, first, thread_id),
        ).fetchone()
        after = self.db.execute(
            "SELECT id FROM threads INDEXED BY threads_in_order WHERE list = ? AND (first, id) > (?, ?)"
            " ORDER BY first, id LIMIT 1",
            (slug, first, thread_id),
        ).fetchone()
        return (before[0] if before else None, after[0] if after else None)

    def latest_threads(self, slug: str, count: int) -> list[tuple[int, str, int, int, int, int]]:
        """``thread_summaries`` of the ``count`` threads with the latest (last date, id), latest first."""
        cursor = self.db.execute(
            "SELECT first, id, last, count, root_year, root_month FROM threads INDEXED BY threads_by_last"
            " WHERE list = ? ORDER BY last DESC, id DESC LIMIT ?",
            (slug, count),
        )
        return cursor.fetchall()

    def root_totals(self, slug: str) -> dict[tuple[int, int], tuple[int, int]]:
        """(year, month) -> (threads rooted in it, their latest last date), for the months
        that hold a thread's root."""
        cursor = self.db.execute(
            "SELECT root_year, root_month, count(*), max(last) FROM threads INDEXED BY threads_by_root"
            " WHERE list = ? GROUP BY root_year, root_month",
            (slug,),
        )
        return {(y, m): (threads, last) for y, m, threads, last in cursor}

    def rooted_summaries(self, slug: str, year: int, month: int) -> list[tuple[int, str, int, int, int, int]]:
        """``thread_summaries`` of the threads rooted in a month, by (first date, id)."""
        cursor = self.db.execute(
            "SELECT first, id, last, count, root_year, root_month FROM threads INDEXED BY threads_by_root"
            " WHERE list = ? AND root_year = ? AND root_month = ? ORDER BY first, id",
            (slug, year, month),
        )
        return cursor.fetchall()

    def month_totals(self, slug: str) -> dict[tuple[int, int], tuple[int, int]]:
        """(year, month) -> (messages in it, threads with messages in it)."""
        cursor = self.db.execute(
            "SELECT year, month, sum(count), count(*) FROM thread_months WHERE list = ? GROUP BY year, month", (slug,)
        )
        return {(y, m): (messages, threads) for y, m, messages, threads in cursor}

    def months(self, slug: str) -> list[MonthEntry]:
        """Every month of a list that has messages, oldest first, with its threads."""
        cursor = self.db.execute(
            "SELECT year, month, thread, count FROM thread_months WHERE list = ? ORDER BY year, month, thread",
            (slug,),
        )
        found: dict[tuple[int, int], list[tuple[str, int]]] = {}
        for year, month, thread_id, count in cursor:
            found.setdefault((year, month), []).append((thread_id, count))
        return [MonthEntry(y, m, tuple(threads)) for (y, m), threads in found.items()]

    def month_marks(self, slug: str, months: Iterable[tuple[int, int]] | None = None) -> dict[tuple[int, int], str]:
        """Per month of a list (these, or all), a digest of the store's fingerprint of its
        messages when threaded and of which thread holds each of them: equal marks mean
        the same messages in the same threads. Months the cache does not know are left out."""
        fingerprints = self.fingerprints(slug)
        select = "SELECT year, month, call, thread FROM messages WHERE list = ?"
        if months is None:
            rows: Iterable[tuple[int, int, str, str]] = self.db.execute(f"{select} ORDER BY year, month, call", (slug,))
        else:
            rows = [
                row
                for year, month in sorted(set(months))
                for row in self.db.execute(f"{select} AND year = ? AND month = ? ORDER BY call", (slug, year, month))
            ]
        digests: dict[tuple[int, int], hashlib.blake2b] = {}
        for year, month, call, thread in rows:
            digest = digests.get((year, month))
            if digest is None:
                fingerprint = fingerprints.get((year, month))
                if fingerprint is None:
                    continue
                digest = digests[(year, month)] = hashlib.blake2b(fingerprint[0].encode(), digest_size=12)
            digest.update(f"\n{call} {thread}".encode())
        return {month: digest.hexdigest() for month, digest in digests.items()}

    def month(self, slug: str, year: int, month: int) -> MonthEntry:
        cursor = self.db.execute(
            "SELECT thread, count FROM thread_months WHERE list = ? AND year = ? AND month = ? ORDER BY thread",
            (slug, year, month),
        )
        return MonthEntry(year, month, tuple(cursor))

    def gone(self, slug: str) -> dict[str, str | None]:
        cursor = self.db.execute("SELECT id, successor FROM gone WHERE list = ?", (slug,))
        return dict(cursor.fetchall())

    def overrides(self, slug: str) -> dict[str, str | None]:
        """The overrides a list's threads were made with: call -> parent call or None."""
        cursor = self.db.execute("SELECT call, parent FROM overrides WHERE list = ?", (slug,))
        return dict(cursor.fetchall())

    def changed_since(self, generation: int) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str | None], set]:
        """Threads changed, thread names gone, and months changed after ``generation``."""
        threads = {(s, t) for s, t in self.db.execute("SELECT list, id FROM threads WHERE changed > ?", (generation,))}
        gone = {
            (s, t): successor
            for s, t, successor in self.db.execute(
                "SELECT list, id, successor FROM gone WHERE changed > ?", (generation,)
            )
        }
        months = {
            (s, y, m)
            for s, y, m in self.db.execute("SELECT list, year, month FROM months WHERE changed > ?", (generation,))
        }
        return threads, gone, months

    # -- writing (inside a transaction) ----------------------------------------------------

    def forget(self, slug: str, calls: Iterable[str], threads: Iterable[str]) -> None:
        """Remove messages and threads (before rewriting them).

        Keys are overwritten, never deleted: a key no message carries any more
        can only widen a later update's cluster lookup, never narrow it."""
        self.db.executemany("DELETE FROM messages WHERE call = ?", ((c,) for c in calls))
        thread_list = list(threads)
        self.db.executemany("DELETE FROM threads WHERE list = ? AND id = ?", ((slug, t) for t in thread_list))
        self.db.executemany("DELETE FROM thread_months WHERE list = ? AND thread = ?", ((slug, t) for t in thread_list))

    def add_messages(self, slug: str, entries: Iterable[tuple[str, int, int, str, str]]) -> None:
        """(call, year, month, cluster, thread) tuples."""
        self.db.executemany(
            f"INSERT INTO messages (call, list, year, month, cluster, thread) VALUES (?, {_quote(slug)}, ?, ?, ?, ?)",
            entries,
        )

    def add_keys(self, slug: str, keys: Iterable[tuple[str, str]]) -> None:
        """(key, cluster) pairs."""
        self.db.executemany(
            "INSERT OR REPLACE INTO keys (list, key, cluster) VALUES (?, ?, ?)", ((slug, k, c) for k, c in keys)
        )

    def add_threads(self, slug: str, threads: Iterable[ThreadEntry], generations: dict[str, int]) -> None:
        """Write threads; ``generations`` gives each one's ``changed`` generation."""
        items = list(threads)
        self.db.executemany(
            "INSERT INTO threads"
            " (list, id, missing_root, messages, authors, root_year, root_month, count, first, last, changed)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    slug,
                    t.id,
                    t.missing_root,
                    _to_json(t.messages),
                    _to_json(t.authors),
                    *t.root,
                    t.count,
                    t.first,
                    t.last,
                    generations[t.id],
                )
                for t in items
            ),
        )
        self.db.executemany(
            "INSERT INTO thread_months (list, year, month, thread, count) VALUES (?, ?, ?, ?, ?)",
            ((slug, y, m, t.id, n) for t in items for y, m, n in t.months),
        )

    def revisions(self, slug: str) -> dict[str, str]:
        """The revisions (``Index.revisions``) a list's threads were made with."""
        return dict(self.db.execute("SELECT call, token FROM revisions WHERE list = ?", (slug,)).fetchall())

    def set_revisions(self, slug: str, revisions: dict[str, str]) -> None:
        self.db.execute("DELETE FROM revisions WHERE list = ?", (slug,))
        self.db.executemany(
            "INSERT INTO revisions (list, call, token) VALUES (?, ?, ?)",
            ((slug, call, token) for call, token in sorted(revisions.items())),
        )

    def set_overrides(self, slug: str, overrides: dict[str, str | None]) -> None:
        """Record the overrides a list's threads are now made with."""
        self.db.execute("DELETE FROM overrides WHERE list = ?", (slug,))
        self.db.executemany(
            "INSERT INTO overrides (list, call, parent) VALUES (?, ?, ?)",
            ((slug, call, parent) for call, parent in sorted(overrides.items())),
        )

    def set_gone(self, slug: str, thread_id: str, successor: str | None, generation: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO gone (list, id, successor, changed) VALUES (?, ?, ?, ?)",
            (slug, thread_id, successor, generation),
        )

    def unset_gone(self, slug: str, thread_ids: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM gone WHERE list = ? AND id = ?", ((slug, t) for t in thread_ids))

    def set_month(
        self, slug: str, year: int, month: int, fingerprint: str, changed: int | None, *, empty: bool = False
    ) -> None:
        """Record a month's fingerprint, whether it holds no messages now, and, when
        given, the generation its thread list changed in (else the recorded one stays)."""
        if changed is None:
            row = self.db.execute(
                "SELECT changed FROM months WHERE list = ? AND year = ? AND month = ?", (slug, year, month)
            ).fetchone()
            changed = row[0] if row else 0
        self.db.execute(
            "INSERT OR REPLACE INTO months (list, year, month, fingerprint, changed, empty) VALUES (?, ?, ?, ?, ?, ?)",
            (slug, year, month, fingerprint, changed, int(empty)),
        )
