"""The record of what a bucket holds, stored in shards so a publish rewrites only the
part that changed: pure encoding and decoding, no I/O.

The record's root object (``RECORD_NAME``) holds the generation, the header rules'
fingerprint and the name of every shard; each shard (an object under ``SHARD_DIR``)
holds the files and pending deletions of one part of the site:

- a list's month (``<list>/<yyyy>/<mm>``: its pages, raw copies and attachments),
- a search segment (``search/seg/<id>``),
- else one of ``HASHED`` buckets per top-level folder (``mid``, a list's own pages,
  Message-ID paths, the site's pages), by a CRC of the path.

A new message thus rewrites its month's shard, its new segment's and a few small
hashed ones, not a record of every file in the site. Most publishes rewrite no shard at all: the root also holds a
``delta``, the entries changed since the shards were written, applied over them when
the record is read; only when the delta outgrows ``DELTA_LIMIT`` paths are the shards
holding them written again and the delta emptied. A one-reply publish thus writes the
root and nothing else of the record.

A shard's object name ends in the digest of its bytes, so writing one never changes an
object the root names: the root is written last and is the commit point. The root is
also where a publish first writes down what it is about to put (``intent``: new files
and shards, over the unchanged record), so that a publish killed midway leaves the next
one knowing what the bucket may hold; and where it names shards no longer used
(``retired``), deleted after it and, should that not happen, by the next publish.
Roots of format 2 (no delta, intent in an object of its own) and records of format 1
(one object holding everything) are still read.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import PublishError
from ..urls import SEARCH_DIR
from .plan import Files, Record

__all__ = [
    "DELTA_LIMIT",
    "HASHED",
    "SHARD_DIR",
    "Delta",
    "Root",
    "group",
    "parse_root",
    "parse_shard",
    "root_bytes",
    "shard_bytes",
    "shard_of",
]

SHARD_DIR = ".listlib-published"
"""Where the shards are, under the target's prefix (no output file starts with a dot)."""
HASHED = 32
DELTA_LIMIT = 1000
"""Paths the root's delta may hold (about 60 kB compressed) before the shards holding
them are written again: a publish of one reply touches about 30."""
_FORMAT = 3


def shard_of(path: str) -> str:
    """The shard holding ``path``'s entry (see the module docstring)."""
    parts = path.split("/", 3)
    if len(parts) == 4 and len(parts[1]) == 4 and parts[1].isdigit() and len(parts[2]) == 2 and parts[2].isdigit():
        return "/".join(parts[:3])
    if len(parts) == 4 and parts[0] == SEARCH_DIR and parts[1] == "seg":
        return "/".join(parts[:3])
    folder = parts[0] if len(parts) > 1 else ""
    return f"{folder}#{zlib.crc32(path.encode()) % HASHED}"


def group(record: Record, keys: set[str] | None = None) -> dict[str, tuple[Files, Files]]:
    """Shard key -> (files, pending) of ``record``, only the shards in ``keys`` when given."""
    shards: dict[str, tuple[Files, Files]] = {}
    for index, entries in enumerate((record.files, record.pending)):
        for path, value in entries.items():
            key = shard_of(path)
            if keys is not None and key not in keys:
                continue
            found = shards.get(key)
            if found is None:
                found = shards[key] = ({}, {})
            found[index][path] = value
    return shards


def _gzip(data: dict[str, object]) -> bytes:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode()
    return gzip.compress(text, compresslevel=1, mtime=0)


def shard_bytes(key: str, files: Files, pending: Files) -> tuple[str, bytes]:
    """The object name and bytes of one shard (the same entries always give the same bytes)."""
    data = _gzip(
        {
            "shard": key,
            "files": {path: list(value) for path, value in files.items()},
            "pending": {path: list(value) for path, value in pending.items()},
        }
    )
    tag = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    return f"{SHARD_DIR}/{tag}-{hashlib.blake2b(data, digest_size=10).hexdigest()}.json.gz", data


