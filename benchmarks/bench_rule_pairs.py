"""The offline supersession rule on every pair of one speaker's texts, with no ranking in
between: what it would replace if every older text were a candidate of every newer one.

    PYTHONPATH=src python benchmarks/bench_rule_pairs.py                       # LoCoMo, BEAM
    PYTHONPATH=src python benchmarks/bench_rule_pairs.py --against /tmp/main/src   # and a diff

Detection on write only decides among the few older memories keyword search finds for a
new one; this asks the rule about all of them, so it bounds what detection can do:

- LoCoMo (``../shared/data/locomo10.json``): each conversation's turns, per speaker, every
  newer turn against every older one. LoCoMo states no change a memory should be hidden
  for: every pair the rule supersedes is a false supersession;
- BEAM (``../shared/data/beam``): each conversation's user messages (index markers
  stripped), every newer against every older. Its knowledge updates are real changes; the
  pairs found are printed to be read;
- ``benchmarks/updates/scenarios.jsonl`` (in-sample: the rule's earlier vocabulary came
  from its generator): every pair of one role's texts in a scenario.

``--against SRC`` runs the same pairs through the rule of another source tree in a child
process and prints the pairs only one of the two supersedes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
UPDATES = Path(__file__).resolve().parent / "updates" / "scenarios.jsonl"
_MARKER = re.compile(r"\s*->->.*$", re.DOTALL)

# (set, conversation, speaker, id, text), in time order within a conversation.
Text = tuple[str, str, str, str, str]


def locomo(path: Path) -> Iterator[Text]:
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        sessions = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])
        )
        for key in sessions:
            for turn in conv[key]:
                yield "locomo", sample["sample_id"], turn["speaker"], turn["dia_id"], turn["text"]


def beam(folder: Path) -> Iterator[Text]:
    for name in sorted(os.listdir(folder), key=lambda n: (len(n), n)):
        for batch in json.loads((folder / name / "chat.json").read_text()):
            for session in batch["turns"]:
                for m in session:
                    if m["role"] == "user":
                        text = _MARKER.sub("", m["content"].strip())
                        yield "beam", name, "user", str(m["id"]), text


def updates(path: Path) -> Iterator[Text]:
    for line in path.read_text().splitlines():
        scenario = json.loads(line)
        for write in scenario["writes"]:
            item = write.get("message") or write.get("event") or {}
            text = item.get("content") or item.get("summary") or ""
            role = item.get("role") or "event"
            yield "updates", scenario["id"], role, write["fact"], text


def decided(texts: list[Text]) -> list[list[str]]:
    """Every (older, newer) pair of one conversation and speaker the rule supersedes."""
    from episodic.write.change_rules import decide

    by: dict[tuple[str, str, str], list[Text]] = {}
    for t in texts:
        by.setdefault((t[0], t[1], t[2]), []).append(t)
    found: list[list[str]] = []
    for group in by.values():
        for j, newer in enumerate(group):
            for older in group[:j]:
                verdict = decide(newer[4], older[4])
                if verdict.kind == "supersedes":
                    found.append(
                        [
                            newer[0],
                            newer[1],
                            older[3],
                            newer[3],
                            verdict.rule,
                            older[4][:160],
                            newer[4][:160],
                        ]
                    )
    return found


def pair_count(texts: list[Text]) -> dict[str, int]:
    by: dict[tuple[str, str, str], int] = {}
    for t in texts:
        by[(t[0], t[1], t[2])] = by.get((t[0], t[1], t[2]), 0) + 1
    counts: dict[str, int] = {}
    for (name, _, _), n in by.items():
        counts[name] = counts.get(name, 0) + n * (n - 1) // 2
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--against", help="another tree's src folder: print the difference")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    texts = [
        *locomo(args.data / "locomo10.json"),
        *beam(args.data / "beam"),
        *updates(UPDATES),
    ]
    found = decided(texts)
    if args.child:
        json.dump(found, sys.stdout)
        return
    pairs = pair_count(texts)
    print("| set | pairs asked | superseded |")
    print("|---|---|---|")
    for name in ("locomo", "beam", "updates"):
        n = sum(1 for f in found if f[0] == name)
        print(f"| {name} | {pairs.get(name, 0):,} | {n} |")
    for f in found:
        if f[0] != "updates":
            print(f"  {f[0]} {f[1]} {f[2]} -> {f[3]} ({f[4]}): {f[5]!r} -> {f[6]!r}")
    if args.against:
        env = {**os.environ, "PYTHONPATH": args.against}
        other = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--child", "--data", str(args.data)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        mine, theirs = {tuple(f) for f in found}, {tuple(f) for f in other}
        print(f"\nagainst {args.against}: {len(theirs)} there, {len(mine)} here")
        for where, only in (("only there", theirs - mine), ("only here", mine - theirs)):
            for p in sorted(only):
                print(f"  {where}: {p[0]} {p[1]} {p[2]} -> {p[3]} ({p[4]}): {p[5]!r} -> {p[6]!r}")


if __name__ == "__main__":
    main()
