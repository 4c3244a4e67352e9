"""Where a long thread's page breaks fall: which of its pages holds each message.

A thread is shown on one page until it is long: then its messages, in thread (tree)
order, are cut into pages at message boundaries, walking in order and starting a new
page when the next message would take the page past ``PAGE_MESSAGES`` messages or past
``PAGE_BYTES`` of estimated weight (``message_weight``: the stored size of the message,
which bounds the text its page shows; a few logs of hundreds of KB fill a page long
before fifty short replies do). A message heavier than the budget has a page of its own.

The cut is a pure function of the thread's messages in order and their stored sizes
(which never change under a call number), so a build from scratch and an incremental
one agree. It is stable at the front: a reply that lands at the end of the thread's
order only fills the last page or opens a new one, and one that lands in the middle
moves only the messages after it, never those before. Page 1 is the thread's page;
the others' paths come from ``urls.thread_page_path``. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PAGE_BYTES", "PAGE_MESSAGES", "PLACEHOLDER_WEIGHT", "message_weight", "page_numbers"]

PAGE_MESSAGES = 50
"""The most messages a thread page holds."""
PAGE_BYTES = 150_000
"""The most estimated weight (stored bytes) a thread page holds, unless one message
alone weighs more (a shown text part is at most ``display.walk.MAX_SHOWN_BYTES``).
With these limits the largest HTML page built from any of the test corpora is 354 KB
(``bench/page_size_bench.py``; linux-raid's was 3 MB unpaged)."""
PLACEHOLDER_WEIGHT = 500
"""The weight of a message shown as a placeholder (removed, or not archived)."""


def message_weight(size: int, placeholder: bool) -> int:
    """The estimated weight of a message on its thread page: its stored size in bytes,
    or ``PLACEHOLDER_WEIGHT`` when only a placeholder is shown."""
    return PLACEHOLDER_WEIGHT if placeholder else max(size, PLACEHOLDER_WEIGHT)


def page_numbers(weights: Iterable[int]) -> list[int]:
    """The page (from 1) of each message of a thread, given their weights in thread order."""
    pages: list[int] = []
    page, count, filled = 1, 0, 0
    for weight in weights:
        if count and (count >= PAGE_MESSAGES or filled + weight > PAGE_BYTES):
            page, count, filled = page + 1, 0, 0
        pages.append(page)
        count += 1
        filled += weight
    return pages
