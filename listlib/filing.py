"""The filing loop: sources -> parse, route, date -> the store, with a report.

One path into the store for every filer: ``Filer.file`` turns a batch of raw
messages into one store batch (a group commit) and counts the outcomes;
``file_sources`` (``listlib import``) and ``fetch`` (POP3) both use it. For
imports, reading and splitting happen here and parsing runs in a small process
pool for large imports (both cores). Every message read is accounted for in
the report: filed (including collisions and ``_no_list``), duplicate, or
failed. Never prints: progress goes to a callback.

Length: the report, the decision per message and the parse pool are one loop; its
counting has to see every outcome, so it is not split across modules.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from .config import ListConfig
from .dating import choose_date, plausible
from .errors import SourceError
from .filers import Mark, RawMail, Source, Tracker, open_source
from .filers.mbox import MboxFormat, count_separator_like, separator_date
from .inboxlog import STATE_FOLDER
from .message import MessageFacts, parse_message, raw_hash
from .routing import Router
from .store.batch import Outcome, Prepared
from .store.core import Store
from .store.pipeline import Pipeline
from .values import FAILED, NO_LIST, plural

__all__ = ["Filer", "FilingReport", "file_sources", "prepare_message"]

ProgressCallback = Callable[[int, int, int], None]
"""Called with (bytes done, bytes total, messages read)."""
AfterFiling = Callable[[Sequence[RawMail], list[Outcome]], None]
"""Called with each batch and its outcomes once the batch is durable, before filing
reports it done (delivery queues posts here; see ``delivery.intake``)."""

#: Messages handed to a parsing worker at a time (small: bounds memory in flight).
_CHUNK_MESSAGES = 256
_CHUNK_BYTES = 4 << 20
#: Messages filed per store batch, i.e. per group commit.
_BATCH_MESSAGES = 1024
_BATCH_BYTES = 16 << 20
_POOL_THRESHOLD_BYTES = 8 << 20
_IN_FLIGHT = 4


@dataclass
class FilingReport:
    """What an import did; ``messages == filed + duplicates + refused + removed + failed`` always holds."""

    sources: list[str] = field(default_factory=list)
    messages: int = 0
    filed: int = 0
    duplicates: int = 0
    refused: int = 0
    """Copies of hidden messages (``listlib hide``): never filed again."""
    removed: int = 0
    """Copies of removed messages (``listlib remove``): never filed again."""
    collisions: int = 0
    no_list: int = 0
    failed: int = 0
    dry_run: bool = False
    by_list: dict[str, int] = field(default_factory=dict)
    skipped_files: list[str] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    """Files that could not be read (``path``, ``reason``): everything else was filed."""
    collision_details: list[dict[str, object]] = field(default_factory=list)
    failures: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Things a source says the operator should know (a rewritten public-inbox epoch)."""
    deleted_upstream: list[dict[str, object]] = field(default_factory=list)
    """Deletions read from public-inbox epochs (``epoch``, ``root``, ``commit``,
    ``message_id``, ``subject``, ``raw_hash``, and ``calls``: the call numbers of the
    stored messages with those exact bytes, with their ``states``)."""
    seconds: float = 0.0

    def add(self, outcome: Outcome, reason: str | None, detail: str | None = None) -> None:
        self.messages += 1
        if outcome.status == "duplicate":
            self.duplicates += 1
            return
        if outcome.status == "refused":
            self.refused += 1
            return
        if outcome.status == "removed":
            self.removed += 1
            return
        if outcome.status == "failed":
            self.failed += 1
            self.failures.append({"origin": outcome.origin, "call": outcome.call, "reason": reason, "detail": detail})
            return
        self.filed += 1
        self.by_list[outcome.slug] = self.by_list.get(outcome.slug, 0) + 1
        if outcome.slug == NO_LIST:
            self.no_list += 1
        if outcome.status == "collision":
            self.collisions += 1
            self.collision_details.append(
                {
                    "message_id": outcome.message_id,
                    "call": outcome.call,
                    "others": list(outcome.others),
                    "origin": outcome.origin,
                }
            )

    def summary(self) -> str:
        """The one-line summary printed at the end of an import."""
        verb = "would be filed" if self.dry_run else "filed"
        rate = f" in {self.seconds:.1f} s" if self.seconds else ""
        unreadable = f"; {plural(len(self.unreadable), 'unreadable file')}" if self.unreadable else ""
        upstream = f"; {len(self.deleted_upstream)} deleted upstream" if self.deleted_upstream else ""
        return (
            f"{plural(self.messages, 'message')}{rate}: {self.filed} {verb} "
            f"({plural(self.collisions, 'Message-ID collision')}, {self.no_list} to {NO_LIST}), "
            f"{plural(self.duplicates, 'duplicate')}{self.refusals()}, {self.failed} failed{unreadable}{upstream}"
        )

    def refusals(self) -> str:
        """``, N refused (hidden), M refused (removed)``, each part only when not 0."""
        parts = [(self.refused, "hidden"), (self.removed, "removed")]
        return "".join(f", {count} refused ({why})" for count, why in parts if count)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class _Decision(NamedTuple):
    """What a worker decided about one message (everything but its bytes); a named
    tuple because it crosses a process boundary for every message."""

    facts: MessageFacts
    slug: str
    date: int
    date_source: str
    reason: str | None = None
    detail: str | None = None


