"""Can the embedder tell an update's two messages apart from other pairs? Over the hits
`bench_hits_order.py run beam` kept (each question's twenty, with texts and owners), for
every knowledge-update question: the cosine between each pair of the same owner's hits in
its top ten (assistant answers left out), the original-and-updated pairs against all other
such pairs, counted at each threshold.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_update_pairs.py \\
        beam-hits.json

A threshold that passes most update pairs and few others would let "the newer of two
memories about one subject first" be told by similarity; the counts say whether it can.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from episodic.config import Settings
from episodic.embed import make_embedder

THRESHOLDS = (0.5, 0.6, 0.7, 0.8)
TOP = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hits", help="the JSON `bench_hits_order.py run beam` wrote")
    args = parser.parse_args()
    embedder = make_embedder(Settings(embedder="local"))
    assert embedder is not None, "the local model is needed: this compares its cosines"
    with open(args.hits) as f:
        questions = [q for q in json.load(f) if q["category"] == "knowledge_update"]
    pairs: list[float] = []
    others: list[float] = []
    for q in questions:
        hits = q["hits"]
        slots, texts, owners = hits["slots"][:TOP], hits["text"][:TOP], hits["owner"][:TOP]
        original, updated = (set(s) for s in q["changed"])
        vectors = np.asarray(embedder.embed_batch([t[:1000] for t in texts]), dtype=float)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cosines = vectors @ vectors.T
        for i in range(len(slots)):
            for j in range(i + 1, len(slots)):
                if owners[i] != owners[j] or "assistant" in owners[i]:
                    continue
                a, b = slots[i], slots[j]
                pair = (a in original and b in updated) or (a in updated and b in original)
                (pairs if pair else others).append(float(cosines[i, j]))
    print(f"{len(questions)} knowledge-update questions; same-owner pairs in each top {TOP}:")
    print(f"{len(pairs)} original-and-updated pairs, {len(others)} others")
    print("| cosine >= | update pairs passing | other pairs passing |")
    print("|---|---|---|")
    for t in THRESHOLDS:
        passing = sum(c >= t for c in pairs)
        rest = sum(c >= t for c in others)
        print(f"| {t} | {passing} of {len(pairs)} | {rest} of {len(others)} |")
    if pairs:
        print(f"update pairs' cosine: min {min(pairs):.2f}, median {np.median(pairs):.2f}")


if __name__ == "__main__":
    main()
