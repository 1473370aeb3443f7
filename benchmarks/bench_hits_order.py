"""A recall's hits in another order: what ordering only the k hits recall chose does.

``subject_cosine_hits`` moves the older of a pair about one subject (a turn in it) to
just below the newer among the k hits recall returns, when the question asks for the
current state; no hit enters or leaves. Each question of LoCoMo or BEAM is asked once
under `default` for twenty hits; every variant (threshold, with or without the question
gate, ten or twenty hits) orders those hits as the engine would
(``recall.supersede.newer_turns_first_within``). Ten hits are what a caller asking for
ten gets (recall@10 unchanged by construction); twenty are what `episodic bench` asks
for, where an order within twenty can move a hit across the tenth place.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_hits_order.py \\
        run beam ../shared/data/beam > beam-hits.json
    ... run locomo ../shared/data/locomo10.json > locomo-hits.json
    python benchmarks/bench_hits_order.py tables locomo=locomo-hits.json beam=beam-hits.json

``run`` also keeps each question's twenty hits (slots, scores, times, owners, texts and the
cosines between them), so that ``tables`` orders them again offline with the code as it
stands: a newer hit that states a changed value (``write/stated_change.py``) above an
older one, by itself, with a cosine or a score share, and as `default` would with
``restated_words`` (``recall.supersede.restated_first_within``).

``tables`` prints, per variant, the mean over all questions and the held-out mean over
five folds (conversations dealt round-robin; each fold's variant is the one with the best
recall@10 on the other four, over both sets at once, ties to the plainest).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from episodic.bench.beam import load_beam
from episodic.bench.folds import split_folds
from episodic.bench.locomo import prepare_locomo
from episodic.bench.metrics import score_ranking, update_order
from episodic.config import Settings
from episodic.model import Memory, ScopeFilter
from episodic.recall.supersede import Hits, newer_turns_first_within
from episodic.scoring.supersede import older_below_newer
from episodic.write.questions import asks_for_now

VALUES = (0.8, 0.7, 0.6, 0.5)
DEPTHS = (10, 20)
# Subject by score instead of cosine: among the ten hits, a newer one by the same owner whose
# score is at least this share of an older one's counts as the same subject (the question
# names it, both answer it about as well), for a question about the current state.
CLOSE_SCORES = (0.9, 0.8, 0.7)
KEYS = ("recall@1", "recall@10", "ndcg@10")
# Any question the gate lets through: the ungated variants order every question's hits.
ANY_QUESTION = "what is it now"


def variants() -> list[tuple[str, float, bool, int]]:
    out = [("off", 0.0, False, 20)]
    for depth in DEPTHS:
        for gated in (False, True):
            for value in VALUES:
                name = f"{value} {'gated' if gated else 'every question'} k={depth}"
                out.append((name, value, gated, depth))
    for share in CLOSE_SCORES:
        out.append((f"newer at score >= {share}x gated k=10", -share, True, 10))
    return out


def close_scores_first(
    chosen: list[tuple[str, float]], memories: dict[str, Memory], share: float, question: str
) -> list[tuple[str, float]]:
    """``chosen`` with an older hit moved below a newer one by the same owner that scores at
    least ``share`` of it, when ``question`` asks for the current state."""
    if not asks_for_now(question):
        return chosen
    owner = {
        i: (m.agent, m.crew, m.resource, m.payload.get("speaker")) for i, m in memories.items()
    }
    scores = dict(chosen)
    similar = {
        older: [
            (newer, 1.0)
            for newer, _ in chosen
            if owner[newer] == owner[older]
            and memories[newer].ts > memories[older].ts
            and scores[newer] >= share * scores[older]
        ]
        for older, _ in chosen
    }
    ts = {i: memories[i].ts for i, _ in chosen}
    return older_below_newer(chosen, similar, ts)


def run(which: str, data: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with prepare_locomo(
        data,
        Settings.from_env(),
        say=lambda line: print(line, file=sys.stderr),
        load=load_beam if which == "beam" else None,
    ) as prepared:
        mem = prepared.mem
        for conv, question in prepared.asked:
            prepared.clock.now = conv.end
            result = mem.recall(question.text, workspace=conv.workspace, k=20, mark=False)
            memories = {h.id: h.memory for h in result.hits}
            flt = ScopeFilter(workspace_id=conv.workspace)
            row: dict[str, Any] = {
                "conversation": conv.sample_id,
                "category": str(question.category),
                "variants": {},
            }
            for name, value, gated, depth in variants():
                chosen = [(h.id, h.score) for h in result.hits]
                head, tail = chosen[:depth], chosen[depth:]
                asked = question.text if gated else ANY_QUESTION
                if value < 0:
                    ordered = close_scores_first(head, memories, -value, asked) + tail
                else:
                    hits = Hits(head, memories, asked, mem.store, flt)
                    ordered = newer_turns_first_within(hits, value) + tail
                ranking = _ranking([memories[i] for i, _ in ordered], conv)
                scores = score_ranking(ranking, question.evidence)
                entry = {key: scores[key] for key in KEYS}
                before, after = question.changed
                if before and after:
                    entry.update(update_order(ranking, before, after))
                row["variants"][name] = entry
            row["hits"] = _hits_as_read(mem.store, conv, result.hits)
            row["evidence"] = list(question.evidence)
            row["changed"] = [list(question.changed[0]), list(question.changed[1])]
            row["question"] = question.text
            rows.append(row)
    return rows


def _hits_as_read(store: Any, conv: Any, hits: Sequence[Any]) -> dict[str, Any]:
    """What an order of the twenty hits needs, kept so that ``tables`` can order them
    again without asking: each hit's slot in the ranking, score, time, owner, turn and
    text, and the cosines between their stored vectors (None without one)."""
    import numpy as np

    ids = [h.id for h in hits]
    vectors = store.get_vectors(conv.workspace, ids)
    unit = {
        i: np.asarray(v, dtype=np.float64) / (np.linalg.norm(v) or 1.0) for i, v in vectors.items()
    }
    return {
        "slots": _ranking([h.memory for h in hits], conv),
        "scores": [h.score for h in hits],
        "ts": [h.memory.ts.isoformat() for h in hits],
        "owner": [
            repr(
                (h.memory.agent, h.memory.crew, h.memory.resource, h.memory.payload.get("speaker"))
            )
            for h in hits
        ],
        "conversation": [h.memory.conversation for h in hits],
        "text": [h.memory.content[:2000] for h in hits],
        "cosine": [
            [round(float(unit[a] @ unit[b]), 4) if a in unit and b in unit else None for b in ids]
            for a in ids
        ],
    }


def _ranking(hits: Sequence[Any], conv: Any) -> list[str]:
    """What the bench scores: each hit's turn once, a slot of nothing otherwise."""
    turns: list[str] = []
    named: set[str] = set()
    for i, memory in enumerate(hits):
        dia_id = memory.payload.get("dia_id") if memory.workspace == conv.workspace else None
        if not isinstance(dia_id, str) or dia_id in named:
            turns.append(f"-{i}")
        else:
            named.add(dia_id)
            turns.append(dia_id)
    return turns


