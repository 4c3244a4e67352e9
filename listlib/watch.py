"""``listlib fetch --watch``: fetch again whenever mail arrives, until told to stop.

One watcher thread per folder of each IMAP account holds a second connection
in IDLE and rings the doorbell when the server announces a new message; a
server without IDLE is polled instead (the account is simply due again every
``interval`` seconds, as POP3 accounts are). A watcher that loses its
connection reconnects with exponential backoff (1 s doubling to 5 min), and
rings once it is back, since mail may have come meanwhile. The main thread
does the fetching (``cycle``, the caller's: fetch, file, build, print), one
account at a time, so everything filed goes through the same code as a
single ``listlib fetch``.

Stopping: ``StopFlag`` is set by the caller's SIGTERM/SIGINT handler. It is a
plain attribute (a handler that took a lock held by the code it interrupted
would deadlock); everything here looks at it at least every 0.2 s. A fetch
under way is told to stop between batches (``halt``), so what was retrieved is
filed and settled before the process exits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

from .config import ImapAccount
from .errors import FetchError
from .fetch import Account
from .filers.imap import ImapWatcher
from .signals import leave_stop_signals_to_main_thread

__all__ = ["StopFlag", "watch"]

#: A watcher re-enters IDLE this often (RFC 2177: servers may drop a client idle for 30 minutes).
IDLE_REFRESH = 25 * 60.0
_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 300.0
_TICK = 0.2


class StopFlag:
    """Set once, from a signal handler: no lock involved."""

    def __init__(self) -> None:
        self.stopping = False

    def set(self) -> None:
        self.stopping = True

    def is_set(self) -> bool:
        return self.stopping


class _Doorbell:
    """Account names rung by the watcher threads, taken by the main thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rung: set[str] = set()

    def ring(self, name: str) -> None:
        with self._lock:
            self._rung.add(name)

    def take(self) -> set[str]:
        with self._lock:
            rung, self._rung = self._rung, set()
        return rung


def _sleep(seconds: float, stop: StopFlag) -> None:
    deadline = time.monotonic() + seconds
    while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(_TICK, left))


class _FolderWatcher(threading.Thread):
    """Holds an IDLE connection to one folder and rings when mail arrives."""

    def __init__(
        self,
        account: ImapAccount,
        password: str,
        folder: str,
        bell: _Doorbell,
        stop: StopFlag,
        log: Callable[[str], None],
    ) -> None:
        super().__init__(name=f"listlib-watch-{account.name}-{folder}", daemon=True)
        self.account = account
        self.password = password
        self.folder = folder
        self.bell = bell
        self.stop = stop
        self.log = log
        self.current: ImapWatcher | None = None
        self.polling = False
        """The server has no IDLE: the account is polled instead (this thread has ended)."""

    def run(self) -> None:
        leave_stop_signals_to_main_thread()
        backoff = _BACKOFF_FIRST
        broken = False
        while not self.stop.is_set():
            try:
                watcher = self.current = ImapWatcher(self.account, self.password, self.folder).open()
                if broken:
                    self.log(f"{self.account.name}: reconnected to {watcher.session.server}")
                    self.bell.ring(self.account.name)  # mail may have come while we were away
                broken, backoff = False, _BACKOFF_FIRST
                if not watcher.can_idle:
                    self.polling = True
                    watcher.close()
                    self.log(
                        f"{self.account.name}: {watcher.session.server} does not offer IDLE; "
                        f"folder {self.folder!r} is checked at every interval instead"
                    )
                    return
                while not self.stop.is_set():
                    if not watcher.idle(IDLE_REFRESH):
                        self.bell.ring(self.account.name)  # a fresh connection, and a look meanwhile
                        break
                    self.bell.ring(self.account.name)
            except FetchError as exc:
                if self.stop.is_set():
                    return
                self.log(f"warning: {exc}; reconnecting in {backoff:g} s")
                broken = True
                _sleep(backoff, self.stop)
                backoff = min(backoff * 2, _BACKOFF_MAX)
            finally:
                if self.current is not None:
                    self.current.close()

    def interrupt(self) -> None:
        """Wake a watcher blocked in IDLE (its connection is closed under it)."""
        watcher = self.current
        if watcher is not None:
            watcher.close()


def watch(
    accounts: Sequence[Account],
    passwords: Mapping[str, str],
    cycle: Callable[[list[Account]], Sequence[str]],
    *,
    interval: float,
    stop: StopFlag,
    log: Callable[[str], None],
) -> None:
    """Fetch every account now, then each again when it is rung or due, until ``stop``.

    ``cycle`` fetches the accounts it is given and returns the names of those that
    failed; a failed account is tried again after a backoff (1 s doubling to 5 min,
    at most ``interval``), any other one every ``interval`` seconds, an IMAP account
    with IDLE also as soon as mail arrives.
    """
    bell = _Doorbell()
    watchers = [
        _FolderWatcher(account, passwords[account.name], folder, bell, stop, log)
        for account in accounts
        if isinstance(account, ImapAccount)
        for folder in account.folders
    ]
    for watcher in watchers:
        watcher.start()
    now = time.monotonic()
    due: dict[str, float] = {account.name: now for account in accounts}
    backoff: dict[str, float] = {}
    try:
        while not stop.is_set():
            now = time.monotonic()
            names = bell.take() | {name for name, when in due.items() if when <= now}
            if not names:
                time.sleep(_TICK)
                continue
            chosen = [account for account in accounts if account.name in names]
            failed = set(cycle(chosen))
            now = time.monotonic()
            for name in names:
                if name in failed:
                    wait = backoff[name] = min(backoff.get(name, _BACKOFF_FIRST / 2) * 2, _BACKOFF_MAX, interval)
                    due[name] = now + wait
                else:
                    backoff.pop(name, None)
                    due[name] = now + interval
    finally:
        stop.set()
        for watcher in watchers:
            watcher.interrupt()
        for watcher in watchers:
            watcher.join(timeout=10)
