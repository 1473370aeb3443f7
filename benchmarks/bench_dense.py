"""The dense leg alone: the exact scan against the inverted-file probe, side by side.

    .venv/bin/python benchmarks/bench_dense.py [--rows 100000] [--queries 300]

Random vectors are easy for an inverted-file index (they cluster around whatever centres
made them); real sentence embeddings are not. So the vectors here carry the spectrum of
real MiniLM embeddings: LoCoMo's turns (read from ../shared/data, embedded with the local
model once and cached like `episodic bench locomo` does) give the mean and covariance, and
each synthetic row is half a real turn plus a draw from that Gaussian. Queries are held-out
real turns. Prints p50/p95 per search and how much of the exact top 20 and top 100 the
probe found.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from episodic.bench.cache import SqliteEmbeddingCache
from episodic.embed.cache import CachedEmbedder
from episodic.embed.local import MiniLMEmbedder
from episodic.model import ScopeFilter
from episodic.store.dense import DenseIndex, DenseRows

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CACHE = Path(os.environ.get("EPISODIC_CACHE_DIR", Path.home() / ".cache" / "episodic"))

Matrix = npt.NDArray[np.float32]


def real_turn_vectors() -> Matrix:
    conversations = json.loads(DATA.read_text())
    texts = [
        f"{turn['speaker']}: {turn['text']}"
        for item in conversations
        for key, turns in item["conversation"].items()
        if key.startswith("session_") and isinstance(turns, list)
        for turn in turns
    ]
    with SqliteEmbeddingCache(CACHE / "bench-embeddings.db") as cache:
        vectors: Matrix = CachedEmbedder(MiniLMEmbedder(), cache).embed_batch(texts)
    return vectors


def synthetic(real: Matrix, rows: int, rng: np.random.Generator) -> Matrix:
    mean = real.mean(axis=0)
    cov = np.cov((real - mean).T) + 1e-6 * np.eye(real.shape[1])
    chol = np.linalg.cholesky(cov)
    noise = (chol @ rng.standard_normal((real.shape[1], rows))).T + mean
    out = 0.5 * real[rng.integers(0, len(real), rows)] + 0.7 * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def index_of(matrix: Matrix, ann_min_rows: int) -> DenseIndex:
    n = len(matrix)
    index = DenseIndex()
    index.ann_min_rows = ann_min_rows
    index.upsert(
        DenseRows(
            memory_ids=tuple(f"m{i}" for i in range(n)),
            vectors=tuple(v.astype("<f4").tobytes() for v in matrix),
            models=("bench",) * n,
            agent_ids=(None,) * n,
            crew_ids=(None,) * n,
            resource_ids=(None,) * n,
            conversation_ids=(None,) * n,
            base_importances=(0.5,) * n,
            statuses=("active",) * n,
        )
    )
    return index


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    real = real_turn_vectors()
    order = rng.permutation(len(real))
    queries, pool = real[order[: args.queries]], real[order[args.queries :]]
    matrix = synthetic(pool, args.rows, rng)
    flt = ScopeFilter("bench")
    exact = index_of(matrix, ann_min_rows=args.rows + 1)
    t0 = time.perf_counter()
    approx = index_of(matrix, ann_min_rows=0)
    approx.search(flt, None, queries[0], 1)  # trains and fills the inverted file
    print(
        f"{args.rows} rows x {matrix.shape[1]}; inverted file built in "
        f"{time.perf_counter() - t0:.2f}s (load + train + add)"
    )
    for limit in (20, 100):
        times: dict[str, list[float]] = {"exact": [], "ivf": []}
        found: list[float] = []
        for q in queries:
            results = {}
            for name, index in (("exact", exact), ("ivf", approx)):
                t0 = time.perf_counter()
                results[name] = index.search(flt, None, q, limit)
                times[name].append((time.perf_counter() - t0) * 1000)
            truth = {c.memory_id for c in results["exact"]}
            found.append(len(truth & {c.memory_id for c in results["ivf"]}) / limit)
        for name, ts in times.items():
            print(f"top {limit:>3} {name:>5}: p50 {pct(ts, 50):.2f} ms, p95 {pct(ts, 95):.2f} ms")
        print(
            f"top {limit:>3}: the probe found {statistics.mean(found):.3f} of the exact top "
            f"{limit} (worst query {min(found):.2f}); ratio of p50s "
            f"{pct(times['exact'], 50) / pct(times['ivf'], 50):.1f}x"
        )


if __name__ == "__main__":
    main()
