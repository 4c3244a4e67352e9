"""``listlib publish``'s work: read the build's manifest and the record of the last
publish, plan (``plan``), then upload on a bounded pool phase by phase, delete what is
due, and write the record last (``s3`` does the I/O).

The record lives in the bucket (``<prefix>/.listlib-published.json.gz``, its root, and
the shards it names: ``shards``) and a copy in the cache folder with its ETag, so a
publish with nothing new reads nothing but a "not modified" answer. When a publish
leaves the bucket equal to the manifest, it notes the manifest's token and the root's
ETag beside that copy: the next publish with the same token asks only whether the root
is still that one, and reads neither the manifest nor the record. Before the first
new object goes up, the root is written again with the record unchanged and the new
objects named (the intent); after the last, with the new record. Nothing is deleted
unless every upload succeeded.
"""

from __future__ import annotations

import contextlib
import json
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
from ..fsutil import release_lock
from ..manifest import load_manifest, manifest_stamp
from ..plan.state import lock_output
from ..values import plural
from .local import LocalCopy, Stored
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
from .shards import (
    DELTA_LIMIT,
    SHARD_DIR,
    Delta,
    Root,
    assemble,
    group,
    parse_root,
    parse_shard,
    root_bytes,
    shard_bytes,
    shard_of,
)

__all__ = ["PublishReport", "publish_site", "publish_target"]

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
    headers = Headers(target.cache_control)
    bucket = Bucket(target)
    cache = LocalCopy(config.site.cache_dir, target)
    stamp = manifest_stamp(config)
    quiet = None if verify or stamp is None else cache.quiet(stamp, headers.fingerprint())
    if quiet is not None:
        # The last publish left the bucket equal to this very manifest: one request says
        # whether anyone published over it since; neither record needs reading.
        etag, files = quiet
        data, current = bucket.get(RECORD_NAME, etag)
        if data is None and current is not None:
            return PublishReport(target=target.target, unchanged=files, dry_run=dry_run)
    manifest = load_manifest(config, locked=True)
    if not manifest:
        # Never plan from an empty manifest: with the build records deleted (the cache
        # folder is safe to delete), every published file would look removed.
        raise PublishError(
            f"{config.site.output_dir}: no build recorded in {config.site.cache_dir}; run 'listlib build' first"
        )
    stored, etag = _read_record(bucket, cache, target.workers)
    record = stored.record
    repaired = 0
    if verify:
        sizes = bucket.sizes()
        repaired = _verified(record, sizes, config.site.output_dir)
        _clear_orphan_shards(bucket, stored, sizes)
    interrupted = _read_intent(bucket, stored)
    plan = plan_publish(manifest, record, interrupted.files, headers)
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
    if dry_run:
        return report
    if not plan.empty or interrupted.shards or interrupted.legacy or stored.retired:
        output = config.site.output_dir
        etag = _carry_out(plan, stored, interrupted, bucket, cache, output, target.workers, progress, fault)
    if etag is not None and stamp is not None and not plan.record.pending and plan.record.files == manifest:
        cache.save_quiet(stamp, plan.record.headers, etag, len(manifest))
    return report


def _carry_out(
    plan: Plan,
    stored: Stored,
    interrupted: Intent,
    bucket: Bucket,
    cache: LocalCopy,
    output: Path,
    workers: int,
    progress: Progress | None,
    fault: Fault,
) -> str | None:
    """Upload, delete and write the record as ``plan`` says; the new root's ETag."""
    total = plan.uploads
    done = 0
    names, shards, delta = _next_shards(plan, stored)
    if plan.intent or shards:
        # Before the first upload of a file or a record shard no record names: if this
        # publish dies, the next one knows the bucket may hold them (and deletes them).
        intent = replace(
            stored.root,
            intent=plan.intent,
            intent_shards=sorted(set(shards) | set(interrupted.shards)),
        )
        bucket.put_bytes(RECORD_NAME, root_bytes(intent), "application/gzip")
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
        # Shards retired by the publish before (its root named them, should it have died
        # before deleting them): no root names them now.
        old = [*stored.retired, *([INTENT_NAME] if interrupted.legacy else [])]
        if plan.delete or old:
            fault("publish-delete")
            bucket.delete([*plan.delete, *old])
            fault("publish-deleted")
        for future in [pool.submit(bucket.put_bytes, name, data, "application/gzip") for name, data in shards.items()]:
            future.result()
        fault("publish-shards")
        # Spent by the new root: shards it no longer names, those a killed publish may have put.
        retired = sorted((set(stored.names.values()) | set(interrupted.shards)) - set(names.values()))
        root = Root(plan.record.generation, plan.record.headers, names, delta, retired=retired)
        etag = bucket.put_bytes(RECORD_NAME, root_bytes(root), "application/gzip")
        fault("publish-record")
    if retired:
        bucket.delete(retired)
        root.retired = []  # the next publish need not delete them again
    cache.save(Stored(plan.record, root), etag)
    return etag


