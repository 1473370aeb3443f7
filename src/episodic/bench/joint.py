"""One choice of a swept constant over several data sets at once.

``episodic bench locomo|beam --folds K --tune ... --json`` reports every swept variant's
result on every fold (``"sweep"``). Given those reports for several data sets, split into
the same number of folds, fold i of every set is held out together: the value chosen for
it is the one with the best training recall@10 averaged over the sets (each set's mean
over its other folds, every set counting once), and it is then scored on each set's fold
i. So a constant is kept only for what it does on all the sets, and no fold's choice saw
the conversations it is scored on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from episodic.bench.folds import TUNE_METRIC, choose, label
from episodic.errors import InvalidInput

Report = Mapping[str, Any]
# A change may cost a category (a LoCoMo category, a BEAM ability) at most this much
# held-out recall@10, and no set's overall mean anything.
CATEGORY_TOLERANCE = 0.01


def _sweep(name: str, report: Report) -> list[Mapping[str, Any]]:
    sweep = report.get("sweep")
    if not sweep:
        raise InvalidInput("reports", f"{name} has no sweep: run it with --folds K --tune ...")
    rows: list[Mapping[str, Any]] = sweep
    return rows


def joint_folds(reports: Mapping[str, Report], *, guarded: bool = False) -> dict[str, Any]:
    """The joint choice per fold and what it scores on each set's held-out folds.

    With ``guarded`` a fold chooses only among the variants that keep the keep rule on
    its training folds against the first variant swept (list today's value first): no
    set's training recall@10 lower, no category's more than ``CATEGORY_TOLERANCE`` lower
    (``verdict``'s rule, applied where the choice is made); the first variant is always
    among them. Without it the best training recall@10 wins whatever it costs a category.

    Returns ``{"folds": [{"chosen", "train": [{"values", "train_recall@10"}]}],
    "held_out": {set: {"overall", "by_category"}}, "fixed": {set: [{"values", "overall",
    "by_category"}]}}``: ``held_out`` is the mean over folds of each fold's chosen variant
    on that fold (every fold counting once; a category over the folds that ask it);
    ``fixed`` is each variant's mean over all folds, which no choice was made on: the
    sweep table, in-sample as a choice."""
    if len(reports) < 1:
        raise InvalidInput("reports", "give at least one report")
    sweeps = {name: _sweep(name, report) for name, report in reports.items()}
    first_name, first = next(iter(sweeps.items()))
    combos = [row["values"] for row in first]
    k = len(first[0]["folds"])
    for name, rows in sweeps.items():
        if [row["values"] for row in rows] != combos:
            raise InvalidInput(
                "reports", f"{name} swept other values than {first_name}: run the same --tune"
            )
        if any(len(row["folds"]) != k for row in rows):
            raise InvalidInput("reports", f"{name} has other folds than {first_name}")
    if k < 2:
        raise InvalidInput("reports", "need at least two folds")

    def fold_metric(rows: Sequence[Mapping[str, Any]], combo: int, fold: int) -> float:
        value: float = rows[combo]["folds"][fold]["overall"][TUNE_METRIC]
        return value

    folds: list[dict[str, Any]] = []
    chosen: list[int] = []
    for i in range(k):
        train = [
            sum(
                sum(fold_metric(rows, c, j) for j in range(k) if j != i) / (k - 1)
                for rows in sweeps.values()
            )
            / len(sweeps)
            for c in range(len(combos))
        ]
        if guarded:
            allowed = [c for c in range(len(combos)) if _keeps(sweeps, c, i, k)]
            best = max(allowed, key=lambda c: (train[c], -c))
        else:
            best = choose(train)
        chosen.append(best)
        folds.append(
            {
                "chosen": combos[best],
                "train": [
                    {"values": values, f"train_{TUNE_METRIC}": round(mean, 4)}
                    for values, mean in zip(combos, train, strict=True)
                ],
            }
        )
    held_out = {
        name: _mean_of([rows[chosen[i]]["folds"][i] for i in range(k)])
        for name, rows in sweeps.items()
    }
    fixed = {
        name: [{"values": row["values"], **_mean_of(row["folds"])} for row in rows]
        for name, rows in sweeps.items()
    }
    return {"folds": folds, "held_out": held_out, "fixed": fixed, "guarded": guarded}


def _keeps(
    sweeps: Mapping[str, Sequence[Mapping[str, Any]]], combo: int, held: int, k: int
) -> bool:
    """Whether variant ``combo`` keeps the keep rule against the first variant on the
    training folds of held-out fold ``held``, on every set."""
    if combo == 0:
        return True
    for rows in sweeps.values():
        train = [j for j in range(k) if j != held]
        before = _mean_of([rows[0]["folds"][j] for j in train])
        after = _mean_of([rows[combo]["folds"][j] for j in train])
        if after["overall"][TUNE_METRIC] < before["overall"][TUNE_METRIC] - 1e-9:
            return False
        for category, scores in after["by_category"].items():
            old = before["by_category"].get(category)
            if (
                old is not None
                and old[TUNE_METRIC] - scores[TUNE_METRIC] > CATEGORY_TOLERANCE + 1e-9
            ):
                return False
    return True


def _mean_of(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Overall metrics averaged over the summaries; each category over those that ask it."""
    overall = {
        key: round(sum(s["overall"][key] for s in summaries) / len(summaries), 4)
        for key in summaries[0]["overall"]
    }
    categories: dict[str, list[Mapping[str, float]]] = {}
    for s in summaries:
        for category, scores in s["by_category"].items():
            categories.setdefault(category, []).append(scores)
    by_category = {
        category: {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}
        for category, rows in categories.items()
    }
    return {"overall": overall, "by_category": by_category}


def verdict(joint: Mapping[str, Any], metric: str = TUNE_METRIC) -> list[str]:
    """Why the joint choice may not replace the first variant swept (list today's value
    first): each set whose held-out mean falls below that variant's mean over the same
    folds, and each category that falls by more than ``CATEGORY_TOLERANCE``. Empty: kept.
    """
    reasons: list[str] = []
    for name, result in joint["held_out"].items():
        before = joint["fixed"][name][0]
        drop = before["overall"][metric] - result["overall"][metric]
        if drop > 1e-9:
            reasons.append(f"{name}: {metric} {drop:.4f} below {label(before['values'])}")
        for category, scores in result["by_category"].items():
            old = before["by_category"].get(category)
            if old is not None and old[metric] - scores[metric] > CATEGORY_TOLERANCE + 1e-9:
                fall = old[metric] - scores[metric]
                reasons.append(f"{name} {category}: {metric} {fall:.4f} below")
    return reasons


def joint_markdown(joint: Mapping[str, Any], metric: str = TUNE_METRIC) -> str:
    """The joint choice as Markdown tables: the values each fold chose, the held-out
    means per set and category, and the sweep (each variant fixed, in-sample)."""
    lines = []
    if joint.get("guarded"):
        lines += [
            "(guarded: each fold chose among the variants that keep the keep rule on its "
            "training folds)",
            "",
        ]
    lines += ["| fold | chosen |", "|---|---|"]
    lines += [f"| {i} | {label(f['chosen'])} |" for i, f in enumerate(joint["folds"], start=1)]
    lines.append("")
    for name, result in joint["held_out"].items():
        cats = ", ".join(f"{c} {v[metric]:.3f}" for c, v in result["by_category"].items())
        lines.append(f"held-out {name}: {metric} {result['overall'][metric]:.4f} ({cats})")
    reasons = verdict(joint, metric)
    first = joint["fixed"][next(iter(joint["fixed"]))][0]["values"]
    if all(f["chosen"] == first for f in joint["folds"]):
        said = "every fold chose it: unchanged"
    elif reasons:
        said = "not kept: " + "; ".join(reasons)
    else:
        said = "kept (no set lower, no category more than a point lower)"
    lines += ["", f"against {label(first)}: {said}", ""]
    sets = list(joint["fixed"])
    lines.append(
        "| values, each on every fold (choosing here would be in-sample) | "
        + " | ".join(sets)
        + " |"
    )
    lines.append("|---|" + "---|" * len(sets))
    for i, row in enumerate(joint["fixed"][sets[0]]):
        cells = [f"{joint['fixed'][s][i]['overall'][metric]:.4f}" for s in sets]
        lines.append(f"| {label(row['values'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
