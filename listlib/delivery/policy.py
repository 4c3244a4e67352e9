"""What happens to a message filed for a list with delivery on: queue it, hold it, or stop a loop.

- A message that already carries this list's ``List-Id`` or its ``X-Loop`` marker
  went through this list before (a subscriber's autoresponder, a list subscribed
  to itself): it is archived but never forwarded again.
- Mail from the list's own bounce or request addresses is never forwarded.
- With ``posters = "subscribers"`` a post from anyone else is held for a moderator.
- The recipients are the subscribers, without the poster when ``exclude_poster``.

Pure, except ``load_subscribers``, which reads the list's subscribers file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..config import ListDelivery
from ..errors import DeliveryError

__all__ = ["Decision", "decide", "load_subscribers"]

Action = Literal["queue", "hold", "loop"]
_ADDRESS_RE = re.compile(r"[^@\s<>()\[\],;:\"]+@[^@\s<>()\[\],;:\"]+\Z")


@dataclass(frozen=True)
class Decision:
    action: Action
    recipients: tuple[str, ...]
    reason: str | None = None


def load_subscribers(slug: str, delivery: ListDelivery) -> tuple[str, ...]:
    """The list's subscribers: inline ones, then those of ``subscribers_file``; lower-cased, each once."""
    found = list(delivery.subscribers)
    path = delivery.subscribers_file
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise DeliveryError(f"list {slug!r}: subscribers_file {path} cannot be read: {reason}") from None
        for number, line in enumerate(text.splitlines(), 1):
            address = line.split("#", 1)[0].strip()
            if not address:
                continue
            if not _ADDRESS_RE.match(address):
                raise DeliveryError(f"list {slug!r}: {path}, line {number}: {address!r} is not an email address")
            found.append(address.lower())
    return tuple(dict.fromkeys(found))


def decide(
    delivery: ListDelivery,
    subscribers: tuple[str, ...],
    poster: str,
    list_ids: tuple[str, ...],
    loop_markers: tuple[str, ...],
) -> Decision:
    """Queue, hold or stop this message (see the module docstring)."""
    poster = poster.lower()
    if delivery.list_id.lower() in list_ids or delivery.post_address in (m.lower() for m in loop_markers):
        return Decision("loop", (), f"it already went through this list ({delivery.list_id})")
    own = {delivery.bounces_address, delivery.request_address, delivery.post_address}
    bounce_local, _, bounce_domain = delivery.bounces_address.partition("@")
    if poster in own or (poster.startswith(bounce_local + "+") and poster.endswith("@" + bounce_domain)):
        return Decision("loop", (), f"it comes from the list's own address {poster}")
    recipients = subscribers
    if delivery.exclude_poster:
        recipients = tuple(r for r in subscribers if r != poster)
    if delivery.posters == "subscribers" and poster not in subscribers:
        return Decision("hold", recipients, f"{poster or 'an unknown sender'} is not a subscriber")
    return Decision("queue", recipients)
