"""What does indexing long texts cost the local embedder in memory, and in speed?

    .venv/bin/python benchmarks/bench_embed_memory.py [--rounds 5] [--batches 12]

An indexer hands the model batches of 32 texts; the ones here are a mix of lengths, from a
few words to past the model's 256 tokens (agent journals hold stack traces and tool
output). Each round runs two fresh processes one after the other, one per mode, each
embedding the same ``--batches`` batches:

- ``fixed``: runs of 32 rows whatever their length, onnxruntime's arena kept at its peak
  (the embedder before this benchmark);
- ``budget``: runs whose rows x longest^2 stay within ``ATTENTION_BUDGET``, the arena
  shrunk back after each run (the embedder now).

Prints, per mode, the median over rounds of texts embedded per second, the process's
peak RSS and its RSS after the last batch, and the largest difference between the two
modes' vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time
import numpy as np
import episodic.embed.local as local

mode, batches, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "fixed":
    local.ATTENTION_BUDGET = 10**12
emb = local.MiniLMEmbedder()
emb.embed_batch(["warm up"])
if mode == "fixed":
    emb._rt().run_options = None

words = ("deploy service checkout payment cache memory database migration rollback "
         "incident user prefers agent tool call error timeout retry latency queue worker "
         "Traceback File line raise KeyError config flag alert dashboard metric").split()
rng = np.random.default_rng(seed)
texts = []
for _ in range(batches * 32):
    n = int(rng.choice([6, 12, 25, 60, 120, 260]))
    texts.append(" ".join(rng.choice(words, n)))

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0

start = time.perf_counter()
vectors = [emb.embed_batch(texts[i : i + 32]) for i in range(0, len(texts), 32)]
took = time.perf_counter() - start
np.save(sys.argv[4], np.concatenate(vectors))
print(json.dumps({
    "texts_per_s": len(texts) / took,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "rss_after_mb": rss_mb(),
}))
"""


def run(mode: str, batches: int, seed: int, out: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(batches), str(seed), out],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=12)
    args = parser.parse_args()

    import tempfile

    import numpy as np

    modes = ("fixed", "budget")
    seen: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            seed = random.Random(r).randrange(1 << 30)
            order = modes if r % 2 == 0 else modes[::-1]
            for mode in order:
                seen[mode].append(run(mode, args.batches, seed, f"{tmp}/{mode}.npy"))
            a, b = np.load(f"{tmp}/fixed.npy"), np.load(f"{tmp}/budget.npy")
            worst = max(worst, float(np.abs(a - b).max()))

    print(f"{args.batches} batches of 32 mixed-length texts, {args.rounds} rounds, medians:")
    print(f"{'mode':8} {'texts/s':>9} {'peak RSS MB':>12} {'RSS after MB':>13}")
    for mode in modes:
        rows = seen[mode]

        def med(key: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(row[key] for row in rows)

        print(
            f"{mode:8} {med('texts_per_s'):9.1f} {med('peak_rss_mb'):12.0f} "
            f"{med('rss_after_mb'):13.0f}"
        )
    print(f"largest difference between the two modes' vectors: {worst:.2e}")


if __name__ == "__main__":
    main()
