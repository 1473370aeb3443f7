"""The head of `default`'s ranking ordered again by a linear model: fitted and judged on
held-out folds of LoCoMo and BEAM together (``scoring/learned.py`` holds the model).

    EPISODIC_CACHE_DIR=~/.cache/episodic EPISODIC_EMBEDDER=local PYTHONPATH=src \\
        python benchmarks/bench_learned_rank.py run locomo ../shared/data/locomo10.json > loc.json
    ... run beam ../shared/data/beam > beam.json
    python benchmarks/bench_learned_rank.py fit locomo=loc.json beam=beam.json

``run`` (``--ingest turn|conversation``, as the bench ingests) asks every question once
under `default` with the learned step off and keeps what
the step reads: the ranking as the keep steps leave it (its first 50), each memory's
length, and what each leg said (cosine, BM25, ranks). ``fit`` first prints what a perfect
order could reach picking ten from the legs' first 10, 30 or 50 (recall@10), then deals
each set's conversations into five folds as ``episodic bench --folds 5`` does. For each fold it
chooses the step's settings (how deep the model reorders, how many first places it
leaves, whether long memories the ranking put first stay in the first ten) on the other
four folds: each setting is fitted on three of them and judged on the fourth, in turn, and
a setting counts only if neither set's mean recall@10 falls and no ability or category
falls more than a point there. It then fits the chosen setting on the four folds and
judges it on the fold held out. It prints the held-out figures beside the ranking's own,
per set, fold, ability and category, and last the model fitted on every question, as
``scoring/learned.py`` holds it (its figures are in-sample).

The fit: logistic regression (Newton's method, an L2 penalty on the standardised weights,
chosen with the rest), evidence memories weighted up to balance the others, every
question weighing the same within its set and the two sets the same.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from episodic.bench.folds import split_folds
from episodic.bench.metrics import recall_at_k
from episodic.scoring.learned import Legs, Model, feature_rows, learned_order

Matrix = npt.NDArray[np.float64]

HEAD_KEPT = 50  # what ``run`` keeps of each ranking
# How deep into each leg the ceiling looks (the best order picking from their first N).
CEILING_DEPTH = 50
CEILING_DEPTHS = (10, 30, 50)
HEADS = (20, 30)
PROTECTS = (0, 3)
LONG_KEEPS = (0, 8)
L2S = (30.0, 100.0, 300.0)
K = 10


class Setting(NamedTuple):
    head: int
    protect: int
    long_keep: int
    l2: float


# The keep steps' stages, latest first: the ranking the learned step reads.
PIPELINE_STAGES = ("keep:rule", "keep:legs", "keep:long")


def run(which: str, data: str, ingest: str = "turn") -> list[dict[str, Any]]:
    import dataclasses

    from episodic.bench.beam import load_beam
    from episodic.bench.locomo import CONVERSATION_RECALL_TYPES, prepare_locomo, turn_of
    from episodic.config import Settings
    from episodic.recall.policies import DEFAULT

    unlearned = dataclasses.replace(DEFAULT, learned_head=0)
    rows: list[dict[str, Any]] = []
    with prepare_locomo(
        data,
        Settings.from_env(),
        say=lambda line: print(line, file=sys.stderr),
        load=load_beam if which == "beam" else None,
        ingest=ingest,
    ) as prepared:
        mem = prepared.mem
        for conv, question in prepared.asked:
            if not question.evidence:
                continue
            prepared.clock.now = conv.end
            result = mem.recall(
                question.text,
                workspace=conv.workspace,
                k=K,
                mark=False,
                explain=True,
                policy=unlearned,
                types=CONVERSATION_RECALL_TYPES if ingest == "conversation" else None,
            )
            assert result.trace is not None
            stages = result.trace.stages
            name = next(s for s in PIPELINE_STAGES if s in stages)
            head = [row.memory_id for row in stages[name][:HEAD_KEPT]]
            dense = stages.get("leg:dense", [])
            sparse = stages.get("leg:sparse", [])
            legs_first = [r.memory_id for r in [*dense[:CEILING_DEPTH], *sparse[:CEILING_DEPTH]]]
            found = {*head, *legs_first}
            memories = {m.id: m for m in mem.store.get_memories(conv.workspace, list(found))}
            # What the bench scores: the turn a memory stands for (an entry its message's).
            slot = {i: turn_of(memories[i], conv) for i in found if i in memories}
            rows.append(
                {
                    "conversation": conv.sample_id,
                    "category": str(question.category),
                    "question": question.text,
                    "evidence": list(question.evidence),
                    "head": head,
                    "slot": slot,
                    "chars": {i: len(memories[i].content) for i in head if i in memories},
                    "kind": {i: memories[i].type for i in head if i in memories},
                    "cosine": {r.memory_id: r.score for r in dense},
                    "dense_rank": {r.memory_id: r.rank for r in dense},
                    "bm25": {r.memory_id: r.score for r in sparse},
                    "bm25_rank": {r.memory_id: r.rank for r in sparse},
                }
            )
    return rows


def _legs(row: dict[str, Any]) -> Legs:
    return Legs(row["cosine"], row["dense_rank"], row["bm25"], row["bm25_rank"])


def _kind_features(row: dict[str, Any], ids: Sequence[str]) -> list[list[float]]:
    kinds = row.get("kind", {})
    seen: set[str] = set()
    out = []
    for i in ids:
        slot = row["slot"].get(i)
        again = slot is not None and slot in seen
        if slot is not None:
            seen.add(slot)
        kind = kinds.get(i)
        out.append([float(kind == "entry"), float(kind == "episode"), float(again)])
    return out


def _prepared(
    row: dict[str, Any], head: int, kinds: bool = False
) -> tuple[list[str], Matrix, Matrix]:
    """The first ``head`` memories, their features and whether each is evidence. With
    ``kinds`` (``fit --kinds``), three more features the step in recall does not read (its
    rows hold no memory's kind): an entry, an episode, and a memory standing for a turn an
    earlier one in the head stands for too (one memory per source drops it later)."""
    ids = row["head"][:head]
    x = np.asarray(feature_rows(ids, row["chars"], _legs(row), row["question"]), np.float64)
    if kinds:
        x = np.hstack([x, np.asarray(_kind_features(row, ids), np.float64)])
    evidence = set(row["evidence"])
    y = np.asarray([1.0 if row["slot"].get(i) in evidence else 0.0 for i in ids])
    return ids, x, y


def newton_logistic(z: Matrix, y: Matrix, w: Matrix, penalty: Matrix) -> Matrix:
    """The coefficients of a logistic regression of ``y`` on ``z``, each row weighing
    ``w``, each coefficient penalised by ``penalty`` (L2), by Newton's method."""
    beta = np.zeros(z.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        gradient = z.T @ (w * (p - y)) + penalty * beta
        hessian = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-7:
            break
    return beta


def fit(xs: Sequence[Matrix], ys: Sequence[Matrix], weights: Sequence[float], l2: float) -> Model:
    """Weighted logistic regression over the rows of every question."""
    x = np.vstack(xs)
    y = np.concatenate(ys)
    w_row = np.concatenate(
        [np.full(len(q), w / max(len(q), 1)) for q, w in zip(ys, weights, strict=True)]
    )
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    # Every question the same within its set, the sets the same; then evidence weighted up
    # to balance the rest (on the mean weight: L2 reads against this scale).
    w_row = w_row / w_row.mean()
    positives = float(y.sum())
    w_row = w_row * np.where(y > 0, (len(y) - positives) / max(positives, 1.0), 1.0)
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    beta = newton_logistic(z, y, w_row, penalty)
    return Model(
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in beta[:-1]),
        float(beta[-1]),
    )


def _recall(slots: Sequence[str | None], evidence: Sequence[str]) -> float:
    """recall@10 of ``slots`` as the hits would show them: one memory per turn (a later
    one standing for a turn already shown gives its place up, as recall keeps one memory
    per source), memories of no turn keeping theirs."""
    shown = [slot or "" for n, slot in enumerate(slots) if slot is None or slot not in slots[:n]]
    return recall_at_k(shown, evidence, K)


def judge(
    model: Model | None, rows: Sequence[dict[str, Any]], setting: Setting, kinds: bool = False
) -> list[tuple[float, float]]:
    """Each row's recall@10 as the ranking has it and as the step orders it."""
    from episodic.scoring.learned import model_scores

    head, protect, long_keep, _ = setting
    out = []
    for row in rows:
        before = [row["slot"].get(i) for i in row["head"]]
        if model is None:
            out.append((_recall(before, row["evidence"]), _recall(before, row["evidence"])))
            continue
        ids, x, _ = _prepared(row, head, kinds)
        scores = model_scores(model, x.tolist())
        order = (
            learned_order(ids, scores, row["chars"], protect=protect, long_keep=long_keep)
            + row["head"][head:]
        )
        after = [row["slot"].get(i) for i in order]
        out.append((_recall(before, row["evidence"]), _recall(after, row["evidence"])))
    return out


def fit_on(
    sets: dict[str, list[dict[str, Any]]],
    convs: dict[str, set[str]],
    setting: Setting,
    kinds: bool = False,
) -> Model:
    xs, ys, weights = [], [], []
    for name, rows in sets.items():
        chosen = [r for r in rows if r["conversation"] in convs[name]]
        for row in chosen:
            _, x, y = _prepared(row, setting.head, kinds)
            xs.append(x)
            ys.append(y)
            weights.append(1.0 / len(chosen))
    return fit(xs, ys, weights, setting.l2)


def _groups(
    rows: Sequence[dict[str, Any]], scores: Sequence[tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row, s in zip(rows, scores, strict=True):
        by[row["category"]].append(s)
        by["all"].append(s)
    return {
        g: (float(np.mean([a for a, _ in v])), float(np.mean([b for _, b in v])))
        for g, v in by.items()
    }


def _passes(groups: dict[str, dict[str, tuple[float, float]]]) -> bool:
    for by in groups.values():
        if by["all"][1] < by["all"][0]:
            return False
        if any(after < before - 0.01 for before, after in by.values()):
            return False
    return True


def choose(
    sets: dict[str, list[dict[str, Any]]],
    folds: dict[str, list[list[str]]],
    train: list[int],
    kinds: bool = False,
) -> Setting | None:
    """The setting the folds ``train`` choose: the best mean gain over both sets, each
    fold of them judged by a model fitted on the others, among the settings that pass."""
    best: tuple[float, Setting | None] = (0.0, None)
    for values in itertools.product(HEADS, PROTECTS, LONG_KEEPS, L2S):
        setting = Setting(*values)
        scored: dict[str, list[tuple[float, float]]] = defaultdict(list)
        rows_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for held in train:
            others = [f for f in train if f != held]
            convs = {n: {c for f in others for c in folds[n][f]} for n in sets}
            model = fit_on(sets, convs, setting, kinds)
            for name, rows in sets.items():
                part = [r for r in rows if r["conversation"] in folds[name][held]]
                scored[name] += judge(model, part, setting, kinds)
                rows_of[name] += part
        groups = {n: _groups(rows_of[n], scored[n]) for n in sets}
        gain = float(np.mean([g["all"][1] - g["all"][0] for g in groups.values()]))
        if _passes(groups) and gain > best[0]:
            best = (gain, setting)
    return best[1]


def ceiling(rows: Sequence[dict[str, Any]]) -> None:
    """What recall@10 a perfect order could reach picking from the legs' first N."""
    by: dict[str, list[list[float]]] = defaultdict(list)
    for row in rows:
        wanted = set(row["evidence"])
        before = [row["slot"].get(i) for i in row["head"]]
        values = [_recall(before, row["evidence"])]
        for depth in CEILING_DEPTHS:
            pool = {
                row["slot"].get(i)
                for ranks in (row["dense_rank"], row["bm25_rank"])
                for i, rank in ranks.items()
                if rank <= depth
            }
            values.append(min(K, len(wanted & pool)) / len(wanted))
        by[row["category"]].append(values)
        by["all"].append(values)
    names = ["ranking", *(f"legs' first {d}" for d in CEILING_DEPTHS)]
    print(f"  {'':28s} " + " ".join(f"{n:>16s}" for n in names))
    for group, rows_of in sorted(by.items()):
        means = np.mean(np.asarray(rows_of), axis=0)
        print(f"  {group:28s} " + " ".join(f"{m:16.4f}" for m in means))


def fit_report(reports: dict[str, str], fixed: Setting | None = None, kinds: bool = False) -> None:
    sets = {name: json.loads(Path(path).read_text()) for name, path in reports.items()}
    print("the best order picking 10 from the legs' first N could reach, recall@10:")
    for name, rows in sets.items():
        print(name)
        ceiling(rows)
    folds = {
        name: split_folds(sorted({r["conversation"] for r in rows}), 5)
        for name, rows in sets.items()
    }
    held: dict[str, list[tuple[dict[str, Any], tuple[float, float]]]] = defaultdict(list)
    per_fold: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for k in range(5):
        train = [f for f in range(5) if f != k]
        setting = fixed or choose(sets, folds, train, kinds)
        print(f"fold {k + 1}: chose {setting} (None: off)")
        convs = {n: {c for f in train for c in folds[n][f]} for n in sets}
        model = fit_on(sets, convs, setting, kinds) if setting else None
        for name, rows in sets.items():
            part = [r for r in rows if r["conversation"] in folds[name][k]]
            scores = judge(model, part, setting or Setting(0, 0, 0, 0.0), kinds)
            held[name] += list(zip(part, scores, strict=True))
            per_fold[name].append(
                (float(np.mean([a for a, _ in scores])), float(np.mean([b for _, b in scores])))
            )
    print("\nheld out, recall@10: the ranking's own -> the learned step's")
    for name in sets:
        folds_mean = (
            np.mean([a for a, _ in per_fold[name]]),
            np.mean([b for _, b in per_fold[name]]),
        )
        print(
            f"{name}: {folds_mean[0]:.4f} -> {folds_mean[1]:.4f} (mean of folds); per fold "
            + " ".join(f"{b - a:+.4f}" for a, b in per_fold[name])
        )
        groups = _groups([r for r, _ in held[name]], [s for _, s in held[name]])
        for group, (a, b) in sorted(groups.items()):
            print(f"  {group:28s} {a:.4f} -> {b:.4f} ({b - a:+.4f})")
    print("\nevery question (IN-SAMPLE):")
    setting = fixed or choose(sets, folds, list(range(5)), kinds)
    print(f"with {setting}")
    if setting is None:
        return
    everyone = {n: {r["conversation"] for r in rows} for n, rows in sets.items()}
    model = fit_on(sets, everyone, setting, kinds)
    for name, rows in sets.items():
        groups = _groups(rows, judge(model, rows, setting, kinds))
        a, b = groups["all"]
        print(f"  {name}: {a:.4f} -> {b:.4f}")
    print("\nMODEL = Model(")
    for field in ("mean", "scale", "weights"):
        values = ", ".join(f"{v:.6g}" for v in getattr(model, field))
        print(f"    {field}=({values}),")
    print(f"    bias={model.bias:.6g},\n)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("set", choices=("locomo", "beam"))
    r.add_argument("data")
    r.add_argument("--ingest", choices=("turn", "conversation"), default="turn")
    f = sub.add_parser("fit")
    f.add_argument("reports", nargs="+", help="NAME=rows.json")
    f.add_argument("--kinds", action="store_true", help="add each memory's kind to the features")
    f.add_argument(
        "--fixed", help="HEAD,PROTECT,LONG_KEEP,L2 on every fold instead of each fold's choice"
    )
    args = parser.parse_args()
    if args.command == "run":
        json.dump(run(args.set, args.data, args.ingest), sys.stdout)
    else:
        fixed = None
        if args.fixed:
            head, protect, long_keep, l2 = args.fixed.split(",")
            fixed = Setting(int(head), int(protect), int(long_keep), float(l2))
        fit_report(dict(spec.split("=", 1) for spec in args.reports), fixed, args.kinds)


if __name__ == "__main__":
    main()
