"""``listlib fetch``: file the mail of a POP3 or IMAP account into the store, then settle it there.

The loop drives a ``remote.RemoteMailbox`` (``filers.pop3.Pop3Session``,
``filers.imap.ImapSession``) and knows no protocol. For one account, under the
account's fetch lock (``content/.pop3/<account>.lock``, ``content/.imap/...``):

1. log in and list the mailbox (POP3: LIST and UIDL; IMAP: each folder's UIDs);
2. choose the messages to retrieve: all of them, or, for a session that keeps
   mail on the server (POP3 ``keep_on_server``, IMAP ``after = "keep"``), those
   whose identity is not in the account's record (``uidls``);
3. in batches: retrieve each message (POP3: pipelined RETR; IMAP: one UID FETCH
   BODY.PEEK[]), file the batch through the same ``Filer`` as ``listlib import``
   (one group commit), and only when that has returned, with every byte
   durable, settle the batch (POP3: DELE; IMAP: delete or move), or, when
   keeping mail on the server, append the identities to the record. A reader
   thread retrieves the next batch while this thread files the previous one;
4. finish the session (POP3: QUIT, which is when the server deletes them).

A kill or a lost connection at any instant loses nothing: a message is
deleted only after it is durable in the store, and deletions not followed by
QUIT never happen (RFC 1939: no QUIT, no UPDATE state). It files nothing twice: whatever was filed but not deleted
(or not recorded) is retrieved again by the next run, and the store recognises
the same bytes as a duplicate. When deleting, the UIDL record is not trusted
to skip anything (a server that reused a UIDL would make us delete a message
never filed); every message on the server is retrieved before it is deleted.

Library code: never prints (progress goes to a callback), never reads the
environment (the caller passes it to ``resolve_password``).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .config import ImapAccount, ListConfig, Pop3Account, read_secret
from .errors import FetchError, LockTimeoutError
from .filers import RawMail
from .filers.imap import ImapSession
from .filers.pop3 import Pop3Session
from .filing import AfterFiling, Filer, FilingReport
from .fsutil import acquire_lock, make_dirs, release_lock
from .remote import RemoteEntry, RemoteMailbox
from .signals import leave_stop_signals_to_main_thread
from .store.core import Store
from .uidls import UidlLog
from .values import plural

__all__ = ["Account", "FetchReport", "fetch_account", "resolve_password"]

Account = Pop3Account | ImapAccount
Fault = Callable[[str], None]
ProgressCallback = Callable[[int, int, int], None]
"""Called with (bytes retrieved, bytes to retrieve, messages retrieved)."""

#: Messages per batch: one group commit (syncfs) per batch, and at most one
#: batch is retrieved again after a crash.
_BATCH_MESSAGES = 256
_BATCH_BYTES = 16 << 20
_PROGRESS_EVERY = 0.1
STATE_FOLDER = ".pop3"
"""The POP3 accounts' locks and UIDL records, in the store folder (IMAP's: ``.imap``)."""

_Arrival = tuple[list[RemoteEntry], list[RawMail], BaseException | None]
"""A retrieved batch: the entries that arrived, their messages, and the error that cut it short."""


@dataclass
class FetchReport:
    """What one ``listlib fetch`` did with one account."""

    account: str
    server: str
    on_server: int = 0
    """Messages in the mailbox when the run started."""
    known: int = 0
    """Messages left on the server by earlier runs (``keep_on_server``), not retrieved again."""
    retrieved: int = 0
    deleted: int = 0
    """Messages the server removed (POP3: at QUIT)."""
    moved: int = 0
    """Messages moved to another folder once filed (IMAP ``after = "move"``)."""
    kept: int = 0
    """Messages filed by this run and left on the server (``keep_on_server``)."""
    postponed: int = 0
    """Messages left for the next run because of ``max_messages``."""
    busy: bool = False
    """Another ``listlib fetch`` held this account's lock; nothing was done."""
    error: str | None = None
    """Why the run stopped early (connection lost, ...); what was retrieved before was filed."""
    warnings: list[str] = field(default_factory=list)
    not_retrieved: list[dict[str, object]] = field(default_factory=list)
    not_deleted: list[dict[str, object]] = field(default_factory=list)
    filing: FilingReport = field(default_factory=FilingReport)
    seconds: float = 0.0

    @property
    def eventful(self) -> bool:
        """Whether anything happened that a quiet cron run should mention."""
        return bool(
            self.retrieved
            or self.deleted
            or self.moved
            or self.busy
            or self.error
            or self.warnings
            or self.not_retrieved
            or self.not_deleted
        )

    def summary(self) -> str:
        """The one-line summary printed for the account."""
        head = f"{self.account} ({self.server})"
        if self.busy:
            return f"{head}: another 'listlib fetch' of this account is still running; skipped"
        if not self.retrieved and not self.deleted:
            kept = f" ({self.known} kept on the server)" if self.known else ""
            return f"{head}: no new mail{kept}"
        f = self.filing
        parts = [
            f"{head}: {self.retrieved} retrieved in {self.seconds:.1f} s: {f.filed} filed "
            f"({plural(f.collisions, 'Message-ID collision')}, {f.no_list} to _no_list), "
            f"{plural(f.duplicates, 'duplicate')}{f.refusals()}, "
            f"{f.failed} failed"
        ]
        if self.deleted:
            parts.append(f"{self.deleted} deleted on the server")
        if self.moved:
            parts.append(f"{self.moved} moved on the server")
        if self.kept:
            parts.append(f"{self.kept} kept on the server")
        if self.postponed:
            parts.append(f"{self.postponed} left for the next run")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["filing"] = self.filing.to_dict()
        return data


