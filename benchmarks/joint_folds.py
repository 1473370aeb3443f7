"""Choose a swept constant of `default` over several data sets at once.

Run each set with the same sweep and folds, then give the JSON reports here:

    episodic bench locomo --data ../shared/data/locomo10.json --folds 5 \\
        --policy default --tune blend_scale=raw,cdf --json > locomo.json
    episodic bench beam --data ../shared/data/beam --folds 5 \\
        --policy default --tune blend_scale=raw,cdf --json > beam.json
    python benchmarks/joint_folds.py locomo=locomo.json beam=beam.json

Fold i of every set is held out together; its value is the one with the best training
recall@10 averaged over the sets (episodic.bench.joint). With --guarded a fold chooses only
among the variants that keep the keep rule on its training folds (no set lower, no
category more than a point lower than the first variant listed). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from episodic.bench.joint import joint_folds, joint_markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="NAME=report.json, one per data set")
    parser.add_argument("--json", action="store_true", help="print the joint report as JSON")
    parser.add_argument(
        "--guarded",
        action="store_true",
        help="choose per fold only among variants that keep the keep rule on its training folds",
    )
    args = parser.parse_args()
    reports = {}
    for spec in args.reports:
        name, sep, path = spec.partition("=")
        if not sep:
            parser.error(f"expected NAME=report.json, got {spec!r}")
        reports[name] = json.loads(Path(path).read_text())
    joint = joint_folds(reports, guarded=args.guarded)
    print(json.dumps(joint, indent=2) if args.json else joint_markdown(joint))


if __name__ == "__main__":
    main()
