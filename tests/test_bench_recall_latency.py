"""benchmarks/bench_recall_latency.py: the query embedding's time is not a recall's."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from episodic.bench.harness import Precomputed
from episodic.embed.base import Matrix

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_recall_latency.py"


class SlowModel:
    """A model that spends ~30 ms of its own thread's CPU per call."""

    model_id = "slow"
    dim = 3

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        until = time.thread_time() + 0.03
        while time.thread_time() < until:
            pass
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_a_text_embedded_during_a_recall_is_timed_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    # A question's text without its time expressions misses the precomputed vectors and
    # is embedded inside the timed recall; the bench takes that time out of the recall's.
    monkeypatch.setattr(Precomputed, "embed_batch", Precomputed.embed_batch)  # restored after
    spec = importlib.util.spec_from_file_location("bench_recall_latency", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    spent = bench._time_embedding()
    embedder = Precomputed(SlowModel(), {"known": np.zeros(3, dtype=np.float32)})
    embedder.embed_batch(["known"])
    assert spent[1] < 0.01  # precomputed: nothing to take out
    embedder.embed_batch(["what did she do"])
    wall, cpu = spent
    assert cpu >= 0.025 and wall >= cpu * 0.9
