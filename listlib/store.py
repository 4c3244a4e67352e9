"""The call-numbered store in content/: durable filing, dedup, recovery, checking.

Layout::

    content/<slug>/<yyyy>/<mm>/<call>.eml    a message, byte-for-byte as received
    content/<slug>/<yyyy>/<mm>/<call>.json   only when its date did not come from
                                             its Date header (which date, from where)
    content/_no_list/<yyyy>/<mm>/<call>.eml  mail that matched no list
    content/_failed/<call>.eml + .json       mail that could not be filed, with the reason
    content/.index/index.sqlite              derived index (rebuilt from the files at will)
    content/.tmp/                            temporary files; only written under the lock
    content/.lock                            the store lock

A batch is filed under the store lock in this order: temporary files written;
index rows inserted as *pending* and committed; both made durable (one
``syncfs`` of the file system where Linux has it); files renamed into place and
their folders synced; rows marked *filed* and committed. An import's
``Pipeline`` runs the steps after the pending commit in a thread of its own
while the next batch is decided. Whoever
takes the lock next resolves pending rows by looking at the files, and removes
temporary files (no process holds one outside the lock). So a kill at any
instant loses nothing and files nothing twice. ``refile`` moves messages
between lists (``listlib unrouted --refile``) on top of that scheme: a journal of
the old copies is committed, the new copies are filed as a batch, then the old
ones are removed; the next lock holder finishes a journal a kill left. This
module never parses sources and never prints.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from .dedup import is_same_post
from .errors import StoreError
from .fsutil import (
    acquire_lock,
    fsync_dir,
    make_dirs,
    read_file,
    release_lock,
    same_file_system,
    sync_files,
    write_file,
)
from .index import PENDING, SCHEMA_VERSION, Index, Row
from .layout import encode_sidecar, iter_message_files, make_row, message_path, row_from_file
from .message import MessageFacts, parse_message
from .sqlfile import discard
from .values import (
    FAILED,
    call_number_from_int,
    call_number_to_int,
    tick_of_ms,
)

__all__ = ["Outcome", "Pipeline", "Prepared", "Store"]

Clock = Callable[[], float]
_WRITE_GROUP = 64
"""Temporary files handed to a writer thread at a time."""
_LOCK_TURN = 2.0
"""Seconds a pipeline holds the store lock before it lets other processes have a turn."""
_LOCK_GAP = 0.03
"""Seconds the lock stays free on such a turn (waiters try every 10 ms)."""
Status = Literal["filed", "duplicate", "collision", "failed"]
_REFILING = "refiling"
"""Index meta key: the journal of a refile in progress (JSON: [old call, list, raw hash] each)."""


class Prepared(NamedTuple):
    """A message ready to be filed: bytes, facts, destination and date."""

    raw: bytes
    facts: MessageFacts
    slug: str
    """A list slug, ``_no_list``, or ``_failed``."""
    date: int
    date_source: str
    origin: str
    reason: str | None = None
    """For ``_failed``: a short machine-readable code."""
    detail: str | None = None
    """For ``_failed``: a sentence saying what is wrong."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What filing did with one message."""

    status: Status
    call: str
    """Its call number, or for a duplicate the call number of the copy already filed."""
    origin: str
    message_id: str | None
    slug: str
    others: tuple[str, ...] = ()
    """For a collision: the call numbers that share its Message-ID."""


