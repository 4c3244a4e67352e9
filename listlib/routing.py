"""Which list a message belongs to; pure.

List-Id wins (RFC 2919: it names the list whatever the addresses say), then the
To, Cc, Delivered-To, X-Original-To, Resent-To and Envelope-To addresses are
matched against each list's configured addresses. No match means ``_no_list``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .config import ListConfig
from .message import MessageFacts

__all__ = ["Router"]


class Router:
    """Routes messages to list slugs, built once from the configured lists."""

    def __init__(self, lists: Iterable[ListConfig]) -> None:
        self._by_id: dict[str, str] = {}
        self._by_address: dict[str, str] = {}
        for lst in lists:
            for list_id in lst.list_ids:
                self._by_id[list_id] = lst.slug
            for address in lst.addresses:
                self._by_address[address] = lst.slug

    def route(self, facts: MessageFacts) -> str | None:
        """The slug of the list this message belongs to, or None."""
        for list_id in facts.list_ids:
            slug = self._by_id.get(list_id)
            if slug:
                return slug
        for address in facts.recipients:
            slug = self._by_address.get(address)
            if slug:
                return slug
        return None
