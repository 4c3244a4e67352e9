"""``listlib publish``'s work: read the build's manifest and the record of the last
publish, plan (``plan``), then upload on a bounded pool phase by phase, delete what is
due, and write the record last (``s3`` does the I/O).

The record lives in the bucket (``<prefix>/.listlib-published.json.gz``) and a copy in
the cache folder with its ETag, so a publish with nothing new reads nothing but a
"not modified" answer. Nothing is deleted unless every upload succeeded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import posixpath
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import Config, PublishConfig
from ..errors import PublishError
from ..fsutil import make_dirs, release_lock
from ..manifest import load_manifest
from ..plan.state import lock_output
from ..values import plural
from .plan import (
    INTENT_NAME,
    RECORD_NAME,
    REDIRECT_PAGE_BYTES,
    Files,
    Headers,
    Plan,
    Record,
    Upload,
    plan_publish,
    redirect_target,
)
from .s3 import Bucket
from .shards import SHARD_DIR, assemble, group, parse_root, parse_shard, root_bytes, shard_bytes, shard_of

__all__ = ["PublishReport", "publish_site", "publish_target"]

_CACHE_VERSION = 3
Fault = Callable[[str], None]
Progress = Callable[[int, int, int], None]


@dataclass
class PublishReport:
    target: str
    uploaded: int = 0
    unchanged: int = 0
    deleted: int = 0
    pending: int = 0
    """Files a build removed, left for readers until the next publish deletes them."""
    bytes: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    uploads: list[str] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    repaired: int | None = None
    """With --verify: the files the record named that the bucket lacked (or held at another size)."""

    def summary(self) -> str:
        verb = "would upload" if self.dry_run else "uploaded"
        deleted = "would delete" if self.dry_run else "deleted"
        later = f" ({self.pending} to delete next time)" if self.pending else ""
        drift = f", {plural(self.repaired, 'file')} missing from the bucket" if self.repaired else ""
        return (
            f"{self.target}: {plural(self.uploaded, 'file')} {verb}{drift}, {self.unchanged} unchanged, "
            f"{self.deleted} {deleted}{later}, {_size(self.bytes)} in {self.seconds:.2f} s"
        )

    def to_dict(self, with_files: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "target": self.target,
            "dry_run": self.dry_run,
            "uploaded": self.uploaded,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "pending": self.pending,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }
        if self.repaired is not None:
            data["repaired"] = self.repaired
        if with_files:
            data["uploads"] = self.uploads
            data["deletes"] = self.deletes
        return data


def publish_target(config: Config, target: str | None) -> PublishConfig:
    """The ``[publish]`` table, its target replaced by ``target`` when one is given."""
    from ..config.publish import check_target

    if target is not None:
        problem = check_target(target)
        if problem:
            raise PublishError(problem)
        return replace(config.publish, target=target) if config.publish else PublishConfig(target=target)
    if config.publish is None:
        raise PublishError(
            f'{config.path}: no [publish] table (with target = "s3://bucket/prefix") and no TARGET given'
        )
    return config.publish


def publish_site(
    config: Config,
    target: PublishConfig,
    *,
    dry_run: bool = False,
    verify: bool = False,
    progress: Progress | None = None,
    fault: Fault | None = None,
) -> PublishReport:
    """Bring the bucket to output/ as the last build left it (see the module docstring)."""
    started = time.monotonic()
    # The build lock, held to the end: a build must not change output/ while its files
    # go up, nor a second publish run beside this one.
    lock = lock_output(config.site.cache_dir)
    try:
        report = _publish(config, target, dry_run=dry_run, verify=verify, progress=progress, fault=fault or _no_fault)
    finally:
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


def _publish(
    config: Config,
    target: PublishConfig,
    *,
    dry_run: bool,
    verify: bool,
    progress: Progress | None,
    fault: Fault,
) -> PublishReport:
    manifest = load_manifest(config, locked=True)
    if not manifest:
        # Never plan from an empty manifest: with the build records deleted (the cache
        # folder is safe to delete), every published file would look removed.
        raise PublishError(
            f"{config.site.output_dir}: no build recorded in {config.site.cache_dir}; run 'listlib build' first"
        )
    bucket = Bucket(target)
    cache = _Cache(config.site.cache_dir, target)
    stored = _read_record(bucket, cache, target.workers)
    record = stored.record
    repaired = 0
    if verify:
        sizes = bucket.sizes()
        repaired = _verified(record, sizes, config.site.output_dir)
        _clear_orphan_shards(bucket, stored, sizes)
    interrupted = _read_intent(bucket, record)
    plan = plan_publish(manifest, record, interrupted.files, Headers(target.cache_control))
    report = PublishReport(
        target=target.target,
        uploaded=plan.uploads,
        unchanged=plan.unchanged,
        deleted=len(plan.delete),
        pending=len(plan.record.pending),
        bytes=plan.bytes,
        dry_run=dry_run,
        uploads=[upload.path for phase in plan.phases for upload in phase],
        deletes=plan.delete,
        repaired=repaired,
    )
    if not dry_run and (not plan.empty or interrupted.shards):
        _carry_out(plan, stored, interrupted, bucket, cache, config.site.output_dir, target.workers, progress, fault)
    return report


def _carry_out(
    plan: Plan,
    stored: Stored,
    interrupted: Intent,
    bucket: Bucket,
    cache: _Cache,
    output: Path,
    workers: int,
    progress: Progress | None,
    fault: Fault,
) -> None:
    total = plan.uploads
    done = 0
    names, shards = _changed_shards(plan, stored)
    if plan.intent or shards:
        # Before the first upload of a file or a record shard no record names: if this
        # publish dies, the next one knows the bucket may hold them (and deletes them).
        intent = {
            "generation": plan.record.generation - 1,
            "files": {p: list(v) for p, v in plan.intent.items()},
            "shards": sorted(shards),
            "retire": sorted(set(stored.names.values()) - set(names.values())),
        }
        bucket.put_bytes(INTENT_NAME, json.dumps(intent, separators=(",", ":")).encode(), "application/json")
        fault("publish-intent")
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="publish") as pool:
        for phase in plan.phases:
            running: set[Future[None]] = set()
            for upload in phase:
                if len(running) >= workers * 2:
                    done += _collect(running, fault)
                    if progress:
                        progress(done, total, done)
                running.add(pool.submit(_put, bucket, output, upload))
            while running:
                done += _collect(running, fault)
                if progress:
                    progress(done, total, done)
            fault("publish-phase")
        if plan.delete:
            fault("publish-delete")
            bucket.delete(plan.delete)
            fault("publish-deleted")
        for future in [pool.submit(bucket.put_bytes, name, data, "application/gzip") for name, data in shards.items()]:
            future.result()
        fault("publish-shards")
        etag = bucket.put_bytes(RECORD_NAME, root_bytes(plan.record, names), "application/gzip")
        fault("publish-record")
    cache.save(Stored(plan.record, names), etag)
    # Spent by the root: shards it no longer names, those a killed publish may have put, the intent.
    cleared = (set(stored.names.values()) | set(interrupted.shards)) - set(names.values())
    spent = [INTENT_NAME] if plan.intent or shards or interrupted.shards else []
    bucket.delete([*sorted(cleared), *spent])


def _changed_shards(plan: Plan, stored: Stored) -> tuple[dict[str, str], dict[str, bytes]]:
    """The shard names of the new record, and the shards to put for it: those holding
    a changed entry (every one when the bucket's record has no shards yet)."""
    keys = {shard_of(path) for path in plan.touched} if stored.names else None
    names = dict(stored.names) if keys is not None else {}
    groups = group(plan.record, keys)
    for key in keys or ():
        if key not in groups:
            names.pop(key, None)  # emptied
    shards: dict[str, bytes] = {}
    for key, (files, pending) in groups.items():
        name, data = shard_bytes(key, files, pending)
        if names.get(key) != name:
            names[key] = name
            shards[name] = data
    return names, shards


def _put(bucket: Bucket, output: Path, upload: Upload) -> None:
    file = output / upload.path
    if file.is_symlink():  # a Message-ID folder's raw and t.mbox.gz: a redirect, not a copy
        target = posixpath.normpath(posixpath.join(posixpath.dirname(upload.path), os.readlink(file)))
        bucket.put_redirect(upload.path, target, upload.content_type, upload.cache_control)
        return
    redirect = None
    if upload.path.endswith(".html") and upload.size <= REDIRECT_PAGE_BYTES:
        # A permalink or an old archive's URL: the page, and a 301 where the host honours it.
        with contextlib.suppress(FileNotFoundError):  # put_file says so
            redirect = redirect_target(upload.path, file.read_bytes())
    bucket.put_file(
        upload.path,
        file,
        upload.content_type,
        upload.cache_control,
        upload.size,
        disposition=upload.content_disposition,
        redirect=redirect,
    )


def _collect(running: set[Future[None]], fault: Fault) -> int:
    """Wait for at least one upload; raise the first failure (the rest are abandoned)."""
    finished, _ = wait(running, return_when=FIRST_COMPLETED)
    for future in finished:
        running.discard(future)
        error = future.exception()
        if error is not None:
            for other in running:
                other.cancel()
            raise error
        fault("publish-upload")
    return len(finished)


def _verified(record: Record, sizes: dict[str, int], output: Path) -> int:
    """Forget in ``record`` the files the bucket does not hold as recorded (deleted or
    overwritten by hand, another tool, a lifecycle rule), so they are uploaded again;
    how many. A symlink is held as an empty redirect object."""
    drifted = [
        path
        for path, (_digest, size) in record.files.items()
        if sizes.get(path) != size and not (sizes.get(path) == 0 and os.path.islink(output / path))
    ]
    for path in drifted:
        del record.files[path]
    for path in [path for path in record.pending if path not in sizes]:
        del record.pending[path]
    return len(drifted)


@dataclass
class Intent:
    """What an interrupted publish meant to put over this very record."""

    files: Files = field(default_factory=dict)
    shards: list[str] = field(default_factory=list)
    """Record shards it put or meant to retire: whichever the next root does not name is
    deleted once it is written (only roots name shards, so any other is garbage)."""


def _read_intent(bucket: Bucket, record: Record) -> Intent:
    """The intent an interrupted publish wrote over this very record (one written over
    an older record is spent: a record came after it)."""
    data, _etag = bucket.get(INTENT_NAME, check=False)  # after the record: the bucket exists
    if data is None:
        return Intent()
    try:
        intent = json.loads(data)
        shards = [str(name) for name in [*intent.get("shards", []), *intent.get("retire", [])]]
        if intent.get("generation") != record.generation:
            return Intent(shards=shards)  # its root was written: only its garbage is left
        files = {path: (str(digest), int(size)) for path, (digest, size) in intent["files"].items()}
        return Intent(files, shards)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PublishError(
            f"{bucket.where}/{INTENT_NAME}: damaged ({exc}); delete it (and publish with --verify)"
        ) from None


@dataclass
class Stored:
    """The bucket's record and the names of the shards it is stored in."""

    record: Record
    names: dict[str, str] = field(default_factory=dict)


def _read_record(bucket: Bucket, cache: _Cache, workers: int) -> Stored:
    """The bucket's record (the cached copy when the root's ETag still matches; else the
    shards whose names changed), or an empty one."""
    cached, etag = cache.load()
    data, current = bucket.get(RECORD_NAME, etag if cached is not None else None)
    if data is None and current is not None and cached is not None:
        return cached
    if data is None:
        return Stored(Record())
    root = parse_root(data, f"{bucket.where}/{RECORD_NAME}")
    if isinstance(root, Record):  # format 1: one object; written as shards next time
        stored = Stored(root)
    else:
        known = group(cached.record) if cached is not None else {}
        keep = {name: known[key] for key, name in (cached.names if cached else {}).items() if key in known}
        missing = sorted(set(root.names.values()) - set(keep))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="record") as pool:
            fetched = dict(zip(missing, pool.map(lambda name: _read_shard(bucket, name), missing), strict=True))
        stored = Stored(assemble(root, (keep.get(name) or fetched[name] for name in root.names.values())), root.names)
    cache.save(stored, current)  # the next publish reads only "not modified"
    return stored


