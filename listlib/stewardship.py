"""Stewarding an archive: choosing messages (by call number, Message-ID, list, month,
sender, search query or a file of IDs) and hiding them from the website, showing them
again or taking them down for good, each action recorded in the store's ledger
(``store.ledger``) before it takes effect.

A hidden message stays in the store, byte for byte, under its call number; the index
marks it hidden, so threads, pages, feeds, downloads and the search index leave it out
at the next build, a re-import or POP3 fetch of it is refused, and queued delivery of
it stops. ``unhide`` puts it back exactly as it was.

A removed message (``remove``, a take-down) leaves the store: its bytes are deleted, and
the ledger keeps only digests that refuse a copy of it, where it was filed and its place
in its thread (the message it answered and its answers, which the threader keeps
together around a placeholder). Its permanent URL and Message-ID page become tombstones,
and its posts waiting in the outbound queue are deleted (``delivery.service.purge_removed``;
a ``listlib remove`` killed before that leaves them to the next ``listlib deliver``, which
deletes them before it sends anything).

Click-free: the CLI parses, calls these functions and prints what they return; nothing
here prints.

Length: choosing messages and the three actions (hide, remove, redact) with their
reports share the selection code; the quote finder is the rest.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Config
from .errors import ListlibError, LockTimeoutError
from .store.core import Store
from .store.index import FILED, HIDDEN, PINS_STAND_IN, REMOVED, Row
from .store.ledger import Action, Entry, Removal
from .values import FAILED, Month, is_call_number, message_id_hash, plural

__all__ = [
    "Quote",
    "RedactReport",
    "Selector",
    "StewardReport",
    "find_quotes",
    "published_hidden",
    "read_id_file",
    "redact",
    "stored_bytes",
    "steward",
]

_DONE = {"hide": "hidden", "unhide": "shown again", "remove": "removed"}
_QUEUE_WAIT = 60.0
"""Seconds ``remove`` waits for a ``listlib deliver`` run to end before it leaves the
queued posts of the removed messages to the next run."""
_ALREADY = {"hide": "already hidden", "unhide": "not hidden", "remove": "already removed"}


@dataclass(frozen=True)
class Selector:
    """Which messages a command acts on: the named ones (``ids``: call numbers or
    Message-IDs) and the hits of ``query``, narrowed by ``slug``, ``month`` and
    ``sender``; with no IDs and no query, every message those three match."""

    ids: tuple[str, ...] = ()
    query: str | None = None
    slug: str | None = None
    month: Month | None = None
    sender: str | None = None

    def is_empty(self) -> bool:
        return not (self.ids or self.query or self.slug or self.month or self.sender)


@dataclass
class StewardReport:
    """What a hide, unhide or remove did (or, with ``dry_run``, would do)."""

    action: Action
    dry_run: bool
    messages: list[Row] = field(default_factory=list)
    """The messages it acted on."""
    skipped: list[Row] = field(default_factory=list)
    """Messages selected but already as asked (hidden already, or not hidden)."""
    entry: Entry | None = None
    purged: list[str] = field(default_factory=list)
    """``remove``: the posts of removed messages deleted from the outbound queue."""
    queue_busy: bool = False
    """``remove``: a ``listlib deliver`` run held the queue; the next run deletes the posts."""
    seconds: float = 0.0

    def summary(self) -> str:
        done = _DONE[self.action]
        verb = f"would be {done}" if self.dry_run else done
        already = _ALREADY[self.action]
        skipped = f" ({len(self.skipped)} {already})" if self.skipped else ""
        entry = f"; ledger entry {self.entry.seq}" if self.entry is not None else ""
        queue = ""
        if self.purged:
            queue = f"; {plural(len(self.purged), 'queued post')} deleted"
        elif self.queue_busy:
            queue = "; the outbound queue is busy: the next 'listlib deliver' deletes their queued posts"
        return f"{plural(len(self.messages), 'message')} {verb}{skipped}{entry}{queue} in {self.seconds:.2f} s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "dry_run": self.dry_run,
            "messages": [_describe(row) for row in self.messages],
            "skipped": [_describe(row) for row in self.skipped],
            "ledger_entry": self.entry.seq if self.entry is not None else None,
            "queued_posts_deleted": self.purged,
            "queue_busy": self.queue_busy,
            "seconds": round(self.seconds, 3),
        }


def _describe(row: Row) -> dict[str, Any]:
    return {
        "call": row.call,
        "list": row.list,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(row.date)),
        "subject": row.subject,
        "from": row.from_addr,
    }


def read_id_file(path: Path) -> list[str]:
    """The IDs in a file: one call number or Message-ID per line; blank lines and lines
    starting with ``#`` are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ListlibError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ListlibError(f"{path}: cannot read ({exc})") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _query_calls(config: Config, query: str) -> list[str]:
    """Every message the search index (the last build's) finds for ``query``."""
    from .search.reader import Source, search
    from .urls import SEARCH_DIR

    source = Source(config.site.output_dir / SEARCH_DIR)
    total = search(source, query, offset=0, limit=1).total
    if not total:
        return []
    return [hit.call for hit in search(source, query, offset=0, limit=total).hits]


