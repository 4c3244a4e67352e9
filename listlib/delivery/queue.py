"""The on-disk outbound queue: posts, their stages, and per-recipient state (qmail style).

Layout under the queue folder (``site.queue_dir``, default ``queue/``)::

    tmp/<id>/       a post being queued; leftovers are removed by the next enqueue
    tmp/<id>.gone/  a post being deleted; leftovers are removed by the next run or purge
    new/<id>/       queued, never tried
    retry/<id>/     tried, some recipients failed temporarily; the journal says when to retry
    failed/<id>/    every recipient resolved and at least one failed for good (kept for the admin)
    held/<id>/      the poster may not post to the list: waits for --release or --drop
    sent.log        ids of posts that left the queue (all delivered, dropped, or purged because
                    their message was removed from the archive): never queued again
    .lock           held by 'listlib deliver' for a whole run (and while 'listlib remove' purges)
    .state.lock     held briefly to queue a post or to take one out of the queue

A post's id is the call number of the stored message it forwards. Its folder holds
``message.eml`` (the exact bytes to send), ``post.json`` (written once: list, call
number, envelope sender, recipients, why it is held, the size and SHA-256 of
message.eml) and ``journal``: append-only JSON lines, one per recipient outcome
(``done``, ``failed`` with the reply, ``temp`` with the reply) and one per attempt
(when, and when to try again). The lines of one SMTP transaction are appended
together and fsync'ed before the next transaction starts, so a recipient marked done
is never sent the post again, and a crash can only repeat the one transaction between
the server's acceptance and the mark (qmail's INTERNALS, section 6). A torn last line
(a crash mid-write) is ignored and cut off. Stage changes are renames of the post
folder, made durable by syncing both stage folders. This module knows files and JSON,
not SMTP or mail.

A damaged post (post.json or journal missing or unreadable, a whole journal line that
is not one we write, message.eml missing or not the bytes queued, a file we never
write) is read with its ``damage`` instead of raising, so that it never blocks the
other posts; ``isolate`` records the damage in ``damage.json`` and moves the post to
``failed/``, untouched otherwise. It is never sent: a journal we cannot read may hide
recipients already done, and a message that is not what was queued must not go out.
Posts queued before post.json recorded the size and hash (version 1) cannot be
verified and are sent as before. What a sound post looks like is in ``damage``.

Length: every stage move of a post and the recovery that finishes an interrupted one
are kept side by side, so the crash-safety argument can be read in one place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import DeliveryError
from ..fsutil import acquire_lock, fsync_dir, make_dirs, release_lock, sync_files, write_file
from .damage import VERSION, Damage, check_entry, check_meta

__all__ = ["STAGES", "NewPost", "Outbound", "QueuedPost", "RecipientState", "Stage"]

Stage = Literal["new", "retry", "failed", "held"]
STAGES: tuple[Stage, ...] = ("new", "retry", "failed", "held")
RecipientState = Literal["todo", "done", "failed"]
Fault = Callable[[str], None]

_MESSAGE = "message.eml"
_META = "post.json"
_JOURNAL = "journal"
_DAMAGE = "damage.json"
_SENT = "sent.log"
_FILES = frozenset((_MESSAGE, _META, _JOURNAL, _DAMAGE))
_GONE = ".gone"
"""Ends the name a deleted post folder has in tmp/ while it is being deleted."""


@dataclass(frozen=True)
class NewPost:
    """A post ready to be queued."""

    id: str
    """The call number of the stored message."""
    slug: str
    data: bytes
    """The bytes to send (headers added, CRLF line ends)."""
    sender: str
    """The envelope sender without VERP (``<list>-bounces@<domain>``)."""
    recipients: tuple[str, ...]
    message_id: str | None
    poster: str
    queued_at: float
    held_reason: str | None = None
    """Why the post waits for a moderator; None for a post that goes out."""


@dataclass
class QueuedPost:
    """A post in the queue, with its state replayed from the journal."""

    id: str
    stage: Stage
    path: Path
    meta: dict[str, Any]
    state: dict[str, RecipientState] = field(default_factory=dict)
    replies: dict[str, str] = field(default_factory=dict)
    """The last reply per recipient that was not accepted."""
    attempts: int = 0
    next_try: float = 0.0
    damage: Damage | None = None
    """Set for a damaged post: ``meta`` and ``state`` hold what could be read, maybe nothing."""

    @property
    def slug(self) -> str:
        return str(self.meta.get("list", ""))

    @property
    def sender(self) -> str:
        return str(self.meta["sender"])

    @property
    def queued_at(self) -> float:
        return float(self.meta.get("queued_at") or 0.0)

    def pending(self) -> list[str]:
        """Recipients not yet done or failed, in the order they were queued."""
        return [r for r, s in self.state.items() if s == "todo"]

    def count(self, state: RecipientState) -> int:
        return sum(1 for s in self.state.values() if s == state)

    def message(self) -> bytes | None:
        """The bytes to send, checked against the size and hash recorded at queueing;
        None for a damaged post (``damage`` says why)."""
        if self.damage is not None:
            return None
        try:
            data = (self.path / _MESSAGE).read_bytes()
        except OSError as exc:
            self.damage = Damage("missing-message", f"{_MESSAGE} cannot be read: {exc.strerror}")
            return None
        size, digest = self.meta.get("size"), self.meta.get("sha256")
        if size is not None and len(data) != size:
            self.damage = Damage("message-mismatch", f"{_MESSAGE} has {len(data)} bytes; {size} were queued")
        elif digest is not None and hashlib.sha256(data).hexdigest() != digest:
            self.damage = Damage("message-mismatch", f"{_MESSAGE} is not the message queued (its sha256 differs)")
        return None if self.damage else data

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stage": self.stage,
            "list": self.slug,
            "message_id": self.meta.get("message_id"),
            "poster": self.meta.get("poster"),
            "queued_at": self.queued_at,
            "held_reason": self.meta.get("held_reason"),
            "recipients": len(self.state),
            "done": self.count("done"),
            "failed": self.count("failed"),
            "pending": self.count("todo"),
            "attempts": self.attempts,
            "next_try": self.next_try or None,
            "failures": {r: self.replies.get(r, "") for r, s in self.state.items() if s == "failed"},
            "temporary": {r: self.replies[r] for r, s in self.state.items() if s == "todo" and r in self.replies},
            "damage": None if self.damage is None else {"kind": self.damage.kind, "reason": self.damage.reason},
        }


class Outbound:
    """The outbound queue folder of one site."""

    def __init__(self, root: Path, *, fault: Fault | None = None, lock_wait: float = 30.0) -> None:
        self.root = root
        self.fault = fault or (lambda point: None)
        self.lock_wait = lock_wait
        self._sent: set[str] | None = None

    # -- opening and locks ---------------------------------------------------------------

    def open(self) -> Outbound:
        try:
            for name in ("tmp", *STAGES):
                make_dirs(self.root / name)
        except OSError as exc:
            raise DeliveryError(f"{self.root}: cannot create the outbound queue: {exc.strerror}") from exc
        return self

    @contextmanager
    def state_lock(self) -> Iterator[None]:
        """Held briefly to queue posts or take one out of the queue (never during SMTP)."""
        fd = acquire_lock(
            self.root / ".state.lock", self.lock_wait, f"{self.root}: the outbound queue is busy; try again later"
        )
        try:
            yield
        finally:
            release_lock(fd)

    @contextmanager
    def running(self, wait: float) -> Iterator[None]:
        """Hold the lock of a whole 'listlib deliver' run (or of --release/--drop);
        raise LockTimeoutError after ``wait`` seconds."""
        fd = acquire_lock(self.root / ".lock", wait, f"{self.root}: another 'listlib deliver' is running")
        try:
            yield
        finally:
            release_lock(fd)

    # -- what is known -------------------------------------------------------------------

    def sent_ids(self) -> set[str]:
        """Ids of posts that left the queue (delivered or dropped)."""
        if self._sent is None:
            try:
                data = (self.root / _SENT).read_bytes()
            except FileNotFoundError:
                data = b""
            self._sent = {line.decode("ascii", "replace") for line in data.split(b"\n") if line}
        return self._sent

    def find(self, post_id: str) -> Stage | None:
        for stage in STAGES:
            if (self.root / stage / post_id).is_dir():
                return stage
        return None

    def post_ids(self) -> list[str]:
        """The ids of the posts in every stage, stage by stage."""
        ids = []
        for stage in STAGES:
            try:
                ids += sorted(entry.name for entry in os.scandir(self.root / stage) if entry.is_dir())
            except FileNotFoundError:
                continue
        return ids

    def known(self, post_id: str) -> bool:
        """Whether this post was ever queued (it is in a stage, or it left the queue)."""
        return self.find(post_id) is not None or post_id in self.sent_ids()

    # -- queueing -----------------------------------------------------------------------

    def enqueue(self, posts: list[NewPost]) -> list[str]:
        """Queue posts durably (one group commit); return the ids actually queued.

        A post already known (queued, or gone from the queue) is skipped, so
        queueing the same call number twice sends it once.
        """
        with self.state_lock():
            self._sent = None  # another process may have finished posts since
            tmp = self.root / "tmp"
            for leftover in os.scandir(tmp):
                shutil.rmtree(leftover.path, ignore_errors=True)
            todo = []
            seen: set[str] = set()
            for post in posts:
                if post.id in seen or self.known(post.id):
                    continue
                seen.add(post.id)
                todo.append(post)
            if not todo:
                return []
            written: list[Path] = []
            for post in todo:
                folder = tmp / post.id
                folder.mkdir()
                meta = {
                    "version": VERSION,
                    "id": post.id,
                    "list": post.slug,
                    "sender": post.sender,
                    "recipients": list(post.recipients),
                    "message_id": post.message_id,
                    "poster": post.poster,
                    "queued_at": post.queued_at,
                    "held_reason": post.held_reason,
                    "size": len(post.data),
                    "sha256": hashlib.sha256(post.data).hexdigest(),
                }
                write_file(folder / _MESSAGE, post.data, sync=False)
                write_file(folder / _META, json.dumps(meta, indent=1).encode("utf-8"), sync=False)
                write_file(folder / _JOURNAL, b"", sync=False)
                written += [folder / _MESSAGE, folder / _META, folder / _JOURNAL]
            sync_files(written, self.root)
            for post in todo:
                fsync_dir(tmp / post.id)
            self.fault("queue-written")
            for post in todo:
                stage = "held" if post.held_reason else "new"
                os.rename(tmp / post.id, self.root / stage / post.id)
                self.fault("queue-renamed")
            for stage in ("new", "held"):
                fsync_dir(self.root / stage)
            fsync_dir(tmp)
            return [post.id for post in todo]

    # -- reading -----------------------------------------------------------------------

    def load(self, stage: Stage, post_id: str, *, repair: bool = False) -> QueuedPost:
        """Read a post and replay its journal; with ``repair`` cut off a torn last line.

        A damaged post is returned with its ``damage`` (and left as it is), not raised:
        it must not stop the other posts, and ``--drop`` must be able to remove it.
        """
        path = self.root / stage / post_id
        post = QueuedPost(post_id, stage, path, {})
        recorded = _read_damage(path)
        meta, post.damage = _read_meta(path, post_id)
        if meta is None:
            post.damage = recorded or post.damage
            return post
        post.meta = meta
        try:
            journal = (path / _JOURNAL).read_bytes()
        except FileNotFoundError:
            post.damage = recorded or Damage(
                "missing-journal", f"{_JOURNAL} is missing: who already received the post is unknown"
            )
            return post
        except OSError as exc:
            post.damage = recorded or Damage("invalid-journal", f"{_JOURNAL} cannot be read: {exc.strerror}")
            return post
        for recipient in meta["recipients"]:
            post.state[recipient] = "todo"
        # A torn last line (no line end yet: a crash mid-write) is a mark never made; a whole
        # line we cannot read may have been a "done", so the post is not sent again.
        complete = journal.rfind(b"\n") + 1
        for number, line in enumerate(journal[:complete].split(b"\n")[:-1], 1):
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            problem = check_entry(entry, post.state)
            if problem is not None:
                post.damage = Damage("invalid-journal", f"{_JOURNAL}, line {number}: {problem}")
                break
            _apply(post, entry)
        post.damage = recorded or post.damage or _check_files(path, meta)
        if post.damage is None and repair and complete < len(journal):
            with open(path / _JOURNAL, "r+b") as f:
                f.truncate(complete)
                os.fsync(f.fileno())
        return post

    def iter_stage(self, stage: Stage, *, repair: bool = False) -> Iterator[QueuedPost]:
        """The posts of a stage in id order (the order they were filed)."""
        folder = self.root / stage
        try:
            names = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())
        except FileNotFoundError:
            return
        for name in names:
            if (folder / name).is_dir():
                yield self.load(stage, name, repair=repair)

    # -- recording ----------------------------------------------------------------------

    def record(self, post: QueuedPost, entries: list[dict[str, Any]]) -> None:
        """Append journal lines with one write and make them durable, then apply them."""
        data = b"".join(json.dumps(e, separators=(",", ":")).encode("utf-8") + b"\n" for e in entries)
        fd = os.open(post.path / _JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            # Written in two halves so that crash tests can kill the process between them:
            # a torn last line must read as "not marked".
            half = len(data) // 2
            for number, part in enumerate((data[:half], data[half:])):
                view = memoryview(part)
                while view:
                    view = view[os.write(fd, view) :]
                if number == 0:
                    self.fault("journal-half")
            os.fsync(fd)
        finally:
            os.close(fd)
        for entry in entries:
            _apply(post, entry)

    def isolate(self, post: QueuedPost, now: float) -> None:
        """Record why a damaged post is never sent (``damage.json``) and move it to failed/."""
        assert post.damage is not None
        if not (post.path / _DAMAGE).exists():
            record = {"version": 1, "kind": post.damage.kind, "reason": post.damage.reason, "at": now}
            write_file(post.path / _DAMAGE, json.dumps(record, indent=1).encode("utf-8"), sync=True)
            fsync_dir(post.path)
        self.move(post, "failed")

    def move(self, post: QueuedPost, stage: Stage) -> None:
        """Move a post to another stage (an atomic rename, made durable)."""
        if post.stage == stage:
            return
        target = self.root / stage / post.id
        os.rename(post.path, target)
        self.fault("moved")
        fsync_dir(self.root / stage)
        fsync_dir(self.root / post.stage)
        post.path, post.stage = target, stage

    def remove(self, post: QueuedPost) -> None:
        """Take a post out of the queue for good: record its id in sent.log first, then delete it."""
        with self.state_lock():
            self._append_sent(post.id)
            self.fault("sent-logged")
            self._delete(post.path)

    def purge(self, post_ids: Iterable[str]) -> list[tuple[str, Stage]]:
        """Delete these posts from whatever stage holds them, bytes and all, and return
        (id, stage) of each one deleted (for posts whose message was taken down: no copy
        of it may stay in the queue). Their ids go to sent.log first, durably, so a kill
        before the folders are gone is finished by the next ``recover`` and the posts
        are never queued again. The caller holds the run lock: a run never finds the
        folder of a post it is sending gone."""
        wanted = set(post_ids)
        with self.state_lock():
            self._sent = None  # another process may have finished posts since
            found = [(post_id, stage) for post_id in sorted(wanted) if (stage := self.find(post_id)) is not None]
            fresh = [post_id for post_id, _stage in found if post_id not in self.sent_ids()]
            if fresh:
                self._append_sent(*fresh)
                self.fault("purge-logged")
            for post_id, stage in found:
                self._delete(self.root / stage / post_id)
            self._clear_deleted()
        return found

    def _append_sent(self, *post_ids: str) -> None:
        fd = os.open(self.root / _SENT, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, b"".join(post_id.encode("ascii") + b"\n" for post_id in post_ids))
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.root)
        if self._sent is not None:
            self._sent.update(post_ids)

    def _delete(self, path: Path) -> None:
        # Rename first so that a half-deleted folder is never read as a post.
        doomed = self.root / "tmp" / f"{path.name}{_GONE}"
        shutil.rmtree(doomed, ignore_errors=True)  # a deletion a kill interrupted
        os.rename(path, doomed)
        fsync_dir(path.parent)
        self.fault("deleting")
        shutil.rmtree(doomed, ignore_errors=True)

    def _clear_deleted(self) -> None:
        """Finish deletions a kill interrupted (their bytes must not stay in tmp/)."""
        for entry in os.scandir(self.root / "tmp"):
            if entry.name.endswith(_GONE):
                shutil.rmtree(entry.path, ignore_errors=True)

    def recover(self) -> list[str]:
        """Finish what a killed run left: posts listed in sent.log but still in a stage
        are deleted, and so are the remains of a deletion cut short."""
        done = []
        with self.state_lock():
            self._sent = None
            sent = self.sent_ids()
            for stage in STAGES:
                for entry in os.scandir(self.root / stage):
                    if entry.name in sent and entry.is_dir():
                        self._delete(Path(entry.path))
                        done.append(entry.name)
            self._clear_deleted()
        return done


def _apply(post: QueuedPost, entry: dict[str, Any]) -> None:
    recipient = entry.get("r")
    if recipient is not None:
        status = entry.get("s")
        if recipient not in post.state:
            return
        if status == "done":
            post.state[recipient] = "done"
            post.replies.pop(recipient, None)
        elif status == "failed":
            post.state[recipient] = "failed"
            post.replies[recipient] = str(entry.get("reply", ""))
        elif status == "temp":
            post.replies[recipient] = str(entry.get("reply", ""))
        return
    if "attempt" in entry:
        post.attempts = int(entry["attempt"])
        post.next_try = float(entry.get("next") or 0.0)


def _read_damage(path: Path) -> Damage | None:
    """The damage recorded by ``isolate``, if any."""
    try:
        record = json.loads((path / _DAMAGE).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return Damage("invalid-damage-json", f"{_DAMAGE} cannot be read: {exc}")
    if not isinstance(record, dict):
        return Damage("invalid-damage-json", f"{_DAMAGE} does not hold a JSON object")
    return Damage(str(record.get("kind", "")), str(record.get("reason", "")))


def _read_meta(path: Path, post_id: str) -> tuple[dict[str, Any] | None, Damage | None]:
    try:
        meta = json.loads((path / _META).read_bytes())
    except FileNotFoundError:
        return None, Damage("missing-post-json", f"{_META} is missing")
    except OSError as exc:
        return None, Damage("invalid-post-json", f"{_META} cannot be read: {exc.strerror}")
    except ValueError as exc:
        return None, Damage("invalid-post-json", f"{_META} is not valid JSON ({exc})")
    problem = check_meta(meta, post_id)
    if problem is not None:
        return None, Damage("invalid-post-json", f"{_META}: {problem}")
    return meta, None


def _check_files(path: Path, meta: dict[str, Any]) -> Damage | None:
    """The damage a listing of the post folder shows (the message's hash is checked when it is sent)."""
    try:
        names = set(os.listdir(path))
    except OSError as exc:
        return Damage("unexpected-file", f"the post folder cannot be listed: {exc.strerror}")
    if _MESSAGE not in names:
        return Damage("missing-message", f"{_MESSAGE} is missing")
    unknown = sorted(names - _FILES)
    if unknown:
        return Damage("unexpected-file", f"{unknown[0]!r} is not a file of a queued post")
    size = meta.get("size")
    if size is not None:
        actual = os.stat(path / _MESSAGE).st_size
        if actual != size:
            return Damage("message-mismatch", f"{_MESSAGE} has {actual} bytes; {size} were queued")
    return None
