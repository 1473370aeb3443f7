"""Forms of the learned order of `default`'s head, each judged on held-out folds of the four
sets (LoCoMo and BEAM, turn and conversation ingest) with the issue's guard.

    python benchmarks/bench_learned_forms.py locomo=loc.json beam=beam.json \\
        locomo-conv=loc-conv.json beam-conv=beam-conv.json [--form NAME ...] [--counts SET]

The rows are ``bench_learned_rank.py run``'s (``--ingest conversation`` for the sets named
``*-conv``). Every form reorders the first 30 after the keeps (L2 100; a long memory the
ranking had among its first 8 stays among the first 10) with a model fitted on four folds
and judged on the fifth, through ``bench_learned_rank``'s fit, order and recall@10. The
forms differ in what the model is fitted on and how, what it reads, and how its scores
become an order (``FORMS``). For each form it prints R@10 before and after on every set
(all held-out questions pooled), the change per fold, and every ability or category that
falls more than a point. ``--counts SET`` also prints, per ability of SET, how many
questions the form moves up and down.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bench_learned_rank import (
    Matrix,
    Setting,
    _legs,
    _prepared,
    _recall,
    fit,
    newton_logistic,
)
from episodic.bench.folds import split_folds
from episodic.scoring.learned import Model, feature_rows, learned_order, model_scores

SETTING = Setting(head=30, protect=0, long_keep=8, l2=100.0)
GUARD = 0.01  # no ability or category lower by more than a point
RRF_K = 60
BAGS = 7

Row = dict[str, Any]


class Form(NamedTuple):
    name: str
    kinds: bool = True  # each memory's kind among the features
    turn_only: bool = False  # fitted on the turn-ingest sets only
    pairwise: bool = False  # evidence against each other memory of its question
    weighting: str = "question"  # "question", "evidence" (sqrt of its count), "category"
    bags: int = 0  # models on bootstrap samples of the conversations, averaged
    view: str = "head"  # "head", "one per turn" (later ones dropped), "per turn" (merged)
    order: str = "model"  # "model", "place" (minus log place), "rrf", "entries", "swap"
    margin: float = 0.0  # "swap": how far above the weakest of the ten an outsider must be


FORMS = (
    Form("fitted on turn ingest (the model in the tree)", kinds=False, turn_only=True),
    Form("fitted on all four sets, each memory's kind a feature"),
    Form("the same, pairwise", pairwise=True),
    Form("the model's score minus log(1 + place)", order="place"),
    Form("rank fusion of the model's order and the ranking's (half weight)", order="rrf"),
    Form("questions weighed by the square root of their evidence count", weighting="evidence"),
    Form("every ability and category weighing the same", weighting="category"),
    Form(f"{BAGS} models on bootstrap samples of the conversations, averaged", bags=BAGS),
    Form("the head read after one memory per turn", view="one per turn"),
    Form(
        "entries keep their places, the rest ordered (pairwise, turn ingest)",
        kinds=False,
        turn_only=True,
        pairwise=True,
        order="entries",
    ),
    Form(
        "one candidate per turn, with the best features of its memories",
        kinds=False,
        view="per turn",
    ),
    Form(
        "the first ten a set, an outsider swapped in 1.5 above the weakest",
        kinds=False,
        turn_only=True,
        order="swap",
        margin=1.5,
    ),
    Form(
        "the first ten a set, an outsider swapped in 2 above the weakest",
        kinds=False,
        turn_only=True,
        order="swap",
        margin=2.0,
    ),
)


class View(NamedTuple):
    """What a form's model reads of one row: the candidates it orders (memory ids, or turns
    for "per turn"), their features, which are evidence, and how to read them as turns."""

    ids: list[str]
    x: Matrix
    y: Matrix
    slot: Callable[[str], str | None]
    chars: dict[str, int]
    rest: list[str]  # below the head, in the ranking's order


def _one_per_turn(row: Row) -> Row:
    seen: set[str] = set()
    head = []
    for i in row["head"]:
        slot = row["slot"].get(i)
        if slot is not None and slot in seen:
            continue
        if slot is not None:
            seen.add(slot)
        head.append(i)
    return {**row, "head": head}


# Each row's view, by what it depends on: every fold's fit and judgement reads it again.
_VIEWS: dict[tuple[int, str, bool], View] = {}


def view_of(row: Row, form: Form) -> View:
    key = (id(row), form.view, form.kinds)
    if key not in _VIEWS:
        _VIEWS[key] = _view(row, form)
    return _VIEWS[key]


def _view(row: Row, form: Form) -> View:
    head = SETTING.head
    if form.view == "per turn":
        order: list[str] = []
        members: dict[str, list[str]] = defaultdict(list)
        for i in row["head"]:
            key = row["slot"].get(i) or f"#{i}"
            if key not in members:
                order.append(key)
            members[key].append(i)
        ids = [i for key in order[:head] for i in members[key]]
        x_all = np.asarray(feature_rows(ids, row["chars"], _legs(row), row["question"]))
        at = {i: n for n, i in enumerate(ids)}
        x = np.vstack([x_all[[at[i] for i in members[k]]].max(axis=0) for k in order[:head]])
        evidence = set(row["evidence"])
        y = np.asarray([1.0 if k in evidence else 0.0 for k in order[:head]])
        chars = {k: max(row["chars"].get(i, 0) for i in members[k]) for k in order}
        return View(
            order[:head], x, y, lambda k: None if k.startswith("#") else k, chars, order[head:]
        )
    seen = _one_per_turn(row) if form.view == "one per turn" else row
    ids, x, y = _prepared(seen, head, form.kinds)
    return View(ids, x, y, row["slot"].get, row["chars"], seen["head"][head:])


def _weights(rows: Sequence[Row], views: Sequence[View], form: Form) -> list[float]:
    per_category: dict[str, int] = defaultdict(int)
    for row in rows:
        per_category[row["category"]] += 1
    out = []
    for row, view in zip(rows, views, strict=True):
        if form.weighting == "category":
            out.append(1.0 / (len(per_category) * per_category[row["category"]]))
        elif form.weighting == "evidence":
            out.append(math.sqrt(max(1.0, float(view.y.sum()))) / len(rows))
        else:
            out.append(1.0 / len(rows))
    return out


def fit_pairwise(
    xs: Sequence[Matrix], ys: Sequence[Matrix], weights: Sequence[float], l2: float
) -> Model:
    """Logistic regression on feature differences: each evidence memory against each
    other memory of its question, every question weighing ``weights`` in all."""
    everything = np.vstack(xs)
    mean, scale = everything.mean(axis=0), everything.std(axis=0)
    scale[scale < 1e-9] = 1.0
    diffs, w = [], []
    for x, y, weight in zip(xs, ys, weights, strict=True):
        pos, neg = x[y > 0], x[y == 0]
        if len(pos) == 0 or len(neg) == 0:
            continue
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, x.shape[1]) / scale
        diffs.append(d)
        w.append(np.full(len(d), weight / len(d)))
    z, wz = np.vstack(diffs), np.concatenate(w)
    # Every pair says its evidence memory ranks first: y is 1 throughout, with no bias.
    beta = newton_logistic(z, np.ones(len(z)), wz / wz.mean(), np.full(z.shape[1], l2))
    return Model(
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in beta),
        0.0,
    )


def fit_form(sets: dict[str, list[Row]], convs: dict[str, set[str]], form: Form) -> Model:
    xs, ys, weights = [], [], []
    for name, rows in sets.items():
        if form.turn_only and name.endswith("-conv"):
            continue
        chosen = [r for r in rows if r["conversation"] in convs[name]]
        views = [view_of(r, form) for r in chosen]
        xs += [v.x for v in views]
        ys += [v.y for v in views]
        weights += _weights(chosen, views, form)
    if form.pairwise:
        return fit_pairwise(xs, ys, weights, SETTING.l2)
    return fit(xs, ys, weights, SETTING.l2)


def _swap(row: Row, view: View, scores: dict[str, float], margin: float) -> list[str]:
    """The ranking's first ten (one per turn) a set: an outsider of the head takes the
    place of the weakest (by the model) only when it scores ``margin`` above it; a long
    memory of the first ``long_keep`` is never swapped out."""
    top: list[str] = []
    seen: set[str] = set()
    for i in view.ids:
        slot = view.slot(i)
        if len(top) < 10 and (slot is None or slot not in seen):
            top.append(i)
        if slot is not None:
            seen.add(slot)
    longs = {i for i in view.ids[: SETTING.long_keep] if view.chars.get(i, 0) > 1000}
    weakest = sorted((i for i in top if i not in longs), key=lambda i: scores[i])
    chosen = set(top)
    for outsider in sorted((i for i in view.ids if i not in chosen), key=lambda i: -scores[i]):
        if not weakest or scores[outsider] <= scores[weakest[0]] + margin:
            break
        chosen.discard(weakest.pop(0))
        chosen.add(outsider)
    inside = sorted(chosen, key=lambda i: -scores[i])
    return inside + sorted((i for i in view.ids if i not in chosen), key=lambda i: -scores[i])


def order_of(row: Row, view: View, models: Sequence[Model], form: Form) -> list[str]:
    raw = np.mean([model_scores(m, view.x.tolist()) for m in models], axis=0)
    places = np.arange(len(view.ids))
    if form.order == "place":
        raw = raw - np.log1p(places)
    elif form.order == "rrf":
        rank = np.empty(len(raw))
        rank[np.argsort(-raw)] = places
        raw = 1.0 / (RRF_K + rank) + 0.5 / (RRF_K + places)
    scores = dict(zip(view.ids, (float(v) for v in raw), strict=True))
    if form.order == "swap":
        return _swap(row, view, scores, form.margin) + view.rest
    if form.order == "entries":
        kinds = row.get("kind", {})
        free = [n for n, i in enumerate(view.ids) if kinds.get(i) != "entry"]
        moved = iter(
            learned_order(
                [view.ids[n] for n in free],
                [scores[view.ids[n]] for n in free],
                view.chars,
                protect=0,
                long_keep=SETTING.long_keep,
            )
        )
        out = list(view.ids)
        for n in free:
            out[n] = next(moved)
        return out + view.rest
    ordered = learned_order(
        view.ids,
        [scores[i] for i in view.ids],
        view.chars,
        protect=0,
        long_keep=SETTING.long_keep,
    )
    return ordered + view.rest


def judge_form(
    sets: dict[str, list[Row]], folds: dict[str, list[list[str]]], form: Form
) -> dict[str, list[tuple[str, int, float, float]]]:
    """Per set, each held-out question's (category, fold, R@10 before, R@10 after)."""
    out: dict[str, list[tuple[str, int, float, float]]] = defaultdict(list)
    for k in range(5):
        train = [f for f in range(5) if f != k]
        convs = {n: {c for f in train for c in folds[n][f]} for n in sets}
        if form.bags:
            rng = np.random.default_rng(k)
            models = [
                fit_form(
                    sets,
                    {n: set(rng.choice(sorted(c), size=len(c))) for n, c in convs.items()},
                    form,
                )
                for _ in range(form.bags)
            ]
        else:
            models = [fit_form(sets, convs, form)]
        for name, rows in sets.items():
            for row in rows:
                if row["conversation"] not in folds[name][k]:
                    continue
                view = view_of(row, form)
                after = [view.slot(i) for i in order_of(row, view, models, form)]
                before = [row["slot"].get(i) for i in row["head"]]
                out[name].append(
                    (
                        row["category"],
                        k,
                        _recall(before, row["evidence"]),
                        _recall(after, row["evidence"]),
                    )
                )
    return out


