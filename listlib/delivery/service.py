"""Delivery as ``listlib deliver`` uses it: a site's config in, a report or a listing out.

``open_outbound`` opens the site's outbound queue, ``deliver_queue`` is one delivery
run (the run lock, the SMTP password, a session with the ``[smtp]`` server, the
``runner``), ``queue_listing`` is what ``deliver --status`` shows, and
``purge_removed`` deletes the posts of removed messages (``listlib remove``). Nothing here
prints, reads the environment or knows the command line: the caller passes the
environment to take the password from, the clock, the fault hook of the crash tests
and the progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial

from ..config import Config
from ..errors import DeliveryError, LockTimeoutError
from ..store.core import Store
from ..store.index import HIDDEN, REMOVED
from ..values import plural
from .queue import STAGES, Outbound, QueuedPost, Stage
from .runner import DeliverReport, ProgressCallback, Runner, Withdrawal
from .transport import SmtpSession, resolve_password

__all__ = ["QueueListing", "deliver_queue", "open_outbound", "purge_removed", "queue_listing"]

Fault = Callable[[str], None]
ProgressBar = Callable[[], AbstractContextManager[ProgressCallback]]
"""Shows a progress bar while the recipients go out: entered once the run lock is
held and the password read, so a skipped or failed run never shows one."""

_FAILURES_SHOWN = 20
_TEMPORARY_SHOWN = 5


def open_outbound(config: Config, *, fault: Fault | None = None) -> Outbound:
    """The site's outbound queue, its folders created if need be."""
    assert config.site.queue_dir is not None
    return Outbound(config.site.queue_dir, fault=fault).open()


def deliver_queue(
    config: Config,
    *,
    environ: Mapping[str, str],
    wait: float,
    clock: Callable[[], float] = time.time,
    fault: Fault | None = None,
    progress: ProgressBar | None = None,
) -> DeliverReport:
    """Send the queued posts through the ``[smtp]`` server (one ``Runner`` run), the
    password read from ``environ`` as the config says. Waits up to ``wait`` seconds
    for another run to end; if it does not, nothing is done and the report says
    ``busy``. A site without ``[smtp]`` raises DeliveryError."""
    outbound = open_outbound(config, fault=fault)
    if config.smtp is None:
        raise DeliveryError(f"{config.path}: no [smtp] table: 'listlib deliver' needs a server to send through")
    try:
        with outbound.running(wait):
            password = resolve_password(config.smtp, environ)
            shown = progress() if progress is not None else nullcontext(None)
            with SmtpSession(config.smtp, password) as session, shown as bar:
                runner = Runner(
                    outbound,
                    config.delivery,
                    session,
                    max_recipients=config.smtp.max_recipients,
                    clock=clock,
                    fault=fault,
                    progress=bar,
                    withdrawn=partial(_withdrawn, config),
                )
                return runner.run()
    except LockTimeoutError:
        return DeliverReport(busy=True)


def _withdrawn(config: Config, ids: list[str]) -> dict[str, Withdrawal]:
    """The posts (by call number) whose message stewards hid or removed (``listlib hide``,
    ``listlib remove``), and which of the two. Opening the store applies a ledger entry
    a killed ``listlib remove`` left unapplied. A post whose message the store does not
    know is sent: no post is ever lost for a store that is missing or being rebuilt."""
    why: dict[int, Withdrawal] = {HIDDEN: "hidden", REMOVED: "removed"}
    with Store(config.site.content_dir).open() as store:
        return {row.call: why[row.state] for row in store.index.rows_by_call(ids) if row.state in why}


def purge_removed(config: Config, *, wait: float, fault: Fault | None = None) -> list[str]:
    """Delete the posts of removed messages from the site's outbound queue, from every
    stage, bytes and all (``Outbound.purge``); return their ids. Holds the run lock,
    waiting up to ``wait`` seconds for a ``listlib deliver`` run to end (then raises
    LockTimeoutError: that run's successor purges them). A site without a queue
    folder has nothing to purge, and none is created."""
    assert config.site.queue_dir is not None
    outbound = Outbound(config.site.queue_dir, fault=fault)
    if not outbound.root.is_dir():
        return []
    outbound.open()
    with outbound.running(wait):
        ids = outbound.post_ids()
        removed = [post_id for post_id, why in _withdrawn(config, ids).items() if why == "removed"] if ids else []
        return [post_id for post_id, _stage in outbound.purge(removed)] if removed else []


@dataclass(frozen=True)
class QueueListing:
    """The posts in the queue, stage by stage (new, retry, failed, held), each in filing order."""

    posts: tuple[QueuedPost, ...]

    def to_list(self) -> list[dict[str, object]]:
        return [post.to_dict() for post in self.posts]

    def counts(self) -> dict[Stage, int]:
        return {stage: sum(1 for post in self.posts if post.stage == stage) for stage in STAGES}

    def lines(self) -> Iterator[str]:
        """The text of ``listlib deliver --status``: a line per post (with the first
        failed and pending recipients and their replies under it), then the counts."""
        for post in self.posts:
            info = post.to_dict()
            line = (
                f"{post.stage:<6}  {post.id}  {post.slug}  {info['message_id'] or '(no Message-ID)'}  "
                f"{plural(info['recipients'], 'recipient')}: {info['done']} done, {info['failed']} failed, "
                f"{info['pending']} pending"
            )
            if post.stage == "retry":
                when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(post.next_try))
                line += f"; try {post.attempts + 1} at {when}"
            if post.stage == "held":
                line += f"; held: {info['held_reason']}"
            if post.damage is not None:
                line += f"; damaged: {post.damage.reason}"
            yield line
            for recipient, reply in list(info["failures"].items())[:_FAILURES_SHOWN]:
                yield f"        failed  {recipient}: {reply}"
            for recipient, reply in list(info["temporary"].items())[:_TEMPORARY_SHOWN]:
                yield f"        pending {recipient}: {reply}"
        counts = self.counts()
        yield f"{plural(len(self.posts), 'post')} queued: " + ", ".join(f"{counts[s]} {s}" for s in STAGES)


def queue_listing(config: Config) -> QueueListing:
    """What is in the site's outbound queue, read as it is (nothing repaired or
    created: an empty listing when there is no queue yet)."""
    assert config.site.queue_dir is not None
    outbound = Outbound(config.site.queue_dir)
    if not outbound.root.is_dir():
        return QueueListing(())
    return QueueListing(tuple(post for stage in STAGES for post in outbound.iter_stage(stage)))
