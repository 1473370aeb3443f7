"""Handing freed heap memory back to the operating system, for long-running processes.

Embedding a batch allocates tens of MB of scratch memory for a moment. glibc's malloc
keeps what is freed in its heaps (one per thread that allocated, up to 8 per core) for
reuse, so a server's RSS climbs with every new peak and never comes back down: under the
64-client load test it held ~580 MB while ~230 MB was in use (memray). ``malloc_trim``
returns the free pages of every heap. Elsewhere (macOS, musl) it is a no-op.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
import time
from collections.abc import Callable

log = logging.getLogger("episodic.heap")

# Trimming walks every heap under its lock (a few ms); more often than this gains nothing.
MIN_TRIM_INTERVAL_S = 5.0


def _find_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # musl's libc has none
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


_TRIM = _find_trim()


class HeapTrimmer:
    """``maybe_trim()`` after work that allocated a lot; trims at most once per interval."""

    def __init__(self, min_interval_s: float = MIN_TRIM_INTERVAL_S) -> None:
        self.min_interval_s = min_interval_s
        self.trims = 0
        self._last = float("-inf")
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return _TRIM is not None

    def maybe_trim(self) -> bool:
        """Give free heap pages back now unless that was done within the interval;
        returns whether it trimmed."""
        if _TRIM is None:
            return False
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.min_interval_s:
                return False
            self._last = now
        _TRIM(0)
        self.trims += 1
        return True