_EMPTY_FACTS = parse_message(b"")


def _envelope_date(separator: bytes | None, received: int | None, now: int) -> int | None:
    """The mbox separator's date, read only when ``choose_date`` can use it (no usable
    Received date): parsing it is most of the cost of an envelope."""
    if separator is None or plausible(received, now):
        return None
    return separator_date(separator)


def _with_separators(detail: str, raw: bytes) -> str:
    """A failure's detail, plus a warning when the message holds lines that look like mbox
    separators: a separator shape listlib does not know turns a whole file (a Pipermail
    month, say) into one failed "message", and this says so at once."""
    count = count_separator_like(raw)
    if not count:
        return detail
    lines = "1 line that looks" if count == 1 else f"{count} lines that look"
    return (
        f"{detail}; it contains {lines} like mbox separators ('From ...'): "
        "the source may use a separator shape listlib does not recognise"
    )


def prepare_message(
    raw: bytes, separator: bytes | None, router: Router, forced_list: str | None, now: int
) -> _Decision:
    """Parse, route and date one message; decide ``_failed`` with a reason when it cannot be filed."""
    try:
        facts = parse_message(raw)
    except Exception as exc:  # parse_message is lenient; this is the last line of defence
        when = choose_date(None, None, _envelope_date(separator, None, now), now)
        facts = _EMPTY_FACTS._replace(raw_hash=raw_hash(raw))  # dedup in _failed goes by exact bytes
        detail = _with_separators(f"{type(exc).__name__}: {exc}", raw)
        return _Decision(facts, FAILED, when.when, when.source, "unparseable", detail)
    envelope = _envelope_date(separator, facts.received_date, now)
    when = choose_date(facts.date, facts.received_date, envelope, now)
    if not raw.strip():
        return _Decision(facts, FAILED, when.when, when.source, "empty", "the message is empty")
    if not facts.has_headers:
        detail = _with_separators("the message has no header fields", raw)
        return _Decision(facts, FAILED, when.when, when.source, "no-headers", detail)
    slug = forced_list or router.route(facts) or NO_LIST
    return _Decision(facts, slug, when.when, when.source)


class Filer:
    """Files batches of raw messages into the store, counting every outcome in ``report``."""

    def __init__(
        self,
        store: Store,
        lists: Iterable[ListConfig],
        *,
        forced_list: str | None = None,
        dry_run: bool = False,
        report: FilingReport | None = None,
        now: int | None = None,
        after_filing: AfterFiling | None = None,
    ) -> None:
        self.store = store
        self.after_filing = after_filing
        self.router = Router(tuple(lists))
        self.forced_list = forced_list
        self.dry_run = dry_run
        self.report = report if report is not None else FilingReport(dry_run=dry_run)
        self.now = int(store.clock()) if now is None else now

    def decide(self, mail: RawMail) -> _Decision:
        return prepare_message(mail.raw, mail.separator, self.router, self.forced_list, self.now)

    def file(self, mails: Sequence[RawMail], decisions: Sequence[_Decision] | None = None) -> list[Outcome]:
        """File one batch as one group commit; return an outcome per message, in order.

        When this returns, every message of the batch is accounted for durably:
        filed (its bytes and index row are on disk), a duplicate of one that
        is, or quarantined in ``_failed``.
        """
        batch = self._prepared(mails, decisions)
        outcomes = self.store.file_batch(batch, dry_run=self.dry_run)
        if self.after_filing is not None and not self.dry_run:
            self.after_filing(mails, outcomes)
        self._count(batch, outcomes)
        return outcomes

    def submit(
        self,
        pipeline: Pipeline,
        mails: Sequence[RawMail],
        decisions: Sequence[_Decision],
        then: Callable[[], None],
    ) -> None:
        """File one batch through a store pipeline: counted in the report, and ``then``
        called, once the batch is durable (from the pipeline's thread)."""
        assert self.after_filing is None and not self.dry_run
        batch = self._prepared(mails, decisions)

        def done(outcomes: list[Outcome]) -> None:
            self._count(batch, outcomes)
            then()

        pipeline.submit(batch, done)

    def _prepared(self, mails: Sequence[RawMail], decisions: Sequence[_Decision] | None) -> list[Prepared]:
        if decisions is None:
            decisions = [self.decide(mail) for mail in mails]
        return [
            Prepared(m.raw, d.facts, d.slug, d.date, d.date_source, m.origin, d.reason, d.detail)
            for m, d in zip(mails, decisions, strict=True)
        ]

    def _count(self, batch: list[Prepared], outcomes: list[Outcome]) -> None:
        for item, outcome in zip(batch, outcomes, strict=True):
            self.report.add(outcome, item.reason, item.detail)


