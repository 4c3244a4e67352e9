"""Opening listlib's SQLite files: every connection knows the file it belongs to.

SQLite reports a full disk or a failing one as ``database or disk is full`` /
``disk I/O error`` without saying which file; a user seeing that from a cron job
cannot tell the store from the cache. Connections made by ``connect`` turn those
errors into ``DiskError`` naming the file, on every statement and commit. Other
SQLite errors (a damaged cache file, say) pass through unchanged: callers that
rebuild a damaged derived file rely on seeing them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import DiskError

__all__ = ["connect"]

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
    db = sqlite3.connect(path, factory=_Connection, **options)
    db.path = str(path)  # type: ignore[attr-defined]
    return db