class Store:
    """The content/ folder of one site."""

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock = time.time,
        lock_timeout: float = 600.0,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.clock = clock
        self.fault = fault or _no_fault
        """Called at named points of a batch; crash tests pass one that kills the process."""
        self.lock_timeout = lock_timeout
        self.tmp_dir = root / ".tmp"
        self.index_path = root / ".index" / "index.sqlite"
        self._index: Index | None = None
        self._lock_fd: int | None = None
        self._known_dirs: set[str] = set()
        self._writers: ThreadPoolExecutor | None = None
        self._db_lock = threading.RLock()
        """Serializes the index between a pipeline's two threads."""
        self._in_flight: list[_Commit] = []
        """Batches a pipeline has decided but not yet put in place (dedup reads their bytes)."""
        self._root_str = str(root)
        self._tmp_str = str(self.tmp_dir)
        self._last_tick = 0
        self._index_shares_fs = False

    # -- opening, locking, recovery -------------------------------------------------

    def open(self, *, discard_damaged_index: bool = False) -> Store:
        """Open the store, creating it when missing; rebuild a missing or stale index.

        A damaged index is an error, unless ``discard_damaged_index``: then it is
        thrown away and rebuilt from the files (``listlib check --repair``).
        """
        if not self.root.is_dir():
            try:
                make_dirs(self.root)
            except OSError as exc:
                raise StoreError(f"{self.root}: cannot create the store: {exc.strerror}") from exc
        for folder in (self.tmp_dir, self.index_path.parent):
            folder.mkdir(exist_ok=True)
        try:
            # Under the lock, so that two processes never create the index at once. A
            # missing index (a fresh clone: it is git-ignored) or one from another
            # version is rebuilt from the files, once, by whoever gets the lock first.
            with self.locked(recover=False):
                self._index = Index(self.index_path)
                self._index_shares_fs = same_file_system(self.index_path.parent, self.root)
                if self._index.schema_version() != SCHEMA_VERSION:
                    self.rebuild_index()
        except sqlite3.DatabaseError as exc:
            if self._index is not None:
                self._index.close()
                self._index = None
            if not discard_damaged_index:
                raise StoreError(
                    f"{self.index_path}: the index is damaged ({exc}); run 'listlib check --repair' to rebuild it"
                ) from exc
            discard(self.index_path)  # asked for (``check --repair``): rebuilt from the files
            return self.open()
        return self

    @property
    def index(self) -> Index:
        if self._index is None:
            raise StoreError("the store is not open")
        return self._index

    def close(self) -> None:
        if self._writers is not None:
            self._writers.shutdown()
            self._writers = None
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def locked(self, *, recover: bool = True) -> Iterator[None]:
        """Hold the store lock; on entry, finish or undo whatever a killed process left
        (unless ``recover`` is False: a check reports what it finds)."""
        if self._lock_fd is not None:
            yield
            return
        self._lock_fd = self._take_lock()
        try:
            if recover:
                self._recover()
            yield
        finally:
            fd, self._lock_fd = self._lock_fd, None
            if fd is not None:
                release_lock(fd)

    def _take_lock(self) -> int:
        return acquire_lock(
            self.root / ".lock",
            self.lock_timeout,
            f"{self.root}: another listlib process has held the store lock for {self.lock_timeout:.0f} s; "
            "try again later",
        )

    def _let_others_in(self) -> None:
        """Release the held lock for a moment (waiters poll every 10 ms), then take it
        back and resolve whatever a process killed meanwhile left."""
        fd, self._lock_fd = self._lock_fd, None
        assert fd is not None
        release_lock(fd)
        time.sleep(_LOCK_GAP)
        self._lock_fd = self._take_lock()
        self._recover()

    def _recover(self) -> None:
        """Resolve pending rows and remove temporary files left by a killed process."""
        for entry in os.scandir(self.tmp_dir):
            os.unlink(entry.path)
        self._resolve_pending()
        self._finish_refiling()

    def _resolve_pending(self) -> None:
        pending = self.index.pending()
        if not pending:
            return
        present = {row.call for row in pending if (self.root / row.path).exists()}
        # Renamed into place before the kill, maybe without its folder synced.
        for folder in sorted({(self.root / row.path).parent for row in pending if row.call in present}):
            fsync_dir(folder)
        missing = [row for row in pending if row.call not in present]
        for row in missing:
            sidecar = (self.root / row.path).with_suffix(".json")
            if sidecar.exists():
                sidecar.unlink()
        self.index.begin()
        self.index.mark_filed(present)
        self.index.delete(row.call for row in missing)
        self.index.commit()

    # -- call numbers --------------------------------------------------------------

    def _refresh_high_water(self) -> None:
        """Catch up with call numbers other processes allocated (called under the lock)."""
        high = self.index.max_call()
        stored = self.index.get_meta("high_water")
        self._last_tick = max(
            self._last_tick,
            call_number_to_int(high) if high else 0,
            call_number_to_int(stored) if stored else 0,
        )

    def _allocate(self) -> str:
        tick = max(tick_of_ms(int(self.clock() * 1000)), self._last_tick + 1)
        self._last_tick = tick
        return call_number_from_int(tick)

    # -- filing --------------------------------------------------------------------

    def _read_filed(self, row: Row, batch: _Batch) -> bytes:
        if row.call in batch.raw:
            return batch.raw[row.call]
        for commit in self._in_flight:  # decided in an earlier batch, not yet in place
            if row.call in commit.raw:
                return commit.raw[row.call]
        try:
            return read_file(os.path.join(self._root_str, row.path))
        except OSError:
            return b""

    def _dedup(self, item: Prepared, batch: _Batch) -> Outcome | tuple[str, ...]:
        """The duplicate outcome when ``item`` is already filed, else the call numbers
        of different messages that share its Message-ID (a collision when not empty)."""
        facts = item.facts
        slug, mid = item.slug, facts.message_id
        if slug == FAILED:
            mid = None
        candidates = batch.candidates(slug, facts.raw_hash, mid)
        for row in candidates:
            if row.raw_hash == facts.raw_hash:
                return Outcome("duplicate", row.call, item.origin, facts.message_id, slug)
        if slug == FAILED:
            return ()
        if mid:
            for row in candidates:
                if row.vitals == facts.vitals:
                    return Outcome("duplicate", row.call, item.origin, mid, slug)
                other_raw = self._read_filed(row, batch)
                if is_same_post(facts, item.raw, parse_message(other_raw), other_raw):
                    return Outcome("duplicate", row.call, item.origin, mid, slug)
            return tuple(sorted(row.call for row in candidates))
        row = batch.without_id(slug, facts.vitals)
        if row is not None:
            return Outcome("duplicate", row.call, item.origin, None, slug)
        return ()

    def _ensure_dir(self, folder: str) -> None:
        if folder not in self._known_dirs:
            make_dirs(Path(folder))
            self._known_dirs.add(folder)

    def file_batch(self, items: list[Prepared], *, dry_run: bool = False) -> list[Outcome]:
        """File a batch durably and exactly once; return one outcome per item, in order.

        A message counts as filed only when this returns: its bytes are durable in
        place and its index row is committed. With ``dry_run`` nothing is written
        or committed, but decisions are the same (within one dry run, too: the
        caller holds the lock and ``end_dry_run`` rolls the open transaction back).
        """
        with self.locked():
            with self._db_lock:
                outcomes, commit = self._decide(items, dry_run=dry_run)
            if commit is not None:
                self._put_in_place(commit)
        return outcomes

    @contextmanager
    def pipeline(self) -> Iterator[Pipeline]:
        """File many batches, each one's wait for the disk overlapping the next one's
        decisions (see ``Pipeline``); holds the store lock, letting others in between
        batches every ``_LOCK_TURN`` seconds."""
        with self.locked():
            pipeline = Pipeline(self)
            try:
                yield pipeline
            except BaseException:
                pipeline.stop()
                raise
            pipeline.finish()

    def end_dry_run(self) -> None:
        """Forget everything a dry run decided."""
        self.index.rollback()
        self._last_tick = 0

    def _decide(self, items: list[Prepared], *, dry_run: bool) -> tuple[list[Outcome], _Commit | None]:
        """The first half of filing a batch (under the lock): dedup, call numbers,
        temporary files handed to the writer, index rows committed as *pending*.
        Returns the outcomes and what ``_put_in_place`` must do (None for a dry run)."""
        outcomes: list[Outcome] = []
        index = self.index
        if not index.db.in_transaction:
            index.begin(synced=False)  # made durable with the files (_put_in_place)
        self._refresh_high_water()
        batch = _Batch(index, items)
        commit = _Commit()
        try:
            for item in items:
                others = self._dedup(item, batch)
                if isinstance(others, Outcome):
                    outcomes.append(others)
                    continue
                call = self._allocate()
                row = _row_for(item, call, message_path(item.slug, item.date, call), bool(others))
                batch.add(row, item.raw)
                status: Status = "failed" if item.slug == FAILED else ("collision" if others else "filed")
                outcomes.append(Outcome(status, call, item.origin, item.facts.message_id, item.slug, others))
                if not dry_run:
                    self._write_temp(item, row, commit)
            index.insert_many(batch.rows)
            if dry_run:
                return outcomes, None
            commit.submit(self._writer_pool)
            commit.calls = [row.call for row in batch.rows]
            commit.raw = batch.raw
            if commit.calls:
                index.set_meta("high_water", call_number_from_int(self._last_tick))
            index.commit()  # pending rows; durable once _put_in_place has synced
        except BaseException:
            commit.cancel()  # never leave a writer running past the lock
            index.rollback()
            raise
        self.fault("pending-committed")
        return outcomes, commit

    def _put_in_place(self, commit: _Commit) -> None:
        """The second half (still under the lock): temporary files and pending rows made
        durable, files renamed into place and their folders synced, rows marked filed."""
        commit.wait()
        self.fault("temp-written")
        whole_fs = sync_files((tmp for tmp, _ in commit.writes), self.root)
        if not (whole_fs and self._index_shares_fs):
            with self._db_lock:
                self.index.sync()
        self.fault("temp-synced")  # the rows are durable as pending, the files as temporary files
        touched: set[str] = set()
        for tmp, final in commit.writes:
            folder = os.path.dirname(final)
            self._ensure_dir(folder)
            os.rename(tmp, final)
            touched.add(folder)
            self.fault("renamed")
        for folder in sorted(touched):
            fsync_dir(Path(folder))
        self.fault("folders-synced")
        # The files are durable: these messages are filed. A crash before this
        # commit leaves their rows pending, and recovery finds the files.
        with self._db_lock:
            self.index.mark_filed_lazily(commit.calls)
        self.fault("marked")

    @property
    def _writer_pool(self) -> ThreadPoolExecutor:
        # One thread: file writes release the GIL, so it overlaps the deciding; a
        # second one would mostly wait for (or, in the kernel, spin on) the lock of
        # the one temporary folder both create files in.
        if self._writers is None:
            self._writers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="listlib-writer")
        return self._writers

    def _write_temp(self, item: Prepared, row: Row, commit: _Commit) -> None:
        """Write a message (and its sidecar) as temporary files."""
        final = os.path.join(self._root_str, row.path)
        tmp_dir = self._tmp_str
        meta = encode_sidecar(item.slug, item.date, item.date_source, item.origin, item.reason, item.detail)
        if meta is not None:
            commit.add(f"{tmp_dir}/{row.call}.json", final[: -len(".eml")] + ".json", meta, self._writer_pool)
        commit.add(f"{tmp_dir}/{row.call}.eml", final, item.raw, self._writer_pool)

    # -- moving messages between lists ---------------------------------------------

    def refile(self, moves: list[tuple[Row, Prepared]]) -> list[Outcome]:
        """Move filed messages to another list (``listlib unrouted --refile``): each
        ``Prepared`` is filed as a batch (new call numbers, dedup against its list),
        then the rows it came from are removed with their files.

        The qmail order: a journal naming the old rows is committed first, the new
        copies are made durable, only then are the old files unlinked and their rows
        deleted. A kill at any instant leaves the journal, and whoever takes the lock
        next finishes it (``_finish_refiling``): an old copy is removed only when its
        file is already gone or its list holds the same bytes. Nothing is lost, and
        nothing stays filed twice.
        """
        if not moves:
            return []
        with self.locked():
            journal = [[row.call, item.slug, item.facts.raw_hash] for row, item in moves]
            with self._db_lock:
                self.index.begin()
                self.index.set_meta(_REFILING, json.dumps(journal))
                self.index.commit()
            self.fault("refile-journaled")
            outcomes = self.file_batch([item for _, item in moves])
            self.fault("refile-filed")
            self._remove_moved([row for row, _ in moves])
        return outcomes

    def _remove_moved(self, rows: list[Row]) -> None:
        """Unlink the old copies of refiled messages, then delete their rows and the journal."""
        for row in rows:
            path = self.root / row.path
            path.unlink(missing_ok=True)
            path.with_suffix(".json").unlink(missing_ok=True)
            self.fault("refile-unlinked")
        for folder in sorted({(self.root / row.path).parent for row in rows}):
            if folder.is_dir():
                fsync_dir(folder)
        with self._db_lock:
            self.index.begin()
            self.index.delete(row.call for row in rows)
            self.index.db.execute("DELETE FROM meta WHERE key = ?", (_REFILING,))
            self.index.commit()
        self.fault("refile-done")

    def refile_interrupted(self) -> bool:
        """Whether a killed refile left its journal (the next lock holder finishes it)."""
        return self.index.get_meta(_REFILING) is not None

    def _finish_refiling(self) -> None:
        """Finish a refile a killed process left (called under the lock, after pending rows
        are resolved, so the new copies it made are filed or gone)."""
        text = self.index.get_meta(_REFILING)
        if text is None:
            return
        done: list[Row] = []
        for call, slug, digest in json.loads(text):
            found = self.index.rows_by_call([call])
            if not found:
                continue
            row = found[0]
            if not (self.root / row.path).exists() or self.index.find_related(slug, [digest], (), ()):
                done.append(row)
        self._remove_moved(done)

    # -- index rebuild, check, repair ------------------------------------------------

    def rebuild_index(self) -> list[str]:
        """Replace the index with one read from the files; return the files that were refused."""
        index = self.index
        refused: list[str] = []
        index.begin()
        try:
            index.clear()
            rows: list[Row] = []
            for rel, path in iter_message_files(self.root):
                row = row_from_file(rel, path)
                if isinstance(row, str):
                    refused.append(row)
                    continue
                rows.append(row)
                if len(rows) >= 1000:
                    index.insert_many(rows)
                    rows = []
            index.insert_many(rows)
            index.db.execute(
                "UPDATE messages SET collision = 1 WHERE message_id IS NOT NULL AND EXISTS ("
                "SELECT 1 FROM messages AS m WHERE m.list = messages.list "
                "AND m.message_id = messages.message_id AND m.call < messages.call)"
            )
            high = index.max_call()
            stored = index.get_meta("high_water")
            if stored and (not high or stored > high):
                high = stored
            if high:
                index.set_meta("high_water", high)
            index.set_meta("schema_version", str(SCHEMA_VERSION))
            index.commit()
        except BaseException:
            index.rollback()
            raise
        self._last_tick = 0
        return refused


