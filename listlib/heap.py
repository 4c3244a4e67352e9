"""Hand freed memory back to the system before forking workers (glibc ``malloc_trim``).

After a big phase (rendering 50,000 pages) the process's heap holds much freed but
scattered memory; glibc keeps it, and workers forked then would map it too. Where
the C library has no ``malloc_trim`` (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["trim_heap"]


def _load() -> object | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load()


def trim_heap() -> None:
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)  # type: ignore[operator]
