"""Where things live in content/, and what an index row says about a stored file. Pure
apart from reading one message file and its sidecar.

The layout (see ``store``): ``<list>/<yyyy>/<mm>/<call>.eml``, an optional
``<call>.json`` sidecar beside it, and ``_failed/<call>.eml`` + ``.json``. The
sidecar holds what the bytes cannot tell a rebuilt index: a date that did not
come from the Date header (and where it came from), and for ``_failed`` the reason.
It never writes a file and never opens the index.
"""

from __future__ import annotations

import calendar
import json
import os
from collections.abc import Iterator
from pathlib import Path

from ..dating import month_of
from ..fsutil import read_file
from ..message import MessageFacts, parse_message
from ..values import FAILED, is_call_number
from .index import FILED, REMOVED, REMOVED_MARK, Row
from .ledger import Removal

__all__ = ["encode_sidecar", "iter_message_files", "make_row", "removed_row", "row_from_file", "stored_file_path"]


def stored_file_path(slug: str, date: int, call: str) -> str:
    """Where a message's file lives in the store, relative to content/ (``.eml``; not
    to be confused with ``urls.message_path``, its page in the output)."""
    if slug == FAILED:
        return f"{FAILED}/{call}.eml"
    month = month_of(date)
    return f"{slug}/{month.year:04d}/{month.month:02d}/{call}.eml"


def iter_message_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(path relative to ``root``, path) of every message file, sorted; dot-folders skipped."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            if name.endswith(".eml"):
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                yield rel, Path(dirpath) / name


def encode_sidecar(
    slug: str, date: int, date_source: str, origin: str, reason: str | None, detail: str | None
) -> bytes | None:
    """The sidecar a message needs so the index can be rebuilt exactly, if any."""
    if slug != FAILED and date_source == "date":
        return None
    meta: dict[str, object] = {"date": date, "date_source": date_source, "origin": origin}
    if slug == FAILED:
        meta.update(reason=reason, detail=detail)
    return (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()


def _load_sidecar(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def make_row(
    facts: MessageFacts,
    *,
    call: str,
    path: str,
    state: int,
    size: int,
    date: int,
    date_source: str,
    collision: bool,
    reason: str | None,
    origin: str,
) -> Row:
    """An index row; list, year and month come from the store path (``_failed`` is not by month)."""
    parts = path.split("/")
    if parts[0] == FAILED:
        stamp = month_of(date)
        year, month = stamp.year, stamp.month
    else:
        year, month = int(parts[1]), int(parts[2])
    return Row(
        call=call,
        list=parts[0],
        path=path,
        state=state,
        message_id=facts.message_id,
        vitals=facts.vitals,
        raw_hash=facts.raw_hash,
        size=size,
        date=date,
        date_source=date_source,
        year=year,
        month=month,
        subject=facts.subject,
        from_name=facts.from_name,
        from_addr=facts.from_addr,
        in_reply_to=facts.in_reply_to,
        refs=" ".join(facts.references),
        collision=int(collision),
        reason=reason,
        origin=origin,
        no_archive=int(facts.no_archive),
    )


def removed_row(call: str, slug: str, removal: Removal, at: str, reason: str) -> Row:
    """The index row of a removed message, from what the ledger keeps of it."""
    parts = removal.path.split("/")
    if parts[0] == FAILED:
        stamp = month_of(removal.date)
        year, month = stamp.year, stamp.month
    else:
        year, month = int(parts[1]), int(parts[2])
    return Row(
        call=call,
        list=slug,
        path=removal.path,
        state=REMOVED,
        message_id=None,
        vitals=removal.vitals,
        raw_hash=removal.raw_hash,
        size=0,
        date=removal.date,
        date_source="removed",
        year=year,
        month=month,
        subject="",
        from_name="",
        from_addr="",
        in_reply_to=None,
        refs="",
        collision=0,
        reason=reason,
        origin="",
        no_archive=REMOVED_MARK,
        mid_hash=removal.mid_hash,
        removed_at=at,
        pins=removal.pins,
    )


def row_from_file(rel: str, path: Path) -> Row | str:
    """Index row for a stored file, or a sentence saying why it does not belong."""
    parts = rel.split("/")
    call = parts[-1][: -len(".eml")]
    if not is_call_number(call):
        return f"{rel}: file name is not a call number"
    if parts[0] == FAILED:
        if len(parts) != 2:
            return f"{rel}: misplaced in {FAILED}"
        year = month = 0
    elif len(parts) != 4 or not (parts[1].isdigit() and parts[2].isdigit()):
        return f"{rel}: not in a <list>/<yyyy>/<mm>/ folder"
    else:
        year, month = int(parts[1]), int(parts[2])
    try:
        raw = read_file(path)
    except OSError as exc:
        return f"{rel}: cannot be read: {exc.strerror}"
    facts = parse_message(raw)
    meta = _load_sidecar(path.with_suffix(".json"))
    date = meta.get("date") if isinstance(meta.get("date"), int) else facts.date
    source = str(meta.get("date_source", "date"))
    if date is None:
        date = _month_start(year, month) if year else int(path.stat().st_mtime)
        source = "import"
    if parts[0] != FAILED and not facts.has_headers:
        return f"{rel}: has no header fields"
    return make_row(
        facts,
        call=call,
        path=rel,
        state=FILED,
        size=len(raw),
        date=date,
        date_source=source,
        collision=False,
        reason=meta.get("reason") if isinstance(meta.get("reason"), str) else None,  # type: ignore[arg-type]
        origin=str(meta.get("origin", "")),
    )


def _month_start(year: int, month: int) -> int:
    return calendar.timegm((year, month, 1, 0, 0, 0, 0, 0, 0))