# Worker-process state, set once per worker by _init_worker (never in the main process).
_worker_args: tuple[Router, str | None, int] | None = None


def _init_worker(lists: tuple[ListConfig, ...], forced_list: str | None, now: int) -> None:
    global _worker_args
    _worker_args = (Router(lists), forced_list, now)


def _prepare_chunk(chunk: list[tuple[bytes, bytes | None]]) -> list[_Decision]:
    assert _worker_args is not None
    router, forced, now = _worker_args
    decisions = [prepare_message(raw, env, router, forced, now) for raw, env in chunk]
    # Routing has used the recipient fields; filing never reads them, and long Cc
    # lists would be most of what travels back to the filing process.
    return [d._replace(facts=d.facts._replace(recipient_fields=())) for d in decisions]


def _chunks(mails: Iterator[RawMail]) -> Iterator[list[RawMail]]:
    chunk: list[RawMail] = []
    size = 0
    try:
        for mail in mails:
            chunk.append(mail)
            size += len(mail.raw)
            if len(chunk) >= _CHUNK_MESSAGES or size >= _CHUNK_BYTES:
                yield chunk
                chunk, size = [], 0
    except SourceError:
        if chunk:
            yield chunk  # what was read before a source broke off is still filed
        raise
    if chunk:
        yield chunk


def file_sources(
    store: Store,
    lists: Iterable[ListConfig],
    paths: list[Path],
    *,
    forced_list: str | None = None,
    dry_run: bool = False,
    mbox_format: MboxFormat = "auto",
    progress: ProgressCallback | None = None,
    parallel: bool | None = None,
    stdin: BinaryIO | None = None,
    after_filing: AfterFiling | None = None,
) -> FilingReport:
    """Import every message of every source into the store.

    A path that does not exist, or a folder without mail, raises ``SourceError``
    before anything is filed. A file that cannot be read (or breaks off, like a
    truncated gzip file) is listed in the report's ``unreadable``, after what was
    read of it is filed, and the import goes on with the next file.
    A path ``-`` reads from ``stdin``.
    """
    started = time.monotonic()
    lists = tuple(lists)
    sources: list[Source] = []
    try:
        for path in paths:
            sources.append(
                open_source(
                    path, mbox_format, stdin, state=store.root / STATE_FOLDER, dry_run=dry_run, fault=store.fault
                )
            )
        return _file_opened(store, lists, sources, forced_list, dry_run, progress, parallel, after_filing, started)
    finally:
        for source in sources:
            source.close()


