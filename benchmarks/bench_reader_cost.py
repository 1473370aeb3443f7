"""What it costs to read each of recall's first candidates with a MiniLM-sized transformer,
per query: the price of ordering the head by a model that reads the question beside each
memory (a cross-encoder) rather than by the legs' scores.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src \\
        python benchmarks/bench_reader_cost.py ../shared/data/beam [--questions 60] \\
        [--shape LAYERS,HEADS,HIDDEN]

The smallest public cross-encoders (ms-marco-MiniLM-L-6-v2 and its kin) have
all-MiniLM-L6-v2's shape: six layers, 384 wide, 256 word pieces at most. A cross-encoder
reads one sequence per candidate, the question and the memory together, so this runs the
local all-MiniLM-L6-v2 session over exactly those sequences (the question, then the
memory's text) and times each query's batch: the cost of the forward passes alone,
whatever weights sit in the graph. For each question the candidates are its evidence
turns, then the turns nearest them, until there are N (a head of BEAM's mixed short and
long messages). It prints the wall time per query, median and 95th percentile, for N 10
and 30, with the load average: recall's own p95 goal is 10 ms for the whole query.

``--shape`` times a BERT of another shape instead, with random weights (the cost of the
forward passes does not depend on them), built as the local model's graph is and run with
its session options and tokenizer: ``2,2,128`` is ms-marco-TinyBERT-L-2-v2's, the
smallest cross-encoder in common use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence

from episodic.bench.beam import load_beam
from episodic.bench.locomo import Conversation, Question
from episodic.embed.local import BertShape, MiniLMEmbedder, build_graph

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


VOCAB = 30522  # BERT's uncased word pieces, MiniLM's and TinyBERT's alike
POSITIONS = 512


def random_bert(layers: int, heads: int, hidden: int) -> Callable[[Sequence[str]], object]:
    """A function running a BERT of this shape, random weights, over a batch of texts
    tokenised as the local model's are."""
    import numpy as np
    import onnxruntime as ort

    from episodic.embed.local import _runtime, _session_options

    rng = np.random.default_rng(0)

    def matrix(*dims: int) -> np.ndarray:
        return rng.normal(0, 0.02, dims).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": matrix(VOCAB, hidden),
        "embeddings.position_embeddings.weight": matrix(POSITIONS, hidden),
        "embeddings.token_type_embeddings.weight": matrix(2, hidden),
        "embeddings.LayerNorm.weight": np.ones(hidden, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(hidden, np.float32),
    }
    sizes = {
        "attention.self.query": (hidden, hidden),
        "attention.self.key": (hidden, hidden),
        "attention.self.value": (hidden, hidden),
        "attention.output.dense": (hidden, hidden),
        "intermediate.dense": (4 * hidden, hidden),
        "output.dense": (hidden, 4 * hidden),
    }
    for n in range(layers):
        for name, (rows, cols) in sizes.items():
            weights[f"encoder.layer.{n}.{name}.weight"] = matrix(rows, cols)
            weights[f"encoder.layer.{n}.{name}.bias"] = np.zeros(rows, np.float32)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"encoder.layer.{n}.{norm}.weight"] = np.ones(hidden, np.float32)
            weights[f"encoder.layer.{n}.{norm}.bias"] = np.zeros(hidden, np.float32)
    shape = BertShape(layers, heads, hidden, 1e-12, POSITIONS, 256)
    session = ort.InferenceSession(
        build_graph(weights, shape).SerializeToString(),
        _session_options(),
        providers=["CPUExecutionProvider"],
    )
    local = MiniLMEmbedder()
    tokenizer = _runtime(local.model_dir, local.cache_dir, local.source).tokenizer

    def run(texts: Sequence[str]) -> object:
        ids = [enc.ids for enc in tokenizer.encode_batch(list(texts))]
        longest = max(len(i) for i in ids)
        input_ids = np.zeros((len(ids), longest), dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for row, i in enumerate(ids):
            input_ids[row, : len(i)] = i
            mask[row, : len(i)] = 1
        return session.run(None, {"input_ids": input_ids, "attention_mask": mask})

    return run


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="BEAM's folder")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--shape", help="LAYERS,HEADS,HIDDEN: a BERT of this shape, random weights")
    args = parser.parse_args()
    conversations = load_beam(args.data)
    asked = [(c, q) for c in conversations for q in c.questions if q.evidence][: args.questions]
    if args.shape:
        layers, heads, hidden = (int(v) for v in args.shape.split(","))
        read = random_bert(layers, heads, hidden)
        what = f"a BERT of {layers} layers, {heads} heads, {hidden} wide (random weights)"
    else:
        embedder = MiniLMEmbedder()
        embedder.load()
        read = embedder.embed_batch
        what = "all-MiniLM-L6-v2 (6 layers, 12 heads, 384 wide)"
    read(["warm up"] * 4)
    print(f"{what}; {len(asked)} questions, load average {os.getloadavg()[0]:.1f} at the start")
    for depth in DEPTHS:
        times = []
        for conversation, question in asked:
            pairs = [
                f"{question.text} {text}" for text in candidates(conversation, question, depth)
            ]
            start = time.perf_counter()
            read(pairs)
            times.append((time.perf_counter() - start) * 1000)
        print(
            f"{depth} candidates read per query: median {statistics.median(times):.1f} ms, "
            f"p95 {percentile(times, 0.95):.1f} ms"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
