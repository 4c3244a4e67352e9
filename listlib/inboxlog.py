"""The durable record of how far ``listlib import`` has read each public-inbox epoch.

One JSON file per epoch, ``content/.public-inbox/<root>.json``, named after the
epoch's root commit (so a moved inbox or a re-cloned epoch is still recognised): the
path it was last read from, the last commit whose message is durable in the store,
and the deletions (``d`` commits) read but not yet dealt with (reported, or applied
as take-downs). A record is replaced atomically (temporary file, fsync, rename,
folder fsync) and only ever after the store said the messages up to its commit are
durable, so a kill at any instant can only make the next run read some commits
again (the store recognises their messages as duplicates), never skip one.

It lives in the store folder, not in the cache: it is not derived from the
messages. Nothing here runs git or knows the store's index.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import LockTimeoutError
from .fsutil import acquire_lock, fsync_dir, make_dirs, release_lock, write_file

__all__ = [
    "STATE_FOLDER",
    "EpochRecord",
    "PendingDeletion",
    "forget_deletions",
    "hold_epoch",
    "load_records",
    "save_record",
]

STATE_FOLDER = ".public-inbox"
"""Under content/: one record per epoch, and the epochs' locks."""
_FORMAT = "listlib-public-inbox-epoch 1"
_LOCK_WAIT = 10.0


@dataclass(frozen=True)
class PendingDeletion:
    """A ``d`` commit read from an epoch: which message public-inbox deleted."""

    commit: str
    raw_hash: str
    """The hash of the deleted message's exact bytes (``message.raw_hash``)."""
    message_id: str | None
    subject: str = ""


@dataclass
class EpochRecord:
    """How far one epoch has been read."""

    root: str
    path: str
    last: str | None = None
    """The last commit read whose message (and every one before it) is durable."""
    pending: list[PendingDeletion] = field(default_factory=list)

    def to_json(self) -> bytes:
        data = {"format": _FORMAT, **asdict(self)}
        return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()


def _record_path(folder: Path, root: str) -> Path:
    return folder / f"{root}.json"


def load_records(folder: Path) -> dict[str, EpochRecord]:
    """Every record, by root commit; files that are not records (or are damaged) are ignored:
    losing a record only means reading that epoch again, as duplicates."""
    records: dict[str, EpochRecord] = {}
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_bytes())
            if data.get("format") != _FORMAT or path.stem != data["root"]:
                continue
            pending = [PendingDeletion(**item) for item in data.get("pending", [])]
            records[data["root"]] = EpochRecord(data["root"], data["path"], data.get("last"), pending)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return records


def save_record(folder: Path, record: EpochRecord) -> None:
    """Replace the epoch's record atomically and durably."""
    make_dirs(folder)
    final = _record_path(folder, record.root)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    write_file(tmp, record.to_json(), sync=True)
    os.replace(tmp, final)
    fsync_dir(folder)


def hold_epoch(folder: Path, epoch: Path) -> int:
    """Take the lock of one epoch (by its resolved path), so that two imports never read
    it at once; raises ``LockTimeoutError`` after a few seconds. Release with ``release_lock``."""
    make_dirs(folder)
    key = hashlib.blake2b(str(epoch.resolve()).encode(), digest_size=8).hexdigest()
    busy = f"{epoch}: another 'listlib import' is reading this public-inbox epoch; try again later"
    return acquire_lock(folder / f"{key}.lock", _LOCK_WAIT, busy)


def forget_deletions(folder: Path, roots_and_commits: dict[str, set[str]]) -> None:
    """Drop pending deletions once dealt with: by root commit, the ``d`` commits to drop.
    An epoch another import holds keeps them (they are reported again: never lost)."""
    for root, commits in roots_and_commits.items():
        record = load_records(folder).get(root)
        if record is None:
            continue
        try:
            lock = hold_epoch(folder, Path(record.path))
        except LockTimeoutError:
            continue
        try:
            record = load_records(folder).get(root)
            if record is None:
                continue
            kept = [item for item in record.pending if item.commit not in commits]
            if len(kept) != len(record.pending):
                record.pending = kept
                save_record(folder, record)
        finally:
            release_lock(lock)
