"""Update stories and look-alike controls through remember, index and recall with the
configured embedder, in two splits reported apart:

- ``tests/fixtures/update_stories.json``, the **tuning** split: what the rules and the
  soft signal's threshold were looked at and chosen on;
- ``tests/fixtures/update_stories_heldout.json``, the **held-out** split: written in other
  wording before any tuning, never used to choose anything.

Per split: how often the current statement is first, how often a stale one ranks above
it, how many controls were falsely superseded, and, for controls that carry a question
(what the older text says, which stays true), how often the older one is still first.

With ``--tune subject_cosine=0.6,0.7,0.8`` (any numeric field of the default policy), the
value is chosen by ``--folds``-fold cross-validation over the tuning split's stories and
controls (each fold's value is the best on the other folds, by the share of questions
whose right memory is first; the first listed wins a tie) and the held-out folds are
reported; the held-out split is then scored with the value that is best on the whole
tuning split.

    EPISODIC_EMBEDDER=local PYTHONPATH=src .venv/bin/python benchmarks/bench_update_stories.py
    EPISODIC_EMBEDDER=local PYTHONPATH=src .venv/bin/python benchmarks/bench_update_stories.py \\
        --tune subject_cosine=0,0.6,0.65,0.7,0.75,0.8
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic import Episodic
from episodic.bench.folds import choose, combinations, parse_tune, variant
from episodic.config import Settings
from episodic.model import MemoryStatus
from episodic.recall.policies import DEFAULT, RecallPolicy
from episodic.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
SPLITS = {
    "tuning": FIXTURES / "update_stories.json",
    "held-out": FIXTURES / "update_stories_heldout.json",
}
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
K = 5


@dataclass(frozen=True, slots=True)
class Item:
    """One question: the memory that should be first, and the others it was told with."""

    workspace: str
    question: str
    right: str
    others: tuple[str, ...]
    story: bool  # a story (the right memory is the newest) or a control (the oldest)


def load(
    mem: Episodic, now: list[datetime], name: str, data: dict[str, Any], shared: bool
) -> dict[str, Any]:
    """Remember every story and control of one split, each in a workspace of its own or
    (``shared``) all in one; returns its items and how many controls were falsely
    superseded."""
    items: list[Item] = []

    def workspace(kind: str, n: int) -> tuple[str, str]:
        """(workspace, id prefix)"""
        return (name if shared else f"{name}-{kind}-{n}"), f"{name}-{kind}-{n}"

    for n, story in enumerate(data["stories"]):
        ws, prefix = workspace("story", n)
        ids = []
        for i, text in enumerate(story["texts"]):
            now[0] = T0 + timedelta(days=14 * i)
            mem.remember(text, workspace=ws, id=f"{prefix}-{i}")
            ids.append(f"{prefix}-{i}")
        items.append(Item(ws, story["question"], ids[-1], tuple(ids[:-1]), True))
    controls: list[tuple[str, str]] = []
    for n, control in enumerate(data["controls"]):
        ws, prefix = workspace("control", n)
        now[0] = T0
        mem.remember(control[0], workspace=ws, id=f"{prefix}-old")
        now[0] = T0 + timedelta(days=14)
        mem.remember(control[1], workspace=ws, id=f"{prefix}-new")
        controls.append((ws, f"{prefix}-old"))
        if len(control) > 2:
            items.append(Item(ws, control[2], f"{prefix}-old", (f"{prefix}-new",), False))
    mem.index_once()
    false = sum(
        mem.store.get_memory(ws, old).status is MemoryStatus.SUPERSEDED for ws, old in controls
    )
    return {"items": items, "controls": len(controls), "false_supersessions": false}


def ask(mem: Episodic, items: list[Item], policy: RecallPolicy) -> list[dict[str, bool]]:
    """Per item: the right memory first, and (for a story) a stale one above it."""
    out = []
    for item in items:
        hits = [
            h.id
            for h in mem.recall(
                item.question, workspace=item.workspace, k=5, policy=policy, mark=False
            ).hits
        ]
        rank = hits.index(item.right) if item.right in hits else len(hits)
        out.append(
            {
                "first": bool(hits) and hits[0] == item.right,
                "stale_above": item.story and any(h in item.others for h in hits[:rank]),
            }
        )
    return out


def summary(items: list[Item], answers: list[dict[str, bool]]) -> dict[str, Any]:
    stories = [a for i, a in zip(items, answers, strict=True) if i.story]
    controls = [a for i, a in zip(items, answers, strict=True) if not i.story]
    out: dict[str, Any] = {
        "stories": len(stories),
        "current_first": round(sum(a["first"] for a in stories) / len(stories), 3),
        "stale_above_current": round(sum(a["stale_above"] for a in stories) / len(stories), 3),
    }
    if controls:
        out["controls_asked"] = len(controls)
        out["control_older_first"] = round(sum(a["first"] for a in controls) / len(controls), 3)
    return out


def right_first(answers: list[dict[str, bool]], picked: list[int]) -> float:
    return sum(answers[i]["first"] for i in picked) / max(1, len(picked))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", action="append", default=[], help="NAME=v1,v2,...")
    parser.add_argument("--folds", type=int, default=K)
    parser.add_argument(
        "--shared",
        action="store_true",
        help="each split's stories and controls in one workspace (each other's distractors)",
    )
    args = parser.parse_args()
    now = [T0]
    mem = Episodic(
        store=open_store("sqlite:///:memory:"), settings=Settings.from_env(), clock=lambda: now[0]
    )
    splits = {
        name: load(mem, now, name, json.loads(path.read_text(encoding="utf-8")), args.shared)
        for name, path in SPLITS.items()
    }
    now[0] = T0 + timedelta(days=60)
    report: dict[str, Any] = {"workspaces": "one per split" if args.shared else "one per story"}
    policy = DEFAULT
    if args.tune:
        combos = combinations(parse_tune(args.tune))
        items = splits["tuning"]["items"]
        answers = [ask(mem, items, variant(DEFAULT, values)) for values in combos]
        folds = [list(range(n, len(items), args.folds)) for n in range(args.folds)]
        held: list[dict[str, Any]] = []
        for test in folds:
            train = [i for i in range(len(items)) if i not in test]
            best = choose([right_first(a, train) for a in answers])
            held.append(
                {"chosen": combos[best], "held_out_right_first": right_first(answers[best], test)}
            )
        everything = list(range(len(items)))
        best = choose([right_first(a, everything) for a in answers])
        report["cross_validation"] = {
            "folds": held,
            "held_out_mean_right_first": round(
                sum(f["held_out_right_first"] for f in held) / len(held), 3
            ),
            "per_value": [
                {
                    "values": v,
                    "right_first": round(right_first(a, everything), 3),
                    **summary(items, a),
                }
                for v, a in zip(combos, answers, strict=True)
            ],
            "chosen_on_all_tuning": combos[best],
        }
        policy = variant(DEFAULT, combos[best])
    for name, split in splits.items():
        report[name] = {
            **summary(split["items"], ask(mem, split["items"], policy)),
            "controls": split["controls"],
            "false_supersessions": split["false_supersessions"],
        }
    print(json.dumps(report, indent=1))
    mem.close()


if __name__ == "__main__":
    main()
