"""Write the journal this set generates as JSON lines, to read or ingest by hand.

    .venv/bin/python benchmarks/journal_recall/generate.py > /tmp/journal.jsonl

The benchmark (``episodic bench journal``) generates the same events itself at run time:
the generator is seeded, so the ids the queries judge are the same on every run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from episodic.bench.journal_data import generate, load_set


def main() -> None:
    days = generate(load_set(Path(__file__).parent))
    for day in days:
        for event in day.events:
            sys.stdout.write(json.dumps(event) + "\n")
    events = sum(len(day.events) for day in days)
    print(f"{events} events over {len(days)} days", file=sys.stderr)


if __name__ == "__main__":
    main()
