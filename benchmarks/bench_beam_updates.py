"""BEAM's changed facts: does recall rank the message that updated a fact above the one it
updated? A set the supersession rule was not written from.

Each BEAM conversation (``../shared/data/beam/<n>/``) is ingested as chat into a workspace
of its own (one chat thread per session, messages a minute apart, a session on its
``time_anchor`` day or four hours after the one before), indexed and segmented, with supersession
detection on (``offline``: the rule, no model) or off (``none``). Then every
``knowledge_update`` question (``original_info`` and ``updated_info`` message ids) and
every ``contradiction_resolution`` question (``first_statement``, ``second_statement``)
is asked under ``default``, k=10, over messages and entries (an entry counts as the
messages it was made from), and the report gives per mode:

- ``updated_above``: the updated (second) message ranks above the original (first), or is
  found while the original is not;
- ``recall@10`` of each: the share of its message ids in the first ten.

Only the public API is used, so the same script measures any checkout:

    PYTHONPATH=src .venv/bin/python benchmarks/bench_beam_updates.py
    PYTHONPATH=src .venv/bin/python benchmarks/bench_beam_updates.py --modes offline --limit 5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.bench.locomo import bench_memory
from episodic.config import Settings
from episodic.model import Hit

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam"
K = 10
KINDS = {
    "knowledge_update": ("original_info", "updated_info"),
    "contradiction_resolution": ("first_statement", "second_statement"),
}
MODES = {"none": "off", "offline": "auto"}
# User messages end with an index marker ("->-> 1,1") that is not part of the text.
_MARKER = re.compile(r"\s*->->\s*[\d,\s]+$")


def messages(n: str, chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for batch in chat:
        for s, session in enumerate(batch["turns"]):
            anchor = next((m.get("time_anchor") for m in session if m.get("time_anchor")), None)
            if anchor:
                start = max(start, datetime.strptime(anchor, "%B-%d-%Y").replace(tzinfo=UTC))
            else:
                start += timedelta(hours=4)
            for i, m in enumerate(session):
                text = _MARKER.sub("", str(m["content"])).strip()
                if not text:
                    continue
                out.append(
                    {
                        "id": f"beam{n}-{m['id']}",
                        "workspace": f"beam-{n}",
                        "type": "message",
                        "summary": text,
                        "ts": (start + timedelta(minutes=i)).isoformat(),
                        "conversation": f"b{batch['batch_number']}-s{s}",
                        "payload": {"role": m["role"]},
                    }
                )
    return out


def questions(n: str, probing: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for kind, (first, second) in KINDS.items():
        for q in probing.get(kind, []):
            ids = q.get("source_chat_ids") or {}
            if not isinstance(ids, dict) or not ids.get(first) or not ids.get(second):
                continue
            out.append(
                {
                    "kind": kind,
                    "question": q["question"],
                    "first": [f"beam{n}-{i}" for i in ids[first]],
                    "second": [f"beam{n}-{i}" for i in ids[second]],
                }
            )
    return out


def sources(hit: Hit) -> list[str]:
    m = hit.memory
    return [m.id] if m.type == "message" else list(m.source_event_ids)


def first_rank(ranked: Sequence[Sequence[str]], wanted: Sequence[str]) -> int | None:
    for rank, ids in enumerate(ranked, start=1):
        if set(ids) & set(wanted):
            return rank
    return None


def score(
    ranked: Sequence[Sequence[str]], first: Sequence[str], second: Sequence[str]
) -> dict[str, float]:
    top = [i for ids in ranked[:K] for i in ids]
    f, s = first_rank(ranked, first), first_rank(ranked, second)
    return {
        "updated_above": float(s is not None and (f is None or s < f)),
        "recall@10 updated": sum(i in top for i in second) / len(second),
        "recall@10 original": sum(i in top for i in first) / len(first),
    }


def run(mode: str, folders: Sequence[Path], say: Any) -> dict[str, Any]:
    settings = replace(Settings.from_env(), supersession=MODES[mode])
    convs = []
    for folder in folders:
        chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
        convs.append((folder.name, messages(folder.name, chat), questions(folder.name, probing)))
    texts = [m["summary"] for _, ms, _ in convs for m in ms] + [
        q["question"] for _, _, qs in convs for q in qs
    ]
    per_kind: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    superseded = 0
    with bench_memory(settings, texts, say) as (mem, clock, _model):
        for n, ms, qs in convs:
            started = time.perf_counter()
            clock.now = datetime.fromisoformat(ms[-1]["ts"]) + timedelta(minutes=1)
            mem.ingest(ms)
            mem.index_once()
            clock.now += timedelta(hours=4)
            mem.segment(flush=True, workspace=f"beam-{n}")
            mem.index_once()
            from episodic.model import MemoryStatus, ScopeFilter

            gone = mem.store.list_memories(
                ScopeFilter(workspace_id=f"beam-{n}"), 100_000, statuses=[MemoryStatus.SUPERSEDED]
            )
            superseded += len(gone)
            for q in qs:
                hits = mem.recall(
                    q["question"],
                    workspace=f"beam-{n}",
                    k=K,
                    mark=False,
                    types=("message", "entry"),
                ).hits
                per_kind[q["kind"]].append(
                    score([sources(h) for h in hits], q["first"], q["second"])
                )
            say(
                f"{mode}: beam {n}: {len(ms)} messages, {len(qs)} questions, "
                f"{time.perf_counter() - started:.0f}s"
            )
    report: dict[str, Any] = {"superseded": superseded}
    for kind, rows in per_kind.items():
        keys = rows[0].keys() if rows else []
        report[kind] = {"questions": len(rows)} | {
            k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys
        }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--modes", default="none,offline")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args(argv)
    folders = sorted(
        (p for p in args.data.iterdir() if (p / "chat.json").exists()),
        key=lambda p: int(p.name) if p.name.isdigit() else 0,
    )[: args.limit]
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    report = {mode: run(mode, folders, say) for mode in args.modes.split(",")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