# Ordered again from the kept hits (``tables``): the newer hit must state a changed value
# (``change_rules.changed_values``); "differs" also asks that the older hit gives a number
# and not every changed value; the subject by cosine or by a share of the older's score.
STATED_SUBJECTS: tuple[tuple[str, float], ...] = (
    ("any", 0.0),
    ("cosine", 0.6),
    ("cosine", 0.5),
    ("cosine", 0.4),
    ("score", 0.8),
    ("score", 0.7),
    ("score", 0.5),
)
STATED_READ = (600,)
# What `default` does (``recall.supersede.restated_first_within``): for a what / how / when
# question about now, a newer hit stating a changed value lifted just above an older one
# by the same owner when the question, the words around the change and the older text
# share this many content words.
RESTATED_WORDS = (1, 2, 3, 4)


def stated_variants() -> list[tuple[str, bool, str, float, int, bool]]:
    """(name, values differ, subject by, at, characters read, gated)."""
    out = []
    for chars in STATED_READ:
        for differs in (False, True):
            for by, at in STATED_SUBJECTS:
                subject = "" if by == "any" else f", {by} >= {at}"
                name = f"states change{' differs' if differs else ''}{subject}, {chars} chars"
                out.append((name + " gated k=10", differs, by, at, chars, True))
    out.append(("states change, 600 chars every question k=10", False, "any", 0.0, 600, False))
    return out


