"""Matrix products on one BLAS thread (episodic.blas): a search leaves no BLAS thread
spinning between recalls, and the process's own BLAS setting is kept."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from episodic.blas import one_thread
from episodic.model import ScopeFilter
from episodic.store.dense import DenseIndex, DenseRows

DIM = 384
# Enough rows for OpenBLAS to split a product across threads; below the approximate
# path's threshold, so every search is the exact product.
ROWS = 12_000
ACME = ScopeFilter("acme")


def _index() -> tuple[DenseIndex, np.ndarray]:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = DenseIndex()
    index.upsert(
        DenseRows(
            memory_ids=tuple(f"m{i}" for i in range(ROWS)),
            vectors=tuple(v.astype("<f4").tobytes() for v in vecs),
            models=("test/model",) * ROWS,
            agent_ids=(None,) * ROWS,
            crew_ids=(None,) * ROWS,
            resource_ids=(None,) * ROWS,
            conversation_ids=(None,) * ROWS,
            base_importances=(0.5,) * ROWS,
            statuses=("active",) * ROWS,
        )
    )
    assert index.ann_min_rows > ROWS
    return index, vecs


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]


def _others_cpu_s() -> float:
    """CPU seconds of every thread of this process but the calling one (Linux)."""
    me = threading.get_native_id()
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        if int(task.name) == me:
            continue
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a thread that ended meanwhile
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads threads from /proc")
@pytest.mark.parametrize("search", ["search", "search_many"])
def test_searching_leaves_no_thread_spinning_between_searches(search: str) -> None:
    # OpenBLAS keeps its threads spinning after a product, waiting for the next one: a
    # recall every few milliseconds kept a second core busy doing nothing.
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BLAS has no second thread to spin")
    index, vecs = _index()
    one: Callable[[int], object] = {
        "search": lambda i: index.search(ACME, None, vecs[i], 10),
        "search_many": lambda i: index.search_many(ACME, None, vecs[i : i + 4], 10),
    }[search]
    one(0)
    before, started = _others_cpu_s(), time.perf_counter()
    for i in range(60):
        assert one(i)
        time.sleep(0.004)  # the rest of a recall
    wall = time.perf_counter() - started
    others = _others_cpu_s() - before
    assert others < 0.2 * wall, f"other threads took {others:.3f} s of CPU in {wall:.3f} s"


def test_products_run_on_one_thread_and_the_process_setting_is_kept() -> None:
    before = _blas_threads()
    assert before  # numpy's BLAS is found
    with one_thread():
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before
    index, vecs = _index()
    found = index.search(ACME, None, vecs[7], 3)
    assert found[0].memory_id == "m7"
    assert _blas_threads() == before
