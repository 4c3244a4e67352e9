"""The ``Store``: the content/ folder of one site, its lock and the recovery whoever takes
the lock runs, call numbers, the two halves of filing a batch (``_decide`` under the
lock, ``_put_in_place`` once the disk has the files), and rebuilding the index from the
files. The order of a batch's steps is in the package docstring. It never parses
sources and never prints.

Length: the lock, recovery and the two halves of filing must agree on one order of
steps on disk; the pure parts already live in ``batch``, ``pipeline`` and ``layout``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError
from ..fsutil import (
    acquire_lock,
    fsync_dir,
    make_dirs,
    read_file,
    release_lock,
    same_file_system,
    sync_files,
    write_file,
)
from ..message import parse_message, raw_hash
from ..signals import leave_stop_signals_to_main_thread
from ..sqlfile import discard
from ..values import (
    FAILED,
    call_number_from_int,
    call_number_to_int,
    tick_of_ms,
)
from .batch import Batch, Outcome, Prepared, Status, find_duplicate, pending_row
from .index import FILED, HIDDEN, SCHEMA_VERSION, Index, Row
from .layout import encode_sidecar, iter_message_files, make_row, removed_row, row_from_file, stored_file_path
from .ledger import (
    Action,
    Entry,
    LedgerMessage,
    Redaction,
    Removal,
    append_entry,
    cut_torn_line,
    ledger_size,
    read_ledger,
)
from .pipeline import Commit, Pipeline
from .refile import finish_refiling, refile_interrupted, refile_messages

__all__ = ["Store"]

Clock = Callable[[], float]
REDACTING = ".redacting"
"""The folder (under content/) where ``Store.redact`` keeps an edited copy, durably, from
before its ledger entry until it replaces the original."""
_LOCK_GAP = 0.03
"""Seconds the lock stays free when a pipeline lets other processes have a turn (waiters
try every 10 ms)."""


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
        self._in_flight: list[Commit] = []
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
                # A command killed between its ledger entry and its action: every
                # command that opens the store applies the entry (a stat when none is).
                self._apply_ledger()
                self._drop_unrecorded_redactions()
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
        """Resolve pending rows and remove temporary files left by a killed process, and
        apply ledger entries whose action a killed process did not finish."""
        for entry in os.scandir(self.tmp_dir):
            os.unlink(entry.path)
        self._resolve_pending()
        finish_refiling(self)
        self._apply_ledger()
        self._drop_unrecorded_redactions()

    # -- the ledger ----------------------------------------------------------------

    def _apply_ledger(self, *, fresh: bool = False) -> None:
        """Bring the index's states up to the ledger (under the lock): the entries after
        the bytes it has applied, or, with ``fresh`` (a rebuilt index), all of them. A
        ledger shorter than what was applied (replaced by a copy from elsewhere) is
        applied again from the start."""
        applied = 0 if fresh else int(self.index.get_meta("ledger_applied") or 0)
        size = ledger_size(self.root)
        if size == applied and not fresh:
            return
        if cut_torn_line(self.root):
            size = ledger_size(self.root)
        if size < applied:
            applied, fresh = 0, True
        entries, end = read_ledger(self.root, applied)
        in_transaction = self.index.db.in_transaction
        if not in_transaction:
            self.index.begin()
        try:
            if fresh:
                self.index.db.execute(f"UPDATE messages SET state = {FILED} WHERE state = {HIDDEN}")
            for entry in entries:
                calls = [message.call for message in entry.messages]
                if entry.action == "hide":
                    self.index.set_state(calls, HIDDEN, was=FILED)
                elif entry.action == "unhide":
                    self.index.set_state(calls, FILED, was=HIDDEN)
                elif entry.action == "remove":
                    self._take_down(entry)
                elif entry.action == "redact":
                    self._redact_in_place(entry)
            self.index.set_meta("ledger_applied", str(end))
            if not in_transaction:
                self.index.commit()
        except BaseException:
            if not in_transaction:
                self.index.rollback()
            raise

    def _take_down(self, entry: Entry) -> None:
        """Apply a ``remove`` entry (inside the caller's transaction): the rows become
        removed ones, then the files go, their folders synced -- before the commit that
        says the entry is applied, so a kill in between applies it again."""
        rows = [removed_row(m.call, m.list, m.removal, entry.at, entry.reason) for m in entry.messages if m.removal]
        self.index.delete(row.call for row in rows)
        self.index.insert_many(rows)
        folders = set()
        for row in rows:
            eml = self.root / row.path
            for path in (eml, eml.with_suffix(".json")):
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise StoreError(f"{path}: cannot remove: {exc.strerror}") from exc
                folders.add(path.parent)
        for folder in sorted(folders):
            fsync_dir(folder)
        self.fault("files-removed")

    def _redact_in_place(self, entry: Entry) -> None:
        """Apply a ``redact`` entry (inside the caller's transaction): the edited copy
        replaces the original file (an atomic rename, its folder synced), the index row
        becomes the copy's, and the original's digests are remembered for dedup."""
        for message in entry.messages:
            kept = message.redaction
            if kept is None:
                continue
            self.index.add_redaction(message.list, message.call, kept.raw_hash, kept.vitals)
            eml = self.root / kept.path
            staged = self.root / REDACTING / f"{message.call}.eml"
            if staged.exists():
                os.replace(staged, eml)
                fsync_dir(eml.parent)
            self.fault("redaction-in-place")
            try:
                raw = read_file(eml)
            except FileNotFoundError:
                continue  # removed since
            except OSError as exc:
                raise StoreError(f"{eml}: cannot read: {exc.strerror}") from exc
            if raw_hash(raw) != kept.new_hash:
                continue  # redacted again since (a later entry makes the row)
            found = self.index.rows_by_call([message.call])
            if not found or found[0].state not in (FILED, HIDDEN):
                continue
            old = found[0]
            row = make_row(
                parse_message(raw),
                call=old.call,
                path=old.path,
                state=old.state,
                size=len(raw),
                date=old.date,
                date_source=old.date_source,
                collision=bool(old.collision),
                reason=entry.reason,
                origin=old.origin,
            )._replace(edited_at=entry.at)
            self.index.delete([old.call])
            self.index.insert_many([row])

    def _drop_unrecorded_redactions(self) -> None:
        """Delete edited copies no ledger entry names (a redact killed before its entry)."""
        folder = self.root / REDACTING
        try:
            left = list(os.scandir(folder))
        except FileNotFoundError:
            return
        for item in left:
            os.unlink(item.path)

    def redact(self, row: Row, raw: bytes, reason: str, by: str, at: str) -> Entry:
        """Replace a message's bytes by an edited copy under the same call number: the
        copy is written durably first, then the ledger entry, then the copy replaces the
        original (the next lock holder finishes a killed redaction from the entry)."""
        with self.locked():
            folder = self.root / REDACTING
            folder.mkdir(exist_ok=True)
            staged = folder / f"{row.call}.eml"
            try:
                staged.unlink(missing_ok=True)
                write_file(staged, raw, sync=True)
                fsync_dir(folder)
            except OSError as exc:
                raise StoreError(f"{staged}: cannot write the edited copy: {exc.strerror}") from exc
            self.fault("redaction-staged")
            kept = Redaction(row.path, row.raw_hash, row.vitals, raw_hash(raw))
            entries = self.ledger()
            entry = Entry(
                seq=(entries[-1].seq + 1) if entries else 1,
                at=at,
                action="redact",
                reason=reason,
                by=by,
                messages=(LedgerMessage(row.call, row.list, redaction=kept),),
            )
            append_entry(self.root, entry)
            self.fault("ledger-appended")
            self._apply_ledger()
            self.fault("ledger-applied")
        return entry

    def ledger(self) -> list[Entry]:
        """Every entry of the ledger, oldest first."""
        return read_ledger(self.root)[0]

    def record(
        self,
        action: Action,
        rows: list[Row],
        reason: str,
        by: str,
        at: str,
        removals: dict[str, Removal] | None = None,
    ) -> Entry:
        """Record a steward's action on these messages in the ledger, durably, then apply
        it to the index (the next lock holder applies it if this process is killed in
        between). ``at``: the UTC time, ISO 8601; ``removals``: for ``remove``, what is
        kept of each message (by call number)."""
        with self.locked():
            entries = self.ledger()
            kept = removals or {}
            entry = Entry(
                seq=(entries[-1].seq + 1) if entries else 1,
                at=at,
                action=action,
                reason=reason,
                by=by,
                messages=tuple(LedgerMessage(row.call, row.list, kept.get(row.call)) for row in rows),
            )
            append_entry(self.root, entry)
            self.fault("ledger-appended")
            self._apply_ledger()
            self.fault("ledger-applied")
        return entry

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

    def _read_filed(self, row: Row) -> bytes:
        """The bytes of a row filed before the batch being decided."""
        for commit in self._in_flight:  # decided in an earlier batch, not yet in place
            if row.call in commit.raw:
                return commit.raw[row.call]
        try:
            return read_file(os.path.join(self._root_str, row.path))
        except OSError:
            return b""

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
        batches every ``pipeline._LOCK_TURN`` seconds."""
        with self.locked(), self.index.filing_cache():
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

    def _decide(self, items: list[Prepared], *, dry_run: bool) -> tuple[list[Outcome], Commit | None]:
        """The first half of filing a batch (under the lock): dedup, call numbers,
        temporary files handed to the writer, index rows committed as *pending*.
        Returns the outcomes and what ``_put_in_place`` must do (None for a dry run)."""
        outcomes: list[Outcome] = []
        index = self.index
        if not index.db.in_transaction:
            index.begin(synced=False)  # made durable with the files (_put_in_place)
        self._refresh_high_water()
        batch = Batch(index, items)
        commit = Commit()
        try:
            for item in items:
                others = find_duplicate(item, batch, self._read_filed)
                if isinstance(others, Outcome):
                    outcomes.append(others)
                    continue
                call = self._allocate()
                row = pending_row(item, call, stored_file_path(item.slug, item.date, call), bool(others))
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

    def _put_in_place(self, commit: Commit) -> None:
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
            self._writers = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="listlib-writer", initializer=leave_stop_signals_to_main_thread
            )
        return self._writers

    def _write_temp(self, item: Prepared, row: Row, commit: Commit) -> None:
        """Write a message (and its sidecar) as temporary files."""
        final = os.path.join(self._root_str, row.path)
        tmp_dir = self._tmp_str
        meta = encode_sidecar(item.slug, item.date, item.date_source, item.origin, item.reason, item.detail)
        if meta is not None:
            commit.add(f"{tmp_dir}/{row.call}.json", final[: -len(".eml")] + ".json", meta, self._writer_pool)
        commit.add(f"{tmp_dir}/{row.call}.eml", final, item.raw, self._writer_pool)

    # -- moving messages between lists ---------------------------------------------

    def refile(self, moves: list[tuple[Row, Prepared]]) -> list[Outcome]:
        """Move filed messages to another list (``listlib unrouted --refile``); see
        ``refile.refile_messages``."""
        return refile_messages(self, moves)

    def refile_interrupted(self) -> bool:
        """Whether a killed refile left its journal (the next lock holder finishes it)."""
        return refile_interrupted(self.index)

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
            self._apply_ledger(fresh=True)
            index.commit()
        except BaseException:
            index.rollback()
            raise
        self._last_tick = 0
        return refused


def _no_fault(point: str) -> None:
    return None