@dataclass
class Delta:
    """Entries changed since the shards were written: a path's files and pending entry,
    None where it has none (whatever its shard says)."""

    files: dict[str, tuple[str, int] | None] = field(default_factory=dict)
    pending: dict[str, tuple[str, int] | None] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.files.keys() | self.pending.keys())

    def updated(self, record: Record, paths: Iterable[str]) -> Delta:
        """This delta with ``paths`` as ``record`` has them."""
        delta = Delta(dict(self.files), dict(self.pending))
        for path in paths:
            delta.files[path] = record.files.get(path)
            delta.pending[path] = record.pending.get(path)
        return delta

    def apply(self, record: Record) -> None:
        for entries, changes in ((record.files, self.files), (record.pending, self.pending)):
            for path, value in changes.items():
                if value is None:
                    entries.pop(path, None)
                else:
                    entries[path] = value

    def to_json(self) -> dict[str, object]:
        return {
            "files": {path: None if value is None else list(value) for path, value in self.files.items()},
            "pending": {path: None if value is None else list(value) for path, value in self.pending.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, dict[str, list[object] | None]]) -> Delta:
        def entries(changes: dict[str, list[object] | None]) -> dict[str, tuple[str, int] | None]:
            return {
                str(path): None if value is None else (str(value[0]), int(value[1]))  # type: ignore[call-overload]
                for path, value in changes.items()
            }

        return cls(entries(data["files"]), entries(data["pending"]))


@dataclass
class Root:
    generation: int
    headers: str
    names: dict[str, str]
    """Shard key -> object name."""
    delta: Delta = field(default_factory=Delta)
    intent: Files = field(default_factory=dict)
    """Files a publish over this record was about to put that the record does not name."""
    intent_shards: list[str] = field(default_factory=list)
    """Shards such a publish was about to put (or meant to retire)."""
    retired: list[str] = field(default_factory=list)
    """Shards no longer named, to delete."""
    legacy: bool = False
    """Format 2: an interrupted publish's intent is an object of its own."""


def root_bytes(root: Root) -> bytes:
    data: dict[str, object] = {
        "format": _FORMAT,
        "generation": root.generation,
        "headers": root.headers,
        "shards": root.names,
        "delta": root.delta.to_json(),
    }
    if root.intent or root.intent_shards:
        data["intent"] = {"files": {p: list(v) for p, v in root.intent.items()}, "shards": root.intent_shards}
    if root.retired:
        data["retired"] = root.retired
    return _gzip(data)


def parse_root(data: bytes, where: str) -> Root | Record:
    """A root of format 3 or 2, or the whole record of format 1."""
    try:
        loaded = json.loads(gzip.decompress(data))
        if loaded.get("format") == 1:
            return Record.from_bytes(data, where)
        if loaded.get("format") not in (2, _FORMAT):
            raise ValueError(f"format {loaded.get('format')!r}")
        names = {str(key): str(name) for key, name in loaded["shards"].items()}
        root = Root(int(loaded["generation"]), str(loaded["headers"]), names, legacy=loaded["format"] == 2)
        if "delta" in loaded:
            root.delta = Delta.from_json(loaded["delta"])
        intent = loaded.get("intent") or {}
        root.intent = {str(p): (str(d), int(s)) for p, (d, s) in intent.get("files", {}).items()}
        root.intent_shards = [str(name) for name in intent.get("shards", [])]
        root.retired = [str(name) for name in loaded.get("retired", [])]
        return root
    except PublishError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise PublishError(
            f"{where}: the record of the last publish is damaged ({exc}); delete it to publish everything again"
        ) from None


def parse_shard(data: bytes, where: str) -> tuple[Files, Files]:
    try:
        loaded = json.loads(gzip.decompress(data))
        files = {path: (str(digest), int(size)) for path, (digest, size) in loaded["files"].items()}
        pending = {path: (str(digest), int(size)) for path, (digest, size) in loaded["pending"].items()}
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PublishError(
            f"{where}: a shard of the record of the last publish is damaged ({exc}); "
            "delete the record to publish everything again"
        ) from None
    return files, pending


def assemble(root: Root, shards: Iterable[tuple[Files, Files]]) -> Record:
    """The record ``root`` names: its shards' entries, then its delta over them."""
    record = Record(generation=root.generation, headers=root.headers)
    for files, pending in shards:
        record.files.update(files)
        record.pending.update(pending)
    root.delta.apply(record)
    return record
