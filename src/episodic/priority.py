"""CPU priority of the heavy work of one process: with ``EPISODIC_NICE`` set, recalls and the
indexer's embedding run at a lower priority (a nice increment, per thread on Linux) than
writes and the server's event loop.

On two cores shared by recalls in flight, the writes, the event loop and the indexer, the
kernel's scheduler gives the same share to every runnable thread, so a write (small) took
several recalls' time slices to finish. With the heavy threads niced, a runnable write
thread and the event loop that answers it run first; recalls and the indexer still get
every cycle nothing else wants, and share those as before.
"""

from __future__ import annotations

import os
import threading

from episodic.config import whole_number

MAX_NICE = 19


def env_nice(name: str, default: int) -> int:
    """A nice increment from the environment (0 to 19), or ``default``; a bad value is an
    error that names the variable."""
    return whole_number(os.environ, name, default, most=MAX_NICE)


# How much lower the heavy threads' priority is; 0, the default, leaves it as the rest's.
# Measured with the 64-client mixed load on SQLite (benchmarks/README.md, "CPU priority"):
# at 10, a write's median halved in 120 s and 600 s runs, but over 600 s the reads lost
# 14% of their throughput and the writes' p95 and p99 grew (1,336 / 3,928 against 927 /
# 2,119 ms): niced threads holding the GIL or a lock wait for CPU behind the rest. So it
# is a choice for a deployment that wants short median writes, not the default.
HEAVY_NICE = env_nice("EPISODIC_NICE", 0)


def lower_priority(increment: int) -> None:
    """Lower the calling thread's CPU priority by ``increment`` (Linux: nice is per
    thread). Where that is not possible, the thread keeps the priority it has."""
    if increment <= 0 or not hasattr(os, "setpriority"):
        return
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX_NICE, now + increment))
    except OSError:
        pass
