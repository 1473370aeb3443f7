"""Ask a data set's questions again over a database `episodic bench` built and kept.

A recall-side change (fusion, priors, ordering) needs no new ingest: build the database
once with ``--bench-db sqlite:///PATH``, then ask again after each change. ``ask`` prints
the mean of five folds (conversations dealt as the bench deals them) and writes each
question's scores; ``compare`` sets two such files side by side, question by question:
the mean difference of recall@10 with a paired bootstrap interval, per category.

    EPISODIC_CACHE_DIR=~/.cache/episodic episodic bench beam --data ../shared/data/beam \\
        --ingest conversation --bench-db sqlite:////tmp/beam-conv.db
    cp /tmp/beam-conv.db /tmp/ask.db    # asking marks nothing, but keep the original whole
    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_reask.py \\
        ask beam ../shared/data/beam /tmp/ask.db conversation > conv.json
    python benchmarks/bench_reask.py compare turn.json conv.json

``ask`` also takes a variant of the policy (``--set NAME=VALUE``, any name ``--tune``
sweeps), what is recalled (``--types message``) and, for a run, the keyword leg's weight
of a memory's derived keys (``--keys-weight``, the SQLite store's ``keys_weight``).
``payload-index`` rewrites a copy's keyword index of payloads: their values only
(``--values-only``, no JSON key names) or without some fields (``--leave-out
session_date,session``), to see what words a payload lends a memory.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from episodic.bench.beam import load_beam
from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.folds import fold_means, parse_tune, split_folds, variant
from episodic.bench.harness import CACHE_FILE, BenchClock, precompute_vectors
from episodic.bench.locomo import Prepared, load_locomo, run_policy, summarise
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.recall.policies import get_policy
from episodic.service import Episodic
from episodic.store import open_store, store_exists
from episodic.store.sqlite import SqliteStore

FOLDS = 5
BOOTSTRAP = 2000


def ask(
    which: str,
    data: str,
    db: str,
    ingest: str,
    policy: str,
    changes: Sequence[str] = (),
    types: Sequence[str] | None = None,
    keys_weight: float | None = None,
) -> dict[str, Any]:
    """Every question with evidence asked under ``policy`` (with ``changes``, NAME=VALUE
    each) over the database at ``db`` (with its keyword index weighing derived keys at
    ``keys_weight``, when given)."""
    chosen = variant(get_policy(policy), {k: v[0] for k, v in parse_tune(changes).items()})
    conversations = load_beam(data) if which == "beam" else load_locomo(data)
    asked = [(c, q) for c in conversations for q in c.questions if q.evidence and q.text]
    settings = Settings.from_env(embedder="local")
    inner = make_embedder(settings)
    if inner is None:
        raise SystemExit("no embedder: the questions are asked with the local model")
    with SqliteEmbeddingCache(settings.cache_dir / CACHE_FILE) as cache:
        embedder = precompute_vectors(
            inner, cache, [q.text for _, q in asked], lambda line: print(line, file=sys.stderr)
        )
        clock = BenchClock()
        store = open_store(f"sqlite:///{db}")
        if keys_weight is not None and isinstance(store, SqliteStore):
            store.keys_weight = keys_weight
        with Episodic(store=store, embedder=embedder, settings=settings, clock=clock) as mem:
            run = Prepared(mem, clock, conversations, asked, inner.model_id)
            runs = run_policy(run, policy, "turn", policy=chosen, ingest=ingest, types=types)
    folds = split_folds([c.sample_id for c in conversations], FOLDS)
    report = [
        {"test": f, "policies": {policy: summarise([r for r in runs if r.conversation in f])}}
        for f in folds
    ]
    return {
        "policy": policy,
        "ingest": ingest,
        "folds_mean": fold_means(report)[policy],
        "questions": [
            {
                "conversation": r.conversation,
                "question": r.question.text,
                "category": str(r.question.category),
                "scores": dict(r.scores),
            }
            for r in runs
        ],
    }


def compare(before: dict[str, Any], after: dict[str, Any], key: str = "recall@10") -> None:
    """``after`` minus ``before``, question by question, overall and per category."""
    first = {(q["conversation"], q["question"]): q for q in before["questions"]}
    pairs = [
        (first[k], q)
        for q in after["questions"]
        if (k := (q["conversation"], q["question"])) in first
    ]
    diffs = [b["scores"][key] - a["scores"][key] for a, b in pairs]
    low, high = _interval(diffs)
    print(f"{len(pairs)} questions in both; {key} after - before: {_mean(diffs):+.4f}")
    print(f"paired bootstrap 95%: {low:+.4f} .. {high:+.4f}")
    for name, run in (("before", before), ("after", after)):
        means = " / ".join(
            f"{run['folds_mean'][k]:.4f}" for k in ("recall@10", "recall@1", "ndcg@10")
        )
        print(f"{name} ({run['ingest']}), mean of {FOLDS} folds R@10 / R@1 / NDCG@10: {means}")
    for category in sorted({a["category"] for a, _ in pairs}):
        some = [b["scores"][key] - a["scores"][key] for a, b in pairs if a["category"] == category]
        print(f"  {category}: {100 * _mean(some):+.1f} points ({len(some)} questions)")


def payload_index(db: str, values_only: bool, leave_out: Sequence[str]) -> int:
    """Rewrite the keyword index's payload column of the memories in ``db``: without the
    top-level fields ``leave_out``, and as its scalar values alone (no JSON key names)
    when ``values_only``. Returns how many memories were indexed again."""
    if not store_exists(f"sqlite:///{db}"):
        raise SystemExit(f"{db}: not an episodic SQLite database")
    # The index's tokenizer is one SQLite has built in: a plain connection rewrites it.
    with closing(sqlite3.connect(db, isolation_level=None)) as con:
        rows = con.execute("SELECT seq, content, keys, payload FROM memories").fetchall()
        indexed = []
        for seq, content, keys, payload in rows:
            fields = {k: v for k, v in json.loads(payload).items() if k not in leave_out}
            text = " ".join(_scalars(fields)) if values_only else json.dumps(fields)
            indexed.append((seq, content, keys, text))
        con.execute("BEGIN")
        con.execute("INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')")
        con.executemany(
            "INSERT INTO memories_fts (rowid, content, keys, payload) VALUES (?, ?, ?, ?)",
            indexed,
        )
        con.execute("COMMIT")
    return len(indexed)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [] if value is None else [str(value)]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _interval(diffs: Sequence[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean over resampled questions (seeded)."""
    if not diffs:
        return 0.0, 0.0
    pick = random.Random(1)
    means = sorted(_mean(pick.choices(diffs, k=len(diffs))) for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("ask")
    a.add_argument("which", choices=("locomo", "beam"))
    a.add_argument("data")
    a.add_argument("db", help="the SQLite file `episodic bench --bench-db` built")
    a.add_argument("ingest", choices=("turn", "conversation"), help="how it was built")
    a.add_argument("--policy", default="default")
    a.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    a.add_argument("--types", help="comma-separated memory types to recall")
    a.add_argument("--keys-weight", type=float, help="BM25 weight of derived keys")
    p = sub.add_parser("payload-index")
    p.add_argument("db", help="a copy of a kept bench database (rewritten in place)")
    p.add_argument("--values-only", action="store_true")
    p.add_argument("--leave-out", default="", help="comma-separated payload fields")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args()
    if args.command == "payload-index":
        out = [f for f in args.leave_out.split(",") if f]
        print(f"{payload_index(args.db, args.values_only, out)} memories indexed again")
    elif args.command == "ask":
        types = args.types.split(",") if args.types else None
        report = ask(
            args.which,
            args.data,
            args.db,
            args.ingest,
            args.policy,
            args.set,
            types,
            args.keys_weight,
        )
        print(json.dumps(report))
        print(f"mean of {FOLDS} folds: {report['folds_mean']}", file=sys.stderr)
    else:
        with open(args.before) as f, open(args.after) as g:
            compare(json.load(f), json.load(g))


if __name__ == "__main__":
    main()