def _file_opened(
    store: Store,
    lists: tuple[ListConfig, ...],
    sources: list[Source],
    forced_list: str | None,
    dry_run: bool,
    progress: ProgressCallback | None,
    parallel: bool | None,
    after_filing: AfterFiling | None,
    started: float,
) -> FilingReport:
    report = FilingReport(sources=[str(s.path) for s in sources], dry_run=dry_run)
    for source in sources:
        report.skipped_files.extend(str(p) for p in source.skipped)
        report.warnings.extend(source.warnings)
    total = sum(s.total_bytes for s in sources)
    now = int(store.clock())
    if parallel is None:
        parallel = total >= _POOL_THRESHOLD_BYTES and (os.cpu_count() or 1) > 1

    def unreadable(path: Path, reason: str) -> None:
        report.unreadable.append({"path": str(path), "reason": reason})

    def all_mail() -> Iterator[RawMail]:
        done_before = 0
        for source in sources:
            for mail in source.iter_mail(on_error=unreadable):
                yield mail._replace(done=done_before + mail.done) if done_before else mail
            done_before += source.total_bytes

    filer = Filer(
        store, lists, forced_list=forced_list, dry_run=dry_run, report=report, now=now, after_filing=after_filing
    )
    batch: list[RawMail] = []
    batch_decisions: list[_Decision] = []
    batch_bytes = 0
    last_done = 0

    def file_batch() -> None:
        nonlocal batch, batch_decisions, batch_bytes
        mails, decisions, done = batch, batch_decisions, min(last_done, total)
        batch, batch_decisions, batch_bytes = [], [], 0

        def durable() -> None:
            if not dry_run:
                _settle(mails)
            if progress is not None:
                progress(done, total, report.messages)

        if pipeline is None:
            filer.file(mails, decisions)
            durable()
        else:
            filer.submit(pipeline, mails, decisions, durable)

    def file_chunk(chunk: list[RawMail], decisions: list[_Decision]) -> None:
        nonlocal batch_bytes, last_done
        batch.extend(chunk)
        batch_decisions.extend(decisions)
        batch_bytes += sum(len(m.raw) for m in chunk)
        last_done = chunk[-1].done
        if len(batch) >= _BATCH_MESSAGES or batch_bytes >= _BATCH_BYTES:
            file_batch()

    # An import files through a pipeline (each batch's wait for the disk overlaps the
    # next one's decisions); a dry run holds the lock throughout, and a delivering
    # import hands every batch to delivery before going on.
    holding: AbstractContextManager[Pipeline | None] = nullcontext()
    if dry_run:
        holding = store.locked()
    elif after_filing is None:
        holding = store.pipeline()
    with holding as pipeline:
        try:
            if parallel:
                _run_pool(all_mail(), file_chunk, lists, forced_list, now)
            else:
                for chunk in _chunks(all_mail()):
                    file_chunk(chunk, [filer.decide(m) for m in chunk])
            if batch:
                file_batch()
        except SourceError:
            # A source broke off (say, a truncated gzip file): file what was read
            # before the break, then report the source.
            if batch:
                file_batch()
            raise
        finally:
            if dry_run:
                store.end_dry_run()
    # Every batch is durable now: sources that remember how far they were read say so.
    if not dry_run:
        for source in sources:
            source.finish()
    report.deleted_upstream = _upstream_deletions(store, sources)
    report.seconds = time.monotonic() - started
    return report


def _settle(mails: Sequence[RawMail]) -> None:
    """Tell the sources that remember how far they were read that these messages are durable."""
    last: dict[int, tuple[Tracker, Mark]] = {}
    for mail in mails:
        if mail.mark is not None:
            last[id(mail.mark.tracker)] = (mail.mark.tracker, mail.mark)
    for tracker, mark in last.values():
        tracker.settle(mark)


def _upstream_deletions(store: Store, sources: list[Source]) -> list[dict[str, object]]:
    """The deletions public-inbox sources read (or recorded earlier and not yet dealt with),
    each with the stored messages that have its exact bytes."""
    found = [item for source in sources for item in source.pending_deletions()]
    if not found:
        return []
    rows = store.index.rows_by_raw_hash({deletion.raw_hash for _epoch, _root, deletion in found})
    by_hash: dict[str, list[tuple[str, int]]] = {}
    for row in rows:
        by_hash.setdefault(row.raw_hash, []).append((row.call, row.state))
    return [
        {
            "epoch": epoch,
            "root": root,
            "commit": deletion.commit,
            "message_id": deletion.message_id,
            "subject": deletion.subject,
            "raw_hash": deletion.raw_hash,
            "calls": [call for call, _state in by_hash.get(deletion.raw_hash, [])],
            "states": [state for _call, state in by_hash.get(deletion.raw_hash, [])],
        }
        for epoch, root, deletion in found
    ]


def _run_pool(
    mails: Iterator[RawMail],
    file_chunk: Callable[[list[RawMail], list[_Decision]], None],
    lists: tuple[ListConfig, ...],
    forced_list: str | None,
    now: int,
) -> None:
    """Read in a thread, parse in two processes, file in this thread.

    The reader thread (decompressing, splitting) runs while this thread waits
    in file-system and SQLite calls, which release the GIL; the bounded queue
    keeps at most a few chunks in memory.
    """
    # Imported here: an import too small for the pool (a cron job's few messages) need not load it.
    from .forkpool import ForkPool

    handoff: queue.Queue[tuple[list[RawMail], Future[list[_Decision]]] | BaseException | None] = queue.Queue(
        maxsize=_IN_FLIGHT
    )
    stop = threading.Event()

    def put(item: tuple[list[RawMail], Future[list[_Decision]]] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    with ForkPool(2, _init_worker, (lists, forced_list, now)) as pool:

        def read() -> None:
            try:
                for chunk in _chunks(mails):
                    job = pool.submit(_prepare_chunk, [(m.raw, m.separator) for m in chunk])
                    if not put((chunk, job)):
                        return
                put(None)
            except BaseException as exc:  # handed to the filing thread, which raises it
                put(exc)

        reader = threading.Thread(target=read, name="listlib-reader", daemon=True)
        reader.start()
        try:
            while True:
                item = handoff.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                chunk, job = item
                file_chunk(chunk, job.result())
        finally:
            stop.set()
            reader.join()
