"""Two recall methods tried on LoCoMo as prototypes, outside the library: the store's legs
are wrapped for the run, so nothing here is reachable from the product.

    .venv/bin/python benchmarks/bench_recall_prototypes.py --method windows
    .venv/bin/python benchmarks/bench_recall_prototypes.py --method rocchio

- windows: every pair of adjacent turns of a session is also a unit, for BM25 (an FTS5
  table of its own) and for the dense leg (the pair's text embedded); a turn scores the
  best of itself and its windows (x ``alpha``).
- rocchio: the dense query moves towards the mean vector of the top ``m`` turns of BM25
  (or of the dense leg itself): q' = q + beta x mean, renormalised.

Each variant is the `default` policy on top of the wrapped legs; the report is the mean
over five held-out folds (conversations dealt as `bench locomo --folds 5` deals them) of
recall@1, recall@10 and NDCG@10, and the recall@10 change per category. No constant is
chosen here: the variants are listed up front and all reported.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from episodic.bench.folds import split_folds
from episodic.bench.locomo import QuestionRun, prepare_locomo, run_policy
from episodic.bench.metrics import mean_scores
from episodic.config import Settings
from episodic.model import Candidate, ScopeFilter
from episodic.scoring.fts import fts_terms

DATA = "../shared/data/locomo10.json"
# (name, sparse alpha, dense alpha) and (name, source, beta, m)
WINDOWS = [
    ("windows 1.0/1.0", 1.0, 1.0),
    ("windows bm25 only", 1.0, 0.0),
    ("windows dense only", 0.0, 1.0),
    ("windows 0.8/0.8", 0.8, 0.8),
]
ROCCHIO = [
    ("rocchio dense top-3 0.5", "dense", 0.5, 3),
    ("rocchio bm25 top-1 0.5", "sparse", 0.5, 1),
    ("rocchio bm25 top-3 0.5", "sparse", 0.5, 3),
    ("rocchio bm25 top-3 1.0", "sparse", 1.0, 3),
]


def _in(run: QuestionRun, cat: int | None) -> bool:
    return cat is None or run.question.category == cat


def report(folds: Sequence[Sequence[str]], results: dict[str, list[QuestionRun]]) -> None:
    def mean(runs: list[QuestionRun], key: str, cat: int | None = None) -> float:
        per = [
            mean_scores([r.scores for r in runs if r.conversation in f and _in(r, cat)])[key]
            for f in folds
        ]
        return sum(per) / len(per)

    base = results["default"]
    print(f"{'variant':28s} R@1    R@10   NDCG@10 | R@10 change by category 1-5")
    for name, runs in results.items():
        r1, r10, nd = (mean(runs, k) for k in ("recall@1", "recall@10", "ndcg@10"))
        cats = " ".join(
            f"{mean(runs, 'recall@10', c) - mean(base, 'recall@10', c):+.3f}" for c in range(1, 6)
        )
        print(f"{name:28s} {r1:.4f} {r10:.4f} {nd:.4f}  | {cats}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", choices=("windows", "rocchio"), required=True)
    parser.add_argument("--data", default=DATA)
    args = parser.parse_args()
    settings = Settings.from_env()
    with prepare_locomo(args.data, settings, say=print) as run:
        store: Any = run.mem._ctx.store
        embedder: Any = run.mem._models.embedder
        vectors: dict[str, np.ndarray] = {
            t: np.asarray(v, np.float32) for t, v in embedder.vectors.items()
        }
        text_of = {v.tobytes(): t for t, v in vectors.items()}
        side: dict[
            str, tuple[list[str], np.ndarray, list[tuple[str, str]], np.ndarray, sqlite3.Connection]
        ] = {}
        for conv in run.conversations:
            ids = [f"{conv.sample_id}/{t.dia_id}" for t in conv.turns]
            texts = [t.summary for t in conv.turns]
            pairs = [
                j for j in range(len(ids) - 1) if conv.turns[j].session == conv.turns[j + 1].session
            ]
            wtexts = [texts[j] + "\n" + texts[j + 1] for j in pairs]
            db = sqlite3.connect(":memory:")
            db.execute(
                "CREATE VIRTUAL TABLE w USING fts5(c, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
            db.executemany("INSERT INTO w(rowid, c) VALUES (?, ?)", list(enumerate(wtexts)))
            wvec = (
                np.asarray(embedder.embed_batch(wtexts))
                if args.method == "windows"
                else np.zeros((0, 1))
            )
            turns = np.stack([vectors[t] for t in texts])
            side[conv.workspace] = (ids, turns, [(ids[j], ids[j + 1]) for j in pairs], wvec, db)
        sparse = store.search_sparse
        state: dict[str, Any] = {}

        def ranked(scores: dict[str, float], limit: int) -> list[Candidate]:
            top = sorted(scores.items(), key=lambda p: -p[1])[:limit]
            return [Candidate(i, s, r) for r, (i, s) in enumerate(top, 1)]

        def windows_sparse(flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
            found = sparse(flt, text, limit)
            _, _, pairs, _, db = side[flt.workspace_id]
            terms = fts_terms(text, drop_stopwords=True)
            if state["sa"] <= 0 or not terms:
                return found
            scores = {c.memory_id: c.score for c in found}
            sql = "SELECT rowid, -bm25(w) FROM w WHERE w MATCH ? ORDER BY bm25(w) LIMIT ?"
            for row, s in db.execute(sql, (" OR ".join(terms), limit)):
                for m in pairs[row]:
                    scores[m] = max(scores.get(m, 0.0), state["sa"] * s)
            return ranked(scores, limit)

        def windows_dense(flt: ScopeFilter, q: Any, limit: int) -> list[Candidate]:
            ids, tv, pairs, wv, _ = side[flt.workspace_id]
            q = np.asarray(q, np.float32)
            scores = dict(zip(ids, (tv @ q).tolist(), strict=True))
            if state["da"] > 0:
                for (a, b), c in zip(pairs, (wv @ q).tolist(), strict=True):
                    for m in (a, b):
                        scores[m] = max(scores[m], state["da"] * c)
            return ranked(scores, limit)

        def rocchio_dense(flt: ScopeFilter, q: Any, limit: int) -> list[Candidate]:
            ids, tv, _, _, _ = side[flt.workspace_id]
            q = np.asarray(q, np.float32)
            if state["source"] == "dense":
                top = list(np.argsort(-(tv @ q))[: state["m"]])
            else:
                index = {i: n for n, i in enumerate(ids)}
                text = text_of.get(q.tobytes())
                top = [index[c.memory_id] for c in sparse(flt, text, state["m"])] if text else []
            if top:
                q = q + state["beta"] * tv[top].mean(axis=0)
                q = q / np.linalg.norm(q)
            return ranked(dict(zip(ids, (tv @ q).tolist(), strict=True)), limit)

        folds = split_folds([c.sample_id for c in run.conversations], 5)
        results = {"default": run_policy(run, "default", "turn")}
        variants: list[tuple[str, Callable[[], None]]] = []
        if args.method == "windows":
            store.search_sparse, store.search_dense = windows_sparse, windows_dense
            variants = [
                (n, lambda sa=sa, da=da: state.update(sa=sa, da=da)) for n, sa, da in WINDOWS
            ]
        else:
            store.search_dense = rocchio_dense
            variants = [
                (n, lambda s=s, b=b, m=m: state.update(source=s, beta=b, m=m))
                for n, s, b, m in ROCCHIO
            ]
        for name, setup in variants:
            setup()
            print(f"variant {name}")
            results[name] = run_policy(run, "default", "turn")
    report(folds, results)


if __name__ == "__main__":
    main()
