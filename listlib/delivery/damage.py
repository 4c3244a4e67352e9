"""What a sound queued post looks like: the checks that find a damaged one (pure).

``queue`` reads a post's files and asks these checks about what it read; a post
that fails one gets a ``Damage`` and is never sent (see ``queue``'s docstring).
Nothing here touches the disk.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

__all__ = ["VERSION", "Damage", "check_entry", "check_meta"]

VERSION = 2
"""post.json's version: 2 added ``size`` and ``sha256`` of message.eml; 1 is still read."""
_STATUSES = frozenset(("done", "failed", "temp"))


@dataclass(frozen=True)
class Damage:
    """Why a queued post cannot be trusted (and is never sent)."""

    kind: str
    """``missing-post-json``, ``invalid-post-json``, ``missing-journal``, ``invalid-journal``,
    ``missing-message``, ``message-mismatch``, ``unexpected-file`` (or ``invalid-damage-json``:
    the record of an earlier one cannot be read)."""
    reason: str
    """A sentence for the admin."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_meta(meta: object, post_id: str) -> str | None:
    """What is wrong with a post.json, or None."""
    if not isinstance(meta, dict):
        return "not a JSON object"
    version = meta.get("version")
    if version not in (1, VERSION):
        return f"version {version!r} is not one this listlib reads"
    if meta.get("id") != post_id:
        return f"it is the post.json of post {meta.get('id')!r}"
    for key in ("list", "sender"):
        if not isinstance(meta.get(key), str):
            return f"{key!r} is missing or not a string"
    recipients = meta.get("recipients")
    if not isinstance(recipients, list) or not all(isinstance(r, str) for r in recipients):
        return "'recipients' is missing or not a list of addresses"
    if not _is_number(meta.get("queued_at")):
        return "'queued_at' is missing or not a number"
    if version == 1:
        return None  # queued before the size and hash were recorded: cannot be verified
    size, digest = meta.get("size"), meta.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "'size' is missing or not a byte count"
    if not isinstance(digest, str) or len(digest) != 64:
        return "'sha256' is missing or not a SHA-256 digest"
    return None


def check_entry(entry: object, recipients: Container[str]) -> str | None:
    """What is wrong with a whole journal line, or None."""
    if not isinstance(entry, dict):
        return "not a journal entry"
    if "r" in entry:
        if entry["r"] not in recipients:
            return f"{entry['r']!r} is not a recipient of the post"
        if entry.get("s") not in _STATUSES:
            return f"unknown status {entry.get('s')!r}"
        return None
    if "attempt" in entry:
        if not isinstance(entry["attempt"], int) or not (entry.get("next") is None or _is_number(entry["next"])):
            return "an attempt without a number or a next try"
        return None
    return "not a journal entry"
