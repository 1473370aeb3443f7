"""Cross-validated LoCoMo: conversations split into folds, constants tuned on the others.

The split is deterministic: conversation ids sorted, then dealt round-robin, so fold 1
holds the 1st, (K+1)-th, ... id. The database is built once; every policy (and every
swept variant of ``default``) answers every question once, and the folds are slices of
those answers by conversation. A swept constant is chosen per fold by the best mean
recall@10 over the *other* folds (each fold's mean counting once; the first value
listed wins a tie), and only then scored on the fold it was not chosen on.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from episodic.bench.locomo import (
    GRANULARITIES,
    Loader,
    QuestionRun,
    check_policies,
    prepare_locomo,
    run_policy,
    summarise,
)
from episodic.bench.metrics import mean_scores
from episodic.config import Settings
from episodic.errors import InvalidInput
from episodic.recall.policies import DEFAULT, RecallPolicy

# What ``folds_mean`` reports, and the metric a swept constant is chosen by.
FOLD_METRICS: tuple[str, ...] = ("recall@1", "recall@10", "ndcg@10")
TUNE_METRIC = "recall@10"
TUNED_POLICY = DEFAULT.name
# One sweepable name for the blend: the cosine weight, BM25 taking the rest, so the two
# always sum to one as in the preset.
BLEND = "blend"

Values = dict[str, float | str]


def tunable_names() -> list[str]:
    """What ``--tune`` accepts: ``blend``, every numeric field of the default policy and
    every field that names one of a set of methods (``blend_scale=raw,cdf``)."""
    numeric = [
        f.name
        for f in dataclasses.fields(DEFAULT)
        if isinstance(getattr(DEFAULT, f.name), int | float | StrEnum)
        and not isinstance(getattr(DEFAULT, f.name), bool)
    ]
    return [BLEND, *numeric]


def split_folds(conversation_ids: Sequence[str], k: int) -> list[list[str]]:
    """``k`` folds of the conversations: ids sorted, dealt round-robin."""
    ids = sorted(conversation_ids)
    if not 2 <= k <= len(ids):
        raise InvalidInput("folds", f"use 2 to {len(ids)} (the number of conversations), got {k}")
    return [ids[i::k] for i in range(k)]


def parse_tune(specs: Sequence[str]) -> dict[str, tuple[float | str, ...]]:
    """``["blend=0.2,0.3", "neighbours=1,2"]`` as {name: values}; errors name ``tune``."""
    known = tunable_names()
    sweep: dict[str, tuple[float | str, ...]] = {}
    for spec in specs:
        name, sep, listed = (part.strip() for part in spec.partition("="))
        if not sep or not name:
            raise InvalidInput("tune", f"expected NAME=v1,v2,... got {spec!r}")
        if name not in known:
            raise InvalidInput("tune", f"cannot tune {name!r}; use one of {', '.join(known)}")
        if name in sweep:
            raise InvalidInput("tune", f"{name} is swept twice")
        sweep[name] = _values(name, listed)
    return sweep


def _values(name: str, listed: str) -> tuple[float | str, ...]:
    current = None if name == BLEND else getattr(DEFAULT, name)
    if isinstance(current, StrEnum):
        return _methods(name, type(current), listed)
    whole = isinstance(current, int)
    values: list[float] = []
    for piece in (p.strip() for p in listed.split(",")):
        try:
            value: float = int(piece) if whole else float(piece)
        except ValueError:
            kind = "whole numbers" if whole else "numbers"
            raise InvalidInput("tune", f"{name} takes {kind}, got {piece!r}") from None
        if value < 0 or (name == BLEND and value > 1):
            raise InvalidInput("tune", f"{name}={piece} is out of range")
        values.append(value)
    if not values or len(set(values)) != len(values):
        raise InvalidInput("tune", f"{name}: list distinct values, e.g. {name}=1,2")
    return tuple(values)


def _methods(name: str, kind: type[StrEnum], listed: str) -> tuple[str, ...]:
    known = [member.value for member in kind]
    values = [p.strip() for p in listed.split(",")]
    for value in values:
        if value not in known:
            raise InvalidInput("tune", f"{name} is one of {', '.join(known)}, got {value!r}")
    if len(set(values)) != len(values):
        raise InvalidInput("tune", f"{name}: list distinct values, e.g. {name}={known[0]}")
    return tuple(values)


def combinations(sweep: Mapping[str, Sequence[float | str]]) -> list[Values]:
    """Every combination of the swept values, in the order they were listed."""
    names = list(sweep)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*sweep.values())]


def variant(policy: RecallPolicy, values: Mapping[str, float | str]) -> RecallPolicy:
    """``policy`` with the swept constants replaced; the preset itself is untouched."""
    changes: dict[str, Any] = {}
    for name, value in values.items():
        if name == BLEND:
            share = float(value)
            changes["blend_dense"], changes["blend_sparse"] = share, round(1.0 - share, 10)
        elif isinstance(value, str):
            changes[name] = type(getattr(policy, name))(value)
        else:
            changes[name] = value
    return dataclasses.replace(policy, **changes)


def choose(train_means: Sequence[float]) -> int:
    """The index of the best training mean; the first listed wins a tie."""
    return max(range(len(train_means)), key=lambda i: (train_means[i], -i))


def fold_means(folds: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per policy, the unweighted mean over folds of each reported fold's overall metric."""
    policies = list(folds[0]["policies"])
    return {
        name: {
            key: round(sum(f["policies"][name]["overall"][key] for f in folds) / len(folds), 4)
            for key in FOLD_METRICS
        }
        for name in policies
    }


