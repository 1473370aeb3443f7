"""How fast is the local MiniLM embedder on this machine?

    .venv/bin/python benchmarks/bench_embedder.py [--runs 7]

Prints throughput at batch 64 for ~30-word sentences (median of several runs), single-query
latency (median and p95 after warm-up), and the cold load time of a fresh process with and
without the cached .onnx graph. Goals on a 2-core machine: >= 250 sentences/s, <= 5 ms/query.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from episodic.embed.local import MiniLMEmbedder, find_model_dir, sha256_file

_VOCABULARY = (
    "the a an of to in for on with after before during because while deploy service "
    "checkout payment cache memory database migration rollback incident user prefers "
    "agent tool call error timeout retry latency queue worker cluster node pod restart "
    "review approved denied ticket release version config flag alert dashboard metric "
    "query index vector recall summary episode meeting thursday customer refund invoice "
    "schema column table lock deadlock replica primary failover network dns certificate"
)
_WORDS = _VOCABULARY.split()

_QUERIES = (
    "what did the user prefer?",
    "why did checkout fail last week",
    "payment refunds duplicated",
    "who approved the release",
    "database migration rollback",
    "flaky test in payments",
    "dns certificate expired",
    "meeting moved to thursday",
)

# Runs in a fresh interpreter so nothing is already imported or loaded.
_COLD = """
import json, sys, time
t0 = time.perf_counter()
from episodic.embed.local import MiniLMEmbedder
t1 = time.perf_counter()
emb = MiniLMEmbedder(cache_dir=sys.argv[1])
emb.embed_batch(["first query after start-up"])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "source": emb.graph_source}))
"""


def sentences(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        count = max(5, int(rng.gauss(words, 4)))
        text = " ".join(rng.choice(_WORDS) for _ in range(count))
        out.append(text[0].upper() + text[1:] + ".")
    return out


def cold_load(cache_dir: Path) -> dict[str, float | str]:
    proc = subprocess.run(
        [sys.executable, "-c", _COLD, str(cache_dir)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float | str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measurement")
    parser.add_argument("--queries", type=int, default=200, help="timed single queries")
    args = parser.parse_args()

    threads = min(os.cpu_count() or 1, 4)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cores: {os.cpu_count()}, onnxruntime threads: {threads}, load average: {load:.2f}")

    with tempfile.TemporaryDirectory(prefix="episodic-bench-") as tmp:
        cache = Path(tmp)
        built = [cold_load(cache / f"fresh{i}") for i in range(3)]
        cached = [cold_load(cache / "fresh0") for _ in range(3)]
        assert {b["source"] for b in built} == {"built, cached"}, built
        assert {c["source"] for c in cached} == {"cache"}, cached
        weights = find_model_dir() / "model.safetensors"
        t = time.perf_counter()
        sha256_file(weights)
        sha_s = time.perf_counter() - t

        def med(rows: list[dict[str, float | str]], key: str) -> float:
            return statistics.median(float(r[key]) for r in rows)

        print(
            f"cold load, no cached .onnx (build graph): {med(built, 'load_s'):.2f} s "
            f"(+ {med(built, 'import_s'):.2f} s imports), median of {len(built)} processes"
        )
        print(
            f"cold load, cached .onnx:                  {med(cached, 'load_s'):.2f} s "
            f"(+ {med(cached, 'import_s'):.2f} s imports; of which sha256 check {sha_s:.2f} s)"
        )

        emb = MiniLMEmbedder(cache_dir=cache / "fresh0")
        emb.load()

        batch = sentences(64, 30, seed=1)
        tokenizer = Tokenizer.from_file(str(find_model_dir() / "tokenizer.json"))
        tokenizer.no_padding()  # tokenizer.json pads to 128, which would hide the real length
        n_tokens = [len(tokenizer.encode(s).ids) for s in batch]
        emb.embed_batch(sentences(64, 30, seed=99))  # warm-up
        rates = []
        for run in range(args.runs):
            texts = sentences(64, 30, seed=run + 2)
            t = time.perf_counter()
            out = emb.embed_batch(texts)
            rates.append(len(texts) / (time.perf_counter() - t))
            assert out.shape == (64, 384)
        print(
            f"throughput, batch 64, ~{statistics.mean(len(s.split()) for s in batch):.0f} words "
            f"(~{statistics.mean(n_tokens):.0f} tokens): median {statistics.median(rates):.0f} "
            f"sentences/s (min {min(rates):.0f}, max {max(rates):.0f}, {args.runs} runs)"
        )

        for q in _QUERIES:  # warm-up
            emb.embed_batch([q])
        latencies = []
        for i in range(args.queries):
            q = _QUERIES[i % len(_QUERIES)]
            t = time.perf_counter()
            emb.embed_batch([q])
            latencies.append((time.perf_counter() - t) * 1000)
        lat = np.array(latencies)
        print(
            f"single query latency: median {np.median(lat):.2f} ms, "
            f"p95 {np.percentile(lat, 95):.2f} ms ({args.queries} queries)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
