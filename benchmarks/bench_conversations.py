"""Conversations into episodes: segmentation + description + extraction throughput.

    .venv/bin/python benchmarks/bench_conversations.py [--conversations 10] [--repeat 3]

LoCoMo's sessions (read from ../shared/data, never copied) are ingested as chat messages,
one conversation per session, and `Episodic.segment(flush=True)` turns them into episodes
with the offline fallbacks (no LLM). The messages' own vectors are stored first, as the
indexer would have done (the embedder's speed is `bench_embedder.py`'s figure). What is
timed is everything segmentation does after that: reading pending messages and vectors,
the surprise channel, extractive titles and summaries, keyphrases, source-backed
extraction, dedupe by hash and by cosine (which embeds each new entry), learnings, and the
one transaction per episode.

Two figures: "warm" with entry embeddings served from the benchmark's embedding cache (the
steps themselves), and "cold" on the first run, paying the model for every new entry.
Median of --repeat fresh databases for warm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from episodic import Episodic, Settings
from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.locomo import load_locomo, message_event
from episodic.embed.cache import CachedEmbedder
from episodic.embed.local import MiniLMEmbedder
from episodic.store import open_store
from episodic.write.messages import spoken_content

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CACHE = Path(os.environ.get("EPISODIC_CACHE_DIR", Path.home() / ".cache" / "episodic"))


def one_run(conversations: list, embedder: CachedEmbedder) -> tuple[int, int, float, dict]:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        end = max(c.end for c in conversations)
        mem = Episodic(
            store=open_store(f"sqlite:///{tmp}/conv.db"),
            embedder=embedder,
            settings=Settings(),
            clock=lambda: end,
            llm=None,
        )
        events = [message_event(c, t) for c in conversations for t in c.turns]
        mem.ingest(events)
        texts = [spoken_content("user", e["summary"], e["payload"]["name"]) for e in events]
        vectors = embedder.embed_batch(texts)
        mem.store.put_vectors(
            embedder.model_id,
            embedder.dim,
            [(e["id"], v) for e, v in zip(events, vectors, strict=True)],
        )
        started = time.perf_counter()
        report = mem.segment(flush=True)
        elapsed = time.perf_counter() - started
        mem.close()
    return len(events), report.episodes, elapsed, report.to_json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    conversations = load_locomo(DATA)[: args.conversations]
    with SqliteEmbeddingCache(CACHE / "bench-conversations.db") as cache:
        embedder = CachedEmbedder(MiniLMEmbedder(), cache)
        cold_cache_entries = len(cache)
        messages, episodes, cold, report = one_run(conversations, embedder)
        sessions = sum(len({t.session for t in c.turns}) for c in conversations)
        print(
            f"{messages} messages in {sessions} conversations -> {episodes} episodes, "
            f"{report['entries']} entries, "
            f"{report['learnings']} learnings, {len(report['dropped'])} dropped"
        )
        label = "cold (entries embedded by the model)" if cold_cache_entries == 0 else "first run"
        print(f"{label}: {messages / cold:,.0f} messages/s ({cold:.2f}s)")
        warm = [one_run(conversations, embedder)[2] for _ in range(args.repeat)]
        rates = [messages / t for t in warm]
        print(
            f"warm (entry embeddings cached), median of {args.repeat}: "
            f"{statistics.median(rates):,.0f} messages/s "
            f"(runs: {', '.join(f'{r:,.0f}' for r in rates)})"
        )


if __name__ == "__main__":
    main()
