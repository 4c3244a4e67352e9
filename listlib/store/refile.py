"""Moving filed messages between lists (``listlib unrouted --refile``) on top of the
store's filing: a journal of the old copies is committed, the new copies are filed as
a batch, then the old ones are removed; the next lock holder finishes a journal a kill
left. It never removes an old copy before the new one is durable, so nothing is lost
and nothing stays filed twice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..fsutil import fsync_dir
from .batch import Outcome, Prepared
from .index import Index, Row

if TYPE_CHECKING:
    from .core import Store

__all__ = ["finish_refiling", "refile_interrupted", "refile_messages"]

_REFILING = "refiling"
"""Index meta key: the journal of a refile in progress (JSON: [old call, list, raw hash] each)."""


def refile_messages(store: Store, moves: list[tuple[Row, Prepared]]) -> list[Outcome]:
    """Move filed messages to another list: each ``Prepared`` is filed as a batch (new
    call numbers, dedup against its list), then the rows it came from are removed with
    their files.

    The qmail order: a journal naming the old rows is committed first, the new
    copies are made durable, only then are the old files unlinked and their rows
    deleted. A kill at any instant leaves the journal, and whoever takes the lock
    next finishes it (``finish_refiling``): an old copy is removed only when its
    file is already gone or its list holds the same bytes. Nothing is lost, and
    nothing stays filed twice.
    """
    if not moves:
        return []
    with store.locked():
        journal = [[row.call, item.slug, item.facts.raw_hash] for row, item in moves]
        with store._db_lock:
            store.index.begin()
            store.index.set_meta(_REFILING, json.dumps(journal))
            store.index.commit()
        store.fault("refile-journaled")
        outcomes = store.file_batch([item for _, item in moves])
        store.fault("refile-filed")
        _remove_moved(store, [row for row, _ in moves])
    return outcomes


def _remove_moved(store: Store, rows: list[Row]) -> None:
    """Unlink the old copies of refiled messages, then delete their rows and the journal."""
    for row in rows:
        path = store.root / row.path
        path.unlink(missing_ok=True)
        path.with_suffix(".json").unlink(missing_ok=True)
        store.fault("refile-unlinked")
    for folder in sorted({(store.root / row.path).parent for row in rows}):
        if folder.is_dir():
            fsync_dir(folder)
    with store._db_lock:
        store.index.begin()
        store.index.delete(row.call for row in rows)
        store.index.db.execute("DELETE FROM meta WHERE key = ?", (_REFILING,))
        store.index.commit()
    store.fault("refile-done")


def refile_interrupted(index: Index) -> bool:
    """Whether a killed refile left its journal (the next lock holder finishes it)."""
    return index.get_meta(_REFILING) is not None


def finish_refiling(store: Store) -> None:
    """Finish a refile a killed process left (called under the lock, after pending rows
    are resolved, so the new copies it made are filed or gone)."""
    text = store.index.get_meta(_REFILING)
    if text is None:
        return
    done: list[Row] = []
    for call, slug, digest in json.loads(text):
        found = store.index.rows_by_call([call])
        if not found:
            continue
        row = found[0]
        if not (store.root / row.path).exists() or store.index.find_related(slug, [digest], (), ()):
            done.append(row)
    _remove_moved(store, done)
