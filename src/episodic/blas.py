"""Matrix products on one BLAS thread, one at a time per process.

numpy's OpenBLAS runs a product over a few thousand rows on every core, and afterwards
keeps its threads spinning, waiting for the next product, for up to a fraction of a second
of CPU. A recall does one product every few milliseconds, so in a recall worker the spin
never stopped: on a store of 12k memories more than half the process's CPU was that spin
(benchmarks/bench_recall_cpu.py: 22.9 -> 10.3 ms of CPU per recall with one thread, p50
10.6 -> 8.0 ms; benchmarks/README.md, "Where a read's CPU goes"), taken from the writes
and the other reads on the same two cores. Our products read a matrix once and are bound
by memory, not cores: on one thread an 11k x 384 product took 0.82 ms, against 0.45 on
two.

Only these products are limited, and the process's BLAS setting is restored after each
one: an agent's own numpy work in the same process keeps its threads. The lock keeps
limit-and-restore pairs from interleaving (each saves the setting it restores) and, as
before, keeps products of several Python threads from fighting over BLAS's threads (with
the SQLite read pool's parallel searches, one agent's scope of 100k memories once went from
257 to 62 searches/s at 8 threads that way: bench_sqlite_reads.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

_PRODUCTS = threading.Lock()


@cache
def _blas() -> tuple[Any, ...]:
    # Finding the loaded BLAS libraries walks the process's shared objects (milliseconds):
    # once. numpy's OpenBLAS is loaded with numpy, before any product.
    from threadpoolctl import ThreadpoolController

    return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the products in this block on the calling thread alone, one block at a time
    in the process. Each library's setting is read and set directly (20-40 µs a block;
    threadpoolctl's ``limit`` took 160, and a recall runs several blocks)."""
    with _PRODUCTS:
        libs = _blas()
        before = [lib.get_num_threads() for lib in libs]
        for lib, threads in zip(libs, before, strict=True):
            if threads != 1:
                lib.set_num_threads(1)
        try:
            yield
        finally:
            for lib, threads in zip(libs, before, strict=True):
                if threads != 1:
                    lib.set_num_threads(threads)
