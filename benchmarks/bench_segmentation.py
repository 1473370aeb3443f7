"""Segmentation quality on the labelled fixture: where episodes start, against the labels.

    .venv/bin/python benchmarks/bench_segmentation.py [--json]

The fixture (``tests/fixtures/segmentation.json``) holds conversations written for the
tests, each with the messages that start a new episode and why (a topic change, a soft or
a hard time gap). Every conversation goes through ``Episodic`` as chat messages and one
``segment(flush=True)``, with the bundled all-MiniLM-L6-v2, on two paths:

- **offline**: no LLM; rules and the surprise channel.
- **llm**: the real OpenAI-compatible client against a local chat-completions server
  whose topic answers come from the labels: of the candidates it is asked about, it names
  the labelled boundaries. This measures what the pipeline loses (boundaries the
  embedding pre-filter never offers, surprise splits at the wrong place), not what a
  model knows: a real model's mistakes come on top.

Reports precision, recall and F1 of the episode starts, exact and within one message;
recall per kind of boundary; the topic requests and candidates the LLM was asked about;
the episodes flagged as key moments; and, for every turn that starts no episode, the
surprise an episode opened there would get (how many would be key moments).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from chat_server import MODEL, running_chat_server
from episodic.embed.cache import CachedEmbedder, DictCache
from episodic.embed.local import MiniLMEmbedder
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.write.segment import FLASHBULB_SURPRISE, KEY_MOMENT_SURPRISE
from segmentation_fixture import (
    KINDS,
    FixtureRun,
    LabelledResponder,
    load_fixture,
    opening_surprises,
    segment_fixture,
)


def summary(run: FixtureRun, conversations: list[Any], seconds: float) -> dict[str, Any]:
    exact = run.scores(conversations, 0)
    near = run.scores(conversations, 1)
    labelled = {c.id: set(c.boundaries) for c in conversations}
    flagged = [
        (cid, start) for cid, episodes in run.episodes.items() for start, _, key in episodes if key
    ]
    return {
        "exact": exact,
        "within_one": near,
        "recall_by_kind": {k: run.recall_of(conversations, k) for k in KINDS},
        "episodes": sum(len(e) for e in run.episodes.values()),
        "key_moments": len(flagged),
        "key_moments_off_label": sum(
            1 for cid, s in flagged if not any(abs(s - b) <= 1 for b in labelled[cid])
        ),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    conversations = load_fixture()
    # Each text embedded once for the two paths and the ordinary-turn check.
    embedder = CachedEmbedder(MiniLMEmbedder(), DictCache())
    n_messages = sum(len(c.messages) for c in conversations)
    kinds = {k: sum(k == v for c in conversations for v in c.boundaries.values()) for k in KINDS}
    report: dict[str, Any] = {
        "fixture": {
            "conversations": len(conversations),
            "messages": n_messages,
            "boundaries": kinds,
        }
    }
    started = time.perf_counter()
    offline = segment_fixture(conversations, embedder)
    report["offline"] = summary(offline, conversations, time.perf_counter() - started)

    responder = LabelledResponder()
    with running_chat_server() as server:
        server.responder = responder
        with OpenAICompatLLM(base_url=server.base_url, model=MODEL, timeout_s=30.0) as llm:
            started = time.perf_counter()
            with_llm = segment_fixture(conversations, embedder, llm, responder)
            report["llm"] = summary(with_llm, conversations, time.perf_counter() - started)
    report["llm"]["topic_requests"] = responder.topic_requests
    report["llm"]["candidates_asked"] = responder.candidates_asked

    ordinary = opening_surprises(conversations, embedder)
    values = sorted(s for _, _, s in ordinary)
    report["ordinary_turns"] = {
        "turns": len(values),
        "median_surprise": round(values[len(values) // 2], 3) if values else None,
        "max_surprise": round(values[-1], 3) if values else None,
        "key_moments": sum(s >= KEY_MOMENT_SURPRISE for s in values),
        "flashbulbs": sum(s >= FLASHBULB_SURPRISE for s in values),
        "highest": [
            [cid, i, round(s, 3)] for cid, i, s in sorted(ordinary, key=lambda r: -r[2])[:5]
        ],
    }

    if args.json:
        print(json.dumps(report, default=asdict, indent=1))
        return
    f = report["fixture"]
    print(
        f"fixture: {f['conversations']} conversations, {f['messages']} messages, "
        f"{sum(kinds.values())} labelled boundaries "
        + ", ".join(f"{n} {k}" for k, n in kinds.items())
    )
    for path in ("offline", "llm"):
        r = report[path]
        print(f"\n{path}  ({r['episodes']} episodes, {r['seconds']} s)")
        print(f"  exact       {r['exact'].line()}")
        print(f"  within one  {r['within_one'].line()}")
        print(
            "  recall within one by kind: "
            + ", ".join(f"{k} {a}/{b}" for k, (a, b) in r["recall_by_kind"].items())
        )
        print(
            f"  key moments: {r['key_moments']} episodes, {r['key_moments_off_label']} of "
            "them not within one message of a labelled boundary"
        )
        if path == "llm":
            print(
                f"  LLM topic requests: {r['topic_requests']} for {f['conversations']} "
                f"conversations, {r['candidates_asked']} candidates asked about "
                f"(of {f['messages']} messages)"
            )
    o = report["ordinary_turns"]
    print(
        f"\nturns that start no episode ({o['turns']}), if one opened there: surprise median "
        f"{o['median_surprise']}, max {o['max_surprise']}; {o['key_moments']} would be key "
        f"moments (>= {KEY_MOMENT_SURPRISE}), {o['flashbulbs']} flashbulbs"
    )
    print("  highest: " + "; ".join(f"{c}[{i}] {s}" for c, i, s in o["highest"]))
    print(
        "\nThe llm path's topic answers come from the labels: it measures what the pipeline "
        "loses, not what a model knows."
    )


if __name__ == "__main__":
    main()
