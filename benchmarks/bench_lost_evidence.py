"""Which evidence a stronger length prior loses, and where each leg ranked it among its
long memories. Over a database `episodic bench beam --bench-db` built (turn ingest),
every question of the named abilities is asked under `default` and under a variant of it
(twenty hits, the first ten scored, as the bench does); for each evidence message in
`default`'s top ten and not in the variant's: its length, whether the length gate lifted
the query, and its place among the dense and the keyword leg's long memories (over
1,000 characters).

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_lost_evidence.py \\
        /tmp/beam-turn.db --abilities summarization,information_extraction --set length_share=1

A lost answer a leg ranks among its first few long ones is one each leg's long keep
(`long_keep`) could give back; one ranked deeper is not.
"""

from __future__ import annotations

import argparse
from collections import Counter

from episodic.bench.beam import load_beam
from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.folds import parse_tune, variant
from episodic.bench.harness import CACHE_FILE, BenchClock, precompute_vectors
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.recall.policies import DEFAULT
from episodic.service import Episodic
from episodic.store import open_store

LONG = 1000
DEPTH, SCORED = 20, 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="a BEAM database `episodic bench beam --bench-db` built")
    parser.add_argument("--data", default="../shared/data/beam")
    parser.add_argument("--abilities", default="summarization,information_extraction")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    changed = variant(DEFAULT, {k: v[0] for k, v in parse_tune(args.set).items()})
    wanted = set(args.abilities.split(","))
    conversations = load_beam(args.data)
    asked = [
        (c, q)
        for c in conversations
        for q in c.questions
        if q.evidence and q.text and str(q.category) in wanted
    ]
    settings = Settings.from_env(embedder="local")
    inner = make_embedder(settings)
    if inner is None:
        raise SystemExit("no embedder: the questions are asked with the local model")
    tally: Counter[str] = Counter()
    with SqliteEmbeddingCache(settings.cache_dir / CACHE_FILE) as cache:
        embedder = precompute_vectors(inner, cache, [q.text for _, q in asked], lambda _: None)
        clock = BenchClock()
        store = open_store(f"sqlite:///{args.db}")
        with Episodic(store=store, embedder=embedder, settings=settings, clock=clock) as mem:
            for conv, question in asked:
                clock.now = conv.end
                chars = {f"{conv.sample_id}/{t.dia_id}": len(t.text) for t in conv.turns}
                evidence = {f"{conv.sample_id}/{e}" for e in question.evidence}
                ws = conv.workspace
                before = mem.recall(question.text, workspace=ws, k=DEPTH, mark=False)
                after = mem.recall(
                    question.text, workspace=ws, k=DEPTH, mark=False, policy=changed, explain=True
                )
                top = [h.id for h in before.hits[:SCORED]]
                now = [h.id for h in after.hits[:SCORED]]
                assert after.trace is not None
                stages = after.trace.stages
                gated = "keep:long" in stages or "length:plain" in stages
                legs = [
                    [r.memory_id for r in stages.get(name, []) if chars.get(r.memory_id, 0) > LONG]
                    for name in ("leg:dense", "leg:sparse")
                ]
                for i in (i for i in top if i in evidence and i not in now):
                    places = [leg.index(i) + 1 if i in leg else None for leg in legs]
                    known = [p for p in places if p is not None]
                    best = min(known) if known else None
                    tally["lost, long" if chars.get(i, 0) > LONG else "lost, short"] += 1
                    tally[f"lost, a leg's long place {best if best and best <= 5 else '> 5'}"] += 1
                    print(
                        f"{question.category} gated={gated} lost {i} ({chars.get(i)} chars), "
                        f"place among long: dense {places[0]}, keyword {places[1]}"
                    )
                for i in (i for i in now if i in evidence and i not in top):
                    tally["gained, long" if chars.get(i, 0) > LONG else "gained, short"] += 1
    for name, count in sorted(tally.items()):
        print(f"{name}: {count}")


if __name__ == "__main__":
    main()
