"""Why a knowledge update's newer message is not above the older one: each BEAM
knowledge-update question whose updated message `default` does not rank above the
original in its first ten, sorted by what stands in the way.

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_hits_order.py \\
        run beam ../shared/data/beam > beam-hits.json
    PYTHONPATH=src python benchmarks/bench_update_misses.py beam-hits.json

- ``same message``: the question names one message as both its original and its update;
- ``updated not in the first ten``: no order of the hits can put it first;
- ``no stated change``: the updated message states its value with no word of change that
  ``write/stated_change.py`` reads ("I've added 52 sources" after "has 45 sources"), so
  telling it from another statement of the subject needs more than its wording;
- ``a stated change``: it says so ("has increased to 7") and still ranks below.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from episodic.write.stated_change import stated_changes

TOP = 10


def reason(row: dict[str, object]) -> str | None:
    """What keeps the question's updated message from ranking above the original; None
    when it ranks above."""
    before, after = (set(ids) for ids in row["changed"])  # type: ignore[attr-defined]
    hits = row["hits"]
    slots: list[str] = hits["slots"][:TOP]  # type: ignore[index]
    first_after = next((n for n, s in enumerate(slots) if s in after), None)
    first_before = next((n for n, s in enumerate(slots) if s in before), None)
    if first_after is not None and (first_before is None or first_after < first_before):
        return None
    if before & after:
        return "same message"
    if first_after is None:
        return "updated not in the first ten"
    text: str = hits["text"][first_after]  # type: ignore[index]
    return "a stated change" if stated_changes(text) else "no stated change"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("hits", help="the rows `bench_hits_order.py run beam` wrote")
    args = parser.parse_args()
    rows = [
        r
        for r in json.loads(Path(args.hits).read_text())
        if r["category"] == "knowledge_update" and r["changed"][0] and r["changed"][1]
    ]
    counts: Counter[str] = Counter()
    for row in rows:
        why = reason(row)
        counts[why or "updated above"] += 1
        if why is not None:
            print(f"{why:30s} {row['conversation']:>3s}  {row['question'][:80]}")
    print()
    for why, n in counts.most_common():
        print(f"{why:30s} {n:3d} of {len(rows)}")


if __name__ == "__main__":
    main()