def _numbers(text: str) -> set[str]:
    import re

    return {n.rstrip(".,").casefold() for n in re.findall(r"[$£€]?\d[\d,.:/%-]*\w*", text)}


def stated_order(
    row: dict[str, Any], differs: bool, by: str, at: float, chars: int, gated: bool
) -> list[str]:
    """The kept twenty hits' slots with the first ten ordered: an older hit moved just below
    a newer one by the same owner (not of its conversation) that states a changed value."""
    from datetime import datetime

    from episodic.write.stated_change import changed_values

    hits = row["hits"]
    n = len(hits["slots"])
    depth = min(10, n)
    if gated and not asks_for_now(row["question"]):
        return list(hits["slots"])
    ids = [str(i) for i in range(n)]
    ts = {str(i): datetime.fromisoformat(hits["ts"][i]) for i in range(n)}
    changed = [changed_values(hits["text"][i][:chars]) for i in range(depth)]
    similar: dict[str, list[tuple[str, float]]] = {}
    for old in range(depth):
        partners = []
        for new in range(depth):
            if (
                not changed[new]
                or hits["owner"][new] != hits["owner"][old]
                or ts[ids[new]] <= ts[ids[old]]
                or (
                    hits["conversation"][new] is not None
                    and hits["conversation"][new] == hits["conversation"][old]
                )
            ):
                continue
            if differs:
                older = _numbers(hits["text"][old][:chars])
                if not older or changed[new] <= older:
                    continue
            cosine = hits["cosine"][old][new]
            if by == "cosine" and (cosine is None or cosine < at):
                continue
            if by == "score" and hits["scores"][new] < at * hits["scores"][old]:
                continue
            partners.append((ids[new], 1.0))
        similar[ids[old]] = partners
    head = [(ids[i], hits["scores"][i]) for i in range(depth)]
    ordered = older_below_newer(head, similar, ts) + [
        (ids[i], hits["scores"][i]) for i in range(depth, n)
    ]
    return [hits["slots"][int(i)] for i, _ in ordered]


def restated_order(row: dict[str, Any], shared: int) -> list[str]:
    """The kept twenty hits' slots with the first ten ordered as `default` orders them
    with ``restated_words`` = ``shared``."""
    from datetime import datetime

    from episodic.recall.supersede import Hits, restated_first_within

    hits = row["hits"]
    n = len(hits["slots"])
    memories = {
        str(i): Memory(
            id=str(i),
            workspace="w",
            ts=datetime.fromisoformat(hits["ts"][i]),
            type="turn",
            content=hits["text"][i],
            agent=hits["owner"][i],
            conversation=hits["conversation"][i],
        )
        for i in range(n)
    }
    chosen = [(str(i), hits["scores"][i]) for i in range(n)]
    head, tail = chosen[:10], chosen[10:]
    ordered = restated_first_within(Hits(head, memories, row["question"]), shared) + tail
    return [hits["slots"][int(i)] for i, _ in ordered]


def restated_variants() -> list[str]:
    return [f"restated, {w} words shared k=10" for w in RESTATED_WORDS]


def add_stated(rows: list[dict[str, Any]]) -> None:
    """Each row's ``stated_variants`` and ``restated_variants`` scored beside the ones
    ``run`` measured."""
    for row in rows:
        if "hits" not in row:
            continue
        before, after = row["changed"]
        orders = [
            (name, stated_order(row, differs, by, at, chars, gated))
            for name, differs, by, at, chars, gated in stated_variants()
        ] + [
            (name, restated_order(row, w))
            for name, w in zip(restated_variants(), RESTATED_WORDS, strict=True)
        ]
        for name, ranking in orders:
            scores = score_ranking(ranking, row["evidence"])
            entry = {key: scores[key] for key in KEYS}
            if before and after:
                entry.update(update_order(ranking, before, after))
            row["variants"][name] = entry


