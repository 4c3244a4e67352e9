"""The local copy of the bucket's record of what was published (``Stored``: the record
and the root it was read from), kept in the cache folder with the root's ETag, and the
note a publish leaves when it made the bucket equal to the build's manifest."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import PublishConfig
from ..fsutil import make_dirs
from .plan import Record
from .shards import Delta, Root

__all__ = ["LocalCopy", "Stored"]

_VERSION = 4


@dataclass
class Stored:
    """The bucket's record and the root it was read from (shard names, delta, intent)."""

    record: Record
    root: Root = field(default_factory=lambda: Root(0, "", {}))

    @property
    def names(self) -> dict[str, str]:
        return self.root.names

    @property
    def retired(self) -> list[str]:
        return self.root.retired


class LocalCopy:
    """The local copy of the bucket's record with the ETag it had, in marshal's format
    (read back in a few milliseconds where the record's JSON takes most of a second at
    200,000 files); any problem with it only means reading the bucket's record again."""

    def __init__(self, cache_dir: Path, target: PublishConfig) -> None:
        name = hashlib.sha256(f"{target.endpoint_url or ''}\n{target.target}".encode()).hexdigest()[:16]
        self.folder = cache_dir / "publish"
        self.path = self.folder / f"{name}.marshal"
        self.quiet_path = self.folder / f"{name}.quiet.json"

    def load(self) -> tuple[Stored | None, str | None]:
        try:
            version, etag, files, pending, generation, headers, names, delta, retired = marshal.loads(
                self.path.read_bytes()
            )
        except (OSError, EOFError, ValueError, TypeError):
            return None, None
        if version != _VERSION or not isinstance(etag, str) or not etag:
            return None, None
        root = Root(generation, headers, names, Delta(*delta), retired=retired)
        return Stored(Record(files=files, pending=pending, generation=generation, headers=headers), root), etag

    def quiet(self, stamp: str, headers: str) -> tuple[str, int] | None:
        """(root ETag, files) of the record the last publish left in the bucket when it
        equalled the manifest of token ``stamp`` (``manifest.manifest_stamp``) and the
        header rules of fingerprint ``headers``, with nothing left to delete; else None."""
        try:
            found = json.loads(self.quiet_path.read_bytes())
            if found["version"] == _VERSION and found["stamp"] == stamp and found["headers"] == headers:
                return str(found["etag"]), int(found["files"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def save_quiet(self, stamp: str, headers: str, etag: str, files: int) -> None:
        """Note that the bucket's record of root ``etag`` equals the manifest of token
        ``stamp``: true once, true for good (a token never comes back, and a root's bytes
        name its generation), so nothing ever needs to take it back."""
        data = {"version": _VERSION, "stamp": stamp, "headers": headers, "etag": etag, "files": files}
        self._replace(self.quiet_path, json.dumps(data).encode())

    def save(self, stored: Stored, etag: str | None) -> None:
        record = stored.record
        if not etag:
            self.path.unlink(missing_ok=True)
            return
        self._replace(
            self.path,
            marshal.dumps(
                (
                    _VERSION,
                    etag,
                    record.files,
                    record.pending,
                    record.generation,
                    record.headers,
                    stored.names,
                    (stored.root.delta.files, stored.root.delta.pending),
                    stored.retired,
                )
            ),
        )

    def _replace(self, path: Path, data: bytes) -> None:
        """Write ``path`` whole or not at all (a temporary file renamed over it)."""
        make_dirs(self.folder)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)
