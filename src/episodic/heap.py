"""Handing freed heap memory back to the operating system, for long-running processes.

Embedding a batch allocates tens of MB of scratch memory for a moment. glibc's malloc
keeps what is freed in its heaps (one per thread that allocated, up to 8 per core) for
reuse, so a server's RSS climbs with every new peak and never comes back down: under the
64-client load test it held ~580 MB while ~230 MB was in use (memray). ``malloc_trim``
returns the free pages of every heap, and a server caps the number of heaps
(``limit_arenas``): a page half used by one thread's heap cannot be returned, and forty
request threads spread the same allocations over sixteen heaps. Elsewhere (macOS, musl)
both are no-ops.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# Trimming walks every heap under its lock (a few ms); more often than this gains nothing.
MIN_TRIM_INTERVAL_S = 5.0
# Heaps for a server process: its threads mostly take turns (the GIL), and the model's own
# threads allocate from their arena-backed pool, so two are plenty.
SERVER_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt parameter, from glibc's malloc.h


def _glibc(name: str, *argtypes: Any) -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    fn = getattr(libc, name, None)  # musl's libc has neither
    if fn is None:
        return None
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_TRIM = _glibc("malloc_trim", ctypes.c_size_t)
_MALLOPT = _glibc("mallopt", ctypes.c_int, ctypes.c_int)


def limit_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Cap this process's malloc heaps, and those of processes it starts (worker
    processes read ``MALLOC_ARENA_MAX``). Call before threads start. A cap the user set
    in the environment is left as it is. Returns whether the cap is in force."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return True  # glibc read it at start-up
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    return _MALLOPT is not None and _MALLOPT(_M_ARENA_MAX, arenas) == 1


class HeapTrimmer:
    """``maybe_trim()`` after work that allocated a lot; trims at most once per interval.
    One per loop (the indexer's thread): not shared between threads."""

    def __init__(self, min_interval_s: float = MIN_TRIM_INTERVAL_S) -> None:
        self.min_interval_s = min_interval_s
        self.trims = 0
        self._last = float("-inf")

    @property
    def available(self) -> bool:
        return _TRIM is not None

    def maybe_trim(self) -> bool:
        """Give free heap pages back now unless that was done within the interval;
        returns whether it trimmed."""
        now = time.monotonic()
        if _TRIM is None or now - self._last < self.min_interval_s:
            return False
        self._last = now
        _TRIM(0)
        self.trims += 1
        return True