def _mean(rows: Sequence[dict[str, Any]], name: str, key: str) -> float:
    values = [r["variants"][name][key] for r in rows if key in r["variants"][name]]
    return sum(values) / len(values) if values else float("nan")


def tables(reports: dict[str, list[dict[str, Any]]]) -> None:
    for rows in reports.values():
        add_stated(rows)
    names = [v[0] for v in variants()] + [v[0] for v in stated_variants()] + restated_variants()
    folds = {
        s: split_folds(sorted({r["conversation"] for r in rows}), 5) for s, rows in reports.items()
    }
    chosen: list[str] = []
    for i in range(5):
        train = {
            name: sum(
                _mean([r for r in rows if r["conversation"] not in folds[s][i]], name, "recall@10")
                for s, rows in reports.items()
            )
            for name in names
        }
        chosen.append(max(names, key=lambda n: (round(train[n], 6), -names.index(n))))
    print(
        "| variant | "
        + " | ".join(f"{s} R@10 / R@1 / NDCG@10" for s in reports)
        + " | BEAM updated above original | R@10 updated / original |"
    )
    print("|---|" + "---|" * (len(reports) + 2))
    for name in names:
        cells = [
            " / ".join(f"{_mean(rows, name, k):.4f}" for k in ("recall@10", "recall@1", "ndcg@10"))
            for rows in reports.values()
        ]
        beam = reports.get("beam", [])
        up = [
            r
            for r in beam
            if "updated_above" in r["variants"][name] and r["category"] == "knowledge_update"
        ]
        ua = sum(r["variants"][name]["updated_above"] for r in up) / max(len(up), 1)
        ru = sum(r["variants"][name]["recall@10_updated"] for r in up) / max(len(up), 1)
        ro = sum(r["variants"][name]["recall@10_original"] for r in up) / max(len(up), 1)
        print(
            f"| {name} | " + " | ".join(cells) + f" | {ua:.2f} of {len(up)} | {ru:.3f} / {ro:.3f} |"
        )
    print("\nchosen per fold (best training R@10 over both sets):", chosen)
    _held_out(reports, folds, chosen)
    # Ten hits keep recall@10 by construction: there the order is chosen by NDCG@10.
    ten = [n for n in names if n == "off" or n.endswith("k=10")]
    by_ndcg: list[str] = []
    for i in range(5):
        train = {
            name: sum(
                _mean([r for r in rows if r["conversation"] not in folds[s][i]], name, "ndcg@10")
                for s, rows in reports.items()
            )
            for name in ten
        }
        by_ndcg.append(max(ten, key=lambda n: (round(train[n], 6), -ten.index(n))))
    print("\nten hits, chosen per fold (best training NDCG@10 over both sets):", by_ndcg)
    _held_out(reports, folds, by_ndcg)
    # Per category, every variant against off (all questions; a drop > 1 point flagged).
    for s, rows in reports.items():
        cats = sorted({r["category"] for r in rows})
        for name in names[1:]:
            worst = min(
                (
                    _mean([r for r in rows if r["category"] == c], name, "recall@10")
                    - _mean([r for r in rows if r["category"] == c], "off", "recall@10"),
                    c,
                )
                for c in cats
            )
            print(f"{s} {name}: worst category R@10 change {worst[0]:+.4f} ({worst[1]})")


