"""Many rows in few SQLite statements.

``executemany`` steps its statement once per row and releases the GIL around
every step; while another thread of the process runs Python code (an import's
reader thread, say), each step then waits up to a switch interval to get the
GIL back, which made filing 20,000 rows take seconds instead of milliseconds.
Here rows travel as the parameters of one multi-row ``VALUES`` statement: one
step, one GIL handoff, for up to 1,024 rows. Statements come in a few sizes
(1, 4, 16, ... rows) so that each is compiled once per connection; a short
last group is padded with rows of NULLs that a marker column filters out.
(An earlier version passed the rows as one JSON text unpacked by
``json_each``; SQLite then parses each row's JSON again for every column,
five times slower than binding.) Nothing here knows about mail.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

__all__ = ["insert_rows", "where_in"]

_MAX_ROWS = 1024
_GROWTH = 4


def _sizes(db: sqlite3.Connection, width: int) -> list[int]:
    """Rows per statement, smallest first, within SQLite's limit on parameters."""
    most = min(_MAX_ROWS, max(1, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // (width + 1)))
    sizes = [1]
    while sizes[-1] * _GROWTH <= most:
        sizes.append(sizes[-1] * _GROWTH)
    if sizes[-1] < most:
        sizes.append(most)
    return sizes


def _statement(head: str, width: int, rows: int) -> str:
    row = "(" + ", ".join("?" * (width + 1)) + ")"
    columns = ", ".join(f"column{i}" for i in range(2, width + 2))
    return f"{head} SELECT {columns} FROM (VALUES {', '.join([row] * rows)}) WHERE column1 IS NOT NULL"


def insert_rows(db: sqlite3.Connection, head: str, width: int, rows: Iterable[Sequence[object]]) -> None:
    """Run ``head`` (``INSERT [OR REPLACE] INTO table [(columns)]``) for rows of ``width`` values, in order."""
    rows = list(rows)
    if not rows:
        return
    sizes = _sizes(db, width)
    padding = (None,) * (width + 1)
    start = 0
    while start < len(rows):
        left = len(rows) - start
        size = next((s for s in sizes if s >= left), sizes[-1])
        params: list[object] = []
        for row in rows[start : start + size]:
            params.append(1)
            params.extend(row)
        params.extend(padding * (size - min(size, left)))
        db.execute(_statement(head, width, size), params)
        start += size


def where_in(db: sqlite3.Connection, statement: str, keys: Iterable[str | int]) -> None:
    """Run ``statement`` (ending in ``WHERE column``) for every key: ``... WHERE column IN (keys)``.

    The keys travel as one JSON array (parsed once by ``json_each``); keys JSON
    cannot carry exactly through SQLite (text with NUL characters, which
    SQLite's JSON functions cut short) fall back to ``executemany``.
    """
    keys = list(keys)
    if not keys:
        return
    payload = json.dumps(keys, ensure_ascii=False)
    if "\\u0000" in payload:
        db.executemany(f"{statement} = ?", ((key,) for key in keys))
    else:
        db.execute(f"{statement} IN (SELECT value FROM json_each(?))", (payload,))
