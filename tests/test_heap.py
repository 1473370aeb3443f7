"""Freed heap memory goes back to the operating system after heavy work (a server's RSS
otherwise stays at its highest peak for good)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from episodic.heap import HeapTrimmer

# Allocates ~200 MB in 2 KB blocks (glibc's heap, not mmap), frees 9 of every 10 so the
# free space is in holes the heap cannot shrink past, then trims.
_CHILD = r"""
import json
from episodic.heap import HeapTrimmer

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
