"""What the BEAM re-ask scripts share (`bench_lost_evidence.py`, `bench_dense_lost.py`):
their arguments, and the questions of the named abilities asked over a database
`episodic bench beam --bench-db` built, with the local model and the bench's clock."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from episodic.bench.beam import load_beam
from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.folds import parse_tune, variant
from episodic.bench.harness import CACHE_FILE, BenchClock, precompute_vectors
from episodic.bench.locomo import Conversation, Question
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.recall.policies import DEFAULT, RecallPolicy
from episodic.service import Episodic
from episodic.store import open_store

# A question asks for twenty hits and the first ten are scored, as the bench does.
DEPTH, SCORED = 20, 10


def arguments(description: str, abilities: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("db", help="a BEAM database `episodic bench beam --bench-db` built")
    parser.add_argument("--data", default="../shared/data/beam")
    parser.add_argument("--abilities", default=abilities)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    return parser


@dataclass(frozen=True, slots=True)
class Asked:
    """One question, asked at the end of its conversation: the memory ids of its evidence
    and each message's length, by memory id."""

    conversation: Conversation
    question: Question
    evidence: set[str]
    chars: dict[str, int]


@dataclass(frozen=True, slots=True)
class Asking:
    mem: Episodic
    clock: BenchClock
    asked: list[tuple[Conversation, Question]]
    changed: RecallPolicy  # `default` with the --set values

    def each(self) -> Iterator[Asked]:
        """Each question, the clock set to the end of its conversation."""
        for conv, question in self.asked:
            self.clock.now = conv.end
            yield Asked(
                conv,
                question,
                {f"{conv.sample_id}/{e}" for e in question.evidence},
                {f"{conv.sample_id}/{t.dia_id}": len(t.text) for t in conv.turns},
            )


@contextmanager
def asking(args: argparse.Namespace) -> Iterator[Asking]:
    """The questions of ``args.abilities`` with evidence, and a memory over ``args.db``
    whose embedder has their vectors ready."""
    changed = variant(DEFAULT, {k: v[0] for k, v in parse_tune(args.set).items()})
    wanted = set(args.abilities.split(","))
    asked = [
        (c, q)
        for c in load_beam(args.data)
        for q in c.questions
        if q.evidence and q.text and str(q.category) in wanted
    ]
    settings = Settings.from_env(embedder="local")
    inner = make_embedder(settings)
    if inner is None:
        raise SystemExit("no embedder: the questions are asked with the local model")
    with SqliteEmbeddingCache(settings.cache_dir / CACHE_FILE) as cache:
        embedder = precompute_vectors(inner, cache, [q.text for _, q in asked], lambda _: None)
        clock = BenchClock()
        store = open_store(f"sqlite:///{args.db}")
        with Episodic(store=store, embedder=embedder, settings=settings, clock=clock) as mem:
            yield Asking(mem, clock, asked, changed)