def _fold_metric(runs: Sequence[QuestionRun], test: set[str]) -> float:
    return mean_scores([r.scores for r in runs if r.conversation in test])[TUNE_METRIC]


def run_folds(
    data_path: Path | str,
    policies: Sequence[str],
    granularity: str,
    settings: Settings,
    k: int,
    *,
    sweep: Mapping[str, Sequence[float | str]] | None = None,
    progress: Callable[[str], None] | None = None,
    ingest: str = "turn",
    db_url: str | None = None,
    load: Loader | None = None,
) -> dict[str, Any]:
    """What ``episodic bench locomo --folds K [--tune ...] --json`` prints (``bench beam``
    when ``load`` reads BEAM)."""
    if granularity not in GRANULARITIES:
        raise InvalidInput("granularity", f"use one of {'|'.join(GRANULARITIES)}")
    names = check_policies(policies)
    if sweep and TUNED_POLICY not in names:
        raise InvalidInput("tune", f"sweeps the {TUNED_POLICY} policy: add it to --policy")
    say = progress or (lambda _message: None)
    with prepare_locomo(
        data_path, settings, say=say, ingest=ingest, db_url=db_url, load=load
    ) as run:
        folds = split_folds([c.sample_id for c in run.conversations], k)
        # A fold whose conversations ask nothing scoreable would have no result to report.
        scored = {c.sample_id for c, _ in run.asked}
        for number, fold in enumerate(folds, start=1):
            if not scored & set(fold):
                raise InvalidInput("folds", f"fold {number} ({', '.join(fold)}) has no questions")
        answers: dict[str, list[QuestionRun]] = {}
        for name in names:
            if sweep and name == TUNED_POLICY:
                continue
            say(f"policy {name}")
            answers[name] = run_policy(run, name, granularity, ingest=ingest)
        combos = combinations(sweep) if sweep else []
        swept: list[list[QuestionRun]] = []
        for values in combos:
            say(f"policy {TUNED_POLICY} with {label(values)}")
            tuned = variant(DEFAULT, values)
            swept.append(run_policy(run, TUNED_POLICY, granularity, policy=tuned, ingest=ingest))
    per_fold = [[_fold_metric(runs, set(fold)) for fold in folds] for runs in swept]
    report: list[dict[str, Any]] = []
    for i, fold in enumerate(folds):
        test = set(fold)
        entry: dict[str, Any] = {"test": fold, "policies": {}}
        train: list[float] = []
        if combos:
            train = [sum(m for j, m in enumerate(row) if j != i) / (k - 1) for row in per_fold]
            best = choose(train)
            answers[TUNED_POLICY] = swept[best]
            entry["tuned"] = {
                "policy": TUNED_POLICY,
                "chosen": combos[best],
                "train": [
                    {"values": values, f"train_{TUNE_METRIC}": round(mean, 4)}
                    for values, mean in zip(combos, train, strict=True)
                ],
            }
        for name in names:
            entry["policies"][name] = summarise(
                [r for r in answers[name] if r.conversation in test]
            )
        report.append(entry)
    out: dict[str, Any] = {"folds": report, "folds_mean": fold_means(report)}
    if combos:
        # Every swept variant's result on every fold, so a choice can be made over several
        # data sets at once (``joint_folds``).
        out["sweep"] = [
            {
                "values": values,
                "folds": [summarise([r for r in runs if r.conversation in set(f)]) for f in folds],
            }
            for values, runs in zip(combos, swept, strict=True)
        ]
    return out


def label(values: Mapping[str, float | str]) -> str:
    """``blend=0.4, blend_scale=cdf``: swept values as the tables print them."""
    return ", ".join(
        f"{name}={value}" if isinstance(value, str) else f"{name}={value:g}"
        for name, value in values.items()
    )