def _select(store: Store, config: Config, selector: Selector) -> list[Row]:
    """The rows ``selector`` names, hidden or not; an ID that names no message is an error
    (nothing is changed)."""
    index = store.index
    chosen: dict[str, Row] = {}
    unknown: list[str] = []
    everything = (FILED, HIDDEN)
    for item in selector.ids:
        found = []
        if is_call_number(item):
            found = index.rows_by_call([item])
            found = [row for row in found if row.state in (*everything, REMOVED)]
        if not found:
            found = index.find_rows(everything, message_id=item.strip().strip("<>"))
        if not found:
            found = index.find_rows((REMOVED,), mid_hash=message_id_hash(item))
        if not found:
            unknown.append(item)
        chosen.update((row.call, row) for row in found)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ListlibError(f"no message in the store has the call number or Message-ID {shown}; nothing was changed")
    if selector.query:
        calls = _query_calls(config, selector.query)
        chosen.update((row.call, row) for row in index.rows_by_call(calls) if row.state in everything)
    narrowing = {"slug": selector.slug, "month": selector.month, "sender": selector.sender}
    if selector.ids or selector.query:
        if any(value is not None for value in narrowing.values()):
            allowed = {row.call for row in index.find_rows(everything, **narrowing)}  # type: ignore[arg-type]
            chosen = {call: row for call, row in chosen.items() if call in allowed}
    else:
        chosen = {row.call: row for row in index.find_rows(everything, **narrowing)}  # type: ignore[arg-type]
    return sorted(chosen.values(), key=lambda row: row.call)


def steward(
    config: Config,
    action: Action,
    selector: Selector,
    *,
    reason: str,
    by: str,
    dry_run: bool = False,
    clock: Any = time.time,
    fault: Any = None,
) -> StewardReport:
    """Hide, unhide or remove the messages ``selector`` chooses; ``reason``: why (kept
    in the ledger; for a removal, the public reason); ``by``: the command line. Raises
    ``ListlibError`` when the selector names an unknown message or chooses nothing."""
    started = time.monotonic()
    if selector.is_empty():
        raise ListlibError("say which messages: IDs, --from-file, --query, --list, --month or --sender")
    if action in ("hide", "remove") and not reason.strip():
        raise ListlibError(f"--reason must say why the messages are {_DONE[action]} (it is kept in the ledger)")
    wanted = {"hide": (FILED,), "unhide": (HIDDEN,), "remove": (FILED, HIDDEN)}[action]
    report = StewardReport(action, dry_run)
    with Store(config.site.content_dir, fault=fault).open() as store, store.locked():
        rows = _select(store, config, selector)
        report.messages = [row for row in rows if row.state in wanted]
        report.skipped = [row for row in rows if row.state not in wanted]
        if not rows:
            raise ListlibError("the selection matches no message; nothing was changed")
        if report.messages and not dry_run:
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
            removals = None
            if action == "remove":
                removals = _removals(config, store, report.messages)
                by = _by_call_numbers(action, report.messages)
                _note_terms(config, store, [row for row in report.messages if row.state == FILED])
            report.entry = store.record(action, report.messages, reason.strip(), by, at, removals)
    if action == "remove" and not dry_run:
        _purge_queue(config, report, fault)
    report.seconds = time.monotonic() - started
    return report


