"""A recall's k hits in another order: LoCoMo or BEAM when each question asks for ten hits.

`episodic bench locomo|beam` asks every question for twenty hits (its deepest metric is
recall@20) and scores recall@10, recall@1 and NDCG@10 on the first ten of them. A setting
that only orders the k hits recall returns (``subject_cosine_hits``: the older of a pair
about one subject just below the newer) can move a hit of the second ten into the first
ten of such a list; a caller asking for ten never sees that. This asks for ten, so
recall@10 is the same for every value by construction and the sweep shows what the order
does to recall@1, NDCG@10 and the knowledge updates. Same JSON as `--folds K --tune ...
--json`, for `joint_folds.py` and the tables:

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_hits_order.py \\
        beam ../shared/data/beam --tune subject_cosine_hits=0,0.8,0.7,0.6,0.5 > beam10.json
"""

from __future__ import annotations

import argparse
import json
import sys

import episodic.bench.locomo as bench
from episodic.bench.beam import load_beam
from episodic.bench.folds import parse_tune, run_folds
from episodic.config import Settings

HITS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", choices=("locomo", "beam"))
    parser.add_argument("data", help="locomo10.json, or BEAM's folder")
    parser.add_argument("--tune", action="append", required=True, help="NAME=v1,v2,...")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    # The harness asks each question for DEPTH hits; ten here, as a caller asking for ten.
    bench.DEPTH = HITS
    report = run_folds(
        args.data,
        ["default"],
        "turn",
        Settings.from_env(),
        args.folds,
        sweep=parse_tune(args.tune),
        progress=lambda line: print(line, file=sys.stderr),
        load=load_beam if args.set == "beam" else None,
    )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
