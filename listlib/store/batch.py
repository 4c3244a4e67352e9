"""Deciding a batch: what a message ready to be filed is (``Prepared``), what filing did
with it (``Outcome``), and whether it is already filed, against the index and against the
batch itself (``Batch``, ``find_duplicate``). Decisions only: this module never writes a
file, never commits the index and never takes the store lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ..dedup import is_same_post
from ..message import MessageFacts, parse_message
from ..values import FAILED, message_id_hash
from .index import HIDDEN, PENDING, REMOVED, Index, Row
from .layout import make_row

__all__ = ["Batch", "Outcome", "Prepared", "Status", "find_duplicate", "pending_row"]

Status = Literal["filed", "duplicate", "refused", "removed", "collision", "failed"]
"""``refused``: a copy of a message stewards hid (``listlib hide``); ``removed``: a copy
of a message they took down (``listlib remove``): neither is ever filed again."""


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


class Batch:
    """What dedup of one batch looks at: the related rows already in the index
    (fetched once for the whole batch) and the rows the batch itself adds."""

    def __init__(self, index: Index, items: list[Prepared]) -> None:
        self.rows: list[Row] = []
        """The rows this batch adds, in filing order."""
        self.raw: dict[str, bytes] = {}
        self._by_key: dict[tuple[str, str], list[Row]] = {}
        self._with_removed: set[str] = set()
        """Lists among whose related rows a removed one is (kept by its Message-ID's hash)."""
        self._redacted: dict[tuple[str, str], Row] = {}
        """(list, "=" + a redacted message's original raw hash, or "~" + its vitals) -> its row now."""
        by_slug: dict[str, list[Prepared]] = {}
        for item in items:
            by_slug.setdefault(item.slug, []).append(item)
        stewarded = index.has_removals()
        for slug, group in by_slug.items():
            checked = slug != FAILED and stewarded
            related = index.find_related(
                slug,
                {i.facts.raw_hash for i in group},
                {i.facts.message_id for i in group if i.facts.message_id and slug != FAILED},
                {i.facts.vitals for i in group if not i.facts.message_id and slug != FAILED},
                {message_id_hash(i.facts.message_id) for i in group if i.facts.message_id and checked},
            )
            for row in related:
                self._remember(row)
            if checked:
                self._remember_redacted(index, slug, group)

    def _remember_redacted(self, index: Index, slug: str, group: list[Prepared]) -> None:
        found = index.find_redacted(slug, {i.facts.raw_hash for i in group}, {i.facts.vitals for i in group})
        if not found:
            return
        rows = {row.call: row for row in index.rows_by_call({call for call, _r, _v in found})}
        for call, raw_hash, vitals in found:
            if call in rows:
                self._redacted[(slug, "=" + raw_hash)] = rows[call]
                self._redacted[(slug, "~" + vitals)] = rows[call]

    def redacted(self, slug: str, raw_hash: str, vitals: str, message_id: str | None) -> Row | None:
        """The message redacted from these bytes, or from a copy with these vitals and
        its Message-ID (or none), if any."""
        if not self._redacted:
            return None
        row = self._redacted.get((slug, "=" + raw_hash))
        if row is None:
            row = self._redacted.get((slug, "~" + vitals))
            if row is not None and message_id and row.message_id not in (None, message_id):
                return None
        return row

    def _remember(self, row: Row) -> None:
        self._by_key.setdefault((row.list, row.raw_hash), []).append(row)
        if row.mid_hash:
            self._by_key.setdefault((row.list, "#" + row.mid_hash), []).append(row)
            self._with_removed.add(row.list)
        if row.message_id:
            self._by_key.setdefault((row.list, "<" + row.message_id), []).append(row)
        else:
            self._by_key.setdefault((row.list, "~" + row.vitals), []).append(row)

    def add(self, row: Row, raw: bytes) -> None:
        self.rows.append(row)
        self.raw[row.call] = raw
        self._remember(row)

    def candidates(self, slug: str, raw_hash: str, message_id: str | None) -> list[Row]:
        """Rows with these exact bytes or this Message-ID (removed ones: its hash), oldest first."""
        found = list(self._by_key.get((slug, raw_hash), ()))
        if message_id:
            found += [r for r in self._by_key.get((slug, "<" + message_id), ()) if r not in found]
            if slug in self._with_removed:
                removed = self._by_key.get((slug, "#" + message_id_hash(message_id)), ())
                found += [r for r in removed if r not in found]
        return sorted(found)

    def without_id(self, slug: str, vitals: str) -> Row | None:
        """The oldest row without a Message-ID whose vitals match."""
        rows = self._by_key.get((slug, "~" + vitals))
        return min(rows) if rows else None


def find_duplicate(item: Prepared, batch: Batch, read_filed: Callable[[Row], bytes]) -> Outcome | tuple[str, ...]:
    """The duplicate outcome when ``item`` is already filed, else the call numbers
    of different messages that share its Message-ID (a collision when not empty).
    ``read_filed`` reads the bytes of a row filed before this batch."""
    facts = item.facts
    slug, mid = item.slug, facts.message_id
    if slug == FAILED:
        mid = None
    if slug != FAILED:  # a copy of what a redacted message was: the edited message's duplicate
        redacted = batch.redacted(slug, facts.raw_hash, facts.vitals, mid)
        if redacted is not None:
            return Outcome(_seen(redacted), redacted.call, item.origin, facts.message_id, slug)
    candidates = batch.candidates(slug, facts.raw_hash, mid)
    for row in candidates:
        if row.state == REMOVED:  # any copy of a taken-down message, whatever its bytes
            return Outcome("removed", row.call, item.origin, facts.message_id, slug)
    for row in candidates:
        if row.raw_hash == facts.raw_hash:
            return Outcome(_seen(row), row.call, item.origin, facts.message_id, slug)
    if slug == FAILED:
        return ()
    if mid:
        for row in candidates:
            if row.vitals == facts.vitals:
                return Outcome(_seen(row), row.call, item.origin, mid, slug)
            other_raw = batch.raw[row.call] if row.call in batch.raw else read_filed(row)
            if is_same_post(facts, item.raw, parse_message(other_raw), other_raw):
                return Outcome(_seen(row), row.call, item.origin, mid, slug)
        return tuple(sorted(row.call for row in candidates))
    row = batch.without_id(slug, facts.vitals)
    if row is not None:
        return Outcome(_seen(row), row.call, item.origin, None, slug)
    return ()


def _seen(row: Row) -> Status:
    """The outcome of filing a copy of ``row``'s message again."""
    return "refused" if row.state == HIDDEN else "removed" if row.state == REMOVED else "duplicate"


def pending_row(item: Prepared, call: str, path: str, collision: bool) -> Row:
    """The index row ``item`` is filed under, *pending* until its file is in place."""
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
