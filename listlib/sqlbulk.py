"""Many rows in one SQLite statement.

``executemany`` steps its statement once per row and releases the GIL around
every step; while another thread of the process runs Python code (an import's
reader thread, say), each step then waits up to a switch interval to get the
GIL back, which made filing 20,000 rows take seconds instead of milliseconds.
Here a whole batch travels as one JSON parameter unpacked by ``json_each``:
one step, one GIL handoff. Values that JSON cannot carry exactly through
SQLite (text with NUL characters, which SQLite's JSON functions cut short)
fall back to ``executemany``. Nothing here knows about mail.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

__all__ = ["insert_rows", "where_in"]


def _select(width: int) -> str:
    if sqlite3.sqlite_version_info >= (3, 38, 0):
        columns = ", ".join(f"value ->> {i}" for i in range(width))  # a third faster
    else:
        columns = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(width))
    return f"SELECT {columns} FROM json_each(?)"


def insert_rows(db: sqlite3.Connection, head: str, width: int, rows: Iterable[Sequence[object]]) -> None:
    """Run ``head`` (``INSERT [OR REPLACE] INTO table [(columns)]``) for rows of ``width`` values."""
    rows = list(rows)
    if not rows:
        return
    payload = json.dumps(rows, ensure_ascii=False)
    if "\\u0000" in payload:
        db.executemany(f"{head} VALUES ({', '.join('?' * width)})", rows)
    else:
        db.execute(f"{head} {_select(width)}", (payload,))


def where_in(db: sqlite3.Connection, statement: str, keys: Iterable[str | int]) -> None:
    """Run ``statement`` (ending in ``WHERE column``) for every key: ``... WHERE column IN (keys)``."""
    keys = list(keys)
    if not keys:
        return
    payload = json.dumps(keys, ensure_ascii=False)
    if "\\u0000" in payload:
        db.executemany(f"{statement} = ?", ((key,) for key in keys))
    else:
        db.execute(f"{statement} IN (SELECT value FROM json_each(?))", (payload,))