@dataclass
class RedactReport:
    """What a redaction did (or, with ``dry_run``, would do)."""

    row: Row
    dry_run: bool
    removed_lines: int
    added_lines: int
    entry: Entry | None = None
    seconds: float = 0.0

    def summary(self) -> str:
        verb = "would be replaced" if self.dry_run else "replaced"
        entry = f"; ledger entry {self.entry.seq}" if self.entry is not None else ""
        return (
            f"message {self.row.call} {verb} by its edited copy ({plural(self.removed_lines, 'line')} out, "
            f"{plural(self.added_lines, 'line')} in){entry} in {self.seconds:.2f} s"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": "redact",
            "dry_run": self.dry_run,
            "message": _describe(self.row),
            "lines_removed": self.removed_lines,
            "lines_added": self.added_lines,
            "ledger_entry": self.entry.seq if self.entry is not None else None,
            "seconds": round(self.seconds, 3),
        }


def _one(store: Store, config: Config, ident: str) -> Row:
    """The one filed or hidden message of a list that ``ident`` names."""
    rows = [row for row in _select(store, config, Selector(ids=(ident,))) if row.state in (FILED, HIDDEN)]
    if not rows:
        raise ListlibError(f"message {ident} is removed; there is nothing to redact")
    if len(rows) > 1:
        calls = ", ".join(row.call for row in rows)
        raise ListlibError(f"{ident} names {len(rows)} messages ({calls}); give one call number")
    if rows[0].list == FAILED:
        raise ListlibError(f"message {rows[0].call} is in {FAILED}, which is published nowhere; remove it instead")
    return rows[0]


def stored_bytes(config: Config, ident: str) -> tuple[Row, bytes]:
    """The message ``ident`` names and its stored bytes (what ``redact --edit`` edits)."""
    from .fsutil import read_file

    with Store(config.site.content_dir).open() as store, store.locked():
        row = _one(store, config, ident)
        return row, read_file(store.root / row.path)


def redact(
    config: Config,
    ident: str,
    raw: bytes,
    *,
    reason: str,
    by: str,
    dry_run: bool = False,
    clock: Any = time.time,
    fault: Any = None,
) -> RedactReport:
    """Replace the message ``ident`` names by the edited copy ``raw``: same call number
    and URL; the original's bytes leave the store; a copy of the original is later a
    duplicate of it. The copy must keep the Message-ID and Date (the message's place
    and URL hang on them) and differ from the original."""
    from .fsutil import read_file
    from .message import parse_message

    started = time.monotonic()
    if not reason.strip():
        raise ListlibError("--reason must say why the message is edited (it is kept in the ledger)")
    with Store(config.site.content_dir, fault=fault).open() as store, store.locked():
        row = _one(store, config, ident)
        original = read_file(store.root / row.path)
        if raw == original:
            raise ListlibError(f"the edited copy of {row.call} is the same as the message; nothing was changed")
        before, after = parse_message(original), parse_message(raw)
        if not after.has_headers:
            raise ListlibError("the edited copy has no header fields; nothing was changed")
        if after.message_id != before.message_id:
            raise ListlibError(
                f"the edited copy must keep the Message-ID <{before.message_id or ''}>; nothing was changed"
            )
        if after.date != before.date:
            raise ListlibError("the edited copy must keep the Date header field; nothing was changed")
        old_lines, new_lines = original.splitlines(), raw.splitlines()
        report = RedactReport(row, dry_run, *_changed_lines(old_lines, new_lines))
        if not dry_run:
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
            if row.state == FILED:
                _note_terms(config, store, [row], {row.call: original})
            report.entry = store.redact(row, raw, reason.strip(), _by_call_numbers("redact", [row]), at)
    report.seconds = time.monotonic() - started
    return report


def _note_terms(config: Config, store: Store, rows: list[Row], raws: dict[str, bytes] | None = None) -> None:
    """Note the search terms of a few filed messages about to leave the store, for the
    next build's purge of the search index (``search.hints``; a note is only a shortcut:
    a message without one is searched for in every term)."""
    from .fsutil import read_file
    from .search.hints import NOTED_UP_TO, note_terms

    if not rows or len(rows) > NOTED_UP_TO:
        return
    notes = []
    for row in rows:
        raw = (raws or {}).get(row.call)
        if raw is None:
            try:
                raw = read_file(store.root / row.path)
            except OSError:
                continue  # a file missing: ``check --repair`` finds it
        notes.append((row, raw))
    note_terms(config.site.cache_dir, notes, config.site.obfuscate_addresses, config.classes.rules)


