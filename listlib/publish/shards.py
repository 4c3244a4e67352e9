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
hashed ones, not a record of every file in the site. A shard's object name ends in the
digest of its bytes, so writing one never changes an object the root names: the root
is written last and is the commit point; shards no root names any more are deleted
after it (a crash before that leaves a few small orphans, which ``--verify`` deletes).
A format-1 record (one object holding everything, from before shards) is still read.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import PublishError
from ..urls import SEARCH_DIR
from .plan import Files, Record

__all__ = ["HASHED", "SHARD_DIR", "Root", "group", "parse_root", "parse_shard", "root_bytes", "shard_bytes", "shard_of"]

SHARD_DIR = ".listlib-published"
"""Where the shards are, under the target's prefix (no output file starts with a dot)."""
HASHED = 32
_FORMAT = 2


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


def root_bytes(record: Record, names: dict[str, str]) -> bytes:
    return _gzip({"format": _FORMAT, "generation": record.generation, "headers": record.headers, "shards": names})


@dataclass
class Root:
    generation: int
    headers: str
    names: dict[str, str]
    """Shard key -> object name."""


def parse_root(data: bytes, where: str) -> Root | Record:
    """A format-2 root, or the whole record of format 1."""
    try:
        loaded = json.loads(gzip.decompress(data))
        if loaded.get("format") == 1:
            return Record.from_bytes(data, where)
        if loaded.get("format") != _FORMAT:
            raise ValueError(f"format {loaded.get('format')!r}")
        names = {str(key): str(name) for key, name in loaded["shards"].items()}
        return Root(int(loaded["generation"]), str(loaded["headers"]), names)
    except PublishError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
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
    record = Record(generation=root.generation, headers=root.headers)
    for files, pending in shards:
        record.files.update(files)
        record.pending.update(pending)
    return record
