"""From the store to the outbound queue: queue freshly filed posts of lists with delivery on.

``Intake`` is called by the filing loop right after each store batch is durable and
before filing reports the batch done (so before ``listlib fetch`` deletes the
messages on the POP3 server). A crash between the two leaves the messages on the
server; the next fetch files them again as duplicates, and duplicates are queued
too: the queue is keyed by call number and skips posts it has ever seen, so a
post is queued exactly once. Messages that are bounces of a delivery list
(VERP addresses or DSNs to its bounce address) are recorded, not forwarded. The
queued bytes are composed from the stored copy, never from the wire.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..config import Config, ListDelivery
from ..filers import RawMail
from ..store.batch import Outcome
from ..store.core import Store
from ..store.index import Row
from ..urls import list_index_path, message_path
from ..values import Month, plural
from .bounce import Bounce, BounceLog, find_bounces
from .compose import compose_post
from .policy import decide, load_subscribers
from .queue import NewPost, Outbound

__all__ = ["Intake", "IntakeReport", "open_intake"]

_FIELD_RE = re.compile(rb"^(list-id|x-loop)[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.M | re.I)
_ANGLE_RE = re.compile(r"<([^<>]+)>")


@dataclass
class IntakeReport:
    queued: list[str] = field(default_factory=list)
    held: list[dict[str, str]] = field(default_factory=list)
    loops: list[dict[str, str]] = field(default_factory=list)
    bounces: int = 0

    @property
    def eventful(self) -> bool:
        return bool(self.queued or self.held or self.loops or self.bounces)

    def summary(self) -> str:
        parts = [f"{plural(len(self.queued), 'post')} queued for delivery"]
        if self.held:
            parts.append(f"{len(self.held)} held for a moderator")
        if self.loops:
            parts.append(f"{len(self.loops)} not forwarded (mail loop)")
        if self.bounces:
            parts.append(f"{plural(self.bounces, 'bounce')} recorded")
        return ", ".join(parts)


def _loop_markers(raw: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(List-Id values, X-Loop values) of a message's header, lower-cased."""
    end = raw.find(b"\n\n")
    header = raw[: end if end >= 0 else len(raw)]
    ids: list[str] = []
    loops: list[str] = []
    for name, value in _FIELD_RE.findall(header):
        text = " ".join(value.decode("utf-8", "replace").split()).lower()
        if name.lower() == b"list-id":
            angle = _ANGLE_RE.search(text)
            ids.append(angle.group(1).strip() if angle else text.strip())
        else:
            loops.append(text.strip().strip("<>"))
    return tuple(ids), tuple(loops)


class Intake:
    """The filing hook that queues posts; ``report`` collects what it did."""

    def __init__(self, store: Store, config: Config, outbound: Outbound, clock: Callable[[], float]) -> None:
        self.store = store
        self.config = config
        self.outbound = outbound
        self.clock = clock
        self.report = IntakeReport()
        self.deliveries: dict[str, ListDelivery] = {
            lst.slug: lst.delivery for lst in config.lists if lst.delivery is not None
        }
        self.names = {lst.slug: lst.name for lst in config.lists}
        self._subscribers: dict[str, tuple[str, ...]] = {}
        self.bounce_log = BounceLog(outbound.root)

    def __call__(self, mails: Sequence[RawMail], outcomes: Sequence[Outcome]) -> None:
        if not self.deliveries:
            return
        now = self.clock()
        bounces: list[tuple[Bounce, str, float]] = []
        candidates: dict[str, Outcome] = {}
        for mail, outcome in zip(mails, outcomes, strict=True):
            found = find_bounces(mail.raw, self.deliveries.items())
            if found:
                bounces += [(bounce, outcome.call, now) for bounce in found]
                continue
            if outcome.slug in self.deliveries and outcome.status not in ("failed", "refused", "removed"):
                candidates.setdefault(outcome.call, outcome)
        if bounces:
            self.report.bounces += self.bounce_log.record(bounces)
        fresh = [call for call in candidates if not self.outbound.known(call)]
        if not fresh:
            return
        posts = [self._post(row, now) for row in self.store.index.rows_by_call(fresh)]
        queued = set(self.outbound.enqueue([p for p in posts if p is not None]))
        for post in posts:
            if post is not None and post.id in queued:
                if post.held_reason:
                    self.report.held.append({"id": post.id, "list": post.slug, "reason": post.held_reason})
                else:
                    self.report.queued.append(post.id)

    def _subscribers_of(self, slug: str) -> tuple[str, ...]:
        if slug not in self._subscribers:
            self._subscribers[slug] = load_subscribers(slug, self.deliveries[slug])
        return self._subscribers[slug]

    def _post(self, row: Row, now: float) -> NewPost | None:
        delivery = self.deliveries[row.list]
        raw = (self.store.root / row.path).read_bytes()
        list_ids, loops = _loop_markers(raw)
        decision = decide(delivery, self._subscribers_of(row.list), row.from_addr, list_ids, loops)
        if decision.action == "loop":
            self.report.loops.append({"id": row.call, "list": row.list, "reason": decision.reason or ""})
            return None
        base = self.config.site.base_url
        month = Month(row.year, row.month)
        data = compose_post(
            raw,
            delivery,
            self.names[row.list],
            base + list_index_path(row.list),
            # X-No-Archive: the page is only a placeholder, so there is no archived copy to point at.
            None if row.no_archive else base + message_path(row.list, month, row.call),
        )
        return NewPost(
            id=row.call,
            slug=row.list,
            data=data,
            sender=delivery.bounces_address,
            recipients=decision.recipients,
            message_id=row.message_id,
            poster=row.from_addr,
            queued_at=now,
            held_reason=decision.reason if decision.action == "hold" else None,
        )


def open_intake(
    config: Config, store: Store, *, clock: Callable[[], float], fault: Callable[[str], None] | None = None
) -> Intake | None:
    """The filing hook that queues the posts of lists with deliver = true (the site's
    outbound queue opened, its folders created if need be), or None when no list has
    deliver = true: then nothing about delivery touches the disk."""
    if not any(lst.delivery for lst in config.lists):
        return None
    assert config.site.queue_dir is not None
    outbound = Outbound(config.site.queue_dir, fault=fault).open()
    return Intake(store, config, outbound, clock)
