"""Pipermail's pages (Mailman 2): not mapped yet."""

from __future__ import annotations

from pathlib import Path

from ..errors import LegacyError
from ..store.index import Row
from .mapfile import Entry

__all__ = ["pipermail_entries"]


def pipermail_entries(source: Path, rows: list[Row], slug: str, unmatched: list[tuple[str, str]]) -> list[Entry]:
    raise LegacyError(f"lists.{slug}.legacy.kind: 'pipermail' archives cannot be mapped yet")