def _read_shard(bucket: Bucket, name: str) -> tuple[Files, Files]:
    data, _etag = bucket.get(name, check=False)
    if data is None:
        raise PublishError(
            f"{bucket.where}/{name}: a shard of the record is missing; delete {RECORD_NAME} to publish everything again"
        )
    return parse_shard(data, f"{bucket.where}/{name}")


def _clear_orphan_shards(bucket: Bucket, stored: Stored, sizes: dict[str, int]) -> None:
    """Delete shards no root names (left by a publish killed between its shards and its root)."""
    named = set(stored.names.values())
    orphans = sorted(path for path in sizes if path.startswith(f"{SHARD_DIR}/") and path not in named)
    bucket.delete(orphans)


class _Cache:
    """The local copy of the bucket's record with the ETag it had, in marshal's format
    (read back in a few milliseconds where the record's JSON takes most of a second at
    200,000 files); any problem with it only means reading the bucket's record again."""

    def __init__(self, cache_dir: Path, target: PublishConfig) -> None:
        name = hashlib.sha256(f"{target.endpoint_url or ''}\n{target.target}".encode()).hexdigest()[:16]
        self.folder = cache_dir / "publish"
        self.path = self.folder / f"{name}.marshal"

    def load(self) -> tuple[Stored | None, str | None]:
        try:
            version, etag, files, pending, generation, headers, names = marshal.loads(self.path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None, None
        if version != _CACHE_VERSION or not isinstance(etag, str) or not etag:
            return None, None
        return Stored(Record(files=files, pending=pending, generation=generation, headers=headers), names), etag

    def save(self, stored: Stored, etag: str | None) -> None:
        record = stored.record
        make_dirs(self.folder)
        if not etag:
            self.path.unlink(missing_ok=True)
            return
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_bytes(
            marshal.dumps(
                (_CACHE_VERSION, etag, record.files, record.pending, record.generation, record.headers, stored.names)
            )
        )
        os.replace(temporary, self.path)


def _no_fault(_point: str) -> None:
    pass


def _size(count: int) -> str:
    if count < 1000:
        return f"{count} bytes"
    amount = count / 1000
    for unit in ("kB", "MB", "GB"):
        if amount < 1000 or unit == "GB":
            break
        amount /= 1000
    return f"{amount:.1f} {unit}"
