"""Test-only hooks, read from the environment: they exist for the crash and delivery
tests (tests/store/test_crash.py, tests/delivery/test_delivery.py) and do nothing unless those set
LISTLIB_CRASH_AT, LISTLIB_STOP_AT or LISTLIB_NOW."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from ..errors import ListlibError


def clock_from_env() -> Callable[[], float]:
    """The delivery clock: the real one, or LISTLIB_NOW (Unix seconds) so tests can move time forward."""
    fixed = os.environ.get("LISTLIB_NOW")
    if not fixed:
        return time.time
    try:
        value = float(fixed)
    except ValueError:
        raise ListlibError(f"LISTLIB_NOW={fixed!r} is not a number of seconds") from None
    return lambda: value


def fault_from_env() -> Callable[[str], None] | None:
    """Crash tests set LISTLIB_CRASH_AT=POINT:N to SIGKILL this process the N-th time
    it reaches POINT (a real kill -9 at an exact moment; see tests/store/test_crash.py), or
    LISTLIB_STOP_AT=POINT:N to SIGSTOP it there (the test then breaks something, such
    as the POP3 server, and lets it continue with SIGCONT). Reached in a child process
    of the command (a build's search update runs beside its rendering, ``build``), the
    SIGKILL goes to the command's process first (the test kills the command, whose
    children die with it), then to the child; a SIGSTOP only stops the child."""
    command = os.getpid()
    points: list[tuple[str, signal.Signals]] = []
    remaining: list[int] = []
    for variable, sig in (("LISTLIB_CRASH_AT", signal.SIGKILL), ("LISTLIB_STOP_AT", signal.SIGSTOP)):
        spec = os.environ.get(variable)
        if spec:
            point, _, count = spec.partition(":")
            points.append((point, sig))
            remaining.append(int(count or 1))
    if not points:
        return None

    def fault(name: str) -> None:
        for number, (point, sig) in enumerate(points):
            if name == point:
                remaining[number] -= 1
                if remaining[number] == 0:
                    if sig == signal.SIGKILL and os.getpid() != command:
                        os.kill(command, sig)
                    os.kill(os.getpid(), sig)

    return fault
