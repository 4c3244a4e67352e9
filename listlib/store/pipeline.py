"""Putting decided batches in place: a batch's temporary files on their way to disk
(``Commit``, written by the store's writer thread) and ``Pipeline``, which overlaps one
batch's wait for the disk with the next one's decisions. It never decides anything
itself (dedup, call numbers: ``Store._decide``) and never calls ``done`` for a batch
before its messages are durable.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..fsutil import write_file
from ..signals import leave_stop_signals_to_main_thread
from .batch import Outcome, Prepared

if TYPE_CHECKING:
    from .core import Store

__all__ = ["Commit", "Pipeline"]

_WRITE_GROUP = 64
"""Temporary files handed to a writer thread at a time."""
_LOCK_TURN = 2.0
"""Seconds a pipeline holds the store lock before it lets other processes have a turn."""


class Commit:
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
        self._queue: queue.Queue[tuple[Commit, list[Outcome], Callable[[list[Outcome]], None]] | None]
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
        leave_stop_signals_to_main_thread()
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
