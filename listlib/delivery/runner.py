"""``listlib deliver``: send queued posts, new ones first, then retries that are due.

For each post, its pending recipients go out in SMTP transactions (up to
``max_recipients`` RCPT TO per transaction; one per recipient with VERP, whose
envelope sender names the recipient). After each transaction the outcome of
every recipient in it is appended to the post's journal and fsync'ed before the
next transaction starts: accepted -> done, 5xx -> failed with the reply, 4xx or
a lost connection -> still pending. Then the post moves on:

- nothing pending, nothing failed: it leaves the queue (its id goes to sent.log);
- nothing pending, something failed: to ``failed/``, with the replies;
- still pending: an attempt is recorded with the time of the next try (the wait
  starts at ``retry_first_minutes`` and doubles up to ``retry_max_minutes``) and
  it moves to ``retry/``; recipients still pending ``give_up_days`` after the
  post was queued fail for good.

A damaged post in new/ or retry/ (see ``queue``) is moved to ``failed/`` with
its damage and sent to nobody, and the run goes on with the others; so is a post
whose message turns out not to be the bytes queued when it is read to be sent.

Stewards' actions come first: a post whose message was removed (``listlib remove``,
a take-down) is deleted from whatever stage holds it, bytes and all, before anything
else is read or sent (``listlib remove`` purges such posts itself; this finishes a
remove killed before it could); a due post whose message was hidden (``listlib hide``)
is moved to ``failed/`` and sent to no one more.

When the server cannot be reached, no post is lost: each due post records an
attempt and waits for its next try. The clock is passed in (tests advance it),
runs are serialised by the queue's run lock (taken by the caller), and nothing
here prints: progress goes to a callback. ``release_or_drop`` is ``listlib deliver
--release/--drop`` (it takes the run lock itself).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from ..config import DeliveryConfig
from ..errors import DeliveryError
from ..values import plural
from .bounce import verp_sender
from .queue import Outbound, QueuedPost
from .transport import ConnectError, Transaction, TransportError

__all__ = ["DeliverReport", "Runner", "Sender", "Withdrawal", "release_or_drop"]

Fault = Callable[[str], None]
Withdrawal = Literal["hidden", "removed"]
"""Why a post must no longer be sent: its message was hidden, or removed (taken down)."""
ProgressCallback = Callable[[int, int, int], None]
"""Called with (recipients handled, recipients to handle, recipients handled)."""

_MAX_CONSECUTIVE_ERRORS = 2


class Sender(Protocol):
    """What the runner needs of an SMTP session (``transport.SmtpSession``)."""

    server: str

    def send(self, sender: str, recipients: list[str], data: bytes) -> Transaction: ...


@dataclass
class DeliverReport:
    """What one ``listlib deliver`` run did."""

    posts: int = 0
    """Posts worked on."""
    transactions: int = 0
    delivered: int = 0
    """Recipients the server accepted in this run."""
    failed: int = 0
    """Recipients that failed for good in this run."""
    deferred: int = 0
    """Recipients left pending by this run (temporary failures)."""
    completed: list[str] = field(default_factory=list)
    """Posts that left the queue, every recipient done."""
    to_failed: list[str] = field(default_factory=list)
    to_retry: list[str] = field(default_factory=list)
    not_due: int = 0
    """Posts in retry/ whose next try has not come yet."""
    held: int = 0
    damaged: list[dict[str, str]] = field(default_factory=list)
    """Damaged posts moved to failed/ by this run, sent to nobody: id, kind and reason."""
    withdrawn: list[str] = field(default_factory=list)
    """Posts whose message was hidden (``listlib hide``) before they were sent: moved to
    failed/, sent to no one more."""
    purged: list[str] = field(default_factory=list)
    """Posts whose message was removed (``listlib remove``): deleted from the queue, from
    any stage, bytes and all, sent to no one more."""
    recovered: list[str] = field(default_factory=list)
    error: str | None = None
    """Why the server could not be used (the posts wait for their next try)."""
    busy: bool = False
    """Another 'listlib deliver' was running; nothing was done."""
    seconds: float = 0.0

    @property
    def eventful(self) -> bool:
        done = (self.transactions, self.completed, self.to_failed, self.damaged, self.withdrawn, self.purged)
        return any(done) or bool(self.error or self.busy)

    def summary(self) -> str:
        if self.busy:
            return "deliver: another 'listlib deliver' is still running; skipped"
        damaged = ""
        if self.damaged:
            damaged = f"; {plural(len(self.damaged), 'damaged post')} moved to failed/"
        if self.withdrawn:
            damaged += f"; {plural(len(self.withdrawn), 'post')} withdrawn (hidden from the archive) moved to failed/"
        if self.purged:
            damaged += f"; {plural(len(self.purged), 'post')} of removed messages deleted from the queue"
        if not self.posts:
            waiting = f" ({self.not_due} waiting to be retried)" if self.not_due else ""
            held = f" ({self.held} held)" if self.held else ""
            return f"deliver: nothing to send{waiting}{held}{damaged}"
        text = (
            f"deliver: {plural(self.posts, 'post')} in {self.seconds:.1f} s: "
            f"{plural(self.delivered, 'recipient')} delivered, "
            f"{self.failed} failed, {self.deferred} deferred; {plural(len(self.completed), 'post')} done, "
            f"{len(self.to_failed)} to failed, {len(self.to_retry)} to retry"
        )
        if self.not_due:
            text += f", {self.not_due} not due"
        if self.held:
            text += f"; {self.held} held"
        return text + damaged

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Runner:
    """One delivery run over the queue."""

    def __init__(
        self,
        outbound: Outbound,
        settings: DeliveryConfig,
        session: Sender,
        *,
        max_recipients: int,
        clock: Callable[[], float] = time.time,
        fault: Fault | None = None,
        progress: ProgressCallback | None = None,
        withdrawn: Callable[[list[str]], dict[str, Withdrawal]] | None = None,
    ) -> None:
        """``withdrawn``: which of these post ids (call numbers) must no longer be sent,
        and why (their message was hidden, or removed)."""
        self.withdrawn = withdrawn
        self.outbound = outbound
        self.settings = settings
        self.session = session
        self.max_recipients = 1 if settings.verp else max_recipients
        self.clock = clock
        self.fault = fault or (lambda point: None)
        self.progress = progress
        self.report = DeliverReport()
        self._errors = 0
        self._done = 0
        self._total = 0

    def run(self) -> DeliverReport:
        started = time.monotonic()
        report = self.report
        report.recovered = self.outbound.recover()
        hidden = self._purge_withdrawn()
        now = self.clock()
        due: list[QueuedPost] = []
        for post in self.outbound.iter_stage("new", repair=True):
            if post.damage is not None:
                self._isolate(post)
            else:
                due.append(post)
        for post in self.outbound.iter_stage("retry", repair=True):
            if post.damage is not None:
                self._isolate(post)
            elif post.next_try <= now:
                due.append(post)
            else:
                report.not_due += 1
        report.held = sum(1 for _ in (self.outbound.root / "held").iterdir())
        for post in [post for post in due if post.id in hidden]:
            self._withdraw(post)
        due = [post for post in due if post.id not in hidden]
        self._total = sum(len(post.pending()) for post in due)
        for post in due:  # new posts first, then retries, each in filing order
            if self._deliver(post):
                report.posts += 1
        report.seconds = time.monotonic() - started
        return report

    def _deliver(self, post: QueuedPost) -> bool:
        """Send a post to its pending recipients and settle it; False when it turned out damaged."""
        pending = post.pending()
        if pending and self.report.error is None:
            data = post.message()
            if data is None:
                self._isolate(post)
                self._total -= len(pending)
                return False
            for chunk in _chunks(pending, self.max_recipients):
                if not self._transaction(post, chunk, data):
                    break
        self._settle(post)
        return True

    def _purge_withdrawn(self) -> set[str]:
        """Delete the posts of removed messages from every stage (before a damaged one is
        moved to failed/ with its bytes, and held and failed ones too); return the posts
        of hidden messages."""
        if self.withdrawn is None:
            return set()
        ids = self.outbound.post_ids()
        why = self.withdrawn(ids) if ids else {}
        removed = [post_id for post_id, reason in why.items() if reason == "removed"]
        if removed:
            self.report.purged = [post_id for post_id, _stage in self.outbound.purge(removed)]
        return {post_id for post_id, reason in why.items() if reason == "hidden"}

    def _withdraw(self, post: QueuedPost) -> None:
        """Send a post to no one more: its message was hidden from the archive."""
        reason = "withdrawn: the message was hidden from the archive before it was sent"
        self.outbound.record(post, [{"r": r, "s": "failed", "reply": reason} for r in post.pending()])
        self.outbound.move(post, "failed")
        self.report.withdrawn.append(post.id)

    def _isolate(self, post: QueuedPost) -> None:
        assert post.damage is not None
        self.outbound.isolate(post, self.clock())
        self.report.damaged.append({"id": post.id, "kind": post.damage.kind, "reason": post.damage.reason})

    def _transaction(self, post: QueuedPost, chunk: list[str], data: bytes) -> bool:
        """Send to one chunk and record the outcome durably; False when the server is gone."""
        sender = verp_sender(post.sender, chunk[0]) if self.settings.verp else post.sender
        self.fault("sending")
        try:
            result = self.session.send(sender, chunk, data)
        except TransportError as exc:
            self._errors += 1
            self.report.transactions += 1
            self.outbound.record(post, [{"r": r, "s": "temp", "reply": str(exc)} for r in chunk])
            if self._errors >= _MAX_CONSECUTIVE_ERRORS or isinstance(exc, ConnectError):
                self.report.error = str(exc)
                return False
            return True
        self._errors = 0
        self.report.transactions += 1
        self.fault("accepted")  # the server has the message; the mark below is not yet durable
        entries = []
        for recipient in chunk:
            reply = result.outcome(recipient)
            if reply.accepted:
                entries.append({"r": recipient, "s": "done"})
                self.report.delivered += 1
            elif reply.permanent:
                entries.append({"r": recipient, "s": "failed", "reply": str(reply)})
                self.report.failed += 1
            else:
                entries.append({"r": recipient, "s": "temp", "reply": str(reply)})
        self.outbound.record(post, entries)
        self.fault("marked")
        self._done += len(chunk)
        if self.progress is not None:
            self.progress(self._done, self._total, self._done)
        return True

    def _settle(self, post: QueuedPost) -> None:
        now = self.clock()
        pending = post.pending()
        deadline = post.queued_at + self.settings.give_up_days * 86400
        if pending and now >= deadline:
            days = f"{self.settings.give_up_days:g}"
            post_entries = [
                {"r": r, "s": "failed", "reply": f"gave up after {days} days: {post.replies.get(r, 'never accepted')}"}
                for r in pending
            ]
            self.outbound.record(post, post_entries)
            self.report.failed += len(pending)
            pending = []
        if not pending:
            if post.count("failed"):
                self.outbound.move(post, "failed")
                self.report.to_failed.append(post.id)
            else:
                self.outbound.remove(post)
                self.report.completed.append(post.id)
            return
        self.report.deferred += len(pending)
        attempt = post.attempts + 1
        wait = min(
            self.settings.retry_first_minutes * 60 * 2 ** (attempt - 1),
            self.settings.retry_max_minutes * 60,
        )
        self.outbound.record(post, [{"attempt": attempt, "at": now, "next": min(now + wait, deadline)}])
        self.outbound.move(post, "retry")
        self.report.to_retry.append(post.id)


def release_or_drop(
    outbound: Outbound, release: Sequence[str], drop: Sequence[str], *, wait: float, log: Callable[[str], None]
) -> None:
    """Let the held posts ``release`` go out (to new/), then remove the held, failed
    or damaged posts ``drop`` for good, under the run lock (waiting up to ``wait``
    seconds for a run in progress). Each done is said to ``log`` as it is done; the
    first post that cannot be released or dropped stops the rest with a DeliveryError."""
    with outbound.running(wait):
        for post_id in release:
            stage = outbound.find(post_id)
            if stage != "held":
                raise DeliveryError(f"no held post {post_id!r}" + (f" (it is in {stage}/)" if stage else ""))
            post = outbound.load("held", post_id)
            if post.damage is not None:
                raise DeliveryError(f"held post {post_id} is damaged: {post.damage.reason}; --drop it")
            with outbound.state_lock():
                outbound.move(post, "new")
            log(f"released {post_id}: it goes out with the next 'listlib deliver'")
        for post_id in drop:
            stage = outbound.find(post_id)
            post = outbound.load(stage, post_id) if stage is not None else None
            if post is None or (stage not in ("held", "failed") and post.message() is not None):
                raise DeliveryError(f"no held or failed post {post_id!r}" + (f" (it is in {stage}/)" if stage else ""))
            outbound.remove(post)
            log(f"dropped {post_id} from {stage}/")