def report(form: Form, judged: dict[str, list[tuple[str, int, float, float]]]) -> None:
    print(f"\n{form.name}")
    falls = []
    for name, rows in judged.items():
        before = np.mean([b for _, _, b, _ in rows])
        after = np.mean([a for _, _, _, a in rows])
        per_fold = [np.mean([a - b for _, f, b, a in rows if f == k]) for k in range(5)]
        print(
            f"  {name:12s} {before:.4f} -> {after:.4f}  per fold "
            + " ".join(f"{v:+.4f}" for v in per_fold)
        )
        by: dict[str, list[float]] = defaultdict(list)
        for category, _, b, a in rows:
            by[category].append(a - b)
        falls += [
            f"{name} {c} {np.mean(v) * 100:+.1f}"
            for c, v in sorted(by.items())
            if np.mean(v) < -GUARD
        ]
    print("  more than a point lower: " + ("; ".join(falls) or "none"))


def counts(judged: list[tuple[str, int, float, float]]) -> None:
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for category, _, b, a in judged:
        c = by[category]
        c[0] += a > b + 1e-9
        c[1] += a < b - 1e-9
        c[2] += 1
    for category, (up, down, n) in sorted(by.items()):
        print(f"    {category:28s} up {up:3d}  down {down:3d}  of {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", help="NAME=rows.json (NAME-conv: conversation)")
    parser.add_argument("--form", action="append", help="a form's name, or the start of it")
    parser.add_argument("--counts", help="a set whose questions moved up and down to count")
    args = parser.parse_args()
    sets = {
        name: json.loads(Path(path).read_text())
        for name, path in (spec.split("=", 1) for spec in args.reports)
    }
    folds = {
        n: split_folds(sorted({r["conversation"] for r in rows}), 5) for n, rows in sets.items()
    }
    forms = [f for f in FORMS if not args.form or any(f.name.startswith(p) for p in args.form)]
    for form in forms:
        judged = judge_form(sets, folds, form)
        report(form, judged)
        if args.counts:
            print(f"  questions moved, {args.counts}:")
            counts(judged[args.counts])


if __name__ == "__main__":
    main()
