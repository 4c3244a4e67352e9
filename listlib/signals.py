"""Stop signals (SIGTERM, SIGINT) go to the main thread, where Python runs their handlers.

Python runs a signal's handler in the main thread, but the kernel hands a signal sent
to the process to any thread that does not block it. When a helper thread takes it, the
main thread learns of it only at its next bytecode, which may be after it has moved on
(``fetch --watch``: the main thread took the next batch to file, and the reader thread,
not yet told to halt, started retrieving one more). Helper threads block the stop
signals at their start, so the main thread takes them and its handler runs before it
does anything else.
"""

from __future__ import annotations

import signal

__all__ = ["leave_stop_signals_to_main_thread"]

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


def leave_stop_signals_to_main_thread() -> None:
    """Called first in a helper thread: this thread never takes SIGTERM or SIGINT."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
