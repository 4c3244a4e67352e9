"""What the search index holds, remembered in ``.cache/search.sqlite`` (derived data).

Per list and month the store fingerprint it was indexed at; per indexed message its
raw-bytes hash and where it lives (segment, doc number); and the manifest
generation it matches. When that generation is not the one in ``output/search/``
(a crash between the two, an emptied output) the index is rebuilt. Knows SQL only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from ..sqlfile import connect

__all__ = ["SearchState"]

_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS months (
    list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL, fingerprint TEXT NOT NULL,
    PRIMARY KEY (list, year, month)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    call TEXT PRIMARY KEY, list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL,
    raw_hash TEXT NOT NULL, segment TEXT NOT NULL, doc INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_by_month ON docs (list, year, month);
CREATE INDEX IF NOT EXISTS docs_by_segment ON docs (segment);
"""


class SearchState:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = self._connect(path)
        except sqlite3.DatabaseError:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            self.db = self._connect(path)

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        version = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if version is None or version[0] != _VERSION:
            db.executescript("DELETE FROM meta; DELETE FROM months; DELETE FROM docs;")
            db.execute("INSERT INTO meta VALUES ('version', ?)", (_VERSION,))
        return db

    def close(self) -> None:
        self.db.close()

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def clear(self) -> None:
        self.db.executescript(
            "BEGIN; DELETE FROM months; DELETE FROM docs; DELETE FROM meta WHERE key != 'version'; COMMIT;"
        )

    def months(self) -> dict[tuple[str, int, int], str]:
        return {(s, y, m): fp for s, y, m, fp in self.db.execute("SELECT list, year, month, fingerprint FROM months")}

    def month_docs(self, slug: str, year: int, month: int) -> dict[str, tuple[str, str, int]]:
        """call -> (raw_hash, segment, doc) of the indexed messages of one month."""
        cursor = self.db.execute(
            "SELECT call, raw_hash, segment, doc FROM docs WHERE list = ? AND year = ? AND month = ?",
            (slug, year, month),
        )
        return {call: (raw_hash, segment, doc) for call, raw_hash, segment, doc in cursor}

    def set_month(self, slug: str, year: int, month: int, fingerprint: str | None) -> None:
        if fingerprint is None:
            self.db.execute("DELETE FROM months WHERE list = ? AND year = ? AND month = ?", (slug, year, month))
        else:
            self.db.execute("INSERT OR REPLACE INTO months VALUES (?, ?, ?, ?)", (slug, year, month, fingerprint))

    def remove_docs(self, calls: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM docs WHERE call = ?", ((c,) for c in calls))

    def add_docs(self, rows: Iterable[tuple[str, str, int, int, str, str, int]]) -> None:
        """(call, list, year, month, raw_hash, segment, doc) of newly indexed messages."""
        self.db.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def move_docs(self, moves: Iterable[tuple[str, int, str]]) -> None:
        """(segment, doc, call): where merged messages live now."""
        self.db.executemany("UPDATE docs SET segment = ?, doc = ? WHERE call = ?", moves)

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")
