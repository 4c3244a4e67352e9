"""Stewarding an archive: choosing messages (by call number, Message-ID, list, month,
sender, search query or a file of IDs) and hiding them from the website or showing them
again, each action recorded in the store's ledger (``store.ledger``) before it takes
effect.

A hidden message stays in the store, byte for byte, under its call number; the index
marks it hidden, so threads, pages, feeds, downloads and the search index leave it out
at the next build, a re-import or POP3 fetch of it is refused, and queued delivery of
it stops. ``unhide`` puts it back exactly as it was. Click-free: the CLI parses, calls
these functions and prints what they return; nothing here prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Config
from .errors import ListlibError
from .store.core import Store
from .store.index import FILED, HIDDEN, Row
from .store.ledger import Action, Entry
from .values import Month, is_call_number, plural

__all__ = ["Selector", "StewardReport", "published_hidden", "read_id_file", "steward"]


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
    """What a hide or unhide did (or, with ``dry_run``, would do)."""

    action: Action
    dry_run: bool
    messages: list[Row] = field(default_factory=list)
    """The messages it acted on."""
    skipped: list[Row] = field(default_factory=list)
    """Messages selected but already as asked (hidden already, or not hidden)."""
    entry: Entry | None = None
    seconds: float = 0.0

    def summary(self) -> str:
        done = {"hide": "hidden", "unhide": "shown again"}[self.action]
        verb = f"would be {done}" if self.dry_run else done
        already = {"hide": "already hidden", "unhide": "not hidden"}[self.action]
        skipped = f" ({len(self.skipped)} {already})" if self.skipped else ""
        entry = f"; ledger entry {self.entry.seq}" if self.entry is not None else ""
        return f"{plural(len(self.messages), 'message')} {verb}{skipped}{entry} in {self.seconds:.2f} s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "dry_run": self.dry_run,
            "messages": [_describe(row) for row in self.messages],
            "skipped": [_describe(row) for row in self.skipped],
            "ledger_entry": self.entry.seq if self.entry is not None else None,
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
            found = [row for row in found if row.state in everything]
        if not found:
            found = index.find_rows(everything, message_id=item.strip().strip("<>"))
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
    """Hide or unhide the messages ``selector`` chooses; ``reason``: why (kept in the
    ledger); ``by``: the command line. Raises ``ListlibError`` when the selector names an
    unknown message or chooses nothing to change."""
    started = time.monotonic()
    if selector.is_empty():
        raise ListlibError("say which messages: IDs, --from-file, --query, --list, --month or --sender")
    if action == "hide" and not reason.strip():
        raise ListlibError("--reason must say why the messages are hidden (it is kept in the ledger)")
    wanted = FILED if action == "hide" else HIDDEN
    report = StewardReport(action, dry_run)
    with Store(config.site.content_dir, fault=fault).open() as store, store.locked():
        rows = _select(store, config, selector)
        report.messages = [row for row in rows if row.state == wanted]
        report.skipped = [row for row in rows if row.state != wanted]
        if not rows:
            raise ListlibError("the selection matches no message; nothing was changed")
        if report.messages and not dry_run:
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
            report.entry = store.record(action, report.messages, reason.strip(), by, at)
    report.seconds = time.monotonic() - started
    return report


def published_hidden(config: Config) -> list[str]:
    """Files of hidden messages the last build left in output/ (the next build removes
    them): their pages, raw copies and attachments, as the build's manifest lists them."""
    from .manifest import load_manifest
    from .urls import attachment_dir, message_path, raw_path

    with Store(config.site.content_dir).open() as store:
        hidden = store.index.find_rows((HIDDEN,))
    if not hidden:
        return []
    try:
        published = load_manifest(config)
    except ListlibError:
        return []  # nothing built yet, or a build to finish first: nothing to compare with
    found = []
    for row in hidden:
        month = Month(row.year, row.month)
        paths = {message_path(row.list, month, row.call), raw_path(row.list, month, row.call)}
        folder = attachment_dir(row.list, month, row.call) + "/"
        found.extend(
            f"{path}: hidden message {row.call} is still published; run 'listlib build'"
            for path in sorted(published)
            if path in paths or path.startswith(folder)
        )
    return found
