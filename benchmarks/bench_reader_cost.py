"""What it costs to read each of recall's first candidates with a MiniLM-sized transformer,
per query: the price of ordering the head by a model that reads the question beside each
memory (a cross-encoder) rather than by the legs' scores.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src \\
        python benchmarks/bench_reader_cost.py ../shared/data/beam [--questions 60]

The smallest public cross-encoders (ms-marco-MiniLM-L-6-v2 and its kin) have
all-MiniLM-L6-v2's shape: six layers, 384 wide, 256 word pieces at most. A cross-encoder
reads one sequence per candidate, the question and the memory together, so this runs the
local all-MiniLM-L6-v2 session over exactly those sequences (the question, then the
memory's text) and times each query's batch: the cost of the forward passes alone,
whatever weights sit in the graph. For each question the candidates are its evidence
turns, then the turns nearest them, until there are N (a head of BEAM's mixed short and
long messages). It prints the wall time per query, median and 95th percentile, for N 10
and 30, with the load average: recall's own p95 goal is 10 ms for the whole query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

from episodic.bench.beam import load_beam
from episodic.bench.locomo import Conversation, Question
from episodic.embed.local import MiniLMEmbedder

DEPTHS = (10, 30)


def candidates(conversation: Conversation, question: Question, n: int) -> list[str]:
    """The texts of the question's evidence turns, then of the turns nearest them."""
    index = {t.dia_id: i for i, t in enumerate(conversation.turns)}
    anchors = [index[e] for e in question.evidence if e in index] or [0]
    near = sorted(
        range(len(conversation.turns)),
        key=lambda i: min(abs(i - a) for a in anchors),
    )
    return [conversation.turns[i].text for i in near[:n]]


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="BEAM's folder")
    parser.add_argument("--questions", type=int, default=60)
    args = parser.parse_args()
    conversations = load_beam(args.data)
    asked = [(c, q) for c in conversations for q in c.questions if q.evidence][: args.questions]
    embedder = MiniLMEmbedder()
    embedder.load()
    embedder.embed_batch(["warm up"] * 4)
    print(f"{len(asked)} questions, load average {os.getloadavg()[0]:.1f} at the start")
    for depth in DEPTHS:
        times = []
        for conversation, question in asked:
            pairs = [
                f"{question.text} {text}" for text in candidates(conversation, question, depth)
            ]
            start = time.perf_counter()
            embedder.embed_batch(pairs)
            times.append((time.perf_counter() - start) * 1000)
        print(
            f"{depth} candidates read per query: median {statistics.median(times):.1f} ms, "
            f"p95 {percentile(times, 0.95):.1f} ms"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
