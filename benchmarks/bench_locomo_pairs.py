"""A bound on LoCoMo's false supersessions from the offline rule alone, in minutes.

Every pair of one LoCoMo conversation (an earlier turn, or a sentence of one, and a later
turn or sentence whose text carries a change signal) is put to the offline rule
(``write.change_rules.decide``); the count of "supersedes" bounds what ingest can decide in
either mode (``--ingest turn`` or ``conversation``): ingest compares fewer pairs (only the
same owner's, only what keyword search finds) and its guards forbid more. LoCoMo states
no change a memory should be hidden for, so every one counted is false.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_locomo_pairs.py [--data locomo10.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path

from episodic.bench.locomo import load_locomo
from episodic.write.change_rules import _read_new, decide
from episodic.write.text import split_sentences

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    started = time.perf_counter()
    fired: collections.Counter[str] = collections.Counter()
    examples: list[tuple[str, str, str]] = []
    pairs = 0
    for conv in load_locomo(args.data):
        texts: list[list[str]] = []
        for turn in conv.turns:
            sentences = split_sentences(turn.text)
            texts.append([turn.text, *(sentences if len(sentences) > 1 else [])])
        for j, units in enumerate(texts):
            for new in units:
                if not _read_new(new).signals:
                    continue  # no change signal: the rule cannot say "supersedes"
                for earlier in texts[:j]:
                    for old in earlier:
                        pairs += 1
                        verdict = decide(new, old)
                        if verdict.kind == "supersedes":
                            fired[verdict.rule] += 1
                            examples.append((old, new, verdict.rule))
    report = {
        "pairs_with_a_change_signal": pairs,
        "supersedes": sum(fired.values()),
        "by_rule": dict(fired),
        "examples": examples[:10],
        "seconds": round(time.perf_counter() - started),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
