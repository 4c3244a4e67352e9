"""``listlib legacy import``: map a list's old archive onto the store, once, and keep
the map in the store (``content/<slug>/legacy.tsv``, see ``mapfile``).

Why once, and into the store, rather than at every build: an old archive is thousands
of HTML files a build should not read again (and may be deleted once mapped); a map
names messages by call number, so it outlives a take-down (a removed message keeps its
call number and its tombstone, not its Message-ID); and a build reads one small file.
Run it again after importing more of the old mail. What cannot be matched is
reported with the reason, never guessed.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config, LegacyConfig
from ..errors import LegacyError
from ..store.core import Store
from ..store.index import Row
from ..values import Month, message_id_hash, plural
from .hyperkitty import Known, hyperkitty_entries
from .mapfile import LIST_TARGET, MONTH_TARGET, Entry, format_map, map_file, required_map, save_map
from .mhonarc import iter_mhonarc

__all__ = ["LegacyReport", "import_legacy", "legacy_problems"]


@dataclass
class LegacyReport:
    """What ``import_legacy`` mapped for one list."""

    slug: str
    kind: str
    map: Path
    messages: int = 0
    """Old URLs of messages mapped (a message may have several)."""
    pages: int = 0
    """Old index pages mapped to a month or the list's index."""
    removed: int = 0
    """Of ``messages``, those of removed messages (they lead to the tombstone)."""
    unmatched: list[tuple[str, str]] = field(default_factory=list)
    """(old URL, why) of the old pages that lead nowhere."""
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lost = f", {len(self.unmatched)} not matched" if self.unmatched else ""
        removed = f" ({self.removed} removed)" if self.removed else ""
        return (
            f"{self.slug}: {plural(self.messages, 'message URL')}{removed} and {plural(self.pages, 'index page')} "
            f"of the old {self.kind} archive mapped{lost}; map in {self.map}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "list": self.slug,
            "kind": self.kind,
            "map": str(self.map),
            "messages": self.messages,
            "pages": self.pages,
            "removed": self.removed,
            "unmatched": [{"url": url, "reason": reason} for url, reason in self.unmatched],
            "notes": self.notes,
        }


def import_legacy(config: Config, slugs: Sequence[str] = (), *, dry_run: bool = False) -> list[LegacyReport]:
    """Map the old archives of these lists (default: every list with a ``legacy`` table)
    and write their maps (not with ``dry_run``)."""
    chosen = list(slugs) or [lst.slug for lst in config.lists if lst.legacy is not None]
    if not chosen:
        raise LegacyError(f"{config.path}: no list has a [lists.<slug>.legacy] table naming its old archive")
    reports = []
    with Store(config.site.content_dir).open() as store:
        for slug in chosen:
            lst = config.get_list(slug)
            if lst is None:
                raise LegacyError(f"{config.path}: there is no list {slug!r}")
            if lst.legacy is None:
                raise LegacyError(f"{config.path}: lists.{slug}.legacy: no such table; name the old archive there")
            report = LegacyReport(slug, lst.legacy.kind, map_file(config.site.content_dir, slug))
            entries = _entries(lst.legacy, store.index.kept_rows(slug), config.site.content_dir, report)
            report.messages = sum(1 for _old, target, _month in entries if not target.startswith("="))
            report.pages = len(entries) - report.messages
            if not dry_run:
                with store.locked():
                    save_map(report.map, format_map(entries, f"listlib legacy map of {slug}: {lst.legacy.kind}"))
            reports.append(report)
    return reports


def _entries(legacy: LegacyConfig, rows: list[Row], content: Path, report: LegacyReport) -> list[Entry]:
    if legacy.kind == "hyperkitty":
        return _hyperkitty(legacy, rows, report)
    source = legacy.source
    if source is None or not source.is_dir():
        raise LegacyError(f"lists.{report.slug}.legacy.source: {source} is not a folder")
    if legacy.kind == "mhonarc":
        return _mhonarc(source, rows, report)
    from .pipermail import pipermail_entries  # reads every page: only for this kind

    entries, report.removed = pipermail_entries(source, rows, content, report.slug, report.unmatched)
    return entries


def _month(row: Row) -> Month:
    return Month(row.year, row.month)


def _hyperkitty(legacy: LegacyConfig, rows: list[Row], report: LegacyReport) -> list[Entry]:
    known = [
        Known(row.call, row.message_id, _month(row), row.in_reply_to, row.refs)
        for row in sorted(rows, key=lambda r: (r.date, r.call))
        if not row.removed and row.message_id
    ]
    lost = sum(1 for row in rows if row.removed)
    if lost:
        report.notes.append(
            f"{plural(lost, 'removed message')} kept no Message-ID: their HyperKitty URLs cannot be computed"
        )
    entries, shared = hyperkitty_entries(legacy.address, known)
    if shared:
        report.notes.append(
            f"{plural(shared, 'message')} with the Message-ID of an earlier one: HyperKitty archived only the "
            "earliest, and its URL leads there"
        )
    return entries


def _mhonarc(source: Path, rows: list[Row], report: LegacyReport) -> list[Entry]:
    by_id: dict[str, Row] = {}
    for row in sorted(rows, key=lambda r: r.call, reverse=True):  # the first filed wins
        if row.message_id and not row.removed:
            by_id[row.message_id] = row
    removed = {row.mid_hash: row for row in rows if row.removed and row.mid_hash}
    entries: list[Entry] = []
    indexes: list[str] = []
    folder_months: dict[str, set[Month]] = defaultdict(set)
    for page in iter_mhonarc(source):
        if page.message_id is None:
            indexes.append(page.path)
            continue
        if not page.message_id:
            report.unmatched.append((page.path, "the page records no Message-ID"))
            continue
        row = by_id.get(page.message_id)
        if row is None:
            row = removed.get(message_id_hash(page.message_id))
            if row is not None:
                report.removed += 1
        if row is None:
            report.unmatched.append(
                (page.path, f"no message of list {report.slug!r} has Message-ID <{page.message_id}>")
            )
            continue
        entries.append((page.path, row.call, _month(row)))
        folder_months[os.path.dirname(page.path)].add(_month(row))
    for path in indexes:
        months = folder_months.get(os.path.dirname(path), set())
        if os.path.dirname(path) and len(months) == 1:
            entries.append((path, MONTH_TARGET, next(iter(months))))
        else:
            entries.append((path, LIST_TARGET, None))
    return entries


def legacy_problems(config: Config, store: Store) -> list[str]:
    """What ``listlib check`` says of the legacy maps: a ``legacy`` table without its map,
    a damaged map, and old URLs naming messages the store does not have (a map from
    another store, or older than a refile): those redirects are not written."""
    problems = []
    for lst in config.lists:
        if lst.legacy is None:
            continue
        path = map_file(config.site.content_dir, lst.slug)
        try:
            found = required_map(config.site.content_dir, lst.slug, f"lists.{lst.slug}.legacy")
        except ValueError as exc:
            problems.append(str(exc))
            continue
        known = {row.call for row in store.index.kept_rows(lst.slug)}
        lost = sum(1 for entries in found.messages.values() for _old, call in entries if call not in known)
        if lost:
            problems.append(
                f"{path}: {plural(lost, 'old URL')} without a message in list {lst.slug!r} (no redirect); "
                f"run 'listlib legacy import {lst.slug}'"
            )
    return problems
