"""Freed heap memory goes back to the operating system after heavy work (a server's RSS
otherwise stays at its highest peak for good)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from episodic.heap import HeapTrimmer, limit_arenas

# Allocates ~200 MB in 2 KB blocks (glibc's heap, not mmap), frees 9 of every 10 so the
# free space is in holes the heap cannot shrink past, then trims.
_CHILD = r"""
import json
import os
from episodic.heap import HeapTrimmer, limit_arenas

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024

blocks = [bytearray(2000) for _ in range(100_000)]
kept = blocks[::10]
del blocks
before = rss_mb()
trimmed = HeapTrimmer(min_interval_s=0).maybe_trim()
print(json.dumps({"before": before, "after": rss_mb(), "trimmed": trimmed, "kept": len(kept)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trimming_hands_freed_heap_pages_back() -> None:
    assert HeapTrimmer().available
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True
    ).stdout
    seen = json.loads(out)
    assert seen["trimmed"]
    # ~180 MB was freed into holes; most of it leaves the process.
    assert seen["before"] - seen["after"] > 80, seen


def test_trims_at_most_once_per_interval() -> None:
    heap = HeapTrimmer(min_interval_s=0.3)
    if not heap.available:
        assert not heap.maybe_trim()
        return
    assert heap.maybe_trim()
    assert not heap.maybe_trim()  # within the interval: no second walk of the heaps
    time.sleep(0.35)
    assert heap.maybe_trim()
    assert heap.trims == 2


# Counts the malloc heaps after 16 threads allocated at once (malloc_info lists one
# <heap> per arena).
_ARENAS_CHILD = r"""
import ctypes, sys, threading
from episodic.heap import limit_arenas
if sys.argv[1] == "limit":
    assert limit_arenas(2)
barrier = threading.Barrier(16)
def work():
    barrier.wait()
    blocks = [bytearray(300) for _ in range(2000)]
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL("libc.so.6")
libc.open_memstream.restype = ctypes.c_void_p
buf, size = ctypes.c_char_p(), ctypes.c_size_t()
stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
libc.malloc_info(0, ctypes.c_void_p(stream))
libc.fclose(ctypes.c_void_p(stream))
print(buf.value.decode().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("mode", "most"), [("limit", 2), ("default", None)])
def test_a_server_keeps_to_two_heaps(mode: str, most: int | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", _ARENAS_CHILD, mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    heaps = int(out.strip())
    if most is not None:
        assert heaps <= most
    else:
        assert heaps > 2  # what the cap saves: glibc's default grows with the threads


def test_a_cap_set_by_the_user_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas(2)
    assert os.environ["MALLOC_ARENA_MAX"] == "4"