def kind_of(account: Account) -> str:
    """``pop3`` or ``imap``."""
    return "imap" if isinstance(account, ImapAccount) else "pop3"


def resolve_password(account: Account, environ: Mapping[str, str]) -> str:
    """The account's password from listlib.toml, its ``password_file`` or its ``password_env``."""
    where = f"{kind_of(account)} account {account.name!r}"
    return read_secret(where, account.password, account.password_env, account.password_file, environ, FetchError)


def _batches(entries: Sequence[RemoteEntry]) -> Iterator[list[RemoteEntry]]:
    batch: list[RemoteEntry] = []
    size = 0
    for entry in entries:
        if batch and (len(batch) >= _BATCH_MESSAGES or size + entry.size > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += entry.size
    if batch:
        yield batch


def fetch_account(
    store: Store,
    lists: Iterable[ListConfig],
    account: Account,
    password: str,
    *,
    lock_wait: float = 10.0,
    progress: ProgressCallback | None = None,
    fault: Fault | None = None,
    after_filing: AfterFiling | None = None,
    halt: Callable[[], bool] | None = None,
    session: RemoteMailbox[Any] | None = None,
) -> FetchReport:
    """Fetch one account (see the module docstring for the order of things).

    ``session`` is a mailbox of the caller's own (not opened yet) instead of the
    account's POP3 or IMAP session: the loop needs nothing else of a source.

    Raises FetchError when the session cannot start (DNS, connection, TLS,
    login); a failure after that is reported in ``FetchReport.error``, after
    filing whatever was retrieved before it. When ``halt`` returns True (checked
    between batches), no further batch is retrieved: what was retrieved is
    filed and settled, the session finished, the rest counted as postponed.
    """
    started = time.monotonic()
    report = FetchReport(account=account.name, server=f"{account.host}:{account.port}")
    kind = kind_of(account)
    state = store.root / f".{kind}"
    make_dirs(state)
    try:
        lock = acquire_lock(state / f"{account.name}.lock", lock_wait, f"account {account.name} is busy")
    except LockTimeoutError:
        report.busy = True
        return report
    if session is None:
        session = (
            ImapSession(account, password, fault=fault)
            if isinstance(account, ImapAccount)
            else Pop3Session(account, password, fault=fault)
        )
    try:
        session.open()
        try:
            _Run(store, lists, account, session, report, progress, fault, after_filing, halt).run()
        finally:
            session.abort()  # after finish(), a no-op
            report.warnings.extend(session.warnings)
    finally:
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


class _Run:
    """One session's work for one account."""

    def __init__(
        self,
        store: Store,
        lists: Iterable[ListConfig],
        account: Account,
        session: RemoteMailbox[Any],
        report: FetchReport,
        progress: ProgressCallback | None,
        fault: Fault | None,
        after_filing: AfterFiling | None = None,
        halt: Callable[[], bool] | None = None,
    ) -> None:
        self.account = account
        self.session = session
        self.report = report
        self.filer = Filer(store, lists, forced_list=account.list, report=report.filing, after_filing=after_filing)
        self.progress = progress
        self.fault = fault or (lambda point: None)
        record = f"{account.name}.uidls" if session.kind == "pop3" else f"{account.name}.uids"
        self.log = UidlLog(store.root / f".{session.kind}" / record, f"{account.user}@{account.host}")
        self.halt = halt or (lambda: False)
        self.done_bytes = 0
        self.total_bytes = 0
        self.last_progress = 0.0
        self.keep = False
        """Whether messages stay on the server (their identities are recorded)."""
        self.settles = True
        """Whether filed messages are settled on the server (deleted, moved, marked seen)."""
        self.durable: queue.SimpleQueue[list[RemoteEntry]] = queue.SimpleQueue()
        """Batches filed durably, waiting to be settled (filing thread -> reader thread)."""
        self.marked = 0
        """Messages the server accepted DELE (or delete, or move) for."""
        self.stop = threading.Event()

    def run(self) -> None:
        account, session, report = self.account, self.session, self.report
        entries = session.entries()
        report.on_server = len(entries)
        keep = session.tracks
        todo = entries
        if keep:
            known = self.log.load()
            todo = [entry for entry in entries if entry.identity not in known]
            report.known = len(entries) - len(todo)
        if account.max_messages is not None and len(todo) > account.max_messages:
            report.postponed = len(todo) - account.max_messages
            todo = todo[: account.max_messages]
        self.total_bytes = sum(entry.size for entry in todo)
        self.keep = keep
        self.settles = session.settles
        if self._retrieve_and_file(list(_batches(todo))):
            return
        try:
            if self.settles:
                self._delete_durable()  # the connection is this thread's again
            self.fault("quitting")
            session.finish()
        except FetchError as exc:
            report.error = str(exc)
            return
        if session.settled_verb == "moved":
            report.moved = self.marked
        elif session.settled_verb == "deleted":
            report.deleted = self.marked
        if keep:
            self.log.forget_others({entry.identity for entry in entries if entry.identity is not None})

    def _retrieve_and_file(self, batches: list[list[RemoteEntry]]) -> bool:
        """Retrieve batches in a reader thread while this thread files the previous one.

        The reader owns the connection until it is done: it retrieves a batch,
        hands it over, and before the next batch sends DELE for the batches this
        thread has reported durable (``self.durable``). At most three batches are
        in memory: one being filed, one handed over, one arriving. Return True
        when the session broke off (``report.error`` says why); whatever arrived
        before the break is filed all the same.
        """
        arrived: queue.Queue[_Arrival | None] = queue.Queue(maxsize=1)
        name = f"listlib-{self.session.kind}-reader"
        reader = threading.Thread(target=self._read, args=(batches, arrived), name=name, daemon=True)
        reader.start()
        failure: BaseException | None = None
        reader_done = False  # the reader has handed over its last item and returns
        try:
            while (item := arrived.get()) is not None:
                got, mails, failure = item
                reader_done = failure is not None
                if mails:
                    self.filer.file(mails)  # every message is durable in the store when this returns
                    self.fault("filed")
                if self.settles:
                    self.durable.put(got)  # recorded too, once settled, when the session also tracks
                elif self.keep:
                    self._record(got)
                if failure is not None:
                    break
            reader_done = True
        finally:
            if not reader_done:
                # Filing failed (or was interrupted): unblock a reader waiting on the
                # server (closing the connection) or on the queue, then let it end.
                self.stop.set()
                self.session.abort()
                while reader.is_alive():
                    with contextlib.suppress(queue.Empty):
                        arrived.get(timeout=0.05)
            reader.join()
        if isinstance(failure, FetchError):
            self.report.error = str(failure)
            return True
        if failure is not None:
            raise failure
        self._progress(force=True)
        return False

    def _read(self, batches: list[list[RemoteEntry]], arrived: queue.Queue[_Arrival | None]) -> None:
        """The reader thread: retrieve batch after batch, settle what is durable in between."""
        leave_stop_signals_to_main_thread()  # so the main thread has set ``halt`` before it takes the next batch

        def hand_over(item: _Arrival | None) -> bool:
            while not self.stop.is_set():
                try:
                    arrived.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for number, batch in enumerate(batches):
                if self.halt():
                    self.report.postponed += sum(len(rest) for rest in batches[number:])
                    break
                if self.settles:
                    self._delete_durable()
                got: list[RemoteEntry] = []
                mails: list[RawMail] = []
                try:
                    for entry, raw, error in self.session.retrieve(batch):
                        self.done_bytes += entry.size
                        if raw is None:
                            self.report.not_retrieved.append({**entry.describe(), "error": error})
                        else:
                            got.append(entry)
                            mails.append(RawMail(raw, self._origin(entry), None, self.done_bytes))
                            self.report.retrieved += 1
                        self._progress()
                        if self.stop.is_set():
                            return
                except FetchError as exc:
                    hand_over((got, mails, exc))  # what arrived before the break is filed
                    return
                if not hand_over((got, mails, None)):
                    return
            hand_over(None)
        except BaseException as exc:  # handed to the filing thread, which raises it
            hand_over(([], [], exc))

    def _delete_durable(self) -> None:
        """Settle (POP3: DELE) every message of the batches reported durable so far."""
        entries: list[RemoteEntry] = []
        while True:
            try:
                entries.extend(self.durable.get_nowait())
            except queue.Empty:
                break
        if not entries:
            return
        refused = self.session.settle(entries)
        self.report.not_deleted.extend({**entry.describe(), "error": text} for entry, text in refused)
        self.marked += len(entries) - len(refused)
        self.fault("deleted")
        if self.keep:
            # Recorded after the server accepted it (a message marked seen), so that a
            # kill in between makes the next run settle it again instead of skipping it.
            failed = {id(entry) for entry, _text in refused}
            self._record([entry for entry in entries if id(entry) not in failed])

    def _record(self, entries: list[RemoteEntry]) -> None:
        """Append the entries' identities to the record (their messages are durable)."""
        self.log.add(entry.identity for entry in entries if entry.identity is not None)
        self.report.kept += len(entries)
        self.fault("recorded")

    def _origin(self, entry: RemoteEntry) -> str:
        return f"{self.session.kind}:{self.account.name}/{entry.label}"

    def _progress(self, *, force: bool = False) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if force or now - self.last_progress >= _PROGRESS_EVERY:
            self.last_progress = now
            self.progress(self.done_bytes, self.total_bytes, self.report.retrieved)