class _Batch:
    """What dedup of one batch looks at: the related rows already in the index
    (fetched once for the whole batch) and the rows the batch itself adds."""

    def __init__(self, index: Index, items: list[Prepared]) -> None:
        self.rows: list[Row] = []
        """The rows this batch adds, in filing order."""
        self.raw: dict[str, bytes] = {}
        self._by_key: dict[tuple[str, str], list[Row]] = {}
        by_slug: dict[str, list[Prepared]] = {}
        for item in items:
            by_slug.setdefault(item.slug, []).append(item)
        for slug, group in by_slug.items():
            related = index.find_related(
                slug,
                {i.facts.raw_hash for i in group},
                {i.facts.message_id for i in group if i.facts.message_id and slug != FAILED},
                {i.facts.vitals for i in group if not i.facts.message_id and slug != FAILED},
            )
            for row in related:
                self._remember(row)

    def _remember(self, row: Row) -> None:
        self._by_key.setdefault((row.list, row.raw_hash), []).append(row)
        if row.message_id:
            self._by_key.setdefault((row.list, "<" + row.message_id), []).append(row)
        else:
            self._by_key.setdefault((row.list, "~" + row.vitals), []).append(row)

    def add(self, row: Row, raw: bytes) -> None:
        self.rows.append(row)
        self.raw[row.call] = raw
        self._remember(row)

    def candidates(self, slug: str, raw_hash: str, message_id: str | None) -> list[Row]:
        """Rows with these exact bytes or this Message-ID, oldest first."""
        found = list(self._by_key.get((slug, raw_hash), ()))
        if message_id:
            found += [r for r in self._by_key.get((slug, "<" + message_id), ()) if r not in found]
        return sorted(found)

    def without_id(self, slug: str, vitals: str) -> Row | None:
        """The oldest row without a Message-ID whose vitals match."""
        rows = self._by_key.get((slug, "~" + vitals))
        return min(rows) if rows else None