def _held_out(
    reports: dict[str, list[dict[str, Any]]], folds: dict[str, list[list[str]]], chosen: list[str]
) -> None:
    """Each set's mean over the five folds, each fold answered by its chosen variant."""
    for s, rows in reports.items():
        held = []
        for i, name in enumerate(chosen):
            test = [r for r in rows if r["conversation"] in folds[s][i]]
            held.append({k: _mean(test, name, k) for k in ("recall@10", "recall@1", "ndcg@10")})
        print(s, "held-out", {k: round(sum(h[k] for h in held) / 5, 4) for k in held[0]})
        up = [
            r["variants"][chosen[i]]["updated_above"]
            for i in range(5)
            for r in rows
            if r["conversation"] in folds[s][i]
            and r["category"] == "knowledge_update"
            and "updated_above" in r["variants"][chosen[i]]
        ]
        if up:
            print(f"{s} held-out updated above original: {sum(up) / len(up):.2f} of {len(up)}")


def pairs(data: str) -> None:
    """Per BEAM knowledge-update question under `default`: where the original and the
    updated message rank in the first twenty, their cosine, each one's cosine with the
    question, whether the updated one reads as stating something, and the numbers it
    gives that the original does not; then the counts the README quotes."""
    import re

    import numpy as np

    from episodic.recall.supersede import _read

    def numbers(text: str) -> set[str]:
        return set(re.findall(r"\d[\d,.:]*", text))

    out: list[dict[str, Any]] = []
    with prepare_locomo(
        data, Settings.from_env(), say=lambda line: print(line, file=sys.stderr), load=load_beam
    ) as prepared:
        mem, embedder = prepared.mem, prepared.mem.embedder
        assert embedder is not None, "the pairs need the embedder"
        for conv, question in prepared.asked:
            before, after = question.changed
            if question.category != "knowledge_update" or not (before and after):
                continue
            prepared.clock.now = conv.end
            hits = mem.recall(question.text, workspace=conv.workspace, k=20, mark=False).hits
            ranking = _ranking([h.memory for h in hits], conv)
            turns = {t.dia_id: t for t in conv.turns}
            old, new = turns[before[0]], turns[after[0]]
            q, a, b = (
                v / np.linalg.norm(v)
                for v in embedder.embed_batch([question.text, old.summary, new.summary])
            )
            out.append(
                {
                    "original": ranking.index(old.dia_id) if old.dia_id in ranking else None,
                    "updated": ranking.index(new.dia_id) if new.dia_id in ranking else None,
                    "same": old.dia_id == new.dia_id,
                    "cosine": round(float(a @ b), 3),
                    "question_original": round(float(q @ a), 3),
                    "question_updated": round(float(q @ b), 3),
                    "states": _read(new.summary)[1],
                    "new_numbers": bool(numbers(new.text) - numbers(old.text)),
                }
            )
    print(json.dumps(out, indent=1))
    failing = [
        r
        for r in out
        if not r["same"]
        and r["updated"] is not None
        and r["original"] is not None
        and r["original"] < r["updated"]
    ]
    low = [r for r in failing if r["cosine"] < 0.6]
    closer = sum(r["question_original"] > r["question_updated"] for r in failing)
    print(
        f"{len(failing)} with the original above the updated in the first twenty; "
        f"{len(low)} below 0.60 cosine, {sum(r['states'] for r in low)} of them stating; "
        f"{len(failing) - len(low)} at 0.60 or more, "
        f"{sum(r['states'] for r in failing if r['cosine'] >= 0.6)} stating; the question "
        f"closer to the original in {closer}; "
        f"the updated giving a number the original does not in "
        f"{sum(r['new_numbers'] for r in failing)}",
        file=sys.stderr,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("set", choices=("locomo", "beam"))
    r.add_argument("data")
    sub.add_parser("pairs").add_argument("data", help="BEAM's folder")
    t = sub.add_parser("tables")
    t.add_argument("reports", nargs="+", help="NAME=rows.json")
    args = parser.parse_args()
    if args.command == "run":
        print(json.dumps(run(args.set, args.data)))
    elif args.command == "pairs":
        pairs(args.data)
    else:
        reports = {}
        for spec in args.reports:
            name, _, path = spec.partition("=")
            with open(path) as f:
                reports[name] = json.load(f)
        tables(reports)


if __name__ == "__main__":
    main()
