"""What the search index holds, remembered in ``.cache/search.sqlite`` (derived data).

Per list and month the store fingerprint it was indexed at; per indexed message its
raw-bytes hash and where it lives (segment, doc number); and the manifest
generation it matches. When that generation is not the one in ``output/search/``
(a crash between the two, an emptied output) the index is rebuilt. And every file of
the index with its digest, size and mtime, and the mtime of its folders, for the
next update to find files deleted or edited since (``files``, ``folders``). For
the length of one update, the messages it adds (``stage``) and the files it writes
(``note_made``): in temporary tables (a file of SQLite's, not memory), the messages
numbered in doc-number order, so that an update holds none of them but the run being
indexed, nor a record of every file it wrote. Knows SQL only.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..sqlfile import CACHE_KIB, files_changed, files_stamp, open_derived

__all__ = ["SearchState"]

_VERSION = "2"
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
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, digest TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL) WITHOUT ROWID;
"""


_PREFIX_END = "\U0010ffff"
"""After every path that starts with a given prefix (``path >= prefix AND path < prefix + _PREFIX_END``)."""


class SearchState:
    def __init__(self, path: Path) -> None:
        self.db = open_derived(path, _SCHEMA, _VERSION)
        self._temporary = False

    def close(self) -> None:
        self.db.close()

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def clear(self) -> None:
        self.db.executescript(
            "BEGIN; DELETE FROM months; DELETE FROM docs; DELETE FROM meta WHERE key != 'version';"
            " DELETE FROM files; DELETE FROM folders; COMMIT;"
        )
        self._files_changed()

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

    def move_docs(self, moves: Iterable[tuple[str, int, str]]) -> None:
        """(segment, doc, call): where merged messages live now."""
        self.db.executemany("UPDATE docs SET segment = ?, doc = ? WHERE call = ?", moves)

    def files(self) -> dict[str, tuple[str, int, int]]:
        """Path under ``search/`` -> (digest, size, mtime_ns) of every file of the index."""
        return {path: (digest, size, mtime) for path, digest, size, mtime in self.db.execute("SELECT * FROM files")}

    def has_files(self) -> bool:
        return self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None

    def files_in(self, folders: Iterable[str]) -> dict[str, tuple[str, int, int]]:
        """``files`` directly in these folders ("" is ``search/`` itself)."""
        found: dict[str, tuple[str, int, int]] = {}
        for folder in folders:
            prefix = f"{folder}/" if folder else ""
            cursor = self.db.execute("SELECT * FROM files WHERE path >= ? AND path < ?", (prefix, prefix + _PREFIX_END))
            found.update((path, (d, size, m)) for path, d, size, m in cursor if "/" not in path[len(prefix) :])
        return found

    def recorded_segments(self) -> set[str]:
        """The segments whose files are recorded: those with a folder mark (``seg/<id>``),
        which is written in the same transaction as their files (a few rows, where the
        files are thousands)."""
        cursor = self.db.execute("SELECT path FROM folders WHERE path LIKE 'seg/%'")
        return {path[4:] for (path,) in cursor}

    def forget_segments(self, segments: Iterable[str]) -> None:
        """Forget the files of these segments."""
        changed = False
        for sid in segments:
            prefix = f"seg/{sid}/"
            self.db.execute("DELETE FROM files WHERE path >= ? AND path < ?", (prefix, prefix + _PREFIX_END))
            changed = True
        if changed:
            self._files_changed()

    def set_files(self, add: Iterable[tuple[str, str, int, int]], remove: Iterable[str]) -> None:
        """Record (path, digest, size, mtime_ns) of files written; forget files removed."""
        removed = self.db.executemany("DELETE FROM files WHERE path = ?", ((p,) for p in remove)).rowcount
        added = self.db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", add).rowcount
        if removed or added:
            self._files_changed()

    def files_stamp(self) -> str | None:
        """See ``sqlfile.files_stamp``."""
        return files_stamp(self.db)

    def _files_changed(self) -> None:
        files_changed(self.db)

    def folders(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT path, mtime FROM folders"))

    def set_folders(self, marks: dict[str, int | None]) -> None:
        """Replace the folder marks (None: the folder is gone)."""
        self.db.execute("DELETE FROM folders")
        self.db.executemany("INSERT INTO folders VALUES (?, ?)", ((p, m) for p, m in marks.items() if m is not None))

    def _use_temporary(self) -> None:
        """Put the temporary tables in a file, with a small cache (once: setting
        temp_store again would drop every temporary table)."""
        if not self._temporary:
            # Setting temp_store makes the temporary tables' file anew, with SQLite's default cache.
            self.db.executescript(f"PRAGMA temp_store = FILE; PRAGMA temp.cache_size = -{CACHE_KIB};")
            self._temporary = True

    def start_made(self) -> None:
        """Start recording the files this update writes (none yet): ``note_made``."""
        self._use_temporary()
        self.db.executescript(
            "DROP TABLE IF EXISTS temp.made; CREATE TEMP TABLE made (path TEXT PRIMARY KEY, digest TEXT NOT NULL,"
            " size INTEGER NOT NULL, mtime INTEGER NOT NULL) WITHOUT ROWID;"
        )

    def note_made(self, files: Iterable[tuple[str, str, int, int]]) -> None:
        """(path, digest, size, mtime_ns) of files written (the last noted of a path counts)."""
        self.db.executemany("INSERT OR REPLACE INTO temp.made VALUES (?, ?, ?, ?)", files)

    def made_among(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` noted as written."""
        marks = ",".join("?" * len(paths))
        return {path for (path,) in self.db.execute(f"SELECT path FROM temp.made WHERE path IN ({marks})", paths)}

    def record_made(self, folders: Iterable[str]) -> None:
        """Record the files noted as written under these folders (``seg/<id>``) as ``set_files`` does."""
        added = 0
        for folder in folders:
            prefix = f"{folder}/"
            added += self.db.execute(
                "INSERT OR REPLACE INTO files SELECT * FROM temp.made WHERE path >= ? AND path < ?",
                (prefix, prefix + _PREFIX_END),
            ).rowcount
        if added:
            self._files_changed()

    def stage(self) -> None:
        """Start staging the messages to add (none yet): ``stage_rows``, then ``number_staged``."""
        self._use_temporary()
        self.db.executescript(
            "DROP TABLE IF EXISTS temp.incoming; DROP TABLE IF EXISTS temp.staged;"
            " CREATE TEMP TABLE incoming (list TEXT NOT NULL, date INTEGER NOT NULL, call TEXT NOT NULL,"
            " year INTEGER NOT NULL, month INTEGER NOT NULL, raw_hash TEXT NOT NULL, row BLOB NOT NULL);"
            " CREATE TEMP TABLE staged (doc INTEGER PRIMARY KEY, call TEXT NOT NULL, list TEXT NOT NULL,"
            " year INTEGER NOT NULL, month INTEGER NOT NULL, raw_hash TEXT NOT NULL, row BLOB NOT NULL);"
        )

    def stage_rows(self, rows: Iterable[tuple[str, int, str, int, int, str, bytes]]) -> None:
        """(list, date, call, year, month, raw_hash, row) of messages to add; ``row``: what
        the caller needs of it again, as bytes."""
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO incoming VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        self.db.execute("COMMIT")

    def number_staged(self) -> int:
        """Number the messages staged from 0 in (list, date, call) order (doc-number order:
        text compares as Python compares it); how many there are."""
        self.db.executescript(
            "BEGIN; INSERT INTO staged SELECT row_number() OVER (ORDER BY list, date, call) - 1,"
            " call, list, year, month, raw_hash, row FROM incoming; DELETE FROM incoming; COMMIT;"
        )
        return int(self.db.execute("SELECT count(*) FROM staged").fetchone()[0])

    def staged_rows(self, start: int, end: int) -> list[bytes]:
        """The ``row`` of the messages staged numbered from ``start`` to before ``end``, in order."""
        cursor = self.db.execute("SELECT row FROM staged WHERE doc >= ? AND doc < ? ORDER BY doc", (start, end))
        return [row for (row,) in cursor]

    def add_staged_docs(self, segment: str, start: int, end: int) -> None:
        """Record the messages staged numbered from ``start`` to before ``end`` as the
        documents of ``segment`` from 0."""
        self.db.execute(
            "INSERT OR REPLACE INTO docs SELECT call, list, year, month, raw_hash, ?, doc - ? FROM staged"
            " WHERE doc >= ? AND doc < ? ORDER BY doc",
            (segment, start, start, end),
        )

    def unstage(self) -> None:
        self.db.executescript("DROP TABLE IF EXISTS temp.incoming; DROP TABLE IF EXISTS temp.staged;")

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")
