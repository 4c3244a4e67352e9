"""Which date, and so which month, a message is filed under; pure.

The Date header wins when it is sane. Otherwise the newest Received header,
then the mbox separator (envelope) date, then the import time. The choice and
its source are recorded so that a reader can see why a message sits where it
does, and so that rebuilding the index from the files gives the same answer.
"""

from __future__ import annotations

import time
from typing import Literal, NamedTuple

from .values import Month

__all__ = ["DateChoice", "DateSource", "choose_date", "month_of", "plausible"]

DateSource = Literal["date", "received", "envelope", "import"]

#: Nothing was archived before this (1971-01-01, the year of the first email).
EARLIEST = 31_536_000
#: A Date this far after the transport date is a sender's broken clock.
MAX_AHEAD = 2 * 86_400
#: A Date this far before the transport date is a broken clock or a re-sent relic.
MAX_BEHIND = 45 * 86_400


class DateChoice(NamedTuple):
    """The date a message is filed under (Unix seconds, UTC) and where it came from."""

    when: int
    source: DateSource


def plausible(when: int | None, now: int) -> bool:
    """A date a message could have been sent at (after 1971, not in the future)."""
    return when is not None and EARLIEST <= when <= now + MAX_AHEAD


def choose_date(
    date: int | None,
    received: int | None,
    envelope: int | None,
    now: int,
) -> DateChoice:
    """Pick the filing date from the Date header, Received, envelope or ``now``."""
    transport = received if plausible(received, now) else None
    if transport is None and plausible(envelope, now):
        transport = envelope
    if (
        date is not None
        and plausible(date, now)
        and (transport is None or transport - MAX_BEHIND <= date <= transport + MAX_AHEAD)
    ):
        return DateChoice(date, "date")
    if transport is not None:
        return DateChoice(transport, "received" if transport == received else "envelope")
    return DateChoice(now, "import")


def month_of(when: int) -> Month:
    """The UTC month of a Unix time."""
    tm = time.gmtime(when)
    return Month(tm.tm_year, tm.tm_mon)