def _next_shards(plan: Plan, stored: Stored) -> tuple[dict[str, str], dict[str, bytes], Delta]:
    """The shard names and delta of the new record, and the shards to put for it: none
    while the delta stays under its limit; else those holding an entry of the delta
    (every one when the bucket's record has no shards yet), and the delta emptied."""
    if stored.names:
        delta = stored.root.delta.updated(plan.record, plan.touched)
        if len(delta) <= DELTA_LIMIT:
            return dict(stored.names), {}, delta
        keys: set[str] | None = {shard_of(path) for path in delta.files.keys() | delta.pending.keys()}
    else:
        keys = None
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
    return names, shards, Delta()


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
    legacy: bool = False
    """Read from the intent object of a format-2 record (deleted by this publish)."""


def _read_intent(bucket: Bucket, stored: Stored) -> Intent:
    """The intent an interrupted publish wrote in the root (or, before format 3, in an
    object of its own, spent when written over an older record)."""
    root = stored.root
    if not root.legacy:
        return Intent(dict(root.intent), list(root.intent_shards))
    data, _etag = bucket.get(INTENT_NAME, check=False)  # after the record: the bucket exists
    if data is None:
        return Intent()
    try:
        intent = json.loads(data)
        shards = [str(name) for name in [*intent.get("shards", []), *intent.get("retire", [])]]
        if intent.get("generation") != stored.record.generation:
            return Intent(shards=shards, legacy=True)  # its root was written: only its garbage is left
        files = {path: (str(digest), int(size)) for path, (digest, size) in intent["files"].items()}
        return Intent(files, shards, legacy=True)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PublishError(
            f"{bucket.where}/{INTENT_NAME}: damaged ({exc}); delete it (and publish with --verify)"
        ) from None


def _read_record(bucket: Bucket, cache: LocalCopy, workers: int) -> tuple[Stored, str | None]:
    """The bucket's record (the cached copy when the root's ETag still matches; else the
    shards whose names changed), or an empty one; and its root's ETag."""
    cached, etag = cache.load()
    data, current = bucket.get(RECORD_NAME, etag if cached is not None else None)
    if data is None and current is not None and cached is not None:
        return cached, current
    if data is None:
        return Stored(Record()), None
    root = parse_root(data, f"{bucket.where}/{RECORD_NAME}")
    if isinstance(root, Record):  # format 1: one object; written as shards next time
        stored = Stored(root, Root(root.generation, root.headers, {}, legacy=True))
    elif cached is not None and root.names == cached.names and root.delta == cached.root.delta:
        # Our own record with an intent written over it (a publish killed midway).
        stored = Stored(cached.record, root)
    else:
        known = _cached_shards(cached) if cached is not None else {}
        missing = sorted(set(root.names.values()) - set(known))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="record") as pool:
            fetched = dict(zip(missing, pool.map(lambda name: _read_shard(bucket, name), missing), strict=True))
        stored = Stored(assemble(root, (known.get(name) or fetched[name] for name in root.names.values())), root)
    cache.save(stored, current)  # the next publish reads only "not modified"
    return stored, current


def _cached_shards(stored: Stored) -> dict[str, tuple[Files, Files]]:
    """Shard name -> its entries, for the shards of ``stored`` its delta does not touch
    (the cached record holds the others' entries with the delta applied, not as written)."""
    delta = stored.root.delta
    touched = {shard_of(path) for path in delta.files.keys() | delta.pending.keys()}
    known = group(stored.record, set(stored.names) - touched)
    return {name: known[key] for key, name in stored.names.items() if key in known}


def _read_shard(bucket: Bucket, name: str) -> tuple[Files, Files]:
    data, _etag = bucket.get(name, check=False)
    if data is None:
        raise PublishError(
            f"{bucket.where}/{name}: a shard of the record is missing; delete {RECORD_NAME} to publish everything again"
        )
    return parse_shard(data, f"{bucket.where}/{name}")


def _clear_orphan_shards(bucket: Bucket, stored: Stored, sizes: dict[str, int]) -> None:
    """Delete shards no root names (left by a publish killed between its shards and its root)."""
    named = set(stored.names.values()) | set(stored.root.intent_shards)
    orphans = sorted(path for path in sizes if path.startswith(f"{SHARD_DIR}/") and path not in named)
    bucket.delete(orphans)


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
