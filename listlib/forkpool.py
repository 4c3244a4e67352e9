"""Run work in forked child processes: a pool of workers (``ForkPool``) or one
computation (``run_in_child``, ``fork_child``). Never decides whether work is worth a child (callers
do: each has its own threshold) and never touches what the work reads or writes.

The rules for forking, written once:

- Always fork (not spawn or forkserver, whatever the platform's default): a child
  starts with the parent's modules, configuration and inputs already loaded; only
  task arguments and results travel, pickled over pipes.
- A child has only the thread that forked it; a lock another thread held at that
  moment stays held in the child for ever. A pool's workers are forked when the pool
  is made, by the thread that makes it, and run only their initializer and their
  tasks, never code that takes the parent's locks (the store, logging, SQLite
  connections). ``fork_child`` runs any function, so it does not fork while other
  threads are running (``run_in_child`` then does the work in this process).
- Forked memory is shared until written, and reference counts and the garbage
  collector write to every object they touch. Fork early, before loading what the
  work does not need; a pool forked late (``late=True``) first collects and freezes
  the parent's objects out of the collector's sight (``gc.freeze``), and unfreezes
  them when the pool shuts down, so that a long-lived parent (``listlib serve``)
  collects them again.
- A child never runs the parent's cleanup: it must not flush the parent's buffered
  files, close its SQLite connections (a close may checkpoint the parent's WAL) or
  run its ``finally`` blocks and ``atexit`` hooks. Pool workers leave through
  ``multiprocessing`` (which flushes the standard streams before forking);
  ``fork_child``'s child leaves with ``os._exit``.
- A worker or child dies with its parent (Linux: ``PR_SET_PDEATHSIG``): a parent
  killed by ``kill -9`` must not leave workers behind, blocked for ever on the task queue and
  holding copies of the parent's file locks (the store lock, a public-inbox epoch's
  lock), which would make the next run wait for locks nobody releases.
- Results come back pickled: keep them small (a worker drops what the parent does not
  need). A child that fails or sends nothing is not an error: ``Child.result`` does
  the work again in this process, with the same result, only later.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Generic, TypeVar

__all__ = ["Child", "ForkPool", "fork_child", "run_in_child"]

T = TypeVar("T")


_PR_SET_PDEATHSIG = 1


def _ready() -> None:
    """A first task: makes the pool fork its workers now."""


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere
    nothing), and leave at once if the parent already died before the request."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(parent: int, initializer: Callable[..., object], initargs: tuple[Any, ...]) -> None:
    _die_with_parent(parent)
    initializer(*initargs)


class ForkPool(ProcessPoolExecutor):
    """``workers`` forked processes, each set up once by ``initializer(*initargs)``.

    The workers are forked before this returns (a pool of forked workers forks them all
    on its first task). ``late``: this process already holds much of what the workers do
    not need, frozen out of the collector's sight until ``shutdown``. Use as a context
    manager, or call ``shutdown``."""

    def __init__(
        self, workers: int, initializer: Callable[..., object], initargs: tuple[Any, ...] = (), *, late: bool = False
    ) -> None:
        self._frozen = late
        if late:
            gc.collect()
            gc.freeze()
        try:
            super().__init__(
                max_workers=workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_start_worker,
                initargs=(os.getpid(), initializer, initargs),
            )
            self.submit(_ready)
        except BaseException:
            self._unfreeze()
            raise

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        try:
            super().shutdown(wait=wait, cancel_futures=cancel_futures)
        finally:
            self._unfreeze()

    def _unfreeze(self) -> None:
        if self._frozen:
            gc.unfreeze()
            self._frozen = False


def run_in_child(compute: Callable[[], T], *, big: bool) -> Callable[[], T]:
    """Start ``compute``; the returned function waits for and returns its result.

    Big work runs in a forked child (it shares the inputs without copying them and
    sends back only the result) while this process goes on; small work, or when
    forking is unsafe (other threads running) or fails, runs right here."""
    child = fork_child(compute) if big else None
    return compute if child is None else child.result


class Child(Generic[T]):
    """A computation running in a forked child process (``fork_child``)."""

    def __init__(self, compute: Callable[[], T], pid: int, read_end: int) -> None:
        self._compute, self._pid, self._read_end = compute, pid, read_end
        self._done = False

    def result(self) -> T:
        """Wait for the child and return its result; when it failed or sent nothing,
        compute it here."""
        data, status = self._join()
        if status != 0 or not data:
            return self._compute()
        result: T = pickle.loads(data)
        return result

    def wait(self) -> None:
        """Wait for the child to end, discarding its result (never computes here). Does
        nothing after ``result`` or ``wait``."""
        self._join()

    def _join(self) -> tuple[bytes, int]:
        if self._done:
            return b"", 1
        self._done = True
        with os.fdopen(self._read_end, "rb") as received:
            data = received.read()
        _, status = os.waitpid(self._pid, 0)
        return data, status


def fork_child(compute: Callable[[], T]) -> Child[T] | None:
    """Start ``compute`` in a forked child that dies with this process; None (nothing
    started) when forking is unsafe (other threads running) or fails."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: compute, send, leave without running any cleanup
        status = 1
        try:
            _die_with_parent(parent)
            os.close(read_end)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(compute(), out, protocol=pickle.HIGHEST_PROTOCOL)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return Child(compute, pid, read_end)