def _changed_lines(old: list[bytes], new: list[bytes]) -> tuple[int, int]:
    """Lines only in ``old``, lines only in ``new`` (by a diff)."""
    import difflib

    out = added = 0
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            out += a2 - a1
            added += b2 - b1
    return out, added


def _by_call_numbers(action: str, rows: list[Row]) -> str:
    """What the ledger says did a take-down or redaction: the command, naming the messages
    by call number only -- not the command line as typed, which may hold what is being
    taken out (a Message-ID, a sender's address, a search for a name)."""
    return " ".join([f"listlib {action}", *(row.call for row in rows)])


def _purge_queue(config: Config, report: StewardReport, fault: Any) -> None:
    """Delete the queued posts of removed messages (these, and any a killed ``remove``
    left) from the outbound queue, after the store's lock is let go (a delivery run
    takes the queue's lock, then the store's)."""
    from .delivery.service import purge_removed

    try:
        report.purged = purge_removed(config, wait=_QUEUE_WAIT, fault=fault)
    except LockTimeoutError:
        report.queue_busy = True


def _removals(config: Config, store: Store, rows: list[Row]) -> dict[str, Removal]:
    """What the ledger keeps of each message to remove: digests, where it was filed, and
    its place in its thread as threading places it now (``Row.pins``)."""
    places = _places(config, store, rows)
    return {
        row.call: Removal(
            row.path,
            row.date,
            row.raw_hash,
            row.vitals,
            message_id_hash(row.message_id) if row.message_id else None,
            places.get(row.call),
        )
        for row in rows
    }


def _places(config: Config, store: Store, rows: list[Row]) -> dict[str, str]:
    """Call -> its pins (the call it answers or ``-``, then its answers' calls, then the
    digests of its stand-in) for the messages of ``rows`` that are in a thread with
    others (threads brought up to date)."""
    from .overrides import threading_overrides
    from .threader import ThreadInput, stand_in, stand_in_text
    from .threadset import ThreadSet

    threaded = [row for row in rows if row.state == FILED]
    if not threaded:
        return {}
    with ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index, threading_overrides(store.root, store.index, [lst.slug for lst in config.lists]))
        places: dict[str, str] = {}
        for row in threaded:
            thread_id = threadset.thread_of(row.list, row.call)
            entry = threadset.thread(row.list, thread_id) if thread_id else None
            if entry is None:
                continue
            parent = next((p for c, p, _d in entry.messages if c == row.call), None)
            children = [c for c, p, _d in entry.messages if p == row.call]
            if parent or children:
                refs = tuple(row.refs.split())
                message = ThreadInput(row.call, row.message_id, row.in_reply_to, refs, row.subject, row.date, "")
                digests = stand_in_text(stand_in(message))
                places[row.call] = " ".join([parent or "-", *children]) + PINS_STAND_IN + digests
    return places


@dataclass(frozen=True)
class Quote:
    """A message that quotes one about to be removed."""

    call: str
    list: str
    quotes: str
    """The call number of the message it quotes."""
    lines: int
    """How many of its quoted lines come from that message."""
    subject: str


_MIN_QUOTED = 12
"""Characters a line needs to count when looking for quotes (shorter ones are common)."""


def find_quotes(config: Config, selector: Selector) -> list[Quote]:
    """The messages that quote the ones ``selector`` chooses (before they are removed):
    replies in the same thread, or naming them in their references, with quoted lines
    (``> ...``) that are lines of the chosen message's text."""
    from .display import display_message
    from .display.model import DisplayOptions
    from .threadset import ThreadSet

    found: list[Quote] = []
    with Store(config.site.content_dir).open() as store:
        rows = [row for row in _select(store, config, selector) if row.state in (FILED, HIDDEN)]
        if not rows:
            raise ListlibError("the selection matches no message; nothing was changed")
        with ThreadSet(config.site.cache_dir).open() as threadset:
            for row in rows:
                lines = _text_lines(store.root / row.path, display_message, DisplayOptions)
                if not lines:
                    continue
                near: set[str] = set()
                thread_id = threadset.thread_of(row.list, row.call)
                entry = threadset.thread(row.list, thread_id) if thread_id else None
                if entry is not None:
                    near.update(c for c, _p, _d in entry.messages)
                near.discard(row.call)
                candidates = store.index.rows_by_call(near)
                if row.message_id:
                    candidates += [
                        other
                        for other in store.index.rows_referring(row.list, row.message_id)
                        if other.call not in near and other.call != row.call
                    ]
                for other in candidates:
                    if other.state not in (FILED, HIDDEN):
                        continue
                    quoted = _quoted_lines(store.root / other.path)
                    count = sum(1 for line in quoted if line in lines)
                    if count:
                        found.append(Quote(other.call, other.list, row.call, count, other.subject))
    return sorted(found, key=lambda q: (q.quotes, q.call))


