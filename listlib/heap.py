"""Hand freed memory back to the system before forking workers (glibc ``malloc_trim``).

After a big phase (rendering 50,000 pages) the process's heap holds much freed but
scattered memory; glibc keeps it, and workers forked then would map it too. Where
the C library has no ``malloc_trim`` (musl, macOS) this does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

__all__ = ["trim_heap"]


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """Loaded when first needed: ctypes costs a few ms that builds with nothing to index need not pay."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def trim_heap() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