def _row_for(item: Prepared, call: str, path: str, collision: bool) -> Row:
    return make_row(
        item.facts,
        call=call,
        path=path,
        state=PENDING,
        size=len(item.raw),
        date=item.date,
        date_source=item.date_source,
        collision=collision,
        reason=item.reason,
        origin=item.origin,
    )


class _Commit:
    """One decided batch on its way into place: its temporary files (written by the
    writer thread, in groups: a future per file costs more than writing a small
    file), its call numbers, and its bytes by call number."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []
        """(temporary, final) paths."""
        self.calls: list[str] = []
        self.raw: dict[str, bytes] = {}
        self._group: list[tuple[str, bytes]] = []
        self._futures: list[Future[None]] = []

    def add(self, temp: str, final: str, data: bytes, pool: ThreadPoolExecutor) -> None:
        self.writes.append((temp, final))
        self._group.append((temp, data))
        if len(self._group) >= _WRITE_GROUP:
            self.submit(pool)

    def submit(self, pool: ThreadPoolExecutor) -> None:
        """Hand the files not yet handed over to the writer."""
        if self._group:
            self._futures.append(pool.submit(_write_group, self._group))
            self._group = []

    def wait(self) -> None:
        """Wait until every temporary file is written; raise the first error."""
        errors = [exc for exc in (future.exception() for future in self._futures) if exc is not None]
        if errors:
            raise errors[0]

    def cancel(self) -> None:
        self._group = []
        for future in self._futures:
            future.exception()


class Pipeline:
    """Files batches in two overlapping halves (``Store.pipeline``).

    ``submit`` decides a batch in the caller's thread (dedup, call numbers, rows
    committed as pending) and queues the rest; a thread of its own waits for the
    disk, renames the files into place and marks the rows filed, batch after
    batch in order, then calls the batch's ``done`` with its outcomes. So ``done``
    is called for a batch only once its messages are durable, and never after a
    batch failed: the first failure stops the pipeline and is raised by the next
    ``submit`` or by ``finish``. A kill at any instant leaves pending rows that
    the next lock holder resolves, exactly as for ``file_batch``.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._queue: queue.Queue[tuple[_Commit, list[Outcome], Callable[[list[Outcome]], None]] | None]
        self._queue = queue.Queue(maxsize=1)
        self._failure: BaseException | None = None
        self._turn_started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="listlib-committer", daemon=True)
        self._thread.start()

    def submit(self, items: list[Prepared], done: Callable[[list[Outcome]], None]) -> None:
        """Decide a batch now; put it in place in the background, then call ``done``."""
        self._raise_failure()
        store = self._store
        if time.monotonic() - self._turn_started > _LOCK_TURN:
            self._drain()
            store._let_others_in()
            self._turn_started = time.monotonic()
        with store._db_lock:
            outcomes, commit = store._decide(items, dry_run=False)
            assert commit is not None
            store._in_flight.append(commit)
        self._queue.put((commit, outcomes, done))

    def finish(self) -> None:
        """Wait until every submitted batch is in place, end the thread; raise the first failure."""
        self.stop()
        self._raise_failure()

    def stop(self) -> None:
        """Let the batches already queued finish (or fail) and end the thread."""
        self._queue.put(None)
        self._thread.join()

    def _drain(self) -> None:
        self._queue.join()
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        store = self._store
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                commit, outcomes, done = item
                if self._failure is None:
                    try:
                        store._put_in_place(commit)
                        done(outcomes)
                    except BaseException as exc:  # handed to the submitting thread
                        self._failure = exc
                with store._db_lock:
                    store._in_flight.remove(commit)
            finally:
                self._queue.task_done()


def _write_group(group: list[tuple[str, bytes]]) -> None:
    for path, data in group:
        write_file(path, data, sync=False)


def _no_fault(point: str) -> None:
    return None