def _normal(line: str) -> str:
    return " ".join(line.split())


def _text_lines(path: Path, display_message: Any, options: Any) -> set[str]:
    """The message's own (unquoted) text lines long enough to be telling."""
    from .fsutil import read_file

    try:
        raw = read_file(path)
    except OSError:
        return set()
    text = display_message(raw, options()).text
    return {
        _normal(line)
        for line in text.splitlines()
        if len(_normal(line)) >= _MIN_QUOTED and not line.lstrip().startswith(">")
    }


def _quoted_lines(path: Path) -> list[str]:
    """The text of the quoted lines (``> ...``, any depth) of a stored message."""
    from .fsutil import read_file

    try:
        raw = read_file(path)
    except OSError:
        return []
    quoted = []
    for line in raw.decode("utf-8", "replace").splitlines():
        stripped = line.lstrip()
        if stripped.startswith(">"):
            text = _normal(stripped.lstrip("> \t"))
            if len(text) >= _MIN_QUOTED:
                quoted.append(text)
    return quoted


def published_hidden(config: Config) -> list[str]:
    """Files of hidden and removed messages the last build left in output/ (the next
    build removes them): a hidden one's page, and the raw copies and attachments of
    both (a removed one's page is its tombstone), as the build's manifest lists them."""
    from .manifest import load_manifest
    from .urls import attachment_dir, message_path, raw_path

    with Store(config.site.content_dir).open() as store:
        gone = store.index.find_rows((HIDDEN, REMOVED))
    if not gone:
        return []
    try:
        published = load_manifest(config)
    except ListlibError:
        return []  # nothing built yet, or a build to finish first: nothing to compare with
    mid_folders = _mid_folders(config, published)
    found = []
    for row in gone:
        month = Month(row.year, row.month)
        paths = {raw_path(row.list, month, row.call)}
        if row.state == HIDDEN:
            paths.add(message_path(row.list, month, row.call))
        folders = [attachment_dir(row.list, month, row.call) + "/"]
        digest = row.mid_hash if row.state == REMOVED else message_id_hash(row.message_id) if row.message_id else None
        mid_folder = mid_folders.get((row.list, digest or ""))
        if mid_folder is not None and _links_to(config.site.output_dir, mid_folder, paths):
            folders.append(mid_folder + "/")
        what = "hidden" if row.state == HIDDEN else "removed"
        found.extend(
            f"{path}: {what} message {row.call} is still published; run 'listlib build'"
            for path in sorted(published)
            if path in paths or path.startswith(tuple(folders))
        )
    return found


def _mid_folders(config: Config, published: Iterable[str]) -> dict[tuple[str, str], str]:
    """(list slug, ``message_id_hash``) -> the published Message-ID folder of that
    Message-ID (``[site] message_id_paths``), read from the folders' names."""
    from .urls import MID_RAW_NAME, message_id_folder

    found: dict[tuple[str, str], str] = {}
    for path in published:
        folder, _, name = path.rpartition("/")
        if name != MID_RAW_NAME:
            continue
        slug = folder.partition("/")[0]
        message_id = folder.rpartition("/")[2]
        if message_id_folder(slug, config.site.message_id_folder, message_id) == folder:
            found[slug, message_id_hash(message_id)] = folder
    return found


def _links_to(output: Path, folder: str, paths: set[str]) -> bool:
    """Whether the ``raw`` link of a Message-ID folder leads to one of ``paths`` (another
    message with the same Message-ID may have the folder)."""
    from .urls import MID_RAW_NAME

    try:
        target = os.readlink(output / folder / MID_RAW_NAME)
    except OSError:
        return False
    return posixpath.normpath(posixpath.join(folder, target)) in paths
