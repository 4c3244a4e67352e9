"""A legacy redirect map: which old URL leads where, as the store keeps it
(``content/<slug>/legacy.tsv``). Pure apart from ``load_map`` and ``save_map``.

One line per old URL, tab-separated: the URL relative to the old archive's root, then
its target, then a month:

- a message: its call number and the month it is filed under (``msg00012.html``,
  ``0Abc12Xy``, ``2024-05``); the month says which build job makes its page, without
  asking the index;
- a month page: ``=month`` and the month (``2024-May/thread.html``);
- a month's mbox download: ``=mbox`` and the month (``2024-May.txt.gz``);
- the list's index: ``=list`` and nothing.

Messages are named by call number, never by Message-ID: a removed message keeps its
call number (its URL becomes a tombstone), not its Message-ID. Lines starting with
``#`` are comments. Written sorted, so the same map is the same bytes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..fsutil import fsync_dir, write_file
from ..values import Month, is_call_number

__all__ = [
    "LIST_TARGET",
    "MAP_NAME",
    "MBOX_TARGET",
    "MONTH_TARGET",
    "LegacyMap",
    "format_map",
    "load_map",
    "map_file",
    "parse_map",
    "save_map",
]

MAP_NAME = "legacy.tsv"
"""The map's file in a list's folder of the store."""
LIST_TARGET = "=list"
MONTH_TARGET = "=month"
MBOX_TARGET = "=mbox"

Entry = tuple[str, str, Month | None]
"""(old URL, call number or ``=list`` / ``=month`` / ``=mbox``, month or None)."""


@dataclass(frozen=True)
class LegacyMap:
    """One list's map, as a build reads it."""

    messages: dict[Month, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """Month -> (old URL, call number) of the messages filed under it."""
    pages: tuple[tuple[str, str, Month | None], ...] = ()
    """(old URL, ``=list`` / ``=month`` / ``=mbox``, month) of the old index pages and
    downloads."""
    digest: str = ""
    """A digest of the file (part of the build's site fingerprint)."""

    def __len__(self) -> int:
        return sum(len(entries) for entries in self.messages.values()) + len(self.pages)


def map_file(content_dir: Path, slug: str) -> Path:
    return content_dir / slug / MAP_NAME


def _month(text: str) -> Month:
    year, _, month = text.partition("-")
    value = Month(int(year), int(month))
    if not 1 <= value.month <= 12:
        raise ValueError(text)
    return value


def parse_map(text: str, where: str) -> LegacyMap:
    """A map from its text; ``where`` names the file in errors (ValueError)."""
    messages: dict[Month, list[tuple[str, str]]] = {}
    pages: list[tuple[str, str, Month | None]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError(line)
            old, target, month = parts
            if old in seen:
                raise ValueError(line)
            seen.add(old)
            if target == LIST_TARGET:
                pages.append((old, target, None))
            elif target in (MONTH_TARGET, MBOX_TARGET):
                pages.append((old, target, _month(month)))
            elif is_call_number(target):
                messages.setdefault(_month(month), []).append((old, target))
            else:
                raise ValueError(line)
        except ValueError:
            raise ValueError(f"{where}, line {number}: not a line of a legacy map: {line!r}") from None
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return LegacyMap({month: tuple(entries) for month, entries in messages.items()}, tuple(pages), digest)


def format_map(entries: list[Entry], header: str) -> str:
    """The text of a map (sorted by old URL); ``header``: a comment line for readers."""
    lines = [f"# {header}"]
    seen = None
    for old, target, month in sorted(entries, key=lambda entry: entry[0]):
        if "\t" in old or "\n" in old or not old:
            raise ValueError(f"{old!r}: not a URL")
        if old == seen:
            raise ValueError(f"{old!r}: mapped twice")
        seen = old
        lines.append(f"{old}\t{target}\t{'' if month is None else month}")
    return "\n".join(lines) + "\n"


def load_map(path: Path) -> LegacyMap | None:
    """The map in ``path``, or None when there is none (ValueError when it is damaged)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse_map(text, str(path))


def required_map(content_dir: Path, slug: str, table: str) -> LegacyMap:
    """The map of list ``slug``, whose ``legacy`` table (``table``, as the config names
    it) asks for one; ValueError naming the file, what is wrong with it (missing or
    damaged) and the command that writes it again."""
    path = map_file(content_dir, slug)
    again = f"run 'listlib legacy import {slug}'"
    try:
        loaded = load_map(path)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{exc}; {again} to write it again") from None
    if loaded is None:
        raise ValueError(f"{table}: the old archive is not mapped yet ({path} is missing); {again}")
    return loaded


def save_map(path: Path, text: str) -> None:
    """Replace the map durably (temporary file, fsync, rename, folder fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    write_file(temporary, text.encode("utf-8"), sync=True)
    os.replace(temporary, path)
    fsync_dir(path.parent)
