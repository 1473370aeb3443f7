"""Where `default` loses evidence one of its legs finds: per question, by category.

For every scored question: is an evidence turn in the top 10 of `dense`, of `bm25`, of
`default`, and of `default` with one of its parts switched off (neighbours, conversation
lift, the time leg, the priors)? For the questions a leg finds and `default` loses, what
outranks the evidence: whose message (the payload's speaker, so only as a label), how
long, how the legs ranked it. One database, every variant asked over it.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src .venv/bin/python \\
        benchmarks/bench_headroom.py --format beam --data ../shared/data/beam --out beam.json
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
from pathlib import Path
from typing import Any

from episodic.bench.beam import load_beam
from episodic.bench.locomo import (
    QuestionRun,
    load_locomo,
    prepare_locomo,
    run_policy,
)
from episodic.config import Settings
from episodic.recall.policies import DEFAULT, RecallPolicy

TOP = 10
ABLATIONS: dict[str, dict[str, Any]] = {
    "no-neighbours": {"neighbours": 0},
    "no-lift": {"conversation_weight": 0.0},
    "no-time": {"time_aware": False},
    "no-priors": {"factors": ()},
    "no-context": {"neighbours": 0, "conversation_weight": 0.0},
}


def first_rank(run: QuestionRun) -> int | None:
    evidence = set(run.relevant)
    for i, turn in enumerate(run.ranking):
        if turn in evidence:
            return i
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("locomo", "beam"), required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    load = load_beam if args.format == "beam" else load_locomo
    settings = Settings.from_env()
    variants: dict[str, RecallPolicy | None] = {"dense": None, "bm25": None, "default": None}
    for name, change in ABLATIONS.items():
        variants[name] = dataclasses.replace(DEFAULT, **change)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    above: list[dict[str, Any]] = []
    with prepare_locomo(args.data, settings, say=print, load=load) as run:
        results: dict[str, list[QuestionRun]] = {}
        for name, policy in variants.items():
            print("policy", name, flush=True)
            base = "default" if policy is not None else name
            results[name] = run_policy(run, base, "turn", policy=policy)
        for i, (conv, question) in enumerate(run.asked):
            key = (conv.sample_id, str(i))
            row: dict[str, Any] = {"category": str(question.category), "q": question.text}
            for name in variants:
                row[name] = first_rank(results[name][i])
            rows[key] = row
            d = row["default"]
            legs = [row["dense"], row["bm25"]]
            lost = any(r is not None and r < TOP for r in legs) and (d is None or d >= TOP)
            if not lost:
                continue
            # What stands above the evidence in default's list.
            outcome = results["default"][i]
            by_id = {t.dia_id: t for t in conv.turns}
            evidence = [by_id[e] for e in outcome.relevant if e in by_id]
            shown = outcome.turns[: (d if d is not None else TOP)][:TOP]
            above.append(
                {
                    "conversation": conv.sample_id,
                    "category": row["category"],
                    "q": question.text,
                    "ranks": {n: row[n] for n in variants},
                    "evidence": [
                        {
                            "turn": t.dia_id,
                            "speaker": t.speaker,
                            "len": len(t.summary),
                            "text": t.summary[:200],
                        }
                        for t in evidence[:4]
                    ],
                    "above": [
                        {
                            "turn": h,
                            "speaker": by_id[h].speaker,
                            "len": len(by_id[h].summary),
                            "text": by_id[h].summary[:160],
                        }
                        if h in by_id
                        else {"turn": h}
                        for h in shown
                    ],
                }
            )
    summary = summarise(rows, list(variants))
    print(json.dumps(summary, indent=1))
    args.out.write_text(json.dumps({"summary": summary, "lost": above}, indent=1))


def summarise(rows: dict[tuple[str, str], dict[str, Any]], names: list[str]) -> dict[str, Any]:
    by_cat: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows.values():
        by_cat[row["category"]].append(row)
        by_cat["all"].append(row)

    def hit(row: dict[str, Any], name: str) -> bool:
        return row[name] is not None and row[name] < TOP

    out: dict[str, Any] = {}
    for cat, items in sorted(by_cat.items()):
        entry: dict[str, Any] = {"n": len(items)}
        for name in names:
            entry[f"top10_{name}"] = sum(hit(r, name) for r in items)
        entry["leg_finds_default_loses"] = sum(
            (hit(r, "dense") or hit(r, "bm25")) and not hit(r, "default") for r in items
        )
        entry["dense_finds_default_loses"] = sum(
            hit(r, "dense") and not hit(r, "default") for r in items
        )
        entry["bm25_finds_default_loses"] = sum(
            hit(r, "bm25") and not hit(r, "default") for r in items
        )
        entry["default_finds_no_leg"] = sum(
            hit(r, "default") and not hit(r, "dense") and not hit(r, "bm25") for r in items
        )
        for name in names[3:]:
            entry[f"{name}_recovers"] = sum(hit(r, name) and not hit(r, "default") for r in items)
            entry[f"{name}_loses"] = sum(hit(r, "default") and not hit(r, name) for r in items)
        out[cat] = entry
    return out


if __name__ == "__main__":
    main()
